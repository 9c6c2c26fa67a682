//! The chat port of a thread's conversation: everything its channel posts (answers, tool
//! cards, plans, polls, notices) goes into the thread, without each place that posts
//! having to know it works for one.

use std::sync::Arc;

use async_trait::async_trait;

use crate::core::chat::{ChatError, ChatPort};
use crate::model::OutMessage;

/// A chat port that posts every new message into one thread.
pub struct ThreadChat {
    /// The port that posts.
    inner: Arc<dyn ChatPort>,
    /// The thread's root event.
    root: String,
}

impl ThreadChat {
    /// `inner`, posting into the thread whose root is `root`.
    pub fn wrap(inner: Arc<dyn ChatPort>, root: impl Into<String>) -> Arc<dyn ChatPort> {
        Arc::new(Self {
            inner,
            root: root.into(),
        })
    }
}

#[async_trait]
impl ChatPort for ThreadChat {
    async fn send(&self, room: &str, txn: &str, msg: &OutMessage) -> Result<String, ChatError> {
        let threaded = msg.clone().in_thread(Some(self.root.as_str()));
        self.inner.send(room, txn, &threaded).await
    }

    // An edit keeps the relations of the message it replaces.
    async fn edit(&self, room: &str, event_id: &str, msg: &OutMessage) -> Result<(), ChatError> {
        self.inner.edit(room, event_id, msg).await
    }

    async fn react(&self, room: &str, event_id: &str, key: &str) -> Result<String, ChatError> {
        self.inner.react(room, event_id, key).await
    }

    async fn redact(&self, room: &str, event_id: &str) -> Result<(), ChatError> {
        self.inner.redact(room, event_id).await
    }

    async fn typing(&self, room: &str, on: bool) {
        self.inner.typing(room, on).await
    }

    async fn mark_read(&self, room: &str, event_id: &str) {
        self.inner.mark_read(room, event_id).await
    }

    async fn readers(&self, room: &str) -> Result<Option<Vec<String>>, ChatError> {
        self.inner.readers(room).await
    }

    async fn power_level(&self, room: &str, user: &str) -> Result<i64, ChatError> {
        self.inner.power_level(room, user).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::fakes::FakeChat;

    #[tokio::test]
    async fn every_new_message_goes_into_the_thread_and_edits_are_left_alone() {
        let fake = FakeChat::new();
        let chat = ThreadChat::wrap(fake.clone(), "$root");
        let id = chat
            .send(
                "!r",
                "t1",
                &OutMessage::notice("one").replying_to("$prompt"),
            )
            .await
            .unwrap();
        chat.edit("!r", &id, &OutMessage::notice("one, edited"))
            .await
            .unwrap();
        use crate::core::fakes::Sent;
        let log = fake.log();
        let Sent::Send { msg: posted, .. } = &log[0] else {
            panic!("{log:?}")
        };
        assert_eq!(posted.thread.as_deref(), Some("$root"));
        assert_eq!(posted.reply_to.as_deref(), Some("$prompt"), "still a reply");
        let Sent::Edit { msg: edit, .. } = &log[1] else {
            panic!("{log:?}")
        };
        assert_eq!(edit.thread, None, "an edit carries no thread relation");
    }
}
