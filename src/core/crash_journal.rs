//! The crash journal's hold on a reply's new messages. A message is recorded, with what it
//! should show if the turn is cut, *before* it is sent, under its transaction ID; once the
//! homeserver confirms it, its event ID replaces the transaction ID. So a crash between
//! the send and its confirmation still leaves a trace the next start can follow: sending
//! again under the same transaction ID gets the event the homeserver already has (or posts
//! it now), and it is marked like any other (see `docs/continuity.md`).

use crate::model::ids::{ConversationKey, EventId, RoomId};
use std::sync::Arc;

use async_trait::async_trait;

use super::chat::{ChatPort, Decorated, Decoration};
use crate::core::view::stream::ReplyStream;
use crate::model::OutMessage;
use crate::store::{CutMessage, Store};

/// What journals every new message of one turn's streamed reply around its send (a
/// [`Decoration`] of the agent's chat port). Edits, polls, reactions and the rest go
/// straight through: a poll is no part of the reply, its own record (`open_polls`) closes
/// it.
pub struct JournaledReplies {
    /// Where the journal is kept.
    store: Store,
    /// The conversation whose turn this is (its thread included: the journal's rows are
    /// the turn's).
    key: ConversationKey,
    /// What a cut reply ends with.
    footer: &'static str,
}

impl JournaledReplies {
    /// `inner`, journaling the replies of conversation `key` sent through it; a cut one
    /// ends with `footer`.
    pub fn wrap(
        inner: Arc<dyn ChatPort>,
        store: Store,
        key: ConversationKey,
        footer: &'static str,
    ) -> Arc<dyn ChatPort> {
        Decorated::wrap(inner, Self { store, key, footer })
    }
}

#[async_trait]
impl Decoration for JournaledReplies {
    async fn sending(&self, room: &RoomId, txn: &str, msg: &OutMessage) {
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
    }

    async fn sent(&self, room: &RoomId, txn: &str, event_id: &EventId) {
        if let Err(e) = self.store.confirm_cut_message(txn, event_id).await {
            tracing::error!(agent = %self.key.agent, room = %room, error = %e, "could not record a reply message as sent");
        }
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
        let journaled = JournaledReplies::wrap(
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
