//! Sending as an agent's Matrix user: messages, `m.replace` edits, reactions, redactions and
//! typing notices. Requests are made once (no hidden SDK retries) so that the caller sees a
//! rate limit and can fold pending text into its next edit; a new message carries a
//! transaction ID, so a retried send is never duplicated.

use async_trait::async_trait;
use matrix_sdk::config::RequestConfig;
use matrix_sdk::deserialized_responses::RawAnySyncOrStrippedState;
use matrix_sdk::room::Room;
use matrix_sdk::ruma::OwnedTransactionId;
use matrix_sdk::ruma::api::client::receipt::create_receipt::v3::ReceiptType;
use matrix_sdk::ruma::events::Mentions;
use matrix_sdk::ruma::events::poll::unstable_end::UnstablePollEndEventContent;
use matrix_sdk::ruma::events::reaction::ReactionEventContent;
use matrix_sdk::ruma::events::receipt::ReceiptThread;
use matrix_sdk::ruma::events::relation::Annotation;
use matrix_sdk::ruma::events::relation::{Reply, Thread};
use matrix_sdk::ruma::events::room::MediaSource;
use matrix_sdk::ruma::events::room::history_visibility::HistoryVisibility;
use matrix_sdk::ruma::events::room::join_rules::JoinRule;
use matrix_sdk::ruma::events::room::message::{
    Relation, ReplacementMetadata, RoomMessageEventContent, RoomMessageEventContentWithoutRelation,
};
use matrix_sdk::ruma::events::room::power_levels::UserPowerLevel;
use matrix_sdk::{Client, RoomMemberships};

use super::errors::classify;
use super::history;
use super::ids::{Ours, sdk_event, sdk_room, sdk_user};
use super::media;
use super::polls;
use super::sender_proof::SenderTrust;
use crate::core::chat::{ChatError, ChatPort, RoomMember};
use crate::core::inbound::IncomingMessage;
use crate::model::OutMessage;
use crate::model::errors::Chain;
use crate::model::ids::{AgentId, EventId, RoomId, UserId};
use crate::model::poll::PollAnswer;

/// [`ChatPort`] for one agent's Matrix user.
pub struct MatrixChat {
    /// The agent user's logged-in client.
    client: Client,
    /// The agent's ID, named in the messages read for its room tools.
    agent_id: AgentId,
    /// How much proof of their sender encrypted messages read for its room tools need.
    trust: SenderTrust,
}

impl MatrixChat {
    /// Wraps a logged-in client of agent `agent_id`.
    pub fn new(client: Client, agent_id: &AgentId, trust: SenderTrust) -> Self {
        Self {
            client,
            agent_id: agent_id.clone(),
            trust,
        }
    }

    fn room(&self, room_id: &RoomId) -> Result<Room, ChatError> {
        self.client
            .get_room(&sdk_room(room_id)?)
            .ok_or_else(|| ChatError::Permanent(format!("not in room {room_id}").into()))
    }
}

fn content(msg: &OutMessage) -> RoomMessageEventContentWithoutRelation {
    match (&msg.html, msg.notice) {
        (Some(html), false) => RoomMessageEventContentWithoutRelation::text_html(&msg.body, html),
        (None, false) => RoomMessageEventContentWithoutRelation::text_plain(&msg.body),
        (Some(html), true) => RoomMessageEventContentWithoutRelation::notice_html(&msg.body, html),
        (None, true) => RoomMessageEventContentWithoutRelation::notice_plain(&msg.body),
    }
}

/// The content of a new message: `msg` (with its file, once `uploaded`), its reply
/// relation, and always an explicit
/// `m.mentions` (empty unless someone is meant), so keyword and display-name push rules
/// never fire on an agent's words.
fn new_message(
    msg: &OutMessage,
    uploaded: Option<MediaSource>,
) -> Result<RoomMessageEventContent, ChatError> {
    let mut content: RoomMessageEventContent = match (&msg.attachment, uploaded) {
        (Some(file), Some(source)) => {
            RoomMessageEventContent::new(media::message_type(msg, file, source))
        }
        _ => content(msg).into(),
    };
    let mentioned: Vec<_> = msg
        .mentions
        .iter()
        .filter_map(|u| sdk_user(u).ok())
        .collect();
    content.mentions = Some(Mentions::with_user_ids(mentioned));
    content.relates_to = match (&msg.thread, &msg.reply_to) {
        // In a thread: clients without threads see a reply, to the message it answers or
        // else to the thread's root.
        (Some(root), reply_to) => {
            let root = sdk_event(root)?;
            Some(Relation::Thread(match reply_to {
                Some(target) => Thread::reply(root, sdk_event(target)?),
                None => Thread::plain(root.clone(), root),
            }))
        }
        (None, Some(target)) => Some(Relation::Reply(Reply::with_event_id(sdk_event(target)?))),
        (None, None) => None,
    };
    Ok(content)
}

/// The content of an edit of `target` to show `msg`, mentioning nobody (see
/// [`new_message`]).
fn replacement(target: &EventId, msg: &OutMessage) -> Result<RoomMessageEventContent, ChatError> {
    let mut content = content(msg);
    content.mentions = Some(Mentions::new());
    Ok(content.make_replacement(ReplacementMetadata::new(sdk_event(target)?, None)))
}

/// The type of the events a message and its edits are.
const MESSAGE: &str = "m.room.message";
/// The unstable key of MSC4357's marker on a message still being written.
const LIVE_MARKER: &str = "org.matrix.msc4357.live";
/// The unstable type of MSC4357's room state that turns live messages off in a room.
const LIVE_MESSAGING_STATE: &str = "org.matrix.msc4357.live_messaging";

/// `content` as JSON, with the live marker when `live`: on the event itself and, for an
/// edit, in `m.new_content`, where clients read what the message shows now.
fn marked(content: &RoomMessageEventContent, live: bool) -> Result<serde_json::Value, ChatError> {
    let mut json = serde_json::to_value(content)
        .map_err(|e| ChatError::Permanent(format!("a message that is not JSON: {e}").into()))?;
    if live {
        let marker = serde_json::Value::Object(serde_json::Map::new());
        if let Some(new) = json
            .get_mut("m.new_content")
            .and_then(|v| v.as_object_mut())
        {
            new.insert(LIVE_MARKER.to_owned(), marker.clone());
        }
        if let Some(top) = json.as_object_mut() {
            top.insert(LIVE_MARKER.to_owned(), marker);
        }
    }
    Ok(json)
}

/// Whether `room` lets messages carry the live marker: yes unless its
/// `org.matrix.msc4357.live_messaging` state says `enabled: false`.
async fn live_allowed(room: &Room) -> bool {
    #[derive(serde::Deserialize)]
    struct State {
        content: Enabled,
    }
    #[derive(serde::Deserialize)]
    struct Enabled {
        enabled: Option<bool>,
    }
    let state = room
        .get_state_event(LIVE_MESSAGING_STATE.into(), "")
        .await
        .ok()
        .flatten();
    let enabled = match state {
        Some(RawAnySyncOrStrippedState::Sync(raw)) => raw
            .deserialize_as_unchecked::<State>()
            .ok()
            .and_then(|s| s.content.enabled),
        _ => None,
    };
    enabled != Some(false)
}

fn once() -> RequestConfig {
    RequestConfig::new().disable_retry()
}

#[async_trait]
impl ChatPort for MatrixChat {
    async fn send(
        &self,
        room_id: &RoomId,
        txn: &str,
        msg: &OutMessage,
    ) -> Result<EventId, ChatError> {
        let room = self.room(room_id)?;
        let uploaded = match &msg.attachment {
            Some(file) => Some(media::upload(&self.client, &room, file).await?),
            None => None,
        };
        let live = msg.live && live_allowed(&room).await;
        let content = marked(&new_message(msg, uploaded)?, live)?;
        let txn = OwnedTransactionId::from(txn);
        let response = room
            .send_raw(MESSAGE, content)
            .with_transaction_id(&txn)
            .with_request_config(once())
            .await
            .map_err(classify)?;
        Ok(response.response.event_id.ours())
    }

    async fn download(&self, source: &str) -> Result<Vec<u8>, ChatError> {
        media::download(&self.client, source).await
    }

    async fn edit(
        &self,
        room_id: &RoomId,
        target: &EventId,
        msg: &OutMessage,
    ) -> Result<(), ChatError> {
        let room = self.room(room_id)?;
        let live = msg.live && live_allowed(&room).await;
        room.send_raw(MESSAGE, marked(&replacement(target, msg)?, live)?)
            .with_request_config(once())
            .await
            .map_err(classify)?;
        Ok(())
    }

    async fn react(
        &self,
        room_id: &RoomId,
        target: &EventId,
        key: &str,
    ) -> Result<EventId, ChatError> {
        let room = self.room(room_id)?;
        let reaction =
            ReactionEventContent::new(Annotation::new(sdk_event(target)?, key.to_owned()));
        let response = room
            .send(reaction)
            .with_request_config(once())
            .await
            .map_err(classify)?;
        Ok(response.response.event_id.ours())
    }

    async fn send_poll(
        &self,
        room_id: &RoomId,
        txn: &str,
        msg: &OutMessage,
        answers: &[PollAnswer],
    ) -> Result<EventId, ChatError> {
        let room = self.room(room_id)?;
        let txn = OwnedTransactionId::from(txn);
        let response = room
            .send_raw(polls::POLL_START, polls::poll_start(msg, answers)?)
            .with_transaction_id(&txn)
            .with_request_config(once())
            .await
            .map_err(classify)?;
        Ok(response.response.event_id.ours())
    }

    async fn end_poll(
        &self,
        room_id: &RoomId,
        poll: &EventId,
        msg: &OutMessage,
    ) -> Result<(), ChatError> {
        let room = self.room(room_id)?;
        let end = UnstablePollEndEventContent::new(msg.body.clone(), sdk_event(poll)?);
        room.send(end)
            .with_request_config(once())
            .await
            .map_err(classify)?;
        Ok(())
    }

    async fn redact(&self, room_id: &RoomId, target: &EventId) -> Result<(), ChatError> {
        let room = self.room(room_id)?;
        room.redact(&sdk_event(target)?, None, None)
            .await
            .map_err(|e| classify(e.into()))?;
        Ok(())
    }

    async fn readers(&self, room_id: &RoomId) -> Result<Option<Vec<UserId>>, ChatError> {
        let room = self.room(room_id)?;
        let anyone = room.history_visibility_or_default() == HistoryVisibility::WorldReadable
            || matches!(room.join_rule(), Some(JoinRule::Public));
        if anyone {
            return Ok(None);
        }
        // An invited person reads the room's history once they join. Only the IDs are
        // read: one query of the store (the member list fetched first if the room has none
        // yet), where the full members would load every member event, profile and the
        // power levels on the way from a message to its prompt.
        room.sync_members().await.map_err(classify)?;
        let members = self
            .client
            .state_store()
            .get_user_ids(
                room.room_id(),
                RoomMemberships::JOIN | RoomMemberships::INVITE,
            )
            .await
            .map_err(|e| classify(e.into()))?;
        Ok(Some(members.iter().map(|id| id.ours()).collect()))
    }

    async fn power_level(&self, room_id: &RoomId, user: &UserId) -> Result<i64, ChatError> {
        let room = self.room(room_id)?;
        let user = sdk_user(user)?;
        let levels = room.power_levels().await.map_err(|e| classify(e.into()))?;
        match levels.for_user(&user) {
            UserPowerLevel::Int(level) => Ok(level.into()),
            // A room creator (room version 12): above every number.
            UserPowerLevel::Infinite => Ok(i64::MAX),
            other => Err(ChatError::Permanent(
                format!("a power level of an unknown kind: {other:?}").into(),
            )),
        }
    }

    async fn history(
        &self,
        room_id: &RoomId,
        limit: usize,
    ) -> Result<Vec<IncomingMessage>, ChatError> {
        history::history(&self.room(room_id)?, &self.agent_id, self.trust, limit).await
    }

    async fn message(
        &self,
        room_id: &RoomId,
        event_id: &EventId,
    ) -> Result<Option<IncomingMessage>, ChatError> {
        history::message(&self.room(room_id)?, &self.agent_id, self.trust, event_id).await
    }

    async fn members(&self, room_id: &RoomId) -> Result<Vec<RoomMember>, ChatError> {
        history::members(&self.room(room_id)?).await
    }

    async fn typing(&self, room_id: &RoomId, on: bool) {
        if let Ok(room) = self.room(room_id)
            && let Err(e) = room.typing_notice(on).await
        {
            tracing::debug!(room = %room_id, error = %Chain(&e), "typing notice failed");
        }
    }

    async fn mark_read(&self, room_id: &RoomId, event: &EventId, thread: Option<&EventId>) {
        let (Ok(room), Ok(event)) = (self.room(room_id), sdk_event(event)) else {
            return;
        };
        // A message in a thread is read in that thread, so clients with threads show it
        // there.
        let thread = match thread.map(sdk_event) {
            Some(Ok(root)) => ReceiptThread::Thread(root),
            _ => ReceiptThread::Unthreaded,
        };
        let receipt = room
            .send_single_receipt(ReceiptType::Read, thread, event)
            .await;
        if let Err(e) = receipt {
            tracing::debug!(room = %room_id, error = %Chain(&e), "read receipt failed");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn json(content: &RoomMessageEventContent) -> serde_json::Value {
        serde_json::to_value(content).unwrap()
    }

    #[test]
    fn agent_messages_mention_nobody_unless_meant() {
        let plain = json(&new_message(&OutMessage::notice("hello alice"), None).unwrap());
        assert_eq!(plain["m.mentions"], serde_json::json!({}), "{plain}");
        let mut meant = OutMessage::notice("approve?");
        meant.mentions.push(UserId::from("@alice:hs"));
        let meant = json(&new_message(&meant, None).unwrap());
        assert_eq!(
            meant["m.mentions"],
            serde_json::json!({"user_ids": ["@alice:hs"]})
        );
        let edit = json(
            &replacement(
                &EventId::from("$e"),
                &OutMessage::notice("hello alice, done"),
            )
            .unwrap(),
        );
        assert_eq!(edit["m.mentions"], serde_json::json!({}), "{edit}");
        assert_eq!(
            edit["m.new_content"]["m.mentions"],
            serde_json::json!({}),
            "{edit}"
        );
    }

    #[test]
    fn a_message_in_a_thread_carries_the_thread_relation_and_a_reply_fallback() {
        let threaded = OutMessage::notice("done").in_thread(Some(EventId::from("$root")));
        let plain = json(&new_message(&threaded, None).unwrap());
        assert_eq!(
            plain["m.relates_to"],
            serde_json::json!({
                "rel_type": "m.thread",
                "event_id": "$root",
                "is_falling_back": true,
                "m.in_reply_to": {"event_id": "$root"},
            })
        );
        let reply =
            json(&new_message(&threaded.replying_to(EventId::from("$prompt")), None).unwrap());
        assert_eq!(reply["m.relates_to"]["rel_type"], "m.thread");
        assert_eq!(
            reply["m.relates_to"]["m.in_reply_to"]["event_id"],
            "$prompt"
        );
        assert_eq!(
            reply["m.relates_to"]["is_falling_back"],
            serde_json::json!(null)
        );
        let outside = json(
            &new_message(
                &OutMessage::notice("x").replying_to(EventId::from("$p")),
                None,
            )
            .unwrap(),
        );
        assert_eq!(
            outside["m.relates_to"],
            serde_json::json!({"m.in_reply_to": {"event_id": "$p"}})
        );
    }

    #[test]
    fn a_live_message_and_its_edits_carry_the_marker_where_clients_read_it() {
        let live = OutMessage {
            live: true,
            ..OutMessage::notice("hal")
        };
        let posted = marked(&new_message(&live, None).unwrap(), true).unwrap();
        assert_eq!(posted[LIVE_MARKER], serde_json::json!({}), "{posted}");
        let edit = marked(&replacement(&EventId::from("$e"), &live).unwrap(), true).unwrap();
        assert_eq!(edit[LIVE_MARKER], serde_json::json!({}), "{edit}");
        assert_eq!(edit["m.new_content"][LIVE_MARKER], serde_json::json!({}));
        assert_eq!(edit["m.new_content"]["body"], "hal");
        let done = OutMessage::notice("hello");
        let last = marked(&replacement(&EventId::from("$e"), &done).unwrap(), false).unwrap();
        assert!(last.get(LIVE_MARKER).is_none(), "{last}");
        assert!(last["m.new_content"].get(LIVE_MARKER).is_none(), "{last}");
        assert_eq!(last["m.relates_to"]["rel_type"], "m.replace");
    }
}
