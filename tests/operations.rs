#![recursion_limit = "256"]
//! What operators watch: the metrics endpoint after a known sequence of turns, and the
//! health endpoints, against a real homeserver.

mod support;

use support::ports::free_port;
use support::{Env, PATIENCE, SynapseOptions};

/// `GET url`: its status and body.
async fn get(url: &str) -> (u16, String) {
    match reqwest::get(url).await {
        Ok(r) => (r.status().as_u16(), r.text().await.unwrap_or_default()),
        Err(_) => (0, String::new()),
    }
}

/// Asks `probe` until it gives something, for at most the tests' patience.
async fn eventually<T, F: std::future::Future<Output = Option<T>>>(
    what: &str,
    mut probe: impl FnMut() -> F,
) -> T {
    let deadline = std::time::Instant::now() + PATIENCE;
    loop {
        if let Some(v) = probe().await {
            return v;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "timed out waiting for {what}"
        );
        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    }
}

/// The value of the series `series` (its name and labels, exactly as written) in `text`.
fn value(text: &str, series: &str) -> Option<f64> {
    text.lines()
        .find_map(|l| l.strip_prefix(series)?.strip_prefix(' '))
        .and_then(|v| v.split_whitespace().next()?.parse().ok())
}

/// A gateway serving metrics on a free port, once its endpoints answer: it, their base URL
/// and the port.
async fn with_metrics() -> (Env, String, u16) {
    let port = free_port();
    let base = format!("http://127.0.0.1:{port}");
    let env = Env::start(
        SynapseOptions::default(),
        &format!("[metrics]\nlisten = \"127.0.0.1:{port}\""),
    )
    .await;
    // The harness returns once the agent's user is logged in; the endpoints come up
    // beside its first sync.
    eventually("live", || async {
        (get(&format!("{base}/health/live")).await.0 == 200).then_some(())
    })
    .await;
    (env, base, port)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn metrics_count_a_known_sequence_of_turns_and_health_says_ready() {
    let (env, base, _) = with_metrics().await;
    eventually("ready", || async {
        (get(&format!("{base}/health/ready")).await.0 == 200).then_some(())
    })
    .await;

    let room = env.room_with_agent(false).await;
    env.prompt_and_wait(&room, "%say one", "one").await;
    env.prompt_and_wait(&room, "%say two", "two").await;
    // A poll allowed.
    env.alice.send(&room, "%permission bash: ls").await;
    let poll = env.open_poll(&room, "🔐", 0, 5).await;
    env.alice.react(&room, &poll, "✅").await;
    env.reply_where(&room, "the permitted call's end", |t| {
        t.starts_with("permission: allow")
    })
    .await;
    // A turn stopped.
    env.alice.send(&room, "%say working\n%hang").await;
    env.reply_where(&room, "the answer to stop", |t| t.starts_with("working"))
        .await;
    // A prompt waits behind it: the queue counts it.
    env.alice.send(&room, "%say later").await;
    eventually("the queued prompt counted", || async {
        let text = get(&format!("{base}/metrics")).await.1;
        (value(&text, r#"sidekicks_queued_prompts{agent="demo"}"#) == Some(1.0)).then_some(())
    })
    .await;
    env.alice.send(&room, "!stop").await;
    env.reply_where(&room, "the stopped answer", |t| t.contains("Stopped by"))
        .await;
    env.reply_where(&room, "the queued prompt's answer", |t| t == "later")
        .await;

    let metrics = eventually("every turn counted", || async {
        let (status, text) = get(&format!("{base}/metrics")).await;
        let turns = |outcome: &str| {
            let series = format!(r#"sidekicks_turns_total{{agent="demo",outcome="{outcome}"}}"#);
            value(&text, &series)
        };
        let counted = turns("cancelled") == Some(1.0) && turns("end_turn") == Some(4.0);
        (status == 200 && counted).then_some(text)
    });
    let text = metrics.await;
    let series = |s: &str| value(&text, s).unwrap_or_else(|| panic!("no {s} in:\n{text}"));
    assert_eq!(
        series(r#"sidekicks_polls_total{agent="demo",outcome="allowed"}"#),
        1.0
    );
    assert_eq!(series(r#"sidekicks_queued_prompts{agent="demo"}"#), 0.0);
    assert_eq!(
        series(r#"sidekicks_rate_limited_requests_total{agent="demo"}"#),
        0.0
    );
    assert!(
        series(r#"sidekicks_answer_messages_total{agent="demo"}"#) >= 5.0,
        "{text}"
    );
    let answered = series(r#"sidekicks_first_answer_seconds_count{agent="demo"}"#);
    assert_eq!(answered, 5.0, "each turn's first answer timed: {text}");
    let seconds = series(r#"sidekicks_first_answer_seconds_sum{agent="demo"}"#);
    assert!(seconds > 0.0 && seconds < 60.0, "{text}");
    assert_eq!(get(&format!("{base}/nothing")).await.0, 404);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn idle_connections_cannot_hold_the_metrics_listener_for_good() {
    use tokio::io::AsyncReadExt;
    let (env, base, port) = with_metrics().await;
    // Far more connections than the listener takes, none of which ever sends a request.
    let mut idle = Vec::new();
    for _ in 0..200 {
        idle.push(
            tokio::net::TcpStream::connect(("127.0.0.1", port))
                .await
                .unwrap(),
        );
    }
    let started = std::time::Instant::now();
    // The gateway closes every one: beyond its cap at once, the rest once their headers are
    // overdue. (A read of nothing, or a reset, is a closed connection.)
    for (n, stream) in idle.iter_mut().enumerate() {
        let mut byte = [0u8; 1];
        let left = PATIENCE.saturating_sub(started.elapsed());
        match tokio::time::timeout(left, stream.read(&mut byte)).await {
            Ok(Ok(0) | Err(_)) => {}
            other => panic!("idle connection {n} is still open: {other:?}"),
        }
    }
    eprintln!("200 idle connections closed in {:?}", started.elapsed());
    eventually("live again", || async {
        (get(&format!("{base}/health/live")).await.0 == 200).then_some(())
    })
    .await;
    assert!(
        env.gw.log().contains("too many connections open"),
        "the log says the listener was full"
    );
}

/// Writes `config` as the gateway's config and sends it SIGHUP; returns the first log line
/// saying `outcome` once there is one.
async fn reload(env: &Env, config: &str, outcome: &str) -> String {
    std::fs::write(&env.gw.config, config).unwrap();
    let pid = env.gw.pid().unwrap() as i32;
    unsafe { libc::kill(pid, libc::SIGHUP) };
    support::wait_until(PATIENCE, outcome, || {
        env.gw
            .log()
            .lines()
            .find(|l| l.contains(outcome))
            .map(str::to_owned)
    })
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sighup_reloads_the_access_lists_and_names_what_needs_a_restart() {
    let env = Env::start(SynapseOptions::default(), "").await;
    let bob_id = env.hs.register("bob", "bob-password").await;
    let bob = support::Person::login(&env.hs.url, &bob_id, "bob-password").await;
    let room = env.room_with_agent(false).await;
    env.alice.invite(&room, &bob_id).await;
    let bobs = bob.join(room.room_id().as_str()).await;

    // Not allowed yet: nothing answers him.
    bob.send(&bobs, "%say too early").await;
    let texts = env.texts_when_settled(&room).await;
    assert!(!texts.iter().any(|t| t.contains("too early")), "{texts:?}");

    // Bob allowed, and a setting that needs a restart changed, then SIGHUP.
    let config = std::fs::read_to_string(&env.gw.config).unwrap();
    let allowed = format!("allowed_users = [\"{}\"]", env.alice.user_id);
    assert!(config.contains(&allowed), "{config}");
    let config = config
        .replace(
            &allowed,
            &format!("allowed_users = [\"{}\", \"{bob_id}\"]", env.alice.user_id),
        )
        .replacen("[matrix]", "[pool]\nidle_stop_secs = 999\n[matrix]", 1);
    let line = reload(&env, &config, "now in effect for the next turns").await;
    assert!(line.contains("allowed_users"), "{line}");
    let log = env.gw.log();
    let waiting = log
        .lines()
        .find(|l| l.contains("take effect only after a restart"));
    assert!(waiting.is_some_and(|l| l.contains("pool")), "{waiting:?}");

    bob.send(&bobs, "%say now for bob").await;
    env.reply_where(&room, "the answer to Bob", |t| t == "now for bob")
        .await;

    // A config that does not load changes nothing, and says why.
    reload(&env, "this is not a config", "the config was not reloaded").await;
    bob.send(&bobs, "%say still bob").await;
    env.reply_where(&room, "Bob still answered", |t| t == "still bob")
        .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sighup_reloads_display_and_permissions_for_the_next_turns() {
    let env = Env::start(SynapseOptions::default(), "[display]\nshow = \"answer\"\n").await;
    let room = env.room_with_agent(false).await;

    // Answers only: a tool call shows no card.
    let before = env.alice.messages_from(&room, &env.agent).len();
    env.prompt_and_wait(&room, "%tool bash: hidden\n%say quiet", "quiet")
        .await;
    let texts: Vec<String> = env.texts_when_settled(&room).await[before..].to_vec();
    assert_eq!(texts, ["quiet"], "only the answer before the reload");

    // Everything shown, and polls refused after 5 s instead of 10 minutes: reloaded.
    let config = std::fs::read_to_string(&env.gw.config).unwrap();
    assert!(config.contains("show = \"answer\""), "{config}");
    let config = config.replace("show = \"answer\"", "show = \"all\"")
        + "\n[permissions]\ntimeout_secs = 5\n";
    let line = reload(&env, &config, "now in effect for the next turns").await;
    assert!(
        line.contains("display") && line.contains("permissions"),
        "{line}"
    );
    assert!(
        !env.gw.log().contains("take effect only after a restart"),
        "{}",
        env.gw.log()
    );

    env.prompt_and_wait(&room, "%tool bash: visible\n%say loud", "loud")
        .await;
    env.reply_where(&room, "the tool card", |t| t.contains("bash: visible"))
        .await;
    env.alice.send(&room, "%permission bash: ls").await;
    env.reply_where(&room, "the refusal after the new timeout", |t| {
        t.contains("permission: reject")
    })
    .await;
}
