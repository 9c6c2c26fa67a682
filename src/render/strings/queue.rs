//! What `!queue` says, and what a message written during a turn is told when it joins or
//! cuts the running turn.

use crate::model::QueueMode;

/// The reaction on a message steered into the running turn: it is answered there.
pub const STEERED_REACTION: &str = "↪️";

/// What `!queue` explains: each mode in a line.
const QUEUE_MODES: &str = "queue: a message written while the agent works waits its turn (⏳); \
     steer: it joins the running turn (↪️) where the agent offers that, else it waits; \
     interrupt: it stops the running turn and is answered at once";

/// Answer to `!queue` without a word.
pub fn queue_mode_is(prefix: &str, current: &str) -> String {
    format!(
        "Messages written while an agent works here: {current}. Change it with \
         {prefix}queue queue|steer|interrupt ({QUEUE_MODES})."
    )
}

/// Answer to `!queue WORD`.
pub fn queue_mode_set(mode: QueueMode) -> String {
    let what = match mode {
        QueueMode::Queue => "wait their turn",
        QueueMode::Steer => "join the running turn where the agent offers that",
        QueueMode::Interrupt => "stop the running turn and are answered at once",
    };
    format!("From now on, messages written while an agent works here {what}.")
}

/// Answer to `!queue` with a word it does not know.
pub fn queue_mode_usage(prefix: &str, word: &str) -> String {
    format!(
        "“{word}” is not a choice: use {prefix}queue queue, steer or interrupt ({QUEUE_MODES})."
    )
}

/// The line before a prompt that interrupted the previous answer, so the agent knows it
/// was cut.
pub const INTERRUPTED_BY_NEXT: &str = "(This message interrupted your previous answer, which \
     was cut off before you finished it.)";

/// The footer of an answer cut by a message written during it.
pub fn cut_by_message(by: &str) -> String {
    format!("✂️ Cut by a new message from {by}.")
}
