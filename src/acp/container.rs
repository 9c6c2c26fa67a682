//! Running an agent in a container (`[agents.runner] kind = "container"`), through the
//! command line Podman and Docker share: one container per agent process, from the image the
//! operator names, removed when the process ends.
//!
//! The container sees its image and nothing of the host but what is mounted, each at the
//! same path as outside (so the paths the agent names in `fs/*` requests, tool calls and
//! links are the gateway's own, and every file the gateway touches for it is still reached
//! by handle beneath the conversation's folder): its workspace and home read-write, the
//! paths the config adds, and the room tools' socket when it has no network. It runs as the
//! gateway's own user with every capability dropped and `no-new-privileges`, with the CPU,
//! memory and process limits configured.
//!
//! Nothing the agent controls reaches the engine's command line or environment: the engine
//! is found by its absolute path when the gateway starts, the agent's configured variables
//! are passed by name (`-e NAME`, their values in the engine's environment, never on a
//! command line other users can read), and the variables the agent asks for one command
//! (`terminal/create`) go through an env file read from a pipe. The commands it runs
//! through the client run inside its container (`exec`); git in worktree mode runs in a
//! one-off container of the same image, with the same mounts.
//!
//! Every container carries the label [`LABEL`] with the gateway's state folder, so those a
//! killed gateway left behind are removed when it starts again ([`Container::remove_leftovers`]).

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use super::sandbox::Network;

/// The label on every container of one gateway; its value is the gateway's state folder.
pub const LABEL: &str = "sidekicks.state";

/// How to run one agent's processes in containers.
#[derive(Debug, Clone, PartialEq)]
pub struct Container {
    /// The engine's program (`podman` or `docker`), an absolute path found at start.
    pub engine: PathBuf,
    /// The image the agent runs from.
    pub image: String,
    /// Its network: `host` (the host's, as in the sandbox: it calls its model) or `none`.
    pub network: Network,
    /// CPUs it may use (`--cpus`), if limited.
    pub cpus: Option<f64>,
    /// Memory it may use (`--memory`, such as `2g`), if limited.
    pub memory: Option<String>,
    /// Processes it may run at once (`--pids-limit`).
    pub pids_limit: u32,
    /// Paths mounted read-write at the same place (its workspace, its home, what the config
    /// adds).
    pub read_write: Vec<PathBuf>,
    /// Paths mounted read-only at the same place.
    pub read_only: Vec<PathBuf>,
    /// Files mounted at another place: (outside, inside), such as the room tools' socket.
    pub binds: Vec<(PathBuf, PathBuf)>,
    /// The gateway's state folder, the value of [`LABEL`].
    pub state: PathBuf,
    /// The user and group it runs as: the gateway's own, so what it writes in its
    /// workspace belongs to the gateway's user.
    pub user: (u32, u32),
    /// The container of this agent process, named when the process starts; the commands
    /// the agent runs through the client run in it. `None`: not started (git in worktree
    /// mode runs in a one-off container then).
    pub name: Option<String>,
    /// For one room's container: its home, and the agent's home it is first made from
    /// (`None`: the agent's home is mounted as it is).
    pub room_home: Option<RoomHome>,
}

/// One room's home (`per_room`): what a program keeps in its home (transcripts, settings,
/// hooks, shell start-up files) stays with the room, so one room's agent can neither read
/// another's nor plant what runs there. It starts as a copy of the agent's home (its
/// sign-ins and settings), made when the room's first process starts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RoomHome {
    /// The room's home: `<agent's home>/rooms/<room's folder name>`.
    pub path: PathBuf,
    /// The agent's home, copied into it when it does not exist yet.
    pub template: PathBuf,
}

/// The folder of an agent's home that holds its rooms' homes (never copied into one).
pub const ROOM_HOMES: &str = "rooms";

impl RoomHome {
    /// The home of the room whose folder is `folder`, made from the agent's `home`.
    pub fn of(home: &Path, folder: &Path) -> Self {
        let name = folder.file_name().unwrap_or(folder.as_os_str());
        Self {
            path: home.join(ROOM_HOMES).join(name),
            template: home.to_owned(),
        }
    }

    /// Makes the room's home if it is not there: private, holding a copy of the agent's
    /// home (links copied as links, never followed; its rooms' homes left out).
    pub fn make(&self) -> std::io::Result<()> {
        if self.path.exists() {
            return Ok(());
        }
        let partial = self.path.with_extension("making");
        let _ = std::fs::remove_dir_all(&partial);
        copy_tree(&self.template, &partial, true)?;
        std::fs::set_permissions(
            &partial,
            std::os::unix::fs::PermissionsExt::from_mode(0o700),
        )?;
        std::fs::rename(&partial, &self.path)
    }
}

/// Copies the folder `from` to `to` (made): folders, files and links as they are, without
/// following a link; at the `top`, the rooms' homes left out.
fn copy_tree(from: &Path, to: &Path, top: bool) -> std::io::Result<()> {
    std::fs::create_dir_all(to)?;
    for entry in std::fs::read_dir(from)? {
        let entry = entry?;
        if top && entry.file_name() == ROOM_HOMES {
            continue;
        }
        let (source, target) = (entry.path(), to.join(entry.file_name()));
        let kind = entry.file_type()?;
        if kind.is_symlink() {
            std::os::unix::fs::symlink(std::fs::read_link(&source)?, &target)?;
        } else if kind.is_dir() {
            copy_tree(&source, &target, false)?;
            let mode = std::fs::symlink_metadata(&source)?.permissions();
            std::fs::set_permissions(&target, mode)?;
        } else if kind.is_file() {
            std::fs::copy(&source, &target)?;
        }
    }
    Ok(())
}

/// One container command line's parts that differ between the agent, its commands and git.
pub struct Invocation<'a> {
    /// The program inside and its arguments.
    pub command: &'a str,
    /// Its arguments.
    pub args: &'a [String],
    /// Its working folder (the same path inside).
    pub cwd: &'a Path,
    /// Names of variables passed from the engine's environment (the agent's configured
    /// ones: only for a new container).
    pub env_names: &'a [String],
    /// Its `HOME` (only for a new container).
    pub home: Option<&'a Path>,
    /// Whether an env file is read from the descriptor `/dev/fd/3`.
    pub env_file: bool,
    /// Whether stdin is passed (the agent's ACP pipe).
    pub interactive: bool,
}

impl Container {
    /// Processes one container may run when the config sets no limit: enough for builds
    /// and test suites, not for a fork bomb.
    pub const DEFAULT_PIDS_LIMIT: u32 = 4096;

    /// This container with a fresh name for one agent process of `agent`.
    pub fn named(&self, agent: &str) -> Self {
        let mut bytes = [0u8; 6];
        // A name that clashes is refused by the engine, and the process fails to start.
        let _ = getrandom::fill(&mut bytes);
        let agent: String = agent
            .chars()
            .map(
                |c| match c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                    true => c,
                    false => '-',
                },
            )
            .collect();
        Self {
            name: Some(format!(
                "sidekicks-{agent}-{}",
                bytes.iter().map(|b| format!("{b:02x}")).collect::<String>()
            )),
            ..self.clone()
        }
    }

    /// This container for one room's process: the room's `folder` mounted in place of
    /// `root`, the folder of every room's, and the room's own home in place of the agent's
    /// `home`, so the room's agent sees no other room's files, nor what another room's
    /// programs keep in their home.
    pub fn for_room(&self, root: &Path, folder: &Path, home: Option<&Path>) -> Self {
        let room_home = home.map(|h| RoomHome::of(h, folder));
        let read_write = (self.read_write.iter())
            .map(|p| match (p == root, &room_home) {
                (true, _) => folder.to_owned(),
                (false, Some(room)) if p == &room.template => room.path.clone(),
                (false, _) => p.clone(),
            })
            .collect();
        Self {
            read_write,
            room_home,
            ..self.clone()
        }
    }

    /// What the agent sees of the host, a line each, for `sidekicks check`: its image, and
    /// each path mounted in its container.
    pub fn seen(&self) -> Vec<String> {
        let mut lines = vec![format!(
            "its image {}, and nothing of the host but:",
            self.image
        )];
        lines.extend(
            existing(&self.read_write)
                .iter()
                .map(|p| format!("read-write: {}", p.display())),
        );
        lines.extend(
            existing(&self.read_only)
                .iter()
                .map(|p| format!("read-only: {}", p.display())),
        );
        lines.extend((self.binds.iter()).map(|(outside, inside)| {
            format!("bound in: {} at {}", outside.display(), inside.display())
        }));
        lines
    }

    /// The engine's arguments that run `call`: in this process's container when it has
    /// one and `call` is not the agent itself, else in a new container (named, when it is
    /// the agent's).
    pub fn command_line(&self, call: &Invocation<'_>, agent: bool) -> Vec<OsString> {
        match (&self.name, agent) {
            (Some(name), false) => self.exec(name, call),
            (name, _) => self.run(name.as_deref(), call),
        }
    }

    /// `exec` in the running container `name`.
    fn exec(&self, name: &str, call: &Invocation<'_>) -> Vec<OsString> {
        let mut out: Vec<OsString> = vec!["exec".into()];
        if call.interactive {
            out.push("-i".into());
        }
        out.extend(["--user".into(), self.user_arg()]);
        out.extend(["-w".into(), call.cwd.as_os_str().to_owned()]);
        if call.env_file {
            out.extend(["--env-file".into(), "/dev/fd/3".into()]);
        }
        out.push(name.into());
        out.push(call.command.into());
        out.extend(call.args.iter().map(OsString::from));
        out
    }

    /// `run` of a new container, removed when its process ends.
    fn run(&self, name: Option<&str>, call: &Invocation<'_>) -> Vec<OsString> {
        let mut out: Vec<OsString> = vec!["run".into(), "--rm".into()];
        if call.interactive {
            out.push("-i".into());
        }
        if let Some(name) = name {
            out.extend(["--name".into(), name.into()]);
        }
        let mut label = OsString::from(format!("{LABEL}="));
        label.push(self.state.as_os_str());
        out.extend(["--label".into(), label]);
        out.extend(["--user".into(), self.user_arg()]);
        out.extend(["--cap-drop".into(), "all".into()]);
        out.extend(["--security-opt".into(), "no-new-privileges".into()]);
        out.extend(["--pids-limit".into(), self.pids_limit.to_string().into()]);
        if let Some(cpus) = self.cpus {
            out.extend(["--cpus".into(), cpus.to_string().into()]);
        }
        if let Some(memory) = &self.memory {
            out.extend(["--memory".into(), memory.into()]);
        }
        let network = match self.network {
            Network::Host => "host",
            Network::None => "none",
        };
        out.extend(["--network".into(), network.into()]);
        let volume = |outside: &Path, inside: &Path, mode: &str| {
            let mut v = outside.as_os_str().to_owned();
            v.push(":");
            v.push(inside.as_os_str());
            v.push(mode);
            v
        };
        for path in existing(&self.read_write) {
            out.extend(["-v".into(), volume(&path, &path, "")]);
        }
        for path in existing(&self.read_only) {
            out.extend(["-v".into(), volume(&path, &path, ":ro")]);
        }
        for (outside, inside) in &self.binds {
            out.extend(["-v".into(), volume(outside, inside, "")]);
        }
        out.extend(["-w".into(), call.cwd.as_os_str().to_owned()]);
        if let Some(home) = call.home {
            let mut value = OsString::from("HOME=");
            value.push(home.as_os_str());
            out.extend(["-e".into(), value]);
        }
        for name in call.env_names {
            out.extend(["-e".into(), name.into()]);
        }
        if call.env_file {
            out.extend(["--env-file".into(), "/dev/fd/3".into()]);
        }
        // The command is the entry point, whatever the image's own: its arguments follow the
        // image, in place of the image's default command.
        out.extend(["--entrypoint".into(), call.command.into()]);
        out.push(self.image.clone().into());
        out.extend(call.args.iter().map(OsString::from));
        out
    }

    fn user_arg(&self) -> OsString {
        format!("{}:{}", self.user.0, self.user.1).into()
    }

    /// The env file that sets `env` in a container (`NAME=VALUE` lines). `Err` names a
    /// name outside the grammar (a bare `NAME` line, or `NAME*`, would copy the engine's own
    /// variables) or a value the format cannot carry (a line break).
    pub fn env_file(env: &[(String, String)]) -> Result<Vec<u8>, String> {
        let mut out = Vec::new();
        for (name, value) in env {
            crate::model::variable::check_name(name)?;
            if value.contains(['\n', '\r', '\0']) {
                return Err(format!(
                    "`{name}`'s value has a line break, which a container's env file cannot carry"
                ));
            }
            out.extend_from_slice(format!("{name}={value}\n").as_bytes());
        }
        Ok(out)
    }

    /// Removes the container of this process, if it is still there (its process was
    /// killed, or the gateway is stopping). Runs in the background: nothing waits for it.
    pub fn remove(&self) {
        let Some(name) = self.name.clone() else {
            return;
        };
        let engine = self.engine.clone();
        std::thread::spawn(move || {
            let _ = Command::new(&engine)
                .args(removal(&engine))
                .arg(&name)
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .status();
        });
    }

    /// Removes the containers a gateway with this state folder left behind (killed before
    /// it could remove them). Returns how many there were.
    pub fn remove_leftovers(engine: &Path, state: &Path) -> Result<usize, String> {
        let mut filter = OsString::from(format!("label={LABEL}="));
        filter.push(state.as_os_str());
        let listed = Command::new(engine)
            .args(["ps", "-aq", "--filter"])
            .arg(filter)
            .stdin(Stdio::null())
            .output()
            .map_err(|e| format!("cannot run {}: {e}", engine.display()))?;
        if !listed.status.success() {
            return Err(String::from_utf8_lossy(&listed.stderr).trim().to_owned());
        }
        let ids: Vec<String> = String::from_utf8_lossy(&listed.stdout)
            .split_whitespace()
            .map(str::to_owned)
            .collect();
        if ids.is_empty() {
            return Ok(0);
        }
        let removed = Command::new(engine)
            .args(removal(engine))
            .args(&ids)
            .stdin(Stdio::null())
            .output()
            .map_err(|e| format!("cannot run {}: {e}", engine.display()))?;
        match removed.status.success() {
            true => Ok(ids.len()),
            false => Err(String::from_utf8_lossy(&removed.stderr).trim().to_owned()),
        }
    }

    /// The engine (`podman`, `docker` or a path) as an absolute path, links resolved.
    pub fn locate(engine: &Path) -> Result<PathBuf, String> {
        super::sandbox::locate(engine, "Debian package `podman` or `docker.io`")
    }

    /// Whether the engine runs here and has the image: `Err` says why not.
    pub fn probe(engine: &Path, image: &str) -> Result<(), String> {
        let out = Command::new(engine)
            .args(["image", "inspect", "--format", "{{.Id}}", "--", image])
            .stdin(Stdio::null())
            .output()
            .map_err(|e| format!("cannot run {}: {e}", engine.display()))?;
        match out.status.success() {
            true => Ok(()),
            false => Err(format!(
                "{} has no image `{image}` (pull or build it first): {}",
                engine.display(),
                String::from_utf8_lossy(&out.stderr).trim()
            )),
        }
    }

    /// Why `path` cannot be mounted in a container by the engine's `-v` syntax, if it
    /// cannot.
    pub fn unmountable(path: &Path) -> Option<String> {
        path.to_str()
            .is_none_or(|p| p.contains(':') || p.contains(','))
            .then(|| {
                format!(
                    "{} cannot be mounted in a container (a `:` or `,` in it, or not UTF-8)",
                    path.display()
                )
            })
    }
}

/// The variable that marks one command the agent runs in its container: the processes it
/// starts there are the engine's children, not the gateway's, so killing the engine's
/// `exec` client leaves them running; they inherit this variable, and are found by it.
pub const MARK_VARIABLE: &str = "SIDEKICKS_COMMAND";

/// One command's mark inside its container ([`MARK_VARIABLE`] with a value of its own),
/// which finds what the command started there so that `!stop` and its release end it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mark(String);

impl Mark {
    /// A mark no other command has (128 random bits).
    pub fn new() -> Self {
        Self(crate::model::random::hex(16))
    }

    /// The variable the command gets, as its environment entry.
    pub fn variable(&self) -> (String, String) {
        (MARK_VARIABLE.to_owned(), self.0.clone())
    }

    /// Kills every process on this machine that carries this mark, until a scan finds none
    /// it has not killed yet (a process that forks while it is killed leaves a child for the
    /// next round; one killed may still show in the next scan while it dies). The
    /// container's processes are this machine's: the engine runs here, as the gateway's
    /// user or in a user namespace that user owns, so the gateway may read and signal them.
    /// Returns how many were killed.
    pub fn kill_all(&self) -> usize {
        let entry = format!("{MARK_VARIABLE}={}", self.0).into_bytes();
        let mut killed = std::collections::HashSet::new();
        for _ in 0..KILL_ROUNDS {
            let found = marked(Path::new("/proc"), &entry);
            let new: Vec<i32> = found.into_iter().filter(|p| !killed.contains(p)).collect();
            if new.is_empty() {
                break;
            }
            for pid in new {
                // SAFETY: kill(2) touches no memory; a pid reused since the scan would need
                // to carry the same 128-bit mark to be signalled.
                if unsafe { libc::kill(pid, libc::SIGKILL) } == 0 {
                    killed.insert(pid);
                }
            }
        }
        killed.len()
    }
}

/// Most scans [`Mark::kill_all`] makes: each one kills what the last one found.
const KILL_ROUNDS: usize = 20;

/// The live processes under `proc` whose environment holds `entry` (`NAME=value`) as a whole
/// entry; those whose environment cannot be read (another user's) are passed over.
fn marked(proc: &Path, entry: &[u8]) -> Vec<i32> {
    let Ok(dir) = std::fs::read_dir(proc) else {
        return Vec::new();
    };
    dir.filter_map(|e| {
        let e = e.ok()?;
        let pid: i32 = e.file_name().to_str()?.parse().ok()?;
        let environ = std::fs::read(e.path().join("environ")).ok()?;
        environ
            .split(|b| *b == 0)
            .any(|var| var == entry)
            .then_some(pid)
    })
    .collect()
}

/// The engine's arguments that remove containers at once, running or not.
fn removal(engine: &Path) -> &'static [&'static str] {
    match engine.file_name().is_some_and(|n| n == "docker") {
        // Docker kills at once with `-f`; Podman would wait its stop timeout first.
        true => &["rm", "-f"],
        false => &["rm", "-f", "-t", "0"],
    }
}

/// The paths that exist, canonical (a path that is not there has nothing to mount).
fn existing(paths: &[PathBuf]) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = paths
        .iter()
        .filter_map(|p| std::fs::canonicalize(p).ok())
        .collect();
    out.sort();
    out.dedup();
    out
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;

    /// A container runner for tests, its mounts under `dir`.
    pub(in crate::acp) fn container(dir: &Path) -> Container {
        Container {
            engine: "/usr/bin/podman".into(),
            image: "agent:1".into(),
            network: Network::None,
            cpus: Some(1.5),
            memory: Some("2g".into()),
            pids_limit: 100,
            read_write: vec![dir.join("work"), dir.join("home"), dir.join("missing")],
            read_only: vec![dir.join("tools")],
            binds: vec![(
                dir.join("tools.sock"),
                "/run/sidekicks/room-tools.sock".into(),
            )],
            state: dir.join("state"),
            user: (1000, 1000),
            name: None,
            room_home: None,
        }
    }

    fn call<'a>(cwd: &'a Path, names: &'a [String], home: &'a Path) -> Invocation<'a> {
        Invocation {
            command: "agent",
            args: &[],
            cwd,
            env_names: names,
            home: Some(home),
            env_file: false,
            interactive: true,
        }
    }

    fn text(line: &[OsString]) -> String {
        line.iter()
            .map(|a| a.to_string_lossy().into_owned())
            .collect::<Vec<_>>()
            .join(" ")
    }

    #[test]
    fn the_agent_gets_a_new_container_with_limits_mounts_at_the_same_paths_and_its_variables_by_name()
     {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        for d in ["work", "home", "tools"] {
            std::fs::create_dir(root.join(d)).unwrap();
        }
        let named = container(&root).named("demo agent");
        let name = named.name.clone().unwrap();
        assert!(name.starts_with("sidekicks-demo-agent-"), "{name}");
        assert_ne!(container(&root).named("demo").name, named.name);
        let names = vec!["API_KEY".to_owned()];
        let work = root.join("work");
        let line = text(&named.command_line(&call(&work, &names, &root.join("home")), true));
        let r = root.display();
        let expected = format!(
            "run --rm -i --name {name} --label sidekicks.state={r}/state --user 1000:1000 \
             --cap-drop all --security-opt no-new-privileges --pids-limit 100 --cpus 1.5 \
             --memory 2g --network none -v {r}/home:{r}/home -v {r}/work:{r}/work \
             -v {r}/tools:{r}/tools:ro -v {r}/tools.sock:/run/sidekicks/room-tools.sock \
             -w {r}/work -e HOME={r}/home -e API_KEY --entrypoint agent agent:1"
        );
        assert_eq!(line, expected);
        // No value of a variable is on the command line.
        assert!(!line.contains("API_KEY="));
    }

    #[test]
    fn the_agents_commands_run_in_its_own_container_and_git_before_it_starts_in_a_one_off() {
        let dir = tempfile::tempdir().unwrap();
        let work = dir.path().join("work");
        let mut c = Invocation {
            command: "sh",
            args: &["-c".to_owned(), "make".to_owned()],
            cwd: &work,
            env_names: &[],
            home: None,
            env_file: true,
            interactive: false,
        };
        let named = container(dir.path()).named("demo");
        let name = named.name.clone().unwrap();
        assert_eq!(
            text(&named.command_line(&c, false)),
            format!(
                "exec --user 1000:1000 -w {} --env-file /dev/fd/3 {name} sh -c make",
                work.display()
            )
        );
        c.env_file = false;
        let one_off = text(&container(dir.path()).command_line(&c, false));
        assert!(one_off.starts_with("run --rm --label "), "{one_off}");
        assert!(!one_off.contains("--name"), "{one_off}");
        assert!(
            one_off.ends_with(" --entrypoint sh agent:1 -c make"),
            "{one_off}"
        );
    }

    #[test]
    fn an_env_file_carries_plain_values_and_refuses_line_breaks() {
        let env = vec![("A".to_owned(), "1 2=3".to_owned())];
        assert_eq!(Container::env_file(&env).unwrap(), b"A=1 2=3\n");
        let bad = vec![("B".to_owned(), "x\nEVIL=1".to_owned())];
        assert!(Container::env_file(&bad).unwrap_err().contains("`B`"));
        // A name is a name by grammar: a line break in it would leave a bare `NAME` line,
        // which the engine fills from its own environment.
        for name in ["SECRET\nX", "SECRET*", "", "A=B"] {
            let bad = vec![(name.to_owned(), "1".to_owned())];
            assert!(Container::env_file(&bad).is_err(), "{name:?}");
        }
    }

    #[test]
    fn a_mark_kills_every_process_that_carries_it_and_none_that_does_not() {
        let mark = Mark::new();
        assert_ne!(mark, Mark::new());
        let (name, value) = mark.variable();
        let start = |value: &str, script: &str| {
            std::process::Command::new("sh")
                .args(["-c", script])
                .env(&name, value)
                .spawn()
                .unwrap()
        };
        // A child that outlives its shell, as a command's background job does.
        let mut marked_shell = start(&value, "sleep 60 & wait");
        let mut other = start(&format!("{value}0"), "exec sleep 60");
        let entry = format!("{name}={value}").into_bytes();
        let shell_pid = marked_shell.id() as i32;
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        while marked(Path::new("/proc"), &entry).len() < 2 {
            assert!(std::time::Instant::now() < deadline, "no background sleep");
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        assert!(marked(Path::new("/proc"), &entry).contains(&shell_pid));
        assert_eq!(mark.kill_all(), 2);
        use std::os::unix::process::ExitStatusExt as _;
        assert_eq!(marked_shell.wait().unwrap().signal(), Some(libc::SIGKILL));
        // A value that only starts with the mark's is another mark.
        assert_eq!(other.try_wait().unwrap(), None);
        other.kill().unwrap();
        other.wait().unwrap();
        // The background sleep, killed, is gone once it has died (nobody here reaps it).
        while !marked(Path::new("/proc"), &entry).is_empty() {
            assert!(
                std::time::Instant::now() < deadline,
                "a marked process lives"
            );
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
    }

    #[test]
    fn a_rooms_home_starts_as_a_copy_of_the_agents_and_is_made_once() {
        let dir = tempfile::tempdir().unwrap();
        let home = dir.path().join("home");
        std::fs::create_dir_all(home.join(".config/agent")).unwrap();
        std::fs::write(home.join(".config/agent/settings.json"), "{}").unwrap();
        std::os::unix::fs::symlink("/etc/hostname", home.join("link")).unwrap();
        let room = RoomHome::of(&home, &dir.path().join("work/room-a"));
        assert_eq!(room.path, home.join("rooms/room-a"));
        room.make().unwrap();
        let made = &room.path;
        assert_eq!(
            std::fs::read_to_string(made.join(".config/agent/settings.json")).unwrap(),
            "{}"
        );
        // A link stays a link (never followed into a copy of what it names).
        assert_eq!(
            std::fs::read_link(made.join("link")).unwrap(),
            Path::new("/etc/hostname")
        );
        use std::os::unix::fs::PermissionsExt as _;
        assert_eq!(
            std::fs::metadata(made).unwrap().permissions().mode() & 0o777,
            0o700
        );
        // The rooms' homes are not copied into a room's; what a room wrote stays.
        let other = RoomHome::of(&home, Path::new("room-b"));
        std::fs::write(made.join("transcript"), "room a's").unwrap();
        other.make().unwrap();
        assert!(!other.path.join("rooms").exists());
        room.make().unwrap();
        assert!(made.join("transcript").exists());
    }

    #[test]
    fn paths_the_mount_syntax_cannot_carry_are_named() {
        assert!(Container::unmountable(Path::new("/srv/work")).is_none());
        assert!(Container::unmountable(Path::new("/srv/a:b")).is_some());
        assert!(Container::unmountable(Path::new("/srv/a,ro")).is_some());
    }
}
