//! Messages whose room key arrives after them. A message that cannot be decrypted waits for
//! its key instead of being given up on: when the key arrives (matrix-sdk announces every
//! room key it receives), the message is decrypted and taken in like any other, and
//! answered. Only when the key has not come after [`GRACE`] is the person told, and still
//! answered if it comes later.
//!
//! Waiting messages are kept in memory: a key that arrives after the gateway restarted does
//! not bring its message back (the person was told to send it again).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use futures::StreamExt;
use matrix_sdk::deserialized_responses::{TimelineEvent, TimelineEventKind};
use matrix_sdk::ruma::OwnedRoomId;
use matrix_sdk::ruma::events::AnySyncTimelineEvent;
use matrix_sdk::ruma::events::room::encrypted::OriginalSyncRoomEncryptedEvent;
use matrix_sdk::ruma::serde::Raw;
use tokio_util::sync::CancellationToken;

use super::client::MatrixAgent;
use super::inbound::to_inbound;
use crate::core::gateway::Gateway;
use crate::core::inbound::{Inbound, IncomingMessage, Unreadable};

/// How long a message waits for its key before the person is told.
pub const GRACE: Duration = Duration::from_secs(10);
/// How long a message waits for its key at most.
const KEEP: Duration = Duration::from_secs(24 * 3600);
/// Most messages one agent keeps waiting; the oldest go first.
const MOST: usize = 1_000;

/// One message waiting for its key.
struct Waiting {
    /// The Megolm session whose key it needs.
    session: String,
    /// Its room.
    room: OwnedRoomId,
    /// The encrypted event.
    raw: Raw<AnySyncTimelineEvent>,
    /// When it started waiting.
    since: Instant,
}

/// The messages of one agent's user waiting for their keys, by Megolm session ID.
#[derive(Clone, Default)]
pub struct LateKeys(Arc<Mutex<HashMap<String, Vec<Waiting>>>>);

impl LateKeys {
    /// Keeps `event` of `room` until its key arrives; `false` when it names no session to
    /// wait for (it is reported at once).
    fn keep(&self, room: OwnedRoomId, event: &TimelineEvent) -> bool {
        let TimelineEventKind::UnableToDecrypt { utd_info, .. } = &event.kind else {
            return false;
        };
        let Some(session) = utd_info.session_id.clone() else {
            return false;
        };
        let mut waiting = self.0.lock().expect("late keys poisoned");
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
            room,
            raw: event.raw().clone(),
            since: Instant::now(),
        });
        true
    }

    /// Whether the event `event_id` still waits.
    fn still_waiting(&self, event_id: &str) -> bool {
        let waiting = self.0.lock().expect("late keys poisoned");
        waiting.values().flatten().any(|w| {
            w.raw
                .get_field::<String>("event_id")
                .ok()
                .flatten()
                .as_deref()
                == Some(event_id)
        })
    }

    /// Keeps waiting a message whose key turned out not to be the one it needs.
    fn put_back(&self, waiting: Waiting) {
        let mut all = self.0.lock().expect("late keys poisoned");
        all.entry(waiting.session.clone())
            .or_default()
            .push(waiting);
    }

    /// Takes the messages waiting for `sessions` (every one, when `None`).
    fn take(&self, sessions: Option<&[String]>) -> Vec<Waiting> {
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

impl MatrixAgent {
    /// A message that could not be decrypted: it waits for its key, and the person is told
    /// only if the key has not come after [`GRACE`]. Returns `false` when it cannot wait
    /// (its session is unknown): the caller reports it at once.
    pub(super) fn wait_for_key(
        &self,
        gateway: &Arc<Gateway>,
        room: OwnedRoomId,
        event: &TimelineEvent,
        message: IncomingMessage,
    ) -> bool {
        if !self.late_keys.keep(room, event) {
            return false;
        }
        tracing::info!(agent = %self.agent_id, room = %message.room_id, event = %message.event_id, "a message waits for its room key");
        let (late_keys, gateway) = (self.late_keys.clone(), gateway.clone());
        tokio::spawn(async move {
            tokio::time::sleep(GRACE).await;
            if late_keys.still_waiting(&message.event_id) {
                gateway
                    .handle(Inbound::Unreadable(message, Unreadable::Undecryptable))
                    .await;
            }
        });
        true
    }

    /// Decrypts the waiting messages whose keys arrive, and hands them to the gateway,
    /// until `shutdown`.
    pub(super) async fn retry_late_keys(self, gateway: Arc<Gateway>, shutdown: CancellationToken) {
        let Some(keys) = self.client.encryption().room_keys_received_stream().await else {
            return;
        };
        let mut keys = std::pin::pin!(keys);
        loop {
            let received = tokio::select! {
                _ = shutdown.cancelled() => return,
                received = keys.next() => received,
            };
            let ready = match received {
                None => return,
                Some(Ok(infos)) => {
                    let sessions: Vec<String> = infos.into_iter().map(|i| i.session_id).collect();
                    self.late_keys.take(Some(&sessions))
                }
                // Some announcements were missed: every waiting message is tried again.
                Some(Err(_)) => self.late_keys.take(None),
            };
            for waiting in ready {
                self.decrypt_late(&gateway, waiting).await;
            }
        }
    }

    /// Decrypts one message whose key arrived and hands it to the gateway; keeps it waiting
    /// if it still cannot be decrypted.
    async fn decrypt_late(&self, gateway: &Arc<Gateway>, waiting: Waiting) {
        let Some(room) = self.client.get_room(&waiting.room) else {
            return;
        };
        let encrypted = waiting
            .raw
            .clone()
            .cast_unchecked::<OriginalSyncRoomEncryptedEvent>();
        let event = match room.decrypt_event(&encrypted, None).await {
            Ok(event) if !event.kind.is_utd() => event,
            _ => return self.late_keys.put_back(waiting),
        };
        let Some(inbound) = to_inbound(&self.agent_id, room.room_id().as_str(), &event, self.trust)
        else {
            return;
        };
        tracing::info!(agent = %self.agent_id, room = %room.room_id(), "a message decrypted once its room key arrived");
        let inbound = self.with_reply_sender(gateway, &room, inbound).await;
        gateway.handle_late(inbound).await;
    }
}
