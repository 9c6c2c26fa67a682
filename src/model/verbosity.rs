//! How much of an agent's work a room shows.

use serde::Deserialize;

/// How much of an agent's work a room shows besides its answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Verbosity {
    /// Answers, permission polls and errors only.
    Answer,
    /// Also tool cards and the plan.
    Tools,
    /// Also the thinking indicator and the usage line.
    #[default]
    All,
}

impl Verbosity {
    /// The word used in the config and in `!show`.
    pub fn as_str(self) -> &'static str {
        match self {
            Verbosity::Answer => "answer",
            Verbosity::Tools => "tools",
            Verbosity::All => "all",
        }
    }

    /// Parses the word used in the config and in `!show`.
    pub fn parse(word: &str) -> Option<Self> {
        match word.to_lowercase().as_str() {
            "answer" | "answers" | "quiet" => Some(Verbosity::Answer),
            "tools" => Some(Verbosity::Tools),
            "all" | "everything" => Some(Verbosity::All),
            _ => None,
        }
    }

    /// Whether tool cards and the plan are shown.
    pub fn cards(self) -> bool {
        self != Verbosity::Answer
    }

    /// Whether the thinking indicator and the usage line are shown.
    pub fn thinking(self) -> bool {
        self == Verbosity::All
    }
}
