#![recursion_limit = "256"]
//! Under Synapse's default message rate limit (0.2/s, burst 10) a long streamed reply still
//! ends with exactly the text the agent sent, in one message, with nothing lost or doubled;
//! and a permission poll still gets through, is answered and settled, and its tool card ends
//! completed.

mod support;

use support::{Env, PATIENCE, SynapseOptions, wait_until};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_long_reply_completes_intact_under_default_rate_limits() {
    let env = Env::start(
        SynapseOptions {
            default_rate_limits: true,
            ..SynapseOptions::default()
        },
        "",
    )
    .await;
    assert!(env.hs.default_rate_limits());
    let room = env.room_with_agent(false).await;
    let text: String = (0..200)
        .map(|i| format!("Line {i:03} of a long answer.\n"))
        .collect();
    // 30 characters every 100 ms: ~20 s of streaming at the default one edit per second,
    // which spends the burst of 10 and meets M_LIMIT_EXCEEDED.
    env.alice
        .send(&room, &format!("%stream 100 30\n{text}"))
        .await;
    let reply = wait_until(PATIENCE * 2, "the complete reply", || {
        env.alice
            .messages_from(&room, &env.agent)
            .into_iter()
            .find(|m| env.alice.current_text(&m.event_id).as_deref() == Some(text.as_str()))
    })
    .await;
    let replies = env.alice.messages_from(&room, &env.agent);
    assert_eq!(replies.len(), 1, "one reply message, no duplicates");
    assert_eq!(replies[0].event_id, reply.event_id);
    let log = env.gw.log();
    let stats = log
        .lines()
        .find(|l| l.contains("turn ended"))
        .expect("turn ended line");
    assert!(
        !stats.contains("rate_limited=0"),
        "the homeserver should have rate-limited us: {stats}"
    );
    assert!(stats.contains("failures=0"), "{stats}");
    // Figures are written as figures, not as Rust structures.
    assert!(!stats.contains("Some("), "{stats}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_poll_gets_through_and_is_settled_under_default_rate_limits() {
    let env = Env::start(
        SynapseOptions {
            default_rate_limits: true,
            ..SynapseOptions::default()
        },
        "",
    )
    .await;
    let room = env.room_with_agent(false).await;
    // Six tool cards (a post and an edit or two each) spend the burst before the poll (which
    // becomes the call's card once answered) and its five reactions arrive.
    env.alice
        .send(
            &room,
            "%tool bash: a\n%tool bash: b\n%tool bash: c\n%tool bash: d\n%tool bash: e\n\
             %tool bash: f\n%permission bash: ls\n%say done",
        )
        .await;
    let poll = wait_until(PATIENCE * 2, "the poll", || {
        env.alice
            .messages_from(&room, &env.agent)
            .into_iter()
            .find(|m| m.body.starts_with("🔐"))
    })
    .await;
    env.alice.react(&room, &poll.event_id, "✅").await;
    wait_until(PATIENCE * 2, "the complete reply", || {
        env.alice
            .messages_from(&room, &env.agent)
            .into_iter()
            .filter_map(|m| env.alice.current_text(&m.event_id))
            .find(|t| t.starts_with("permission: allow\ndone"))
    })
    .await;
    wait_until(PATIENCE * 2, "the settled poll", || {
        env.alice
            .current_text(&poll.event_id)
            .filter(|t| t.ends_with("✅ Allow, chosen by alice"))
    })
    .await;
    wait_until(PATIENCE * 2, "every card in its final state", || {
        let cards: Vec<String> = env
            .alice
            .messages_from(&room, &env.agent)
            .into_iter()
            // The poll about `ls` became its card.
            .filter(|m| m.body.contains("💻"))
            .filter_map(|m| env.alice.current_text(&m.event_id))
            .collect();
        (cards.len() == 7 && cards.iter().all(|c| c.starts_with("✅"))).then_some(cards)
    })
    .await;
    assert!(
        env.gw.log().contains("rate limited"),
        "the homeserver should have rate-limited us"
    );
}
