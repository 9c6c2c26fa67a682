//! How an agent speaks in a room outside its streamed replies: one-off notices, notices
//! answering one message, edits that must land, and the one home of their transaction IDs.
//!
//! A transaction ID decides whether a retried send can be posted twice: [`txn`] gives the
//! same ID for the same occasion (a retry after a timeout or a crash posts nothing new),
//! [`fresh_txn`] a new one each time (a notice that may rightly be said again).

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use super::chat::{ChatError, ChatPort};
use crate::model::OutMessage;
use crate::model::ids::{AgentId, EventId, RoomId};

/// The transaction ID of what is said once per occasion: `kind` and `parts`, joined by `-`.
pub fn txn(kind: &str, parts: &[&str]) -> String {
    std::iter::once(kind)
        .chain(parts.iter().copied())
        .collect::<Vec<_>>()
        .join("-")
}

/// A transaction ID never used before, for what may be said any number of times.
pub fn fresh_txn(kind: &str) -> String {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    format!(
        "{kind}-{}-{}",
        crate::store::now_ms(),
        COUNTER.fetch_add(1, Ordering::Relaxed)
    )
}

/// One agent's voice in one room.
pub struct RoomVoice<'a> {
    /// The agent's Matrix user.
    chat: &'a dyn ChatPort,
    /// The agent, for the log.
    agent_id: &'a AgentId,
    /// The room.
    room: &'a RoomId,
}

impl<'a> RoomVoice<'a> {
    /// `agent_id`'s voice (through `chat`) in `room`.
    pub fn new(chat: &'a dyn ChatPort, agent_id: &'a AgentId, room: &'a RoomId) -> Self {
        Self {
            chat,
            agent_id,
            room,
        }
    }

    /// Posts `message` with transaction ID `txn`; a failure is logged, never fatal.
    /// Returns the posted event's ID.
    pub async fn say(&self, txn: &str, message: &OutMessage) -> Option<EventId> {
        match self.chat.send(self.room, txn, message).await {
            Ok(id) => Some(id),
            Err(e) => {
                tracing::warn!(agent = %self.agent_id, room = %self.room, error = %e, "could not post a notice");
                None
            }
        }
    }

    /// Posts a one-off notice (a fresh transaction ID: it may rightly be said again).
    pub async fn notice(&self, text: impl Into<String>) -> Option<EventId> {
        self.say(&fresh_txn("notice"), &OutMessage::notice(text))
            .await
    }

    /// Edits `event_id` to show `message`, retrying rate limits and brief failures: the
    /// edit is the record of something decided (a poll's outcome, a cut reply).
    pub async fn edit(&self, event_id: &EventId, message: &OutMessage) {
        if let Err(e) = with_retry(|| self.chat.edit(self.room, event_id, message)).await {
            tracing::warn!(agent = %self.agent_id, room = %self.room, event = %event_id, error = %e, "could not edit a message");
        }
    }
}

/// Tries a chat request until it succeeds, it fails permanently, the homeserver has asked
/// to wait ten times (each time for as long as it asked), or it failed transiently three
/// times. A poll and its decision must get through a busy homeserver.
pub async fn with_retry<F, Fut, T>(mut attempt: F) -> Result<T, ChatError>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Result<T, ChatError>>,
{
    const MAX_RATE_LIMITED: u32 = 10;
    const MAX_TRANSIENT: u32 = 3;
    let (mut limited, mut transient) = (0, 0);
    loop {
        match attempt().await {
            Err(ChatError::RateLimited { retry_after }) if limited < MAX_RATE_LIMITED => {
                limited += 1;
                tokio::time::sleep(retry_after).await
            }
            Err(ChatError::Transient(_)) if transient + 1 < MAX_TRANSIENT => {
                transient += 1;
                tokio::time::sleep(Duration::from_secs(1)).await
            }
            other => return other,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_same_occasion_gives_the_same_id_and_fresh_ids_never_repeat() {
        assert_eq!(txn("answer", &["demo", "$e"]), "answer-demo-$e");
        assert_eq!(txn("sk", &["demo", "$e", "rerun"]), "sk-demo-$e-rerun");
        assert_eq!(txn("interrupted", &["$p"]), "interrupted-$p");
        let (a, b) = (fresh_txn("notice"), fresh_txn("notice"));
        assert!(a.starts_with("notice-") && b.starts_with("notice-"));
        assert_ne!(a, b);
    }
}
