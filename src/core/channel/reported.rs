//! What the agent last reported about its conversation, a part of its own: its slash
//! commands (`!commands`, `!help`), the session's title and its usage (`!status`, the usage
//! line under an answer).

use crate::model::agent::{Cost, SlashCommand, TokenUsage};
use crate::render::cards;

/// The agent's latest reports.
#[derive(Default)]
pub(super) struct Reported {
    /// The agent's slash commands, as last advertised.
    commands: Vec<SlashCommand>,
    /// The session's title, as the agent last gave it (`session_info_update`).
    title: Option<String>,
    /// Context window: tokens used and window size (0 when not known yet).
    context: Option<(u64, u64)>,
    /// Token counts from the last prompt result.
    tokens: Option<TokenUsage>,
    /// What the session has cost so far, when the agent says.
    cost: Option<Cost>,
}

impl Reported {
    /// The agent advertised `commands` (its whole list).
    pub(super) fn set_commands(&mut self, commands: Vec<SlashCommand>) {
        self.commands = commands;
    }

    /// The agent's slash commands, as last advertised.
    pub(super) fn commands(&self) -> &[SlashCommand] {
        &self.commands
    }

    /// Whether the agent may run slash `command`: it offers it, or has not said what it
    /// offers.
    pub(super) fn may_offer(&self, command: &str) -> bool {
        self.commands.is_empty() || self.commands.iter().any(|c| c.name == command)
    }

    /// The agent gave the session `title` (or took it back).
    pub(super) fn set_title(&mut self, title: Option<String>) {
        self.title = title;
    }

    /// The session's title.
    pub(super) fn title(&self) -> Option<&str> {
        self.title.as_deref()
    }

    /// The agent reported its context window; a cost, when it says one, replaces the last.
    pub(super) fn context(&mut self, used: u64, size: u64, cost: Option<Cost>) {
        self.context = Some((used, size));
        if cost.is_some() {
            self.cost = cost;
        }
    }

    /// The context window as last reported: tokens used and its size (0: not known).
    pub(super) fn context_window(&self) -> Option<(u64, u64)> {
        self.context
    }

    /// A prompt's result counted `tokens`.
    pub(super) fn tokens(&mut self, tokens: TokenUsage) {
        self.tokens = Some(tokens);
    }

    /// The usage line, if the agent reported usage.
    pub(super) fn usage_line(&self) -> Option<String> {
        cards::usage_line(self.context, self.tokens.as_ref(), self.cost.as_ref())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_slash_command_is_offered_until_the_agent_says_what_it_offers() {
        let mut reported = Reported::default();
        assert!(reported.may_offer("review"), "nothing said yet");
        reported.set_commands(vec![SlashCommand::new("compact", "")]);
        assert!(reported.may_offer("compact"));
        assert!(!reported.may_offer("review"));
    }

    #[test]
    fn usage_keeps_the_last_cost_the_agent_gave() {
        let mut reported = Reported::default();
        assert_eq!(reported.usage_line(), None);
        let cost = Cost {
            amount: 0.5,
            currency: "USD".into(),
        };
        reported.context(10, 100, Some(cost));
        let with_cost = reported.usage_line().expect("a line");
        reported.context(20, 100, None);
        let later = reported.usage_line().expect("a line");
        assert!(with_cost.contains("cost 0.50 USD"), "{with_cost}");
        assert!(later.contains("cost 0.50 USD"), "{later}");
        assert_ne!(with_cost, later, "the context moved on");
    }
}
