//! Permission polls posted as native polls (MSC3381): answered by a poll response, by a
//! reaction where they also carry them, and ended with their outcome.

use super::*;
use crate::core::poll::PollStyle;
use crate::model::OutMessage;
use crate::model::ids::{EventId, UserId};
use crate::model::poll::PollAnswer;

/// A channel whose permission polls have `style`, with a turn waiting on its poll; the
/// poll's event ID.
async fn start_native(style: PollStyle) -> (mpsc::Sender<ChannelInput>, Arc<FakeChat>, String) {
    let agent = FakeAgent::new(Script::AskPermission(1));
    let chat = FakeChat::new();
    let (tx, _) = channel_adjusted(agent, chat.clone(), |ctx| {
        ctx.permissions = Reloadable::new(PermissionSettings {
            poll: style,
            ..PermissionSettings::default()
        });
    })
    .await;
    tx.try_send(ChannelInput::Prompt(message("$1", "go")))
        .unwrap();
    settle_until(|| native_poll(&chat).is_some()).await;
    let (poll, _, _) = native_poll(&chat).expect("a native poll was posted");
    (tx, chat, poll)
}

/// The native poll posted: its event ID, question and answers.
fn native_poll(chat: &FakeChat) -> Option<(String, OutMessage, Vec<PollAnswer>)> {
    chat.log().into_iter().find_map(|s| match s {
        Sent::Poll {
            event_id,
            msg,
            answers,
            ..
        } => Some((event_id, msg, answers)),
        _ => None,
    })
}

/// What ended poll `poll`, each time it was ended.
fn ends_of(chat: &FakeChat, poll: &str) -> Vec<String> {
    (chat.log().into_iter())
        .filter_map(|s| match s {
            Sent::EndPoll { poll: p, msg, .. } if p == poll => Some(msg.body),
            _ => None,
        })
        .collect()
}

fn answer(tx: &mpsc::Sender<ChannelInput>, by: &str, poll: &str, id: &str) {
    tx.try_send(ChannelInput::PollAnswer {
        by: by.into(),
        target: poll.into(),
        answer: id.into(),
    })
    .unwrap();
}

fn reactions_on(chat: &FakeChat, poll: &str) -> Vec<String> {
    (chat.log().into_iter())
        .filter_map(|s| match s {
            Sent::React { event_id, key, .. } if event_id == poll => Some(key),
            _ => None,
        })
        .collect()
}

#[tokio::test]
async fn a_native_poll_is_answered_by_an_approvers_poll_response_and_ended_with_the_outcome() {
    let (tx, chat, poll) = start_native(PollStyle::Native).await;
    let (_, question, answers) = native_poll(&chat).unwrap();
    assert!(
        question.body.starts_with("🔐 Demo asks to use a tool"),
        "{}",
        question.body
    );
    assert!(
        question.body.contains("Answer in the poll;"),
        "{}",
        question.body
    );
    assert_eq!(question.mentions, vec![UserId::from("@alice:x")]);
    let texts: Vec<&str> = answers.iter().map(|a| a.text.as_str()).collect();
    assert_eq!(
        texts,
        [
            "✅ Allow",
            "🔁 Allow bash for this session",
            "✋ Reject",
            "❌ Never allow bash in this session",
            "🛑 Stop the agent (cancels the whole turn)"
        ]
    );
    // Nothing but the poll's buttons: no reactions, and no card while the poll is open.
    assert!(reactions_on(&chat, &poll).is_empty());
    assert!(chat.shown("!room").is_empty(), "{:?}", chat.shown("!room"));

    answer(&tx, "@mallory:x", &poll, "1");
    settle_until(|| chat.shown("!room").iter().any(|b| b.contains("@mallory:x"))).await;
    assert!(
        reply_said(&chat).is_empty(),
        "a non-approver changed nothing"
    );
    assert!(ends_of(&chat, &poll).is_empty());

    answer(&tx, "@alice:x", &poll, "4");
    settle_until(|| !reply_said(&chat).is_empty()).await;
    assert_eq!(reply_said(&chat), vec!["permission: never"]);
    assert_eq!(
        ends_of(&chat, &poll),
        ["The poll has ended: ❌ Never allow bash in this session, chosen by @alice:x"]
    );
    // The call's card comes after the poll, with the answer under it.
    settle_until(|| chat.shown("!room").iter().any(|b| b.contains("· failed"))).await;
    let card = (chat.shown("!room").into_iter())
        .find(|b| b.contains("· failed"))
        .unwrap();
    assert!(card.ends_with("chosen by @alice:x"), "{card}");
    // A later answer changes nothing.
    answer(&tx, "@alice:x", &poll, "1");
    handled(&tx).await;
    assert_eq!(reply_said(&chat), vec!["permission: never"]);
    assert_eq!(ends_of(&chat, &poll).len(), 1);
}

#[tokio::test]
async fn an_answer_of_no_choice_changes_nothing_and_stop_stops_the_turn() {
    let (tx, chat, poll) = start_native(PollStyle::Native).await;
    answer(&tx, "@alice:x", &poll, "9");
    handled(&tx).await;
    assert!(reply_said(&chat).is_empty());
    assert!(ends_of(&chat, &poll).is_empty());
    answer(&tx, "@alice:x", &poll, crate::core::poll::STOP_ANSWER);
    settle_until(|| !ends_of(&chat, &poll).is_empty()).await;
    assert_eq!(
        ends_of(&chat, &poll),
        ["The poll has ended: 🛑 @alice:x stopped the turn."]
    );
    settle_until(|| chat.shown("!room").iter().any(|b| b.contains("Stopped by"))).await;
}

#[tokio::test]
async fn with_both_a_native_poll_carries_the_choices_reactions_and_a_reaction_answers_it() {
    let (tx, chat, poll) = start_native(PollStyle::Both).await;
    let (_, question, _) = native_poll(&chat).unwrap();
    assert!(
        question.body.contains("or react with an answer's emoji"),
        "{}",
        question.body
    );
    settle_until(|| reactions_on(&chat, &poll).len() == 5).await;
    assert_eq!(reactions_on(&chat, &poll), ["✅", "🔁", "✋", "❌", "🛑"]);
    react(&tx, "@alice:x", &poll, "✅");
    settle_until(|| !reply_said(&chat).is_empty()).await;
    assert_eq!(reply_said(&chat), vec!["permission: allow"]);
    assert_eq!(
        ends_of(&chat, &poll),
        ["The poll has ended: ✅ Allow, chosen by @alice:x"]
    );
    settle_until(|| withdrawn(&chat, &poll) == 5).await;
}

#[tokio::test]
async fn a_typed_answer_replying_to_a_native_poll_answers_it() {
    let (tx, chat, poll) = start_native(PollStyle::Native).await;
    let mut typed = message("$2", "1");
    typed.reply_to = Some(EventId::new(poll.clone()));
    tx.try_send(ChannelInput::Prompt(typed)).unwrap();
    settle_until(|| !reply_said(&chat).is_empty()).await;
    assert_eq!(reply_said(&chat), vec!["permission: allow"]);
    assert_eq!(ends_of(&chat, &poll).len(), 1);
}
