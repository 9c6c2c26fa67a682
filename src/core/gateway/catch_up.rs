//! What the chat side needs to catch up on a gap in a room's timeline: where the handling
//! of each room stands, and the report of what lay past the catch-up bound.
//! The planning itself is pure ([`crate::core::catch_up`]); paging back is the chat side's.

use super::Gateway;
use crate::core::catch_up::{CatchUpBounds, HandledSoFar};
use crate::core::inbound::{Inbound, IncomingMessage};
use crate::core::routing;
use crate::core::voice::{RoomVoice, txn};
use crate::model::OutMessage;
use crate::model::ids::{AgentId, ConversationKey, RoomId};
use crate::render::strings;
use crate::store::{RoomPosition, until_answered};

impl Gateway {
    /// How far back a room's timeline is caught up after a gap.
    pub fn catch_up_bounds(&self) -> CatchUpBounds {
        self.catch_up
    }

    /// Where `agent_id`'s handling of `room_id` stood: the newest event taken in, and when
    /// the agent arrived. A database that cannot be reached is waited for; any other store
    /// failure is logged and counts as knowing nothing (the catch-up then goes as far as
    /// its bound; admission keeps it from doubling anything).
    pub async fn handled_so_far(&self, agent_id: &AgentId, room_id: &RoomId) -> HandledSoFar {
        let key = ConversationKey::new(room_id, agent_id);
        // Read before anything of the room is taken in: a database that is restarting is
        // waited for (see [`until_answered`]).
        let position = until_answered("reading where a room's handling stood", || {
            self.store.room_position(&key)
        });
        let last = match position.await {
            Ok(position) => position.map(|p| (p.event_id, p.event_ts)),
            Err(e) => {
                tracing::error!(agent = %agent_id, room = %room_id, error = %e, "could not read where the room's handling stood");
                None
            }
        };
        let floor = until_answered("reading when the agent arrived", || {
            self.store.member_floor(&key)
        });
        let mut floor = match floor.await {
            Ok(floor) => floor,
            Err(e) => {
                tracing::error!(agent = %agent_id, room = %room_id, error = %e, "could not read when the agent arrived");
                None
            }
        };
        // A room handled before positions were kept (an upgrade): what came before the
        // last message taken in was seen then, and is not taken up again now.
        if last.is_none()
            && let Ok(Some(at)) = self.store.last_handled_at(&key).await
        {
            floor = Some(floor.map_or(at, |f| f.max(at)));
        }
        HandledSoFar { last, floor }
    }

    /// Records the newest event of each room `agent_id` took in (a whole sync response,
    /// or a catch-up): the next catch-up stops there.
    pub async fn taken_in(&self, agent_id: &AgentId, rooms: &[RoomPosition]) {
        if let Err(e) = self.store.save_positions(agent_id, rooms).await {
            tracing::error!(agent = %agent_id, error = %e, "could not record where the rooms' handling stands; the next catch-up goes further back");
        }
    }

    /// Tells `room_id` how many of `missed` (messages past the catch-up bound, never taken
    /// in) `agent_id` would have answered; `more`: even more lay past them, uncounted.
    /// Each is recorded as handled as it is counted: it is reported once, and never
    /// answered later (a stale sync response may bring it again).
    pub async fn report_missed(
        &self,
        agent_id: &AgentId,
        room_id: &RoomId,
        missed: Vec<Inbound>,
        more: bool,
    ) {
        let mut count = 0;
        let mut newest = None;
        let key = ConversationKey::new(room_id, agent_id);
        for inbound in &missed {
            let Some(message) = inbound.message() else {
                continue;
            };
            if !self.would_have_answered(inbound, message).await {
                continue;
            }
            match self.store.admit(&message.event_id, &key, None).await {
                Ok(true) => {
                    tracing::info!(agent = %agent_id, room = %room_id, event = %message.event_id, "a message from while the agent was away lies past the catch-up bound; not answered");
                    count += 1;
                    newest = Some(message.event_id.clone());
                }
                Ok(false) => {}
                Err(e) => {
                    tracing::error!(agent = %agent_id, error = %e, "store unavailable; a message past the catch-up bound is not reported")
                }
            }
        }
        let Some(newest) = newest else {
            return;
        };
        let Some(ctx) = self.agents.get(agent_id) else {
            return;
        };
        tracing::warn!(
            agent = %agent_id,
            room = %room_id,
            count,
            more,
            "messages from while the agent was away were not answered: past the catch-up bound"
        );
        let bounds = self.catch_up;
        let text = strings::missed_while_away(
            count,
            more,
            bounds.max_events,
            bounds.max_age.as_secs() / 3600,
        );
        RoomVoice::new(&*ctx.chat, agent_id, room_id)
            .say(
                &txn("missed", &[agent_id.as_str(), newest.as_str()]),
                &OutMessage::notice(text),
            )
            .await;
    }

    /// Whether `message` is one the agent that saw it would have taken in, had it been
    /// within the bound: from an allowed person, after the agent arrived, not taken in
    /// already, with something in it, and for this agent.
    async fn would_have_answered(&self, inbound: &Inbound, message: &IncomingMessage) -> bool {
        if self.people.is_agent(&message.sender) || !self.people.may_prompt(&message.sender) {
            return false;
        }
        if matches!(inbound, Inbound::Message(m) if m.body.trim().is_empty() && m.media.is_empty())
        {
            return false;
        }
        let arrived = self
            .store
            .member_floor(&message.conversation())
            .await
            .ok()
            .flatten();
        if arrived.is_some_and(|since| (message.timestamp_ms as i64) < since) {
            return false;
        }
        if self
            .store
            .is_handled(&message.agent_id, &message.event_id)
            .await
            .unwrap_or(false)
        {
            return false;
        }
        let (members, routing, addressing) = self.address(message).await;
        routing::targets(&addressing, &members, routing.default_agent.as_ref())
            .contains(&message.agent_id)
    }
}
