#![recursion_limit = "256"]
//! `sidekicks check`: validates the config and shows what each agent advertises, without
//! touching Matrix.

mod support;

use std::process::Command;

use support::gateway::binary;

fn config(dir: &std::path::Path, command: &str, args: &str) -> std::path::PathBuf {
    std::fs::create_dir_all(dir.join("ws")).unwrap();
    let path = dir.join("sidekicks.toml");
    std::fs::write(
        &path,
        format!(
            r#"
state_dir = "state"
[matrix]
homeserver = "http://127.0.0.1:9"
[access]
allowed_users = ["@alice:localhost"]
[[agents]]
id = "demo"
display_name = "Demo"
command = {command:?}
args = {args}
workspace = "ws"
[agents.matrix]
user_id = "@demo:localhost"
password = "unused"
"#
        ),
    )
    .unwrap();
    path
}

/// Runs `sidekicks check --config cfg`.
fn check(cfg: &std::path::Path) -> std::process::Output {
    Command::new(binary())
        .args(["check", "--config"])
        .arg(cfg)
        .output()
        .unwrap()
}

#[test]
fn check_prints_what_the_demo_agent_advertises() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = config(dir.path(), binary().to_str().unwrap(), r#"["demo-agent"]"#);
    let out = check(&cfg);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    for expected in [
        "protocol version: 1",
        "sidekicks-demo-agent",
        "loadSession: no",
        "dialect: demo",
        "approvals: the agent has no modes",
        "conversations continue by: re-injection into a new session",
        "session methods: close",
        "prompt content besides text: none",
        "room tools: on, over stdio",
        "session/new: ok",
        "/demo, /echo",
        "sandbox: bubblewrap",
    ] {
        assert!(
            stdout.contains(expected),
            "missing {expected:?} in:\n{stdout}"
        );
    }
}

#[test]
fn check_lists_what_the_agent_will_see_and_nothing_else_of_the_host() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = config(dir.path(), binary().to_str().unwrap(), r#"["demo-agent"]"#);
    let out = check(&cfg);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}");
    let sees: Vec<&str> = (stdout.lines())
        .skip_while(|l| l.trim() != "sees:")
        .skip(1)
        .take_while(|l| l.starts_with("    "))
        .collect();
    let sees = sees.join("\n");
    let dir = dir.path().canonicalize().unwrap();
    let program = binary().canonicalize().unwrap();
    for expected in [
        "read-only: the system (/usr".to_owned(),
        format!("read-only: {}", program.parent().unwrap().display()),
        format!("read-write: {}", dir.join("ws").display()),
        format!(
            "read-write: {}",
            dir.join("state/agent-homes/demo").display()
        ),
        "network: the host's".to_owned(),
    ] {
        assert!(sees.contains(&expected), "{expected:?} in:\n{stdout}");
    }
    // Nothing else: the folder holding the config and the state is not among them.
    assert!(
        !(sees.lines()).any(|l| l.trim_end().ends_with(&dir.display().to_string())),
        "{sees}"
    );
}

/// Runs `sidekicks check` on the demo agent started with `args` (after `demo-agent`), with
/// `--strict-modes` when `strict`.
fn check_demo(args: &[&str], strict: bool) -> (bool, String) {
    let dir = tempfile::tempdir().unwrap();
    let args: Vec<&str> = std::iter::once("demo-agent")
        .chain(args.iter().copied())
        .collect();
    let cfg = config(dir.path(), binary().to_str().unwrap(), &format!("{args:?}"));
    let mut command = Command::new(binary());
    command.args(["check", "--config"]).arg(&cfg);
    if strict {
        command.arg("--strict-modes");
    }
    let out = command.output().unwrap();
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
    )
}

#[test]
fn check_says_which_modes_ask_and_puts_a_session_in_one_for_real() {
    let (ok, stdout) = check_demo(&["--settings", "--start-mode", "code"], false);
    assert!(ok, "{stdout}");
    for expected in [
        "modes: ask (Ask) asks, code (Code)\n",
        "starts in: code (Code): does not ask",
        "sessions are put in: ask (Ask): asks before acting (switched: ok)",
    ] {
        assert!(
            stdout.contains(expected),
            "missing {expected:?} in:\n{stdout}"
        );
    }
}

#[test]
fn check_fails_an_agent_that_cannot_be_put_in_a_mode_that_asks() {
    // Neither `code` nor `warp` is known to ask: the gateway would refuse its sessions.
    let (ok, stdout) = check_demo(&["--modes", "code,warp"], false);
    assert!(!ok, "{stdout}");
    assert!(
        stdout.contains("the gateway would not use this agent")
            && stdout.contains("none of its modes (`code`, `warp`) is known to ask"),
        "{stdout}"
    );
}

#[test]
fn a_strict_check_fails_on_modes_the_dialect_does_not_know() {
    let args = ["--modes", "ask,code,warp"];
    let (ok, stdout) = check_demo(&args, false);
    assert!(ok, "{stdout}");
    assert!(
        stdout
            .contains("modes the dialect does not know (treated as not asking; review them): warp"),
        "{stdout}"
    );
    let (ok, stdout) = check_demo(&args, true);
    assert!(!ok, "{stdout}");
    assert!(stdout.contains("(--strict-modes): warp"), "{stdout}");
    // Known modes only: the strict check passes.
    let (ok, stdout) = check_demo(&["--settings"], true);
    assert!(ok, "{stdout}");
}

#[test]
fn check_refuses_an_agent_speaking_another_protocol_version() {
    let dir = tempfile::tempdir().unwrap();
    let fixture = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/protocol_v2_agent.py"
    );
    let cfg = config(dir.path(), "python3", &format!("[{fixture:?}]"));
    let out = check(&cfg);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(!out.status.success());
    assert!(
        stdout.contains("speaks ACP protocol version 2; Sidekicks speaks version 1"),
        "{stdout}"
    );
}

#[test]
fn check_reports_config_problems_by_key() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = config(dir.path(), "sidekicks", "[]");
    let text = std::fs::read_to_string(&cfg)
        .unwrap()
        .replace("workspace = \"ws\"", "workspace = \"missing\"");
    std::fs::write(&cfg, text).unwrap();
    let out = check(&cfg);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(stderr.contains("agents[0].workspace"), "{stderr}");
}

#[test]
fn check_warns_about_patterns_that_admit_bridges_guests_and_bots() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = config(dir.path(), binary().to_str().unwrap(), r#"["demo-agent"]"#);
    let text = std::fs::read_to_string(&cfg)
        .unwrap()
        .replace("[\"@alice:localhost\"]", "[\"@*:localhost\"]");
    std::fs::write(&cfg, text).unwrap();
    let out = check(&cfg);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "a warning is not a failure:\n{stdout}"
    );
    for expected in [
        "warning: access.allowed_users: `@*:localhost` also admits a Telegram user bridged in",
        "warning: access.approvers (defaults to access.allowed_users): a pattern",
        "warning: access.admins (defaults to access.approvers): a pattern",
    ] {
        assert!(
            stdout.contains(expected),
            "missing {expected:?} in:\n{stdout}"
        );
    }
    // Exact IDs: no warning.
    let exact = config(dir.path(), binary().to_str().unwrap(), r#"["demo-agent"]"#);
    let stdout = String::from_utf8_lossy(&check(&exact).stdout).into_owned();
    assert!(!stdout.contains("warning:"), "{stdout}");
}

#[test]
fn check_says_when_the_sandbox_cannot_run() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = config(dir.path(), binary().to_str().unwrap(), r#"["demo-agent"]"#);
    let text = std::fs::read_to_string(&cfg).unwrap();
    let missing = "[sandbox]\nbwrap = \"/nonexistent/bwrap\"\n";
    // `auto`: the agent runs without one, and check says what that means.
    std::fs::write(&cfg, format!("{text}{missing}")).unwrap();
    let out = check(&cfg);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}");
    assert!(
        stdout.contains(
            "sandbox: none: /nonexistent/bwrap is not installed (Debian package `bubblewrap`)"
        ),
        "{stdout}"
    );
    assert!(stdout.contains("session/new: ok"), "{stdout}");
    // Required: the agent fails the check.
    std::fs::write(&cfg, format!("{text}{missing}mode = \"bubblewrap\"\n")).unwrap();
    let out = check(&cfg);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(!out.status.success(), "{stdout}");
    assert!(
        stdout.contains("FAILED: sandbox: the sandbox is required (sandbox.mode = \"bubblewrap\") but /nonexistent/bwrap is not installed"),
        "{stdout}"
    );
}

#[test]
fn check_warns_about_a_workspace_that_holds_the_state_folder_and_the_config() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = config(dir.path(), binary().to_str().unwrap(), r#"["demo-agent"]"#);
    let text = std::fs::read_to_string(&cfg).unwrap();
    std::fs::create_dir_all(dir.path().join("state")).unwrap();
    std::fs::write(
        &cfg,
        text.replace("workspace = \"ws\"", "workspace = \".\""),
    )
    .unwrap();
    let stdout = String::from_utf8_lossy(&check(&cfg).stdout).into_owned();
    assert!(
        stdout.contains("warning: agents[0].workspace:") && stdout.contains("holds state_dir"),
        "{stdout}"
    );
    assert!(stdout.contains("holds the config file"), "{stdout}");
}

#[test]
fn check_lists_the_worktrees_of_an_agent_in_worktree_mode() {
    let dir = tempfile::tempdir().unwrap();
    let repo = dir.path().join("repo");
    std::fs::create_dir(&repo).unwrap();
    let git = |args: &[&str]| {
        let ok = Command::new("git")
            .arg("-C")
            .arg(&repo)
            .args(["-c", "user.name=T", "-c", "user.email=t@example.org"])
            .args(args)
            .status()
            .unwrap();
        assert!(ok.success(), "git {args:?}");
    };
    git(&["init", "-q", "-b", "main"]);
    git(&["commit", "-q", "--allow-empty", "-m", "first"]);
    let made = dir.path().join("ws/room-one");
    let made_text = made.to_str().unwrap();
    git(&[
        "worktree",
        "add",
        "-q",
        "-b",
        "sidekicks/demo/one",
        made_text,
    ]);
    let cfg = config(dir.path(), binary().to_str().unwrap(), r#"["demo-agent"]"#);
    let text = std::fs::read_to_string(&cfg).unwrap().replace(
        "workspace = \"ws\"",
        "workspace = \"ws/room-{room}\"\n[agents.worktree]\nrepository = \"repo\"",
    );
    std::fs::write(&cfg, text).unwrap();
    let out = check(&cfg);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}");
    assert!(
        stdout.contains("worktree: each room on a branch sidekicks/demo/… of"),
        "{stdout}"
    );
    assert!(stdout.contains("(1 made)"), "{stdout}");
    assert!(
        stdout.contains(&format!("sidekicks/demo/one in {}", made.display())),
        "{stdout}"
    );
}

#[test]
fn check_says_whether_an_agent_is_signed_in_and_how_to_sign_it_in() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = config(
        dir.path(),
        binary().to_str().unwrap(),
        r#"["demo-agent", "--auth"]"#,
    );
    let out = check(&cfg);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}");
    assert!(stdout.contains("signed in: no"), "{stdout}");
    assert!(stdout.contains("Demo sign-in (id demo-login)"), "{stdout}");
    let signed = config(dir.path(), binary().to_str().unwrap(), r#"["demo-agent"]"#);
    let stdout = String::from_utf8_lossy(&check(&signed).stdout).into_owned();
    assert!(stdout.contains("signed in: yes"), "{stdout}");
}

#[test]
fn check_needs_no_matrix_secret_and_keeps_log_lines_out_of_its_report() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = config(dir.path(), binary().to_str().unwrap(), r#"["demo-agent"]"#);
    let text = std::fs::read_to_string(&cfg).unwrap().replace(
        "password = \"unused\"",
        "password_env = \"SIDEKICKS_CHECK_TEST_UNSET_PASSWORD\"",
    );
    std::fs::write(&cfg, text).unwrap();
    let out = Command::new(binary())
        .args(["check", "--config"])
        .arg(&cfg)
        .env_remove("SIDEKICKS_CHECK_TEST_UNSET_PASSWORD")
        .env_remove("RUST_LOG")
        .output()
        .unwrap();
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    assert!(out.status.success(), "{stdout}\n{stderr}");
    assert!(
        stdout.contains("note: agents[0].matrix:")
            && stdout.contains("SIDEKICKS_CHECK_TEST_UNSET_PASSWORD")
            && stdout.contains("(needed to run, not to check)"),
        "{stdout}"
    );
    assert!(stdout.contains("session/new: ok"), "{stdout}");
    for level in [" INFO ", " WARN ", " DEBUG "] {
        assert!(
            !stdout.contains(level),
            "a log line in the report: {stdout}"
        );
    }
    assert!(
        !stderr.contains(" INFO "),
        "only warnings and errors are logged: {stderr}"
    );

    // Running still needs it.
    let run = Command::new(binary())
        .args(["run", "--config"])
        .arg(&cfg)
        .env_remove("SIDEKICKS_CHECK_TEST_UNSET_PASSWORD")
        .output()
        .unwrap();
    assert!(!run.status.success());
    assert!(
        String::from_utf8_lossy(&run.stderr).contains("SIDEKICKS_CHECK_TEST_UNSET_PASSWORD"),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
}

#[test]
fn log_lines_can_be_json_for_a_log_collector() {
    use std::io::BufRead;
    let dir = tempfile::tempdir().unwrap();
    // No homeserver there: the gateway logs its retries, a line each.
    let cfg = config(dir.path(), binary().to_str().unwrap(), r#"["demo-agent"]"#);
    let mut gateway = Command::new(binary())
        .args(["run", "--log-format", "json", "--config"])
        .arg(&cfg)
        .env_remove("RUST_LOG")
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // Its first warning (the room tools' start comes before, at info level).
    let mut line = String::new();
    let mut stderr = std::io::BufReader::new(gateway.stderr.take().unwrap());
    for _ in 0..20 {
        line.clear();
        stderr.read_line(&mut line).unwrap();
        let parsed: serde_json::Value =
            serde_json::from_str(&line).unwrap_or_else(|e| panic!("{e}: {line}"));
        if parsed["level"] != "INFO" {
            break;
        }
    }
    gateway.kill().unwrap();
    gateway.wait().unwrap();
    let parsed: serde_json::Value =
        serde_json::from_str(&line).unwrap_or_else(|e| panic!("{e}: {line}"));
    assert_eq!(parsed["level"], "WARN", "{line}");
    assert_eq!(parsed["target"], "sidekicks::matrix::client", "{line}");
    assert_eq!(
        parsed["fields"]["message"], "homeserver unreachable; retrying login",
        "{line}"
    );
    assert_eq!(parsed["fields"]["user"], "@demo:localhost", "{line}");
}

#[test]
fn a_relative_config_path_and_an_agent_that_dies_at_start_are_reported_clearly() {
    let dir = tempfile::tempdir().unwrap();
    // The config named relative to the folder check runs in: `workspace = "ws"` is still
    // the folder beside it.
    config(dir.path(), binary().to_str().unwrap(), r#"["demo-agent"]"#);
    let out = Command::new(binary())
        .args(["check", "--config", "sidekicks.toml"])
        .current_dir(dir.path())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}");
    assert!(stdout.contains("session/new: ok"), "{stdout}");

    // An agent that dies before it answers: its last words on stderr are in the report.
    let cfg = config(
        dir.path(),
        "/bin/sh",
        r#"["-c", "echo no API key for this agent >&2; exit 3"]"#,
    );
    let out = check(&cfg);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(!out.status.success());
    assert!(
        stdout
            .contains("FAILED: the agent process stopped (exit code 3: no API key for this agent)"),
        "{stdout}"
    );
    // A runtime that prints its error above a stack and its own last line (Node: `Node.js
    // v22…`): the error is what the report shows.
    let node_like = "echo 'node:internal/modules/cjs/loader:1228' >&2; \
        echo \"Error: Cannot find module '/srv/agent/index.js'\" >&2; \
        echo '    at Module._resolveFilename (node:internal)' >&2; echo >&2; \
        echo 'Node.js v22.23.5' >&2; exit 1";
    let cfg = config(dir.path(), "/bin/sh", &format!("[\"-c\", {node_like:?}]"));
    let stdout = String::from_utf8_lossy(&check(&cfg).stdout).into_owned();
    assert!(
        stdout.contains(
            "the agent process stopped (exit code 1: Error: Cannot find module '/srv/agent/index.js')"
        ),
        "{stdout}"
    );
}
