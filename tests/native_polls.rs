#![recursion_limit = "256"]
//! Permission polls as native polls (MSC3381), against a real homeserver, the real demo
//! agent and a real client library answering them: Alice may approve, Bob may not.

mod support;

use matrix_sdk::room::Room;
use support::person::SeenPoll;
use support::with_bob::{AGENT, room_with_bob, start_approving};
use support::{Env, PATIENCE, wait_until};

/// The `n`-th native poll (from 0) the agent posted.
async fn native_poll(env: &Env, n: usize) -> SeenPoll {
    wait_until(PATIENCE, &format!("native poll #{n}"), || {
        env.alice.polls_from(AGENT).into_iter().nth(n)
    })
    .await
}

/// Waits until poll `id` is ended by the agent; returns what its end says.
async fn ended(env: &Env, id: &str) -> String {
    wait_until(PATIENCE, "the poll's end", || {
        (env.alice.ends_of_poll(id).into_iter())
            .find(|e| e.sender == AGENT)
            .map(|e| e.text)
    })
    .await
}

/// Waits until the agent says it got `option` and poll `id` ends chosen `choice` by Alice.
async fn answered(env: &Env, room: &Room, id: &str, option: &str, choice: &str) {
    let got = format!("permission: {option}");
    env.reply_where(room, "the agent saying what it got", |t| t.contains(&got))
        .await;
    assert_eq!(
        ended(env, id).await,
        format!("The poll has ended: {choice}, chosen by alice")
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_native_poll_is_answered_by_an_approvers_response_only_and_ended_with_the_outcome() {
    let (env, bob) = start_approving("[permissions]\npoll = \"native\"", &[], "", &["alice"]).await;
    let (room, bobs_room) = room_with_bob(&env, &bob).await;
    env.alice.send(&room, "%permission bash: ls").await;
    let poll = native_poll(&env, 0).await;
    assert!(
        poll.question
            .starts_with("🔐 demo agent asks to use a tool: 💻 bash: ls (execute)\n$ ls"),
        "{}",
        poll.question
    );
    let answers: Vec<(&str, &str)> = (poll.answers.iter())
        .map(|(id, text)| (id.as_str(), text.as_str()))
        .collect();
    assert_eq!(
        answers,
        [
            ("1", "✅ Allow"),
            ("2", "🔁 Allow for this session"),
            ("3", "✋ Reject"),
            ("4", "❌ Never allow in this session"),
            ("stop", "🛑 Stop the agent (cancels the whole turn)"),
        ]
    );
    assert!(
        poll.fallback.contains("\n1. ✅ Allow\n"),
        "{}",
        poll.fallback
    );
    assert_eq!(poll.mentions, vec![env.alice.user_id.clone()]);

    // Bob may not approve: his answer is said to count for nothing, and the poll stays open.
    bob.answer_poll(&bobs_room, &poll.event_id, "1").await;
    env.notice_containing(&room, "bob may not approve").await;
    assert!(env.alice.ends_of_poll(&poll.event_id).is_empty());

    env.alice.answer_poll(&room, &poll.event_id, "1").await;
    answered(&env, &room, &poll.event_id, "allow", "✅ Allow").await;
    // The call's card follows the poll, with the answer under its output.
    let card = env
        .reply_where(&room, "the completed tool card", |t| {
            t.starts_with("✅ 💻 bash: ls · completed")
        })
        .await;
    assert!(card.ends_with("✅ Allow, chosen by alice"), "{card}");
    // The poll's buttons are its only choices: the agent put no reaction on it.
    assert!(env.alice.reactions_on(&poll.event_id).is_empty());
    // A later answer changes nothing: the poll was ended once.
    env.alice.answer_poll(&room, &poll.event_id, "4").await;
    env.settled(&room).await;
    assert_eq!(env.alice.ends_of_poll(&poll.event_id).len(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn in_an_encrypted_room_both_takes_a_reaction_or_an_answer_and_a_restart_ends_a_poll_left_open()
 {
    let (mut env, _bob) =
        start_approving("[permissions]\npoll = \"both\"", &[], "", &["alice"]).await;
    let room = env.room_with_agent(true).await;
    env.alice.send(&room, "%permission bash: ls").await;
    let poll = native_poll(&env, 0).await;
    assert!(
        poll.question.contains("Answer in the poll or react"),
        "{}",
        poll.question
    );
    wait_until(PATIENCE, "the agent's reactions on the poll", || {
        let on = env.alice.reactions_on(&poll.event_id);
        (on.iter().filter(|r| r.sender == AGENT).count() == 5).then_some(())
    })
    .await;
    env.alice.react(&room, &poll.event_id, "✅").await;
    answered(&env, &room, &poll.event_id, "allow", "✅ Allow").await;

    // An encrypted poll answer counts the same.
    env.alice.send(&room, "%permission bash: id").await;
    let second = native_poll(&env, 1).await;
    env.alice.answer_poll(&room, &second.event_id, "3").await;
    answered(&env, &room, &second.event_id, "reject", "✋ Reject").await;

    // A crash leaves a poll open; the next start ends it.
    env.alice.send(&room, "%permission bash: pwd").await;
    let left_open = native_poll(&env, 2).await;
    env.gw.kill();
    assert!(env.alice.ends_of_poll(&left_open.event_id).is_empty());
    env.gw.start_again();
    let end = ended(&env, &left_open.event_id).await;
    assert!(end.contains("⌛ Expired: Sidekicks restarted"), "{end}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn answers_that_count_for_nothing_are_said_once_and_a_strangers_never() {
    let (env, bob) = start_approving("[permissions]\npoll = \"native\"", &[], "", &["alice"]).await;
    let (room, bobs_room) = room_with_bob(&env, &bob).await;
    // Mallory is in the room, but may neither prompt nor approve.
    let mallory_id = env.hs.register("mallory", "mallory-password").await;
    let mallory = support::Person::login(&env.hs.url, &mallory_id, "mallory-password").await;
    env.alice.invite(&room, &mallory_id).await;
    let mallorys_room = mallory.join(room.room_id().as_str()).await;
    env.alice.send(&room, "%permission bash: ls").await;
    let poll = native_poll(&env, 0).await;
    for _ in 0..5 {
        mallory
            .answer_poll(&mallorys_room, &poll.event_id, "1")
            .await;
    }
    for _ in 0..3 {
        bob.answer_poll(&bobs_room, &poll.event_id, "1").await;
    }
    env.notice_containing(&room, "bob may not approve").await;
    // Alice's answer comes after all of theirs: once it is taken, theirs were seen.
    env.alice.answer_poll(&room, &poll.event_id, "1").await;
    answered(&env, &room, &poll.event_id, "allow", "✅ Allow").await;
    let notices: Vec<String> = (env.alice.messages_from(&room, AGENT).into_iter())
        .filter(|m| m.notice)
        .map(|m| m.body)
        .collect();
    let told = |who: &str| notices.iter().filter(|n| n.contains(who)).count();
    assert_eq!(told("bob may not approve"), 1, "{notices:?}");
    assert_eq!(
        told("mallory"),
        0,
        "a stranger's answers cost no message: {notices:?}"
    );
}
