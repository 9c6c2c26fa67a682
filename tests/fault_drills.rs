#![recursion_limit = "256"]
//! Fault drills against the real homeserver: it goes away in the middle of a streamed
//! reply; several rooms stream at once under its default rate limits.

mod support;

use std::time::Duration;

use support::{Env, PATIENCE, SynapseOptions, wait_until};

/// The texts the agent's messages in `room` show now, in posting order.
fn agent_texts(env: &Env, room: &matrix_sdk::room::Room) -> Vec<String> {
    env.alice
        .messages_from(room, &env.agent)
        .into_iter()
        .filter_map(|m| env.alice.current_text(&m.event_id))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reply_streamed_while_the_homeserver_goes_away_for_ten_seconds_completes_intact() {
    let mut env = Env::start(SynapseOptions::default(), "").await;
    let room = env.room_with_agent(false).await;
    let text: String = (0..60)
        .map(|i| format!("Line {i:02} of an answer streamed through an outage.\n"))
        .collect();
    // ~6 s of streaming: the outage starts mid-reply and the agent finishes while the
    // homeserver is still away, so the final edit has to wait for it.
    env.alice
        .send(&room, &format!("%stream 100 50\n{text}"))
        .await;
    env.reply_where(&room, "the first part of the reply", |t| {
        t.starts_with("Line 00")
    })
    .await;
    env.hs.stop();
    tokio::time::sleep(Duration::from_secs(10)).await;
    env.hs.restart().await;
    // A message sent as soon as it is back is answered too, after the reply.
    env.alice.send(&room, "%say after the outage").await;
    let texts = wait_until(PATIENCE * 2, "both answers", || {
        let texts = agent_texts(&env, &room);
        (texts.len() >= 2 && texts.iter().any(|t| t == "after the outage")).then_some(texts)
    })
    .await;
    wait_until(PATIENCE, "the reply's final content", || {
        (agent_texts(&env, &room)[0] == text).then_some(())
    })
    .await;
    // Nothing sent twice: exactly the reply and the answer.
    let texts_now = env.texts_when_settled(&room).await;
    assert_eq!(texts_now.len(), 2, "{texts_now:?}");
    assert_eq!(texts_now[1], "after the outage", "{texts:?}");
    assert!(
        env.gw.log().contains("sync failed"),
        "the outage was noticed"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reply_finished_during_a_long_outage_is_delivered_once_the_homeserver_is_back() {
    // A turn waits 3 s for the homeserver; the outage lasts longer: the final content waits
    // in the outbox, and what was sent meanwhile is answered once it is back.
    let mut env = Env::start(
        SynapseOptions::default(),
        "[streaming]\noutage_patience_secs = 3",
    )
    .await;
    let room = env.room_with_agent(false).await;
    let text: String = (0..30)
        .map(|i| format!("Line {i:02} of an answer that outlives its turn.\n"))
        .collect();
    env.alice
        .send(&room, &format!("%stream 100 50\n{text}"))
        .await;
    env.reply_where(&room, "the first part of the reply", |t| {
        t.starts_with("Line 00")
    })
    .await;
    env.hs.stop();
    tokio::time::sleep(Duration::from_secs(15)).await;
    env.hs.restart().await;
    wait_until(PATIENCE * 2, "the reply's final content", || {
        agent_texts(&env, &room)
            .first()
            .is_some_and(|t| *t == text)
            .then_some(())
    })
    .await;
    let log = env.gw.log();
    assert!(
        log.contains("waits in the outbox"),
        "the turn gave up and handed over"
    );
    assert!(log.contains("delivered a message the homeserver could not take before"));
    // The room goes on.
    env.alice.send(&room, "%say after the outage").await;
    env.reply_where(&room, "the next answer", |t| t == "after the outage")
        .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn several_rooms_streaming_at_once_under_default_rate_limits_all_complete_intact() {
    let env = Env::start(
        SynapseOptions {
            default_rate_limits: true,
            ..SynapseOptions::default()
        },
        "",
    )
    .await;
    let mut rooms = Vec::new();
    for _ in 0..3 {
        rooms.push(env.room_with_agent(false).await);
    }
    let texts: Vec<String> = (0..rooms.len())
        .map(|r| {
            (0..40)
                .map(|i| format!("Room {r}, line {i:02} of a streamed answer.\n"))
                .collect()
        })
        .collect();
    for (room, text) in rooms.iter().zip(&texts) {
        env.alice
            .send(room, &format!("%stream 100 40\n{text}"))
            .await;
    }
    for (room, text) in rooms.iter().zip(&texts) {
        wait_until(PATIENCE * 3, "every reply complete", || {
            (agent_texts(&env, room).first() == Some(text)).then_some(())
        })
        .await;
    }
    for room in &rooms {
        assert_eq!(
            env.alice.messages_from(room, &env.agent).len(),
            1,
            "one reply message per room, no duplicates"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn odd_messages_from_people_get_the_documented_treatment() {
    let env = Env::start(SynapseOptions::default(), "").await;
    let room = env.room_with_agent(false).await;

    // The largest message a homeserver takes (an event holds at most 64 KiB): the agent
    // gets all of it, and its echo comes back split over several messages, intact.
    let filler: String = (0..1_200)
        .map(|i| format!("Line {i:04} of a very long message.\n"))
        .collect();
    let long = format!("%echo\n{filler}");
    assert!(long.len() > 40_000, "{}", long.len());
    env.alice.send(&room, &long).await;
    let parts = wait_until(PATIENCE, "the whole echo", || {
        let texts = agent_texts(&env, &room);
        (texts.concat() == long).then_some(texts)
    })
    .await;
    assert!(parts.len() >= 4, "split over {} messages", parts.len());

    // Empty and blank messages ask nothing; an edit of an earlier message is not a new
    // prompt. The next real message is answered, and nothing else.
    env.alice.send(&room, "").await;
    env.alice.send(&room, "   \n\t").await;
    let first = env.alice.send(&room, "%say first").await;
    env.reply_where(&room, "the first answer", |t| t == "first")
        .await;
    env.alice.send_edit(&room, &first, "%say edited").await;
    env.alice.send(&room, "%say last").await;
    env.reply_where(&room, "the last answer", |t| t == "last")
        .await;
    let after_echo: Vec<String> = env.texts_when_settled(&room).await.split_off(parts.len());
    assert_eq!(after_echo, vec!["first", "last"]);
}
