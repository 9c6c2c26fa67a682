#![recursion_limit = "256"]
//! Nothing a person writes is lost, whatever happens to the gateway: messages sent while it
//! was down (however many), prompts queued behind a turn when it was killed, messages the
//! Matrix SDK cannot parse, and an agent whose stderr is not text or has no line ends.
//! See the table in `docs/continuity.md`. Each test runs twice: with the store in SQLite (the
//! default) and in PostgreSQL (a throwaway cluster).

mod support;

use std::collections::HashMap;
use std::time::Duration;

use matrix_sdk::room::Room;
use support::store::{StoreKind, TestStore};
use support::{Env, PATIENCE, SynapseOptions, wait_until};

/// The demo agent's arguments: every prompt it receives goes to `prompts.jsonl`.
const LOGGING_PROMPTS: &[&str] = &["--prompt-log", "prompts.jsonl"];

/// The gateway with its state in a store of `kind` (kept while the pair lives), `toml`
/// added to its config, and the demo agent started with `demo_args`.
async fn gateway(kind: StoreKind, toml: &str, demo_args: &[&str]) -> (TestStore, Env) {
    let store = TestStore::start(kind).await;
    let env =
        Env::start_with_demo_args(SynapseOptions::default(), &store.config(toml), demo_args).await;
    (store, env)
}

/// [`gateway`] with the demo agent logging every prompt it receives.
async fn logging_prompts(kind: StoreKind, toml: &str) -> (TestStore, Env) {
    gateway(kind, toml, LOGGING_PROMPTS).await
}

/// Every prompt the demo agent received, across all its processes, in order.
fn prompts_received(env: &Env) -> Vec<String> {
    let path = env.gw.workspace("demo").join("prompts.jsonl");
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect()
}

/// How often each text occurs.
fn counts<'a>(texts: impl IntoIterator<Item = &'a String>) -> HashMap<&'a str, usize> {
    let mut counts = HashMap::new();
    for text in texts {
        *counts.entry(text.as_str()).or_insert(0) += 1;
    }
    counts
}

/// What the agent's answers (not its notices) in `room` show now, in order.
fn answers(env: &Env, room: &Room) -> Vec<String> {
    env.alice
        .messages_from(room, &env.agent)
        .into_iter()
        .filter(|m| !m.notice)
        .filter_map(|m| env.alice.current_text(&m.event_id))
        .collect()
}

/// The agent's answers in `room` once it answered everything sent there before
/// (`Env::settled`: anything answered twice would show by then), the marker's left out.
async fn settled_answers(env: &Env, room: &Room) -> Vec<String> {
    env.settled(room).await;
    let mut all = answers(env, room);
    all.retain(|t| !support::is_marker(t));
    all
}

/// Waits until the agent has given `count` answers in `room`; returns them all.
async fn wait_for_answers(env: &Env, room: &Room, count: usize) -> Vec<String> {
    wait_until(PATIENCE * 2, &format!("{count} answers"), || {
        let all = answers(env, room);
        (all.len() >= count).then_some(all)
    })
    .await
}

/// Asserts that no prompt reached the agent twice.
fn assert_prompted_once_each(env: &Env) {
    let prompts = prompts_received(env);
    let twice: Vec<_> = counts(&prompts)
        .into_iter()
        .filter(|(_, n)| *n > 1)
        .collect();
    assert!(twice.is_empty(), "prompted more than once: {twice:?}");
}

async fn every_message_sent_while_the_gateway_was_down_is_answered_once_in_order(kind: StoreKind) {
    let (_store, mut env) = logging_prompts(kind, "").await;
    let rooms = [
        env.room_with_agent(false).await,
        env.room_with_agent(false).await,
    ];
    let mut expected: Vec<Vec<String>> = vec![Vec::new(), Vec::new()];
    for (i, room) in rooms.iter().enumerate() {
        let up = format!("up {i}");
        env.prompt_and_wait(room, &format!("%say {up}"), &up).await;
        expected[i].push(up);
    }
    // More than the homeserver's default sync window of ten, then many more.
    for (round, count) in [(1, 15), (2, 60)] {
        env.gw.kill();
        for n in 0..count {
            for (i, room) in rooms.iter().enumerate() {
                let text = format!("round {round} room {i} message {n}");
                env.alice.send(room, &format!("%say {text}")).await;
                expected[i].push(text);
            }
        }
        env.gw.start_again();
        for (i, room) in rooms.iter().enumerate() {
            let got = wait_for_answers(&env, room, expected[i].len()).await;
            assert_eq!(got, expected[i], "room {i} after round {round}");
        }
    }
    // Nothing more comes: no message is answered twice.
    for (i, room) in rooms.iter().enumerate() {
        assert_eq!(settled_answers(&env, room).await, expected[i], "room {i}");
    }
    assert_prompted_once_each(&env);
}

async fn a_backlog_larger_than_the_sync_window_is_paged_back_in_order(kind: StoreKind) {
    // A sync window of ten events: a backlog of sixty must be fetched page by page, in a
    // plain room and in an encrypted one (whose pages must be decrypted).
    let (_store, mut env) = logging_prompts(kind, "[continuity]\nsync_timeline_limit = 10").await;
    let rooms = [
        env.room_with_agent(false).await,
        env.room_with_agent(true).await,
    ];
    let mut expected: Vec<Vec<String>> = vec![Vec::new(), Vec::new()];
    for (i, room) in rooms.iter().enumerate() {
        let up = format!("up {i}");
        env.prompt_and_wait(room, &format!("%say {up}"), &up).await;
        expected[i].push(up);
    }
    env.gw.kill();
    // A new room key for the encrypted room while the gateway is away: it reaches the
    // agent's device with the first sync after the restart, before its messages can be
    // read.
    rooms[1].discard_room_key().await.unwrap();
    for n in 0..60 {
        for (i, room) in rooms.iter().enumerate() {
            let text = format!("room {i} message {n}");
            env.alice.send(room, &format!("%say {text}")).await;
            expected[i].push(text);
        }
    }
    env.gw.start_again();
    for (i, room) in rooms.iter().enumerate() {
        let got = wait_for_answers(&env, room, expected[i].len()).await;
        assert_eq!(got, expected[i], "room {i}");
    }
    assert!(
        env.gw.log().contains("catching up"),
        "the gap was paged back"
    );
    for (i, room) in rooms.iter().enumerate() {
        assert_eq!(settled_answers(&env, room).await, expected[i], "room {i}");
    }
    assert_prompted_once_each(&env);
}

async fn what_lies_beyond_the_catch_up_bound_is_reported_not_skipped(kind: StoreKind) {
    let (_store, mut env) = logging_prompts(
        kind,
        "[continuity]\nsync_timeline_limit = 10\ncatch_up_max_events = 25",
    )
    .await;
    let room = env.room_with_agent(false).await;
    env.prompt_and_wait(&room, "%say up", "up").await;
    env.gw.kill();
    for n in 0..40 {
        env.alice.send(&room, &format!("%say message {n}")).await;
    }
    env.gw.start_again();
    // The newest 25 are answered, in order; the ones before them are reported, not
    // skipped. (The homeserver may hand the restarted gateway the sync response it had
    // prepared for the killed one, holding the first message alone: that one is then
    // within the bound of its own batch and answered.)
    let reported = wait_until(PATIENCE, "the report of what was not answered", || {
        let notices: Vec<String> = env
            .alice
            .messages_from(&room, &env.agent)
            .into_iter()
            .filter(|m| m.notice && m.body.contains("from while I was away were not answered"))
            .map(|m| m.body)
            .collect();
        (!notices.is_empty()).then_some(notices)
    })
    .await;
    let counted: usize = reported
        .iter()
        .map(|notice| {
            let words = notice
                .trim_start_matches("⏹️ ")
                .trim_start_matches("At least ");
            words.split(' ').next().unwrap().parse::<usize>().unwrap()
        })
        .sum();
    let newest: Vec<String> = (15..40).map(|n| format!("message {n}")).collect();
    wait_for_answers(&env, &room, 1 + newest.len()).await;
    let got = (settled_answers(&env, &room).await.into_iter())
        .skip(1)
        .collect::<Vec<_>>();
    assert!(got.ends_with(&newest), "the newest 25, in order: {got:?}");
    let numbers: Vec<usize> = got
        .iter()
        .map(|t| t.trim_start_matches("message ").parse().unwrap())
        .collect();
    assert!(
        numbers.windows(2).all(|w| w[0] < w[1]),
        "in order, once: {numbers:?}"
    );
    assert_eq!(
        numbers.len() + counted,
        40,
        "every message answered or reported: {reported:?}"
    );
    assert_prompted_once_each(&env);
}

async fn prompts_queued_behind_a_turn_are_answered_after_a_crash(kind: StoreKind) {
    let (_store, mut env) = logging_prompts(kind, "").await;
    let room = env.room_with_agent(false).await;
    env.alice.send(&room, "%say working\n%sleep 30000").await;
    env.reply_where(&room, "the running turn", |t| t == "working")
        .await;
    let mut queued = Vec::new();
    for n in 1..=3 {
        queued.push(env.alice.send(&room, &format!("%say queued {n}")).await);
    }
    for event in &queued {
        wait_until(PATIENCE, "the queued mark", || {
            env.alice
                .reactions_on(event)
                .into_iter()
                .find(|r| r.key == "⏳")
        })
        .await;
    }
    tokio::time::sleep(Duration::from_millis(500)).await;
    env.gw.kill();
    env.gw.start_again();
    let expected = [
        "working\n\n⏹️ Interrupted: Sidekicks stopped before this answer was complete. Send your message again to retry.",
        "queued 1",
        "queued 2",
        "queued 3",
    ];
    let got = wait_for_answers(&env, &room, expected.len()).await;
    assert_eq!(got, expected);
    assert_eq!(
        settled_answers(&env, &room).await,
        expected,
        "each once, the cut turn marked once"
    );
    assert_prompted_once_each(&env);
    // The queued marks went when their turns started, after the restart.
    for event in &queued {
        wait_until(PATIENCE, "the queued mark to go", || {
            env.alice
                .reactions_on(event)
                .iter()
                .all(|r| env.alice.is_redacted(&r.event_id))
                .then_some(())
        })
        .await;
    }
}

async fn kill_nine_at_twenty_moments_of_a_burst_loses_and_doubles_nothing(kind: StoreKind) {
    let (_store, mut env) = logging_prompts(kind, "").await;
    let rooms = [
        env.room_with_agent(false).await,
        env.room_with_agent(false).await,
        env.room_with_agent(false).await,
    ];
    // Fifty messages over the three rooms, sent while the gateway is killed and started
    // again twenty times. The kills come at moments spread over a start-up's phases:
    // logging in, catching up, admitting, streaming, finishing a turn.
    let mut prompts = Vec::new();
    let sender = {
        let rooms = rooms.clone();
        let client = env.alice.client.clone();
        tokio::spawn(async move {
            let mut sent = Vec::new();
            for n in 0..50 {
                let room = &rooms[n % 3];
                let body = format!("%say m{n}\n%sleep 150");
                let content =
                    matrix_sdk::ruma::events::room::message::RoomMessageEventContent::text_plain(
                        &body,
                    );
                let id = client
                    .get_room(room.room_id())
                    .unwrap()
                    .send(content)
                    .await
                    .unwrap()
                    .response
                    .event_id
                    .to_string();
                sent.push((n, id));
                tokio::time::sleep(Duration::from_millis(120)).await;
            }
            sent
        })
    };
    for kill in 0..20u64 {
        // 0.1 s to 2.0 s after the start, in a spread order.
        let after = Duration::from_millis(100 + (kill * 7 % 20) * 100);
        tokio::time::sleep(after).await;
        env.gw.kill();
        env.gw.start_again();
    }
    let sent = sender.await.unwrap();
    prompts.extend(sent);
    // Every message ends answered once, or with its turn marked as cut once.
    let interrupted = "\n\n⏹️ Interrupted";
    let outcome = |n: usize, prompt: &str| -> Vec<String> {
        let room = &rooms[n % 3];
        let mut seen = Vec::new();
        for m in env.alice.messages_from(room, &env.agent) {
            let text = env.alice.current_text(&m.event_id).unwrap_or_default();
            let answer = format!("m{n}");
            if !m.notice && text == answer {
                seen.push("answered".to_owned());
            } else if !m.notice && text.starts_with(&format!("{answer}{interrupted}")) {
                seen.push("cut".to_owned());
            } else if m.notice
                && m.in_reply_to.as_deref() == Some(prompt)
                && text.contains("stopped before it could answer")
            {
                seen.push("cut before answering".to_owned());
            }
        }
        seen
    };
    let deadline = std::time::Instant::now() + PATIENCE * 3;
    loop {
        let open: Vec<&(usize, String)> = prompts
            .iter()
            .filter(|(n, id)| outcome(*n, id).is_empty())
            .collect();
        if open.is_empty() {
            break;
        }
        if std::time::Instant::now() > deadline {
            for (n, _) in &open {
                let room = &rooms[n % 3];
                eprintln!("room of m{n}: {:?}", env.texts_from(room, &env.agent));
            }
            panic!("neither answered nor marked: {open:?}");
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    for room in &rooms {
        env.settled(room).await;
    }
    for (n, id) in &prompts {
        let seen = outcome(*n, id);
        assert_eq!(seen.len(), 1, "message {n}: {seen:?}");
    }
    assert_prompted_once_each(&env);
}

async fn messages_the_sdk_cannot_parse_still_get_a_notice(kind: StoreKind) {
    let (_store, env) = gateway(kind, "", &[]).await;
    let room = env.room_with_agent(false).await;
    let encrypted = env.room_with_agent(true).await;
    // Each with the start of the notice it gets.
    let could_not_read = "I could not read this message";
    let not_supported = "I cannot read org.example.sketch messages";
    let odd = [
        (
            &room,
            serde_json::json!({"msgtype": "m.image", "body": "screenshot.png"}),
            could_not_read,
        ),
        (
            &room,
            serde_json::json!({"msgtype": "m.file", "body": "build.log", "info": {"size": 10}}),
            could_not_read,
        ),
        (
            &room,
            serde_json::json!({"msgtype": "org.example.sketch", "body": "a sketch",
                "strokes": [1, 2, 3]}),
            not_supported,
        ),
        (
            &room,
            serde_json::json!({"msgtype": "m.text", "body": "see above",
                "m.relates_to": {"m.in_reply_to": "not an object"}}),
            could_not_read,
        ),
        (
            &encrypted,
            serde_json::json!({"msgtype": "m.image", "body": "secret.png"}),
            could_not_read,
        ),
    ];
    for (i, (room, content, expected)) in odd.iter().enumerate() {
        let event = env.alice.send_raw(room, content.clone()).await;
        let notice = wait_until(PATIENCE, &format!("a notice for odd message {i}"), || {
            env.alice
                .messages_from(room, &env.agent)
                .into_iter()
                .find(|m| m.notice && m.in_reply_to.as_deref() == Some(event.as_str()))
        })
        .await;
        assert!(notice.body.starts_with(expected), "{i}: {}", notice.body);
        assert!(
            env.gw.log().contains(&event),
            "the log names the event {event}"
        );
    }
    // The room goes on.
    env.prompt_and_wait(&room, "%say still here", "still here")
        .await;
}

async fn an_agent_writing_odd_stderr_keeps_running_and_its_turn_ends(kind: StoreKind) {
    let (_store, env) = gateway(kind, "", &[]).await;
    let room = env.room_with_agent(false).await;
    // Not UTF-8, then a line of 10 MB without a break: both must be drained.
    env.prompt_and_wait(
        &room,
        "%stderr-binary\n%stderr-flood 10000000\n%stderr after the flood\n%say still here",
        "still here",
    )
    .await;
    env.prompt_and_wait(&room, "%say and again", "and again")
        .await;
    let log = env.gw.log();
    assert!(
        !log.contains("agent process exited"),
        "the agent kept running"
    );
    assert!(log.contains("after the flood"), "stderr is still read");
    assert!(log.contains("not text"), "the lossy line is kept");
    assert!(
        log.len() < 2_000_000,
        "a 10 MB line is not logged whole ({} bytes of log)",
        log.len()
    );
}

/// A message steered into a turn that a crash then cuts is answered after the restart, once:
/// its input waited in the store until the turn that answers it would have ended.
async fn a_message_steered_into_a_turn_cut_by_a_crash_is_answered_after_the_restart(
    kind: StoreKind,
) {
    let (_store, mut env) = logging_prompts(kind, "[queue]\nmode = \"steer\"").await;
    let room = env.room_with_agent(false).await;
    env.alice.send(&room, "%say working\n%sleep 30000").await;
    env.reply_where(&room, "the running turn", |t| t == "working")
        .await;
    let steered = env.alice.send(&room, "%say steered in").await;
    wait_until(PATIENCE, "the steered mark", || {
        (env.alice.reactions_on(&steered).into_iter()).find(|r| r.key == "↪️")
    })
    .await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    env.gw.kill();
    env.gw.start_again();
    let expected = [
        "working\n\n⏹️ Interrupted: Sidekicks stopped before this answer was complete. Send your message again to retry.",
        "steered in",
    ];
    let got = wait_for_answers(&env, &room, expected.len()).await;
    assert_eq!(got, expected);
    assert_eq!(settled_answers(&env, &room).await, expected, "each once");
    assert_prompted_once_each(&env);
}

on_both_stores!(
    every_message_sent_while_the_gateway_was_down_is_answered_once_in_order,
    a_backlog_larger_than_the_sync_window_is_paged_back_in_order,
    what_lies_beyond_the_catch_up_bound_is_reported_not_skipped,
    prompts_queued_behind_a_turn_are_answered_after_a_crash,
    kill_nine_at_twenty_moments_of_a_burst_loses_and_doubles_nothing,
    messages_the_sdk_cannot_parse_still_get_a_notice,
    an_agent_writing_odd_stderr_keeps_running_and_its_turn_ends,
    a_message_steered_into_a_turn_cut_by_a_crash_is_answered_after_the_restart,
);
