//! Reading a room as the agent's room tools do: its latest messages (each showing its
//! latest edit), one message by its event ID, its members. Read through the agent's own
//! Matrix user, so an agent reads only rooms it is in, and an encrypted room as far as its
//! keys go.

use std::collections::{HashMap, HashSet};

use matrix_sdk::RoomMemberships;
use matrix_sdk::room::{MessagesOptions, Room};
use matrix_sdk::ruma::UInt;

use super::errors::classify;
use super::ids::{Ours, sdk_event, sdk_user};
use super::inbound::to_inbound;
use super::sender_proof::SenderTrust;
use crate::core::chat::{ChatError, RoomMember};
use crate::core::inbound::{Change, Inbound, IncomingMessage};
use crate::model::ids::{AgentId, EventId, UserId};

/// Events asked for per `/messages` page.
const PAGE_SIZE: u32 = 100;
/// Most pages read for one history: the tools ask for the latest messages, not the archive.
const MAX_PAGES: usize = 10;

/// The latest messages of `room`, at most `limit`, oldest first.
pub(super) async fn history(
    room: &Room,
    agent_id: &AgentId,
    trust: SenderTrust,
    limit: usize,
) -> Result<Vec<IncomingMessage>, ChatError> {
    let room_id = room.room_id().ours();
    let mut newest_first: Vec<IncomingMessage> = Vec::new();
    // Walking back from the newest event, an edit or a redaction is met before the message
    // it changes; the first edit met is the latest.
    let mut edits: HashMap<EventId, (UserId, String)> = HashMap::new();
    let mut redacted: HashSet<EventId> = HashSet::new();
    let mut from: Option<String> = None;
    for _ in 0..MAX_PAGES {
        let mut options = MessagesOptions::backward().from(from.as_deref());
        options.limit = UInt::from(PAGE_SIZE);
        let page = room.messages(options).await.map_err(classify)?;
        for event in &page.chunk {
            match to_inbound(agent_id, &room_id, event, trust) {
                Some(Inbound::Change(c)) => match c.change {
                    Change::Edited(text) => {
                        edits.entry(c.target).or_insert((c.sender, text));
                    }
                    Change::Redacted => {
                        redacted.insert(c.target);
                    }
                },
                Some(inbound) => {
                    if let Some(m) = listed(inbound)
                        && !redacted.contains(&m.event_id)
                    {
                        newest_first.push(m);
                    }
                }
                None => {}
            }
        }
        from = page.end;
        if newest_first.len() >= limit || from.is_none() {
            break;
        }
    }
    newest_first.truncate(limit);
    newest_first.reverse();
    // Looked up once per sender, not once per message.
    let mut names: HashMap<UserId, Option<String>> = HashMap::new();
    for message in &mut newest_first {
        // An edit counts only from the message's own author.
        if let Some((sender, text)) = edits.remove(&message.event_id)
            && sender == message.sender
        {
            message.body = text;
        }
        let sender = &message.sender;
        if !names.contains_key(sender) {
            names.insert(sender.clone(), display_name(room, sender).await);
        }
        message.sender_name = names[sender].clone();
    }
    Ok(newest_first)
}

/// The message `event_id` of `room`; `None` when the room has no such message.
pub(super) async fn message(
    room: &Room,
    agent_id: &AgentId,
    trust: SenderTrust,
    event_id: &EventId,
) -> Result<Option<IncomingMessage>, ChatError> {
    let Ok(id) = sdk_event(event_id) else {
        return Ok(None);
    };
    // Asked of the homeserver for this room: an event of another room is not found.
    let event = match room.event(&id, None).await {
        Ok(event) => event,
        Err(e)
            if e.as_client_api_error()
                .is_some_and(|e| e.status_code.as_u16() == 404) =>
        {
            return Ok(None);
        }
        Err(e) => return Err(classify(e)),
    };
    Ok(to_inbound(agent_id, &room.room_id().ours(), &event, trust).and_then(listed))
}

/// The joined and invited members of `room`.
pub(super) async fn members(room: &Room) -> Result<Vec<RoomMember>, ChatError> {
    let members = room
        .members(RoomMemberships::JOIN | RoomMemberships::INVITE)
        .await
        .map_err(classify)?;
    Ok(members
        .iter()
        .map(|m| RoomMember {
            user_id: m.user_id().ours(),
            display_name: m.display_name().map(str::to_owned),
            joined: *m.membership()
                == matrix_sdk::ruma::events::room::member::MembershipState::Join,
        })
        .collect())
}

/// A message as the room tools list it; one the agent cannot read (undecryptable, or its
/// sender not proven) without its text or files, so nothing of it is taken. `None` for what
/// is no message.
fn listed(inbound: Inbound) -> Option<IncomingMessage> {
    match inbound {
        Inbound::Message(m) => Some(m),
        Inbound::Unreadable(m, _) => Some(IncomingMessage {
            body: String::new(),
            media: Vec::new(),
            ..m
        }),
        Inbound::Change(_) | Inbound::Reaction(_) | Inbound::PollResponse(_) => None,
    }
}

/// `user`'s display name in `room`, as the room last told us.
async fn display_name(room: &Room, user: &UserId) -> Option<String> {
    let user = sdk_user(user).ok()?;
    let member = room.get_member_no_sync(&user).await.ok()??;
    member.display_name().map(str::to_owned)
}
