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
    format!("• {agent} in the thread {link}: {state}, {queued} message(s) queued")
}
