//! Files that wait for a question, a part of its own: a picture (or any file) sent without
//! a caption waits for its sender's next message, which takes it along; one sent to nobody
//! in particular waits quietly, and only for a while.

use std::time::Duration;

use tokio::time::Instant;

use crate::core::inbound::IncomingMessage;
use crate::model::ids::UserId;

/// How long a file sent to nobody in particular waits for a question to this agent.
const ASIDE_KEEP: Duration = Duration::from_secs(600);

/// The messages whose files wait for their sender's next message.
#[derive(Default)]
pub(super) struct HeldFiles {
    /// Each message (its text empty), in the order it came.
    held: Vec<Held>,
}

/// A message whose files wait.
struct Held {
    /// The message.
    message: IncomingMessage,
    /// Whether it was sent to nobody in particular: nobody was told it waits, and it waits
    /// only [`ASIDE_KEEP`].
    aside: bool,
    /// Since when it waits.
    since: Instant,
}

impl HeldFiles {
    /// Keeps `message`'s files for its sender's next message (`aside`: sent to nobody in
    /// particular, kept quietly and for a while only).
    pub(super) fn hold(&mut self, message: IncomingMessage, aside: bool) {
        self.held.push(Held {
            message,
            aside,
            since: Instant::now(),
        });
    }

    /// Takes the messages `sender` left waiting, in order; files sent to nobody in
    /// particular that waited too long are forgotten.
    pub(super) fn take_for(&mut self, sender: &UserId) -> Vec<IncomingMessage> {
        self.held
            .retain(|held| !held.aside || held.since.elapsed() < ASIDE_KEEP);
        let (mine, others): (Vec<_>, Vec<_>) = std::mem::take(&mut self.held)
            .into_iter()
            .partition(|held| &held.message.sender == sender);
        self.held = others;
        mine.into_iter().map(|held| held.message).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::ids::EventId;

    fn message(event: &str, sender: &str) -> IncomingMessage {
        IncomingMessage {
            event_id: EventId::new(event),
            sender: UserId::new(sender),
            ..Default::default()
        }
    }

    #[tokio::test(start_paused = true)]
    async fn a_sender_takes_their_own_files_and_asides_expire() {
        let mut held = HeldFiles::default();
        held.hold(message("$1", "@a:x"), false);
        held.hold(message("$2", "@b:x"), true);
        held.hold(message("$3", "@a:x"), true);
        let taken: Vec<_> = held.take_for(&UserId::new("@a:x"));
        let events: Vec<&str> = taken.iter().map(|m| m.event_id.as_str()).collect();
        assert_eq!(events, ["$1", "$3"], "theirs, in order");
        assert!(held.take_for(&UserId::new("@a:x")).is_empty(), "taken once");
        tokio::time::advance(ASIDE_KEEP + Duration::from_secs(1)).await;
        assert!(
            held.take_for(&UserId::new("@b:x")).is_empty(),
            "an aside waits {ASIDE_KEEP:?} at most"
        );
    }
}
