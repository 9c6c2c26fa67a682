//! A turn's typing notice: put on only once the turn has taken a while, beside the prompt
//! and never before it; renewed while nothing of the answer shows; taken off once the
//! answer has text on its way to the room (the reply's live marker says the agent is still
//! at it from then on) or the turn is over, and only if it was put on.
//!
//! Each notice is a request the homeserver hands to every client syncing the room: a
//! streaming reply that also kept a notice up would cost as many requests again as its
//! edits (measured with 200 rooms at once: 449 notices beside 413 messages and edits, and
//! 787 once the first posts waited seconds in the homeserver while the notices went on).

use std::sync::Arc;
use std::time::Duration;

use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use crate::core::chat::ChatPort;
use crate::model::ids::RoomId;

/// How long a turn runs before the typing notice goes out. An answer that comes sooner
/// needs none, and one sent just before the answer would cost the person's client an extra
/// sync (it wakes for the notice, then syncs again for the answer).
pub(super) const TYPING_AFTER: Duration = Duration::from_millis(500);

/// How often the notice is renewed while it is up (homeservers let one lapse after a few
/// seconds).
const TYPING_REFRESH: Duration = Duration::from_secs(3);

/// The typing notice of one running turn. All its requests go out from one task, in
/// order, so an "off" never overtakes the "on" it takes back; the turn never waits for
/// them except at its very end.
pub(super) struct Typing {
    /// Set when the notice is no longer wanted: the task sends no more "on", and takes
    /// back the one it sent.
    over: CancellationToken,
    /// The task that sends the notices.
    task: JoinHandle<()>,
}

impl Typing {
    /// A notice put on in `room` once `after` has passed, renewed until it is taken off.
    pub(super) fn after(after: Duration, chat: Arc<dyn ChatPort>, room: RoomId) -> Self {
        let over = CancellationToken::new();
        let task = tokio::spawn(Self::run(after, chat, room, over.clone()));
        Self { over, task }
    }

    /// Puts the notice on after `after`, renews it, then takes it off once it is over.
    async fn run(after: Duration, chat: Arc<dyn ChatPort>, room: RoomId, over: CancellationToken) {
        tokio::select! {
            _ = tokio::time::sleep(after) => {}
            _ = over.cancelled() => return,
        }
        loop {
            chat.typing(&room, true).await;
            tokio::select! {
                _ = tokio::time::sleep(TYPING_REFRESH) => {}
                _ = over.cancelled() => break,
            }
        }
        chat.typing(&room, false).await;
    }

    /// Something of the answer is up: the notice goes (a request in flight is let finish
    /// first). The turn does not wait.
    pub(super) fn answer_shown(&self) {
        self.over.cancel();
    }

    /// The turn is over: a notice not due yet is never sent; one that was is taken off,
    /// and both are waited for.
    pub(super) async fn done(self) {
        self.over.cancel();
        let _ = self.task.await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::fakes::FakeChat;

    fn notices(on_off: &[bool]) -> Vec<(String, bool)> {
        on_off.iter().map(|on| ("!r".to_owned(), *on)).collect()
    }

    #[tokio::test(start_paused = true)]
    async fn a_quick_turn_shows_no_typing_and_a_slow_one_shows_it_renews_it_then_takes_it_off() {
        let chat = FakeChat::new();
        let quick = Typing::after(Duration::from_secs(60), chat.clone(), "!r".into());
        quick.done().await;
        assert_eq!(chat.typing_notices(), []);
        let slow = Typing::after(Duration::from_millis(10), chat.clone(), "!r".into());
        tokio::time::sleep(Duration::from_millis(100)).await;
        assert_eq!(chat.typing_notices(), notices(&[true]));
        tokio::time::sleep(TYPING_REFRESH).await;
        assert_eq!(chat.typing_notices(), notices(&[true, true]), "renewed");
        slow.done().await;
        assert_eq!(chat.typing_notices(), notices(&[true, true, false]));
    }

    #[tokio::test(start_paused = true)]
    async fn the_notice_goes_once_the_answer_shows_and_is_not_renewed() {
        let chat = FakeChat::new();
        let typing = Typing::after(Duration::from_millis(10), chat.clone(), "!r".into());
        tokio::time::sleep(Duration::from_millis(100)).await;
        typing.answer_shown();
        tokio::time::sleep(TYPING_REFRESH * 3).await;
        assert_eq!(chat.typing_notices(), notices(&[true, false]));
        typing.done().await;
        assert_eq!(
            chat.typing_notices(),
            notices(&[true, false]),
            "taken off once"
        );
        // An answer up before the notice is due: none is ever sent.
        let early = Typing::after(Duration::from_millis(500), chat.clone(), "!s".into());
        early.answer_shown();
        tokio::time::sleep(Duration::from_secs(1)).await;
        early.done().await;
        assert_eq!(chat.typing_notices(), notices(&[true, false]));
    }
}
