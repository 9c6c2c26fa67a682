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
         • {prefix}status: what I am doing\n\
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

/// Answer to `!status`.
pub fn status(agent: &str, running: bool, queued: usize, has_session: bool) -> String {
    let state = if running { "working on a turn" } else { "idle" };
    let session = if has_session {
        "a session is open"
    } else {
        "no session yet"
    };
    format!("{agent}: {state}, {queued} message(s) queued, {session}.")
}

/// Answer to an unknown command.
pub fn unknown_command(prefix: &str, word: &str) -> String {
    format!("Unknown command {prefix}{word}. Try {prefix}help.")
}

/// Notice posted when the agent asks for permission, which this version refuses.
pub fn permission_refused(title: &str) -> String {
    format!(
        "🔒 The agent asked to run “{title}”. Approving tools from the chat is not available yet, \
         so the request was refused."
    )
}
