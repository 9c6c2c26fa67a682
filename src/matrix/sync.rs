//! The sync loop of one agent's Matrix user. Invites and the agent's own membership are
//! handled by SDK event handlers; room timelines are taken in by [`super::timeline`], in
//! order, after each sync response, catching up on any gap first.
//!
//! The SDK saves its sync token while it processes a response, before the gateway has
//! taken the response's events in. So after the first sync of every start (and after every
//! failure to take a response in) each joined room is caught up from its newest event back
//! to where its handling stood: a crash at any instant is healed there, and admission,
//! unique per event and agent, keeps anything from being taken in twice. The catch-up
//! follows a sync rather than preceding it so that the room keys sent meanwhile have
//! arrived and what it pages back can be decrypted.

use std::sync::Arc;
use std::time::Duration;

use matrix_sdk::Client;
use matrix_sdk::config::SyncSettings;
use matrix_sdk::room::Room;
use matrix_sdk::ruma::UInt;
use matrix_sdk::ruma::api::client::filter::{FilterDefinition, RoomEventFilter};
use matrix_sdk::ruma::api::client::sync::sync_events::v3::Filter;
use matrix_sdk::ruma::events::room::member::{
    MembershipState, StrippedRoomMemberEvent, SyncRoomMemberEvent,
};
use matrix_sdk::sync::SyncResponse;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use crate::core::metrics::metrics;
use crate::model::errors::Chain;

use super::client::{MatrixAgent, MatrixError};
use super::errors::is_unknown_token;
use super::ids::Ours;
use crate::core::gateway::Gateway;
use crate::model::ids::AgentId;

/// How long the homeserver may hold a sync request open.
const SYNC_TIMEOUT: Duration = Duration::from_secs(30);
/// Longest wait between two attempts while the homeserver fails.
const MAX_BACKOFF: Duration = Duration::from_secs(60);
/// The wait after a first failure.
const FIRST_BACKOFF: Duration = Duration::from_secs(1);

impl MatrixAgent {
    /// Runs this user's sync loop until `shutdown` is cancelled; a sync returns at most
    /// `timeline_limit` events per room (more are caught up page by page). Homeserver
    /// errors are retried with back-off; only a rejected access token ends the loop with an
    /// error.
    pub async fn run(
        &self,
        gateway: Arc<Gateway>,
        timeline_limit: u32,
        shutdown: CancellationToken,
    ) -> Result<(), MatrixError> {
        self.start_side_tasks(&gateway, &shutdown);
        let settings = SyncSettings::default()
            .timeout(SYNC_TIMEOUT)
            .filter(sync_filter(timeline_limit));
        let mut retry = Retry::default();
        // Whether every joined room must be caught up: at start, and after a sync response
        // could not be taken in whole. It is done right after a sync, which brings the room
        // keys sent meanwhile, so what it pages back can be decrypted; that sync does not
        // wait for news.
        let mut catch_up_all = true;
        loop {
            let settings = match catch_up_all {
                true => settings.clone().timeout(Duration::ZERO),
                false => settings.clone(),
            };
            let result = tokio::select! {
                _ = shutdown.cancelled() => return Ok(()),
                result = self.client.sync_once(settings) => result,
            };
            let response = match result {
                Ok(response) => response,
                Err(e) if is_unknown_token(&e) => return Err(self.token_rejected()),
                Err(e) => {
                    metrics().sync_failed(&self.agent_id);
                    tracing::warn!(agent = %self.agent_id, error = %Chain(&e), retry_in = ?retry.backoff, "sync failed");
                    if !retry.after_failure(&shutdown).await {
                        return Ok(());
                    }
                    continue;
                }
            };
            if let Some(down_for) = retry.reached() {
                tracing::info!(agent = %self.agent_id, ?down_for, "homeserver reachable again");
                gateway.homeserver_back();
            }
            if catch_up_all {
                let caught_up = tokio::select! {
                    _ = shutdown.cancelled() => return Ok(()),
                    caught_up = self.catch_up_all(&gateway) => caught_up,
                };
                match caught_up {
                    // It paged back from after this response: the response holds nothing
                    // it has not taken in.
                    Ok(()) => {
                        catch_up_all = false;
                        retry.succeeded();
                        // Synced, and every room caught up: ready.
                        metrics().synced(&self.agent_id);
                        continue;
                    }
                    Err(e) if is_unknown_token(&e) => return Err(self.token_rejected()),
                    // This response's events are in what the next catch-up pages back.
                    Err(e) => {
                        tracing::warn!(agent = %self.agent_id, error = %Chain(&e), retry_in = ?retry.backoff, "catching up the rooms failed");
                        if !retry.after_failure(&shutdown).await {
                            return Ok(());
                        }
                        continue;
                    }
                }
            }
            retry.succeeded();
            // Taking in waits while the state database is unreachable; a shutdown does
            // not. What was not recorded as handled is taken in again after the restart.
            tokio::select! {
                _ = shutdown.cancelled() => return Ok(()),
                taken = self.take_in_response(&gateway, &response) => catch_up_all = !taken,
            };
        }
    }

    /// Takes in one sync response and records where each room's handling stands; false
    /// when a gap could not be caught up (the homeserver failed while paging): every room
    /// is then caught up from its newest event after the next sync.
    async fn take_in_response(&self, gateway: &Arc<Gateway>, response: &SyncResponse) -> bool {
        match self.take_in(gateway, response).await {
            Ok(positions) => {
                gateway.taken_in(&self.agent_id, &positions).await;
                true
            }
            Err(e) => {
                tracing::warn!(agent = %self.agent_id, error = %Chain(&e), "taking in a sync response failed; catching up every room after the next sync");
                false
            }
        }
    }

    /// What runs beside the sync loop until `shutdown`: the event handlers, the retries of
    /// messages whose keys came late, and keeping the agent recoverable.
    fn start_side_tasks(&self, gateway: &Arc<Gateway>, shutdown: &CancellationToken) {
        self.install_handlers(gateway.clone());
        tokio::spawn(
            self.clone()
                .retry_late_keys(gateway.clone(), shutdown.clone()),
        );
        tokio::spawn(self.clone().keep_recoverable(shutdown.clone()));
    }

    /// The homeserver no longer accepts this user's access token: said in the log, and
    /// the error that ends its loop.
    fn token_rejected(&self) -> MatrixError {
        let error = MatrixError::TokenRejected {
            user: self.user_id.clone(),
            session_file: self.session_file.clone(),
        };
        tracing::error!(agent = %self.agent_id, "{error}");
        error
    }

    /// The handlers for what the sync brings besides timelines: invites and this user's
    /// own membership. Room messages and reactions are read from the timelines instead
    /// (`timeline.rs`), so a message the SDK cannot parse still counts.
    fn install_handlers(&self, gateway: Arc<Gateway>) {
        let (agent_id, gw) = (self.agent_id.clone(), gateway.clone());
        self.client.add_event_handler(
            move |ev: StrippedRoomMemberEvent, room: Room, client: Client| {
                on_invite(ev, room, client, gw.clone(), agent_id.clone())
            },
        );
        let (agent_id, gw) = (self.agent_id.clone(), gateway);
        self.client.add_event_handler(
            move |ev: SyncRoomMemberEvent, room: Room, client: Client| {
                on_membership(ev, room, client, gw.clone(), agent_id.clone())
            },
        );
    }
}

/// An invite: accepted (joined) when the inviter may invite, else declined.
async fn on_invite(
    ev: StrippedRoomMemberEvent,
    room: Room,
    client: Client,
    gateway: Arc<Gateway>,
    agent_id: AgentId,
) {
    let me = client.user_id().map(|u| u.as_str());
    if !invites(ev.content.membership.clone(), ev.state_key.as_str(), me) {
        return;
    }
    let room_id = room.room_id().ours();
    if gateway
        .accept_invite(&agent_id, &room_id, &ev.sender.ours())
        .await
    {
        // Joining waits for the next sync, so it must not run inside this handler.
        tokio::spawn(join_with_retry(room, agent_id));
    } else {
        tokio::spawn(async move {
            if let Err(e) = room.leave().await {
                tracing::warn!(agent = %agent_id, room = %room_id, error = %Chain(&e), "could not decline the invite");
            }
        });
    }
}

/// A membership change in a joined room: the gateway forgets a room this user left or
/// was removed from, and reads what it needs from a room this user has joined.
async fn on_membership(
    ev: SyncRoomMemberEvent,
    room: Room,
    client: Client,
    gateway: Arc<Gateway>,
    agent_id: AgentId,
) {
    let me = client.user_id().map(|u| u.as_str());
    if joins(ev.membership().clone(), ev.state_key().as_str(), me) {
        // The sync that brings the join has just marked the member list as missing: it
        // is read now, beside the sync loop.
        tokio::spawn(async move { prepare_to_answer(&room, &agent_id).await });
        return;
    }
    if leaves(ev.membership().clone(), ev.state_key().as_str(), me) {
        tracing::info!(agent = %agent_id, room = %room.room_id(), "left the room");
        gateway.left_room(&agent_id, &room.room_id().ours()).await;
    }
}

/// Whether a membership event about `state_key` invites this user (`me`).
fn invites(membership: MembershipState, state_key: &str, me: Option<&str>) -> bool {
    membership == MembershipState::Invite && me == Some(state_key)
}

/// Whether a membership event about `state_key` is this user's joining (or a change of
/// its profile while joined).
fn joins(membership: MembershipState, state_key: &str, me: Option<&str>) -> bool {
    membership == MembershipState::Join && me == Some(state_key)
}

/// Whether a membership event about `state_key` takes this user (`me`) out of the room.
fn leaves(membership: MembershipState, state_key: &str, me: Option<&str>) -> bool {
    me == Some(state_key) && matches!(membership, MembershipState::Leave | MembershipState::Ban)
}

/// The sync loop's retries: how long it waits after the next failure, and since when the
/// homeserver has been failing (for the log line when it answers again).
struct Retry {
    /// The wait after the next failure: doubled after each, up to `MAX_BACKOFF`.
    backoff: Duration,
    /// When the failures began, if the last request failed.
    failing_since: Option<Instant>,
}

impl Default for Retry {
    fn default() -> Self {
        Self {
            backoff: FIRST_BACKOFF,
            failing_since: None,
        }
    }
}

impl Retry {
    /// A request failed: waits out the back-off (doubling it for next time); `false`
    /// when shutdown came first.
    async fn after_failure(&mut self, shutdown: &CancellationToken) -> bool {
        self.failing_since.get_or_insert_with(Instant::now);
        let wait = self.backoff;
        self.backoff = (self.backoff * 2).min(MAX_BACKOFF);
        tokio::select! {
            _ = shutdown.cancelled() => false,
            _ = tokio::time::sleep(wait) => true,
        }
    }

    /// The homeserver answered: how long it had been failing, if it had.
    fn reached(&mut self) -> Option<Duration> {
        self.failing_since.take().map(|since| since.elapsed())
    }

    /// A round went through: the next failure waits the shortest time again.
    fn succeeded(&mut self) {
        self.backoff = FIRST_BACKOFF;
    }
}

/// What the gateway asks each sync for: a room timeline long enough that a short absence
/// needs no paging, and nothing it never reads (presence, typing, receipts). Timeline event
/// types are not filtered: the SDK reads room state from the timeline too.
fn sync_filter(timeline_limit: u32) -> Filter {
    let mut filter = FilterDefinition::default();
    filter.room.timeline.limit = Some(UInt::from(timeline_limit));
    filter.room.ephemeral = RoomEventFilter::ignore_all();
    filter.presence = matrix_sdk::ruma::api::client::filter::Filter::ignore_all();
    Filter::FilterDefinition(filter)
}

async fn join_with_retry(room: Room, agent_id: AgentId) {
    let mut delay = Duration::from_secs(1);
    for attempt in 1..=6 {
        match room.join().await {
            Ok(()) => {
                tracing::info!(agent = %agent_id, room = %room.room_id(), "joined");
                return;
            }
            Err(e) => {
                tracing::warn!(agent = %agent_id, room = %room.room_id(), attempt, error = %Chain(&e), "join failed");
                tokio::time::sleep(delay).await;
                delay *= 2;
            }
        }
    }
}

/// Reads, once the sync has brought the agent's joining, what its first answer in the room
/// would otherwise wait for: the member list (who is addressed, who may read the history)
/// and the room's encryption state (checked before every send). Each is read once per room
/// and kept in the agent's Matrix store; read here, while the room is quiet, the person's
/// first message is answered without two more round trips to the homeserver, and a burst
/// in newly joined rooms does not queue them at a busy homeserver ahead of the replies. A
/// failure only leaves them to be read at the first answer, as before; for a room already
/// read (a restart's sync showing the join again) both are no-ops.
async fn prepare_to_answer(room: &Room, agent_id: &AgentId) {
    if let Err(e) = room.sync_members().await {
        tracing::debug!(agent = %agent_id, room = %room.room_id(), error = %Chain(&e), "could not read the members after joining");
    }
    if let Err(e) = room.request_encryption_state().await {
        tracing::debug!(agent = %agent_id, room = %room.room_id(), error = %Chain(&e), "could not read the encryption state after joining");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn retries_back_off_doubling_up_to_the_cap_and_start_over_after_a_success() {
        let shutdown = CancellationToken::new();
        let mut retry = Retry::default();
        assert_eq!(retry.reached(), None, "nothing failed yet");
        let mut waits = Vec::new();
        for _ in 0..8 {
            let before = Instant::now();
            assert!(retry.after_failure(&shutdown).await);
            waits.push(before.elapsed().as_secs());
        }
        assert_eq!(waits, [1, 2, 4, 8, 16, 32, 60, 60]);
        assert!(
            retry
                .reached()
                .is_some_and(|d| d >= Duration::from_secs(183))
        );
        assert_eq!(retry.reached(), None, "the outage is reported once");
        retry.succeeded();
        assert_eq!(retry.backoff, FIRST_BACKOFF);
        shutdown.cancel();
        assert!(
            !retry.after_failure(&shutdown).await,
            "shutdown ends the wait"
        );
    }

    #[test]
    fn only_an_invite_of_this_user_is_one() {
        let me = Some("@demo:x");
        assert!(invites(MembershipState::Invite, "@demo:x", me));
        assert!(!invites(MembershipState::Invite, "@other:x", me));
        assert!(!invites(MembershipState::Join, "@demo:x", me));
        assert!(!invites(MembershipState::Invite, "@demo:x", None));
    }

    #[test]
    fn only_this_users_own_join_is_its_joining() {
        let me = Some("@demo:x");
        assert!(joins(MembershipState::Join, "@demo:x", me));
        assert!(!joins(MembershipState::Join, "@alice:x", me));
        assert!(!joins(MembershipState::Invite, "@demo:x", me));
        assert!(!joins(MembershipState::Join, "@demo:x", None));
    }

    #[test]
    fn leaving_or_being_banned_takes_this_user_out_and_others_leaving_does_not() {
        let me = Some("@demo:x");
        assert!(leaves(MembershipState::Leave, "@demo:x", me));
        assert!(leaves(MembershipState::Ban, "@demo:x", me));
        assert!(!leaves(MembershipState::Leave, "@alice:x", me));
        assert!(!leaves(MembershipState::Join, "@demo:x", me));
    }
}
