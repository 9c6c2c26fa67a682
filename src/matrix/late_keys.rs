//! Messages waiting for their room keys. A message that cannot be decrypted waits for its
//! key instead of being given up on: when the key arrives (matrix-sdk announces every room
//! key it receives), the message is decrypted and taken in like any other, and answered
//! (`late_decryption.rs`). Only when the key has not come after [`GRACE`] is the person
//! told, and it is still answered if the key comes later.
//!
//! Waiting messages are kept in memory: a key that arrives after the gateway restarted does
//! not bring its message back (the person was told to send it again).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use matrix_sdk::deserialized_responses::{TimelineEvent, TimelineEventKind};
use matrix_sdk::ruma::OwnedRoomId;
use matrix_sdk::ruma::events::AnySyncTimelineEvent;
use matrix_sdk::ruma::serde::Raw;

use super::ids::Ours;
use crate::model::ids::EventId;

/// How long a message waits for its key before the person is told.
pub const GRACE: Duration = Duration::from_secs(10);
/// How long a message waits for its key at most.
const KEEP: Duration = Duration::from_secs(24 * 3600);
/// Most messages one agent keeps waiting; the oldest go first.
const MOST: usize = 1_000;

/// One message waiting for its key.
pub(super) struct Waiting {
    /// The Megolm session whose key it needs.
    pub(super) session: String,
    /// Its event ID.
    pub(super) event_id: Option<EventId>,
    /// Its room.
    pub(super) room: OwnedRoomId,
    /// The encrypted event.
    pub(super) raw: Raw<AnySyncTimelineEvent>,
    /// When it started waiting.
    pub(super) since: Instant,
}

/// The messages of one agent's user waiting for their keys, by Megolm session ID.
#[derive(Clone, Default)]
pub struct LateKeys(Arc<Mutex<HashMap<String, Vec<Waiting>>>>);

impl LateKeys {
    /// Keeps `event` of `room` until its key arrives; `false` when it names no session to
    /// wait for (it is reported at once).
    pub(super) fn keep(&self, room: OwnedRoomId, event: &TimelineEvent) -> bool {
        let TimelineEventKind::UnableToDecrypt { utd_info, .. } = &event.kind else {
            return false;
        };
        let Some(session) = utd_info.session_id.clone() else {
            return false;
        };
        let event_id = event.event_id().map(|e| e.ours());
        let mut waiting = self.0.lock().expect("late keys poisoned");
        // Taken in twice (a catch-up after a failed sync): it waits once, so it is answered
        // once.
        if waiting.values().flatten().any(|w| w.event_id == event_id) {
            return true;
        }
        for list in waiting.values_mut() {
            list.retain(|w| w.since.elapsed() < KEEP);
        }
        waiting.retain(|_, list| !list.is_empty());
        if waiting.values().map(Vec::len).sum::<usize>() >= MOST {
            let oldest = waiting
                .iter()
                .flat_map(|(s, list)| list.iter().map(move |w| (w.since, s.clone())))
                .min();
            if let Some((_, session)) = oldest
                && let Some(list) = waiting.get_mut(&session)
            {
                list.remove(0);
            }
        }
        waiting.entry(session.clone()).or_default().push(Waiting {
            session,
            event_id,
            room,
            raw: event.raw().clone(),
            since: Instant::now(),
        });
        true
    }

    /// Whether the event `event_id` still waits.
    pub(super) fn still_waiting(&self, event_id: &EventId) -> bool {
        let waiting = self.0.lock().expect("late keys poisoned");
        waiting
            .values()
            .flatten()
            .any(|w| w.event_id.as_ref() == Some(event_id))
    }

    /// Keeps waiting a message whose key turned out not to be the one it needs.
    pub(super) fn put_back(&self, waiting: Waiting) {
        let mut all = self.0.lock().expect("late keys poisoned");
        all.entry(waiting.session.clone())
            .or_default()
            .push(waiting);
    }

    /// Takes the messages waiting for `sessions` (every one, when `None`).
    pub(super) fn take(&self, sessions: Option<&[String]>) -> Vec<Waiting> {
        let mut waiting = self.0.lock().expect("late keys poisoned");
        match sessions {
            None => waiting.drain().flat_map(|(_, list)| list).collect(),
            Some(sessions) => sessions
                .iter()
                .filter_map(|s| waiting.remove(s))
                .flatten()
                .collect(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use matrix_sdk::deserialized_responses::{UnableToDecryptInfo, UnableToDecryptReason};

    fn utd(event_id: &str, session: &str) -> TimelineEvent {
        let raw = serde_json::json!({
            "type": "m.room.encrypted", "event_id": event_id, "sender": "@alice:x",
            "origin_server_ts": 1, "content": {"algorithm": "m.megolm.v1.aes-sha2",
            "ciphertext": "x", "session_id": session, "sender_key": "k", "device_id": "D"},
        });
        TimelineEvent::from_utd(
            Raw::from_json_string(raw.to_string()).unwrap(),
            UnableToDecryptInfo {
                session_id: Some(session.into()),
                reason: UnableToDecryptReason::MissingMegolmSession {
                    withheld_code: None,
                },
            },
        )
    }

    #[test]
    fn a_message_waits_once_for_its_session_until_taken() {
        let keys = LateKeys::default();
        let room = OwnedRoomId::try_from("!r:x").unwrap();
        assert!(keys.keep(room.clone(), &utd("$a", "s1")));
        assert!(keys.keep(room.clone(), &utd("$a", "s1")), "taken in twice");
        assert!(keys.keep(room.clone(), &utd("$b", "s2")));
        assert!(keys.still_waiting(&EventId::from("$a")));
        let ready = keys.take(Some(&["s1".to_owned()]));
        assert_eq!(ready.len(), 1, "it waited once");
        assert!(!keys.still_waiting(&EventId::from("$a")));
        assert!(
            keys.still_waiting(&EventId::from("$b")),
            "another session's message still waits"
        );
        keys.put_back(ready.into_iter().next().unwrap());
        assert_eq!(keys.take(None).len(), 2);
    }
}
