#![recursion_limit = "256"]
//! Budgets against a real Synapse with the demo agent, whose `%usage … COST CURRENCY`
//! reports the session's cost so far (cumulative, as ACP has it): a room's daily limit warns
//! once, refuses the prompt past it with who set it and when it resets, lets an admin
//! through, keeps its spend across a kill -9, and holds no more once the spend is a day old.

mod support;

use matrix_sdk::room::Room;
use support::with_bob::{room_with_bob, start_approving};
use support::{Env, PATIENCE, wait_until};

/// The agent's next message in `room` (after the first `before` of them) whose text `wanted`
/// accepts.
async fn next_where(
    env: &Env,
    room: &Room,
    before: usize,
    what: &str,
    wanted: impl Fn(&str) -> bool,
) -> String {
    wait_until(PATIENCE, what, || {
        (env.alice.messages_from(room, &env.agent).into_iter())
            .skip(before)
            .filter(|m| m.replaces.is_none())
            .filter_map(|m| env.alice.current_text(&m.event_id))
            .find(|t| wanted(t))
    })
    .await
}

fn seen(env: &Env, room: &Room) -> usize {
    env.alice.messages_from(room, &env.agent).len()
}

/// Moves every recorded spend a day and an hour back, as if it had been spent yesterday.
async fn spent_yesterday(env: &Env) {
    let db = env.gw.dir.path().join("state").join("sidekicks.db");
    let url = format!("sqlite://{}", db.display());
    let pool = sqlx::SqlitePool::connect(&url).await.unwrap();
    let moved = sqlx::query("UPDATE spend SET spent_at = spent_at - 90000000")
        .execute(&pool)
        .await
        .unwrap();
    assert!(moved.rows_affected() >= 2, "the turns' spend was recorded");
    pool.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_room_budget_warns_refuses_lets_admins_through_survives_a_kill_and_resets_with_the_day() {
    // Alice is the admin (the approvers' list), Bob may only prompt.
    let (mut env, bob) = start_approving(
        "[budgets]\nroom_per_day = \"0.50 USD\"",
        &[],
        "",
        &["alice"],
    )
    .await;
    let (room, bobs) = room_with_bob(&env, &bob).await;

    // 0.30 USD, then 0.30 more (the session's total is 0.60): the second is warned once.
    bob.send(&bobs, "%usage 10 1000 0.30 USD\n%say one").await;
    env.reply_where(&room, "the first answer", |t| t.starts_with("one"))
        .await;
    let before = seen(&env, &room);
    bob.send(&bobs, "%usage 20 1000 0.60 USD\n%say two").await;
    let warned = next_where(&env, &room, before, "the warning", |t| {
        t.contains("has spent")
    })
    .await;
    assert!(
        warned.contains("This room has spent 0.60 USD of 0.50 USD a day for the room"),
        "{warned}"
    );
    assert!(warned.contains("It is reached"), "{warned}");

    // The third is refused, in reply, naming who set the limit and when it resets.
    let before = seen(&env, &room);
    let third = bob.send(&bobs, "%say three").await;
    let refused = next_where(&env, &room, before, "the refusal", |t| {
        t.contains("reached its budget")
    })
    .await;
    assert!(
        refused.contains("0.60 USD spent of 0.50 USD a day"),
        "{refused}"
    );
    assert!(
        refused.contains("set by the operator") && refused.contains("(UTC), in "),
        "{refused}"
    );
    let notice = env.notice_containing(&room, "reached its budget").await;
    assert_eq!(notice.in_reply_to.as_deref(), Some(third.as_str()));

    // An admin's prompt passes; Bob's refused one never ran.
    let before = seen(&env, &room);
    env.alice.send(&room, "%say four").await;
    next_where(&env, &room, before, "the admin's answer", |t| {
        t.starts_with("four")
    })
    .await;
    let texts = env.texts_from(&room, &env.agent);
    assert!(!texts.iter().any(|t| t.starts_with("three")), "{texts:?}");
    let warnings = texts.iter().filter(|t| t.contains("has spent")).count();
    assert_eq!(warnings, 1, "told once: {texts:?}");

    // `!usage` says who spent what; a kill -9 loses none of it.
    env.gw.kill();
    env.gw.start_again();
    let before = seen(&env, &room);
    bob.send(&bobs, "!usage").await;
    let usage = next_where(&env, &room, before, "the usage", |t| t.contains("Today")).await;
    assert!(
        usage.contains("@bob:localhost with demo agent: 0.60 USD (2 turns)"),
        "{usage}"
    );
    assert!(
        usage.contains("0.50 USD a day for the room: 0.60 USD spent, 120%"),
        "{usage}"
    );
    let before = seen(&env, &room);
    bob.send(&bobs, "%say five").await;
    next_where(&env, &room, before, "the refusal after the restart", |t| {
        t.contains("reached its budget")
    })
    .await;

    // Once the spend is yesterday's, the day's budget holds nothing: Bob's prompt runs.
    env.gw.kill();
    spent_yesterday(&env).await;
    env.gw.start_again();
    let before = seen(&env, &room);
    bob.send(&bobs, "%say six").await;
    next_where(&env, &room, before, "the answer on a new day", |t| {
        t.starts_with("six")
    })
    .await;

    // An admin raises the room's own limit; Bob may not.
    let before = seen(&env, &room);
    bob.send(&bobs, "!budget room day 100 USD").await;
    next_where(&env, &room, before, "the refusal to set", |t| {
        t.contains("Only admins")
    })
    .await;
    let before = seen(&env, &room);
    env.alice.send(&room, "!budget room day 5 USD").await;
    let set = next_where(&env, &room, before, "the new limit", |t| {
        t.contains("Budget set")
    })
    .await;
    assert!(
        set.contains("5.00 USD a day for the room (by @alice:localhost)"),
        "{set}"
    );
}
