//! `cargo bench --bench gateway`: Sidekicks measured against the homeserver's own floor, on
//! a real Synapse (started here, on loopback) and the real gateway with the demo agent.
//! Prints each figure's median and spread over several runs and writes them as JSON
//! (`target/sidekicks-bench.json`). A benchmark, not a test: nothing here fails on a slow
//! machine. See `docs/performance.md` for what each figure means.
//!
//! Settings (environment): `SIDEKICKS_BENCH_RUNS` (default 5), `SIDEKICKS_BENCH_ROOMS`
//! (load sizes, default `50`; e.g. `50,200`), `SIDEKICKS_BENCH_ONLY` (comma-separated
//! figure groups: `latency,economy,cold,footprint,load,burst,runners,backlog,catchup`),
//! `SIDEKICKS_BENCH_BURST` (burst sizes, rooms prompted at the same moment, default `200`),
//! `SIDEKICKS_BENCH_LOG` (a file the latency runs' gateway log is written to; the load, burst
//! and backlog groups keep the gateway's and Synapse's logs beside it),
//! `SIDEKICKS_BENCH_STORE` (`postgres`: the gateway's own store in a throwaway PostgreSQL
//! cluster; default its SQLite file), `SIDEKICKS_BENCH_SYNAPSE_DB` (`postgres`: Synapse's
//! database in a throwaway PostgreSQL cluster, as in production; default `sqlite`),
//! `SIDEKICKS_BENCH_SDK_BOT_DELAY_MS` (how long the matrix-sdk echo bot waits before it
//! answers; default 0).
#![recursion_limit = "256"]

#[path = "../tests/support/mod.rs"]
mod support;

#[path = "support/raw_client.rs"]
mod raw_client;

#[path = "support/sdk_bot.rs"]
mod sdk_bot;

use std::collections::BTreeMap;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use matrix_sdk::room::Room;
use raw_client::{RawClient, RawEvent};
use sdk_bot::SdkBot;
use support::store::{StoreKind, TestStore};
use support::{AgentSpec, Env, GatewayProcess, PATIENCE, Person, SynapseOptions, wait_until};

/// One figure's samples.
#[derive(Default)]
struct Figure {
    unit: &'static str,
    samples: Vec<f64>,
}

impl Figure {
    /// The samples, smallest first.
    fn sorted(&self) -> Vec<f64> {
        let mut s = self.samples.clone();
        s.sort_by(f64::total_cmp);
        s
    }
}

/// Every figure, by name, in the order measured.
#[derive(Default)]
struct Report {
    figures: BTreeMap<String, Figure>,
    order: Vec<String>,
}

impl Report {
    fn add(&mut self, name: &str, unit: &'static str, value: f64) {
        if !self.figures.contains_key(name) {
            self.order.push(name.to_owned());
        }
        let f = self.figures.entry(name.to_owned()).or_default();
        f.unit = unit;
        f.samples.push(value);
    }

    fn print_and_save(&self) {
        let mut json = serde_json::Map::new();
        println!(
            "\n{:<52} {:>12} {:>24}  unit",
            "figure", "median", "spread (min – max)"
        );
        for name in &self.order {
            let f = &self.figures[name];
            let s = f.sorted();
            let median = percentile(&s, 50.0);
            let (min, max) = (s[0], s[s.len() - 1]);
            println!(
                "{name:<52} {median:>12.2} {:>24}  {}",
                format!("{min:.2} – {max:.2}"),
                f.unit
            );
            json.insert(
                name.clone(),
                serde_json::json!({"unit": f.unit, "median": median, "min": min, "max": max, "samples": f.samples}),
            );
        }
        let machine = serde_json::json!({
            "cpus": std::thread::available_parallelism().map(|n| n.get()).unwrap_or(0),
            "os": std::env::consts::OS,
        });
        let out = serde_json::json!({"machine": machine, "figures": json});
        let path =
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("target/sidekicks-bench.json");
        std::fs::write(&path, serde_json::to_string_pretty(&out).unwrap()).unwrap();
        println!("\nwritten to {}", path.display());
    }
}

fn percentile(sorted: &[f64], p: f64) -> f64 {
    let rank = (p / 100.0 * (sorted.len() - 1) as f64).round() as usize;
    sorted[rank.min(sorted.len() - 1)]
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

fn micros_now() -> u128 {
    micros(SystemTime::now())
}

fn micros(t: SystemTime) -> u128 {
    t.duration_since(UNIX_EPOCH).unwrap().as_micros()
}

fn env_or(name: &str, default: &str) -> String {
    std::env::var(name).unwrap_or_else(|_| default.to_owned())
}

/// Every version of the message `first` as `person` saw it (the post, then each edit):
/// when it was received and its text.
fn versions_of(person: &Person, first: &support::person::Seen) -> Vec<(SystemTime, String)> {
    let mut out = vec![(first.received, first.body.clone())];
    out.extend(
        person
            .edits_of(&first.event_id)
            .into_iter()
            .filter_map(|e| e.replaces.map(|(_, body)| (e.received, body))),
    );
    out
}

/// Every version of the `after`-th message `sender` posted in `room` (see [`versions_of`]).
/// For a reply to `%now`, the first line of the text is the agent's emission time (µs).
fn versions(person: &Person, room: &Room, sender: &str, after: usize) -> Vec<(SystemTime, String)> {
    match person.messages_from(room, sender).into_iter().nth(after) {
        Some(first) => versions_of(person, &first),
        None => Vec::new(),
    }
}

/// Every version of the `after`-th message `sender` posted in `room_id` as the raw client
/// saw it (the post, then each edit): when it was received and its text.
fn raw_versions(
    raw: &RawClient,
    room_id: &str,
    sender: &str,
    after: usize,
) -> Vec<(SystemTime, String)> {
    let events = raw.events();
    let Some(first) = events
        .iter()
        .filter(|e| e.room_id == room_id && e.sender == sender && e.replaces.is_none())
        .nth(after)
    else {
        return Vec::new();
    };
    let mut out = vec![(first.received, first.body.clone())];
    out.extend(
        events
            .iter()
            .filter(|e| e.replaces.as_deref() == Some(first.event_id.as_str()))
            .map(|e| (e.received, e.body.clone())),
    );
    out
}

/// How long the visible text lagged behind the agent, chunk by chunk: from the agent's
/// schedule (`emitted_at` + (k+1) × `every`) to the first version showing chunk k. Versions
/// start with `prefix` bytes before the streamed text.
fn chunk_lags(
    versions: &[(SystemTime, String)],
    prefix: usize,
    text: &str,
    size: usize,
    every: Duration,
    emitted_at: u128,
) -> Vec<Duration> {
    let chars: Vec<char> = text.chars().collect();
    let mut lags = Vec::new();
    for k in 0..chars.len().div_ceil(size) {
        let shown_len = prefix
            + chars[..((k + 1) * size).min(chars.len())]
                .iter()
                .map(|c| c.len_utf8())
                .sum::<usize>();
        let due = emitted_at + (k as u128 + 1) * every.as_micros();
        if let Some((at, _)) = versions.iter().find(|(_, t)| t.len() >= shown_len) {
            lags.push(Duration::from_micros(micros(*at).saturating_sub(due) as u64));
        }
    }
    lags
}

/// The longest of [`chunk_lags`].
fn max_lag(
    versions: &[(SystemTime, String)],
    prefix: usize,
    text: &str,
    size: usize,
    every: Duration,
    emitted_at: u128,
) -> Duration {
    chunk_lags(versions, prefix, text, size, every, emitted_at)
        .into_iter()
        .max()
        .unwrap_or_default()
}

/// Alice's own message with `body`, as her raw client received it (with the homeserver's
/// stamp).
async fn own_echo(alice: &RawClient, body: &str) -> RawEvent {
    wait_until(PATIENCE, "a message's own echo", || {
        alice.events().into_iter().find(|e| e.body == body)
    })
    .await
}

/// Resident memory of a process, in MiB.
fn rss_mib(pid: u32) -> f64 {
    status_mib(pid, "VmRSS:")
}

/// A memory figure (`field`, e.g. `RssFile:`) of `/proc/PID/status`, in MiB.
fn status_mib(pid: u32, field: &str) -> f64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    let kib: f64 = status
        .lines()
        .find_map(|l| l.strip_prefix(field))
        .and_then(|v| v.split_whitespace().next()?.parse().ok())
        .unwrap_or(0.0);
    kib / 1024.0
}

/// The processes whose parent is `pid`, and theirs, from `/proc`.
fn descendants(pid: u32) -> Vec<u32> {
    let mut children: BTreeMap<u32, Vec<u32>> = BTreeMap::new();
    for entry in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        let Some(child) = entry
            .file_name()
            .to_str()
            .and_then(|n| n.parse::<u32>().ok())
        else {
            continue;
        };
        let stat = std::fs::read_to_string(entry.path().join("stat")).unwrap_or_default();
        let after = stat.rsplit_once(')').map(|(_, r)| r).unwrap_or("");
        if let Some(parent) = after.split_whitespace().nth(1).and_then(|p| p.parse().ok()) {
            children.entry(parent).or_default().push(child);
        }
    }
    let mut out = Vec::new();
    let mut todo = vec![pid];
    while let Some(p) = todo.pop() {
        for &c in children.get(&p).into_iter().flatten() {
            out.push(c);
            todo.push(c);
        }
    }
    out
}

/// Resident memory of `pid`'s descendants together, in MiB.
fn descendants_mib(pid: u32) -> f64 {
    descendants(pid).into_iter().map(rss_mib).sum()
}

/// CPU time (user + system) a process has used.
fn cpu_time(pid: u32) -> Duration {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    let after = stat.rsplit_once(')').map(|(_, r)| r).unwrap_or("");
    let fields: Vec<&str> = after.split_whitespace().collect();
    let ticks: u64 = [11, 12]
        .iter()
        .filter_map(|&i| fields.get(i)?.parse::<u64>().ok())
        .sum();
    // SAFETY: sysconf only reads a configuration value.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) } as f64;
    Duration::from_secs_f64(ticks as f64 / hz.max(1.0))
}

/// A streamed reply's text: `lines` numbered lines.
fn stream_text(tag: &str, lines: usize) -> String {
    (0..lines)
        .map(|i| format!("{tag} line {i:04} of a streamed answer, padded to length.\n"))
        .collect()
}

/// The median of a figure's samples so far.
fn median_of(report: &Report, name: &str) -> f64 {
    percentile(&report.figures[name].sorted(), 50.0)
}

/// What a person feels, against the floor: the round trip from sending a message to the
/// first visible answer, for a plain bot that echoes at once (in a room of its own) and for
/// Sidekicks with the demo agent answering at once with one chunk. Each is seen by two
/// client implementations at once: the raw `/sync` client and matrix-sdk's.
async fn latency(
    env: &Env,
    clients: &LatencyClients,
    room: &Room,
    report: &mut Report,
    runs: usize,
) {
    let LatencyClients {
        alice,
        bot,
        bot_room,
        sdk_bot,
        sdk_bot_room,
    } = clients;
    let room_id = room.room_id().as_str();
    let settle = Duration::from_millis(300);
    for run in 0..runs {
        // The bot floor: a plain bot echoing at once.
        let echo = echo_round(alice, bot_room, &bot.user_id, &format!("{run}")).await;
        let sdk = wait_until(PATIENCE, "the echo in matrix-sdk", || {
            env.alice
                .messages_from(bot_room, &bot.user_id)
                .into_iter()
                .find(|m| m.body == echo.reply.body)
        })
        .await;
        let bot_raw = since(echo.sent, echo.reply.received);
        report.add("latency: bot floor round trip (raw client)", "ms", bot_raw);
        // The bot's own part, as the Sidekicks split below measures the gateway's: from the
        // message to the echo, both stamped by the homeserver.
        report.add(
            "latency: split, bot: message to echo, both at the homeserver",
            "ms",
            echo.part(),
        );
        report.add(
            "latency: bot floor round trip (matrix-sdk client)",
            "ms",
            since(echo.sent, sdk.received),
        );
        tokio::time::sleep(settle).await;

        // The same with a bot on matrix-sdk, syncing as the gateway does.
        let echo = echo_round(alice, sdk_bot_room, &sdk_bot.user_id, &format!("sdk {run}")).await;
        report.add(
            "latency: matrix-sdk bot round trip (raw client)",
            "ms",
            since(echo.sent, echo.reply.received),
        );
        report.add(
            "latency: split, matrix-sdk bot: message to echo, both at the homeserver",
            "ms",
            echo.part(),
        );
        tokio::time::sleep(settle).await;

        // Sidekicks, the agent answering at once with one chunk.
        let word = format!("pong-{run}-{}", micros_now());
        let prompt = format!("%say {word}");
        let sent = SystemTime::now();
        alice.send(room_id, &prompt).await;
        let raw = wait_until(PATIENCE, "the answer", || {
            alice
                .events()
                .into_iter()
                .find(|e| e.sender == env.agent && e.replaces.is_none() && e.body == word)
        })
        .await;
        let sdk = wait_until(PATIENCE, "the answer in matrix-sdk", || {
            env.alice
                .messages_from(room, &env.agent)
                .into_iter()
                .find(|m| m.body == word)
        })
        .await;
        let ours = since(sent, raw.received);
        // Where the time goes, from outside: the homeserver handing the prompt to a client
        // (Alice's own, raw), the gateway's part from the prompt to its reply, both stamped
        // by the homeserver (ms), and the reply on its way to Alice.
        let own = own_echo(alice, &prompt).await;
        report.add(
            "latency: split: prompt sent to a client having it",
            "ms",
            since(sent, own.received),
        );
        report.add(
            "latency: split: prompt to reply, both at the homeserver",
            "ms",
            raw.server_ts.saturating_sub(own.server_ts) as f64,
        );
        report.add(
            "latency: split: reply at the homeserver to the client",
            "ms",
            (micros(raw.received).saturating_sub(u128::from(raw.server_ts) * 1000)) as f64 / 1000.0,
        );
        report.add("latency: Sidekicks round trip (raw client)", "ms", ours);
        report.add(
            "latency: Sidekicks round trip (matrix-sdk client)",
            "ms",
            since(sent, sdk.received),
        );
        report.add(
            "latency: Sidekicks round trip to homeserver",
            "ms",
            (u128::from(raw.server_ts) * 1000).saturating_sub(micros(sent)) as f64 / 1000.0,
        );
        report.add(
            "latency: round trip ratio to the bot (per run)",
            "×",
            ours / bot_raw.max(0.001),
        );
        tokio::time::sleep(settle).await;

        // From the agent emitting its first chunk (after a second of "thinking", as real
        // agents take) to each client receiving the reply.
        let sent = SystemTime::now();
        alice.send(room_id, "%sleep 1000\n%now").await;
        let raw = wait_until(PATIENCE, "the stamped reply", || {
            alice.events().into_iter().find(|e| {
                e.sender == env.agent
                    && e.replaces.is_none()
                    && micros(e.received) > micros(sent)
                    && e.body.trim().parse::<u128>().is_ok()
            })
        })
        .await;
        let emitted: u128 = raw.body.trim().parse().unwrap();
        let sdk = wait_until(PATIENCE, "the stamped reply in matrix-sdk", || {
            env.alice
                .messages_from(room, &env.agent)
                .into_iter()
                .find(|m| m.event_id == raw.event_id)
        })
        .await;
        let after = |t: SystemTime| micros(t).saturating_sub(emitted) as f64 / 1000.0;
        report.add(
            "latency: agent first chunk to client (raw client)",
            "ms",
            after(raw.received),
        );
        report.add(
            "latency: agent first chunk to client (matrix-sdk client)",
            "ms",
            after(sdk.received),
        );
        report.add(
            "latency: agent first chunk to homeserver",
            "ms",
            (u128::from(raw.server_ts) * 1000).saturating_sub(emitted) as f64 / 1000.0,
        );
        tokio::time::sleep(settle).await;
    }
    // The gateway's log (debug level, with microsecond timestamps) shows where the time
    // of each turn goes.
    if let Ok(path) = std::env::var("SIDEKICKS_BENCH_LOG") {
        std::fs::write(&path, env.gw.log()).unwrap();
        eprintln!("the gateway's log is in {path}");
    }
    let ours = median_of(report, "latency: Sidekicks round trip (raw client)");
    for (floor, name) in [
        ("latency: bot floor round trip (raw client)", "the bot"),
        (
            "latency: matrix-sdk bot round trip (raw client)",
            "the matrix-sdk bot",
        ),
    ] {
        let ratio = ours / median_of(report, floor);
        report.add(
            &format!("latency: round trip ratio to {name} (of medians)"),
            "×",
            ratio,
        );
    }
}

/// Milliseconds from `from` to `to`.
fn since(from: SystemTime, to: SystemTime) -> f64 {
    ms(to.duration_since(from).unwrap_or_default())
}

/// One round trip to an echo bot, as Alice's raw client saw it.
struct EchoRound {
    /// When Alice sent `echo …`.
    sent: SystemTime,
    /// Her message as her own client received it (for its homeserver stamp).
    own: RawEvent,
    /// The bot's echo as her client received it.
    reply: RawEvent,
}

impl EchoRound {
    /// The bot's own part: from the message to the echo, both stamped by the homeserver (ms).
    fn part(&self) -> f64 {
        self.reply.server_ts.saturating_sub(self.own.server_ts) as f64
    }
}

/// Alice (raw) sends `echo TAG …` in `room`, where the bot `bot` answers it.
async fn echo_round(alice: &RawClient, room: &Room, bot: &str, tag: &str) -> EchoRound {
    let text = format!("echo {tag} {}", micros_now());
    let want = format!("echoed: {text}");
    let sent = SystemTime::now();
    alice.send(room.room_id().as_str(), &text).await;
    let reply = wait_until(PATIENCE, &format!("{bot}'s echo"), || {
        alice
            .events()
            .into_iter()
            .find(|e| e.sender == bot && e.body == want)
    })
    .await;
    let own = own_echo(alice, &text).await;
    EchoRound { sent, own, reply }
}

/// The latency figures' own clients: Alice's raw client, the two echo bots and their rooms.
struct LatencyClients {
    alice: RawClient,
    bot: RawClient,
    bot_room: Room,
    sdk_bot: SdkBot,
    sdk_bot_room: Room,
}

impl LatencyClients {
    /// Logs Alice in again (raw), and a user of its own as each echo bot (no other client
    /// of it syncs), each in a room of Alice's and its own.
    async fn start(env: &Env) -> Self {
        let alice = RawClient::login(&env.hs.url, &env.alice.user_id, "alice-password").await;
        let bot_id = env.hs.register("echo-bot", "echo-password").await;
        let bot = RawClient::echo_bot(&env.hs.url, &bot_id, "echo-password").await;
        let bot_room = env.alice.create_room(false).await;
        env.alice.invite(&bot_room, &bot_id).await;
        bot.join(bot_room.room_id().as_str()).await;
        let sdk_bot_id = env.hs.register("sdk-echo-bot", "echo-password").await;
        let delay = env_or("SIDEKICKS_BENCH_SDK_BOT_DELAY_MS", "0")
            .parse()
            .expect("SIDEKICKS_BENCH_SDK_BOT_DELAY_MS: a whole number of milliseconds");
        let sdk_bot = SdkBot::start(
            &env.hs.url,
            &sdk_bot_id,
            "echo-password",
            Duration::from_millis(delay),
        )
        .await;
        let sdk_bot_room = env.alice.create_room(false).await;
        env.alice.invite(&sdk_bot_room, &sdk_bot_id).await;
        sdk_bot.join(sdk_bot_room.room_id()).await;
        for (room, id) in [(&bot_room, &bot_id), (&sdk_bot_room, &sdk_bot_id)] {
            env.alice
                .wait_membership(room, id, matrix_sdk::RoomMemberships::JOIN)
                .await;
        }
        Self {
            alice,
            bot,
            bot_room,
            sdk_bot,
            sdk_bot_room,
        }
    }
}

async fn economy(env: &Env, bob: &Person, room: &Room, report: &mut Report, runs: usize) {
    let (size, every) = (50, Duration::from_millis(100));
    let bob_room = bob.client.get_room(room.room_id()).unwrap();
    for run in 0..runs {
        let text = stream_text(&format!("r{run}"), 180); // 9,540 characters in 191 chunks: 19 s
        let before = env.alice.messages_from(room, &env.agent).len();
        env.alice
            .send(
                room,
                &format!("%now\n%stream {} {size}\n{text}", every.as_millis()),
            )
            .await;
        let vs = wait_until(PATIENCE * 2, "the complete streamed reply", || {
            let vs = versions(&env.alice, room, &env.agent, before);
            vs.last()
                .is_some_and(|(_, t)| t.ends_with(&text))
                .then_some(vs)
        })
        .await;
        let final_text = &vs.last().unwrap().1;
        let (stamp, body) = final_text.split_once('\n').unwrap();
        let emitted: u128 = stamp.parse().unwrap_or(0);
        report.add(
            "economy: events per 9,540-char reply",
            "events",
            vs.len() as f64,
        );
        report.add(
            "economy: final text identical (1 = yes)",
            "bool",
            f64::from(u8::from(body == text)),
        );
        let lag = max_lag(&vs, stamp.len() + 1, &text, size, every, emitted);
        report.add("economy: longest lag of the visible text", "ms", ms(lag));

        // The naive strategy, same text and pace: one edit per chunk, by a plain client.
        let chars: Vec<char> = text.chars().collect();
        let started = micros_now();
        let mut shown = String::new();
        let mut event_id: Option<String> = None;
        for chunk in chars.chunks(size) {
            tokio::time::sleep(every).await;
            shown.extend(chunk);
            match &event_id {
                None => event_id = Some(bob.send(&bob_room, &shown).await),
                Some(id) => bob.send_edit(&bob_room, id, &shown).await,
            }
        }
        let id = event_id.unwrap();
        let naive = wait_until(PATIENCE * 2, "the naive reply", || {
            (env.alice.current_text(&id).as_deref() == Some(text.as_str())).then(|| {
                let first = env
                    .alice
                    .messages_from(room, &bob.user_id)
                    .into_iter()
                    .find(|m| m.event_id == id)
                    .unwrap();
                versions_of(&env.alice, &first)
            })
        })
        .await;
        report.add(
            "economy: naive events per reply (one edit per chunk)",
            "events",
            naive.len() as f64,
        );
        report.add(
            "economy: naive longest lag",
            "ms",
            ms(max_lag(&naive, 0, &text, size, every, started)),
        );
    }
}

async fn cold_start(report: &mut Report, runs: usize) {
    for _ in 0..runs {
        // The homeserver, the accounts and the room are ready first: only the gateway's own
        // start is timed.
        let hs = support::Synapse::start(homeserver()).await;
        let alice_id = hs.register("alice", "alice-password").await;
        let agent = hs.register("demo", "demo-password").await;
        let alice = Person::login(&hs.url, &alice_id, "alice-password").await;
        let room = alice.create_room(false).await;
        let spec = AgentSpec {
            id: "demo".into(),
            user_id: agent.clone(),
            password: "demo-password".into(),
            demo_args: vec![],
            agent_toml: String::new(),
        };
        let started = Instant::now();
        let mut gw = GatewayProcess::start(&hs.url, &[alice_id.as_str()], &[spec], "");
        let running = wait_until(PATIENCE, "the gateway running", || {
            gw.log()
                .contains("Sidekicks is running")
                .then(|| started.elapsed())
        })
        .await;
        alice.invite(&room, &agent).await;
        alice
            .wait_membership(&room, &agent, matrix_sdk::RoomMemberships::JOIN)
            .await;
        alice.send(&room, "%say hi").await;
        wait_until(PATIENCE, "the first answer", || {
            (!alice.messages_from(&room, &agent).is_empty()).then_some(())
        })
        .await;
        report.add(
            "cold start: fresh state, to running (logged in)",
            "ms",
            ms(running),
        );
        report.add(
            "cold start: fresh state, to first answer (after an invite)",
            "ms",
            ms(started.elapsed()),
        );
        gw.stop();
        let restarted = Instant::now();
        gw.start_again();
        alice.send(&room, "%say again").await;
        wait_until(PATIENCE, "the answer after the restart", || {
            alice
                .messages_from(&room, &agent)
                .iter()
                .any(|m| m.body == "again")
                .then_some(())
        })
        .await;
        report.add(
            "cold start: existing state, to first answer",
            "ms",
            ms(restarted.elapsed()),
        );
    }
}

/// Agents logged in for the footprint figures.
const AGENTS: usize = 10;

async fn footprint(report: &mut Report) {
    let hs = support::Synapse::start(homeserver()).await;
    let alice_id = hs.register("alice", "alice-password").await;
    let mut agents = Vec::new();
    for i in 0..AGENTS {
        let user_id = hs.register(&format!("agent{i}"), "agent-password").await;
        agents.push(AgentSpec {
            id: format!("agent{i}"),
            user_id,
            password: "agent-password".into(),
            demo_args: vec![],
            agent_toml: String::new(),
        });
    }
    let gw = GatewayProcess::start(&hs.url, &[alice_id.as_str()], &agents, "");
    wait_until(PATIENCE, "every agent logged in", || {
        gw.log().contains("Sidekicks is running").then_some(())
    })
    .await;
    tokio::time::sleep(Duration::from_secs(3)).await;
    let pid = gw.pid().unwrap();
    let at_start = rss_mib(pid);
    report.add(
        &format!("footprint: RSS at start, {AGENTS} agents logged in"),
        "MiB",
        at_start,
    );
    report.add(
        "footprint: of it, mapped from files (mostly the binary's code)",
        "MiB",
        status_mib(pid, "RssFile:"),
    );
    let alice = Person::login(&hs.url, &alice_id, "alice-password").await;
    let agent = agents[0].user_id.clone();
    let sessions = 10;
    let mut rooms = Vec::new();
    for _ in 0..sessions {
        let room = alice.create_room(false).await;
        alice.invite(&room, &agent).await;
        alice
            .wait_membership(&room, &agent, matrix_sdk::RoomMemberships::JOIN)
            .await;
        alice.send(&room, "%say ok").await;
        rooms.push(room);
    }
    for room in &rooms {
        wait_until(PATIENCE, "every session answered", || {
            (!alice.messages_from(room, &agent).is_empty()).then_some(())
        })
        .await;
    }
    let with_sessions = rss_mib(pid);
    report.add(
        "footprint: RSS growth per active session",
        "MiB",
        (with_sessions - at_start) / sessions as f64,
    );
    let turns = 100;
    for i in 0..turns {
        alice.send(&rooms[0], &format!("%say turn {i}")).await;
        let want = format!("turn {i}");
        wait_until(PATIENCE, "the turn", || {
            alice
                .messages_from(&rooms[0], &agent)
                .iter()
                .any(|m| m.body == want)
                .then_some(())
        })
        .await;
    }
    let with_turns = rss_mib(pid);
    report.add(
        "footprint: RSS growth per 1,000 transcript turns",
        "MiB",
        (with_turns - with_sessions) * 1000.0 / turns as f64,
    );
}

async fn load(rooms_count: usize, at_once: bool, report: &mut Report) {
    let (env, _store) = start_env().await;
    // The staleness as a raw client sees it too: matrix-sdk's client waits a second
    // between two syncs less than a second apart, which a busy room always is.
    let raw = RawClient::login(&env.hs.url, &env.alice.user_id, "alice-password").await;
    let mut rooms = Vec::new();
    for _ in 0..rooms_count {
        rooms.push(env.room_with_agent(false).await);
    }
    let (size, every, lines) = (40, Duration::from_millis(100), 40); // ~2,400 chars, 6 s each
    let pid = env.gw.pid().unwrap();
    let cpu_before = cpu_time(pid);
    let texts: Vec<String> = (0..rooms.len())
        .map(|r| stream_text(&format!("room {r}"), lines))
        .collect();
    let started = Instant::now();
    let prompt = |text: &str| format!("%now\n%stream {} {size}\n{text}", every.as_millis());
    match at_once {
        // Every prompt sent at the same moment, as a team's burst: the gateway takes 200
        // turns in at once, with one agent process streaming all of them.
        true => {
            let prompts: Vec<String> = texts.iter().map(|text| prompt(text)).collect();
            let sends = (rooms.iter().zip(&prompts)).map(|(room, p)| env.alice.send(room, p));
            futures::future::join_all(sends).await;
        }
        false => {
            for (room, text) in rooms.iter().zip(&texts) {
                env.alice.send(room, &prompt(text)).await;
            }
        }
    }
    let mut lags = Vec::new();
    let mut raw_lags = Vec::new();
    let mut complete = 0;
    // From each prompt to its reply's final edit, both as the homeserver stamped them:
    // when the whole reply is there for anyone to read, without any client's sync.
    let mut finals = Vec::new();
    for (room, text) in rooms.iter().zip(&texts) {
        let vs = wait_until(PATIENCE * 5, "every reply", || {
            let vs = versions(&env.alice, room, &env.agent, 0);
            vs.last()
                .is_some_and(|(_, t)| t.ends_with(text.as_str()))
                .then_some(vs)
        })
        .await;
        let (stamp, body) = vs
            .last()
            .unwrap()
            .1
            .split_once('\n')
            .map(|(a, b)| (a.to_owned(), b.to_owned()))
            .unwrap();
        complete += usize::from(body == *text);
        finals.push(final_at_homeserver(&env, room));
        let emitted: u128 = stamp.parse().unwrap_or(0);
        lags.extend(
            chunk_lags(&vs, stamp.len() + 1, text, size, every, emitted)
                .into_iter()
                .map(ms),
        );
        let raw_vs = wait_until(PATIENCE, "every reply, raw", || {
            let vs = raw_versions(&raw, room.room_id().as_str(), &env.agent, 0);
            vs.iter()
                .any(|(_, t)| t.ends_with(text.as_str()))
                .then_some(vs)
        })
        .await;
        raw_lags.extend(
            chunk_lags(&raw_vs, stamp.len() + 1, text, size, every, emitted)
                .into_iter()
                .map(ms),
        );
    }
    let elapsed = started.elapsed();
    let cpu = cpu_time(pid).saturating_sub(cpu_before);
    let chunks = rooms.len() * texts[0].chars().count().div_ceil(size);
    // The agent streams for this long after its `%now` second of thinking.
    let stream =
        ms(every * texts[0].chars().count().div_ceil(size) as u32 + Duration::from_secs(1));
    finals.sort_by(f64::total_cmp);
    lags.sort_by(f64::total_cmp);
    raw_lags.sort_by(f64::total_cmp);
    let group = match at_once {
        true => "burst",
        false => "load",
    };
    let label = |what: &str| match at_once {
        true => format!("burst {rooms_count} rooms at once: {what}"),
        false => format!("load {rooms_count} rooms: {what}"),
    };
    report.add(
        &label("replies complete and identical"),
        "%",
        100.0 * complete as f64 / rooms.len() as f64,
    );
    for (client, lags) in [("raw client", &raw_lags), ("matrix-sdk client", &lags)] {
        for p in [50.0, 95.0] {
            let name = label(&format!("staleness p{p} ({client})"));
            report.add(&name, "ms", percentile(lags, p));
        }
    }
    for p in [50.0, 95.0, 100.0] {
        report.add(
            &label(&format!(
                "final edit at the homeserver p{p}, past the stream's end"
            )),
            "ms",
            percentile(&finals, p) - stream,
        );
    }
    report.add(
        &label("gateway CPU per 1,000 chunks"),
        "ms",
        ms(cpu) * 1000.0 / chunks as f64,
    );
    report.add(
        &label("wall time for all replies"),
        "s",
        elapsed.as_secs_f64(),
    );
    keep_logs(&env, &format!("{group}{rooms_count}"));
}

/// In `room`, from Alice's last prompt to the final version of the agent's reply to it,
/// both as the homeserver stamped them (ms).
fn final_at_homeserver(env: &Env, room: &Room) -> f64 {
    let prompt = (env
        .alice
        .messages_from(room, &env.alice.user_id)
        .into_iter())
    .filter(|m| m.replaces.is_none())
    .map(|m| m.server_ts)
    .max()
    .unwrap_or(0);
    let reply =
        (env.alice.messages_from(room, &env.agent).into_iter()).rfind(|m| m.replaces.is_none());
    let last = reply.map_or(0, |r| {
        (env.alice.edits_of(&r.event_id).iter())
            .map(|e| e.server_ts)
            .chain([r.server_ts])
            .max()
            .unwrap_or(0)
    });
    last.saturating_sub(prompt) as f64
}

/// A backlog in one room: the gateway is killed, `count` prompts are sent to one room, and
/// it is started again. Compared by the homeserver's timestamps: how long the prompts took
/// to arrive (first to last) and how long from the start to the last answer.
async fn backlog(report: &mut Report, runs: usize, count: usize) {
    let (mut env, _store) = start_env().await;
    let room = env.room_with_agent(false).await;
    for run in 0..runs {
        let before = env.alice.messages_from(&room, &env.agent).len();
        let prompts_before = env.alice.messages_from(&room, &env.alice.user_id).len();
        env.gw.kill();
        for n in 0..count {
            env.alice
                .send(&room, &format!("%say run {run} answer {n}"))
                .await;
        }
        let prompts: Vec<u64> = (env
            .alice
            .messages_from(&room, &env.alice.user_id)
            .into_iter())
        .skip(prompts_before)
        .map(|m| m.server_ts)
        .collect();
        let arrival = prompts.last().copied().unwrap_or(0) - prompts.first().copied().unwrap_or(0);
        let started = micros_now() / 1000;
        env.gw.start_again();
        let answers = wait_until(PATIENCE * 10, "every answer of the backlog", || {
            let answers: Vec<_> = (env.alice.messages_from(&room, &env.agent).into_iter())
                .skip(before)
                .filter(|m| m.replaces.is_none())
                .filter_map(|m| Some((env.alice.current_text(&m.event_id)?, m.server_ts)))
                .filter(|(text, _)| text.starts_with(&format!("run {run} ")))
                .collect();
            (answers.len() >= count).then_some(answers)
        })
        .await;
        let in_order = answers
            .iter()
            .enumerate()
            .all(|(n, (text, _))| *text == format!("run {run} answer {n}"));
        let last = answers.iter().map(|(_, ts)| *ts).max().unwrap_or(0);
        let answered = last.saturating_sub(started as u64);
        let label = |what: &str| format!("backlog of {count} in one room: {what}");
        report.add(
            &label("arrival at the homeserver"),
            "s",
            arrival as f64 / 1000.0,
        );
        report.add(
            &label("start to the last answer at the homeserver"),
            "s",
            answered as f64 / 1000.0,
        );
        report.add(
            &label("answering / arrival"),
            "×",
            answered as f64 / arrival.max(1) as f64,
        );
        report.add(
            &label("answered once and in order"),
            "%",
            100.0 * f64::from(u8::from(in_order && answers.len() == count)),
        );
    }
    keep_logs(&env, "backlog");
}

/// With `SIDEKICKS_BENCH_LOG` set, keeps the gateway's and the homeserver's logs of a
/// figure group beside it (`<file>.<group>.gateway`, `<file>.<group>.synapse`): Synapse's
/// access log gives each request's processing time, the gateway's each turn's steps.
fn keep_logs(env: &Env, group: &str) {
    let Ok(path) = std::env::var("SIDEKICKS_BENCH_LOG") else {
        return;
    };
    let gateway = format!("{path}.{group}.gateway");
    let synapse = format!("{path}.{group}.synapse");
    std::fs::write(&gateway, env.gw.log()).unwrap();
    let _ = std::fs::copy(env.hs.dir.path().join("synapse.log"), &synapse);
    eprintln!("the {group} logs are in {gateway} and {synapse}");
}

/// Each agent runner beside the local one (bubblewrap): the round trip of an instant answer
/// (the gateway's part, prompt to reply as the homeserver stamped both), how long the agent
/// process takes to start and answer `initialize` (from the gateway's log), and the memory
/// the agent's side holds (its process tree; for a container, also the engine's monitor and
/// the container's processes, for the SSH runner the host's session, helper and agent,
/// which are not the gateway's children).
async fn runners(report: &mut Report, runs: usize) {
    let mut kinds = vec![("local", String::new())];
    match support::container::agent_image() {
        Some(image) => kinds.push(("container", support::container::in_container(image, ""))),
        None => eprintln!("no container engine here: the container runner is not measured"),
    }
    // The SSH runner against an sshd on loopback: the gateway's side and the host's are on
    // the same cores, so the figures are the runner's own costs (ssh, the helper), not a
    // network's.
    let sshd = support::sshd::Sshd::start();
    if let Some(sshd) = &sshd {
        kinds.push((
            "ssh",
            sshd.agent_toml(&[sshd.destination()], &sshd.remote()),
        ));
    }
    for (kind, agent_toml) in kinds {
        let env = Env::start_with_agent_toml(homeserver(), "", &agent_toml).await;
        let room = env.room_with_agent(false).await;
        let log = env.gw.log();
        let stamp = |line: &str| -> Option<f64> {
            let at = log
                .lines()
                .find(|l| l.contains(line))?
                .split_whitespace()
                .next()?;
            let t: jiff::Timestamp = at.parse().ok()?;
            Some(t.as_millisecond() as f64)
        };
        if let (Some(from), Some(to)) = (stamp("sandbox: "), stamp("agent initialised")) {
            report.add(
                &format!("runner {kind}: agent start to initialize answered"),
                "ms",
                to - from,
            );
        }
        for n in 0..runs * 10 {
            let word = format!("rt{n}");
            env.prompt_and_wait(&room, &format!("%say {word}"), &word)
                .await;
            let prompt = last_prompt_stamp(&env, &room);
            let reply = (env.alice.messages_from(&room, &env.agent).into_iter())
                .rfind(|m| m.replaces.is_none())
                .map_or(0, |m| m.server_ts);
            report.add(
                &format!("runner {kind}: prompt to reply at the homeserver"),
                "ms",
                reply.saturating_sub(prompt) as f64,
            );
        }
        // A turn that has the gateway read one file of its folder (`fs/read_text_file`):
        // at home a read by handle, on another host an exchange with the helper there.
        env.alice
            .send(&room, "%write bench-read.txt read-me\n%say written")
            .await;
        env.reply_where(&room, "the file written", |t| t.contains("written"))
            .await;
        for n in 0..runs * 10 {
            let word = format!("fr{n}");
            let asked = format!("%fs-read bench-read.txt\n%say {word}");
            env.alice.send(&room, &asked).await;
            let said = env
                .reply_where(&room, "the file read", |t| t.contains(&word))
                .await;
            assert!(said.contains("7 chars: read-me"), "{said}");
            let prompt = last_prompt_stamp(&env, &room);
            // The first version of the answer (its post or an edit) that holds it whole.
            let reply = (env.alice.messages_from(&room, &env.agent).into_iter())
                .filter(|m| m.body.contains(&word))
                .map(|m| m.server_ts)
                .min()
                .unwrap_or(0);
            report.add(
                &format!("runner {kind}: prompt to reply, reading one file through the gateway"),
                "ms",
                reply.saturating_sub(prompt) as f64,
            );
        }
        let gateway = env.gw.pid().unwrap();
        let mut agent_side = descendants_mib(gateway);
        if kind == "container" {
            let state = env.gw.dir.path().join("state");
            for name in support::container::containers(&state) {
                let conmon = support::container::inspect(&name, "{{.State.ConmonPid}}");
                // A container that has stopped has no monitor (0): nothing to count.
                if let Ok(pid @ 1..) = conmon.parse::<u32>() {
                    agent_side += rss_mib(pid) + descendants_mib(pid);
                }
            }
        }
        // On its host: the session's sshd, the helper and the agent.
        if let (Some(sshd), "ssh") = (&sshd, kind) {
            agent_side += descendants_mib(sshd.pid());
        }
        report.add(
            &format!("runner {kind}: agent side resident memory"),
            "MiB",
            agent_side,
        );
    }
}

/// The homeserver's stamp of Alice's last message in `room`.
fn last_prompt_stamp(env: &Env, room: &Room) -> u64 {
    (env.alice
        .messages_from(room, &env.alice.user_id)
        .into_iter())
    .rfind(|m| m.replaces.is_none())
    .map_or(0, |m| m.server_ts)
}

/// The agent's messages in `rooms` that Alice received after the first `before` of each.
fn new_answers(env: &Env, rooms: &[Room], before: &[usize]) -> Vec<support::person::Seen> {
    rooms
        .iter()
        .zip(before)
        .flat_map(|(room, before)| {
            env.alice
                .messages_from(room, &env.agent)
                .into_iter()
                .skip(*before)
        })
        .collect()
}

/// Catching up after an outage: the gateway is killed, 50 messages are sent to each of 10
/// rooms, and it is started again. Timed from the start to the last answer, with the
/// gateway's resident memory sampled meanwhile.
async fn catch_up(report: &mut Report, runs: usize) {
    let (rooms_count, per_room) = (10, 50);
    let (mut env, _store) = start_env().await;
    let mut rooms = Vec::new();
    for _ in 0..rooms_count {
        rooms.push(env.room_with_agent(false).await);
    }
    for run in 0..runs {
        let answered_before: Vec<usize> = rooms
            .iter()
            .map(|room| env.alice.messages_from(room, &env.agent).len())
            .collect();
        env.gw.kill();
        for n in 0..per_room {
            for (r, room) in rooms.iter().enumerate() {
                env.alice
                    .send(room, &format!("%say run {run} room {r} message {n}"))
                    .await;
            }
        }
        let started = Instant::now();
        let started_at = SystemTime::now();
        env.gw.start_again();
        let pid = env.gw.pid().unwrap();
        let mut peak = 0.0f64;
        let mut first = None;
        loop {
            peak = peak.max(rss_mib(pid));
            let answered = new_answers(&env, &rooms, &answered_before).len();
            if answered > 0 && first.is_none() {
                first = Some(started.elapsed());
            }
            if answered >= rooms_count * per_room {
                break;
            }
            assert!(
                started.elapsed() < PATIENCE * 10,
                "the backlog was not answered ({answered} of {})",
                rooms_count * per_room
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        let elapsed = started.elapsed();
        // The first answer as the homeserver stamped it: the gateway's own part, without
        // the watching client's sync (matrix-sdk's client sleeps up to a second between
        // syncs, which the figure above carries).
        let first_stamp = new_answers(&env, &rooms, &answered_before)
            .iter()
            .map(|m| m.server_ts)
            .min()
            .unwrap();
        let total = (rooms_count * per_room) as f64;
        report.add(
            "catch-up 500 msgs / 10 rooms: start to last answer",
            "s",
            elapsed.as_secs_f64(),
        );
        report.add(
            "catch-up 500 msgs / 10 rooms: start to first answer",
            "ms",
            ms(first.unwrap_or(elapsed)),
        );
        report.add(
            "catch-up 500 msgs / 10 rooms: start to first answer at the homeserver",
            "ms",
            (u128::from(first_stamp) * 1000).saturating_sub(micros(started_at)) as f64 / 1000.0,
        );
        report.add(
            "catch-up 500 msgs / 10 rooms: messages answered per second",
            "msg/s",
            total / elapsed.as_secs_f64(),
        );
        report.add(
            "catch-up 500 msgs / 10 rooms: peak gateway RSS",
            "MiB",
            peak,
        );
    }
}

/// The homeserver every group runs against: SQLite by default (as the tests), or with
/// `SIDEKICKS_BENCH_SYNAPSE_DB=postgres` a PostgreSQL database of its own, as Synapse is
/// deployed (SQLite's one writer is what many rooms at once wait on).
fn homeserver() -> SynapseOptions {
    let postgres = match env_or("SIDEKICKS_BENCH_SYNAPSE_DB", "sqlite").as_str() {
        "sqlite" => false,
        "postgres" => true,
        other => panic!("SIDEKICKS_BENCH_SYNAPSE_DB is `sqlite` or `postgres`, not `{other}`"),
    };
    SynapseOptions {
        postgres,
        deployed_password_hashing: true,
        ..SynapseOptions::default()
    }
}

/// The gateway's own store in the groups that send many messages (latency, economy, load,
/// burst, backlog, catch-up): its SQLite file by default, or with
/// `SIDEKICKS_BENCH_STORE=postgres` a database on a throwaway PostgreSQL cluster on the same
/// cores, as `store = "postgres://…"` configures it.
fn gateway_store() -> StoreKind {
    match env_or("SIDEKICKS_BENCH_STORE", "sqlite").as_str() {
        "sqlite" => StoreKind::Sqlite,
        "postgres" => StoreKind::Postgres,
        other => panic!("SIDEKICKS_BENCH_STORE is `sqlite` or `postgres`, not `{other}`"),
    }
}

/// The homeserver and the gateway of a group, with the gateway's store
/// ([`gateway_store`]); the store goes last, after the gateway has stopped.
async fn start_env() -> (Env, TestStore) {
    let store = TestStore::start(gateway_store()).await;
    let env = Env::start(homeserver(), &store.config("")).await;
    (env, store)
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    // `cargo bench` passes `--bench`; nothing else is taken from the command line.
    let runs: usize = env_or("SIDEKICKS_BENCH_RUNS", "5")
        .parse()
        .unwrap_or(5)
        .max(1);
    let only = env_or(
        "SIDEKICKS_BENCH_ONLY",
        "latency,economy,cold,footprint,load,burst,runners,backlog,catchup",
    );
    let wants = |group: &str| only.split(',').any(|g| g.trim() == group);
    eprintln!("the gateway's store: {:?}", gateway_store());
    eprintln!(
        "homeserver database: {}",
        match homeserver().postgres {
            true => "PostgreSQL",
            false => "SQLite",
        }
    );
    let mut report = Report::default();
    if wants("latency") || wants("economy") {
        let (env, _store) = start_env().await;
        if wants("latency") {
            eprintln!("measuring latency ({runs} runs)…");
            // Each responder in one room, of its own with Alice alone, so that the
            // homeserver wakes as many syncs for a message in either room (Alice's two
            // clients and the responder's), and computes a sync of as many rooms for each
            // responder. (Bob's clients in the agent's room would make it wake two more
            // for the prompt than for the bot's message.)
            let agent_room = env.room_with_agent(false).await;
            let clients = LatencyClients::start(&env).await;
            latency(&env, &clients, &agent_room, &mut report, runs).await;
        }
        if wants("economy") {
            let bob_id = env.hs.register("bob", "bob-password").await;
            let room = env.room_with_agent(false).await;
            env.alice.invite(&room, &bob_id).await;
            let bob = Person::login(&env.hs.url, &bob_id, "bob-password").await;
            bob.join(room.room_id().as_str()).await;
            let economy_runs = runs.min(3);
            eprintln!("measuring edit economy ({economy_runs} runs of ~20 s)…");
            economy(&env, &bob, &room, &mut report, economy_runs).await;
        }
    }
    if wants("cold") {
        let cold_runs = runs.min(3);
        eprintln!("measuring cold starts ({cold_runs} runs)…");
        cold_start(&mut report, cold_runs).await;
    }
    if wants("footprint") {
        eprintln!("measuring footprint…");
        footprint(&mut report).await;
    }
    // The load sends its prompts one room after another, the burst all at the same moment.
    for (group, sizes, default, at_once) in [
        ("load", "SIDEKICKS_BENCH_ROOMS", "50", false),
        ("burst", "SIDEKICKS_BENCH_BURST", "200", true),
    ] {
        if !wants(group) {
            continue;
        }
        for rooms in env_or(sizes, default)
            .split(',')
            .filter_map(|r| r.trim().parse().ok())
        {
            eprintln!("measuring {group} with {rooms} rooms…");
            load(rooms, at_once, &mut report).await;
        }
    }
    if wants("runners") {
        eprintln!("measuring each agent runner ({runs} × 10 round trips)…");
        runners(&mut report, runs).await;
    }
    if wants("backlog") {
        let backlog_runs = runs.min(3);
        eprintln!("measuring a backlog of 200 prompts in one room ({backlog_runs} runs)…");
        backlog(&mut report, backlog_runs, 200).await;
    }
    if wants("catchup") {
        let catch_up_runs = runs.min(3);
        eprintln!("measuring a catch-up of 500 messages in 10 rooms ({catch_up_runs} runs)…");
        catch_up(&mut report, catch_up_runs).await;
    }
    report.print_and_save();
}
