#![recursion_limit = "256"]
//! The homeserver going away, a rejected access token, an agent that crashes.

mod support;

use std::time::Duration;

use support::{Env, PATIENCE, SynapseOptions, wait_until};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_gateway_survives_the_homeserver_going_away() {
    let mut env = Env::start(SynapseOptions::default(), "").await;
    let room = env.room_with_agent(false).await;
    env.prompt_and_wait(&room, "%say before", "before").await;
    env.hs.stop();
    tokio::time::sleep(Duration::from_secs(5)).await;
    env.hs.restart().await;
    // Alice's own client reconnects too; then the agent answers again.
    env.prompt_and_wait(&room, "%say after", "after").await;
    let log = env.gw.log();
    assert!(log.contains("sync failed"), "the outage was logged");
    // With its whole cause, down to the system's refusal, not only "error sending request".
    let failed = log.lines().find(|l| l.contains("sync failed")).unwrap();
    assert!(failed.contains("Connection refused"), "{failed}");
    assert!(
        log.contains("homeserver reachable again"),
        "the recovery was logged"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rejected_access_token_is_reported_clearly() {
    let mut env = Env::start(SynapseOptions::default(), "").await;
    env.room_with_agent(false).await;
    env.gw.stop();
    let session = env.gw.dir.path().join("state/matrix/demo/session.json");
    // The state folder is private to the gateway's user, the token file too.
    use std::os::unix::fs::PermissionsExt;
    let mode = |p: &std::path::Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode(&env.gw.dir.path().join("state")), 0o700);
    assert_eq!(mode(&session), 0o600);
    assert_eq!(mode(&env.gw.dir.path().join("state/sidekicks.db")), 0o600);
    let text = std::fs::read_to_string(&session).unwrap();
    let mut json: serde_json::Value = serde_json::from_str(&text).unwrap();
    let path = ["/tokens/access_token", "/access_token"]
        .into_iter()
        .find(|p| json.pointer(p).is_some())
        .expect("an access token in the saved session");
    *json.pointer_mut(path).unwrap() = "syt_revoked_token".into();
    std::fs::write(&session, json.to_string()).unwrap();
    env.gw.restart();
    wait_until(PATIENCE, "the token error in the log", || {
        let log = env.gw.log();
        log.contains("rejected the access token of @demo:localhost")
            .then_some(())
    })
    .await;
    assert!(env.gw.log().contains("session.json to log in again"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_agent_that_crashes_mid_turn_is_reported_with_its_exit_status_and_stderr() {
    let env = Env::start(SynapseOptions::default(), "").await;
    let room = env.room_with_agent(false).await;
    env.alice
        .send(&room, "%say about to fail\n%sleep 300\n%crash 3")
        .await;
    let notice = env
        .reply_where(&room, "the crash report", |t| t.contains("exit code 3"))
        .await;
    assert!(
        notice.contains("about to fail"),
        "the partial answer is kept: {notice}"
    );
    assert!(
        env.gw.log().contains("demo agent: crashing as asked"),
        "the agent's stderr reached the log"
    );
    assert!(
        notice.contains("Your next message starts it again"),
        "{notice}"
    );
    // Everyone in the room may prompt, so the agent's stderr is shown to them.
    let stderr = env.notice_containing(&room, "last wrote to stderr").await;
    assert!(
        stderr.body.contains("demo agent: crashing as asked"),
        "{}",
        stderr.body
    );
    // The next message starts the agent again, with the conversation so far.
    env.alice.send(&room, "%echo").await;
    let echoed = env
        .reply_where(&room, "the echo from the restarted agent", |t| {
            t.ends_with("[New message]\n%echo")
        })
        .await;
    assert!(echoed.contains("> about to fail"), "{echoed}");
    assert!(env.gw.log().contains("starting it again"));
    // Someone who may not prompt is invited: from now on stderr stays in the log, since
    // they will read the room once they join.
    env.prompt_and_wait(&room, "%stderr a detail\n%say noted", "noted")
        .await;
    let eve = env.hs.register("eve", "eve-password").await;
    env.alice.invite(&room, &eve).await;
    env.alice.send(&room, "!logs").await;
    env.notice_containing(&room, "is in the Sidekicks log")
        .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_login_is_reported_and_the_gateway_exits_with_an_error() {
    let hs = support::Synapse::start(SynapseOptions::default()).await;
    let alice = hs.register("alice", "pw").await;
    let agent = hs.register("demo", "right-password").await;
    let spec = support::AgentSpec {
        id: "demo".into(),
        user_id: agent,
        password: "wrong-password".into(),
        demo_args: vec![],
        agent_toml: String::new(),
    };
    let mut gw = support::GatewayProcess::start(&hs.url, &[alice.as_str()], &[spec], "");
    let status = gw.wait_exit(PATIENCE).expect("the gateway should give up");
    assert!(!status.success());
    let log = gw.log();
    assert!(
        log.contains("login of @demo:localhost refused by the homeserver"),
        "{log}"
    );
    assert!(
        !log.contains("wrong-password"),
        "the password must not be logged"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_shutdown_marks_the_running_turn_and_keeps_queued_messages_for_the_next_start() {
    let mut env = Env::start(
        SynapseOptions::default(),
        "[streaming]\nedit_interval_ms = 200",
    )
    .await;
    let room = env.room_with_agent(false).await;
    env.alice
        .send(&room, &format!("%stream 100 5\n{}", "word ".repeat(400)))
        .await;
    let reply = env.first_reply(&room).await;
    let queued = env
        .alice
        .send(&room, "%say answered after the restart")
        .await;
    wait_until(PATIENCE, "the queued mark", || {
        env.alice
            .reactions_on(&queued)
            .into_iter()
            .find(|r| r.key == "⏳")
    })
    .await;
    let asked = std::time::Instant::now();
    env.gw.stop();
    assert!(
        asked.elapsed() < Duration::from_secs(12),
        "shutdown took {:?}",
        asked.elapsed()
    );
    wait_until(
        PATIENCE,
        "the reply to say it was stopped by the shutdown",
        || {
            env.alice
                .current_text(&reply)
                .filter(|t| t.contains("Sidekicks is shutting down"))
        },
    )
    .await;
    env.notice_containing(&room, "1 queued message will be answered when it is back")
        .await;
    let log = env.gw.log();
    assert!(log.contains("shutting down: cancelling the turn"), "{log}");
    assert!(!log.contains("did not finish in time"), "{log}");
    // The queued message waited in the store: the next start answers it, once.
    env.gw.start_again();
    env.reply_where(&room, "the queued message's answer", |t| {
        t == "answered after the restart"
    })
    .await;
    let answered = env
        .texts_when_settled(&room)
        .await
        .into_iter()
        .filter(|t| t == "answered after the restart")
        .count();
    assert_eq!(answered, 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_agent_writing_garbage_to_stdout_is_stopped_with_a_clear_message() {
    let env = Env::start(SynapseOptions::default(), "").await;
    let room = env.room_with_agent(false).await;
    // Without the guard this turn would wait forever: the agent hangs after the garbage.
    env.alice
        .send(&room, "%say working\n%garbage 5\n%hang")
        .await;
    let report = env
        .reply_where(&room, "the protocol report", |t| {
            t.contains("was stopped: it wrote 3 lines that are not ACP")
        })
        .await;
    assert!(report.contains("this line 2 is not JSON-RPC"), "{report}");
    assert!(
        report.contains("Your next message starts it again"),
        "{report}"
    );
    // The next message starts a healthy agent again.
    env.prompt_and_wait(&room, "%say back", "back").await;
    // Bytes that are not text at all stop it at once.
    env.alice.send(&room, "%binary\n%hang").await;
    let report = env
        .reply_where(&room, "the report on binary output", |t| {
            t.contains("was stopped: its stdout is not text")
        })
        .await;
    assert!(
        report.contains("Your next message starts it again"),
        "{report}"
    );
    env.prompt_and_wait(&room, "%say back again", "back again")
        .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dialect_turns_a_known_agent_error_into_a_clear_message() {
    // The mm dialect: a turn aborted with a JSON-RPC error after too many tool calls.
    let env = Env::start_with_agent_toml(SynapseOptions::default(), "", "dialect = \"mm\"").await;
    let room = env.room_with_agent(false).await;
    env.alice
        .send(&room, "%error exceeded maximum tool call iterations (40)")
        .await;
    let notice = env.notice_containing(&room, "could not answer").await;
    assert!(
        notice
            .body
            .contains("it gave up after 40 tool calls in one turn"),
        "{}",
        notice.body
    );
    assert!(!notice.body.contains("-32603"), "{}", notice.body);
    assert!(
        env.gw.log().contains("dialect=mm"),
        "the dialect in use is logged"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_quiet_turn_gets_a_note_that_clears_when_the_agent_goes_on_and_stops_it_with_a_reaction()
{
    let env = Env::start(SynapseOptions::default(), "[timeouts]\nquiet_turn_secs = 2").await;
    let room = env.room_with_agent(false).await;
    // Quiet for 4 s, then it goes on; then it hangs.
    env.alice
        .send(
            &room,
            "%say thinking hard\n%sleep 4000\n%think went on\n%hang",
        )
        .await;
    let first = env.notice_containing(&room, "has shown nothing").await;
    assert!(
        first
            .body
            .starts_with("⏳ demo agent has shown nothing for 2 s"),
        "{}",
        first.body
    );
    assert!(first.body.contains("!stop"), "{}", first.body);
    // Once the agent goes on, the note says so: nobody stops a turn that works again.
    let over = wait_until(PATIENCE, "the note edited once the agent went on", || {
        (env.alice.current_text(&first.event_id)).filter(|t| t.contains("then went on"))
    })
    .await;
    assert!(
        over.starts_with("⏳ demo agent showed nothing for "),
        "{over}"
    );
    // The hang is a new quiet spell: a new note; the note only informs until someone
    // stops the turn, and a 🛑 on the note does.
    let second = wait_until(PATIENCE, "a second note", || {
        (env.alice.messages_from(&room, &env.agent).into_iter()).find(|m| {
            m.notice && m.body.contains("has shown nothing") && m.event_id != first.event_id
        })
    })
    .await;
    env.alice.react(&room, &second.event_id, "🛑").await;
    env.reply_where(&room, "the stopped reply", |t| {
        t.starts_with("thinking hard") && t.contains("Stopped by")
    })
    .await;
}

/// The harness itself: a homeserver restarted while another process holds its port (as a
/// test choosing ports at the same moment may) waits for the port instead of failing the
/// test that restarts it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_restarted_homeserver_waits_for_its_port_to_be_free() {
    let mut hs = support::Synapse::start(SynapseOptions::default()).await;
    hs.stop();
    let squatter = std::net::TcpListener::bind(("127.0.0.1", hs.port)).unwrap();
    // Held until the restarted homeserver has tried the port and lost it (however long its
    // start takes on a busy machine), at most a minute.
    let log_path = hs.dir.path().join("synapse.log");
    let release = std::thread::spawn(move || {
        let deadline = std::time::Instant::now() + Duration::from_secs(60);
        while std::time::Instant::now() < deadline
            && !std::fs::read_to_string(&log_path).is_ok_and(|log| support::ports::lost_port(&log))
        {
            std::thread::sleep(Duration::from_millis(100));
        }
        drop(squatter);
    });
    hs.restart().await;
    release.join().unwrap();
    let versions = reqwest::get(format!("{}/_matrix/client/versions", hs.url))
        .await
        .unwrap();
    assert!(versions.status().is_success());
    let log = std::fs::read_to_string(hs.dir.path().join("synapse.log")).unwrap();
    assert!(
        support::ports::lost_port(&log),
        "the first restart lost the port, so the harness did wait"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_flooded_room_is_told_what_its_queue_cannot_take_and_nothing_runs_twice() {
    let mut env = Env::start(
        SynapseOptions::default(),
        "[queue]\nmax_waiting = 3\n[streaming]\nedit_interval_ms = 200",
    )
    .await;
    let room = env.room_with_agent(false).await;
    // A turn of about ten seconds, long enough for the flood to arrive while it runs.
    env.alice
        .send(&room, &format!("%stream 100 20\n{}", "word ".repeat(400)))
        .await;
    env.first_reply(&room).await;
    for i in 0..10 {
        env.alice.send(&room, &format!("%say flood {i}")).await;
    }
    let refusals = |env: &Env| {
        env.alice
            .messages_from(&room, &env.agent)
            .into_iter()
            .filter(|m| {
                m.notice
                    && m.body.contains(
                        "3 messages wait for demo agent here already, so this one was not taken",
                    )
            })
            .count()
    };
    wait_until(PATIENCE, "seven refusals", || {
        (refusals(&env) == 7).then_some(())
    })
    .await;
    env.reply_where(&room, "the third queued answer", |t| t == "flood 2")
        .await;
    // The refused ones no longer wait: a restart runs nothing more.
    env.gw.stop();
    env.gw.start_again();
    let mut answered: Vec<String> = env
        .texts_when_settled(&room)
        .await
        .into_iter()
        .filter(|t| t.starts_with("flood "))
        .collect();
    answered.sort();
    assert_eq!(answered, vec!["flood 0", "flood 1", "flood 2"]);
    assert_eq!(refusals(&env), 7);
}
