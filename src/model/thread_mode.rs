//! How a room's threads map onto conversations.

use serde::Deserialize;

/// How a room's threads map onto its agents' conversations.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ThreadMode {
    /// Each thread is a conversation of its own; the main timeline is the room's.
    #[default]
    Separate,
    /// Each message of the main timeline that the agent answers opens a thread of its own,
    /// a conversation of its own: the main timeline stays quiet.
    New,
    /// Threads are part of the room's one conversation (answers go to the main timeline).
    One,
}

impl ThreadMode {
    /// The word used in the config and in `!threads`.
    pub fn as_str(self) -> &'static str {
        match self {
            ThreadMode::Separate => "separate",
            ThreadMode::New => "new",
            ThreadMode::One => "one",
        }
    }

    /// Parses the word used in the config and in `!threads`.
    pub fn parse(word: &str) -> Option<Self> {
        match word.to_lowercase().as_str() {
            "separate" | "own" => Some(ThreadMode::Separate),
            "new" | "always" => Some(ThreadMode::New),
            "one" | "room" | "off" => Some(ThreadMode::One),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_parse_back() {
        for mode in [ThreadMode::Separate, ThreadMode::New, ThreadMode::One] {
            assert_eq!(ThreadMode::parse(mode.as_str()), Some(mode));
        }
        assert_eq!(ThreadMode::parse("Always"), Some(ThreadMode::New));
        assert_eq!(ThreadMode::parse("sometimes"), None);
    }
}
