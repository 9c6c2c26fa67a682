//! What a room is told of its agent's context: a summary the agent made of the
//! conversation so far to go on (a compaction), and one that failed.

use crate::render::cards::tokens;

/// The agent summarised the conversation so far; `held`: the tokens its context held
/// before, and the window's size (0: not known), when it had said.
pub fn context_summarised(agent: &str, held: Option<(u64, u64)>) -> String {
    let before = match held {
        Some((used, 0)) => format!(" (it held {} tokens)", tokens(used)),
        Some((used, size)) => format!(" (it held {} of {} tokens)", tokens(used), tokens(size)),
        None => String::new(),
    };
    format!("🗜️ {agent} summarised the conversation so far to free its context{before}.")
}

/// [`context_summarised`] once the agent's next report says what the summary freed.
pub fn context_summarised_freed(agent: &str, before: u64, after: u64, size: u64) -> String {
    let of = match size {
        0 => String::new(),
        size => format!(" of {}", tokens(size)),
    };
    format!(
        "🗜️ {agent} summarised the conversation so far to free its context: {} → {} tokens{of}.",
        tokens(before),
        tokens(after)
    )
}

/// The agent could not summarise its context (`error`: why, when it said).
pub fn context_summary_failed(agent: &str, error: Option<&str>) -> String {
    let why = error.map(|e| format!(": {e}")).unwrap_or_default();
    format!("🗜️ {agent} could not summarise its context{why}. It goes on as it was.")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_summary_says_what_the_context_held_and_then_what_it_freed() {
        assert_eq!(
            context_summarised("Claude", Some((150_000, 200_000))),
            "🗜️ Claude summarised the conversation so far to free its context (it held 150k \
             of 200k tokens)."
        );
        assert_eq!(
            context_summarised("Claude", None),
            "🗜️ Claude summarised the conversation so far to free its context."
        );
        assert_eq!(
            context_summarised_freed("Claude", 150_000, 12_000, 200_000),
            "🗜️ Claude summarised the conversation so far to free its context: 150k → 12k \
             tokens of 200k."
        );
        assert_eq!(
            context_summary_failed("Claude", Some("model overloaded")),
            "🗜️ Claude could not summarise its context: model overloaded. It goes on as it was."
        );
    }
}
