//! Typed IDs, so a room ID cannot be passed where an agent ID is wanted. Text becomes an ID
//! in one of two ways: [`parse`](RoomId::parse) where it comes from outside (the config, an
//! agent's tool call, an event's raw JSON, anything read with serde), which checks its form;
//! or `new` where it is already known to be one (the Matrix SDK's own typed IDs, a row the
//! gateway stored).
//! An ID reads as text only through `as_str` or `Display`, and never compares with text, so
//! two kinds never mix by accident. Beyond its sigil an ID is opaque: a room ID of room
//! version 12 has no `:server` part.
//!
//! What the types refuse, checked by the compiler (each example must fail to build):
//!
//! ```compile_fail
//! use sidekicks::model::ids::{AgentId, RoomId};
//! fn post_in(_room: &RoomId) {}
//! post_in(&AgentId::new("claude")); // an agent is no room
//! ```
//!
//! ```compile_fail
//! use sidekicks::model::ids::RoomId;
//! let room: RoomId = "!r".into(); // text becomes an ID only by `parse` or `new`
//! ```
//!
//! ```compile_fail
//! use sidekicks::model::ids::EventId;
//! let same = EventId::new("$e") == "$e"; // an ID never compares with text
//! ```
//!
//! ```compile_fail
//! use sidekicks::model::ids::UserId;
//! let text: &str = &UserId::new("@a:x"); // nor reads as text without saying so
//! ```
//!
//! ```
//! use sidekicks::model::ids::{RoomId, UserId};
//! assert_eq!(RoomId::parse("!r").unwrap().as_str(), "!r");
//! assert!(UserId::parse("alice").is_err());
//! ```

use std::fmt;

/// Text that is not an ID of the kind it was given as.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("`{text}` is not {kind}: {why}")]
pub struct IdError {
    /// What was asked for ("a room ID", "a user ID", ...).
    pub kind: &'static str,
    /// The text as given.
    pub text: String,
    /// What is wrong with it.
    pub why: &'static str,
}

/// Declares a string ID type: its form (checked by `parse`) and its conversions.
macro_rules! string_id {
    ($(#[$doc:meta])* $name:ident, $kind:literal, $check:expr) => {
        $(#[$doc])*
        #[derive(
            Debug, Clone, Default, PartialEq, Eq, Hash, PartialOrd, Ord,
            serde::Serialize, serde::Deserialize,
        )]
        #[serde(try_from = "String", into = "String")]
        pub struct $name(String);

        impl $name {
            /// Wraps text already known to be an ID of this kind (from the Matrix SDK's
            /// typed IDs, or from the store, which holds only IDs that were checked).
            pub fn new(id: impl Into<String>) -> Self {
                Self(id.into())
            }

            /// Reads an ID from text that came from outside, checking its form.
            pub fn parse(text: &str) -> Result<Self, IdError> {
                let check: fn(&str) -> Result<(), &'static str> = $check;
                if text.is_empty() {
                    return Err(IdError { kind: $kind, text: text.to_owned(), why: "it is empty" });
                }
                if text.chars().any(|c| c.is_whitespace() || c.is_control()) {
                    return Err(IdError {
                        kind: $kind,
                        text: text.to_owned(),
                        why: "it has a space or a control character",
                    });
                }
                check(text)
                    .map(|()| Self(text.to_owned()))
                    .map_err(|why| IdError { kind: $kind, text: text.to_owned(), why })
            }

            /// The ID as text, for the protocol, the store and messages.
            pub fn as_str(&self) -> &str {
                &self.0
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(&self.0)
            }
        }

        /// Reading one from JSON parses it, like any text from outside.
        impl TryFrom<String> for $name {
            type Error = IdError;

            fn try_from(text: String) -> Result<Self, IdError> {
                Self::parse(&text)
            }
        }

        impl From<$name> for String {
            fn from(id: $name) -> String {
                id.0
            }
        }

        impl From<&$name> for $name {
            fn from(id: &$name) -> Self {
                id.clone()
            }
        }

        /// Unit tests write their fixtures as text; production code has no such
        /// conversion, so it parses or says where an ID came from.
        #[cfg(test)]
        impl From<&str> for $name {
            fn from(id: &str) -> Self {
                Self(id.to_owned())
            }
        }

        /// Lets a test compare an ID with the text it expects.
        #[cfg(test)]
        impl PartialEq<&str> for $name {
            fn eq(&self, other: &&str) -> bool {
                self.0 == *other
            }
        }
    };
}

/// A Matrix ID's sigil, checked.
fn sigil(text: &str, sigil: char, why: &'static str) -> Result<(), &'static str> {
    match text.strip_prefix(sigil) {
        Some(rest) if !rest.is_empty() => Ok(()),
        _ => Err(why),
    }
}

string_id!(
    /// A Matrix room (`!…`).
    RoomId,
    "a room ID",
    |text| sigil(text, '!', "a room ID starts with `!`")
);
string_id!(
    /// A Matrix event (`$…`).
    EventId,
    "an event ID",
    |text| sigil(text, '$', "an event ID starts with `$`")
);
string_id!(
    /// A Matrix user (`@name:server`).
    UserId,
    "a user ID",
    |text| {
        sigil(text, '@', "a user ID starts with `@`")?;
        match text[1..].split_once(':') {
            Some((name, server)) if !name.is_empty() && !server.is_empty() => Ok(()),
            _ => Err("a user ID is `@name:server`"),
        }
    }
);
string_id!(
    /// One of the gateway's agents, by its ID in the config.
    AgentId,
    "an agent ID",
    |text| {
        if text
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
        {
            Ok(())
        } else {
            Err("an agent ID is letters, digits, - or _")
        }
    }
);
string_id!(
    /// An ACP session, as the agent named it.
    SessionId,
    "a session ID",
    |_| Ok(())
);
string_id!(
    /// One tool call of an agent's turn, as the agent named it: what its updates, its
    /// permission request and its card name.
    ToolCallId,
    "a tool call ID",
    |_| Ok(())
);
string_id!(
    /// One option of an agent's permission request (`allow_once`, `proceed_always`…), as
    /// the agent named it: what a poll's answer sends back.
    PermissionOptionId,
    "a permission option ID",
    |_| Ok(())
);

/// One conversation: the room it happens in, the thread (none: the room's main timeline)
/// and the agent answering. One channel, one ACP session and one transcript per key.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ConversationKey {
    /// The room.
    pub room: RoomId,
    /// The agent.
    pub agent: AgentId,
    /// The thread's root event, for a conversation in a thread.
    pub thread: Option<EventId>,
}

impl ConversationKey {
    /// The conversation of `agent` in `room`'s main timeline.
    pub fn new(room: impl Into<RoomId>, agent: impl Into<AgentId>) -> Self {
        Self {
            room: room.into(),
            agent: agent.into(),
            thread: None,
        }
    }

    /// The same agent's conversation in the thread whose root is `thread` (`None`: the
    /// room's main timeline).
    pub fn in_thread(self, thread: Option<EventId>) -> Self {
        Self { thread, ..self }
    }

    /// The thread as the store keeps it: its root event ID, or `""` for the main timeline.
    pub fn thread_id(&self) -> &str {
        self.thread.as_ref().map_or("", EventId::as_str)
    }
}

impl fmt::Display for ConversationKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} in {}", self.agent, self.room)?;
        match &self.thread {
            Some(thread) => write!(f, " (thread {thread})"),
            None => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_parsed_from_text_by_their_form() {
        assert_eq!(RoomId::parse("!r"), Ok(RoomId::new("!r")));
        assert_eq!(
            RoomId::parse("!abc:example.org").unwrap().as_str(),
            "!abc:example.org"
        );
        for bad in ["", "!", "r", "$e", "! r", "!r\n"] {
            assert!(RoomId::parse(bad).is_err(), "{bad:?}");
        }
        assert!(EventId::parse("$e").is_ok());
        assert!(EventId::parse("!e").is_err());
        assert!(UserId::parse("@me:localhost").is_ok());
        for bad in ["@me", "@:localhost", "@me:", "me:localhost"] {
            assert!(UserId::parse(bad).is_err(), "{bad:?}");
        }
        assert!(AgentId::parse("claude-code_2").is_ok());
        assert!(AgentId::parse("../claude").is_err());
        let error = UserId::parse("@me").unwrap_err();
        assert_eq!(
            error.to_string(),
            "`@me` is not a user ID: a user ID is `@name:server`"
        );
    }

    #[test]
    fn ids_compare_with_text_and_keys_with_each_other() {
        let room = RoomId::from("!r");
        assert_eq!(room, "!r");
        assert_eq!(room.to_string(), "!r");
        let a = ConversationKey::new("!r", "claude");
        let b = ConversationKey::new(RoomId::new("!r"), AgentId::new("claude"));
        assert_eq!(a, b);
        assert_ne!(a, ConversationKey::new("!r", "codex"));
        assert_eq!(a.to_string(), "claude in !r");
        let threaded = a.clone().in_thread(Some(EventId::from("$t")));
        assert_ne!(a, threaded);
        assert_eq!(threaded.thread_id(), "$t");
        assert_eq!(a.thread_id(), "");
        assert_eq!(threaded.to_string(), "claude in !r (thread $t)");
    }
}
