//! The crash journal's hold on a reply's new messages. A message is recorded, with what it
//! should show if the turn is cut, *before* it is sent, under its transaction ID; once the
//! homeserver confirms it, its event ID replaces the transaction ID. So a crash between
//! the send and its confirmation still leaves a trace the next start can follow: sending
//! again under the same transaction ID gets the event the homeserver already has (or posts
//! it now), and it is marked like any other (see `docs/continuity.md`).

use crate::model::ids::{ConversationKey, EventId, RoomId, UserId};
use std::sync::Arc;

use async_trait::async_trait;

use super::chat::{ChatError, ChatPort, RoomMember};
use crate::core::inbound::IncomingMessage;
use crate::core::view::stream::ReplyStream;
use crate::model::OutMessage;
use crate::model::poll::PollAnswer;
use crate::store::{CutMessage, Store};

/// A [`ChatPort`] for one turn's streamed reply that journals every new message around its
/// send. Edits, reactions and the rest go straight through.
pub struct JournaledReplies {
    /// The agent's Matrix user.
    inner: Arc<dyn ChatPort>,
    /// Where the journal is kept.
    store: Store,
    /// The conversation whose turn this is (its thread included: the journal's rows are
    /// the turn's).
    key: ConversationKey,
    /// What a cut reply ends with.
    footer: &'static str,
}

impl JournaledReplies {
    /// Journals the replies of conversation `key` sent through `inner`; a cut one ends
    /// with `footer`.
    pub fn new(
        inner: Arc<dyn ChatPort>,
        store: Store,
        key: ConversationKey,
        footer: &'static str,
    ) -> Self {
        Self {
            inner,
            store,
            key,
            footer,
        }
    }
}

#[async_trait]
impl ChatPort for JournaledReplies {
    async fn send(&self, room: &RoomId, txn: &str, msg: &OutMessage) -> Result<EventId, ChatError> {
        // Not knowing the room's setting here, no picture: the safe side.
        let cut = ReplyStream::cut_content(&msg.body, self.footer, Default::default());
        let intent = CutMessage {
            event_id: None,
            txn_id: Some(txn.to_owned()),
            kind: "reply".to_owned(),
            body: cut.body,
            html: cut.html,
            notice: cut.notice,
        };
        if let Err(e) = self.store.intend_cut_message(&self.key, txn, &intent).await {
            tracing::error!(agent = %self.key.agent, room = %room, error = %e, "could not record a reply message before sending it");
        }
        let event_id = self.inner.send(room, txn, msg).await?;
        if let Err(e) = self.store.confirm_cut_message(txn, &event_id).await {
            tracing::error!(agent = %self.key.agent, room = %room, error = %e, "could not record a reply message as sent");
        }
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
        self.inner.edit(room, event_id, msg).await
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
        // A poll is no part of the reply: its own record (`open_polls`) closes it.
        self.inner.send_poll(room, txn, msg, answers).await
    }

    async fn end_poll(
        &self,
        room: &RoomId,
        poll: &EventId,
        msg: &OutMessage,
    ) -> Result<(), ChatError> {
        self.inner.end_poll(room, poll, msg).await
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::fakes::FakeChat;
    use crate::model::ids::EventId;

    #[tokio::test]
    async fn a_reply_message_is_journaled_before_its_send_and_confirmed_after() {
        let store = Store::in_memory().await.unwrap();
        store
            .begin_turn(
                &ConversationKey::new("!r", "demo"),
                &EventId::from("$p"),
                false,
            )
            .await
            .unwrap();
        let chat = FakeChat::new();
        let journaled = JournaledReplies::new(
            chat.clone(),
            store.clone(),
            ConversationKey::new("!r", "demo"),
            "⏹️ cut",
        );
        let id = journaled
            .send(
                &RoomId::from("!r"),
                "sk-1-0",
                &OutMessage::notice("partial"),
            )
            .await
            .unwrap();
        let turns = store.unfinished_turns(&"demo".into()).await.unwrap();
        let message = &turns[0].messages[0];
        assert_eq!(
            message.event_id.as_ref().map(|id| id.as_str()),
            Some(id.as_str())
        );
        assert_eq!(message.txn_id, None);
        assert_eq!(message.body, "partial\n\n⏹️ cut");

        // A send that fails (or never returns) leaves the transaction ID to follow.
        chat.fail_calls(&[2]);
        assert!(
            journaled
                .send(&RoomId::from("!r"), "sk-1-1", &OutMessage::notice("more"))
                .await
                .is_err()
        );
        let turns = store.unfinished_turns(&"demo".into()).await.unwrap();
        assert_eq!(turns[0].messages[1].txn_id.as_deref(), Some("sk-1-1"));
        assert_eq!(turns[0].messages[1].event_id, None);
    }
}
