//! The crash journal of a running turn: what its messages should show if the gateway dies
//! now (the reply with an "interrupted" footer, open cards cancelled), recorded after each
//! send for the next start to put on. New reply messages are journaled *before* they are
//! sent, by [`crate::core::crash_journal::JournaledReplies`]. See `docs/continuity.md`.

use crate::model::ids::{ConversationKey, EventId};
use std::collections::HashMap;

use crate::core::view::activity::Activity;
use crate::core::view::stream::ReplyStream;
use crate::model::OutMessage;
use crate::store::{CutMessage, Store};

/// What one turn has recorded for a crash so far, so each write holds only what changed.
pub(super) struct TurnJournal {
    /// The database.
    store: Store,
    /// The conversation of the turn.
    key: ConversationKey,
    /// What the reply says if a crash cuts it: whether the prompt will run again.
    cut_footer: &'static str,
    /// The reply message (and length of its text) last recorded.
    saved_reply: Option<(EventId, usize)>,
    /// How much of the answer text (bytes) is recorded.
    saved_text: usize,
    /// The cut versions of cards last recorded, by event ID.
    saved_cards: HashMap<EventId, OutMessage>,
}

impl TurnJournal {
    /// A journal for a turn of conversation `key` whose cut reply ends with `cut_footer`.
    pub(super) fn new(store: Store, key: ConversationKey, cut_footer: &'static str) -> Self {
        Self {
            store,
            key,
            cut_footer,
            saved_reply: None,
            saved_text: 0,
            saved_cards: HashMap::new(),
        }
    }

    /// Records what the reply's last message should show if the gateway dies now, and the
    /// answer text not recorded yet. Called after the reply was sent; writes only when the
    /// text shown changed.
    pub(super) async fn reply(&mut self, stream: &ReplyStream) {
        let Some((id, shown)) = stream.last_shown() else {
            return;
        };
        let key = (id.clone(), shown.len());
        if self.saved_reply.as_ref() == Some(&key) {
            return;
        }
        let content = ReplyStream::cut_content(shown, self.cut_footer, stream.pictures());
        let message = cut_message(id, "reply", content);
        self.saved_reply = Some(key);
        self.save(&message).await;
        // Only what is new is written, however long the answer grows.
        let text = stream.text();
        if text.len() > self.saved_text {
            match self
                .store
                .append_reply_text(&self.key, &text[self.saved_text..])
                .await
            {
                Ok(()) => self.saved_text = text.len(),
                Err(e) => {
                    tracing::error!(agent = %self.key.agent, room = %self.key.room, error = %e, "could not record the turn's answer so far")
                }
            }
        }
    }

    /// Records what the turn's cards should show if the gateway dies now (open ones
    /// cancelled, thoughts folded). Called after cards were sent; writes only what changed.
    pub(super) async fn cards(&mut self, activity: &Activity) {
        for (id, content) in activity.cut_versions() {
            if self.saved_cards.get(&id) != Some(&content) {
                let message = cut_message(&id, "card", content.clone());
                self.saved_cards.insert(id, content);
                self.save(&message).await;
            }
        }
    }

    async fn save(&self, message: &CutMessage) {
        if let Err(e) = self.store.save_cut_message(&self.key, message).await {
            tracing::error!(agent = %self.key.agent, room = %self.key.room, error = %e, "could not record the turn's progress");
        }
    }
}

fn cut_message(event_id: &EventId, kind: &str, content: OutMessage) -> CutMessage {
    CutMessage {
        event_id: Some(event_id.clone()),
        txn_id: None,
        kind: kind.to_owned(),
        body: content.body,
        html: content.html,
        notice: content.notice,
    }
}
