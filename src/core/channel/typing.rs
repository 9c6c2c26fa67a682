//! A turn's typing notice: put on only once the turn has taken a while, beside the prompt
//! and never before it; taken off once the answer is complete, and only if it was put on.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use tokio::task::JoinHandle;

use crate::core::chat::ChatPort;
use crate::model::ids::RoomId;

/// The typing notice of one running turn.
pub(super) struct Typing {
    /// Where it is shown.
    chat: Arc<dyn ChatPort>,
    /// The room.
    room: RoomId,
    /// Whether it was put on (or is going out).
    sent: Arc<AtomicBool>,
    /// The task that puts it on when `after` has passed.
    task: JoinHandle<()>,
}

impl Typing {
    /// A notice put on in `room` once `after` has passed.
    pub(super) fn after(after: Duration, chat: Arc<dyn ChatPort>, room: RoomId) -> Self {
        let sent = Arc::new(AtomicBool::new(false));
        let task = {
            let (chat, room, sent) = (chat.clone(), room.clone(), sent.clone());
            tokio::spawn(async move {
                tokio::time::sleep(after).await;
                sent.store(true, Ordering::SeqCst);
                chat.typing(&room, true).await
            })
        };
        Self {
            chat,
            room,
            sent,
            task,
        }
    }

    /// The turn is over: a notice not due yet is never sent; one going out is waited for,
    /// then taken off.
    pub(super) async fn done(self) {
        if !self.sent.load(Ordering::SeqCst) {
            self.task.abort();
        }
        let _ = self.task.await;
        if self.sent.load(Ordering::SeqCst) {
            self.chat.typing(&self.room, false).await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::fakes::FakeChat;

    #[tokio::test]
    async fn a_quick_turn_shows_no_typing_and_a_slow_one_shows_it_then_takes_it_off() {
        let chat = FakeChat::new();
        let quick = Typing::after(Duration::from_secs(60), chat.clone(), "!r".into());
        quick.done().await;
        assert!(
            chat.typing_notices().is_empty(),
            "{:?}",
            chat.typing_notices()
        );
        let slow = Typing::after(Duration::from_millis(10), chat.clone(), "!r".into());
        tokio::time::sleep(Duration::from_millis(100)).await;
        slow.done().await;
        assert_eq!(
            chat.typing_notices(),
            [("!r".to_owned(), true), ("!r".to_owned(), false)]
        );
    }
}
