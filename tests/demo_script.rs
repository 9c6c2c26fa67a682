#![recursion_limit = "256"]
//! `scripts/demo.sh` as a new user runs it: it brings Synapse and the gateway up, and a
//! signal to the script (not only Ctrl-C) stops everything it started.

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

#[test]
fn a_signal_to_the_demo_script_stops_everything_it_started() {
    let dir = tempfile::Builder::new()
        .prefix("sidekicks-demo-script-")
        .tempdir_in(env!("CARGO_TARGET_TMPDIR"))
        .unwrap();
    let port = support::ports::free_port();
    let log_path = dir.path().join("demo-script.log");
    let log = std::fs::File::create(&log_path).unwrap();
    let mut script = Command::new("bash")
        .arg(concat!(env!("CARGO_MANIFEST_DIR"), "/scripts/demo.sh"))
        .env("SIDEKICKS_DEMO_DIR", dir.path())
        .env("SIDEKICKS_DEMO_PORT", port.to_string())
        .env("SIDEKICKS_SYNAPSE_VENV", support::synapse::venv())
        .env("SIDEKICKS_BIN", support::gateway::binary())
        .stdin(Stdio::null())
        .stdout(log.try_clone().unwrap())
        .stderr(log)
        .spawn()
        .unwrap();
    let log = || std::fs::read_to_string(&log_path).unwrap_or_default();
    let running = wait_for(Duration::from_secs(90), || {
        log().contains("Sidekicks is running")
    });
    assert!(running, "the demo did not come up:\n{}", log());
    assert!(log().contains(&format!("homeserver:  http://127.0.0.1:{port}")));
    let before = started_in(dir.path());
    assert!(
        before
            .iter()
            .any(|(_, c)| c.contains("synapse.app.homeserver"))
            && before.iter().any(|(_, c)| c.contains(" run --config ")),
        "Synapse and the gateway run: {before:#?}"
    );

    // `kill PID` of the script, as a person does from another terminal.
    unsafe { libc::kill(script.id() as i32, libc::SIGTERM) };
    let ended = wait_for(Duration::from_secs(30), || {
        script.try_wait().unwrap().is_some()
    });
    assert!(ended, "the script did not end:\n{}", log());
    let gone = wait_for(Duration::from_secs(10), || {
        started_in(dir.path()).is_empty()
    });
    assert!(
        gone,
        "left running: {:#?}\n{}",
        started_in(dir.path()),
        log()
    );
}
