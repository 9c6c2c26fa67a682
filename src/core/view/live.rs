//! A message that is posted once and then edited in place as what it shows changes: a tool
//! card, the plan, the thinking indicator, a poll.
//!
//! It keeps only the latest content it should show, so edits refused by a rate limit fold
//! into the next one, and it obeys the same budget as a streamed reply: at most one request
//! per interval and a cap on intermediate edits (see `docs/streaming.md`).

use tokio::time::Instant;

use crate::core::chat::{ChatError, ChatPort, Undelivered};
use crate::model::OutMessage;
use crate::model::ids::{EventId, RoomId};

/// Something that sends paced requests: a streamed reply, or a turn's cards.
pub(crate) trait Paced {
    /// When the next request is due, or `None` when nothing needs sending.
    fn due_at(&mut self) -> Option<Instant>;
    /// Sends what is due now; a refused request leaves its content pending.
    async fn send_due(&mut self) -> Result<(), ChatError>;
}

/// How long the final content of a message keeps being retried by its turn while the
/// homeserver cannot be reached, unless configured (`streaming.outage_patience_secs`): an
/// outage of minutes (a restart, an upgrade) holds the turn that long; past it, what is
/// left goes to the outbox, which delivers it once the homeserver is back.
pub const MAX_OUTAGE: std::time::Duration = std::time::Duration::from_secs(300);

/// Sends until `paced` has nothing left to send, waiting as its pacing (and any rate
/// limit) asks. Gives up only on a permanent error, or when other failures have gone on
/// for `patience` without a success in between.
pub(crate) async fn send_everything(
    paced: &mut impl Paced,
    patience: std::time::Duration,
) -> Result<(), ChatError> {
    let mut failing_since: Option<Instant> = None;
    while let Some(at) = paced.due_at() {
        tokio::time::sleep_until(at).await;
        match paced.send_due().await {
            Ok(()) | Err(ChatError::RateLimited { .. }) => failing_since = None,
            Err(e @ ChatError::Permanent(_)) => return Err(e),
            Err(e) => {
                let since = *failing_since.get_or_insert_with(Instant::now);
                if since.elapsed() >= patience {
                    return Err(e);
                }
            }
        }
    }
    Ok(())
}

/// One message kept up to date.
#[derive(Debug)]
pub struct LiveMessage {
    /// Transaction ID of the first post, so a retried post is not duplicated.
    txn: String,
    /// Its event ID once posted.
    event_id: Option<EventId>,
    /// What the room shows now.
    shown: Option<OutMessage>,
    /// What it should show.
    want: OutMessage,
    /// When the last request for it was made.
    last_request: Option<Instant>,
    /// Intermediate edits sent so far.
    edits: u32,
    /// Not posted before this instant (a card that waits to see whether a poll will stand
    /// in for it).
    held_until: Option<Instant>,
}

impl LiveMessage {
    /// A message still to be posted with `content`.
    pub fn new(txn: String, content: OutMessage) -> Self {
        Self {
            txn,
            event_id: None,
            shown: None,
            want: content,
            last_request: None,
            edits: 0,
            held_until: None,
        }
    }

    /// A message to be posted with `content`, not before `until`.
    pub fn held(txn: String, content: OutMessage, until: Instant) -> Self {
        Self {
            held_until: Some(until),
            ..Self::new(txn, content)
        }
    }

    /// Lets a held message be posted at once.
    pub fn release(&mut self) {
        self.held_until = None;
    }

    /// Takes over `event_id`, a message posted for something else (a poll), to show
    /// `content` from its next edit on.
    pub fn adopt(event_id: EventId, content: OutMessage) -> Self {
        Self {
            event_id: Some(event_id),
            ..Self::new(String::new(), content)
        }
    }

    /// A message that exists already (restored from the store) and shows `content`.
    pub fn posted(event_id: EventId, content: OutMessage) -> Self {
        Self {
            txn: String::new(),
            event_id: Some(event_id),
            shown: Some(content.clone()),
            want: content,
            last_request: None,
            edits: 0,
            held_until: None,
        }
    }

    /// What the room does not show yet of this message, if anything.
    pub fn undelivered(&self) -> Option<Undelivered> {
        self.is_dirty().then(|| Undelivered {
            event_id: self.event_id.clone(),
            txn: self.txn.clone(),
            content: self.want.clone(),
        })
    }

    /// Sets what the message should show; nothing is sent until [`LiveMessage::flush`].
    pub fn set(&mut self, content: OutMessage) {
        self.want = content;
    }

    /// Its event ID, once posted.
    pub fn event_id(&self) -> Option<&EventId> {
        self.event_id.as_ref()
    }

    /// What it should show.
    pub fn content(&self) -> &OutMessage {
        &self.want
    }

    /// Whether the room does not show the latest content yet.
    pub fn is_dirty(&self) -> bool {
        self.shown.as_ref() != Some(&self.want)
    }

    /// When the next request for it is due: at once for the first post, `interval` after
    /// the previous request for an edit. `None` when nothing is to be sent, or when the
    /// edit cap is spent and this is not the final edit.
    pub fn due_at(
        &self,
        interval: std::time::Duration,
        max_edits: u32,
        last: bool,
    ) -> Option<Instant> {
        if !self.is_dirty() || (self.event_id.is_some() && self.edits >= max_edits && !last) {
            return None;
        }
        Some(match self.last_request {
            Some(at) if self.event_id.is_some() => at + interval,
            _ => self.held_until.unwrap_or_else(Instant::now),
        })
    }

    /// Posts or edits it to show the latest content. A refused request leaves it dirty.
    pub async fn flush(&mut self, chat: &dyn ChatPort, room: &RoomId) -> Result<(), ChatError> {
        if !self.is_dirty() {
            return Ok(());
        }
        self.last_request = Some(Instant::now());
        let content = self.want.clone();
        match &self.event_id {
            None => {
                self.event_id = Some(chat.send(room, &self.txn, &content).await?);
            }
            Some(id) => {
                chat.edit(room, id, &content).await?;
                self.edits += 1;
            }
        }
        self.shown = Some(content);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::fakes::FakeChat;
    use std::time::Duration;

    #[tokio::test]
    async fn posts_once_then_edits_only_when_the_content_changed() {
        let chat = FakeChat::new();
        let mut m = LiveMessage::new("t".into(), OutMessage::notice("a"));
        let interval = Duration::from_secs(1);
        assert!(m.due_at(interval, 5, false).unwrap() <= Instant::now());
        m.flush(&*chat, &RoomId::from("!r")).await.unwrap();
        assert!(m.due_at(interval, 5, false).is_none(), "nothing changed");
        m.set(OutMessage::notice("b"));
        let due = m.due_at(interval, 5, false).unwrap();
        assert!(due > Instant::now(), "an edit waits for the interval");
        m.flush(&*chat, &RoomId::from("!r")).await.unwrap();
        assert_eq!(chat.shown("!r"), vec!["b"]);
    }

    #[tokio::test]
    async fn past_the_edit_cap_only_the_last_edit_goes_out() {
        let chat = FakeChat::new();
        let mut m = LiveMessage::new("t".into(), OutMessage::notice("0"));
        m.flush(&*chat, &RoomId::from("!r")).await.unwrap();
        m.set(OutMessage::notice("1"));
        m.flush(&*chat, &RoomId::from("!r")).await.unwrap();
        m.set(OutMessage::notice("2"));
        assert!(m.due_at(Duration::ZERO, 1, false).is_none());
        assert!(m.due_at(Duration::ZERO, 1, true).is_some());
    }
}
