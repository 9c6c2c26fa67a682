//! One command an agent runs through the client (`terminal/create`): started as the agent
//! itself is (its sandbox, its environment) in a process group of its own, so that killing
//! it takes everything it started and nothing else; its output kept within the agent's byte
//! limit, and separately, within a larger bound, for the tool card that shows it.

use std::path::Path;
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::io::AsyncReadExt as _;
use tokio::sync::watch;

use super::container::Mark;
use super::process::ProcessSpec;

/// How much output a card keeps of one command (the card shows its end; the whole of this
/// is attached when the card cuts it).
const CARD_BYTES: usize = 1024 * 1024;
/// How long to wait for the last output once the command has exited (a background child
/// may hold the pipe open for ever).
const DRAIN_AFTER_EXIT: Duration = Duration::from_millis(300);

/// How a command ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Exit {
    /// Its exit code, when it exited by itself.
    pub code: Option<u32>,
    /// The signal that ended it (`SIGKILL`), when one did.
    pub signal: Option<String>,
}

/// Text kept from the end of a stream, within a byte bound, cut at a character boundary.
#[derive(Debug, Default)]
pub struct Tail {
    /// The text kept.
    text: String,
    /// The most bytes kept; `None`: all.
    limit: Option<usize>,
    /// Whether text was dropped from the start.
    truncated: bool,
}

impl Tail {
    fn new(limit: Option<usize>) -> Self {
        Self {
            limit,
            ..Self::default()
        }
    }

    fn push(&mut self, text: &str) {
        self.text.push_str(text);
        if let Some(limit) = self.limit
            && self.text.len() > limit
        {
            let mut cut = self.text.len() - limit;
            while !self.text.is_char_boundary(cut) {
                cut += 1;
            }
            self.text.drain(..cut);
            self.truncated = true;
        }
    }
}

/// What a command has written (stdout and stderr, in the order read).
#[derive(Debug)]
struct Output {
    /// What the agent gets back, within its `outputByteLimit`.
    agent: Tail,
    /// What its tool card shows, within [`CARD_BYTES`].
    card: Tail,
    /// Bytes of a character split between two reads.
    partial: Vec<u8>,
}

impl Output {
    fn push(&mut self, bytes: &[u8]) {
        self.partial.extend_from_slice(bytes);
        let text = match std::str::from_utf8(&self.partial) {
            Ok(text) => text.to_owned(),
            // A character cut by the read: keep its first bytes for the next one.
            Err(e) if e.error_len().is_none() => {
                let valid = e.valid_up_to();
                let text = String::from_utf8_lossy(&self.partial[..valid]).into_owned();
                self.partial.drain(..valid);
                self.agent.push(&text);
                self.card.push(&text);
                return;
            }
            Err(_) => String::from_utf8_lossy(&self.partial).into_owned(),
        };
        self.partial.clear();
        self.agent.push(&text);
        self.card.push(&text);
    }
}

/// A running (or ended) command.
pub struct Terminal {
    /// Its process group (its own), to kill everything it started.
    pgid: i32,
    /// Its mark inside the agent's container (the container runner), where what it started
    /// is not in that group: the engine started it. Taken by the first kill, which ends
    /// all that carries it.
    mark: Mutex<Option<Mark>>,
    /// What it wrote.
    output: Arc<Mutex<Output>>,
    /// Counts writes, so a card can follow the output.
    changed: watch::Receiver<u64>,
    /// Becomes `Some` when it has exited and its output is read.
    exit: watch::Receiver<Option<Exit>>,
}

impl Terminal {
    /// Starts `command args` for an agent described by `spec`, in `cwd`, with `env` added to
    /// the agent's own environment inside its sandbox (never to the launcher), keeping at
    /// most `limit` bytes of output for the agent.
    pub fn start(
        spec: &ProcessSpec,
        command: &str,
        args: &[String],
        cwd: &Path,
        env: &[(String, String)],
        limit: Option<usize>,
    ) -> std::io::Result<Self> {
        let mark = spec.container.is_some().then(Mark::new);
        let env: Vec<(String, String)> = (env.iter().cloned())
            .chain(mark.as_ref().map(Mark::variable))
            .collect();
        let (command, env_pipe, stdin) =
            spec.command_line(command, args, cwd, &env)?.for_command()?;
        let mut cmd = tokio::process::Command::from(command);
        cmd.stdin(stdin)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        // SAFETY: prctl(2) is async-signal-safe and touches no memory of ours; it makes the
        // kernel kill the command if the gateway dies before it, so none outlives us.
        unsafe {
            cmd.pre_exec(|| {
                libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
                Ok(())
            });
        }
        let mut child = cmd.spawn()?;
        drop(env_pipe);
        let pgid = child.id().map_or(0, |p| p as i32);
        let output = Arc::new(Mutex::new(Output {
            agent: Tail::new(limit),
            card: Tail::new(Some(CARD_BYTES)),
            partial: Vec::new(),
        }));
        let (changed_tx, changed) = watch::channel(0u64);
        let mut readers = read_output(&mut child, &output, changed_tx);
        let (exit_tx, exit) = watch::channel(None);
        tokio::spawn(async move {
            let status = child.wait().await;
            // The last output first, so whoever sees the exit sees all of it.
            let drained = async { while readers.join_next().await.is_some() {} };
            let _ = tokio::time::timeout(DRAIN_AFTER_EXIT, drained).await;
            let _ = exit_tx.send(Some(match status {
                Ok(status) => exit_of(status),
                Err(_) => Exit {
                    code: None,
                    signal: None,
                },
            }));
        });
        Ok(Self {
            pgid,
            mark: Mutex::new(mark),
            output,
            changed,
            exit,
        })
    }

    /// What the agent gets: its output within its limit, whether some was dropped, and how
    /// it ended if it has.
    pub fn output(&self) -> (String, bool, Option<Exit>) {
        let output = self.output.lock().expect("terminal output poisoned");
        (
            output.agent.text.clone(),
            output.agent.truncated,
            self.exit.borrow().clone(),
        )
    }

    /// What its tool card shows: the end of its output, said to be cut when it is.
    pub fn card_text(&self) -> String {
        let output = self.output.lock().expect("terminal output poisoned");
        if output.card.truncated {
            format!("… (earlier output dropped)\n{}", output.card.text)
        } else {
            output.card.text.clone()
        }
    }

    /// Waits until it has exited.
    pub async fn wait(&self) -> Exit {
        let mut exit = self.exit.clone();
        match exit.wait_for(|e| e.is_some()).await {
            Ok(exit) => exit.clone().expect("waited for an exit"),
            Err(_) => Exit {
                code: None,
                signal: None,
            },
        }
    }

    /// Whether it has exited.
    pub fn exited(&self) -> bool {
        self.exit.borrow().is_some()
    }

    /// A receiver that changes with each write, for following the output.
    pub fn changes(&self) -> watch::Receiver<u64> {
        self.changed.clone()
    }

    /// A receiver that becomes `Some` at its exit.
    pub fn exit_watch(&self) -> watch::Receiver<Option<Exit>> {
        self.exit.clone()
    }

    /// Kills it and everything it started (its process group, and in a container what
    /// carries its mark, even once the command itself has exited: a container has no
    /// sandbox that ends with it); its output stays readable.
    pub fn kill(&self) {
        if let Some(mark) = self.mark.lock().expect("terminal mark poisoned").take() {
            // Off the caller's thread: it reads every process's environment, for a while.
            let (pgid, exit) = (self.pgid, self.exit.clone());
            std::thread::spawn(move || end_in_container(&mark, pgid, &exit));
            return;
        }
        if !self.exited() {
            signal_group(self.pgid, libc::SIGKILL);
        }
    }
}

/// How long [`end_in_container`] waits for the engine's client to see its command end
/// before it kills the client anyway (an engine that hangs).
const CLIENT_EXIT_WAIT: Duration = Duration::from_secs(10);
/// How often [`end_in_container`] looks again for what carries the mark.
const MARK_SCAN_EVERY: Duration = Duration::from_millis(50);

/// Ends a command run in a container: kills what carries its `mark` until the engine's
/// client (the group `pgid`) has exited, then once more for what forked meanwhile.
///
/// The client is not killed first because killed while the engine is still starting the
/// command (the first tenths of a second of an `exec`), it leaves the engine to start it
/// anyway, with nobody left to stop it: `!stop` at once after a command began left it
/// running. The client exits by itself once the command it attached to is dead, so its
/// exit is the sign that nothing more of it will start.
fn end_in_container(mark: &Mark, pgid: i32, exit: &watch::Receiver<Option<Exit>>) {
    let deadline = std::time::Instant::now() + CLIENT_EXIT_WAIT;
    loop {
        mark.kill_all();
        if exit.borrow().is_some() {
            break;
        }
        if std::time::Instant::now() >= deadline {
            signal_group(pgid, libc::SIGKILL);
            break;
        }
        std::thread::sleep(MARK_SCAN_EVERY);
    }
    mark.kill_all();
}

fn signal_group(pgid: i32, signal: i32) {
    if pgid > 0 {
        // SAFETY: kill(2) with a negative pid signals a process group; no memory involved.
        unsafe {
            libc::kill(-pgid, signal);
        }
    }
}

impl Drop for Terminal {
    fn drop(&mut self) {
        self.kill();
    }
}

/// Tasks that read `child`'s stdout and stderr into `output`, counting each write on
/// `changed`; they end at the end of their pipe.
fn read_output(
    child: &mut tokio::process::Child,
    output: &Arc<Mutex<Output>>,
    changed: watch::Sender<u64>,
) -> tokio::task::JoinSet<()> {
    let changed = Arc::new(changed);
    let mut readers = tokio::task::JoinSet::new();
    let stdout = (child.stdout.take()).map(|s| Box::new(s) as Box<dyn Readable>);
    let stderr = (child.stderr.take()).map(|s| Box::new(s) as Box<dyn Readable>);
    for mut pipe in [stdout, stderr].into_iter().flatten() {
        let (output, changed) = (output.clone(), changed.clone());
        readers.spawn(async move {
            let mut buf = vec![0u8; 8192];
            while let Ok(n) = pipe.read(&mut buf).await {
                if n == 0 {
                    break;
                }
                (output.lock().expect("terminal output poisoned")).push(&buf[..n]);
                changed.send_modify(|n| *n += 1);
            }
        });
    }
    readers
}

/// A pipe read by a terminal's reader task.
trait Readable: tokio::io::AsyncRead + Unpin + Send {}
impl<T: tokio::io::AsyncRead + Unpin + Send> Readable for T {}

fn exit_of(status: std::process::ExitStatus) -> Exit {
    use std::os::unix::process::ExitStatusExt;
    Exit {
        code: status.code().map(|c| c as u32),
        signal: status.signal().map(signal_name),
    }
}

/// `SIGKILL` for 9: the name agents expect in `TerminalExitStatus.signal`.
fn signal_name(signal: i32) -> String {
    let name = match signal {
        libc::SIGHUP => "SIGHUP",
        libc::SIGINT => "SIGINT",
        libc::SIGQUIT => "SIGQUIT",
        libc::SIGABRT => "SIGABRT",
        libc::SIGKILL => "SIGKILL",
        libc::SIGSEGV => "SIGSEGV",
        libc::SIGPIPE => "SIGPIPE",
        libc::SIGTERM => "SIGTERM",
        other => return format!("signal {other}"),
    };
    name.to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sh(script: &str, cwd: &Path, limit: Option<usize>) -> Terminal {
        let env = [("ASKED".to_owned(), "yes".to_owned())];
        Terminal::start(
            &crate::acp::process::tests::spec("true"),
            "sh",
            &["-c".into(), script.into()],
            cwd,
            &env,
            limit,
        )
        .unwrap()
    }

    #[test]
    fn a_tail_keeps_the_end_within_its_limit_at_a_character_boundary() {
        let mut tail = Tail::new(Some(2));
        tail.push("a");
        assert!(!tail.truncated);
        tail.push("éb");
        // "aéb" is 4 bytes; keeping 2 would start inside "é": only "b" is kept.
        assert_eq!(tail.text, "b");
        assert!(tail.truncated);
        let mut all = Tail::new(None);
        all.push(&"x".repeat(10_000));
        assert_eq!(all.text.len(), 10_000);
    }

    #[test]
    fn output_split_inside_a_character_is_joined_again() {
        let mut out = Output {
            agent: Tail::new(None),
            card: Tail::new(None),
            partial: vec![],
        };
        let bytes = "é!".as_bytes();
        out.push(&bytes[..1]);
        assert_eq!(out.agent.text, "");
        out.push(&bytes[1..]);
        assert_eq!(out.agent.text, "é!");
    }

    #[tokio::test]
    async fn a_command_runs_in_its_folder_with_the_agents_and_the_asked_environment() {
        let dir = tempfile::tempdir().unwrap();
        let t = sh(
            "pwd; echo $ONLY_THIS $ASKED; echo err >&2; exit 3",
            dir.path(),
            None,
        );
        let exit = t.wait().await;
        assert_eq!(exit.code, Some(3));
        let (text, truncated, ended) = t.output();
        assert!(text.contains(&dir.path().canonicalize().unwrap().display().to_string()));
        assert!(
            text.contains("yes yes"),
            "the agent's and the asked variables: {text}"
        );
        assert!(text.contains("err"), "stderr is output too: {text}");
        assert!(!truncated);
        assert_eq!(ended, Some(exit));
    }

    #[tokio::test]
    async fn the_agent_gets_the_end_of_its_output_within_its_limit() {
        let dir = tempfile::tempdir().unwrap();
        let t = sh("seq 1 1000", dir.path(), Some(10));
        t.wait().await;
        let (text, truncated, _) = t.output();
        assert!(truncated);
        assert!(text.len() <= 10);
        assert!(text.ends_with("1000\n"), "{text:?}");
        assert!(t.card_text().starts_with("1\n2\n"), "the card keeps more");
    }

    #[tokio::test]
    async fn a_command_runs_in_the_agents_sandbox() {
        use crate::acp::process::tests::{outside_tmp, sandboxed};
        let root = outside_tmp();
        let r = root.path();
        for d in ["work", "home", "state"] {
            std::fs::create_dir_all(r.join(d)).unwrap();
        }
        std::fs::write(r.join("state/token"), "token-abcdef").unwrap();
        let spec = sandboxed("unused", r);
        let script = format!(
            "cat {root}/state/token; echo made > made.txt; echo x > {root}/outside || echo read-only",
            root = r.display()
        );
        let t = Terminal::start(
            &spec,
            "sh",
            &["-c".into(), script],
            &r.join("work"),
            &[],
            None,
        )
        .unwrap();
        t.wait().await;
        let (text, _, _) = t.output();
        assert!(!text.contains("token-abcdef"), "{text}");
        assert!(text.contains("read-only"), "{text}");
        assert!(r.join("work/made.txt").exists());
        assert!(!r.join("outside").exists());
    }

    /// An engine's `exec` for the tests (`exec --user U -w DIR --env-file FILE NAME
    /// COMMAND…`) that behaves as a real one does where it matters: it starts the command
    /// apart from its client (a session of its own), a moment later, whether or not the
    /// client still runs; the client exits once the command has; and it writes how the
    /// command ended to `DIR/engine-saw`.
    const SLOW_ENGINE: &str = r#"#!/bin/sh
dir=$5
vars=$(cat "$7")
shift 8
DIR=$dir vars=$vars /usr/bin/setsid /bin/sh -c \
    'sleep 0.3; /usr/bin/env $vars "$@"; echo $? > "$DIR/engine-saw"' engine "$@" &
wait
"#;

    #[tokio::test]
    async fn in_a_container_a_command_stopped_while_the_engine_starts_it_ends_when_it_starts() {
        let dir = tempfile::tempdir().unwrap();
        let engine = dir.path().join("engine");
        std::fs::write(&engine, SLOW_ENGINE).unwrap();
        use std::os::unix::fs::PermissionsExt as _;
        std::fs::set_permissions(&engine, std::fs::Permissions::from_mode(0o755)).unwrap();
        let mut spec = crate::acp::process::tests::spec("true");
        let mut container = crate::acp::container::tests::container(dir.path());
        container.engine = engine;
        spec.container = Some(container);
        let spec = spec.for_process();
        let script = "exec sleep 30".to_owned();
        let t =
            Terminal::start(&spec, "sh", &["-c".into(), script], dir.path(), &[], None).unwrap();
        // Stopped before the engine has started it: killing the client then would leave the
        // command to start with nobody to end it.
        t.kill();
        let saw = dir.path().join("engine-saw");
        let deadline = std::time::Instant::now() + Duration::from_secs(20);
        let ended = loop {
            if let Ok(text) = std::fs::read_to_string(&saw)
                && text.ends_with('\n')
            {
                break text;
            }
            assert!(
                std::time::Instant::now() < deadline,
                "the command the engine started late still runs"
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        };
        // Killed (128 + SIGKILL), not run to its end.
        assert_eq!(ended.trim(), "137");
        t.wait().await;
    }

    #[tokio::test]
    async fn killing_a_command_kills_what_it_started() {
        let dir = tempfile::tempdir().unwrap();
        let t = sh("sleep 300 & echo $! > child; wait", dir.path(), None);
        let child = dir.path().join("child");
        for _ in 0..100 {
            if std::fs::read_to_string(&child).is_ok_and(|s| s.ends_with('\n')) {
                break;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        let pid = std::fs::read_to_string(&child).unwrap().trim().to_owned();
        assert!(Path::new(&format!("/proc/{pid}")).exists());
        t.kill();
        let exit = t.wait().await;
        assert_eq!(exit.signal.as_deref(), Some("SIGKILL"));
        let mut gone = false;
        for _ in 0..100 {
            let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
            // Gone, or a zombie waiting for its reaper.
            if stat.is_empty() || stat.contains(") Z") {
                gone = true;
                break;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        assert!(gone, "the background sleep outlived its terminal");
    }
}
