//! The chat port of a thread's conversation: everything its channel posts (answers, tool
//! cards, plans, polls, notices) goes into the thread, without each place that posts
//! having to know it works for one.

use std::sync::Arc;

use crate::core::chat::{ChatPort, Decorated, Decoration};
use crate::model::OutMessage;
use crate::model::ids::EventId;

/// What posts every new message of a chat port into one thread.
pub struct ThreadChat {
    /// The thread's root event.
    root: EventId,
}

impl ThreadChat {
    /// `inner`, posting into the thread whose root is `root`.
    pub fn wrap(inner: Arc<dyn ChatPort>, root: EventId) -> Arc<dyn ChatPort> {
        Decorated::wrap(inner, Self { root })
    }
}

impl Decoration for ThreadChat {
    fn posted(&self, msg: &OutMessage) -> OutMessage {
        msg.clone().in_thread(Some(self.root.clone()))
    }

    // An edit keeps the relations of the message it replaces: unchanged.
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::fakes::FakeChat;
    use crate::model::ids::RoomId;

    #[tokio::test]
    async fn every_new_message_goes_into_the_thread_and_edits_are_left_alone() {
        let fake = FakeChat::new();
        let chat = ThreadChat::wrap(fake.clone(), EventId::from("$root"));
        let id = chat
            .send(
                &RoomId::from("!r"),
                "t1",
                &OutMessage::notice("one").replying_to(EventId::from("$prompt")),
            )
            .await
            .unwrap();
        chat.edit(&RoomId::from("!r"), &id, &OutMessage::notice("one, edited"))
            .await
            .unwrap();
        use crate::core::fakes::Sent;
        let log = fake.log();
        let Sent::Send { msg: posted, .. } = &log[0] else {
            panic!("{log:?}")
        };
        assert_eq!(posted.thread.as_ref().map(|id| id.as_str()), Some("$root"));
        assert_eq!(
            posted.reply_to.as_ref().map(|id| id.as_str()),
            Some("$prompt"),
            "still a reply"
        );
        let Sent::Edit { msg: edit, .. } = &log[1] else {
            panic!("{log:?}")
        };
        assert_eq!(edit.thread, None, "an edit carries no thread relation");
    }
}
