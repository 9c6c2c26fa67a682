//! What happens to a message that could not be decrypted: it waits for its room key
//! ([`super::late_keys`]) and is taken in once the key arrives; the person is told only if
//! the key has not come after [`GRACE`].

use std::sync::Arc;

use futures::StreamExt;
use matrix_sdk::deserialized_responses::TimelineEvent;
use matrix_sdk::ruma::OwnedRoomId;
use matrix_sdk::ruma::events::room::encrypted::OriginalSyncRoomEncryptedEvent;
use tokio_util::sync::CancellationToken;

use super::client::MatrixAgent;
use super::ids::Ours;
use super::inbound::to_inbound;
use super::late_keys::{GRACE, Waiting};
use crate::core::gateway::Gateway;
use crate::core::inbound::{Inbound, IncomingMessage, Unreadable};

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
        let Some(inbound) = to_inbound(&self.agent_id, &room.room_id().ours(), &event, self.trust)
        else {
            return;
        };
        tracing::info!(agent = %self.agent_id, room = %room.room_id(), "a message decrypted once its room key arrived");
        let inbound = self.with_reply_sender(gateway, &room, inbound).await;
        gateway.handle_late(inbound).await;
    }
}
