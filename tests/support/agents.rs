//! Real third-party agents for the tests, installed from npm once, pinned, into a cache
//! outside `/tmp` (which an agent's sandbox replaces): Claude Code through
//! `@zed-industries/claude-agent-acp`.

use std::path::PathBuf;
use std::process::Command;

/// The pinned packages.
const PACKAGES: [&str; 1] = ["@zed-industries/claude-agent-acp@0.23.1"];

/// Where they are installed (`SIDEKICKS_TEST_AGENTS`, else `~/.cache/sidekicks/test-agents`),
/// installing them first if they are not (a file lock keeps parallel tests from installing
/// twice).
pub fn installed() -> PathBuf {
    let dir = std::env::var_os("SIDEKICKS_TEST_AGENTS")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            let home = std::env::var_os("HOME")
                .map(PathBuf::from)
                .unwrap_or_else(|| "/var/tmp".into());
            home.join(".cache/sidekicks/test-agents")
        });
    let marker = dir.join(format!(
        ".installed-{}",
        PACKAGES.join("+").replace('/', "_")
    ));
    if marker.exists() {
        return dir;
    }
    std::fs::create_dir_all(&dir).unwrap();
    let lock = std::fs::File::create(dir.join(".lock")).unwrap();
    lock.lock().unwrap();
    if !marker.exists() {
        eprintln!(
            "installing {} into {} (once)…",
            PACKAGES.join(", "),
            dir.display()
        );
        let ok = Command::new("npm")
            .args([
                "install",
                "--no-audit",
                "--no-fund",
                "--loglevel=error",
                "--prefix",
            ])
            .arg(&dir)
            .args(PACKAGES)
            .status()
            .expect("npm runs (Node and npm are needed for the real-agent tests)")
            .success();
        assert!(ok, "npm install {} failed", PACKAGES.join(" "));
        std::fs::write(&marker, "").unwrap();
    }
    dir
}

/// The Claude Code agent's entry point (run with `node`).
pub fn claude() -> PathBuf {
    installed().join("node_modules/@zed-industries/claude-agent-acp/dist/index.js")
}
