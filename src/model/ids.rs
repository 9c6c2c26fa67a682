//! Typed IDs, so a room ID cannot be passed where an agent ID is wanted. They are opaque:
//! never parsed (a room ID of room version 12 has no `:server` part).

use std::fmt;

/// Declares a string ID type with the conversions every ID needs.
macro_rules! string_id {
    ($(#[$doc:meta])* $name:ident) => {
        $(#[$doc])*
        #[derive(Debug, Clone, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub struct $name(String);

        impl $name {
            /// Wraps an ID as received.
            pub fn new(id: impl Into<String>) -> Self {
                Self(id.into())
            }

            /// The ID as text, for the protocol and the store.
            pub fn as_str(&self) -> &str {
                &self.0
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(&self.0)
            }
        }

        /// Reads as text wherever text is wanted (a message, a log line, a query); the
        /// other way round needs a conversion, so IDs of different kinds never mix.
        impl std::ops::Deref for $name {
            type Target = str;

            fn deref(&self) -> &str {
                &self.0
            }
        }

        /// Lets a map keyed by IDs be looked up with text (the hash is the text's).
        impl std::borrow::Borrow<str> for $name {
            fn borrow(&self) -> &str {
                &self.0
            }
        }

        impl AsRef<str> for $name {
            fn as_ref(&self) -> &str {
                &self.0
            }
        }

        impl From<&str> for $name {
            fn from(id: &str) -> Self {
                Self(id.to_owned())
            }
        }

        impl From<&String> for $name {
            fn from(id: &String) -> Self {
                Self(id.clone())
            }
        }

        impl From<&$name> for $name {
            fn from(id: &$name) -> Self {
                id.clone()
            }
        }

        impl From<String> for $name {
            fn from(id: String) -> Self {
                Self(id)
            }
        }

        impl PartialEq<str> for $name {
            fn eq(&self, other: &str) -> bool {
                self.0 == other
            }
        }

        impl PartialEq<&str> for $name {
            fn eq(&self, other: &&str) -> bool {
                self.0 == *other
            }
        }
    };
}

string_id!(
    /// A Matrix room (`!…`).
    RoomId
);
string_id!(
    /// A Matrix event (`$…`).
    EventId
);
string_id!(
    /// A Matrix user (`@name:server`).
    UserId
);
string_id!(
    /// One of the gateway's agents, by its ID in the config.
    AgentId
);
string_id!(
    /// An ACP session, as the agent named it.
    SessionId
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
