#![recursion_limit = "256"]
//! Rooms with several agents, against the real homeserver and two demo agent processes:
//! routing (names, mentions, replies, the default agent), no cross-talk, `/agent:cmd`,
//! hand-offs, session modes and model, and the process pool.

mod support;

use support::{Env, SynapseOptions};

/// Two demo agents, `demo` and `other`, with these arguments.
async fn two_agents(extra_toml: &str, demo_args: &[&str], other_args: &[&str]) -> Env {
    Env::start_with_agents(
        SynapseOptions::default(),
        extra_toml,
        &[("demo", demo_args), ("other", other_args)],
    )
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn messages_reach_the_agents_they_address_and_no_one_else() {
    let env = two_agents("", &[], &[]).await;
    let (demo, other) = (env.agents[0].clone(), env.agents[1].clone());
    let room = env.room_with_agents().await;

    // Addressed to nobody, in a room with two agents and no default: nobody answers.
    env.alice.send(&room, "%say to nobody").await;
    // By name.
    env.alice.send(&room, "other: %say for other").await;
    let for_other = env.message_from(&room, &other, "for other").await;
    // By mention pill.
    env.alice
        .send_mention(&room, &demo, "demo agent", "%say for demo via a pill")
        .await;
    env.message_from(&room, &demo, "for demo via a pill").await;
    // By replying to one of the agent's messages.
    env.alice
        .send_reply(&room, "%say a reply for other", &for_other)
        .await;
    env.message_from(&room, &other, "a reply for other").await;
    // Several at once.
    env.alice.send(&room, "@demo @other %say both").await;
    env.message_from(&room, &demo, "both").await;
    env.message_from(&room, &other, "both").await;
    // A stray answer would come before each agent's answer to a later message.
    settled(&env, &room).await;
    assert_eq!(
        texts(&env, &room, &demo),
        vec!["for demo via a pill", "both"]
    );
    assert_eq!(
        texts(&env, &room, &other),
        vec!["for other", "a reply for other", "both"]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_default_agent_slash_commands_and_help_in_a_room_with_two_agents() {
    let env = two_agents("", &[], &[]).await;
    let (demo, other) = (env.agents[0].clone(), env.agents[1].clone());
    let room = env.room_with_agents().await;

    env.alice.send(&room, "!default other").await;
    // Room commands are answered once, by the first agent.
    env.notice_from(&room, &demo, "go to other agent").await;
    env.alice.send(&room, "%say to the default").await;
    env.message_from(&room, &other, "to the default").await;

    // `/agent:cmd` reaches that agent as `/cmd`; the demo agent echoes what it received.
    env.alice.send(&room, "/demo:echo hi there").await;
    env.message_from(&room, &demo, "received: /echo hi there")
        .await;
    // A command the agent does not offer is answered with those it does, and not sent.
    env.alice.send(&room, "/other:deploy now").await;
    let unknown = env
        .notice_from(&room, &other, "has no command /deploy")
        .await;
    assert!(
        unknown.contains("/other:echo: Repeat the prompt"),
        "{unknown}"
    );

    env.alice.send(&room, "!help").await;
    let help = env.notice_from(&room, &demo, "Sidekicks brings").await;
    assert!(
        help.contains("demo agent (`demo`), other agent (`other`)"),
        "{help}"
    );
    assert!(help.contains("go to other agent (the default)"), "{help}");
    assert!(help.contains("/demo:echo: Repeat the prompt"), "{help}");
    assert!(help.contains("/other:demo: Run the demo turn"), "{help}");

    settled(&env, &room).await;
    let notices_of_other: Vec<String> = env
        .alice
        .messages_from(&room, &other)
        .into_iter()
        .filter(|m| m.notice)
        .map(|m| m.body)
        .collect();
    assert_eq!(
        notices_of_other.len(),
        1,
        "help and the default are said once: {notices_of_other:?}"
    );
    assert_eq!(
        texts(&env, &room, &other)
            .iter()
            .filter(|t| t.starts_with("received"))
            .count(),
        0,
        "the other agent never got /deploy nor demo's /echo"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_agent_hands_work_to_another_only_when_the_room_allows_it() {
    let env = two_agents("", &[], &[]).await;
    let (demo, other) = (env.agents[0].clone(), env.agents[1].clone());
    let room = env.room_with_agents().await;

    // Off by default: an answer addressing the other agent stays an answer.
    env.alice
        .send(&room, "demo: %say other: %say not handed")
        .await;
    env.message_from(&room, &demo, "other: %say not handed")
        .await;
    env.alice.send(&room, "!handoff on").await;
    env.notice_from(&room, &demo, "may hand work").await;
    env.alice
        .send(&room, "demo: %say other: %say handed over")
        .await;
    env.message_from(&room, &demo, "other: %say handed over")
        .await;
    env.message_from(&room, &other, "handed over").await;
    settled(&env, &room).await;
    assert_eq!(texts(&env, &room, &other), vec!["handed over"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn modes_and_the_model_change_in_place_and_an_agent_without_them_says_so() {
    let env = two_agents("", &["--settings"], &[]).await;
    let (demo, other) = (env.agents[0].clone(), env.agents[1].clone());
    let room = env.room_with_agents().await;

    env.alice.send(&room, "!mode demo").await;
    let modes = env.notice_from(&room, &demo, "demo agent's modes").await;
    assert!(modes.contains("Ask (`ask`) ← current"), "{modes}");
    env.alice.send(&room, "!mode demo code").await;
    env.notice_from(&room, &demo, "mode is now Code").await;
    env.alice.send(&room, "demo: !model large").await;
    env.notice_from(&room, &demo, "model is now Large model")
        .await;
    env.alice.send(&room, "demo: %settings").await;
    env.message_from(&room, &demo, "mode: code, model: large")
        .await;

    env.alice.send(&room, "!model other large").await;
    let refused = env
        .notice_from(&room, &other, "does not offer a model choice")
        .await;
    assert!(refused.contains("!new other"), "{refused}");

    env.alice.send(&room, "!status").await;
    let status = env
        .notice_from(&room, &demo, "(mode: Code, acts without asking)")
        .await;
    assert!(status.contains("other agent: idle"), "{status}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_one_slot_the_second_agent_waits_then_runs_and_idle_agents_stop() {
    // The other agent keeps its sessions, so it can get them back after being stopped.
    let env = two_agents(
        "[pool]\nmax_running = 1\nidle_stop_secs = 4\n",
        &[],
        &["--sessions", "sessions"],
    )
    .await;
    let (demo, other) = (env.agents[0].clone(), env.agents[1].clone());
    let room = env.room_with_agents().await;

    env.alice
        .send(&room, "demo: %say slow\n%sleep 4000\n%say  done")
        .await;
    env.message_from(&room, &demo, "slow").await;
    env.alice.send(&room, "other: %say quick").await;
    let waiting = env
        .notice_from(&room, &other, "waits for a free slot")
        .await;
    assert!(waiting.contains("demo agent is busy"), "{waiting}");
    let quick = env.message_from(&room, &other, "quick").await;
    // The second prompt ran only once the first turn was over.
    let slow = env
        .alice
        .messages_from(&room, &demo)
        .into_iter()
        .find(|m| !m.notice)
        .expect("demo's answer");
    assert_eq!(
        env.alice.current_text(&slow.event_id).as_deref(),
        Some("slow done")
    );
    assert!(env.texts_from(&room, &other).contains(&"quick".to_owned()));
    assert!(!quick.is_empty());

    env.alice.send(&room, "!agents").await;
    let agents = env.notice_from(&room, &demo, "at most 1 running").await;
    assert!(agents.contains("demo agent (`demo`): stopped"), "{agents}");
    assert!(agents.contains("other agent (`other`): idle"), "{agents}");

    // Idle for longer than idle_stop_secs: stopped; the next message starts it again, and
    // its session comes back (`session/load`): it remembers the earlier prompt.
    support::wait_until(support::PATIENCE, "the idle agent stopped", || {
        (env.gw.log().lines())
            .any(|l| l.contains("stopping an idle agent process") && l.contains("other"))
            .then_some(())
    })
    .await;
    let later = agents_until(&env, &room, "other agent (`other`): stopped").await;
    assert!(later.contains("demo agent (`demo`): stopped"), "{later}");
    env.alice.send(&room, "other: %history").await;
    env.message_from(&room, &other, "1 earlier prompts\n- %say quick")
        .await;
}

/// Asks `!agents` until its answer (from the room's first agent) contains `text`: a stop
/// begun is over once the listing says so. Returns that answer.
async fn agents_until(env: &Env, room: &matrix_sdk::room::Room, text: &str) -> String {
    let deadline = tokio::time::Instant::now() + support::PATIENCE;
    loop {
        let notices =
            || (env.alice.messages_from(room, &env.agents[0]).into_iter()).filter(|m| m.notice);
        let before = notices().count();
        env.alice.send(room, "!agents").await;
        let answer = support::wait_until(support::PATIENCE, "the !agents answer", || {
            notices().nth(before).map(|m| m.body)
        })
        .await;
        if answer.contains(text) {
            return answer;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "!agents never said {text:?}: {answer}"
        );
    }
}

/// Waits until both agents answered everything sent to them so far (see `Env::settled`):
/// a marker addressed to both is answered by each after everything it was sent before.
async fn settled(env: &Env, room: &matrix_sdk::room::Room) {
    let marker = support::marker();
    env.alice
        .send(room, &format!("@demo @other %say {marker}"))
        .await;
    for agent in &env.agents {
        env.message_from(room, agent, &marker).await;
    }
}

/// What `agent` said in `room`, the markers' answers left out.
fn texts(env: &Env, room: &matrix_sdk::room::Room, agent: &str) -> Vec<String> {
    let mut texts = env.texts_from(room, agent);
    texts.retain(|t| !support::is_marker(t));
    texts
}

/// Waits for the first permission poll `agent` posts in `room`; returns its event ID.
async fn poll_of(env: &Env, room: &matrix_sdk::room::Room, agent: &str) -> String {
    support::wait_until(support::PATIENCE, "a permission poll", || {
        env.alice
            .messages_from(room, agent)
            .into_iter()
            .find(|m| m.body.starts_with("🔐"))
            .map(|m| m.event_id)
    })
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_poll_is_answered_for_the_agent_that_asked_only() {
    let env = two_agents("", &[], &[]).await;
    let (demo, other) = (env.agents[0].clone(), env.agents[1].clone());
    let room = env.room_with_agents().await;

    // A typed answer replying to the other agent's poll reaches that agent only.
    env.alice.send(&room, "other: %permission bash: ls").await;
    let poll = poll_of(&env, &room, &other).await;
    env.alice.send_reply(&room, "!deny", &poll).await;
    env.message_from(&room, &other, "permission: never").await;

    // Without a reply, in a room with two agents, `!allow` goes to the one whose poll is open.
    env.alice.send(&room, "demo: %permission bash: pwd").await;
    poll_of(&env, &room, &demo).await;
    env.alice.send(&room, "!allow").await;
    env.message_from(&room, &demo, "permission: allow").await;

    settled(&env, &room).await;
    let answers = |agent: &str| -> Vec<String> {
        env.texts_from(&room, agent)
            .into_iter()
            .filter(|t| t.starts_with("permission:"))
            .map(|t| t.trim().to_owned())
            .collect()
    };
    assert_eq!(answers(&other), vec!["permission: never"]);
    assert_eq!(answers(&demo), vec!["permission: allow"]);
}
