//! Starting an agent process: its working folder, the environment it is allowed to see, its
//! own session and process group (no controlling terminal to push keystrokes into, and no
//! descendant outlives it) and a bounded tail of its stderr.

use std::collections::{BTreeMap, VecDeque};
use std::path::PathBuf;
use std::process::Stdio;
use std::sync::{Arc, Mutex};

use tokio::io::BufReader;
use tokio::process::{ChildStdin, ChildStdout, Command};
use tokio::sync::watch;

use super::container::Container;
use super::launch::{ENV_FD, Launch, own_session, read_on_fd3};
use super::lines::CappedLines;
use super::sandbox::{Network, Sandbox};
use crate::model::Secret;
use crate::model::agent::McpServerSpec;
use crate::model::ids::AgentId;

/// What to run.
#[derive(Debug, Clone)]
pub struct ProcessSpec {
    /// Agent ID, for logs.
    pub agent_id: AgentId,
    /// Program.
    pub command: String,
    /// Arguments.
    pub args: Vec<String>,
    /// Variables set for the agent (values may be API keys: never logged).
    pub env: BTreeMap<String, Secret>,
    /// Gateway variables passed through.
    pub inherit_env: Vec<String>,
    /// Working folder.
    pub cwd: PathBuf,
    /// The agent's `HOME`; `None`: the gateway's own.
    pub home: Option<PathBuf>,
    /// The sandbox it runs in, if any (local runner).
    pub sandbox: Option<Sandbox>,
    /// The container it runs in (container runner; then `sandbox` is `None`: the
    /// container is its box).
    pub container: Option<Container>,
    /// Its way to the hosts it runs on (SSH runner; then `sandbox` is `None`: the host's
    /// own sandbox is its box).
    pub remote: Option<std::sync::Arc<crate::remote::Link>>,
    /// The dialect named in the config (`None`: recognised from the agent).
    pub dialect: Option<String>,
    /// How long the agent may take to answer `initialize`.
    pub initialize_timeout: std::time::Duration,
    /// How long it may take to open, load or resume a session.
    pub session_timeout: std::time::Duration,
    /// MCP servers every session of the agent gets.
    pub mcp_servers: Vec<crate::model::agent::McpServerSpec>,
    /// Whether the agent may read and write its sessions' files through the client
    /// (`fs/read_text_file`, `fs/write_text_file`), advertised at `initialize`.
    pub file_access: bool,
    /// Whether the agent may run commands through the client (`terminal/*`), advertised at
    /// `initialize`.
    pub terminals: bool,
}

impl ProcessSpec {
    /// `program args` as this agent runs things: in its sandbox (if any), in `cwd`, with
    /// only the environment it is configured to get, plus `inner_env`, which the agent asked
    /// for one command (`terminal/create`): that goes inside the sandbox only, never to the
    /// launcher (a `PATH` or `LD_PRELOAD` there would choose what runs outside it). The
    /// agent itself and the commands it runs through the client are started from this.
    pub fn command_line(
        &self,
        program: &str,
        args: &[String],
        cwd: &std::path::Path,
        inner_env: &[(String, String)],
    ) -> std::io::Result<Launch> {
        self.launch(program, args, cwd, inner_env, false)
    }

    /// This spec for one new agent process: in a container runner, its container gets a
    /// name of its own, which the commands the agent runs through the client run in.
    pub fn for_process(&self) -> Self {
        let mut spec = self.clone();
        spec.container = (self.container.as_ref()).map(|c| c.named(self.agent_id.as_str()));
        spec
    }

    /// This spec for the process of one room whose folder is `folder`, below `root` (one
    /// container per room): its container mounts that folder in place of `root` and a home
    /// of the room's own in place of the agent's, and it works there.
    pub fn for_room(&self, root: &std::path::Path, folder: &std::path::Path) -> Self {
        let container =
            (self.container.as_ref()).map(|c| c.for_room(root, folder, self.home.as_deref()));
        let home = container.as_ref().and_then(|c| c.room_home.as_ref());
        Self {
            home: home.map(|h| h.path.clone()).or_else(|| self.home.clone()),
            container,
            cwd: folder.to_owned(),
            ..self.clone()
        }
    }

    /// The network the agent has, from its sandbox or container (`None`: the host's,
    /// unboxed).
    pub fn network(&self) -> Option<Network> {
        match (&self.sandbox, &self.container, &self.remote) {
            (Some(s), _, _) => Some(s.network),
            (_, Some(c), _) => Some(c.network),
            (_, _, Some(r)) if r.settings().boxing.offline => Some(Network::None),
            _ => None,
        }
    }

    /// Whether the agent runs in a box (a sandbox, a container or another host), where
    /// what it starts reaches nothing of the gateway's.
    pub fn boxed(&self) -> bool {
        self.sandbox.is_some() || self.container.is_some() || self.remote.is_some()
    }

    /// The command that runs `program args` (the agent itself when `agent`).
    fn launch(
        &self,
        program: &str,
        args: &[String],
        cwd: &std::path::Path,
        inner_env: &[(String, String)],
        agent: bool,
    ) -> std::io::Result<Launch> {
        if let Some(container) = &self.container {
            return self.in_container(container, program, args, cwd, inner_env, agent);
        }
        if let Some(link) = &self.remote {
            return self.on_host(link, program, args, cwd, inner_env, agent);
        }
        let mut env_pipe = None;
        let mut cmd = match &self.sandbox {
            Some(sandbox) => {
                let mut cmd = std::process::Command::new(&sandbox.program);
                if !inner_env.is_empty() {
                    env_pipe = Some(read_on_fd3(&mut cmd, &Sandbox::inner_env(inner_env))?);
                    cmd.args(["--args", &ENV_FD.to_string()]);
                }
                cmd.args(sandbox.command_line(program, args, cwd));
                cmd
            }
            None => {
                let mut cmd = std::process::Command::new(program);
                cmd.args(args);
                cmd
            }
        };
        cmd.current_dir(cwd).env_clear().env(
            "PATH",
            std::env::var_os("PATH").unwrap_or_else(|| DEFAULT_PATH.into()),
        );
        if let Some(home) = self
            .home
            .as_ref()
            .map(|h| h.as_os_str().to_owned())
            .or_else(|| std::env::var_os("HOME"))
        {
            cmd.env("HOME", home);
        }
        for name in &self.inherit_env {
            if let Some(value) = std::env::var_os(name) {
                cmd.env(name, value);
            }
        }
        cmd.envs(self.env.iter().map(|(k, v)| (k, v.expose())));
        if self.sandbox.is_none() {
            cmd.envs(inner_env.iter().map(|(k, v)| (k, v)));
        }
        own_session(&mut cmd);
        Ok(Launch {
            command: cmd,
            env_pipe,
            stdin_header: None,
        })
    }
}

/// Whether `name` may be set in a command's environment at the agent's request: a variable
/// name by grammar ([`crate::model::variable`]), and none of the dynamic loader's
/// (`LD_PRELOAD`, `LD_LIBRARY_PATH`, …), which choose the code every program loads. `Err`
/// says why not.
pub fn requested_variable(name: &str) -> Result<(), String> {
    crate::model::variable::check_name(name)?;
    if name.starts_with("LD_") {
        return Err(format!(
            "`{name}` is not passed: it changes the code every program loads"
        ));
    }
    Ok(())
}

/// Lines kept from an agent's stderr.
const STDERR_LINES: usize = 200;
/// Longest stderr line kept, in bytes (the rest of a longer one is read and dropped).
const STDERR_LINE_BYTES: usize = 2_000;

/// The last lines an agent wrote to stderr, shared between the reader task and diagnostics.
#[derive(Debug, Clone, Default)]
pub struct StderrTail(Arc<Mutex<VecDeque<String>>>);

impl StderrTail {
    fn push(&self, mut line: String) {
        if line.len() > STDERR_LINE_BYTES {
            let mut cut = STDERR_LINE_BYTES;
            while !line.is_char_boundary(cut) {
                cut -= 1;
            }
            line.truncate(cut);
            line.push('…');
        }
        let mut lines = self.0.lock().expect("stderr tail poisoned");
        if lines.len() == STDERR_LINES {
            lines.pop_front();
        }
        lines.push_back(line);
    }

    /// The last `n` lines, joined.
    pub fn last(&self, n: usize) -> String {
        let lines = self.0.lock().expect("stderr tail poisoned");
        let skip = lines.len().saturating_sub(n);
        lines
            .iter()
            .skip(skip)
            .cloned()
            .collect::<Vec<_>>()
            .join("\n")
    }
}

/// A running agent process. Dropping it kills the whole process group.
#[derive(Debug)]
pub struct AgentProcess {
    /// The process group ID (equal to the child's PID).
    pgid: i32,
    /// Becomes `Some(status)` when the process has exited.
    pub exit: watch::Receiver<Option<String>>,
    /// Its stderr tail.
    pub stderr: StderrTail,
}

/// The process and its protocol pipes.
pub struct Spawned {
    /// The process handle.
    pub process: AgentProcess,
    /// The agent's stdin (we write requests).
    pub stdin: ChildStdin,
    /// The agent's stdout (we read responses and notifications).
    pub stdout: ChildStdout,
    /// What must be written on its stdin before the first message: the request to the
    /// helper on its host (the SSH runner).
    pub stdin_header: Option<Vec<u8>>,
}

/// The minimal `PATH` given when the gateway itself has none.
const DEFAULT_PATH: &str = "/usr/local/bin:/usr/bin:/bin";

impl AgentProcess {
    /// Starts the agent.
    pub fn spawn(spec: &ProcessSpec) -> std::io::Result<Spawned> {
        let Launch {
            command,
            env_pipe,
            stdin_header,
        } = spec.launch(&spec.command, &spec.args, &spec.cwd, &[], true)?;
        let mut cmd = Command::from(command);
        cmd.stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        let mut child = cmd.spawn()?;
        drop(env_pipe);
        let pgid = child.id().map(|p| p as i32).unwrap_or(0);
        let stdin = child.stdin.take().expect("stdin piped");
        let stdout = child.stdout.take().expect("stdout piped");
        let stderr = child.stderr.take().expect("stderr piped");

        let tail = StderrTail::default();
        let agent_id = spec.agent_id.clone();
        let reader_tail = tail.clone();
        let secrets = spec.secret_values();
        tokio::spawn(async move {
            // Read as bytes, each line capped: a line that is not UTF-8 is kept lossily, a
            // line without end is cut, and the pipe is drained whatever the agent writes.
            let mut lines = CappedLines::new(BufReader::new(stderr), STDERR_LINE_BYTES);
            loop {
                let line = match lines.next_line().await {
                    Ok(Some(line)) => line,
                    Ok(None) => break,
                    Err(e) => {
                        tracing::warn!(agent = %agent_id, error = %e, "stopped reading the agent's stderr");
                        break;
                    }
                };
                let mut text = line.lossy();
                if line.dropped > 0 {
                    text.push_str(&format!("… ({} more bytes)", line.dropped));
                }
                // An agent may print its API key (a failed request, a debug dump): it must
                // reach neither the log nor a room.
                let text = redact(text, &secrets);
                tracing::info!(target: "sidekicks::agent_stderr", agent = %agent_id, "{text}");
                reader_tail.push(text);
            }
        });

        let (exit_tx, exit_rx) = watch::channel(None);
        let agent_id = spec.agent_id.clone();
        let container = spec.container.clone();
        // Counted on its host while it runs, for choosing the least loaded one.
        let host = spec.remote.as_ref().and_then(|link| link.current());
        host.iter().for_each(|h| crate::remote::Link::started(h));
        tokio::spawn(async move {
            let status = match child.wait().await {
                Ok(status) => describe_status(status),
                Err(e) => format!("unknown ({e})"),
            };
            tracing::info!(agent = %agent_id, %status, "agent process exited");
            // The engine's client killed leaves its container running: it goes too.
            if let Some(container) = container {
                container.remove();
            }
            host.iter().for_each(|h| crate::remote::Link::ended(h));
            let _ = exit_tx.send(Some(status));
        });

        Ok(Spawned {
            process: AgentProcess {
                pgid,
                exit: exit_rx,
                stderr: tail,
            },
            stdin,
            stdout,
            stdin_header,
        })
    }

    /// Asks the process group to stop (SIGTERM), then kills it (SIGKILL) if it has not exited
    /// after `grace`.
    pub async fn stop(&mut self, grace: std::time::Duration) {
        self.signal(libc::SIGTERM);
        let mut exit = self.exit.clone();
        let exited = tokio::time::timeout(grace, exit.wait_for(|s| s.is_some())).await;
        if exited.is_err() {
            self.signal(libc::SIGKILL);
        }
        // Descendants that ignored SIGTERM go too.
        self.signal(libc::SIGKILL);
    }

    fn signal(&self, signal: i32) {
        signal_group(self.pgid, signal);
    }

    /// Something that can kill the process group from another task (when the agent broke
    /// the protocol), without owning the process.
    pub fn killer(&self) -> impl Fn() + Send + 'static {
        let pgid = self.pgid;
        move || signal_group(pgid, libc::SIGKILL)
    }
}

fn signal_group(pgid: i32, signal: i32) {
    if pgid > 0 {
        // SAFETY: kill(2) with a negative pid signals a process group; no memory is involved.
        unsafe {
            libc::kill(-pgid, signal);
        }
    }
}

impl Drop for AgentProcess {
    fn drop(&mut self) {
        self.signal(libc::SIGKILL);
    }
}

fn describe_status(status: std::process::ExitStatus) -> String {
    use std::os::unix::process::ExitStatusExt;
    match (status.code(), status.signal()) {
        (Some(code), _) => format!("exit code {code}"),
        (None, Some(sig)) => format!("killed by signal {sig}"),
        _ => status.to_string(),
    }
}

/// Shortest configured value masked in an agent's stderr (shorter ones, like `1` or
/// `yes`, would mask ordinary words).
const MIN_SECRET_LEN: usize = 6;

impl ProcessSpec {
    /// The values of the agent's variables, longest first, that are worth masking wherever
    /// its words go (its stderr, the log, rooms): those configured and those it inherits
    /// from the gateway (`inherit_env` is how an API key set for the service usually
    /// reaches an agent).
    pub fn secret_values(&self) -> Vec<String> {
        let inherited = self
            .inherit_env
            .iter()
            .filter_map(|name| std::env::var(name).ok());
        // The MCP servers' variables and headers are the agent's secrets too.
        let mcp = self.mcp_servers.iter().flat_map(|m| match m {
            McpServerSpec::Stdio { env, .. } => env.clone(),
            McpServerSpec::Http { headers, .. } => headers.clone(),
        });
        let mut values: Vec<String> = self
            .env
            .values()
            .cloned()
            .chain(mcp.map(|(_, v)| v))
            .map(|v| v.expose().to_owned())
            .chain(inherited)
            .filter(|v| v.len() >= MIN_SECRET_LEN)
            .collect();
        values.sort_by(|a, b| b.len().cmp(&a.len()).then_with(|| a.cmp(b)));
        values.dedup();
        values
    }
}

/// `line` with every secret value (and a secret cut at its end) replaced by `[redacted]`.
pub(super) fn redact(line: String, secrets: &[String]) -> String {
    crate::core::masking::mask(&line, secrets)
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;

    #[test]
    fn an_agent_may_set_plain_variables_for_its_commands_but_not_the_loaders() {
        for ok in ["PATH", "GREETING", "ld_preload_not", "XLD_PRELOAD"] {
            assert!(requested_variable(ok).is_ok(), "{ok}");
        }
        for refused in [
            "LD_PRELOAD",
            "LD_LIBRARY_PATH",
            "LD_AUDIT",
            "",
            "A=B",
            "A\0B",
            // A line break would write a line of its own into a container's env file, a
            // bare `NAME` there copies the engine's own variable into the container.
            "SIDEKICKS_DEMO_PASSWORD\nX",
            "A\rB",
            "PGPASS*",
            "1A",
            "A-B",
            "A B",
            "Ä",
        ] {
            assert!(requested_variable(refused).is_err(), "{refused:?}");
        }
    }

    #[test]
    fn without_a_sandbox_a_commands_own_environment_is_set_on_it() {
        let s = spec("true");
        let launch = s
            .command_line(
                "env",
                &[],
                std::path::Path::new("/"),
                &[("ASKED".into(), "yes".into())],
            )
            .unwrap();
        assert!(launch.env_pipe.is_none());
        let envs: Vec<_> = launch.command.get_envs().collect();
        assert!(
            envs.iter()
                .any(|(k, v)| *k == "ASKED" && *v == Some(std::ffi::OsStr::new("yes"))),
            "{envs:?}"
        );
    }

    #[test]
    fn every_command_leads_a_session_of_its_own() {
        // The session ID (field 6 of /proc/self/stat) is the process's own ID: it has left
        // the gateway's session and has no controlling terminal to push keystrokes into.
        let s = spec("true");
        let script = "read -r pid _ _ _ _ sid _ < /proc/self/stat; echo $pid $sid";
        let mut launch = s
            .command_line(
                "sh",
                &["-c".into(), format!("exec sh -c '{script}'")],
                std::path::Path::new("/"),
                &[],
            )
            .unwrap();
        let out = launch.command.output().unwrap();
        let text = String::from_utf8(out.stdout).unwrap();
        let ids: Vec<&str> = text.split_whitespace().collect();
        assert_eq!(ids.len(), 2, "{text}");
        assert_eq!(ids[0], ids[1], "pid and session: {text}");
        let ours = std::fs::read_to_string("/proc/self/stat").unwrap();
        let our_session = ours
            .rsplit(')')
            .next()
            .unwrap()
            .split_whitespace()
            .nth(3)
            .unwrap();
        assert_ne!(ids[1], our_session, "not the gateway's session");
    }

    #[test]
    fn configured_values_are_masked_in_stderr_lines() {
        let mut s = spec("true");
        s.env
            .insert("API_KEY".into(), Secret::new("sk-live-123456"));
        let secrets = s.secret_values();
        assert_eq!(
            secrets,
            vec!["sk-live-123456".to_owned()],
            "short values are not masked"
        );
        assert_eq!(
            redact("401 for key sk-live-123456: yes".into(), &secrets),
            "401 for key [redacted]: yes"
        );
        // A value the agent inherits from the gateway's environment is masked too.
        // SAFETY: set before reading; no other test reads this variable.
        unsafe { std::env::set_var("SIDEKICKS_TEST_INHERITED_KEY", "inherited-987654") };
        s.inherit_env = vec![
            "SIDEKICKS_TEST_INHERITED_KEY".into(),
            "UNSET_SIDEKICKS_VAR".into(),
        ];
        let secrets = s.secret_values();
        assert_eq!(
            redact("auth inherited-987654 failed".into(), &secrets),
            "auth [redacted] failed"
        );
    }

    /// An agent running `sh -c script`, with one variable of its own (`ONLY_THIS=yes`).
    pub(in crate::acp) fn spec(script: &str) -> ProcessSpec {
        ProcessSpec {
            agent_id: AgentId::new("t"),
            command: "sh".into(),
            args: vec!["-c".into(), script.into()],
            env: BTreeMap::from([("ONLY_THIS".into(), Secret::new("yes"))]),
            inherit_env: vec![],
            cwd: std::env::temp_dir(),
            home: None,
            sandbox: None,
            container: None,
            remote: None,
            dialect: None,
            initialize_timeout: std::time::Duration::from_secs(5),
            file_access: true,
            terminals: true,
            mcp_servers: Vec::new(),
            session_timeout: std::time::Duration::from_secs(5),
        }
    }

    #[test]
    fn in_a_container_values_reach_the_engine_by_name_and_commands_run_in_the_agents_container() {
        let dir = tempfile::tempdir().unwrap();
        let mut spec = spec("true");
        spec.env
            .insert("API_KEY".into(), Secret::new("s3cret-value-42"));
        spec.container = Some(super::super::container::tests::container(dir.path()));
        let spec = spec.for_process();
        let name = spec.container.as_ref().unwrap().name.clone().unwrap();
        let args = |l: &Launch| -> Vec<String> {
            (l.command.get_args())
                .map(|a| a.to_string_lossy().into_owned())
                .collect()
        };
        let agent = (spec.launch(&spec.command, &spec.args, &spec.cwd, &[], true)).unwrap();
        let line = args(&agent);
        assert_eq!(agent.command.get_program(), "/usr/bin/podman");
        assert!(
            line.windows(2).any(|w| w == ["--name", name.as_str()]),
            "{line:?}"
        );
        assert!(line.windows(2).any(|w| w == ["-e", "API_KEY"]), "{line:?}");
        assert!(!line.iter().any(|a| a.contains("s3cret")), "{line:?}");
        let value = (agent.command.get_envs()).find(|(k, _)| *k == "API_KEY");
        assert_eq!(value.and_then(|(_, v)| v), Some("s3cret-value-42".as_ref()));
        // A command the agent runs goes into its container, with the variables it asked for
        // in a pipe, not on the command line.
        let asked = [("MODE".to_owned(), "fast-and-loose".to_owned())];
        let run = (spec.command_line("make", &[], &spec.cwd, &asked)).unwrap();
        let line = args(&run);
        assert_eq!(line[0], "exec");
        assert!(line.contains(&name), "{line:?}");
        assert!(run.env_pipe.is_some());
        assert!(
            !line.iter().any(|a| a.contains("fast-and-loose")),
            "{line:?}"
        );
        // A value an env file cannot carry is refused, not cut.
        let bad = [("X".to_owned(), "a\nLD_PRELOAD=/evil.so".to_owned())];
        assert!(spec.command_line("make", &[], &spec.cwd, &bad).is_err());
    }

    #[tokio::test]
    async fn the_agent_sees_only_its_configured_environment() {
        // SAFETY: set before spawning; tests in this module do not read it concurrently.
        unsafe { std::env::set_var("SIDEKICKS_TEST_SECRET", "leak") };
        let mut spawned = AgentProcess::spawn(&spec("env | sort >&2")).unwrap();
        let env = finished(&mut spawned).await;
        assert!(env.contains("ONLY_THIS=yes"), "{env}");
        assert!(env.contains("PATH="), "{env}");
        assert!(!env.contains("SIDEKICKS_TEST_SECRET"), "{env}");
    }

    #[tokio::test]
    async fn stopping_kills_the_whole_process_group() {
        let spawned = AgentProcess::spawn(&spec("sleep 300 & echo $! >&2; wait")).unwrap();
        let mut process = spawned.process;
        tokio::time::sleep(std::time::Duration::from_millis(300)).await;
        let grandchild: i32 = process.stderr.last(1).trim().parse().unwrap();
        process.stop(std::time::Duration::from_secs(2)).await;
        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
        // Gone, or a zombie waiting to be reaped: either way no longer running.
        let alive = std::fs::read_to_string(format!("/proc/{grandchild}/stat"))
            .map(|stat| !stat.contains(") Z "))
            .unwrap_or(false);
        assert!(!alive, "grandchild {grandchild} outlived its agent");
    }

    /// A folder outside `/tmp`, which the sandbox replaces with an empty one: what the test
    /// finds hidden is hidden by the rules under test.
    pub(in crate::acp) fn outside_tmp() -> tempfile::TempDir {
        tempfile::Builder::new()
            .prefix("sidekicks-sandbox-test-")
            .tempdir_in("/var/tmp")
            .unwrap()
    }

    pub(in crate::acp) fn sandboxed(script: &str, root: &std::path::Path) -> ProcessSpec {
        let (work, home, state) = (root.join("work"), root.join("home"), root.join("state"));
        let mut s = spec(script);
        s.cwd = work.clone();
        s.home = Some(home.clone());
        s.sandbox = Some(Sandbox {
            program: "bwrap".into(),
            hide: vec![state, root.join("config.toml")],
            read_write: vec![work, home],
            read_only: vec![],
            network: Default::default(),
            binds: vec![],
        });
        s
    }

    async fn finished(spawned: &mut Spawned) -> String {
        spawned
            .process
            .exit
            .wait_for(|s| s.is_some())
            .await
            .unwrap();
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        spawned.process.stderr.last(100)
    }

    #[tokio::test]
    async fn in_the_sandbox_the_agent_reaches_its_workspace_and_home_and_nothing_hidden() {
        let root = outside_tmp();
        let r = root.path();
        for d in ["work", "home", "state/matrix"] {
            std::fs::create_dir_all(r.join(d)).unwrap();
        }
        std::fs::write(r.join("state/matrix/session.json"), "token-abcdef").unwrap();
        std::fs::write(r.join("config.toml"), "password = \"hunter22\"").unwrap();
        std::fs::write(r.join("work/notes.txt"), "workspace notes").unwrap();
        std::fs::write(r.join("outside.txt"), "a file of the host's").unwrap();
        let script = format!(
            "cat {root}/state/matrix/session.json {root}/config.toml >&2; \
             cat notes.txt {root}/outside.txt >&2; [ -x /bin/sh ] && grep -q '^root:' /etc/passwd && echo 'system there' >&2; \
             echo made > made.txt; \
             echo mine > \"$HOME/settings\"; echo \"home=$HOME\" >&2; \
             echo nope > {root}/outside.txt || echo 'read-only outside' >&2; echo END >&2",
            root = r.display()
        );
        let mut spawned = AgentProcess::spawn(&sandboxed(&script, r)).unwrap();
        let mut err = finished(&mut spawned).await;
        for _ in 0..50 {
            if err.ends_with("END") {
                break;
            }
            tokio::time::sleep(std::time::Duration::from_millis(100)).await;
            err = spawned.process.stderr.last(100);
        }
        assert!(!err.contains("token-abcdef"), "{err}");
        assert!(!err.contains("hunter22"), "{err}");
        assert!(err.contains("workspace notes"), "{err}");
        // The system is there, read-only; what else the host has is not, shown or hidden.
        assert!(err.contains("system there"), "{err}");
        assert!(!err.contains("a file of the host's"), "{err}");
        assert!(err.contains("read-only outside"), "{err}");
        assert!(
            err.contains(&format!("home={}", r.join("home").display())),
            "{err}"
        );
        assert_eq!(
            std::fs::read_to_string(r.join("work/made.txt")).unwrap(),
            "made\n"
        );
        assert_eq!(
            std::fs::read_to_string(r.join("home/settings")).unwrap(),
            "mine\n"
        );
        assert_eq!(
            std::fs::read_to_string(r.join("outside.txt")).unwrap(),
            "a file of the host's"
        );
    }

    #[tokio::test]
    async fn stopping_a_sandboxed_agent_stops_everything_it_started() {
        let root = outside_tmp();
        for d in ["work", "home"] {
            std::fs::create_dir_all(root.path().join(d)).unwrap();
        }
        // A number no other process of the machine has on its command line.
        let marker = 3_000_000 + std::process::id() % 1_000_000;
        let script = format!("sleep {marker} & echo started >&2; wait");
        let spawned = AgentProcess::spawn(&sandboxed(&script, root.path())).unwrap();
        let mut process = spawned.process;
        let running = || {
            std::fs::read_dir("/proc")
                .unwrap()
                .filter_map(|e| std::fs::read(e.ok()?.path().join("cmdline")).ok())
                .filter(|c| {
                    c.starts_with(b"sleep\0") && c.ends_with(format!("{marker}\0").as_bytes())
                })
                .count()
        };
        for _ in 0..50 {
            if running() > 0 {
                break;
            }
            tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        }
        assert_eq!(running(), 1, "the sandboxed sleep started");
        process.stop(std::time::Duration::from_secs(2)).await;
        tokio::time::sleep(std::time::Duration::from_millis(300)).await;
        assert_eq!(running(), 0, "the sandboxed sleep outlived its agent");
    }

    #[test]
    fn the_stderr_tail_is_bounded() {
        let tail = StderrTail::default();
        for i in 0..1000 {
            tail.push(format!("line {i}"));
        }
        tail.push("x".repeat(10_000));
        let all = tail.last(usize::MAX);
        assert_eq!(all.lines().count(), STDERR_LINES);
        assert!(all.lines().last().unwrap().len() < STDERR_LINE_BYTES + 4);
    }
}
