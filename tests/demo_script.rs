#![recursion_limit = "256"]
//! `scripts/demo.sh` as a new user runs it: it brings Synapse and the gateway up, behind a
//! proxy set for the outside world too; a signal to the script (not only Ctrl-C) stops
//! everything it started; and when Synapse cannot start, it says why and ends.

mod support;

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// The live processes (zombies not counted) whose command line mentions `dir`.
fn started_in(dir: &Path) -> Vec<(u32, String)> {
    let wanted = dir.to_string_lossy().into_owned();
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let cmdline = std::fs::read(entry.path().join("cmdline")).unwrap_or_default();
        let cmdline = String::from_utf8_lossy(&cmdline).replace('\0', " ");
        let stat = std::fs::read_to_string(entry.path().join("stat")).unwrap_or_default();
        if cmdline.contains(&wanted) && !stat.contains(") Z") {
            found.push((pid, cmdline));
        }
    }
    found
}

/// Waits up to `limit` for `done`.
fn wait_for(limit: Duration, mut done: impl FnMut() -> bool) -> bool {
    let start = Instant::now();
    while start.elapsed() < limit {
        if done() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(200));
    }
    done()
}

/// One run of the demo script in a folder of its own, its output in a log there.
struct Demo {
    dir: tempfile::TempDir,
    port: u16,
    script: std::process::Child,
}

impl Demo {
    /// Starts the script on `port` with `env` added to the test's environment.
    fn start(port: u16, env: &[(&str, &str)]) -> Self {
        Self::start_seeded(port, env, |_| {})
    }

    /// [`Demo::start`] in a folder `seed` has written in first (a demo's earlier state).
    fn start_seeded(port: u16, env: &[(&str, &str)], seed: fn(&Path)) -> Self {
        let dir = tempfile::Builder::new()
            .prefix("sidekicks-demo-script-")
            .tempdir_in(env!("CARGO_TARGET_TMPDIR"))
            .unwrap();
        seed(dir.path());
        let log = std::fs::File::create(dir.path().join("demo-script.log")).unwrap();
        let script = Command::new("bash")
            .arg(concat!(env!("CARGO_MANIFEST_DIR"), "/scripts/demo.sh"))
            .env("SIDEKICKS_DEMO_DIR", dir.path())
            .env("SIDEKICKS_DEMO_PORT", port.to_string())
            .env("SIDEKICKS_SYNAPSE_VENV", support::synapse::venv())
            .env("SIDEKICKS_BIN", support::gateway::binary())
            .envs(env.iter().copied())
            .stdin(Stdio::null())
            .stdout(log.try_clone().unwrap())
            .stderr(log)
            .spawn()
            .unwrap();
        Demo { dir, port, script }
    }

    /// What the script has printed so far.
    fn printed(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("demo-script.log")).unwrap_or_default()
    }

    /// What the script printed, and the logs beside it: Synapse's end and the accounts'.
    fn log(&self) -> String {
        let read = |name: &str| std::fs::read_to_string(self.dir.path().join(name));
        let mut all = self.printed();
        let synapse = read("synapse/synapse.log").unwrap_or_default();
        let lines: Vec<&str> = synapse.lines().collect();
        let tail = lines[lines.len().saturating_sub(20)..].join("\n");
        all.push_str(&format!("\n--- synapse.log (end) ---\n{tail}\n"));
        for name in ["register-me.log", "register-demo.log"] {
            if let Ok(text) = read(name) {
                all.push_str(&format!("--- {name} ---\n{text}\n"));
            }
        }
        all
    }

    /// Whether the script has ended.
    fn ended(&mut self) -> Option<std::process::ExitStatus> {
        self.script.try_wait().unwrap()
    }

    /// Starts the script on a free port and waits until the gateway runs. The port is free
    /// when chosen, and some other process may bind it before Synapse does: then Synapse
    /// says so and the script ends, and this starts it again on another port.
    fn running(env: &[(&str, &str)]) -> Self {
        Self::running_seeded(env, |_| {})
    }

    /// [`Demo::running`] in a folder `seed` has written in first.
    fn running_seeded(env: &[(&str, &str)], seed: fn(&Path)) -> Self {
        for _ in 0..3 {
            let mut demo = Demo::start_seeded(support::ports::free_port(), env, seed);
            // Synapse may take up to the script's minute to answer on a busy machine.
            let settled = wait_for(Duration::from_secs(150), || {
                demo.printed().contains("Sidekicks is running") || demo.ended().is_some()
            });
            let printed = demo.printed();
            let lost_port = settled
                && !printed.contains("Sidekicks is running")
                && printed.contains("Address already in use");
            if lost_port {
                eprintln!("port {} was taken before Synapse bound it", demo.port);
                continue;
            }
            assert!(
                settled && printed.contains("Sidekicks is running"),
                "the demo did not come up ({:?}):\n{}",
                demo.ended(),
                demo.log()
            );
            assert!(printed.contains(&format!("homeserver:  http://127.0.0.1:{}", demo.port)));
            return demo;
        }
        panic!("Synapse's port was taken three times over");
    }

    /// `kill PID` of the script, as a person does from another terminal; then checks that
    /// the script ended and left nothing running.
    fn signal_and_check_everything_stopped(mut self) {
        unsafe { libc::kill(self.script.id() as i32, libc::SIGTERM) };
        let ended = wait_for(Duration::from_secs(30), || self.ended().is_some());
        assert!(ended, "the script did not end:\n{}", self.log());
        let gone = wait_for(Duration::from_secs(10), || {
            started_in(self.dir.path()).is_empty()
        });
        assert!(
            gone,
            "left running: {:#?}\n{}",
            started_in(self.dir.path()),
            self.log()
        );
    }
}

#[test]
fn a_signal_to_the_demo_script_stops_everything_it_started() {
    let demo = Demo::running(&[]);
    let before = started_in(demo.dir.path());
    assert!(
        before
            .iter()
            .any(|(_, c)| c.contains("synapse.app.homeserver"))
            && before.iter().any(|(_, c)| c.contains(" run --config ")),
        "Synapse and the gateway run: {before:#?}"
    );
    demo.signal_and_check_everything_stopped();
}

/// Passwords that begin with `-` (the script draws them at random: one in 64 does) are
/// passwords, not options: the account tool once took `-p -xyz` for a flag and the demo
/// ended with "Could not make the account".
#[test]
fn the_demo_comes_up_when_its_passwords_begin_with_a_dash() {
    let demo = Demo::running_seeded(&[], |dir| {
        std::fs::create_dir_all(dir.join("synapse")).unwrap();
        std::fs::write(
            dir.join("credentials"),
            "SHARED_SECRET=-shared-secret-for-the-test\n\
             YOUR_PASSWORD=-your-password\n\
             AGENT_PASSWORD=--agent-password\n",
        )
        .unwrap();
        std::fs::write(
            dir.join("synapse/signing.key"),
            "ed25519 a_demo AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA\n",
        )
        .unwrap();
    });
    demo.signal_and_check_everything_stopped();
}

/// A person behind a proxy (set in the environment for the outside world, and no loopback
/// exception) still gets a demo: nothing on 127.0.0.1 is asked through it. Before, Synapse
/// looked down for the script's whole wait, and the account could not be made: the script
/// ended after "Starting Synapse…" and said nothing more.
#[test]
fn the_demo_comes_up_for_a_person_behind_a_proxy_that_cannot_reach_loopback() {
    // A proxy that refuses every connection: the discard port, where nothing listens.
    let proxy = "http://127.0.0.1:9";
    let demo = Demo::running(&[
        ("http_proxy", proxy),
        ("https_proxy", proxy),
        ("HTTP_PROXY", proxy),
        ("HTTPS_PROXY", proxy),
        ("all_proxy", proxy),
        ("ALL_PROXY", proxy),
        ("no_proxy", ""),
        ("NO_PROXY", ""),
    ]);
    demo.signal_and_check_everything_stopped();
}

/// When Synapse cannot start (here its port is taken), the script says so with Synapse's
/// own words, ends with a failure, and leaves nothing running.
#[test]
fn when_synapse_cannot_start_the_demo_says_why_and_ends() {
    let port = support::ports::free_port();
    let _taken = std::net::TcpListener::bind(("127.0.0.1", port)).unwrap();
    let mut demo = Demo::start(port, &[]);
    let ended = wait_for(Duration::from_secs(90), || demo.ended().is_some());
    assert!(ended, "the script went on:\n{}", demo.log());
    assert!(!demo.ended().unwrap().success(), "{}", demo.log());
    let printed = demo.printed();
    assert!(
        printed.contains("Synapse stopped as it started")
            && printed.contains("Address already in use"),
        "{printed}"
    );
    assert!(!printed.contains("Sidekicks is starting"), "{printed}");
    assert!(
        started_in(demo.dir.path()).is_empty(),
        "{:#?}",
        started_in(demo.dir.path())
    );
}
