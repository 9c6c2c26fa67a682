//! Delivering the outbox: the final content of replies and cards that the homeserver could
//! not take while it stayed away longer than a turn waits. Tried at start, whenever a sync
//! loop sees the homeserver answer again, and every minute; in order per room, each item
//! until it is delivered (or can never be: a permanent error is logged and the item
//! dropped).

use std::collections::HashSet;
use std::sync::Arc;
use std::time::Duration;

use super::Gateway;
use crate::core::chat::ChatError;
use crate::model::OutMessage;

/// How often the outbox is tried when nothing wakes it.
const OUTBOX_EVERY: Duration = Duration::from_secs(60);

impl Gateway {
    /// Delivers what the outbox holds until shutdown.
    pub async fn run_outbox(self: Arc<Self>) {
        loop {
            self.deliver_outbox().await;
            tokio::select! {
                _ = self.channels.shutting_down() => return,
                _ = self.outbox_wake.notified() => {}
                _ = tokio::time::sleep(OUTBOX_EVERY) => {}
            }
        }
    }

    /// The homeserver answers again (a sync loop saw it): what waits in the outbox goes now.
    pub fn homeserver_back(&self) {
        self.outbox_wake.notify_one();
    }

    /// Tries every item of every agent's outbox once, oldest first; a room whose item
    /// still fails keeps its later items for the next try, so they land in order.
    pub(super) async fn deliver_outbox(&self) {
        for ctx in self.agents.values() {
            let items = match self.store.outbox(&ctx.agent_id).await {
                Ok(items) => items,
                Err(e) => {
                    tracing::error!(agent = %ctx.agent_id, error = %e, "could not read the outbox");
                    continue;
                }
            };
            let mut waiting_rooms = HashSet::new();
            for item in items {
                if waiting_rooms.contains(&item.room_id) {
                    continue;
                }
                let content = OutMessage {
                    body: item.body.clone(),
                    html: item.html.clone(),
                    notice: item.notice,
                    mentions: Vec::new(),
                    reply_to: None,
                    thread: item.thread.clone(),
                    attachment: None,
                    live: false,
                };
                let result = match &item.event_id {
                    Some(event_id) => ctx.chat.edit(&item.room_id, event_id, &content).await,
                    None => ctx
                        .chat
                        .send(&item.room_id, &item.txn_id, &content)
                        .await
                        .map(|_| ()),
                };
                let done = match result {
                    Ok(()) => {
                        tracing::info!(agent = %ctx.agent_id, room = %item.room_id, "delivered a message the homeserver could not take before");
                        true
                    }
                    Err(ChatError::Permanent(e)) => {
                        tracing::warn!(agent = %ctx.agent_id, room = %item.room_id, error = %e, "a message waiting in the outbox can never be delivered; dropped");
                        true
                    }
                    Err(e) => {
                        tracing::debug!(agent = %ctx.agent_id, room = %item.room_id, error = %e, "the outbox waits for the homeserver");
                        waiting_rooms.insert(item.room_id.clone());
                        false
                    }
                };
                if done && let Err(e) = self.store.outbox_done(item.id).await {
                    tracing::error!(error = %e, "could not record an outbox item as delivered");
                }
            }
        }
    }
}
