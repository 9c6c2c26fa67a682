//! The gateway's side of the SSH runner: how it reaches an agent's hosts with the system
//! `ssh` client, which host an agent process starts on, and one exchange with the helper
//! there.
//!
//! A host is chosen when an agent process starts: the agent's current host while it
//! answers (its rooms' files are there; kept in the state folder, so this holds across the
//! gateway's restarts too), else the host with the fewest running agent
//! processes of this gateway that answers, in the order the config lists them. A host that
//! does not answer is skipped and logged; when none is left the start fails, naming each
//! host and why, and the room is told. The files of a conversation are reached on the
//! agent's current host, so they are where the agent works.
//!
//! The file operations of one agent on one host share one connection (OpenSSH's connection
//! sharing: the first starts it, the others open a session in it, and it closes itself
//! [`SHARED_FOR`] after the last), so a file costs a session, not a key exchange and a
//! sign-in. Its socket is in the gateway's state folder, which no agent sees, and is the
//! agent's own: another agent on the same host, signing in with another key, never uses it.
//! The agent's process and its commands keep a connection each (their end is that
//! connection's end), and so does `hello`, which must find a host that went down.

use std::collections::BTreeMap;
use std::io::{Read, Write as _};
use std::path::PathBuf;
use std::process::{Child, ChildStdout, Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
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
    /// The gateway's room tools socket, when the agent has the room tools: its connection
    /// forwards a socket on the host to it (see [`Link::agent_command`]).
    pub room_tools: Option<PathBuf>,
    /// The file where the host it last ran on is kept (in the gateway's state), so that
    /// after a restart it goes back to the host its rooms' files are on while that host
    /// answers; `None`: not kept.
    pub remembered: Option<PathBuf>,
    /// The private folder where the connections its file operations share are reached
    /// (in the gateway's state, which no agent sees); `None`: each connects on its own.
    pub sockets: Option<PathBuf>,
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

/// How long a shared connection stays open after its last file operation.
pub const SHARED_FOR: Duration = Duration::from_secs(120);

/// Most file operations in one shared connection at once; more connect on their own. Under
/// `sshd`'s default limit of sessions per connection (ten), which would refuse the rest.
const MOST_SHARING: usize = 8;

/// Longest socket path `ssh` can use: a Unix socket's path holds 108 bytes, and `ssh`
/// first binds a name 17 bytes longer than the one it is given.
const LONGEST_SOCKET: usize = 90;

/// One agent's way to its hosts, shared by its process, its commands and its folders.
#[derive(Debug)]
pub struct Link {
    /// The agent, for logs and errors.
    agent: String,
    /// Its settings.
    settings: SshSettings,
    /// The host its process runs on (or last ran on): where its files are.
    current: Mutex<Option<String>>,
    /// The name its shared connections' sockets start with: new for each link, so a
    /// connection left by an earlier run of the gateway (with other settings) is never used.
    socket_name: String,
    /// File operations now in each host's shared connection.
    sharing: Mutex<BTreeMap<String, Arc<AtomicUsize>>>,
    /// Whether the sockets' folder is there and private (made at the first file operation).
    sockets_ready: OnceLock<bool>,
}

impl Link {
    /// The link of `agent`.
    pub fn new(agent: &str, settings: SshSettings) -> Arc<Self> {
        // The host it ran on before the gateway's last stop, if that is still one of its.
        let remembered = (settings.remembered.as_ref())
            .and_then(|file| std::fs::read_to_string(file).ok())
            .map(|host| host.trim().to_owned())
            .filter(|host| settings.hosts.contains(host));
        Arc::new(Self {
            agent: agent.to_owned(),
            settings,
            current: Mutex::new(remembered),
            socket_name: crate::model::random::hex(6),
            sharing: Mutex::default(),
            sockets_ready: OnceLock::new(),
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
                    let before = self
                        .current
                        .lock()
                        .expect("host lock")
                        .replace(host.clone());
                    if before.as_ref() != Some(host) {
                        self.remember(host);
                    }
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

    /// Keeps `host` as the one the agent runs on, for the gateway's next start (written
    /// whole, then renamed into place). A failure is logged: the agent runs all the same.
    fn remember(&self, host: &str) {
        let Some(file) = &self.settings.remembered else {
            return;
        };
        let written = (file
            .parent()
            .map_or(Ok(()), crate::state_dir::create_private))
        .and_then(|()| crate::state_dir::write_private(file, &format!("{host}\n")));
        if let Err(e) = written {
            tracing::warn!(agent = %self.agent, file = %file.display(), error = %e, "cannot keep the agent's host for the next start");
        }
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
        self.command_with(host, &[])
    }

    /// The command that runs the agent itself on `host`, as [`Link::command`]; with the
    /// room tools, its connection also forwards a socket there, new for this connection
    /// (returned, for the helper to bind into the agent's sandbox), to the gateway's.
    pub fn agent_command(&self, host: &str) -> (Command, Option<PathBuf>) {
        let Some(local) = &self.settings.room_tools else {
            return (self.command(host), None);
        };
        let name = crate::model::random::hex(12);
        let remote = PathBuf::from(format!("/tmp/sidekicks-room-tools-{name}.sock"));
        let forward = format!("{} {}", ssh_path(&remote), ssh_path(local));
        let options = ssh_option("RemoteForward", &forward);
        (self.command_with(host, &options), Some(remote))
    }

    /// [`Link::command`] with more `ssh` options (`-o name=value` pairs).
    fn command_with(&self, host: &str, more: &[String]) -> Command {
        let s = &self.settings;
        let mut cmd = Command::new(&s.ssh);
        cmd.env_clear();
        if let Some(path) = std::env::var_os("PATH") {
            cmd.env("PATH", path);
        }
        cmd.args(["-F", "/dev/null", "-T", "-a", "-x"])
            .args(ssh_option("BatchMode", "yes"))
            .args(ssh_option("StrictHostKeyChecking", "yes"))
            .args(ssh_option("UserKnownHostsFile", &ssh_path(&s.known_hosts)))
            .args(ssh_option("GlobalKnownHostsFile", "/dev/null"))
            .args(ssh_option("UpdateHostKeys", "no"))
            .args(ssh_option("IdentitiesOnly", "yes"))
            .args(ssh_option("IdentityAgent", "none"))
            .args(ssh_option("IdentityFile", &ssh_path(&s.identity)))
            .args(ssh_option(
                "ConnectTimeout",
                &s.connect_timeout.as_secs().max(1).to_string(),
            ))
            .args(ssh_option("ServerAliveInterval", "15"))
            .args(ssh_option("ServerAliveCountMax", "4"))
            .args(ssh_option("LogLevel", "ERROR"))
            .args(more)
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
        let (options, slot) = self.share(&host);
        let mut exchange =
            (self.open_exchange(self.command_with(&host, &options), request, payload))
                .map_err(|e| format!("cannot start ssh: {e}"))?;
        exchange.slot = slot;
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
        self.open_exchange(self.command(host), request, payload)
    }

    /// The options that put one file operation on `host` in the agent's shared connection
    /// there (started by this one if there is none), and its place in it; none (its own
    /// connection) without a socket folder, or when the shared one is full.
    fn share(&self, host: &str) -> (Vec<String>, Option<Slot>) {
        let Some(folder) = &self.settings.sockets else {
            return (Vec::new(), None);
        };
        let ready = self.sockets_ready.get_or_init(|| {
            let made = crate::state_dir::create_private(folder);
            if let Err(e) = &made {
                tracing::warn!(agent = %self.agent, folder = %folder.display(), error = %e, "cannot make the folder of shared ssh connections; each file operation connects on its own");
            }
            made.is_ok()
        });
        if !ready {
            return (Vec::new(), None);
        }
        let index = self.settings.hosts.iter().position(|h| h == host);
        let socket = folder.join(format!("{}-{}", self.socket_name, index.unwrap_or(0)));
        if socket.as_os_str().len() > LONGEST_SOCKET {
            tracing::debug!(agent = %self.agent, socket = %socket.display(), "the shared connection's socket path is too long for ssh; each file operation connects on its own");
            return (Vec::new(), None);
        }
        let users = (self
            .sharing
            .lock()
            .expect("sharing lock")
            .entry(host.to_owned()))
        .or_default()
        .clone();
        if users.fetch_add(1, Ordering::SeqCst) >= MOST_SHARING {
            users.fetch_sub(1, Ordering::SeqCst);
            return (Vec::new(), None);
        }
        let options = [
            ssh_option("ControlMaster", "auto"),
            ssh_option("ControlPath", &ssh_path(&socket)),
            ssh_option("ControlPersist", &format!("{}s", SHARED_FOR.as_secs())),
        ];
        (options.concat(), Some(Slot(users)))
    }

    /// Starts `cmd` as one exchange: `request`, then `payload`, written and closed.
    fn open_exchange(
        &self,
        mut cmd: Command,
        request: &Request,
        payload: &[u8],
    ) -> std::io::Result<Exchange> {
        cmd.stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let mut child = cmd.spawn()?;
        let stdout = child.stdout.take().expect("stdout piped");
        let mut stdin = child.stdin.take().expect("stdin piped");
        let mut exchange = Exchange {
            child,
            stdout: Some(stdout),
            slot: None,
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
    /// Its place in a shared connection, given back when it ends.
    slot: Option<Slot>,
}

/// One file operation's place in a shared connection, counted while it lasts.
#[derive(Debug)]
struct Slot(Arc<AtomicUsize>);

impl Drop for Slot {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
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

/// The `ssh` option `name` set to `value` (`-o name=value`).
fn ssh_option(name: &str, value: &str) -> [String; 2] {
    ["-o".to_owned(), format!("{name}={value}")]
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
            room_tools: None,
            remembered: None,
            sockets: None,
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
    fn file_operations_share_the_agents_own_connection_and_runs_keep_their_own() {
        let dir = tempfile::tempdir().unwrap();
        let sockets = dir.path().join("state/ssh");
        let mut settings = settings("/usr/bin/ssh", &["build1", "build2"]);
        settings.sockets = Some(sockets.clone());
        let link = Link::new("a", settings.clone());
        let control = |options: &[String]| {
            let path = options.iter().find_map(|o| o.strip_prefix("ControlPath="));
            path.map(|p| p.trim_matches('"').to_owned())
        };
        let (options, slot) = link.share("build1");
        let first = control(&options).expect("a shared connection");
        assert!(
            options.contains(&"ControlMaster=auto".to_owned()),
            "{options:?}"
        );
        assert!(first.starts_with(sockets.to_str().unwrap()), "{first}");
        // The folder is made, private: no agent or other user reaches the connection.
        let mode = std::fs::metadata(&sockets).unwrap().permissions();
        assert_eq!(
            std::os::unix::fs::PermissionsExt::mode(&mode) & 0o777,
            0o700
        );
        // Another host has a connection of its own; so has another agent on the same host.
        assert_ne!(control(&link.share("build2").0), Some(first.clone()));
        let other = Link::new("b", settings.clone());
        assert_ne!(control(&other.share("build1").0), Some(first.clone()));
        // Up to sshd's sessions per connection: the rest connect on their own.
        let mut held = vec![slot];
        while held.len() < MOST_SHARING {
            let (options, slot) = link.share("build1");
            assert_eq!(control(&options), Some(first.clone()));
            held.push(slot);
        }
        let own =
            |(options, slot): (Vec<String>, Option<Slot>)| options.is_empty() && slot.is_none();
        assert!(own(link.share("build1")), "one past the most");
        held.pop();
        assert_eq!(control(&link.share("build1").0), Some(first));
        // The agent's process and its commands, and `hello`, keep their own connection.
        let args = |cmd: Command| -> Vec<String> {
            cmd.get_args().map(|a| a.to_string_lossy().into()).collect()
        };
        assert!(
            !args(link.command("build1"))
                .iter()
                .any(|a| a.starts_with("Control"))
        );
        // Without a folder for them, nothing is shared.
        settings.sockets = None;
        assert!(own(Link::new("c", settings).share("build1")));
    }

    #[test]
    fn an_agent_goes_back_to_the_host_it_ran_on_after_a_restart_while_it_answers() {
        let dir = tempfile::tempdir().unwrap();
        let ssh = &fake_ssh(
            dir.path(),
            "for a; do host=$prev; prev=$a; done\n\
             case \"$host\" in down*) exit 255;; *) echo '{\"version\":\"t\",\"bubblewrap\":false}';; esac",
        );
        let file = dir.path().join("state/ssh/a.host");
        // It ran on the second host: the first was down then.
        let mut settings = settings(ssh, &["down-then", "remember-second"]);
        settings.remembered = Some(file.clone());
        let link = Link::new("a", settings.clone());
        assert_eq!(link.choose().unwrap(), "remember-second");
        assert_eq!(std::fs::read_to_string(&file).unwrap(), "remember-second\n");
        // The gateway starts again with the first host back: the agent goes back to the
        // second, where its rooms' files are.
        settings.hosts[0] = "remember-first".into();
        let again = Link::new("a", settings.clone());
        assert_eq!(again.current().as_deref(), Some("remember-second"));
        assert_eq!(again.choose().unwrap(), "remember-second");
        // A host no longer in its list is forgotten; one that does not answer is left.
        settings.hosts = vec!["remember-first".into()];
        assert_eq!(Link::new("a", settings.clone()).current(), None);
        std::fs::write(&file, "down-now\n").unwrap();
        settings.hosts = vec!["remember-first".into(), "down-now".into()];
        let moved = Link::new("a", settings);
        assert_eq!(moved.choose().unwrap(), "remember-first");
        assert_eq!(std::fs::read_to_string(&file).unwrap(), "remember-first\n");
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
