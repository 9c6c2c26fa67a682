//! Every sentence Sidekicks says in a room, in one place.

mod budgets;
mod context;
mod counts;
mod help;
mod media;
mod modes;
mod queue;
mod schedules;
mod status_marks;
mod tasks;
mod threads;
mod worktree;

pub use budgets::*;
pub use context::*;
pub use counts::*;
pub use help::*;
pub use media::*;
pub use modes::*;
pub use queue::*;
pub use schedules::*;
pub use status_marks::*;
pub use tasks::*;
pub use threads::*;
pub use worktree::*;

use crate::model::agent::{SlashCommand, StopReason};

/// The reaction that stops a running turn when put on the agent's reply.
pub const STOP_REACTION: &str = "🛑";
/// The reaction put on a message that waits behind a running turn.
pub const QUEUED_REACTION: &str = "⏳";

/// Footer appended to a reply whose turn did not end normally; `None` for a normal end.
pub fn stop_footer(agent: &str, reason: &StopReason, stopped_by: Option<&str>) -> Option<String> {
    Some(match reason {
        StopReason::EndTurn => return None,
        StopReason::EndedAfterRefusal => {
            format!("⏹️ {agent} ended its turn after the tool was refused.")
        }
        StopReason::Cancelled => match stopped_by {
            Some(who) => format!("⏹️ Stopped by {who}."),
            None => "⏹️ Stopped.".to_owned(),
        },
        StopReason::MaxTokens => {
            "⚠️ The answer was cut: the model reached its output limit.".into()
        }
        StopReason::MaxTurnRequests => {
            "⚠️ The agent stopped: it reached its limit of steps for one turn.".into()
        }
        StopReason::Refusal => "⚠️ The model refused to answer.".into(),
    })
}

/// Footer of a reply whose turn was stopped because the gateway shut down.
pub const STOPPED_AT_SHUTDOWN: &str =
    "⏹️ Stopped: Sidekicks is shutting down. Send your message again once it is back.";

/// Footer of a reply whose turn was cut by a crash, put on at the next start.
pub const INTERRUPTED: &str = "⏹️ Interrupted: Sidekicks stopped before this answer was complete. Send your message again to retry.";

/// Footer of a reply cut by a crash when the prompt runs again at the next start.
pub const INTERRUPTED_RERUN: &str = "⏹️ Interrupted: Sidekicks stopped before this answer was complete. It runs your message again now that it is back.";

/// Posted at the next start, as a reply to the prompt, for a turn cut by a crash before
/// any answer text, when the prompt runs again.
pub const INTERRUPTED_BEFORE_ANSWER_RERUN: &str = "⏹️ Sidekicks stopped before it could answer \
this message. It runs it again now that it is back.";

/// Posted at the next start, as a reply to the prompt, for a turn cut by a crash before any
/// answer text.
pub const INTERRUPTED_BEFORE_ANSWER: &str = "⏹️ Sidekicks stopped before it could answer this \
message. Send it again to retry.";

/// Posted at shutdown for messages that were queued: they are kept and answered after the
/// next start.
pub fn queue_kept_at_shutdown(count: usize) -> String {
    format!(
        "⏸️ Sidekicks is shutting down: {} will be answered when it is back.",
        number(count, "queued message", "queued messages")
    )
}

/// Posted at the next start, as a reply to a chat command that was taken in but never
/// carried out before Sidekicks stopped (its meaning depends on the moment, so it is not
/// carried out later).
pub fn command_not_carried_out(command: &str) -> String {
    format!(
        "⏹️ Sidekicks stopped before it carried out “{}”. Send it again if it still matters.",
        command.trim()
    )
}

/// Posted after catching up when messages from while Sidekicks was away lay past the
/// catch-up bound (`more`: counting stopped, there were even more).
pub fn missed_while_away(count: usize, more: bool, max_events: usize, max_hours: u64) -> String {
    let (at_least, s) = match (more, count) {
        (true, _) => ("At least ", "s"),
        (false, 1) => ("", ""),
        (false, _) => ("", "s"),
    };
    format!(
        "⏹️ {at_least}{count} message{s} from while I was away were not answered: Sidekicks \
         catches up on at most the last {max_events} events or {max_hours} hours of a room. \
         Send again what still matters."
    )
}

/// Posted as a reply to a message whose content could not be read at all (`why`: what
/// was wrong, in short).
pub fn unreadable_message(why: &str) -> String {
    format!(
        "I could not read this message ({why}), so I did not answer it. Please send it again \
         as text."
    )
}

/// Appended where a reply reached `streaming.max_reply_bytes`: the rest was dropped.
pub fn reply_cut(max_bytes: usize) -> String {
    format!(
        "\n\n✂️ The answer was cut here: it passed {} KB, the most one reply may hold. The rest \
         was dropped.",
        max_bytes / 1000
    )
}

/// Shown when a turn ends without any answer text: why it ended, if it did not end
/// normally; else, a note that there is no reply, unless the turn `showed_work` (a tool
/// card, a plan): that is its answer, and a note would read like a failure.
pub fn empty_reply(
    agent: &str,
    reason: &StopReason,
    stopped_by: Option<&str>,
    showed_work: bool,
) -> Option<String> {
    stop_footer(agent, reason, stopped_by)
        .or_else(|| (!showed_work).then(|| "(The agent finished without a reply.)".into()))
}

/// Shown when the prompt ended with an error from the agent.
pub fn turn_failed(agent: &str, error: &str) -> String {
    format!("⚠️ {agent} could not answer: {error}")
}

/// Shown when the agent process died during the turn.
pub fn agent_stopped(agent: &str, status: &str) -> String {
    format!(
        "⚠️ {agent} could not answer: the agent process stopped ({status}). Your next message \
         starts it again, with the conversation so far."
    )
}

/// Shown when Sidekicks stopped an agent that broke the protocol.
pub fn agent_broke_protocol(agent: &str, reason: &str) -> String {
    format!(
        "⚠️ {agent} was stopped: {reason}. Your next message starts it again, with the \
         conversation so far."
    )
}

/// `items` as a list read aloud: "a", "a or b", "a, b or c".
pub fn either(items: &[String]) -> String {
    match items {
        [] => String::new(),
        [one] => one.clone(),
        [rest @ .., last] => format!("{} or {last}", rest.join(", ")),
    }
}

/// A duration as people read it: `45 s`, `3 min`, `2 min 5 s`.
pub fn duration(d: std::time::Duration) -> String {
    let s = d.as_secs();
    match (s / 60, s % 60) {
        (0, s) => format!("{s} s"),
        (m, 0) => format!("{m} min"),
        (m, s) => format!("{m} min {s} s"),
    }
}

/// Posted when a turn has shown nothing for a while: it may be stuck, and people should
/// know how to stop it.
pub fn quiet_turn(agent: &str, quiet: std::time::Duration, prefix: &str) -> String {
    format!(
        "⏳ {agent} has shown nothing for {}. It may still be working; to stop it, send \
         {prefix}stop or react {STOP_REACTION} to this note.",
        duration(quiet)
    )
}

/// What the note of a quiet turn becomes once the agent goes on.
pub fn quiet_turn_over(agent: &str, quiet: std::time::Duration) -> String {
    format!(
        "⏳ {agent} showed nothing for {}, then went on.",
        duration(quiet)
    )
}

/// Heading of an agent's stderr lines shown in the room after it failed.
pub fn stderr_summary(agent: &str, lines: usize) -> String {
    format!("🩺 What {agent} last wrote to stderr ({lines} lines)")
}

/// Shown instead of an agent's stderr lines in a room where someone who is not an allowed
/// user would read them.
pub fn stderr_in_log(agent: &str) -> String {
    format!(
        "🩺 What {agent} last wrote to stderr is in the Sidekicks log (not shown here: this room \
         has members who are not allowed users)."
    )
}

/// Shown when no session could be opened.
pub fn session_failed(agent: &str, error: &str) -> String {
    format!("⚠️ {agent} could not start a conversation here: {error}")
}

/// Said when a message's encryption does not prove who sent it: it is not answered.
pub fn unproven_sender(claimed: &str, why: &str) -> String {
    format!(
        "🔒 I did not act on this message, which says it comes from {claimed}: {why}. If it \
         is yours, write again from a verified session."
    )
}

/// Why a conversation could not start: its folder could not be made.
pub fn workspace_unusable(folder: &str, error: &str) -> String {
    format!("its folder {folder} cannot be made ({error})")
}

/// Said to someone who is not an admin, asking for a value the config does not let people
/// choose.
pub fn not_choosable(sender: &str, what: &str, value: &str, choosable: &[String]) -> String {
    let listed: Vec<String> = choosable.iter().map(|c| format!("`{c}`")).collect();
    format!(
        "🔒 {sender}, `{value}` is not among the {what} values people may choose here ({}); \
         an admin can choose it.",
        listed.join(", ")
    )
}

/// Shown when a setting is asked for during a turn whose agent process has just stopped.
pub fn settings_session_gone(agent: &str) -> String {
    format!(
        "⚠️ {agent}'s process stopped during this turn, so its settings cannot be changed now. \
         Ask again once the turn has ended."
    )
}

/// Posted when an encrypted message could not be decrypted.
pub fn undecryptable(sender: &str) -> String {
    format!(
        "🔐 I cannot decrypt a message from {sender} yet: its key has not reached me. I will \
         answer it as soon as the key arrives; if it does not, please send it again."
    )
}

/// Posted for a message of a kind agents cannot read (`kind` is e.g. `m.location`).
pub fn unsupported_message(kind: &str) -> String {
    let what = kind.strip_prefix("m.").unwrap_or(kind);
    format!(
        "I cannot read {what} messages: text, pictures, files, audio and video reach me, so I \
         did not answer this one."
    )
}

/// Answer to a stop request when nothing runs.
pub const NOTHING_TO_STOP: &str = "Nothing is running.";

/// One agent of a room, as help and status texts name it.
#[derive(Debug, Clone)]
pub struct AgentLine {
    /// Its display name.
    pub name: String,
    /// Its ID, the short name people address it by.
    pub id: String,
    /// Its slash commands (name, description), as its session last advertised them.
    pub commands: Vec<SlashCommand>,
}

/// How a slash command of `agent` is written in this room: `/cmd`, or `/agent:cmd` where
/// several agents are.
fn slash(agent: &str, command: &str, several: bool) -> String {
    match several {
        true => format!("/{agent}:{command}"),
        false => format!("/{command}"),
    }
}

/// Answer to `!commands`: the agent's own slash commands.
pub fn agent_commands(agent: &AgentLine, several: bool) -> String {
    if agent.commands.is_empty() {
        return format!("{} offers no slash commands.", agent.name);
    }
    let mut text = format!("{}'s own commands (write them as a message):", agent.name);
    for command in &agent.commands {
        text.push_str(&format!(
            "\n• {}: {}",
            slash(&agent.id, &command.name, several),
            command.description
        ));
    }
    text
}

/// Answer to a slash command the agent does not offer: what it does offer.
pub fn unknown_slash(agent: &AgentLine, command: &str, several: bool) -> String {
    format!(
        "{} has no command /{command}, so nothing was sent. {}",
        agent.name,
        agent_commands(agent, several)
    )
}

/// Answer to a slash command addressed to nobody in a room with several agents.
pub fn slash_needs_agent(command: &str, agents: &[AgentLine]) -> String {
    let ways: Vec<String> = agents
        .iter()
        .map(|a| format!("/{}:{command}", a.id))
        .collect();
    format!(
        "Several agents are here: say whose command /{command} is, e.g. {}.",
        ways.join(" or ")
    )
}

/// Answer to a command for one agent, in a room with several and no default agent.
pub fn which_agent(prefix: &str, command: &str, agents: &[AgentLine]) -> String {
    let ways: Vec<String> = agents
        .iter()
        .map(|a| format!("{prefix}{command} {}", a.id))
        .collect();
    format!(
        "Several agents are here: say which one, e.g. {}.",
        ways.join(" or ")
    )
}

/// One agent's line in `!status`; `usage` is its usage line, if it reported any.
pub struct StatusLine<'a> {
    /// The agent's display name.
    pub agent: &'a str,
    /// Whether a turn runs.
    pub running: bool,
    /// Whether a turn waits for a slot of the process pool.
    pub waiting: bool,
    /// Messages waiting behind it.
    pub queued: usize,
    /// Permission polls waiting for an answer.
    pub polls: usize,
    /// Whether a session is open.
    pub has_session: bool,
    /// The session's current mode, by name.
    pub mode: Option<&'a str>,
    /// The usage line.
    pub usage: Option<&'a str>,
    /// The session's title, if the agent gave one.
    pub title: Option<&'a str>,
}

/// One agent's part of the answer to `!status`.
pub fn status(line: &StatusLine<'_>) -> String {
    let state = match (line.running, line.waiting) {
        (true, _) => "working on a turn",
        (false, true) => "waiting for a free slot to start a turn",
        (false, false) => "idle",
    };
    let session = if line.has_session {
        "a session is open"
    } else {
        "no session yet"
    };
    let mut text = format!(
        "{}: {state}, {} queued, {session}",
        line.agent,
        count(line.queued, "message", "messages")
    );
    if let Some(mode) = line.mode {
        text.push_str(&format!(" (mode: {mode})"));
    }
    if let Some(title) = line.title {
        text.push_str(&format!(", titled “{title}”"));
    }
    text.push('.');
    if line.polls > 0 {
        text.push_str(&format!(
            " {} {} for an answer.",
            number(line.polls, "permission request", "permission requests"),
            agree(line.polls, "waits", "wait")
        ));
    }
    match line.usage {
        Some(usage) => {
            text.push('\n');
            text.push_str(usage);
        }
        // What `!help` promises is said even when there is none to show.
        None if line.has_session => text.push_str("\n📊 No usage reported by the agent yet."),
        None => {}
    }
    text
}

/// The room's routing, at the end of `!status` in a room with several agents.
pub fn routing_status(default: Option<&str>, handoff: bool) -> String {
    format!(
        "Messages addressed to nobody go to {}. Hand-offs between agents: {}.",
        default.unwrap_or("nobody"),
        if handoff { "on" } else { "off" }
    )
}

/// An agent's process as `!agents` shows it.
pub enum ProcessLine {
    /// Running a turn (how many).
    Working(usize),
    /// Running, no turn.
    Idle,
    /// Not running (not started yet, or stopped by the pool).
    Stopped,
    /// Ended on its own, with this status.
    Crashed(String),
}

/// One line of `!agents`.
pub fn agent_line(
    name: &str,
    id: &str,
    process: &ProcessLine,
    sessions: usize,
    uptime: Option<std::time::Duration>,
    here: bool,
) -> String {
    let state = match process {
        ProcessLine::Working(1) => "working".to_owned(),
        ProcessLine::Working(n) => format!("working ({n} turns)"),
        ProcessLine::Idle => "idle".to_owned(),
        ProcessLine::Stopped => "stopped".to_owned(),
        ProcessLine::Crashed(status) => format!("crashed ({status})"),
    };
    let mut text = format!("• {name} (`{id}`): {state}");
    if let Some(uptime) = uptime {
        let sessions = number(sessions, "session", "sessions");
        text.push_str(&format!(", {sessions}, up {}", duration(uptime)));
    }
    if here {
        text.push_str(", in this room");
    }
    text
}

/// Heading of `!agents`; `limit` is the pool's limit of running agents, if any.
pub fn agents_heading(count: usize, limit: Option<usize>) -> String {
    match limit {
        Some(max) => format!(
            "{}, at most {max} running at once:",
            number(count, "agent", "agents")
        ),
        None => format!("{}:", number(count, "agent", "agents")),
    }
}

/// Posted when a prompt waits for a free agent slot.
pub fn waiting_for_slot(agent: &str, max: usize, busy: &[String]) -> String {
    format!(
        "⏳ {agent} waits for a free slot: at most {} {} at once, and {} busy. Your message \
         runs as soon as one is free.",
        number(max, "agent", "agents"),
        agree(max, "runs", "run"),
        match busy {
            [] => "every slot is".to_owned(),
            [one] => format!("{one} is"),
            many => format!("{} are", many.join(", ")),
        }
    )
}

/// Posted when a conversation's agent process (a container per room) waits for a place:
/// the agent runs at most `max` rooms' processes at once, and each is busy.
pub fn waiting_for_room_place(agent: &str, max: usize) -> String {
    format!(
        "⏳ {agent} waits for a free slot: it runs at most {} at once, and {} busy with \
         a turn or just used. Your message runs as soon as one is free.",
        number(max, "room's process", "rooms' processes"),
        agree(max, "that one is", "each is"),
    )
}

/// Answer to a room setting the store could not save.
pub const SETTING_NOT_SAVED: &str =
    "⚠️ I could not save that (database error), so nothing changed.";

/// Answer to `!stop` while the prompt waits for a slot of the process pool.
pub fn gave_up_waiting(agent: &str, by: &str) -> String {
    format!("⏹️ Stopped by {by} before it started: {agent} was waiting for a free slot.")
}

/// A message refused because too many wait for `agent` in this conversation already
/// (`waiting`, when known: the limit it reached).
pub fn too_many_waiting(agent: &str, waiting: Option<usize>) -> String {
    let how_many = match waiting {
        Some(n) => format!("{n} messages"),
        None => "too many messages".into(),
    };
    format!(
        "⛔ {how_many} wait for {agent} here already, so this one was not taken. Send it again once the queue has gone down."
    )
}

/// Updates of the agent were dropped because it sent them faster than the room took them.
pub fn updates_dropped(agent: &str, count: u64) -> String {
    format!(
        "⚠️ {agent} sent updates faster than this room could take them: {count} were dropped, so what is shown here may be incomplete."
    )
}

/// Answer to `!default` without a word.
pub fn default_is(prefix: &str, default: Option<&str>) -> String {
    match default {
        Some(d) => {
            format!("Messages addressed to nobody go to {d}. {prefix}default off stops that.")
        }
        None => format!(
            "Messages addressed to nobody go to nobody here. {prefix}default NAME sends them to              one agent."
        ),
    }
}

/// Answer to `!default NAME` or `!default off`.
pub fn default_set(default: Option<&str>) -> String {
    match default {
        Some(d) => format!("From now on, messages addressed to nobody go to {d}."),
        None => "From now on, messages addressed to nobody go to nobody.".to_owned(),
    }
}

/// Answer to `!default NAME` when no agent of the room has that name.
pub fn no_such_agent(name: &str, agents: &[AgentLine]) -> String {
    let ids: Vec<&str> = agents.iter().map(|a| a.id.as_str()).collect();
    format!(
        "No agent here is called “{name}”. The agents here: {}.",
        ids.join(", ")
    )
}

/// Answer to `!handoff` without a word.
pub fn handoff_is(prefix: &str, on: bool, max_hops: u32) -> String {
    match on {
        true => format!(
            "Hand-offs are on: an answer that starts by addressing another agent here is sent              to it (at most {max_hops} hand-offs per message from a person). {prefix}handoff              off stops that."
        ),
        false => format!(
            "Hand-offs are off: agents' answers are never sent to other agents. {prefix}handoff              on allows it."
        ),
    }
}

/// Answer to `!handoff on|off`.
pub fn handoff_set(on: bool) -> String {
    match on {
        true => "From now on, an agent may hand work to another agent here.".to_owned(),
        false => "From now on, agents' answers are not sent to other agents here.".to_owned(),
    }
}

/// Answer to `!handoff` with a word that is neither `on` nor `off`.
pub fn handoff_usage(prefix: &str) -> String {
    format!("Use {prefix}handoff on or {prefix}handoff off.")
}

/// Posted once when agents reached the hand-off limit for one person's message.
pub fn handoff_limit(max_hops: u32) -> String {
    let times = match max_hops {
        1 => "once".to_owned(),
        n => format!("{n} times"),
    };
    format!(
        "🔁 The agents handed work to each other {times} since the last message from a person, \
         the most allowed: the last answer was not handed on."
    )
}

/// The prompt an agent gets when another agent of the room hands it work.
pub fn handed_off(from: &str, text: &str) -> String {
    format!("{from} (another agent in this room) hands this to you:\n\n{text}")
}

/// Answer to `!logs` when the agent wrote nothing to stderr.
pub fn no_stderr(agent: &str) -> String {
    format!("{agent} has written nothing to stderr.")
}

/// A setting's current value and choices (`!mode`, `!model`, `!set OPTION`).
pub fn choices(
    agent: &str,
    what: &str,
    current: Option<&str>,
    choices: &[(String, String)],
    how: &str,
) -> String {
    let listed: Vec<String> = choices
        .iter()
        .map(|(id, name)| match Some(id.as_str()) == current {
            true => format!("• {name} (`{id}`) ← current"),
            false => format!("• {name} (`{id}`)"),
        })
        .collect();
    format!(
        "{agent}'s {what}:\n{}\nChange it with {how}.",
        listed.join("\n")
    )
}

/// Every config option of a session and its value (`!set`).
pub fn options(agent: &str, lines: &[(String, String, String)], prefix: &str) -> String {
    let listed: Vec<String> = lines
        .iter()
        .map(|(id, name, value)| format!("• {name} (`{id}`): {value}"))
        .collect();
    format!(
        "{agent}'s options:\n{}\nChange one with {prefix}set OPTION VALUE.",
        listed.join("\n")
    )
}

/// Answer to a change the agent made.
pub fn setting_changed(agent: &str, what: &str, value: &str) -> String {
    format!("✅ {agent}'s {what} is now {value}.")
}

/// Answer to a change the agent cannot make in place.
pub fn setting_not_offered(agent: &str, what: &str, prefix: &str, id: &str) -> String {
    format!(
        "{agent} does not offer {what} it can switch in this session, so nothing changed (its          session and what it knows of this conversation are kept). To change it, change the          agent's configuration and start a fresh session with {prefix}new {id}."
    )
}

/// Answer to a mode, option or value that does not exist.
pub fn no_such_choice(asked: &str, choices: &[(String, String)]) -> String {
    let listed: Vec<String> = choices
        .iter()
        .map(|(id, name)| match id == name {
            true => format!("`{id}`"),
            false => format!("`{id}` ({name})"),
        })
        .collect();
    format!(
        "“{asked}” is not one of the choices: {}. Nothing changed.",
        listed.join(", ")
    )
}

/// Answer to a change the agent refused or failed.
pub fn setting_failed(agent: &str, error: &str) -> String {
    format!("⚠️ {agent} did not make the change: {error}. Nothing changed.")
}

/// Answer to a poll command without a reply when polls of several agents are open.
pub fn polls_of_several_agents(count: usize) -> String {
    format!(
        "{count} requests of different agents are waiting for approval: reply to the one you          mean with your answer."
    )
}

/// Answer to an unknown command.
pub fn unknown_command(prefix: &str, word: &str) -> String {
    format!("Unknown command {prefix}{word}. Try {prefix}help.")
}

/// Posted when a permission request arrives outside a turn, where nobody expects a poll.
pub fn permission_outside_turn(title: &str) -> String {
    format!(
        "🔒 The agent asked to use “{title}” while no turn was running, so the request was refused."
    )
}

/// The label of the Stop line of every permission poll.
pub const POLL_STOP_LABEL: &str = "Stop the agent (cancels the whole turn)";

/// Posted after `count` refused tool calls in one turn.
pub fn propose_stop(agent: &str, count: u32, prefix: &str) -> String {
    format!(
        "✋ {count} tool calls were refused in this turn, and {agent} keeps trying. \
         React {STOP_REACTION} here or send {prefix}stop to stop the turn."
    )
}

/// Answer to `!new`.
pub fn fresh_start(agent: &str) -> String {
    format!(
        "🆕 Fresh start: your next message opens a new conversation with {agent}, without what \
         was said before."
    )
}

/// Answer to `!new` while a turn runs.
pub const FRESH_START_WHILE_RUNNING: &str =
    "A turn is running: stop it first (!stop), or wait for it to end, then send !new.";

/// Answer to `!new` when the store failed.
pub const FRESH_START_FAILED: &str =
    "⚠️ I could not record the fresh start (database error), so nothing changed.";

/// Answer to a typed poll answer replying to a message that is no open poll.
pub const POLL_NOT_OPEN: &str = "That message is not a request waiting for approval (it was answered, expired, or its turn ended).";

/// Answer to a typed poll answer when no poll is open.
pub const NO_OPEN_POLL: &str = "Nothing is waiting for approval.";

/// A typed answer without a reply, when the only open polls were posted after it was
/// written: the poll it was meant for has closed.
pub const POLL_NEWER_THAN_ANSWER: &str = "That answer was written before the open poll was \
     posted, so it is not taken for it (the poll it was meant for has closed). To answer the \
     open poll, reply to it.";

/// Answer to a typed poll answer without a reply while several polls are open.
pub fn several_polls(count: usize) -> String {
    format!(
        "{count} requests are waiting for approval: reply to the one you mean with your answer."
    )
}

/// Answer to a typed poll answer from someone who may not approve.
pub fn not_an_approver(who: &str) -> String {
    format!("{who} may not approve tool calls here; the request is still waiting.")
}

/// Answer to a typed answer to the agent's question that does not read as the answer it
/// wants (`why` says what is wrong); the question stays open.
pub fn unreadable_answer(why: &str) -> String {
    format!(
        "That answer does not fit the question: {why}. The question is still open: reply to it again."
    )
}

/// Answer to a typed poll answer the poll does not offer.
pub const NO_SUCH_CHOICE: &str = "That request does not offer this choice; react with one of its emoji or reply with its number.";

/// Answer to `!show` without a word: the current setting and the choices.
pub fn verbosity_is(prefix: &str, current: &str) -> String {
    format!(
        "This room shows: {current}. Change it with {prefix}show all (tool cards, plan, \
         thinking and usage), {prefix}show tools (tool cards and plan) or {prefix}show answer \
         (answers only). Permission requests are always shown."
    )
}

/// Answer to `!show WORD`.
pub fn verbosity_set(word: &str) -> String {
    format!("From now on this room shows: {word}.")
}

/// Answer to `!show` with a word it does not know.
pub fn unknown_verbosity(prefix: &str, word: &str) -> String {
    format!(
        "“{word}” is not a choice: use {prefix}show all, {prefix}show tools or {prefix}show answer."
    )
}
