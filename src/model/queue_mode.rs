//! What a message written while the agent works does: wait its turn, join the running turn,
//! or cut it (`!queue`, `queue.mode`).

use serde::Deserialize;

/// What becomes of a message written to an agent that is busy answering another.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum QueueMode {
    /// It waits (⏳) and is answered once the running turn ends.
    #[default]
    Queue,
    /// It joins the running turn at its next step (↪️), where the agent offers steering;
    /// it waits otherwise.
    Steer,
    /// It stops the running turn and is answered at once, told the previous answer was cut.
    Interrupt,
}

impl QueueMode {
    /// The word used in the config and in `!queue`.
    pub fn as_str(self) -> &'static str {
        match self {
            QueueMode::Queue => "queue",
            QueueMode::Steer => "steer",
            QueueMode::Interrupt => "interrupt",
        }
    }

    /// Parses the word used in the config and in `!queue`.
    pub fn parse(word: &str) -> Option<Self> {
        match word.to_lowercase().as_str() {
            "queue" | "wait" => Some(QueueMode::Queue),
            "steer" | "join" => Some(QueueMode::Steer),
            "interrupt" | "cut" => Some(QueueMode::Interrupt),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_parse_back() {
        for mode in [QueueMode::Queue, QueueMode::Steer, QueueMode::Interrupt] {
            assert_eq!(QueueMode::parse(mode.as_str()), Some(mode));
        }
        assert_eq!(QueueMode::parse("Steer"), Some(QueueMode::Steer));
        assert_eq!(QueueMode::parse("later"), None);
    }
}
