#![recursion_limit = "256"]
//! Conversations that outlive their ACP session: after a gateway restart the demo agent
//! (which cannot `session/load`) gets the earlier conversation with the next prompt, until
//! someone asks for a fresh start.

mod support;

use support::{Env, PATIENCE, SynapseOptions, wait_until};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn after_a_crash_the_next_prompt_carries_the_earlier_conversation() {
    let mut env = Env::start(SynapseOptions::default(), "").await;
    let room = env.room_with_agent(false).await;
    env.prompt_and_wait(&room, "%say the answer is 42", "the answer is 42")
        .await;

    // A crash: no clean-up runs; the agent process dies with the gateway's pipes.
    env.gw.kill();
    env.gw.start_again();
    env.alice.send(&room, "%echo").await;
    let echoed = env
        .reply_where(&room, "the echo of the restored prompt", |t| {
            t.ends_with("[New message]\n%echo")
        })
        .await;
    assert!(
        echoed.starts_with("[Earlier conversation in this room, restored by Sidekicks"),
        "{echoed}"
    );
    assert!(
        echoed.contains("@alice:localhost wrote:\n> %say the answer is 42\n"),
        "{echoed}"
    );
    assert!(
        echoed.contains("demo agent (you) answered:\n> the answer is 42\n"),
        "{echoed}"
    );
    assert!(
        env.gw
            .log()
            .contains("re-injecting the earlier conversation"),
        "the way the session continued is logged"
    );

    // A fresh start: the next session gets nothing from before.
    env.alice.send(&room, "!new").await;
    env.notice_containing(&room, "Fresh start").await;
    env.prompt_and_wait(&room, "%echo", "%echo").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn messages_sent_while_the_gateway_was_down_are_answered_once_in_order() {
    let mut env = Env::start(SynapseOptions::default(), "").await;
    let room = env.room_with_agent(false).await;
    env.prompt_and_wait(&room, "%say up", "up").await;
    env.gw.stop();
    env.alice.send(&room, "%say one").await;
    env.alice.send(&room, "%say two").await;
    env.gw.start_again();
    let answers = support::wait_until(support::PATIENCE, "both answers", || {
        let texts: Vec<String> = env
            .alice
            .messages_from(&room, &env.agent)
            .into_iter()
            .filter_map(|m| env.alice.current_text(&m.event_id))
            .collect();
        (texts.len() >= 3).then_some(texts)
    })
    .await;
    assert_eq!(answers, vec!["up", "one", "two"]);
    // Nothing more comes: no message is answered twice.
    assert_eq!(env.texts_when_settled(&room).await, ["up", "one", "two"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_turn_cut_by_a_crash_is_marked_at_the_next_start() {
    let mut env = Env::start(SynapseOptions::default(), "").await;
    let room = env.room_with_agent(false).await;
    env.alice
        .send(&room, "%say partial answer\n%tool-open bash: make\n%hang")
        .await;
    env.reply_where(&room, "the partial answer", |t| t == "partial answer")
        .await;
    env.reply_where(&room, "the open card", |t| {
        t.starts_with("🔄 💻 bash: make · in progress")
    })
    .await;
    // Give the gateway a moment to record what it showed, then crash it.
    tokio::time::sleep(std::time::Duration::from_secs(1)).await;
    env.gw.kill();
    env.gw.start_again();
    let marked = env
        .reply_where(&room, "the reply marked as interrupted", |t| {
            t.starts_with("partial answer\n\n⏹️ Interrupted")
        })
        .await;
    assert!(marked.contains("Send your message again"), "{marked}");
    env.reply_where(&room, "the card closed", |t| {
        t.starts_with("⏹️ 💻 bash: make · cancelled")
    })
    .await;
    // The room goes on, and the crash is not marked twice. The new session gets the
    // conversation back, with the cut answer marked as such.
    env.gw.stop();
    env.gw.start_again();
    env.alice.send(&room, "%echo").await;
    let echoed = env
        .reply_where(&room, "the echo with the restored conversation", |t| {
            t.ends_with("[New message]\n%echo")
        })
        .await;
    assert!(
        echoed.contains("@alice:localhost wrote:\n> %say partial answer\n"),
        "{echoed}"
    );
    assert!(
        echoed.contains(
            "demo agent (you) answered (the answer was cut short when Sidekicks stopped):\n> partial answer\n"
        ),
        "{echoed}"
    );
    let interrupted = env
        .alice
        .messages_from(&room, &env.agent)
        .into_iter()
        .filter(|m| {
            env.alice
                .current_text(&m.event_id)
                .is_some_and(|t| t.contains("Interrupted"))
        })
        .count();
    assert_eq!(interrupted, 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_turn_cut_before_any_answer_gets_a_notice() {
    let mut env = Env::start(SynapseOptions::default(), "").await;
    let room = env.room_with_agent(false).await;
    env.alice.send(&room, "%hang").await;
    support::wait_until(support::PATIENCE, "the turn to start", || {
        env.gw.log().contains("session opened").then_some(())
    })
    .await;
    tokio::time::sleep(std::time::Duration::from_secs(1)).await;
    env.gw.kill();
    env.gw.start_again();
    env.notice_containing(&room, "stopped before it could answer")
        .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_agent_that_can_load_gets_its_session_back_without_the_replay_being_posted() {
    // `--sessions` makes the demo agent keep its conversations and advertise `loadSession`.
    let mut env =
        Env::start_with_demo_args(SynapseOptions::default(), "", &["--sessions", "sessions"]).await;
    let room = env.room_with_agent(false).await;
    env.prompt_and_wait(&room, "%say first answer", "first answer")
        .await;

    // After a gateway crash, the new agent process loads the session from its own store.
    env.gw.kill();
    env.gw.start_again();
    env.alice.send(&room, "%history").await;
    let listing = env
        .reply_where(&room, "the agent's own memory", |t| {
            t.contains("earlier prompts")
        })
        .await;
    assert_eq!(listing, "1 earlier prompts\n- %say first answer");
    assert!(env.gw.log().contains("session got back"));
    assert!(!env.gw.log().contains("re-injecting"));
    // What the agent replayed while loading was not posted again.
    let texts = |env: &Env| -> Vec<String> {
        env.alice
            .messages_from(&room, &env.agent)
            .into_iter()
            .filter_map(|m| env.alice.current_text(&m.event_id))
            .collect()
    };
    assert_eq!(texts(&env), vec!["first answer".to_owned(), listing]);

    // After the agent itself crashes, the next message starts it and loads the session again.
    env.alice.send(&room, "%crash 3").await;
    env.notice_containing(&room, "exit code 3").await;
    env.alice.send(&room, "%history").await;
    let again = env
        .reply_where(&room, "the memory after the agent's crash", |t| {
            t.starts_with("2 earlier prompts")
        })
        .await;
    assert_eq!(
        again, "2 earlier prompts\n- %say first answer\n- %history",
        "the crashed turn never reached the agent's memory; the rest did"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_rerun_on_a_prompt_cut_by_a_crash_runs_again_once() {
    let mut env = Env::start(
        SynapseOptions::default(),
        "[continuity]\nrerun_interrupted = true",
    )
    .await;
    let room = env.room_with_agent(false).await;
    env.alice
        .send(&room, "%say partial\n%sleep 3000\n%say , done")
        .await;
    env.reply_where(&room, "the partial answer", |t| t == "partial")
        .await;
    tokio::time::sleep(std::time::Duration::from_secs(1)).await;
    env.gw.kill();
    env.gw.start_again();
    let marked = env
        .reply_where(&room, "the cut reply, saying it runs again", |t| {
            t.starts_with("partial\n\n⏹️ Interrupted")
        })
        .await;
    assert!(marked.contains("It runs your message again"), "{marked}");
    env.reply_where(&room, "the answer of the re-run", |t| t == "partial, done")
        .await;
    // The prompt runs again once only.
    let replies = env.texts_when_settled(&room).await;
    let reruns = replies.iter().filter(|t| *t == "partial, done").count();
    assert_eq!(reruns, 1, "{replies:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_agent_that_can_resume_gets_its_session_back_after_a_restart() {
    // `--resume`: the demo agent offers `session/resume` (no replay) instead of load.
    let mut env = Env::start_with_demo_args(
        SynapseOptions::default(),
        "",
        &["--sessions", "sessions", "--resume"],
    )
    .await;
    let room = env.room_with_agent(false).await;
    env.prompt_and_wait(&room, "%say noted", "noted").await;
    env.gw.stop();
    env.gw.start_again();
    env.alice.send(&room, "%history").await;
    let listing = env
        .reply_where(&room, "the agent's own memory", |t| {
            t.contains("earlier prompts")
        })
        .await;
    assert_eq!(listing, "1 earlier prompts\n- %say noted");
    let log = env.gw.log();
    assert!(
        log.contains("session got back") && log.contains("resumed"),
        "how is logged"
    );
    assert!(!log.contains("re-injecting"));
}

/// `!retry` sends the last prompt again when its turn was cut, by a crash or a stop; each
/// attempt is an answer of its own; after an answered prompt there is nothing to retry.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn retry_runs_the_last_cut_prompt_again_after_a_crash_or_a_stop() {
    let mut env = Env::start(SynapseOptions::default(), "").await;
    let room = env.room_with_agent(false).await;
    let attempts = |env: &Env| {
        (env.alice.messages_from(&room, &env.agent).into_iter())
            .filter(|m| m.replaces.is_none() && m.body.starts_with("working on it"))
            .count()
    };
    env.alice.send(&room, "%say working on it\n%hang").await;
    env.reply_where(&room, "the first attempt", |t| t == "working on it")
        .await;
    // A reply is journaled before it is sent: once seen, a crash leaves it to mark.
    env.gw.kill();
    env.gw.start_again();
    env.reply_where(&room, "the cut reply marked", |t| {
        t.starts_with("working on it\n\n⏹️ Interrupted")
    })
    .await;
    env.alice.send(&room, "!retry").await;
    let said = env.notice_containing(&room, "🔁").await.body;
    assert_eq!(
        said,
        "🔁 Running @alice:localhost's message again: “%say working on it…”"
    );
    wait_until(PATIENCE, "the second attempt", || {
        (attempts(&env) == 2).then_some(())
    })
    .await;
    // Stopped, it is cut again: retried once more, as a third answer.
    env.alice.send(&room, "!stop").await;
    env.reply_where(&room, "the second attempt stopped", |t| {
        t.starts_with("working on it") && t.contains("Stopped by")
    })
    .await;
    env.alice.send(&room, "!retry").await;
    wait_until(PATIENCE, "the third attempt", || {
        (attempts(&env) == 3).then_some(())
    })
    .await;
    env.alice.send(&room, "!stop").await;
    // Once a prompt is answered, there is nothing to retry.
    env.prompt_and_wait(&room, "%say done", "done").await;
    env.alice.send(&room, "!retry").await;
    env.notice_containing(&room, "Nothing to retry").await;
    assert_eq!(attempts(&env), 3);
}

/// A prompt taken out of the queue (`!queue drop`) stays out across a kill -9: the store no
/// longer keeps it, while the one still waiting runs after the restart.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_prompt_taken_out_of_the_queue_stays_out_across_a_kill() {
    let mut env = Env::start(SynapseOptions::default(), "").await;
    let room = env.room_with_agent(false).await;
    env.alice.send(&room, "%say working\n%hang").await;
    env.reply_where(&room, "the running turn", |t| t == "working")
        .await;
    let kept = env.alice.send(&room, "%say kept").await;
    let dropped = env.alice.send(&room, "%say dropped").await;
    for event in [&kept, &dropped] {
        wait_until(PATIENCE, "the prompt marked waiting", || {
            (env.alice.reactions_on(event).into_iter())
                .find(|r| r.key == "⏳" && r.sender == env.agent)
        })
        .await;
    }
    env.alice.send(&room, "!queue drop 2").await;
    let said = env.notice_containing(&room, "🗑️").await.body;
    assert!(
        said.ends_with("2. @alice:localhost → demo: “%say dropped”"),
        "{said}"
    );
    env.gw.kill();
    env.gw.start_again();
    env.reply_where(&room, "the prompt still waiting, answered", |t| t == "kept")
        .await;
    env.prompt_and_wait(&room, "%say after", "after").await;
    assert!(env.messages_reading(&room, "dropped").is_empty());
}
