//! What `!threads` and `!status` say about threads.

/// Said when someone edits the message being answered.
pub const EDITED_WHILE_RUNNING: &str = "✏️ This message is being answered as it was when the \
     turn began; the edit is not run. To run the new text, stop the turn (!stop) and send it \
     again (or set continuity.rerun_edited).";

/// Said when someone edits the message being answered, where edits re-run.
pub const EDITED_RERUN: &str = "✏️ This message was edited: its answer is stopped and the \
     new text runs now.";

/// What `!threads` explains: each mode in a line.
const THREAD_MODES: &str = "separate: each thread is a conversation of its own, the main \
     timeline is the room's; new: each message of the main timeline opens a thread of its own; \
     one: threads are part of the room's one conversation";

/// Answer to `!threads` without a word.
pub fn threads_are(prefix: &str, current: &str) -> String {
    format!(
        "Threads here: {current}. Change it with {prefix}threads separate|new|one ({THREAD_MODES})."
    )
}

/// Answer to `!threads WORD`.
pub fn threads_set(word: &str) -> String {
    format!("From now on, threads here: {word}. Conversations already running keep their place.")
}

/// Answer to `!threads` with a word it does not know.
pub fn threads_usage(prefix: &str, word: &str) -> String {
    format!("“{word}” is not a choice: use {prefix}threads separate, new or one ({THREAD_MODES}).")
}

/// A link to an event of a room, for clients to open (a thread's root, in `!status`).
pub fn event_link(room: &str, event: &str) -> String {
    format!("https://matrix.to/#/{room}/{event}")
}

/// The heading of `!status`'s list of the room's thread conversations.
pub fn threads_heading(count: usize) -> String {
    format!("Conversations in threads ({count}):")
}

/// One conversation in a thread, for `!status` in the main timeline.
pub fn thread_status(agent: &str, link: &str, running: bool, queued: usize) -> String {
    let state = if running { "working on a turn" } else { "idle" };
    let queued = super::count(queued, "message", "messages");
    format!("• {agent} in the thread {link}: {state}, {queued} queued")
}

/// Answer to `!attach` during a turn.
pub const ATTACH_WHILE_RUNNING: &str =
    "A turn is running: attach a session once it has ended (or stop it first).";

/// Answer to `!attach` without a session ID.
pub fn attach_usage(prefix: &str) -> String {
    format!("Name the session to continue here: {prefix}attach ID (see {prefix}sessions).")
}

/// `!sessions`: the agent's sessions of this conversation's folder.
pub fn sessions_list(
    agent: &str,
    listed: &[crate::model::agent::SessionListing],
    others: usize,
    current: Option<&str>,
    prefix: &str,
) -> String {
    let others = match others {
        0 => String::new(),
        1 => "\n(1 session of another room's conversation is not shown.)".to_owned(),
        n => format!("\n({n} sessions of other rooms' conversations are not shown.)"),
    };
    if listed.is_empty() {
        return format!("{agent} has no sessions in this workspace.{others}");
    }
    let mut text = format!("{agent}'s sessions in this workspace ({}):\n", listed.len());
    for s in listed.iter().take(20) {
        let title = s.title.as_deref().unwrap_or("(untitled)");
        let updated = s
            .updated_at
            .as_deref()
            .map(|u| format!(", updated {u}"))
            .unwrap_or_default();
        let here = if current == Some(s.id.as_str()) {
            " (this conversation)"
        } else {
            ""
        };
        text.push_str(&format!("• {} — {title}{updated}{here}\n", s.id));
    }
    if listed.len() > 20 {
        text.push_str(&format!("… and {} more.\n", listed.len() - 20));
    }
    text.push_str(&format!(
        "Continue one here with {prefix}attach ID.{others}"
    ));
    text
}

/// Said when the agent cannot list its sessions.
pub fn sessions_unavailable(agent: &str) -> String {
    format!("{agent} does not list its sessions (it does not offer session/list).")
}

/// Said when `!attach` names no session of this workspace.
pub fn no_such_session(id: &str, prefix: &str) -> String {
    format!(
        "There is no session {id} in this workspace: only sessions of this conversation's folder \
         can continue here ({prefix}sessions lists them)."
    )
}

/// Said when `!attach` names a session of another room's (or thread's) conversation.
pub fn anothers_session(id: &str, prefix: &str) -> String {
    format!(
        "Session {id} is another conversation's: it continues only where it was started          ({prefix}sessions lists the ones that can continue here)."
    )
}

/// Said when the agent can neither load nor resume sessions.
pub fn cannot_attach(agent: &str) -> String {
    format!(
        "{agent} cannot take up an earlier session (it offers neither session/load nor session/resume)."
    )
}

/// Said when `!attach` names the session already in use.
pub fn attached_already(id: &str) -> String {
    format!("Session {id} is this conversation's already.")
}

/// Said when a session was attached, with what the agent replayed of it.
pub fn attached(
    session: &crate::model::agent::SessionListing,
    how: &str,
    replayed: crate::model::agent::Replayed,
) -> String {
    let title = session
        .title
        .as_deref()
        .map(|t| format!(" ({t})"))
        .unwrap_or_default();
    let summary = if replayed == Default::default() {
        String::new()
    } else {
        format!(
            " ({}, {}, {})",
            super::number(replayed.prompts, "message", "messages"),
            super::number(replayed.answers, "answer", "answers"),
            super::number(replayed.tool_calls, "tool call", "tool calls")
        )
    };
    format!(
        "📎 This conversation now continues session {}{title}, {how}: the agent remembers what \
         was said there{summary}; it is not shown again here.",
        session.id
    )
}

/// Said when attaching failed.
pub fn attach_failed(id: &str, why: &str) -> String {
    format!("Could not take up session {id}: {why}")
}

/// One sign-in method, for people: its name and ID, what the agent says of it, and for a
/// terminal method the command to run on the host.
pub fn auth_method_line(m: &crate::model::agent::AuthMethodInfo) -> String {
    let mut line = format!("{} (id {})", m.name, m.id);
    if let Some(d) = m.description.as_deref().filter(|d| !d.trim().is_empty()) {
        line.push_str(&format!(": {d}"));
    }
    if let Some(command) = &m.terminal {
        line.push_str(&format!(
            "; run `{command}` on the host, as the gateway's user with the agent's HOME"
        ));
    }
    line
}

/// Said when the agent refuses to open a session until someone signs it in.
pub fn sign_in_needed(
    agent: &str,
    methods: &[crate::model::agent::AuthMethodInfo],
    prefix: &str,
) -> String {
    if methods.is_empty() {
        return format!(
            "🔑 {agent} needs to be signed in and names no way to do it here: sign it in on the \
             host (see its documentation), or give it its API key in the config (env)."
        );
    }
    let mut text = format!("🔑 {agent} needs to be signed in before it can answer. It offers:\n");
    for m in methods {
        text.push_str(&format!("• {}\n", auth_method_line(m)));
    }
    text.push_str(&format!(
        "An admin can sign it in with {prefix}login ID; a method that needs an API key wants it \
         in the agent's env in the config."
    ));
    text
}

/// Answer to `!login` from someone who is not an admin.
pub fn login_admins_only(prefix: &str) -> String {
    format!("Only admins may sign an agent in ({prefix}login).")
}

/// Answer to `!login` without a method, or with one the agent does not offer.
pub fn login_usage(
    agent: &str,
    methods: &[crate::model::agent::AuthMethodInfo],
    prefix: &str,
) -> String {
    if methods.is_empty() {
        return format!("{agent} offers no sign-in methods.");
    }
    let ids: Vec<&str> = methods.iter().map(|m| m.id.as_str()).collect();
    format!(
        "Sign {agent} in with {prefix}login ID, one of: {}.",
        ids.join(", ")
    )
}

/// Said when signing in worked.
pub fn signed_in(agent: &str, method: &str) -> String {
    format!("🔑 {agent} is signed in ({method}).")
}

/// Said when signing in failed.
pub fn sign_in_failed(agent: &str, method: &str, why: &str) -> String {
    format!("🔑 Signing {agent} in with {method} failed: {why}")
}

/// Answer to `!fork` where threads are part of the room's conversation.
pub fn fork_needs_threads(prefix: &str) -> String {
    format!(
        "A fork is a thread of its own, but threads here are part of the room's conversation. \
         Set {prefix}threads separate first."
    )
}

/// Said when the fork's thread could not be started.
pub const FORK_FAILED: &str = "The fork could not be started: its first message could not be \
     posted. Try again in a moment.";

/// The root of a fork's thread: what it is, named `name` (if given) by `by`.
pub fn fork_root(name: &str, by: &str) -> String {
    let name = match name.trim() {
        "" => String::new(),
        name => format!(" “{name}”"),
    };
    format!(
        "🍴 Fork{name}, started by {by}: the conversation so far, copied into this message's \
         thread. Write in the thread to try another approach from here; the original goes on \
         untouched."
    )
}

/// The first message in a fork's thread: how much of the conversation it starts with.
pub fn fork_started(copied: u64) -> String {
    match copied {
        0 => "This fork starts empty: nothing had been said yet.".to_owned(),
        n => format!(
            "This thread starts with the conversation so far ({}); the agents get it with \
             the first message written here.",
            super::count(n as usize, "message", "messages")
        ),
    }
}
