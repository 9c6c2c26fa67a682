//! What arrives from the chat side, already stripped of Matrix types.

use crate::model::ids::{AgentId, ConversationKey, EventId, RoomId, UserId};
use crate::model::media::IncomingMedia;
use crate::store::{PendingInput, PendingKind};

/// A message someone wrote in a room where an agent is.
#[derive(Debug, Clone, Default)]
pub struct IncomingMessage {
    /// The agent whose Matrix user saw the message.
    pub agent_id: AgentId,
    /// Opaque room ID.
    pub room_id: RoomId,
    /// The message's event ID (used for de-duplication and replies).
    pub event_id: EventId,
    /// Matrix user ID of the author.
    pub sender: UserId,
    /// The text (plain body).
    pub body: String,
    /// Server timestamp, milliseconds since the epoch.
    pub timestamp_ms: u64,
    /// The message this one replies to, if any: a reply to a permission poll answers it.
    pub reply_to: Option<EventId>,
    /// Who wrote the message this one replies to: a reply to an agent's message is for
    /// that agent.
    pub reply_to_sender: Option<UserId>,
    /// The users the message mentions (Matrix intentional mentions and mention pills):
    /// a message mentioning agents is for them.
    pub mentions: Vec<UserId>,
    /// The root of the thread the message was written in (an `m.thread` relation), if any.
    pub thread: Option<EventId>,
    /// The author's display name in the room, if they have one: the agent is told who
    /// wrote what where several people may prompt.
    pub sender_name: Option<String>,
    /// The text of the message this one replies to, for the agent to see what "this" is.
    pub reply_to_body: Option<String>,
    /// The files that go with it: the one it carries (a picture, a file, audio, video:
    /// `body` is then its caption, or empty), and pictures its sender sent just before
    /// without a question, which wait for this message.
    pub media: Vec<IncomingMedia>,
}

impl IncomingMessage {
    /// This message as it waits in the store, taken in as `kind`, until it is settled.
    pub fn pending_input(&self, kind: PendingKind) -> PendingInput {
        PendingInput {
            room_id: self.room_id.clone(),
            thread: self.thread.clone(),
            agent_id: self.agent_id.clone(),
            event_id: self.event_id.clone(),
            kind,
            sender: self.sender.clone(),
            body: self.body.clone(),
            reply_to: self.reply_to.clone(),
            sent_at: self.timestamp_ms as i64,
            queued_reaction: None,
            media: self.media.clone(),
        }
    }

    /// The conversation this copy of the message belongs to: its room, its thread and the
    /// agent that saw it.
    pub fn conversation(&self) -> ConversationKey {
        ConversationKey::new(self.room_id.clone(), self.agent_id.clone())
            .in_thread(self.thread.clone())
    }
}

/// A reaction someone put on a message.
#[derive(Debug, Clone)]
pub struct IncomingReaction {
    /// The agent whose Matrix user saw the reaction.
    pub agent_id: AgentId,
    /// Opaque room ID.
    pub room_id: RoomId,
    /// Matrix user ID of the person reacting.
    pub sender: UserId,
    /// The event reacted to.
    pub target_event_id: EventId,
    /// The reaction key (an emoji).
    pub key: String,
}

impl IncomingReaction {
    /// The conversation whose channel the reaction may matter to.
    pub fn conversation(&self) -> ConversationKey {
        ConversationKey::new(self.room_id.clone(), self.agent_id.clone())
    }
}

/// Someone answered a native poll (MSC3381 `poll.response`).
#[derive(Debug, Clone)]
pub struct IncomingPollResponse {
    /// The agent whose Matrix user saw the answer.
    pub agent_id: AgentId,
    /// Opaque room ID.
    pub room_id: RoomId,
    /// Matrix user ID of the person answering.
    pub sender: UserId,
    /// The poll answered.
    pub poll: EventId,
    /// The IDs of the answers chosen (one, for the polls the agents post; none takes a
    /// vote back).
    pub answers: Vec<String>,
}

impl IncomingPollResponse {
    /// The conversation whose channel the answer may matter to.
    pub fn conversation(&self) -> ConversationKey {
        ConversationKey::new(self.room_id.clone(), self.agent_id.clone())
    }
}

/// Someone changed an earlier message: edited its text or took it back.
#[derive(Debug, Clone)]
pub struct IncomingChange {
    /// The agent whose Matrix user saw the change.
    pub agent_id: AgentId,
    /// Opaque room ID.
    pub room_id: RoomId,
    /// Who made the change (an edit counts only from the message's own author).
    pub sender: UserId,
    /// The message changed.
    pub target: EventId,
    /// What became of it.
    pub change: Change,
}

/// What became of a message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Change {
    /// Its text is now this (an `m.replace` edit).
    Edited(String),
    /// It was redacted.
    Redacted,
}

impl IncomingChange {
    /// The agent's conversation in the room (any of its threads may hold the message).
    pub fn conversation(&self) -> ConversationKey {
        ConversationKey::new(self.room_id.clone(), self.agent_id.clone())
    }
}

/// Why a message cannot be read by an agent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Unreadable {
    /// It is encrypted and the room key did not reach the agent's device.
    Undecryptable,
    /// It is of a kind agents cannot take (a location, a poll…), named here.
    Unsupported(String),
    /// Its content could not be read at all (media without a source, a broken relation, a
    /// custom type without a body): why, in short.
    Malformed(String),
    /// It is encrypted with keys that do not prove it comes from its sender (another
    /// user's device, an identity changed since it was verified, or a device not
    /// cross-signed where that is required): why, in words for people.
    Unproven(String),
}

impl std::fmt::Display for Unreadable {
    /// Why, in a few words, for the log.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Unreadable::Undecryptable => f.write_str("undecryptable"),
            Unreadable::Unsupported(kind) => write!(f, "unsupported: {kind}"),
            Unreadable::Malformed(why) => write!(f, "malformed: {why}"),
            Unreadable::Unproven(why) => write!(f, "sender not proven: {why}"),
        }
    }
}

/// Everything the chat side hands to the core.
#[derive(Debug, Clone)]
pub enum Inbound {
    /// A text message.
    Message(IncomingMessage),
    /// A message the agent cannot read (its body is empty), and why.
    Unreadable(IncomingMessage, Unreadable),
    /// A reaction.
    Reaction(IncomingReaction),
    /// An answer to a native poll.
    PollResponse(IncomingPollResponse),
    /// An edit or a redaction of an earlier message.
    Change(IncomingChange),
}

impl Inbound {
    /// The message this is about, if it is one (readable or not).
    pub fn message(&self) -> Option<&IncomingMessage> {
        match self {
            Inbound::Message(m) | Inbound::Unreadable(m, _) => Some(m),
            Inbound::Reaction(_) | Inbound::PollResponse(_) | Inbound::Change(_) => None,
        }
    }
}
