//! An echo bot built on matrix-sdk, taking sync responses in the way the gateway does: the
//! same SQLite stores and end-to-end encryption machinery, a loop of `Client::sync_once`
//! long-polls with a filter like the gateway's, and an event handler that answers.
//!
//! Beside the plain (raw) echo bot, it shows how much of a round trip any matrix-sdk bot
//! pays for the SDK taking each sync response in (storing it, its crypto bookkeeping)
//! before a handler sees the message: the part of Sidekicks' latency that is the SDK's.

use std::time::Duration;

use matrix_sdk::Client;
use matrix_sdk::config::SyncSettings;
use matrix_sdk::room::Room;
use matrix_sdk::ruma::api::client::filter::{Filter, FilterDefinition, RoomEventFilter};
use matrix_sdk::ruma::api::client::sync::sync_events::v3::Filter as SyncFilter;
use matrix_sdk::ruma::events::room::message::{
    OriginalSyncRoomMessageEvent, RoomMessageEventContent,
};
use matrix_sdk::ruma::{RoomId, UInt};
use tempfile::TempDir;
use tokio_util::task::AbortOnDropHandle;

/// A logged-in matrix-sdk echo bot, syncing in the background until dropped.
pub struct SdkBot {
    /// The Matrix user it is logged in as.
    pub user_id: String,
    client: Client,
    /// Its sync loop, stopped when it is dropped.
    _sync: AbortOnDropHandle<()>,
    /// Its stores, removed when it is dropped.
    _store: TempDir,
}

impl SdkBot {
    /// Logs `user_id` in (a new device) and answers every message starting with `echo `
    /// from someone else, with the same text after `echoed: `, `delay` after its handler
    /// saw it (zero: at once; more: as the gateway, whose reply follows admission and the
    /// agent's answer while its next sync request is already on its way).
    pub async fn start(homeserver: &str, user_id: &str, password: &str, delay: Duration) -> Self {
        let store = tempfile::Builder::new()
            .prefix("sidekicks-sdk-bot-")
            .tempdir()
            .unwrap();
        let client = Client::builder()
            .homeserver_url(homeserver)
            .sqlite_store(store.path(), None)
            .build()
            .await
            .unwrap();
        client
            .matrix_auth()
            .login_username(user_id, password)
            .await
            .unwrap();
        let me = client.user_id().unwrap().to_owned();
        client.add_event_handler(move |ev: OriginalSyncRoomMessageEvent, room: Room| {
            let me = me.clone();
            async move {
                let body = ev.content.body();
                if ev.sender != me && ev.content.relates_to.is_none() && body.starts_with("echo ") {
                    let reply = RoomMessageEventContent::text_plain(format!("echoed: {body}"));
                    // Like the gateway, the answer goes out beside the sync loop.
                    tokio::spawn(async move {
                        if !delay.is_zero() {
                            tokio::time::sleep(delay).await;
                        }
                        room.send(reply).await
                    });
                }
            }
        });
        // The first sync only finds where "now" is.
        client.sync_once(settings(Duration::ZERO)).await.unwrap();
        let c = client.clone();
        let sync = tokio::spawn(async move {
            loop {
                if c.sync_once(settings(Duration::from_secs(30)))
                    .await
                    .is_err()
                {
                    tokio::time::sleep(Duration::from_millis(100)).await;
                }
            }
        });
        Self {
            user_id: user_id.to_owned(),
            client,
            _sync: AbortOnDropHandle::new(sync),
            _store: store,
        }
    }

    /// Joins `room_id` (it must be invited).
    pub async fn join(&self, room_id: &RoomId) {
        self.client.join_room_by_id(room_id).await.unwrap();
    }
}

/// Sync settings like the gateway's: no presence, no ephemeral events, a bounded timeline.
fn settings(timeout: Duration) -> SyncSettings {
    let mut filter = FilterDefinition::default();
    filter.room.timeline.limit = Some(UInt::from(100u32));
    filter.room.ephemeral = RoomEventFilter::ignore_all();
    filter.presence = Filter::ignore_all();
    SyncSettings::default()
        .timeout(timeout)
        .filter(SyncFilter::FilterDefinition(filter))
}
