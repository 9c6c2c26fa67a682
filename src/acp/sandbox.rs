//! Running an agent under bubblewrap (`bwrap`): the system read-only, its workspace and its
//! own home read-write, a fresh `/tmp` and `/run` (no session bus, no container engine
//! socket), and what the gateway keeps to itself (the state folder with every token, crypto
//! key and transcript, the config, password files, the keys in the gateway's own home) not
//! there at all. The network stays open unless the agent's config closes it: agents call
//! their model.
//!
//! Nothing the agent controls reaches the launcher: bubblewrap is found by its absolute path
//! when the gateway starts (never through a `PATH` the agent could set), and the environment
//! an agent asks for a command of its own goes inside the sandbox (`--setenv`, passed through
//! a pipe, not the command line other users can read), never to `bwrap` itself.
//!
//! The mounts are laid out from the shallowest path to the deepest, so the most specific
//! rule wins: a workspace inside a hidden folder is still there, and a hidden folder inside
//! a workspace is still hidden. When a hidden and a visible rule name the same path, hiding
//! wins.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// What every sandbox is: its own PID and IPC namespaces, gone with the gateway, the system
/// read-only, fresh `/dev`, `/proc` and `/tmp`.
const BASE: [&str; 12] = [
    "--die-with-parent",
    "--unshare-pid",
    "--unshare-ipc",
    "--ro-bind",
    "/",
    "/",
    "--dev",
    "/dev",
    "--proc",
    "/proc",
    "--tmpfs",
    "/tmp",
];

/// Mounts after [`BASE`]: `/run` (session buses, container engine and other sockets)
/// replaced by an empty folder.
const MASKED: [&str; 2] = ["--tmpfs", "/run"];

/// What network a sandboxed agent has.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Network {
    /// The host's: agents call their model over it (the default).
    #[default]
    Host,
    /// None but a loopback of its own (a network namespace of its own: no host service, no
    /// abstract socket of the host): what a locked-down deployment uses, with a model the
    /// agent reaches otherwise. The room tools stay reachable, over a socket file bound in.
    None,
}

/// How to sandbox one agent process.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Sandbox {
    /// The bubblewrap program, an absolute path found when the gateway started
    /// ([`Sandbox::locate`]).
    pub program: PathBuf,
    /// Paths the agent must not see: folders become empty, files become empty files.
    pub hide: Vec<PathBuf>,
    /// Paths the agent may read and write (its workspace, its home).
    pub read_write: Vec<PathBuf>,
    /// Paths the agent may read, even inside a hidden folder (for example where its own
    /// program is installed).
    pub read_only: Vec<PathBuf>,
    /// Its network.
    pub network: Network,
    /// Files bound in at another place: (outside, inside), such as the room tools' socket.
    pub binds: Vec<(PathBuf, PathBuf)>,
}

/// One mount, in the order bubblewrap applies them.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
enum Mount {
    /// Bound where it is, writable.
    ReadWrite(PathBuf),
    /// Bound where it is, read-only.
    ReadOnly(PathBuf),
    /// Covered by an empty folder or file (declared last so it wins a tie).
    Hidden(PathBuf),
}

impl Mount {
    fn path(&self) -> &Path {
        match self {
            Mount::ReadWrite(p) | Mount::ReadOnly(p) | Mount::Hidden(p) => p,
        }
    }
}

impl Sandbox {
    /// The command line that runs `command args` in the sandbox, in `cwd`. Paths that do
    /// not exist are left out (nothing to hide, nothing to bind).
    pub fn command_line(&self, command: &str, args: &[String], cwd: &Path) -> Vec<OsString> {
        let mut out: Vec<OsString> = BASE.iter().chain(&MASKED).map(OsString::from).collect();
        // Name resolution may live in `/run` (systemd-resolved): that one file stays.
        if let Ok(resolv) = std::fs::canonicalize("/etc/resolv.conf")
            && resolv.starts_with("/run")
        {
            let resolv = resolv.into_os_string();
            out.extend(["--ro-bind".into(), resolv.clone(), resolv]);
        }
        if self.network == Network::None {
            out.push("--unshare-net".into());
        }
        for mount in self.mounts() {
            let path = mount.path().as_os_str().to_owned();
            match &mount {
                Mount::ReadWrite(_) => out.extend(["--bind".into(), path.clone(), path]),
                Mount::ReadOnly(_) => out.extend(["--ro-bind".into(), path.clone(), path]),
                Mount::Hidden(p) if p.is_dir() => out.extend(["--tmpfs".into(), path]),
                Mount::Hidden(_) => out.extend(["--ro-bind".into(), "/dev/null".into(), path]),
            }
        }
        for (outside, inside) in &self.binds {
            out.extend([
                "--bind".into(),
                outside.as_os_str().to_owned(),
                inside.as_os_str().to_owned(),
            ]);
        }
        out.extend(["--chdir".into(), cwd.as_os_str().to_owned(), "--".into()]);
        out.push(command.into());
        out.extend(args.iter().map(OsString::from));
        out
    }

    /// Every mount, canonical and existing, shallowest first.
    fn mounts(&self) -> Vec<Mount> {
        let canonical = |p: &PathBuf| std::fs::canonicalize(p).ok();
        let mut mounts: Vec<Mount> = self
            .read_write
            .iter()
            .filter_map(canonical)
            .map(Mount::ReadWrite)
            .chain(
                self.read_only
                    .iter()
                    .filter_map(canonical)
                    .map(Mount::ReadOnly),
            )
            .chain(self.hide.iter().filter_map(canonical).map(Mount::Hidden))
            .filter(|m| m.path() != Path::new("/"))
            .collect();
        mounts.sort_by(|a, b| {
            let depth = |m: &Mount| m.path().components().count();
            depth(a).cmp(&depth(b)).then_with(|| a.cmp(b))
        });
        mounts.dedup();
        mounts
    }

    /// `program` (a name looked up in the gateway's own `PATH`, or a path) as the absolute
    /// path of the file it is, links resolved: what runs the sandbox is fixed at start.
    /// `Err` says why it cannot be used.
    pub fn locate(program: &Path) -> Result<PathBuf, String> {
        locate(program, "Debian package `bubblewrap`")
    }

    /// The arguments that set `env` inside the sandbox (`--setenv NAME VALUE`), as bubblewrap
    /// reads them from a file descriptor (`--args FD`): NUL-separated.
    pub fn inner_env(env: &[(String, String)]) -> Vec<u8> {
        let mut out = Vec::new();
        for (name, value) in env {
            for part in ["--setenv", name.as_str(), value.as_str()] {
                out.extend_from_slice(part.as_bytes());
                out.push(0);
            }
        }
        out
    }

    /// Whether bubblewrap runs here: `Err` says why not (not installed, or the kernel or a
    /// container refuses the namespaces it needs).
    pub fn probe(program: &Path) -> Result<(), String> {
        let output = Command::new(program)
            .args(BASE)
            .args(MASKED)
            .args(["--", "true"])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .output();
        match output {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Err(format!(
                "{} is not installed (Debian package `bubblewrap`)",
                program.display()
            )),
            Err(e) => Err(format!("cannot run {}: {e}", program.display())),
            Ok(out) if out.status.success() => Ok(()),
            Ok(out) => Err(format!(
                "{} does not work here: {}",
                program.display(),
                String::from_utf8_lossy(&out.stderr).trim()
            )),
        }
    }
}

/// `program` (a name looked up in the gateway's own `PATH`, never a relative folder of it,
/// or a path) as the absolute path of the file it is, links resolved; `Err` says it is not
/// installed, with `package` as the hint, or why it cannot be used.
pub fn locate(program: &Path, package: &str) -> Result<PathBuf, String> {
    let found = match program.components().count() > 1 || program.is_absolute() {
        true => Some(program.to_owned()),
        false => std::env::var_os("PATH").and_then(|path| {
            std::env::split_paths(&path)
                .filter(|dir| dir.is_absolute())
                .map(|dir| dir.join(program))
                .find(|p| p.is_file())
        }),
    };
    let missing = || format!("{} is not installed ({package})", program.display());
    let found = found.ok_or_else(missing)?;
    std::fs::canonicalize(&found).map_err(|e| match e.kind() {
        std::io::ErrorKind::NotFound => missing(),
        _ => format!("{} cannot be used: {e}", found.display()),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::agent::ROOM_TOOLS_SOCKET;

    fn dirs() -> (tempfile::TempDir, PathBuf, PathBuf, PathBuf) {
        let root = tempfile::tempdir().unwrap();
        let state = root.path().join("state");
        let work = state.join("work");
        let secret = work.join("secret");
        for d in [&state, &work, &secret] {
            std::fs::create_dir_all(d).unwrap();
        }
        (root, state, work, secret)
    }

    #[test]
    fn the_deepest_rule_wins_and_hiding_wins_a_tie() {
        let (_root, state, work, secret) = dirs();
        let sandbox = Sandbox {
            program: "bwrap".into(),
            hide: vec![state.clone(), secret.clone(), work.join("missing")],
            read_write: vec![work.clone(), secret.clone()],
            read_only: vec![],
            network: Network::Host,
            binds: vec![],
        };
        let c = |p: &PathBuf| std::fs::canonicalize(p).unwrap();
        assert_eq!(
            sandbox.mounts(),
            vec![
                Mount::Hidden(c(&state)),
                Mount::ReadWrite(c(&work)),
                Mount::ReadWrite(c(&secret)),
                Mount::Hidden(c(&secret)),
            ],
            "paths that do not exist are left out"
        );
    }

    #[test]
    fn bubblewrap_is_found_by_its_absolute_path_at_start() {
        let sh = Sandbox::locate(Path::new("sh")).unwrap();
        assert!(sh.is_absolute() && sh.is_file(), "{sh:?}");
        assert_eq!(Sandbox::locate(&sh).unwrap(), sh, "a path stays itself");
        let missing = Sandbox::locate(Path::new("no-such-bwrap-here")).unwrap_err();
        assert!(missing.contains("is not installed"), "{missing}");
    }

    #[test]
    fn a_commands_own_environment_is_set_inside_as_nul_separated_arguments() {
        let env = [
            ("PATH".to_owned(), "/w/bin".to_owned()),
            ("A".into(), "b c".into()),
        ];
        assert_eq!(
            Sandbox::inner_env(&env),
            b"--setenv\0PATH\0/w/bin\0--setenv\0A\0b c\0".to_vec()
        );
    }

    #[test]
    fn the_command_line_ends_with_the_agent_in_its_folder() {
        let (_root, _state, work, _secret) = dirs();
        let sandbox = Sandbox {
            program: "bwrap".into(),
            hide: vec![],
            read_write: vec![work.clone()],
            read_only: vec![],
            network: Network::Host,
            binds: vec![],
        };
        let line = sandbox.command_line("agent", &["--acp".into()], &work);
        let text: Vec<&str> = line.iter().map(|s| s.to_str().unwrap()).collect();
        assert!(
            text.windows(2).any(|w| w == ["--tmpfs", "/run"]),
            "/run is masked: {text:?}"
        );
        let tail: Vec<&str> = line[line.len() - 5..]
            .iter()
            .map(|s| s.to_str().unwrap())
            .collect();
        assert_eq!(
            tail,
            ["--chdir", work.to_str().unwrap(), "--", "agent", "--acp"]
        );
        assert!(
            !text.contains(&"--unshare-net"),
            "the host's network by default"
        );
    }

    #[test]
    fn without_network_the_sandbox_has_its_own_and_the_socket_bound_in() {
        let dir = tempfile::tempdir().unwrap();
        let work = dir.path().join("work");
        std::fs::create_dir_all(&work).unwrap();
        let socket = dir.path().join("tools.sock");
        let sandbox = Sandbox {
            program: "bwrap".into(),
            hide: vec![],
            read_write: vec![work.clone()],
            read_only: vec![],
            network: Network::None,
            binds: vec![(socket.clone(), PathBuf::from(ROOM_TOOLS_SOCKET))],
        };
        let line = sandbox.command_line("agent", &[], &work);
        let text: Vec<&str> = line.iter().map(|s| s.to_str().unwrap()).collect();
        assert!(text.contains(&"--unshare-net"), "{text:?}");
        let bind = ["--bind", socket.to_str().unwrap(), ROOM_TOOLS_SOCKET];
        let at = (text.windows(3).position(|w| w == bind)).expect("the socket is bound in");
        let run = (text.windows(2).position(|w| w == ["--tmpfs", "/run"])).unwrap();
        assert!(
            run < at,
            "bound after /run is masked, or the mask hides it: {text:?}"
        );
    }
}
