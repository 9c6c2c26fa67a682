//! Every sentence Sidekicks says in a room, in one place.

use crate::core::agent::StopReason;

/// The reaction that stops a running turn when put on the agent's reply.
pub const STOP_REACTION: &str = "🛑";
/// The reaction put on a message that waits behind a running turn.
pub const QUEUED_REACTION: &str = "⏳";

/// Footer appended to a reply whose turn did not end normally; `None` for a normal end.
pub fn stop_footer(reason: &StopReason, stopped_by: Option<&str>) -> Option<String> {
    Some(match reason {
        StopReason::EndTurn => return None,
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

/// Posted at the next start for a turn cut by a crash before any answer text, when the
/// prompt runs again.
pub const INTERRUPTED_BEFORE_ANSWER_RERUN: &str = "⏹️ Sidekicks stopped before it could answer \
the last message here. It runs it again now that it is back.";

/// Posted at the next start for a turn cut by a crash before any answer text.
pub const INTERRUPTED_BEFORE_ANSWER: &str = "⏹️ Sidekicks stopped before it could answer the last \
message here. Send it again to retry.";

/// Posted at shutdown for messages that were queued and never answered.
pub fn queue_dropped_at_shutdown(count: usize) -> String {
    format!(
        "⏹️ Sidekicks is shutting down: {count} queued message(s) were not answered. \
         Send them again once it is back."
    )
}

/// Shown when a turn ends without any answer text.
pub fn empty_reply(reason: &StopReason, stopped_by: Option<&str>) -> String {
    stop_footer(reason, stopped_by)
        .unwrap_or_else(|| "(The agent finished without a reply.)".into())
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
         {prefix}stop or react {STOP_REACTION} to its reply.",
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

/// Posted when an encrypted message could not be decrypted.
pub fn undecryptable(sender: &str) -> String {
    format!(
        "🔐 I could not decrypt a message from {sender} (the keys did not reach me), so I did not \
         answer it. Please send it again."
    )
}

/// Posted for a message of a kind agents cannot read yet (`kind` is e.g. `m.image`).
pub fn unsupported_message(kind: &str) -> String {
    let what = kind.strip_prefix("m.").unwrap_or(kind);
    format!(
        "I can only read text for now: {what} messages are not supported yet, so I did not answer this one."
    )
}

/// Answer to a stop request when nothing runs.
pub const NOTHING_TO_STOP: &str = "Nothing is running.";

/// Answer to `!help`; `commands` are the agent's own slash commands (name, description).
pub fn help(prefix: &str, agent: &str, commands: &[(String, String)]) -> String {
    let mut text = format!(
        "I am {agent}, an agent brought here by Sidekicks. Write a message and I answer it.\n\
         Messages sent while I work are queued ({QUEUED_REACTION}) and answered in order.\n\n\
         Commands:\n\
         • {prefix}stop: stop the running turn (or react {STOP_REACTION} to my reply)\n\
         • {prefix}status: what I am doing, and the context used\n\
         • {prefix}show all|tools|answer: how much of my work this room sees\n\
         • {prefix}new: start a fresh conversation (I forget what was said before)\n\
         • {prefix}allow, {prefix}always, {prefix}deny, {prefix}reject (as a reply to my \
         permission request): answer it without reactions\n\
         • {prefix}help: this text"
    );
    if !commands.is_empty() {
        text.push_str("\n\nMy own commands (write them as a message):");
        for (name, description) in commands {
            text.push_str(&format!("\n• /{name}: {description}"));
        }
    }
    text
}

/// Answer to `!status`; `usage` is the usage line, if the agent reported any.
pub fn status(
    agent: &str,
    running: bool,
    queued: usize,
    polls: usize,
    has_session: bool,
    usage: Option<&str>,
) -> String {
    let state = if running { "working on a turn" } else { "idle" };
    let session = if has_session {
        "a session is open"
    } else {
        "no session yet"
    };
    let mut text = format!("{agent}: {state}, {queued} message(s) queued, {session}.");
    if polls > 0 {
        text.push_str(&format!(
            " {polls} permission request(s) wait for an answer."
        ));
    }
    if let Some(usage) = usage {
        text.push('\n');
        text.push_str(usage);
    }
    text
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
