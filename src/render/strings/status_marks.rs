//! The reactions an agent puts on a person's message to say where it stands (a room
//! setting, `!reactions`), and what `!reactions` says.

/// On a message whose turn has started.
pub const TAKEN_REACTION: &str = "👀";
/// On a message answered.
pub const ANSWERED_REACTION: &str = "✅";
/// On a message whose turn failed.
pub const FAILED_REACTION: &str = "❌";
/// On a message whose turn was stopped.
pub const STOPPED_REACTION: &str = "🛑";

/// Answer to `!reactions` without a word.
pub fn status_reactions_are(prefix: &str, on: bool) -> String {
    match on {
        true => format!(
            "Status reactions are on: agents mark each message they take 👀 (⏳ while it \
             waits), then ✅ answered, ❌ failed or 🛑 stopped. {prefix}reactions off stops that."
        ),
        false => format!(
            "Status reactions are off (a waiting message is still marked ⏳). {prefix}reactions \
             on marks each message 👀 when taken, then ✅, ❌ or 🛑."
        ),
    }
}

/// Answer to `!reactions on|off`.
pub fn status_reactions_set(on: bool) -> String {
    match on {
        true => {
            "From now on, agents mark your messages here as they take and answer them.".to_owned()
        }
        false => {
            "From now on, agents mark your messages here only while they wait (⏳).".to_owned()
        }
    }
}

/// Answer to `!reactions` with a word it does not know.
pub fn status_reactions_usage(prefix: &str) -> String {
    format!("Use {prefix}reactions on or {prefix}reactions off.")
}
