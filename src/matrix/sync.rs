//! The sync loop of one agent's Matrix user and the event handlers that feed the core.

use std::sync::Arc;
use std::time::Duration;

use matrix_sdk::config::SyncSettings;
use matrix_sdk::room::Room;
use matrix_sdk::ruma::events::reaction::OriginalSyncReactionEvent;
use matrix_sdk::ruma::events::room::encrypted::OriginalSyncRoomEncryptedEvent;
use matrix_sdk::ruma::events::room::member::{
    MembershipState, StrippedRoomMemberEvent, SyncRoomMemberEvent,
};
use matrix_sdk::ruma::events::room::message::sanitize::remove_plain_reply_fallback;
use matrix_sdk::ruma::events::room::message::{
    MessageType, OriginalSyncRoomMessageEvent, Relation,
};
use matrix_sdk::ruma::{EventId, MilliSecondsSinceUnixEpoch, UserId};
use matrix_sdk::{Client, RoomState};
use tokio_util::sync::CancellationToken;

use super::client::{MatrixAgent, MatrixError};
use super::errors::is_unknown_token;
use super::mentions::mentioned_users;
use crate::core::gateway::Gateway;
use crate::core::inbound::{Inbound, IncomingMessage, IncomingReaction, Unreadable};

/// How long the homeserver may hold a sync request open.
const SYNC_TIMEOUT: Duration = Duration::from_secs(30);
/// Longest wait between two sync attempts while the homeserver fails.
const MAX_BACKOFF: Duration = Duration::from_secs(60);

impl MatrixAgent {
    /// Runs this user's sync loop until `shutdown` is cancelled. Homeserver errors are retried
    /// with back-off; only a rejected access token ends the loop with an error.
    pub async fn run(
        &self,
        gateway: Arc<Gateway>,
        shutdown: CancellationToken,
    ) -> Result<(), MatrixError> {
        self.install_handlers(gateway);
        let settings = SyncSettings::default().timeout(SYNC_TIMEOUT);
        let mut backoff = Duration::from_secs(1);
        let mut failing_since: Option<std::time::Instant> = None;
        loop {
            let result = tokio::select! {
                _ = shutdown.cancelled() => return Ok(()),
                result = self.client.sync_once(settings.clone()) => result,
            };
            match result {
                Ok(_) => {
                    if let Some(since) = failing_since.take() {
                        tracing::info!(agent = %self.agent_id, down_for = ?since.elapsed(), "homeserver reachable again");
                    }
                    backoff = Duration::from_secs(1);
                }
                Err(e) if is_unknown_token(&e) => {
                    let error = MatrixError::TokenRejected {
                        user: self.user_id.clone(),
                        session_file: self.session_file.clone(),
                    };
                    tracing::error!(agent = %self.agent_id, "{error}");
                    return Err(error);
                }
                Err(e) => {
                    failing_since.get_or_insert_with(std::time::Instant::now);
                    tracing::warn!(agent = %self.agent_id, error = %e, retry_in = ?backoff, "sync failed");
                    tokio::select! {
                        _ = shutdown.cancelled() => return Ok(()),
                        _ = tokio::time::sleep(backoff) => {}
                    }
                    backoff = (backoff * 2).min(MAX_BACKOFF);
                }
            }
        }
    }

    fn install_handlers(&self, gateway: Arc<Gateway>) {
        let agent_id = self.agent_id.clone();
        let gw = gateway.clone();
        self.client.add_event_handler(move |ev: StrippedRoomMemberEvent, room: Room, client: Client| {
            let (gw, agent_id) = (gw.clone(), agent_id.clone());
            async move {
                if ev.content.membership != MembershipState::Invite || Some(&*ev.state_key) != client.user_id() {
                    return;
                }
                let room_id = room.room_id().to_string();
                if gw.accept_invite(&agent_id, &room_id, ev.sender.as_str()).await {
                    // Joining waits for the next sync, so it must not run inside this handler.
                    tokio::spawn(join_with_retry(room, agent_id));
                } else {
                    tokio::spawn(async move {
                        if let Err(e) = room.leave().await {
                            tracing::warn!(agent = %agent_id, room = %room_id, error = %e, "could not decline the invite");
                        }
                    });
                }
            }
        });

        let agent_id = self.agent_id.clone();
        let gw = gateway.clone();
        self.client.add_event_handler(
            move |ev: SyncRoomMemberEvent, room: Room, client: Client| {
                let (gw, agent_id) = (gw.clone(), agent_id.clone());
                async move {
                    if client
                        .user_id()
                        .is_some_and(|me| ev.state_key().as_str() == me.as_str())
                        && matches!(
                            ev.membership(),
                            MembershipState::Leave | MembershipState::Ban
                        )
                    {
                        tracing::info!(agent = %agent_id, room = %room.room_id(), "left the room");
                        gw.left_room(&agent_id, room.room_id().as_str()).await;
                    }
                }
            },
        );

        let agent_id = self.agent_id.clone();
        let gw = gateway.clone();
        self.client.add_event_handler(
            move |ev: OriginalSyncRoomMessageEvent, room: Room, client: Client| {
                let (gw, agent_id) = (gw.clone(), agent_id.clone());
                async move {
                    if room.state() != RoomState::Joined || Some(&*ev.sender) == client.user_id() {
                        return;
                    }
                    // Edits of earlier messages are not new prompts.
                    if matches!(ev.content.relates_to, Some(Relation::Replacement(_))) {
                        return;
                    }
                    let reply_to = match &ev.content.relates_to {
                        Some(Relation::Reply(reply)) => Some(reply.in_reply_to.event_id.clone()),
                        _ => None,
                    };
                    // Whose message it replies to decides which agent it is for.
                    let reply_to_sender = match &reply_to {
                        Some(id) => match room.load_or_fetch_event(id, None).await {
                            Ok(event) => event.sender().map(|s| s.to_string()),
                            Err(e) => {
                                tracing::debug!(agent = %agent_id, event = %id, error = %e, "could not fetch the message replied to");
                                None
                            }
                        },
                        None => None,
                    };
                    let html = match &ev.content.msgtype {
                        MessageType::Text(t) => t.formatted.as_ref().map(|f| f.body.as_str()),
                        MessageType::Emote(e) => e.formatted.as_ref().map(|f| f.body.as_str()),
                        _ => None,
                    };
                    let message = IncomingMessage {
                        reply_to: reply_to.map(|id| id.to_string()),
                        reply_to_sender,
                        mentions: mentioned_users(&ev.content, html),
                        ..incoming(
                            agent_id,
                            &room,
                            &ev.event_id,
                            &ev.sender,
                            ev.origin_server_ts,
                        )
                    };
                    // Older clients quote the message replied to in the body; the agent
                    // and the poll commands want only what the person wrote.
                    let text = |body: &str| remove_plain_reply_fallback(body).to_owned();
                    let inbound = match &ev.content.msgtype {
                        MessageType::Text(t) => Inbound::Message(IncomingMessage {
                            body: text(&t.body),
                            ..message
                        }),
                        MessageType::Emote(e) => Inbound::Message(IncomingMessage {
                            body: text(&e.body),
                            ..message
                        }),
                        // Notices are for bots and status lines, never prompts.
                        MessageType::Notice(_) => return,
                        other => Inbound::Unreadable(
                            message,
                            Unreadable::Unsupported(other.msgtype().to_owned()),
                        ),
                    };
                    gw.handle(inbound).await;
                }
            },
        );

        let agent_id = self.agent_id.clone();
        let gw = gateway.clone();
        // Only events that could not be decrypted reach this handler.
        self.client
            .add_event_handler(move |ev: OriginalSyncRoomEncryptedEvent, room: Room| {
                let (gw, agent_id) = (gw.clone(), agent_id.clone());
                async move {
                    let message = incoming(
                        agent_id,
                        &room,
                        &ev.event_id,
                        &ev.sender,
                        ev.origin_server_ts,
                    );
                    gw.handle(Inbound::Unreadable(message, Unreadable::Undecryptable))
                        .await;
                }
            });

        let agent_id = self.agent_id.clone();
        self.client
            .add_event_handler(move |ev: OriginalSyncReactionEvent, room: Room| {
                let (gw, agent_id) = (gateway.clone(), agent_id.clone());
                async move {
                    gw.handle(Inbound::Reaction(IncomingReaction {
                        agent_id,
                        room_id: room.room_id().to_string(),
                        sender: ev.sender.to_string(),
                        target_event_id: ev.content.relates_to.event_id.to_string(),
                        key: ev.content.relates_to.key.clone(),
                    }))
                    .await;
                }
            });
    }
}

/// The core's view of a room message, with an empty body for the caller to fill.
fn incoming(
    agent_id: String,
    room: &Room,
    event_id: &EventId,
    sender: &UserId,
    sent_at: MilliSecondsSinceUnixEpoch,
) -> IncomingMessage {
    IncomingMessage {
        agent_id,
        room_id: room.room_id().to_string(),
        event_id: event_id.to_string(),
        sender: sender.to_string(),
        body: String::new(),
        timestamp_ms: sent_at.get().into(),
        ..Default::default()
    }
}

async fn join_with_retry(room: Room, agent_id: String) {
    let mut delay = Duration::from_secs(1);
    for attempt in 1..=6 {
        match room.join().await {
            Ok(()) => {
                tracing::info!(agent = %agent_id, room = %room.room_id(), "joined");
                return;
            }
            Err(e) => {
                tracing::warn!(agent = %agent_id, room = %room.room_id(), attempt, error = %e, "join failed");
                tokio::time::sleep(delay).await;
                delay *= 2;
            }
        }
    }
}
