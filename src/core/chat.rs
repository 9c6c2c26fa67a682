//! What the core needs from the chat side: sending, editing, reacting, typing. Implemented
//! by `crate::matrix` for one agent's Matrix user, and by a fake in tests.

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;

use crate::core::inbound::IncomingMessage;
use crate::model::OutMessage;
use crate::model::errors::Cause;
use crate::model::ids::{EventId, RoomId, UserId};
use crate::model::poll::PollAnswer;

/// A message whose final content the room does not show yet, because the homeserver stayed
/// away longer than a turn waits (`streaming.outage_patience_secs`): the outbox delivers it
/// once the homeserver is back.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Undelivered {
    /// The message, if it was posted; else it is posted with `txn`.
    pub event_id: Option<EventId>,
    /// The transaction ID of its first post (a retried post is not doubled).
    pub txn: String,
    /// What it should show.
    pub content: OutMessage,
}

/// Someone in a room, as the agent's room tools list them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RoomMember {
    /// Their user ID.
    pub user_id: UserId,
    /// Their display name in the room, if they set one.
    pub display_name: Option<String>,
    /// Whether they joined (else they are invited).
    pub joined: bool,
}

/// How a chat operation failed, classified once so callers know whether to retry.
#[derive(Debug, Clone, thiserror::Error)]
pub enum ChatError {
    /// The homeserver asked us to slow down.
    #[error("rate limited, retry after {retry_after:?}")]
    RateLimited {
        /// How long to wait before the next request.
        retry_after: Duration,
    },
    /// A failure that may go away (network, 5xx); its cause, whole.
    #[error("temporary failure: {0}")]
    Transient(#[source] Cause),
    /// A failure that will not go away by retrying (forbidden, too large, bad token); its
    /// cause, whole.
    #[error("{0}")]
    Permanent(#[source] Cause),
}

impl ChatError {
    /// Whether the same request may succeed later.
    pub fn is_retryable(&self) -> bool {
        !matches!(self, ChatError::Permanent(_))
    }
}

/// One agent's Matrix user, able to act in rooms. Rooms, events and users are named by
/// their typed IDs, so one cannot be passed for another.
#[async_trait]
pub trait ChatPort: Send + Sync {
    /// Posts a new message; returns its event ID. `txn` makes retries idempotent.
    async fn send(&self, room: &RoomId, txn: &str, msg: &OutMessage) -> Result<EventId, ChatError>;
    /// The bytes of a file someone sent, fetched from where the chat side said it is
    /// (`IncomingMedia::source`), decrypted where it was encrypted.
    async fn download(&self, source: &str) -> Result<Vec<u8>, ChatError>;
    /// Replaces the content of an earlier message (an `m.replace` edit).
    async fn edit(
        &self,
        room: &RoomId,
        event_id: &EventId,
        msg: &OutMessage,
    ) -> Result<(), ChatError>;
    /// Reacts to a message; returns the reaction's event ID.
    async fn react(
        &self,
        room: &RoomId,
        event_id: &EventId,
        key: &str,
    ) -> Result<EventId, ChatError>;
    /// Removes an event of ours (e.g. the "queued" reaction once the turn starts).
    async fn redact(&self, room: &RoomId, event_id: &EventId) -> Result<(), ChatError>;
    /// Posts a native poll (MSC3381) asking `msg`'s body, with one button per answer, for
    /// clients that show polls (`msg`'s body and answers are also its text for the rest);
    /// returns its event ID. `txn` makes retries idempotent.
    async fn send_poll(
        &self,
        room: &RoomId,
        txn: &str,
        msg: &OutMessage,
        answers: &[PollAnswer],
    ) -> Result<EventId, ChatError>;
    /// Ends native poll `poll`, saying `msg` (how it ended): clients stop taking answers.
    async fn end_poll(
        &self,
        room: &RoomId,
        poll: &EventId,
        msg: &OutMessage,
    ) -> Result<(), ChatError>;
    /// Shows or hides the typing indicator.
    async fn typing(&self, room: &RoomId, on: bool);
    /// Marks `event_id` as read by this user (a read receipt, for the thread whose root is
    /// `thread` when the message is in one), so people see the agent took their message
    /// before its answer starts; a failure is only logged.
    async fn mark_read(&self, room: &RoomId, event_id: &EventId, thread: Option<&EventId>);
    /// Who can read what is posted in `room` now or later: its joined and invited
    /// members, or `None` when anyone can (a public room, or world-readable history).
    /// Decides whether an agent's diagnostics may be shown in it.
    async fn readers(&self, room: &RoomId) -> Result<Option<Vec<UserId>>, ChatError>;
    /// `user`'s power level in `room` (a room creator's, which is above every number, as
    /// `i64::MAX`), for rules that ask approvers for a power level.
    async fn power_level(&self, room: &RoomId, user: &UserId) -> Result<i64, ChatError>;
    /// The room's latest messages, at most `limit`, oldest first, each showing its latest
    /// edit (by its author); redacted ones and notices are left out. For the agent's room
    /// tools, which read what was said in the room.
    async fn history(&self, room: &RoomId, limit: usize)
    -> Result<Vec<IncomingMessage>, ChatError>;
    /// The message `event_id` of `room`, or `None` when `room` has no such message (an
    /// event of another room is not found in this one).
    async fn message(
        &self,
        room: &RoomId,
        event_id: &EventId,
    ) -> Result<Option<IncomingMessage>, ChatError>;
    /// The room's joined and invited members.
    async fn members(&self, room: &RoomId) -> Result<Vec<RoomMember>, ChatError>;
}

/// What a decorating chat port ([`Decorated`]) changes in the messages it passes on, or
/// does around a new message's send; the rest passes through. One decoration says only
/// what it changes: an agent's secrets masked, a thread's messages posted into it, a
/// reply's messages journaled around their send.
#[async_trait]
pub trait Decoration: Send + Sync + 'static {
    /// A new message (or poll), as it is posted; unchanged unless said.
    fn posted(&self, msg: &OutMessage) -> OutMessage {
        msg.clone()
    }
    /// An edit (or a poll's end), as it is sent; unchanged unless said.
    fn edited(&self, msg: &OutMessage) -> OutMessage {
        msg.clone()
    }
    /// Before new message `msg` (as posted; not a poll) is sent under `txn`.
    async fn sending(&self, _room: &RoomId, _txn: &str, _msg: &OutMessage) {}
    /// After it was sent, as `event_id`.
    async fn sent(&self, _room: &RoomId, _txn: &str, _event_id: &EventId) {}
}

/// A chat port that passes every call on to `inner`, decorated by `D` on the way.
pub struct Decorated<D> {
    /// The port that acts.
    inner: Arc<dyn ChatPort>,
    /// What changes in the messages, or happens around their send.
    decoration: D,
}

impl<D: Decoration> Decorated<D> {
    /// `inner`, decorated by `decoration`.
    pub fn wrap(inner: Arc<dyn ChatPort>, decoration: D) -> Arc<dyn ChatPort> {
        Arc::new(Self { inner, decoration })
    }
}

#[async_trait]
impl<D: Decoration> ChatPort for Decorated<D> {
    async fn send(&self, room: &RoomId, txn: &str, msg: &OutMessage) -> Result<EventId, ChatError> {
        let msg = self.decoration.posted(msg);
        self.decoration.sending(room, txn, &msg).await;
        let event_id = self.inner.send(room, txn, &msg).await?;
        self.decoration.sent(room, txn, &event_id).await;
        Ok(event_id)
    }

    async fn download(&self, source: &str) -> Result<Vec<u8>, ChatError> {
        self.inner.download(source).await
    }

    async fn edit(
        &self,
        room: &RoomId,
        event_id: &EventId,
        msg: &OutMessage,
    ) -> Result<(), ChatError> {
        self.inner
            .edit(room, event_id, &self.decoration.edited(msg))
            .await
    }

    async fn react(
        &self,
        room: &RoomId,
        event_id: &EventId,
        key: &str,
    ) -> Result<EventId, ChatError> {
        self.inner.react(room, event_id, key).await
    }

    async fn redact(&self, room: &RoomId, event_id: &EventId) -> Result<(), ChatError> {
        self.inner.redact(room, event_id).await
    }

    async fn send_poll(
        &self,
        room: &RoomId,
        txn: &str,
        msg: &OutMessage,
        answers: &[PollAnswer],
    ) -> Result<EventId, ChatError> {
        let msg = self.decoration.posted(msg);
        let answers: Vec<PollAnswer> = (answers.iter())
            .map(|a| PollAnswer {
                id: a.id.clone(),
                text: self
                    .decoration
                    .posted(&OutMessage::notice(a.text.clone()))
                    .body,
            })
            .collect();
        self.inner.send_poll(room, txn, &msg, &answers).await
    }

    async fn end_poll(
        &self,
        room: &RoomId,
        poll: &EventId,
        msg: &OutMessage,
    ) -> Result<(), ChatError> {
        self.inner
            .end_poll(room, poll, &self.decoration.edited(msg))
            .await
    }

    async fn typing(&self, room: &RoomId, on: bool) {
        self.inner.typing(room, on).await
    }

    async fn mark_read(&self, room: &RoomId, event_id: &EventId, thread: Option<&EventId>) {
        self.inner.mark_read(room, event_id, thread).await
    }

    async fn readers(&self, room: &RoomId) -> Result<Option<Vec<UserId>>, ChatError> {
        self.inner.readers(room).await
    }

    async fn power_level(&self, room: &RoomId, user: &UserId) -> Result<i64, ChatError> {
        self.inner.power_level(room, user).await
    }

    async fn history(
        &self,
        room: &RoomId,
        limit: usize,
    ) -> Result<Vec<IncomingMessage>, ChatError> {
        self.inner.history(room, limit).await
    }

    async fn message(
        &self,
        room: &RoomId,
        event_id: &EventId,
    ) -> Result<Option<IncomingMessage>, ChatError> {
        self.inner.message(room, event_id).await
    }

    async fn members(&self, room: &RoomId) -> Result<Vec<RoomMember>, ChatError> {
        self.inner.members(room).await
    }
}
