//! Taking in room timelines: per room, in order, after catching up on a gap. When a
//! room's timeline in a sync response is `limited` (more happened since the last sync than
//! it holds: the sync fell behind), older pages are fetched with `/messages` until the
//! planner ([`crate::core::catch_up`]) has reached where the handling stood, the agent's
//! arrival or the bound; what lies past the bound is reported. At start, every joined room
//! is caught up the same way from its newest event.

use std::sync::Arc;

use matrix_sdk::deserialized_responses::TimelineEvent;
use matrix_sdk::room::{MessagesOptions, Room};
use matrix_sdk::ruma::events::room::message::sanitize::remove_plain_reply_fallback;
use matrix_sdk::ruma::{OwnedEventId, UInt};
use matrix_sdk::sync::{SyncResponse, Timeline};

use super::client::MatrixAgent;
use super::ids::{Ours, sdk_event, sdk_user};
use super::inbound::{stamp, to_inbound};
use crate::core::catch_up::{CatchUp, Stamp};
use crate::core::gateway::Gateway;
use crate::core::inbound::{Inbound, IncomingMessage, Unreadable};
use crate::model::errors::Chain;
use crate::model::ids::{EventId, UserId};
use crate::store::{RoomPosition, now_ms};

/// Events asked for per `/messages` page.
const PAGE_SIZE: u32 = 100;
/// Events asked for in the first page from a room's end (every start does it for every
/// room, and usually little is new).
const FIRST_PAGE_FROM_END: u32 = 20;

impl MatrixAgent {
    /// Catches every joined room up from its newest event back to where its handling
    /// stood, and records where each now stands.
    pub(super) async fn catch_up_all(
        &self,
        gateway: &Arc<Gateway>,
    ) -> Result<(), matrix_sdk::Error> {
        let mut positions = Vec::new();
        for room in self.client.joined_rooms() {
            let from_the_end = Batch {
                events: Vec::new(),
                gap: Some(PageFrom::End),
            };
            if let Some(position) = self.take_in_room(gateway, &room, from_the_end).await? {
                positions.push(position);
            }
        }
        gateway.taken_in(&self.agent_id, &positions).await;
        Ok(())
    }

    /// Takes in every joined room's timeline of `response`; returns the newest event of
    /// each room that had any. Fails when a gap could not be caught up.
    pub(super) async fn take_in(
        &self,
        gateway: &Arc<Gateway>,
        response: &SyncResponse,
    ) -> Result<Vec<RoomPosition>, matrix_sdk::Error> {
        let mut positions = Vec::new();
        for (room_id, update) in &response.rooms.joined {
            let Some(room) = self.client.get_room(room_id) else {
                continue;
            };
            let batch = Batch::of(&update.timeline);
            if let Some(position) = self.take_in_room(gateway, &room, batch).await? {
                positions.push(position);
            }
        }
        Ok(positions)
    }

    /// Takes in one room's new events, oldest first, after the ones a gap hid; returns
    /// the newest event seen, unless it is older than where the handling stood.
    async fn take_in_room(
        &self,
        gateway: &Arc<Gateway>,
        room: &Room,
        batch: Batch,
    ) -> Result<Option<RoomPosition>, matrix_sdk::Error> {
        let room_id = &room.room_id().ours();
        let handled = gateway.handled_so_far(&self.agent_id, room_id).await;
        let handled_ts = handled.last.as_ref().map(|(_, ts)| *ts);
        let mut newest = batch.events.iter().find_map(stamp);
        let mut planner = CatchUp::new(gateway.catch_up_bounds(), handled, now_ms());
        let wants_more = feed(&mut planner, batch.events.into_iter());
        let mut paged = false;
        if let Some(start) = batch.gap.filter(|_| wants_more) {
            tracing::debug!(agent = %self.agent_id, room = %room_id, ?start, "catching up");
            paged = true;
            let pages = page_back(room, start, &mut planner, &mut newest).await?;
            tracing::debug!(agent = %self.agent_id, room = %room_id, pages, "caught up");
        }
        let Some((newest_id, newest_ts)) = newest else {
            return Ok(None);
        };
        // A stale batch (a sync response the homeserver kept for an earlier request) does
        // not move the position back.
        let behind = handled_ts.is_some_and(|ts| newest_ts < ts);
        let plan = planner.finish();
        if paged {
            crate::core::metrics::metrics().caught_up(
                &self.agent_id,
                plan.admit.len(),
                plan.missed.len(),
            );
        }
        if paged && !plan.admit.is_empty() {
            tracing::info!(agent = %self.agent_id, room = %room_id, events = plan.admit.len(), "catching up: taking in the events of a gap in order");
        }
        for event in &plan.admit {
            let Some(inbound) = self.inbound(gateway, room, event).await else {
                continue;
            };
            // A message from someone listened to waits for its room key before it is
            // reported as undecryptable.
            if let Inbound::Unreadable(message, Unreadable::Undecryptable) = &inbound
                && gateway.listens_to(&message.sender)
                && self.wait_for_key(gateway, room.room_id().to_owned(), event, message.clone())
            {
                continue;
            }
            gateway.handle(inbound).await;
        }
        if !plan.missed.is_empty() {
            let mut missed = Vec::new();
            for event in &plan.missed {
                missed.extend(self.inbound(gateway, room, event).await);
            }
            gateway
                .report_missed(&self.agent_id, room_id, missed, plan.missed_more)
                .await;
        }
        Ok((!behind).then(|| RoomPosition {
            room_id: room_id.clone(),
            event_id: newest_id,
            event_ts: newest_ts,
        }))
    }

    /// What `event` means to the core, with the author of the message it replies to (a
    /// reply to an agent's message is for that agent).
    async fn inbound(
        &self,
        gateway: &Gateway,
        room: &Room,
        event: &TimelineEvent,
    ) -> Option<Inbound> {
        let inbound = to_inbound(&self.agent_id, &room.room_id().ours(), event, self.trust)?;
        Some(self.with_reply_sender(gateway, room, inbound).await)
    }

    /// `inbound` with what the room knows around it, for a sender the gateway listens to
    /// (nothing is looked up for strangers): the author's display name, and the author and
    /// text of the message it replies to (a reply to an agent's message is for that agent;
    /// the agent sees what "this" is).
    pub(super) async fn with_reply_sender(
        &self,
        gateway: &Gateway,
        room: &Room,
        mut inbound: Inbound,
    ) -> Inbound {
        let (Inbound::Message(message) | Inbound::Unreadable(message, _)) = &mut inbound else {
            return inbound;
        };
        if !gateway.listens_to(&message.sender) {
            return inbound;
        }
        if let Ok(sender) = sdk_user(&message.sender)
            && let Ok(Some(member)) = room.get_member_no_sync(&sender).await
        {
            message.sender_name = member.display_name().map(str::to_owned);
        }
        if let Some(target) = reply_to_look_up(message, |s| gateway.listens_to(s)) {
            match room.load_or_fetch_event(&target, None).await {
                Ok(replied) => {
                    message.reply_to_sender = replied.sender().map(|s| s.ours());
                    message.reply_to_body = replied
                        .raw()
                        .get_field::<serde_json::Value>("content")
                        .ok()
                        .flatten()
                        .and_then(|c| c.get("body")?.as_str().map(str::to_owned))
                        .map(|body| remove_plain_reply_fallback(&body).to_owned());
                }
                Err(e) => {
                    tracing::debug!(agent = %self.agent_id, event = %target, error = %Chain(&e), "could not fetch the message replied to");
                }
            }
        }
        inbound
    }
}

/// The message whose author must be looked up for `inbound`: the one it replies to, only
/// when its sender is someone the gateway listens to (a stranger's replies cost no
/// request).
fn reply_to_look_up(
    message: &IncomingMessage,
    listens_to: impl Fn(&UserId) -> bool,
) -> Option<OwnedEventId> {
    let target = message.reply_to.as_ref()?;
    listens_to(&message.sender)
        .then(|| sdk_event(target).ok())
        .flatten()
}

/// A room's events as a sync (or a catch-up) delivers them.
struct Batch {
    /// The events, newest first.
    events: Vec<TimelineEvent>,
    /// Where older pages start, if a gap may lie behind the events.
    gap: Option<PageFrom>,
}

impl Batch {
    /// The batch a sync response holds for a room.
    fn of(timeline: &Timeline) -> Self {
        Self {
            events: timeline.events.iter().rev().cloned().collect(),
            // Without a token to page from, the room's end will do: the planner skips the
            // events it has seen already.
            gap: timeline.limited.then(|| match &timeline.prev_batch {
                Some(token) => PageFrom::Token(token.clone()),
                None => PageFrom::End,
            }),
        }
    }
}

/// Where paging back starts.
#[derive(Debug, Clone)]
enum PageFrom {
    /// The room's newest event.
    End,
    /// A pagination token (a sync's `prev_batch`, a page's `end`).
    Token(String),
}

/// Pages back through `room`'s timeline from `start` until `planner` has what it wants or
/// history ends, noting the newest event seen if `newest` has none yet; returns how many
/// pages it took.
async fn page_back(
    room: &Room,
    start: PageFrom,
    planner: &mut CatchUp<TimelineEvent>,
    newest: &mut Option<(EventId, i64)>,
) -> Result<u32, matrix_sdk::Error> {
    let mut from = Some(start);
    let mut pages = 0;
    loop {
        let Some(start) = from.take() else {
            planner.end_of_history();
            return Ok(pages);
        };
        let mut options = MessagesOptions::backward();
        options.limit = UInt::from(PAGE_SIZE);
        match &start {
            PageFrom::Token(token) => options = options.from(Some(token.as_str())),
            PageFrom::End => options.limit = UInt::from(FIRST_PAGE_FROM_END),
        }
        let page = room.messages(options).await?;
        pages += 1;
        if newest.is_none() {
            *newest = page.chunk.iter().find_map(stamp);
        }
        if !feed(planner, page.chunk.into_iter()) {
            return Ok(pages);
        }
        from = page.end.map(PageFrom::Token);
    }
}

/// Hands `events` (newest first) to the planner; returns whether it wants an older page.
fn feed(planner: &mut CatchUp<TimelineEvent>, events: impl Iterator<Item = TimelineEvent>) -> bool {
    let (stamps, events): (Vec<(EventId, i64)>, Vec<TimelineEvent>) =
        events.filter_map(|e| stamp(&e).map(|s| (s, e))).unzip();
    planner.take(
        stamps
            .iter()
            .zip(events)
            .map(|((id, ts), event)| (Stamp { id, ts: *ts }, event)),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_replies_of_people_listened_to_are_looked_up() {
        let reply = |sender: &str| IncomingMessage {
            sender: sender.into(),
            reply_to: Some("$earlier".into()),
            ..Default::default()
        };
        let listens_to = |s: &UserId| *s == "@alice:hs";
        let looked_up =
            |m: &IncomingMessage| reply_to_look_up(m, listens_to).map(|e| e.to_string());
        assert_eq!(looked_up(&reply("@alice:hs")).as_deref(), Some("$earlier"));
        assert_eq!(looked_up(&reply("@stranger:hs")), None);
        let plain = IncomingMessage {
            sender: "@alice:hs".into(),
            ..Default::default()
        };
        assert_eq!(looked_up(&plain), None);
    }
}
