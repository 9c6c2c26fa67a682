#![recursion_limit = "256"]
//! No tool runs unasked, whatever the agent's defaults: sessions are put in a mode that asks
//! and kept there, against a real homeserver and the real demo agent (whose `ask` mode asks
//! before a tool and whose other modes run tools unasked, as real agents' auto modes do).
//! Alice is an admin; Bob may prompt and approve, but is no admin.

mod support;

use matrix_sdk::room::Room;
use support::{
    AgentSpec, Env, GatewayProcess, PATIENCE, Person, Synapse, SynapseOptions, wait_until,
};

/// A gateway running the demo agent with `demo_args`; Alice and Bob may prompt and approve,
/// only Alice is an admin. Returns the environment, Bob, Alice's room and Bob's view of it.
async fn start(demo_args: &[&str]) -> (Env, Person, Room, Room) {
    let hs = Synapse::start(SynapseOptions::default()).await;
    let alice_id = hs.register("alice", "alice-password").await;
    let bob_id = hs.register("bob", "bob-password").await;
    let agent = hs.register("demo", "demo-password").await;
    let people = [alice_id.as_str(), bob_id.as_str()];
    let gw = GatewayProcess::start_with_approvers(
        &hs.url,
        &people,
        Some(&people),
        &[AgentSpec {
            id: "demo".into(),
            user_id: agent.clone(),
            password: "demo-password".into(),
            demo_args: demo_args.iter().map(|a| a.to_string()).collect(),
            agent_toml: String::new(),
        }],
        &format!("access.admins = [{alice_id:?}]"),
    );
    let alice = Person::login(&hs.url, &alice_id, "alice-password").await;
    let bob = Person::login(&hs.url, &bob_id, "bob-password").await;
    let env = Env {
        hs,
        gw,
        alice,
        agents: vec![agent.clone()],
        agent,
    };
    let room = env.room_with_agent(false).await;
    env.alice.invite(&room, &bob.user_id).await;
    let bobs = bob.join(room.room_id().as_str()).await;
    (env, bob, room, bobs)
}

/// Waits for the `n`-th permission poll (from 0), with its `keys` choices pre-reacted.
async fn poll(env: &Env, room: &Room, n: usize, keys: usize) -> String {
    env.open_poll(room, "🔐", n, keys).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_agent_that_starts_in_a_mode_that_does_not_ask_still_waits_for_a_poll_after_restarts() {
    // Every session of this agent starts in `code`, where it runs tools unasked.
    let (mut env, _bob, room, _) = start(&[
        "--settings",
        "--start-mode",
        "code",
        "--sessions",
        "sessions",
    ])
    .await;
    let workspace = env.gw.workspace("demo");
    env.alice.send(&room, "%permission bash: ls").await;
    let asked = poll(&env, &room, 0, 5).await;
    env.alice.react(&room, &asked, "❌").await;
    env.reply_where(&room, "the refusal", |t| t.contains("permission: never"))
        .await;
    env.alice.send(&room, "!status").await;
    env.notice_containing(&room, "(mode: Ask, asks before acting)")
        .await;

    // After a restart the agent loads the session in its own default again: it is put
    // back in the conversation's mode before the next prompt.
    env.gw.restart();
    env.alice.send(&room, "%permission bash: pwd").await;
    let asked = poll(&env, &room, 1, 5).await;
    env.alice.react(&room, &asked, "✅").await;
    env.reply_where(&room, "the allowed call", |t| {
        t.contains("permission: allow")
    })
    .await;
    let texts = env.texts_from(&room, &env.agent);
    assert!(
        !texts.iter().any(|t| t.contains("permission: unasked")),
        "no tool ran unasked: {texts:?}"
    );
    let log = env.gw.log();
    assert!(
        log.contains("session put in its conversation's mode"),
        "{}",
        workspace.display()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_mode_nobody_recorded_as_asking_is_for_admins_only() {
    // `warp-drive` is a mode the demo agent's dialect has never heard of.
    let (env, bob, room, bobs_room) = start(&["--modes", "ask,code,warp-drive"]).await;
    bob.send(&bobs_room, "!mode warp-drive").await;
    let refused = env.notice_containing(&room, "only admins may switch").await;
    assert!(refused.body.contains("`warp-drive`"), "{}", refused.body);
    // Bob is named as the room shows him, not by his user ID.
    assert!(
        refused.body.starts_with("🔒 bob, only admins"),
        "{}",
        refused.body
    );
    bob.send(&bobs_room, "!mode code").await;
    env.notice_containing(&room, "to `code`").await;
    bob.send(&bobs_room, "!mode").await;
    let listed = env.notice_containing(&room, "modes:").await;
    assert!(
        listed
            .body
            .contains("Ask (`ask`) ← current: asks before acting")
            && listed
                .body
                .contains("Warp drive (`warp-drive`): acts without asking: admins only"),
        "{}",
        listed.body
    );
    env.prompt_and_wait(&room, "%settings", "mode: ask, model: small")
        .await;
    // Alice is an admin: hers is made, and the room reads what it means.
    env.alice.send(&room, "!mode warp-drive").await;
    env.notice_containing(&room, "mode is now Warp drive (acts without asking)")
        .await;
    env.prompt_and_wait(&room, "%settings", "mode: warp-drive, model: small")
        .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_agents_own_switch_to_a_mode_that_does_not_ask_is_put_back_at_once() {
    let (env, _bob, room, _) = start(&["--settings"]).await;
    // It switches itself, then (once Sidekicks had time to put the mode back) asks.
    env.alice
        .send(&room, "%mode code\n%sleep 1500\n%permission bash: ls")
        .await;
    let told = env
        .notice_containing(&room, "switched itself to Code")
        .await;
    assert!(told.body.contains("back in Ask"), "{}", told.body);
    let asked = poll(&env, &room, 0, 5).await;
    env.alice.react(&room, &asked, "✅").await;
    env.reply_where(&room, "the allowed call", |t| {
        t.contains("permission: allow")
    })
    .await;
    env.prompt_and_wait(&room, "%settings", "mode: ask, model: small")
        .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_poll_choice_that_switches_to_a_mode_that_does_not_ask_takes_an_admin() {
    let (env, bob, room, bobs_room) = start(&["--settings"]).await;
    // As Claude Code's "Yes, and use auto mode" when it leaves plan mode.
    env.alice
        .send(&room, "%permission-switch code bash: ls")
        .await;
    let asked = poll(&env, &room, 0, 4).await;
    let shown = env.alice.current_text(&asked).unwrap_or_default();
    assert!(
        shown.contains("Yes, and switch to code (admins only: stops asking)"),
        "{shown}"
    );
    // Bob may approve, but not this choice: nothing is answered.
    bob.react(&bobs_room, &asked, "🔁").await;
    let refused = env.notice_containing(&room, "only an admin may pick").await;
    // Bob is named as the room shows him.
    assert!(
        refused.body.starts_with("🔒 bob, only an admin"),
        "{}",
        refused.body
    );
    // He may still allow it once.
    bob.react(&bobs_room, &asked, "✅").await;
    env.reply_where(&room, "Bob's answer", |t| t.contains("permission: allow"))
        .await;

    // Alice picks it: the mode stays (an admin chose it), and tools run unasked.
    env.alice
        .send(&room, "%permission-switch code bash: pwd")
        .await;
    let asked = poll(&env, &room, 1, 4).await;
    env.alice.react(&room, &asked, "🔁").await;
    env.reply_where(&room, "Alice's answer", |t| t.contains("permission: code"))
        .await;
    env.prompt_and_wait(&room, "%settings", "mode: code, model: small")
        .await;
    let texts = env.texts_from(&room, &env.agent);
    assert!(
        !texts.iter().any(|t| t.contains("switched itself")),
        "not put back: {texts:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_whose_mode_is_not_said_is_put_in_one_that_asks_or_never_prompted() {
    // The agent starts in `code` (it runs tools unasked) and leaves its modes out of its
    // answers after a restart: the mode is unknown, so it is set, not assumed.
    let (mut env, _bob, room, _) = start(&[
        "--settings",
        "--start-mode",
        "code",
        "--sessions",
        "sessions",
        "--hide-modes",
    ])
    .await;
    env.alice.send(&room, "%permission bash: ls").await;
    let asked = poll(&env, &room, 0, 5).await;
    env.alice.react(&room, &asked, "✅").await;
    env.reply_where(&room, "the allowed call", |t| {
        t.contains("permission: allow")
    })
    .await;
    // Loaded again after a restart, in the agent's own default, its modes left out: put back
    // in `ask` before the next prompt.
    env.gw.restart();
    env.alice.send(&room, "%permission bash: pwd").await;
    let asked = poll(&env, &room, 1, 5).await;
    env.alice.react(&room, &asked, "✅").await;
    wait_until(PATIENCE, "the second allowed call", || {
        let texts = env.texts_from(&room, &env.agent);
        let allowed = texts.iter().filter(|t| t.contains("permission: allow"));
        (allowed.count() == 2).then_some(())
    })
    .await;
    let texts = env.texts_from(&room, &env.agent);
    assert!(
        !texts.iter().any(|t| t.contains("permission: unasked")),
        "no tool ran unasked: {texts:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_that_cannot_be_put_in_a_mode_that_asks_is_never_prompted() {
    let (env, _bob, room, _) = start(&[
        "--settings",
        "--start-mode",
        "code",
        "--hide-modes",
        "--refuse-mode",
        "ask",
    ])
    .await;
    env.alice
        .send(&room, "%permission bash: ls\n%say ran")
        .await;
    let refused = env
        .notice_containing(&room, "could not start a conversation")
        .await;
    assert!(refused.body.contains("`ask`"), "{}", refused.body);
    // The room is told again for the next message, and the agent never ran anything.
    env.alice.send(&room, "%say second").await;
    wait_until(PATIENCE, "the second refusal", || {
        let told = env.alice.messages_from(&room, &env.agent).into_iter();
        (told
            .filter(|m| m.body.contains("could not start a conversation"))
            .count()
            == 2)
            .then_some(())
    })
    .await;
    let texts = env.texts_from(&room, &env.agent);
    assert!(
        !texts
            .iter()
            .any(|t| t.contains("permission:") || t.contains("ran")),
        "the agent was prompted: {texts:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_approval_switch_that_is_not_a_mode_is_for_admins_and_the_agents_own_flip_is_put_back() {
    // `allow_all` (category `permissions`, as GitHub Copilot's): on, tools run unasked.
    let (env, bob, room, bobs_room) = start(&["--allow-all"]).await;
    bob.send(&bobs_room, "!set allow_all on").await;
    let refused = env.notice_containing(&room, "only admins may change").await;
    assert!(refused.body.contains("`allow_all`"), "{}", refused.body);
    bob.send(&bobs_room, "/allow-all on").await;
    env.notice_containing(&room, "only admins may send /allow-all")
        .await;
    // Still asking.
    bob.send(&bobs_room, "%permission bash: ls").await;
    let asked = poll(&env, &room, 0, 5).await;
    env.alice.react(&room, &asked, "✅").await;
    env.reply_where(&room, "the allowed call", |t| {
        t.contains("permission: allow")
    })
    .await;
    // The agent flips it by itself: put back at once, the room told, and it asks again.
    bob.send(&bobs_room, "%allow-all on\n%say flipped").await;
    let told = env
        .notice_containing(&room, "turned its `allow_all` to `on`")
        .await;
    assert!(told.body.contains("back to `off`"), "{}", told.body);
    bob.send(&bobs_room, "%permission bash: pwd").await;
    let asked = poll(&env, &room, 1, 5).await;
    env.alice.react(&room, &asked, "✅").await;
    wait_until(PATIENCE, "the second allowed call", || {
        let texts = env.texts_from(&room, &env.agent);
        let allowed = texts.iter().filter(|t| t.contains("permission: allow"));
        (allowed.count() == 2).then_some(())
    })
    .await;
    // An admin's choice holds.
    env.alice.send(&room, "!set allow_all on").await;
    env.notice_containing(&room, "allow all is now").await;
    env.alice.send(&room, "%permission bash: id").await;
    env.reply_where(&room, "the admin's choice", |t| {
        t.contains("permission: unasked")
    })
    .await;
    let texts = env.texts_from(&room, &env.agent);
    assert_eq!(
        texts
            .iter()
            .filter(|t| t.contains("permission: unasked"))
            .count(),
        1,
        "only the admin's choice ran a tool unasked: {texts:?}"
    );
}
