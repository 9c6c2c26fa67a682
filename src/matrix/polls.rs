//! Native polls (MSC3381), the Matrix side: the content of a poll the agent posts, and the
//! answers people give to one. Clients read the unstable event types today; an answer is
//! taken in either form.

use matrix_sdk::ruma::events::AnySyncMessageLikeEvent;
use matrix_sdk::ruma::events::Mentions;
use matrix_sdk::ruma::events::SyncMessageLikeEvent;
use matrix_sdk::ruma::events::poll::start::PollKind;
use matrix_sdk::ruma::events::poll::unstable_start::{
    NewUnstablePollStartEventContent, UnstablePollAnswer, UnstablePollAnswers,
    UnstablePollStartContentBlock,
};
use matrix_sdk::ruma::events::relation::Thread;
use matrix_sdk::ruma::events::room::message::RelationWithoutReplacement;

use super::ids::{Ours, sdk_event, sdk_user};
use crate::core::chat::ChatError;
use crate::core::inbound::{Inbound, IncomingPollResponse};
use crate::model::OutMessage;
use crate::model::ids::{AgentId, RoomId};
use crate::model::poll::PollAnswer;

/// The unstable type of a native poll (MSC3381): the one clients read today.
pub(super) const POLL_START: &str = "org.matrix.msc3381.poll.start";

/// The content of a native poll asking `msg`'s body: the answers as buttons (results
/// disclosed, so everyone sees who chose what), the same as text for clients without
/// polls, its thread relation, and an explicit `m.mentions` (as every message of the agent has).
pub(super) fn poll_start(
    msg: &OutMessage,
    answers: &[PollAnswer],
) -> Result<serde_json::Value, ChatError> {
    let unstable: Vec<UnstablePollAnswer> = (answers.iter())
        .map(|a| UnstablePollAnswer::new(a.id.clone(), a.text.clone()))
        .collect();
    let unstable = UnstablePollAnswers::try_from(unstable)
        .map_err(|e| ChatError::Permanent(format!("a poll Matrix cannot carry: {e}").into()))?;
    let mut block = UnstablePollStartContentBlock::new(msg.body.clone(), unstable);
    block.kind = PollKind::Disclosed;
    let mut text = msg.body.clone();
    for (i, answer) in answers.iter().enumerate() {
        text.push_str(&format!("\n{}. {}", i + 1, answer.text));
    }
    let mut content = NewUnstablePollStartEventContent::plain_text(text, block);
    content.relates_to = match &msg.thread {
        Some(root) => {
            let root = sdk_event(root)?;
            Some(RelationWithoutReplacement::Thread(Thread::plain(
                root.clone(),
                root,
            )))
        }
        None => None,
    };
    let mut json = serde_json::to_value(&content)
        .map_err(|e| ChatError::Permanent(format!("a poll that is not JSON: {e}").into()))?;
    let mentioned: Vec<_> = (msg.mentions.iter())
        .filter_map(|u| sdk_user(u).ok())
        .collect();
    let mentions = serde_json::to_value(Mentions::with_user_ids(mentioned))
        .map_err(|e| ChatError::Permanent(format!("mentions that are not JSON: {e}").into()))?;
    if let Some(top) = json.as_object_mut() {
        top.insert("m.mentions".to_owned(), mentions);
    }
    Ok(json)
}

/// Whether `event` answers a poll, in the unstable or the stable form.
pub(super) fn is_response(event: &AnySyncMessageLikeEvent) -> bool {
    matches!(
        event,
        AnySyncMessageLikeEvent::UnstablePollResponse(_) | AnySyncMessageLikeEvent::PollResponse(_)
    )
}

/// The answer `event` gives to a poll of `room_id`, seen by `agent_id`'s user.
pub(super) fn response(
    agent_id: &AgentId,
    room_id: &RoomId,
    event: AnySyncMessageLikeEvent,
) -> Option<Inbound> {
    let (sender, poll, answers) = match event {
        AnySyncMessageLikeEvent::UnstablePollResponse(SyncMessageLikeEvent::Original(ev)) => (
            ev.sender,
            ev.content.relates_to.event_id,
            ev.content.poll_response.answers,
        ),
        AnySyncMessageLikeEvent::PollResponse(SyncMessageLikeEvent::Original(ev)) => (
            ev.sender,
            ev.content.relates_to.event_id,
            ev.content.selections.into_iter().collect(),
        ),
        _ => return None,
    };
    Some(Inbound::PollResponse(IncomingPollResponse {
        agent_id: agent_id.clone(),
        room_id: room_id.clone(),
        sender: sender.ours(),
        poll: poll.ours(),
        answers,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::ids::{EventId, UserId};
    use matrix_sdk::ruma::events::AnySyncTimelineEvent;
    use matrix_sdk::ruma::serde::Raw;

    fn raw(content: serde_json::Value, kind: &str) -> Raw<AnySyncTimelineEvent> {
        let event = serde_json::json!({
            "type": kind,
            "event_id": "$e",
            "sender": "@alice:x",
            "origin_server_ts": 1_700_000_000_000u64,
            "content": content,
        });
        Raw::from_json_string(event.to_string()).unwrap()
    }

    #[test]
    fn a_native_poll_asks_its_body_with_one_answer_each_in_its_thread_and_as_text() {
        let mut msg = OutMessage::notice("🔐 Demo asks to use a tool: $ ls");
        msg.mentions.push(UserId::from("@alice:hs"));
        msg.thread = Some(EventId::from("$root"));
        let answers = [
            PollAnswer {
                id: "1".into(),
                text: "✅ Allow".into(),
            },
            PollAnswer {
                id: "stop".into(),
                text: "🛑 Stop".into(),
            },
        ];
        let poll = poll_start(&msg, &answers).unwrap();
        let block = &poll["org.matrix.msc3381.poll.start"];
        assert_eq!(
            block["question"]["org.matrix.msc1767.text"],
            "🔐 Demo asks to use a tool: $ ls"
        );
        assert_eq!(block["kind"], "org.matrix.msc3381.poll.disclosed");
        assert_eq!(block["max_selections"], 1);
        assert_eq!(
            block["answers"],
            serde_json::json!([
                {"id": "1", "org.matrix.msc1767.text": "✅ Allow"},
                {"id": "stop", "org.matrix.msc1767.text": "🛑 Stop"},
            ])
        );
        assert_eq!(
            poll["org.matrix.msc1767.text"],
            "🔐 Demo asks to use a tool: $ ls\n1. ✅ Allow\n2. 🛑 Stop"
        );
        assert_eq!(poll["m.relates_to"]["rel_type"], "m.thread");
        assert_eq!(poll["m.relates_to"]["event_id"], "$root");
        assert_eq!(
            poll["m.mentions"],
            serde_json::json!({"user_ids": ["@alice:hs"]})
        );
        let too_many: Vec<PollAnswer> = (0..21)
            .map(|i| PollAnswer {
                id: i.to_string(),
                text: i.to_string(),
            })
            .collect();
        assert!(poll_start(&msg, &too_many).is_err());
    }

    #[test]
    fn poll_responses_name_their_poll_and_answers_in_both_forms() {
        let unstable = raw(
            serde_json::json!({
                "m.relates_to": {"rel_type": "m.reference", "event_id": "$poll"},
                "org.matrix.msc3381.poll.response": {"answers": ["2"]},
            }),
            "org.matrix.msc3381.poll.response",
        );
        let stable = raw(
            serde_json::json!({
                "m.relates_to": {"rel_type": "m.reference", "event_id": "$poll"},
                "m.selections": ["stop"],
            }),
            "m.poll.response",
        );
        for (event, answer) in [(unstable, "2"), (stable, "stop")] {
            let Ok(AnySyncTimelineEvent::MessageLike(event)) = event.deserialize() else {
                panic!("not a message-like event");
            };
            assert!(is_response(&event));
            match response(&"demo".into(), &"!r".into(), event) {
                Some(Inbound::PollResponse(r)) => {
                    assert_eq!(r.poll, "$poll");
                    assert_eq!(r.answers, [answer]);
                    assert_eq!(r.sender, "@alice:x");
                }
                other => panic!("{other:?}"),
            }
        }
    }
}
