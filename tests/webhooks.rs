#![recursion_limit = "256"]
//! Webhooks: a signed request prompts the agent as the user it runs as, answered in a
//! thread of its own; unsigned, wrongly signed, replayed and oversized requests are refused
//! and run nothing; a delivery answered `202` runs once even when the gateway is killed
//! right after. Real Synapse, the real binary, the demo agent, HTTP from outside.

mod support;

use std::time::Duration;

use matrix_sdk::room::Room;
use sidekicks::core::webhooks::signature::sign;
use support::person::Seen;
use support::{Env, PATIENCE, SynapseOptions, wait_until};

const SECRET: &str = "the webhook's secret";

/// The gateway of `env` restarted with webhook `ci` prompting `room`; returns its URL.
fn with_webhook(env: &mut Env, room: &Room) -> String {
    with_webhook_listening(env, room, "")
}

/// [`with_webhook`], with `listener` lines added to `[webhook_listener]`.
fn with_webhook_listening(env: &mut Env, room: &Room, listener: &str) -> String {
    let port = support::ports::free_port();
    let secret = env.gw.config.with_file_name("ci.secret");
    std::fs::write(&secret, SECRET).unwrap();
    let mut config = std::fs::read_to_string(&env.gw.config).unwrap();
    config.push_str(&format!(
        "\n[webhook_listener]\nlisten = \"127.0.0.1:{port}\"\n{listener}\n[[webhooks]]\nname = \"ci\"\n\
         room = \"{room}\"\nagent = \"demo\"\nrun_as = \"{alice}\"\nsignature = \"github\"\n\
         secret_file = {secret:?}\nmax_body_kb = 4\n\
         prompt = \"%say CI failed on {{{{ref}}}}: {{{{head_commit.message}}}}\"\n",
        room = room.room_id(),
        alice = env.alice.user_id,
    ));
    std::fs::write(&env.gw.config, config).unwrap();
    env.gw.restart();
    format!("http://127.0.0.1:{port}/hooks/ci")
}

/// POSTs `body` to `url` with `headers`; returns the status.
async fn post(url: &str, body: &str, headers: &[(&str, String)]) -> u16 {
    let client = reqwest::Client::new();
    let deadline = std::time::Instant::now() + PATIENCE;
    loop {
        let mut request = client.post(url).body(body.to_owned());
        for (name, value) in headers {
            request = request.header(*name, value);
        }
        match request.send().await {
            Ok(response) => return response.status().as_u16(),
            // The listener is not up yet after the restart.
            Err(e) if std::time::Instant::now() < deadline && e.is_connect() => {
                tokio::time::sleep(Duration::from_millis(200)).await
            }
            Err(e) => panic!("POST {url}: {e}"),
        }
    }
}

/// GitHub's headers for `body`, delivery `id`.
fn github(body: &str, id: &str) -> Vec<(&'static str, String)> {
    let mac = sign(SECRET.as_bytes(), &[body.as_bytes()]);
    vec![
        ("X-Hub-Signature-256", format!("sha256={mac}")),
        ("X-GitHub-Delivery", id.to_owned()),
        ("Content-Type", "application/json".to_owned()),
    ]
}

/// The deliveries posted in `room` (their messages).
fn deliveries(env: &Env, room: &Room) -> Vec<Seen> {
    (env.alice.messages_from(room, &env.agent).into_iter())
        .filter(|m| m.replaces.is_none() && m.body.starts_with("🪝 Webhook ci (for "))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_signed_delivery_prompts_once_and_bad_ones_run_nothing() {
    let metrics_port = support::ports::free_port();
    let metrics = format!("[metrics]\nlisten = \"127.0.0.1:{metrics_port}\"\n");
    let mut env = Env::start(SynapseOptions::default(), &metrics).await;
    let room = env.room_with_agent(false).await;
    let url = with_webhook(&mut env, &room);
    let body = r#"{"ref":"refs/heads/main","head_commit":{"message":"Fix the build"}}"#;

    assert_eq!(post(&url, body, &github(body, "d-1")).await, 202);
    let delivery = wait_until(PATIENCE, "the delivery's message", || {
        deliveries(&env, &room).into_iter().next()
    })
    .await;
    assert!(
        delivery
            .body
            .ends_with(": %say CI failed on refs/heads/main: Fix the build"),
        "{}",
        delivery.body
    );
    assert_eq!(delivery.mentions, vec![env.alice.user_id.clone()]);
    let said = "CI failed on refs/heads/main: Fix the build";
    let answer = wait_until(PATIENCE, "the agent's answer", || {
        env.messages_reading(&room, said).into_iter().next()
    })
    .await;
    assert_eq!(answer.thread.as_deref(), Some(delivery.event_id.as_str()));
    env.notice_containing(&room, "🪝 Webhook ci: answered after")
        .await;

    // Replayed, unsigned, wrongly signed, too large, stale method: refused.
    assert_eq!(
        post(&url, body, &github(body, "d-1")).await,
        409,
        "a replay"
    );
    // Whoever saw one signed delivery (a proxy's log) resends it under IDs of their own:
    // the ID is not signed, the body is.
    for id in ["d-1-again", "fresh-id"] {
        assert_eq!(
            post(&url, body, &github(body, id)).await,
            409,
            "the same signed body under the ID {id}"
        );
    }
    assert_eq!(post(&url, body, &[]).await, 401, "unsigned");
    let mut forged = github(body, "d-2");
    forged[0].1 = format!("sha256={}", sign(b"not the secret", &[body.as_bytes()]));
    assert_eq!(post(&url, body, &forged).await, 403, "wrongly signed");
    let tampered = body.replace("main", "evil");
    assert_eq!(
        post(&url, &tampered, &github(body, "d-3")).await,
        403,
        "tampered"
    );
    let large = format!(r#"{{"ref":"{}"}}"#, "x".repeat(5 * 1024));
    assert_eq!(
        post(&url, &large, &github(&large, "d-4")).await,
        413,
        "too large"
    );
    let wrong_path = url.replace("/ci", "/nope");
    assert_eq!(post(&wrong_path, body, &github(body, "d-5")).await, 404);
    // Each was refused before anything was stored or run (its status says so, and the
    // counters below show one request accepted in all): nothing else ran.
    assert_eq!(deliveries(&env, &room).len(), 1, "nothing else ran");
    assert_eq!(env.messages_reading(&room, said).len(), 1);
    assert!(
        !env.alice
            .messages_from(&room, &env.agent)
            .iter()
            .any(|m| m.body.contains("evil"))
    );
    // Operators see each request's fate, and the run's.
    let url = format!("http://127.0.0.1:{metrics_port}/metrics");
    let text = reqwest::get(&url).await.unwrap().text().await.unwrap();
    for (outcome, n) in [
        ("accepted", 1),
        ("replayed", 3),
        ("unsigned", 1),
        ("bad_signature", 2),
        ("too_large", 1),
    ] {
        let line =
            format!("sidekicks_webhook_requests_total{{webhook=\"ci\",outcome=\"{outcome}\"}} {n}");
        assert!(text.contains(&line), "{line} in:\n{text}");
    }
    let runs = "sidekicks_schedule_runs_total{agent=\"demo\",outcome=\"answered\"} 1";
    assert!(text.contains(runs), "{runs} in:\n{text}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_delivery_accepted_just_before_a_kill_nine_runs_once_after_the_restart() {
    let mut env = Env::start(SynapseOptions::default(), "").await;
    let room = env.room_with_agent(false).await;
    let url = with_webhook(&mut env, &room);
    let body = r#"{"ref":"refs/heads/release","head_commit":{"message":"Tag it"}}"#;
    assert_eq!(post(&url, body, &github(body, "k-1")).await, 202);
    env.gw.kill();
    env.gw.start_again();
    let said = "CI failed on refs/heads/release: Tag it";
    wait_until(PATIENCE, "the answer after the restart", || {
        env.messages_reading(&room, said).into_iter().next()
    })
    .await;
    env.notice_containing(&room, "🪝 Webhook ci: answered after")
        .await;
    tokio::time::sleep(Duration::from_secs(3)).await;
    assert_eq!(deliveries(&env, &room).len(), 1);
    assert_eq!(env.messages_reading(&room, said).len(), 1);
    // The same delivery sent again after the restart is still a replay.
    assert_eq!(post(&url, body, &github(body, "k-1")).await, 409);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bodies_that_never_arrive_are_cut_and_a_real_delivery_gets_through() {
    let mut env = Env::start(SynapseOptions::default(), "").await;
    let room = env.room_with_agent(false).await;
    let url = with_webhook_listening(&mut env, &room, "body_timeout_secs = 2");
    let body = r#"{"ref":"refs/heads/slow","head_commit":{"message":"Through"}}"#;
    // The listener is up (a first delivery answered) before the stalls begin.
    assert_eq!(post(&url, body, &github(body, "s-1")).await, 202);
    // As many connections as the listener takes, each announcing a body it never sends.
    let address = url
        .trim_start_matches("http://")
        .split('/')
        .next()
        .unwrap()
        .to_owned();
    let mut stalled = Vec::new();
    for _ in 0..64 {
        use tokio::io::AsyncWriteExt as _;
        let mut stream = tokio::net::TcpStream::connect(&address).await.unwrap();
        let headers =
            format!("POST /hooks/ci HTTP/1.1\r\nHost: {address}\r\nContent-Length: 100\r\n\r\n{{");
        stream.write_all(headers.as_bytes()).await.unwrap();
        stalled.push(stream);
    }
    // A real delivery is taken all the same, once the stalled bodies' deadline cuts them:
    // until then the full listener closes new connections at once, and it is sent again.
    let other = r#"{"ref":"refs/heads/other","head_commit":{"message":"Through"}}"#;
    let client = reqwest::Client::builder()
        .timeout(PATIENCE)
        .build()
        .unwrap();
    let deadline = std::time::Instant::now() + PATIENCE;
    let status = loop {
        let mut request = client.post(&url).body(other.to_owned());
        for (name, value) in github(other, "s-2") {
            request = request.header(name, value);
        }
        match request.send().await {
            Ok(response) => break response.status().as_u16(),
            Err(e) => {
                if std::time::Instant::now() >= deadline {
                    let log = env.gw.log();
                    let from = log.len().saturating_sub(4000);
                    let from = (from..log.len()).find(|i| log.is_char_boundary(*i));
                    let tail = &log[from.unwrap_or(0)..];
                    panic!("the real delivery was never taken: {e}\ngateway log:\n{tail}");
                }
            }
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    assert_eq!(status, 202);
    // Each stalled request was answered 408 and closed, not held.
    for mut stream in stalled {
        use tokio::io::AsyncReadExt as _;
        let mut answer = String::new();
        let read = tokio::time::timeout(PATIENCE, stream.read_to_string(&mut answer)).await;
        assert!(
            read.is_ok(),
            "a stalled connection was held past its deadline"
        );
        assert!(
            answer.is_empty() || answer.starts_with("HTTP/1.1 408"),
            "{answer}"
        );
    }
    env.notice_containing(&room, "🪝 Webhook ci: answered after")
        .await;
}
