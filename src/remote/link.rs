//! The gateway's side of the SSH runner: how it reaches an agent's hosts with the system
//! `ssh` client, which host an agent process starts on, and one exchange with the helper
//! there.
//!
//! A host is chosen when an agent process starts: the agent's current host while it
//! answers (its rooms' files are there), else the host with the fewest running agent
//! processes of this gateway that answers, in the order the config lists them. A host that
//! does not answer is skipped and logged; when none is left the start fails, naming each
//! host and why, and the room is told. The files of a conversation are reached on the
//! agent's current host, so they are where the agent works.

use std::collections::BTreeMap;
use std::io::{Read, Write as _};
use std::path::PathBuf;
use std::process::{Child, ChildStdout, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use super::wire::{self, Boxing, Hello, Request};

/// How one agent's hosts are reached, from its config.
#[derive(Debug, Clone, PartialEq)]
pub struct SshSettings {
    /// The `ssh` client, an absolute path found when the gateway starts.
    pub ssh: PathBuf,
    /// The hosts, as `ssh` destinations (`build1`, `agent@build1`, `ssh://agent@build1:2222`).
    pub hosts: Vec<String>,
    /// The known-hosts file the host keys are checked against (no other is read or written).
    pub known_hosts: PathBuf,
    /// The private key the gateway signs in with (no agent, no other key).
    pub identity: PathBuf,
    /// The `sidekicks` program on the hosts (a path, or a name in the remote user's `PATH`).
    pub program: String,
    /// How long connecting to a host may take before it counts as down.
    pub connect_timeout: Duration,
    /// What the agent and its commands may reach there.
    pub boxing: Boxing,
}

/// No host of an agent answers.
#[derive(Debug, Clone, thiserror::Error)]
#[error("no host of agent {agent} answers ({tried})")]
pub struct NoHost {
    /// The agent.
    pub agent: String,
    /// Each host tried and why it failed.
    pub tried: String,
}

/// How long a host has, once connected, to answer hello: signing in and starting the helper.
const HELLO_GRACE: Duration = Duration::from_secs(5);

/// Running agent processes of this gateway on each host, for choosing the least loaded.
static RUNNING: Mutex<BTreeMap<String, usize>> = Mutex::new(BTreeMap::new());

/// One agent's way to its hosts, shared by its process, its commands and its folders.
#[derive(Debug)]
pub struct Link {
    /// The agent, for logs and errors.
    agent: String,
    /// Its settings.
    settings: SshSettings,
    /// The host its process runs on (or last ran on): where its files are.
    current: Mutex<Option<String>>,
}

impl Link {
    /// The link of `agent`.
    pub fn new(agent: &str, settings: SshSettings) -> Arc<Self> {
        Arc::new(Self {
            agent: agent.to_owned(),
            settings,
            current: Mutex::new(None),
        })
    }

    /// Its settings.
    pub fn settings(&self) -> &SshSettings {
        &self.settings
    }

    /// The host the agent's process runs on, or last ran on.
    pub fn current(&self) -> Option<String> {
        self.current.lock().expect("host lock").clone()
    }

    /// The host for a new agent process: the current one while it answers, else the one
    /// with the fewest of this gateway's agent processes that answers. Blocks while hosts
    /// are asked: call it off the async threads.
    pub fn choose(&self) -> Result<String, NoHost> {
        let current = self.current();
        let running = RUNNING.lock().expect("load lock").clone();
        let mut order: Vec<(usize, &String)> = self.settings.hosts.iter().enumerate().collect();
        order.sort_by_key(|(i, h)| {
            let load = running.get(*h).copied().unwrap_or(0);
            (current.as_ref() != Some(h), load, *i)
        });
        let mut tried = Vec::new();
        for (_, host) in order {
            let required = self.settings.boxing.sandbox == wire::SandboxWish::Required;
            let hello = self
                .hello(host)
                .and_then(|hello| match hello.bubblewrap || !required {
                    true => Ok(hello),
                    false => {
                        Err("no working bubblewrap, and the agent's sandbox is required".into())
                    }
                });
            match hello {
                Ok(hello) => {
                    tracing::info!(agent = %self.agent, %host, version = %hello.version, sandbox = hello.bubblewrap, "agent host chosen");
                    if !hello.bubblewrap && self.settings.boxing.sandbox == wire::SandboxWish::Auto
                    {
                        tracing::warn!(agent = %self.agent, %host, "the host has no working bubblewrap: the agent runs there unsandboxed, as the remote user");
                    }
                    *self.current.lock().expect("host lock") = Some(host.clone());
                    return Ok(host.clone());
                }
                Err(why) => {
                    tracing::warn!(agent = %self.agent, %host, %why, "agent host does not answer; skipped");
                    tried.push(format!("{host}: {why}"));
                }
            }
        }
        Err(NoHost {
            agent: self.agent.clone(),
            tried: tried.join("; "),
        })
    }

    /// The host the agent's files are on: its current one, else one chosen now.
    pub fn host(&self) -> Result<String, NoHost> {
        match self.current() {
            Some(host) => Ok(host),
            None => self.choose(),
        }
    }

    /// An agent process started on `host`.
    pub fn started(host: &str) {
        *RUNNING
            .lock()
            .expect("load lock")
            .entry(host.to_owned())
            .or_default() += 1;
    }

    /// An agent process on `host` ended.
    pub fn ended(host: &str) {
        let mut running = RUNNING.lock().expect("load lock");
        if let Some(n) = running.get_mut(host) {
            *n = n.saturating_sub(1);
        }
    }

    /// The `ssh` command that reaches `host` and runs the helper there; its stdin takes a
    /// request ([`wire::write_line`]). Only the operator's settings are on its command
    /// line; its environment is `PATH` alone (no agent socket, no locale of the gateway's).
    pub fn command(&self, host: &str) -> Command {
        let s = &self.settings;
        let mut cmd = Command::new(&s.ssh);
        cmd.env_clear();
        if let Some(path) = std::env::var_os("PATH") {
            cmd.env("PATH", path);
        }
        let option = |name: &str, value: &str| ["-o".to_owned(), format!("{name}={value}")];
        cmd.args(["-F", "/dev/null", "-T", "-a", "-x"])
            .args(option("BatchMode", "yes"))
            .args(option("StrictHostKeyChecking", "yes"))
            .args(option("UserKnownHostsFile", &ssh_path(&s.known_hosts)))
            .args(option("GlobalKnownHostsFile", "/dev/null"))
            .args(option("UpdateHostKeys", "no"))
            .args(option("IdentitiesOnly", "yes"))
            .args(option("IdentityAgent", "none"))
            .args(option("IdentityFile", &ssh_path(&s.identity)))
            .args(option(
                "ConnectTimeout",
                &s.connect_timeout.as_secs().max(1).to_string(),
            ))
            .args(option("ServerAliveInterval", "15"))
            .args(option("ServerAliveCountMax", "4"))
            .args(option("LogLevel", "ERROR"))
            .arg("--")
            .arg(host)
            .arg(format!("{} remote", shell_quoted(&s.program)));
        cmd
    }

    /// Asks `host` whether it is there and what it has, within the connect timeout and a
    /// little more (a host that accepts the connection and then says nothing counts as down).
    pub fn hello(&self, host: &str) -> Result<Hello, String> {
        let mut exchange = self
            .exchange(host, &Request::Hello, &[])
            .map_err(|e| format!("cannot start ssh: {e}"))?;
        let mut stdout = exchange.stdout.take().expect("read once");
        let reader = std::thread::spawn(move || wire::read_line::<Hello>(&mut stdout));
        let deadline = Instant::now() + self.settings.connect_timeout + HELLO_GRACE;
        while !reader.is_finished() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(20));
        }
        // Killed before it is reaped (the exchange holds it): the reader sees the end.
        let _ = exchange.child.kill();
        let answer = reader.join().unwrap_or(Err(wire::WireError::Ended));
        let hello = answer.map_err(|e| exchange.failure(&e.to_string()))?;
        if hello.version != env!("CARGO_PKG_VERSION") {
            tracing::warn!(agent = %self.agent, %host, theirs = %hello.version, ours = env!("CARGO_PKG_VERSION"), "the host's sidekicks is another version than the gateway's");
        }
        Ok(hello)
    }

    /// Sends `request` (and `payload`) to the helper on the agent's host (its current one,
    /// else one chosen now) and reads its answer line; the exchange, for the bytes that
    /// follow. `Err`: why there is no answer, in words (with what `ssh` said).
    pub fn ask<A: serde::de::DeserializeOwned>(
        &self,
        request: &Request,
        payload: &[u8],
    ) -> Result<(A, Exchange), String> {
        let host = self.host().map_err(|e| e.to_string())?;
        let mut exchange = (self.exchange(&host, request, payload))
            .map_err(|e| format!("cannot start ssh: {e}"))?;
        match wire::read_line::<A>(&mut exchange) {
            Ok(answer) => Ok((answer, exchange)),
            Err(e) => Err(format!("{host}: {}", exchange.failure(&e.to_string()))),
        }
    }

    /// Starts one exchange with the helper on `host`: `request`, then `payload`, written and
    /// closed; what the helper answers is read from the returned exchange.
    pub fn exchange(
        &self,
        host: &str,
        request: &Request,
        payload: &[u8],
    ) -> std::io::Result<Exchange> {
        let mut cmd = self.command(host);
        cmd.stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let mut child = cmd.spawn()?;
        let stdout = child.stdout.take().expect("stdout piped");
        let mut stdin = child.stdin.take().expect("stdin piped");
        let mut exchange = Exchange {
            child,
            stdout: Some(stdout),
        };
        let mut bytes = Vec::new();
        wire::write_line(&mut bytes, request).map_err(std::io::Error::other)?;
        bytes.extend_from_slice(payload);
        // A host that closes early (it refused) shows in the answer, not here.
        if stdin.write_all(&bytes).is_err() {
            let _ = exchange.child.try_wait();
        }
        Ok(exchange)
    }
}

/// One connection to the helper, read as its answer; the connection ends when it is
/// dropped.
#[derive(Debug)]
pub struct Exchange {
    /// The `ssh` client.
    child: Child,
    /// The helper's answer (taken by a reader that must time out).
    stdout: Option<ChildStdout>,
}

impl Exchange {
    /// Why the exchange failed: `what`, with the last line `ssh` wrote (a refused
    /// connection, an unknown host key, a missing helper).
    pub fn failure(&mut self, what: &str) -> String {
        let _ = self.child.kill();
        let mut said = String::new();
        if let Some(stderr) = self.child.stderr.as_mut() {
            let _ = stderr.take(64 * 1024).read_to_string(&mut said);
        }
        match said.lines().rev().find(|l| !l.trim().is_empty()) {
            Some(line) => line.trim().to_owned(),
            None => what.to_owned(),
        }
    }
}

impl Read for Exchange {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        match &mut self.stdout {
            Some(stdout) => stdout.read(buf),
            None => Ok(0),
        }
    }
}

impl Drop for Exchange {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `path` as an ssh config value: quoted, its `%` not read as a token.
fn ssh_path(path: &std::path::Path) -> String {
    format!("\"{}\"", path.to_string_lossy().replace('%', "%%"))
}

/// `text` as one word for the remote user's shell.
fn shell_quoted(text: &str) -> String {
    format!("'{}'", text.replace('\'', "'\\''"))
}

#[cfg(test)]
mod tests {
    use super::*;

    pub(crate) fn settings(ssh: &str, hosts: &[&str]) -> SshSettings {
        SshSettings {
            ssh: ssh.into(),
            hosts: hosts.iter().map(|h| h.to_string()).collect(),
            known_hosts: "/etc/sidekicks/known 100%".into(),
            identity: "/etc/sidekicks/id".into(),
            program: "/opt/it's/sidekicks".into(),
            connect_timeout: Duration::from_secs(3),
            boxing: Boxing {
                home: "~/.sidekicks/agent-homes/a".into(),
                workspace: "/srv/work".into(),
                repository: None,
                sandbox: super::super::wire::SandboxWish::Auto,
                offline: false,
                hide: vec![],
            },
        }
    }

    /// An `ssh` in `dir` that runs `script` (its last argument is the remote command, the
    /// one before it the host).
    fn fake_ssh(dir: &std::path::Path, script: &str) -> String {
        let ssh = dir.join("ssh");
        std::fs::write(&ssh, format!("#!/bin/sh\n{script}\n")).unwrap();
        std::fs::set_permissions(&ssh, std::os::unix::fs::PermissionsExt::from_mode(0o755))
            .unwrap();
        ssh.to_str().unwrap().to_owned()
    }

    #[test]
    fn ssh_checks_the_host_key_signs_in_with_the_key_given_and_runs_only_the_helper() {
        let link = Link::new("a", settings("/usr/bin/ssh", &["build1"]));
        let cmd = link.command("ssh://agent@build1:2222");
        let args: Vec<String> = cmd.get_args().map(|a| a.to_string_lossy().into()).collect();
        for wanted in [
            "StrictHostKeyChecking=yes",
            "UserKnownHostsFile=\"/etc/sidekicks/known 100%%\"",
            "GlobalKnownHostsFile=/dev/null",
            "IdentitiesOnly=yes",
            "IdentityAgent=none",
            "BatchMode=yes",
            "ConnectTimeout=3",
        ] {
            assert!(args.iter().any(|a| a == wanted), "{wanted} in {args:?}");
        }
        assert_eq!(
            &args[..2],
            ["-F", "/dev/null"],
            "no ssh config of the user's"
        );
        let n = args.len();
        assert_eq!(
            &args[n - 3..],
            [
                "--",
                "ssh://agent@build1:2222",
                "'/opt/it'\\''s/sidekicks' remote"
            ]
        );
        let env: Vec<_> = cmd.get_envs().filter(|(_, v)| v.is_some()).collect();
        assert!(env.iter().all(|(k, _)| *k == "PATH"), "{env:?}");
    }

    #[test]
    fn a_host_that_does_not_answer_is_skipped_and_none_left_names_each() {
        let dir = tempfile::tempdir().unwrap();
        // An `ssh` that answers hello on `up` only, as the helper would.
        let ssh = &fake_ssh(
            dir.path(),
            "for a; do host=$prev; prev=$a; done\n\
             case \"$host\" in up*) echo '{\"version\":\"t\",\"bubblewrap\":false}';; \
             *) echo \"ssh: connect to host $host: Connection refused\" >&2; exit 255;; esac",
        );
        let link = Link::new("a", settings(ssh, &["down1", "up-link-test", "down2"]));
        assert_eq!(link.choose().unwrap(), "up-link-test");
        assert_eq!(link.current().as_deref(), Some("up-link-test"));
        let none = Link::new("b", settings(ssh, &["down1", "down2"]));
        let why = none.choose().unwrap_err().to_string();
        assert!(
            why.contains("down1: ssh: connect to host down1: Connection refused")
                && why.contains("down2:"),
            "{why}"
        );
    }

    #[test]
    fn where_the_sandbox_is_required_a_host_without_bubblewrap_is_skipped() {
        let dir = tempfile::tempdir().unwrap();
        let ssh = &fake_ssh(
            dir.path(),
            "echo '{\"version\":\"t\",\"bubblewrap\":false}'",
        );
        let mut settings = settings(ssh, &["bare"]);
        assert!(
            Link::new("a", settings.clone()).choose().is_ok(),
            "auto: taken"
        );
        settings.boxing.sandbox = wire::SandboxWish::Required;
        let why = Link::new("a", settings).choose().unwrap_err().to_string();
        assert!(why.contains("bare: no working bubblewrap"), "{why}");
    }

    #[test]
    fn a_host_that_connects_and_says_nothing_counts_as_down() {
        let dir = tempfile::tempdir().unwrap();
        let mut settings = settings(&fake_ssh(dir.path(), "exec sleep 300"), &["mute"]);
        settings.connect_timeout = Duration::ZERO;
        let started = Instant::now();
        let why = Link::new("a", settings).choose().unwrap_err().to_string();
        assert!(
            started.elapsed() < HELLO_GRACE * 2,
            "{:?}",
            started.elapsed()
        );
        assert!(why.contains("mute: the connection ended"), "{why}");
    }

    #[test]
    fn the_least_loaded_host_is_chosen_and_the_current_one_kept_while_it_answers() {
        let dir = tempfile::tempdir().unwrap();
        let ssh = &fake_ssh(
            dir.path(),
            "echo '{\"version\":\"t\",\"bubblewrap\":false}'",
        );
        let (busy, idle) = ("load-test-busy", "load-test-idle");
        Link::started(busy);
        let link = Link::new("a", settings(ssh, &[busy, idle]));
        assert_eq!(link.choose().unwrap(), idle, "fewest running first");
        Link::started(idle);
        Link::started(idle);
        assert_eq!(link.choose().unwrap(), idle, "its current host is kept");
        let other = Link::new("b", settings(ssh, &[idle, busy]));
        assert_eq!(other.choose().unwrap(), busy);
        Link::ended(idle);
        Link::ended(idle);
        Link::ended(busy);
    }
}
