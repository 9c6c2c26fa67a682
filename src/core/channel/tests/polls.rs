//! Permission polls answered by reaction or typed reply, expiry, refusals.

use super::*;
use crate::model::ids::{EventId, UserId};

#[tokio::test]
async fn a_poll_is_pre_reacted_and_answered_by_an_approvers_reaction_only() {
    let (tx, chat, poll) = start_poll(Duration::from_secs(60)).await;
    let keys: Vec<String> = chat
        .log()
        .into_iter()
        .filter_map(|s| match s {
            Sent::React { event_id, key, .. } if event_id == poll => Some(key),
            _ => None,
        })
        .collect();
    assert_eq!(keys, vec!["✅", "🔁", "✋", "❌", "🛑"]);
    let mentions = chat.log().into_iter().find_map(|s| match s {
        Sent::Send { event_id, msg, .. } if event_id == poll => Some(msg.mentions),
        _ => None,
    });
    assert_eq!(
        mentions,
        Some(vec![UserId::from("@alice:x")]),
        "the prompter, an approver, is notified"
    );
    react(&tx, "@mallory:x", &poll, "✅");
    handled(&tx).await;
    assert!(
        reply_said(&chat).is_empty(),
        "a non-approver changed nothing"
    );
    react(&tx, "@alice:x", &poll, "❌\u{fe0f}");
    settle_until(|| !reply_said(&chat).is_empty()).await;
    assert_eq!(reply_said(&chat), vec!["permission: never"]);
    let (_, body) = poll_of(&chat).unwrap();
    assert!(
        body.ends_with("❌ Never allow bash in this session, chosen by @alice:x"),
        "{body}"
    );
    // The agent's own reactions are withdrawn: the answered poll shows only the answer.
    settle_until(|| withdrawn(&chat, &poll) == 5).await;
    assert_eq!(withdrawn(&chat, &poll), 5, "each of the five reactions");
    // A later reaction on the settled poll changes nothing.
    react(&tx, "@alice:x", &poll, "✅");
    handled(&tx).await;
    assert_eq!(reply_said(&chat), vec!["permission: never"]);
    // The tool card ended failed, not "in progress".
    assert!(
        chat.shown("!room")
            .iter()
            .any(|b| b.starts_with("❌ 💻 bash: ls · failed")),
        "{:?}",
        chat.shown("!room")
    );
}

#[tokio::test]
async fn a_typed_reply_answers_the_poll_it_replies_to() {
    let (tx, chat, poll) = start_poll(Duration::from_secs(60)).await;
    let mut answer = message("$2", "2");
    answer.reply_to = Some(EventId::new(poll.clone()));
    tx.try_send(ChannelInput::Prompt(answer)).unwrap();
    settle_until(|| !reply_said(&chat).is_empty()).await;
    assert_eq!(reply_said(&chat), vec!["permission: allow_always"]);
}

#[tokio::test]
async fn a_poll_command_without_a_reply_answers_the_only_open_poll() {
    let (tx, chat, _) = start_poll(Duration::from_secs(60)).await;
    tx.try_send(ChannelInput::Command(
        agent_command("allow", &[]),
        message("$2", "!allow"),
    ))
    .unwrap();
    settle_until(|| !reply_said(&chat).is_empty()).await;
    assert_eq!(reply_said(&chat), vec!["permission: allow"]);
    assert!(
        poll_of(&chat)
            .unwrap()
            .1
            .ends_with("✅ Allow, chosen by @alice:x")
    );
}

#[tokio::test]
async fn an_unanswered_poll_expires_into_the_reject_option() {
    let (_tx, chat, _) = start_poll(Duration::from_millis(300)).await;
    settle_until(|| !reply_said(&chat).is_empty()).await;
    assert_eq!(reply_said(&chat), vec!["permission: reject"]);
    assert!(
        poll_of(&chat)
            .unwrap()
            .1
            .contains("Nobody answered in time")
    );
}

#[tokio::test]
async fn stop_on_a_poll_answers_it_cancelled_and_stops_the_turn() {
    let (tx, chat, poll) = start_poll(Duration::from_secs(60)).await;
    react(&tx, "@alice:x", &poll, "🛑");
    settle_until(|| chat.shown("!room").iter().any(|b| b.contains("Stopped by"))).await;
    assert!(
        chat.shown("!room")
            .contains(&"⏹️ Stopped by @alice:x.".to_string()),
        "{:?}",
        chat.shown("!room")
    );
    assert!(
        poll_of(&chat)
            .unwrap()
            .1
            .ends_with("🛑 @alice:x stopped the turn."),
        "{:?}",
        poll_of(&chat)
    );
    assert!(
        reply_said(&chat).is_empty(),
        "the agent stopped without going on"
    );
}

#[tokio::test]
async fn refusals_in_one_turn_lead_to_a_stop_proposal() {
    // The test context proposes stopping after two refusals.
    let (tx, chat, first) = start_polls(Duration::from_secs(60), 2).await;
    react(&tx, "@alice:x", &first, "✋");
    settle_until(|| {
        chat.shown("!room")
            .iter()
            .filter(|b| b.starts_with("🔐"))
            .count()
            == 2
    })
    .await;
    let second = chat
        .log()
        .into_iter()
        .filter_map(|s| match s {
            Sent::Send { event_id, msg, .. } if msg.body.starts_with("🔐") => Some(event_id),
            _ => None,
        })
        .nth(1)
        .unwrap();
    react(&tx, "@alice:x", &second, "✋");
    settle_until(|| {
        chat.shown("!room")
            .iter()
            .any(|b| b.contains("were refused"))
    })
    .await;
    let proposal: Vec<String> = chat
        .shown("!room")
        .into_iter()
        .filter(|b| b.contains("were refused"))
        .collect();
    assert_eq!(proposal.len(), 1, "{:?}", chat.shown("!room"));
    assert!(proposal[0].starts_with("✋ 2 tool calls were refused"));
}

#[tokio::test]
async fn a_typed_answer_replying_to_anything_but_an_open_poll_answers_nothing() {
    let (tx, chat, _) = start_poll(Duration::from_secs(60)).await;
    let mut answer = message("$2", "!allow");
    answer.reply_to = Some("$some-old-poll".into());
    tx.try_send(ChannelInput::Command(agent_command("allow", &[]), answer))
        .unwrap();
    settle_until(|| {
        chat.shown("!room")
            .contains(&strings::POLL_NOT_OPEN.to_string())
    })
    .await;
    assert!(
        chat.shown("!room")
            .contains(&strings::POLL_NOT_OPEN.to_string())
    );
    assert!(reply_said(&chat).is_empty(), "the open poll is still open");
}

#[tokio::test]
async fn a_typed_answer_written_before_the_open_poll_was_posted_answers_nothing() {
    // Written while an earlier poll was open (it expired meanwhile); arrives once a new
    // poll is up: taking it for the new poll would approve what its author never saw.
    let written_earlier = message("$2", "!allow");
    tokio::time::sleep(Duration::from_millis(20)).await;
    let (tx, chat, _) = start_poll(Duration::from_secs(60)).await;
    tx.try_send(ChannelInput::Command(
        agent_command("allow", &[]),
        written_earlier,
    ))
    .unwrap();
    settle_until(|| {
        chat.shown("!room")
            .contains(&strings::POLL_NEWER_THAN_ANSWER.to_string())
    })
    .await;
    assert!(reply_said(&chat).is_empty(), "the open poll is still open");
    // Written after the poll was posted, the same answer is taken.
    tx.try_send(ChannelInput::Command(
        agent_command("allow", &[]),
        message("$3", "!allow"),
    ))
    .unwrap();
    settle_until(|| !reply_said(&chat).is_empty()).await;
    assert_eq!(reply_said(&chat), vec!["permission: allow"]);
}

#[tokio::test]
async fn with_a_power_level_asked_of_approvers_one_below_it_cannot_answer() {
    let agent = FakeAgent::new(Script::AskPermission(1));
    let chat = FakeChat::new();
    let (tx, _) = channel_adjusted(agent, chat.clone(), |ctx| {
        ctx.approver_min_power = Some(50);
    })
    .await;
    tx.try_send(ChannelInput::Prompt(message("$1", "go")))
        .unwrap();
    settle_until(|| poll_of(&chat).is_some()).await;
    let (poll, _) = poll_of(&chat).unwrap();
    // Alice approves, but has no power in the room: her answer changes nothing.
    react(&tx, "@alice:x", &poll, "✅");
    handled(&tx).await;
    assert!(reply_said(&chat).is_empty(), "{:?}", chat.shown("!room"));
    // A moderator now: her answer counts.
    chat.set_power("@alice:x", 50);
    react(&tx, "@alice:x", &poll, "✅");
    settle_until(|| !reply_said(&chat).is_empty()).await;
    assert_eq!(reply_said(&chat), vec!["permission: allow"]);
}

/// A call announced and asked about at once has one message: the poll, which becomes the
/// call's card once answered, with the answer under it.
#[tokio::test]
async fn a_call_that_asks_as_it_is_announced_has_one_message() {
    let (tx, chat, poll) = start_poll(Duration::from_secs(60)).await;
    react(&tx, "@alice:x", &poll, "✅");
    settle_until(|| !reply_said(&chat).is_empty()).await;
    settle_until(|| (poll_of(&chat).unwrap().1).starts_with("✅ 💻 bash: ls · completed")).await;
    let (_, card) = poll_of(&chat).unwrap();
    assert!(card.ends_with("✅ Allow, chosen by @alice:x"), "{card}");
    let about_ls = (chat.log().into_iter())
        .filter(|s| matches!(s, Sent::Send { msg, .. } if msg.body.contains("bash: ls")))
        .count();
    assert_eq!(about_ls, 1, "{:?}", chat.shown("!room"));
}
