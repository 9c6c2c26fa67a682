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

/// One prompt in `!queue`'s list: its number, its author, the agent it waits for, and the
/// start of its text.
pub fn queue_line(number: usize, sender: &str, agent: &str, body: &str) -> String {
    format!("{number}. {sender} → {agent}: “{}”", first_words(body))
}

/// The start of a message as a list shows it: its first line, at most 60 characters, `…`
/// where more was cut.
fn first_words(body: &str) -> String {
    const SHOWN: usize = 60;
    let first_line = body.lines().next().unwrap_or_default();
    let mut words: String = first_line.chars().take(SHOWN).collect();
    if first_line.chars().count() > SHOWN || body.lines().nth(1).is_some() {
        words.push('…');
    }
    words
}

/// `!queue`'s list of what waits (`lines` from [`queue_line`]; none: nothing waits).
pub fn queue_waiting(prefix: &str, lines: &[String]) -> String {
    match lines {
        [] => "Nothing waits here.".to_owned(),
        lines => format!(
            "Waiting here, in the order they run:\n{}\nTake one out with {prefix}queue drop N, \
             all of yours with {prefix}queue clear.",
            lines.join("\n")
        ),
    }
}

/// What `!queue drop N` or `!queue clear` took out of the queue (the lines of the prompts,
/// as listed).
pub fn queue_dropped(lines: &[String]) -> String {
    format!(
        "🗑️ Taken out of the queue; they will not run:\n{}",
        lines.join("\n")
    )
}

/// `!queue drop N` of a number nothing has.
pub fn queue_no_such(prefix: &str, number: &str) -> String {
    format!("Nothing waits as number {number}: {prefix}queue lists what waits.")
}

/// `!queue drop N` of someone else's prompt, by someone who is not an admin.
pub fn queue_not_yours(number: usize, sender: &str) -> String {
    format!("Number {number} is {sender}'s: only they or an admin may take it out.")
}

/// `!queue drop` or `!queue clear` when a conversation of the room did not say in time what
/// waits in it: numbers read then could name the wrong prompt.
pub const QUEUE_UNREADABLE: &str = "An agent here is busy and did not say in time what waits for it; nothing was taken out. \
     Try again in a moment.";

/// `!queue clear` where nothing of the sender's waits.
pub const QUEUE_NOTHING_OF_YOURS: &str = "Nothing of yours waits here.";

/// `!retry` where the last prompt here was answered (or there is none).
pub const NOTHING_TO_RETRY: &str =
    "Nothing to retry: the last message here was answered (or none was sent yet).";

/// `!retry` of a prompt that already waits to run again.
pub const RETRY_ALREADY_WAITS: &str = "That message already waits to run again.";

/// `!retry` when the conversation could not be read.
pub const RETRY_UNREADABLE: &str =
    "Could not read this conversation to find what to retry; the log says why.";

/// `!retry`: the cut prompt of `sender` runs again.
pub fn retrying(sender: &str, body: &str) -> String {
    format!(
        "🔁 Running {sender}'s message again: “{}”",
        first_words(body)
    )
}
