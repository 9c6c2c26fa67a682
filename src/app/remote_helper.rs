//! `sidekicks remote`: the SSH runner's helper on an agent's host. The gateway runs it over
//! `ssh` and writes one request on its stdin ([`crate::remote::wire`]):
//!
//! - `hello`: it answers its version and whether bubblewrap works here;
//! - `run`: it starts the command asked for (the agent, or one of its commands) in its own
//!   session, in the host's bubblewrap sandbox where that is wanted (its workspace and home
//!   writable, the remote user's keys and the gateway's other agents' files hidden), with
//!   only the environment asked for; the rest of the connection is the command's. When the
//!   connection goes (the gateway stopped it, or died), so does everything it started;
//! - `file`: one operation beneath a conversation's folder, by handle
//!   ([`crate::workspace::folder::remote::serve`]);
//! - `worktree`: one step of worktree mode, with git in the host's sandbox
//!   ([`crate::workspace::worktree::remote::serve`]).
//!
//! It reads the request a byte at a time from the descriptor itself, so nothing of what
//! follows is taken from the command that gets it.

use std::fs::File;
use std::mem::ManuallyDrop;
use std::os::fd::{FromRawFd as _, OwnedFd};
use std::os::unix::process::CommandExt as _;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitCode};
use std::sync::Arc;

use crate::acp::{ENV_FD, Network, Sandbox, own_session, program_folders, read_on_fd3};
use crate::model::agent::ROOM_TOOLS_SOCKET;
use crate::model::variable;
use crate::remote::AGENT_HOMES;
use crate::remote::wire::{
    self, Boxing, Hello, Request, RunRequest, SandboxWish, WireError, WorktreeRequest,
};
use crate::workspace::worktree::GitLauncher;
use crate::workspace::{WorktreeError, Worktrees};

/// Serves one request from stdin.
pub fn serve() -> ExitCode {
    // SAFETY: descriptor 0 is our stdin for the whole run; ManuallyDrop never closes it.
    let mut input = ManuallyDrop::new(unsafe { File::from_raw_fd(0) });
    let request = match wire::read_line::<Request>(&mut *input) {
        Ok(request) => request,
        Err(e) => {
            eprintln!("sidekicks remote: {e}");
            return ExitCode::from(2);
        }
    };
    let mut out = std::io::stdout().lock();
    let answered = match request {
        Request::Hello => wire::write_line(&mut out, &hello()),
        Request::File(file) => crate::workspace::folder::remote::serve(file, &mut *input, &mut out),
        Request::Worktree(request) => worktree(request, &mut out),
        Request::Run(run) => {
            drop(out);
            return self::run(run);
        }
    };
    match answered.and_then(|_| Ok(std::io::Write::flush(&mut out)?)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("sidekicks remote: {e}");
            ExitCode::from(2)
        }
    }
}

/// What this host has.
fn hello() -> Hello {
    Hello {
        version: env!("CARGO_PKG_VERSION").into(),
        bubblewrap: bubblewrap().is_ok(),
    }
}

/// bubblewrap, if it works here.
fn bubblewrap() -> Result<PathBuf, String> {
    let program = Sandbox::locate(Path::new("bwrap"))?;
    Sandbox::probe(&program)?;
    Ok(program)
}

/// Runs `request`'s command until it ends or the connection goes; its exit status.
fn run(request: RunRequest) -> ExitCode {
    let failed = |why: String, code: u8| {
        eprintln!("sidekicks remote: {why}");
        ExitCode::from(code)
    };
    let (home, mut sandbox) = match boxed(&request.boxing) {
        Ok(boxed) => boxed,
        Err(why) => return failed(why, 126),
    };
    if let Some(sandbox) = sandbox.as_mut() {
        with_program(sandbox, &request);
    }
    // The room tools come through the socket the connection forwards, bound in where the
    // agent finds them at home: only a sandbox can put it there.
    let _forwarded = match (&request.room_tools, sandbox.as_mut()) {
        (None, _) => None,
        (Some(socket), Some(sandbox)) if appears(socket) => {
            sandbox
                .binds
                .push((socket.clone(), ROOM_TOOLS_SOCKET.into()));
            Some(Removed(socket.clone()))
        }
        (Some(socket), Some(_)) => {
            eprintln!(
                "sidekicks remote: the room tools' socket {} is not there (does sshd allow \
                 forwarding Unix sockets, AllowStreamLocalForwarding?): the agent runs without \
                 them",
                socket.display()
            );
            None
        }
        (Some(_), None) => {
            return failed(
                "the room tools need the host's sandbox, and it has none".into(),
                126,
            );
        }
    };
    if let Some(why) = (request.env.iter()).find_map(|(name, _)| variable::check_name(name).err()) {
        return failed(why, 126);
    }
    let (program, args, cwd) = (&request.program, &request.args, &request.cwd);
    let (mut cmd, _env_pipe) =
        match command(sandbox.as_ref(), program, args, cwd, &home, &request.env) {
            Ok(made) => made,
            Err(e) => return failed(format!("cannot pass the environment: {e}"), 126),
        };
    cmd.current_dir(cwd);
    // A session of its own (its whole group is signalled when the connection goes).
    own_session(&mut cmd);
    // SAFETY: prctl(2) is async-signal-safe and touches no memory of ours: gone if this
    // helper is.
    unsafe {
        cmd.pre_exec(|| {
            libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
            Ok(())
        });
    }
    match cmd.spawn() {
        Ok(child) => watch(child),
        Err(e) => failed(format!("cannot run {}: {e}", request.program), 127),
    }
}

/// Shows `sandbox` the folders `request`'s program needs, found on this host as the
/// gateway finds them at home ([`crate::acp::program_folders`], with this user's `PATH`),
/// and this helper's own program where the agent runs the room tools' bridge through it.
fn with_program(sandbox: &mut Sandbox, request: &RunRequest) {
    let path = std::env::var_os("PATH");
    (sandbox.read_only).extend(program_folders(
        &request.program,
        &request.args,
        path.as_deref(),
    ));
    if request.room_tools.is_some() {
        sandbox.read_only.extend(std::env::current_exe().ok());
    }
}

/// Whether `socket` is there, or appears within a second (`sshd` makes a forwarded socket
/// as the connection opens, before this helper runs; the wait is for a slow one).
fn appears(socket: &Path) -> bool {
    for _ in 0..20 {
        if socket.exists() {
            return true;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    socket.exists()
}

/// A forwarded socket, removed when the agent ends (`sshd` leaves it, and a name is used
/// once).
struct Removed(PathBuf);

impl Drop for Removed {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

/// Does one step of worktree mode, git in the host's sandbox as the agent's commands are.
fn worktree(request: WorktreeRequest, out: &mut impl std::io::Write) -> Result<(), WireError> {
    let launcher = match boxed(&request.boxing) {
        Ok((home, Some(sandbox))) => {
            let launch: GitLauncher = Arc::new(move |cwd, args| {
                Ok(command(Some(&sandbox), "git", args, cwd, &home, &[])?.0)
            });
            Some(launch)
        }
        Ok((_, None)) => None,
        Err(why) => {
            let error = WorktreeError::NoGit(std::io::Error::other(why));
            return crate::workspace::worktree::remote::refuse(out, &error);
        }
    };
    crate::workspace::worktree::remote::serve(request, launcher, out)
}

/// The command that runs `program args` in `cwd`, in `sandbox` when there is one, with the
/// remote user's `PATH`, `home` as its `HOME`, `env` and nothing else of this helper's
/// environment; with the pipe that must stay open until it is spawned, when `env` goes
/// through one.
fn command(
    sandbox: Option<&Sandbox>,
    program: &str,
    args: &[String],
    cwd: &Path,
    home: &Path,
    env: &[(String, String)],
) -> std::io::Result<(Command, Option<OwnedFd>)> {
    let mut env_pipe = None;
    let mut cmd = match sandbox {
        Some(sandbox) => {
            let mut cmd = Command::new(&sandbox.program);
            // Its variables are set inside by bubblewrap, read from a pipe as at home: never
            // on the launcher, where a `PATH` or a loader's variable would choose what runs
            // outside the sandbox.
            if !env.is_empty() {
                env_pipe = Some(read_on_fd3(&mut cmd, &Sandbox::inner_env(env))?);
                cmd.args(["--args", &ENV_FD.to_string()]);
            }
            cmd.args(sandbox.command_line(program, args, cwd));
            cmd
        }
        None => {
            let mut cmd = Command::new(program);
            cmd.args(args);
            cmd
        }
    };
    let path = std::env::var_os("PATH").unwrap_or_else(|| "/usr/local/bin:/usr/bin:/bin".into());
    cmd.env_clear().env("PATH", path).env("HOME", home);
    if sandbox.is_none() {
        cmd.envs(env.iter().map(|(k, v)| (k, v)));
    }
    Ok((cmd, env_pipe))
}

/// The home (`~/` read as the remote user's, made private) and the sandbox `boxing` asks
/// for, its workspace made; `Err` when the sandbox is required and this host has none.
fn boxed(boxing: &Boxing) -> Result<(PathBuf, Option<Sandbox>), String> {
    let home = match boxing.home.strip_prefix("~/") {
        Some(rest) => user_home()?.join(rest),
        None => PathBuf::from(&boxing.home),
    };
    crate::state_dir::create_private(&home)
        .map_err(|e| format!("cannot make the agent's home {}: {e}", home.display()))?;
    std::fs::create_dir_all(&boxing.workspace).map_err(|e| {
        format!(
            "cannot make the workspace {}: {e}",
            boxing.workspace.display()
        )
    })?;
    let sandbox = match (boxing.sandbox, bubblewrap()) {
        (SandboxWish::Auto, Err(_)) => None,
        (_, Ok(program)) => Some(sandbox(program, boxing, &home)),
        (SandboxWish::Required, Err(why)) => {
            return Err(format!("the sandbox is required but {why}"));
        }
    };
    Ok((home, sandbox))
}

/// The remote user's home.
fn user_home() -> Result<PathBuf, String> {
    std::env::var_os("HOME")
        .map(PathBuf::from)
        .ok_or_else(|| "the remote user has no HOME".into())
}

/// The sandbox of `boxing` with `home`, as at home an allowlist: the host's system, its
/// workspace, home and (in worktree mode) the repository's git folder writable, and
/// nothing else of the host but what [`with_program`] adds; the other agents' homes and
/// what the gateway names hidden should what is shown hold them.
fn sandbox(program: PathBuf, boxing: &Boxing, home: &Path) -> Sandbox {
    let hide = (user_home().ok().map(|u| u.join(AGENT_HOMES)).into_iter())
        .chain(boxing.hide.iter().cloned())
        .collect();
    // The git folder, asked of git itself (hooks and outside configuration off), as the
    // gateway does at home.
    let git_folder = (boxing.repository.clone()).and_then(|repository| {
        let plain = Worktrees {
            repository,
            base: None,
            branch_prefix: String::new(),
            launcher: None,
            remote: None,
        };
        plain.git_folder().ok()
    });
    Sandbox {
        program,
        hide,
        read_write: [boxing.workspace.clone(), home.to_owned()]
            .into_iter()
            .chain(git_folder)
            .collect(),
        read_only: vec![],
        network: match boxing.offline {
            true => Network::None,
            false => Network::Host,
        },
        binds: vec![],
    }
}

/// Waits for `child`, killing its whole session when the connection goes (the far end of
/// stdout closes); its exit status (128 + the signal when killed).
fn watch(mut child: Child) -> ExitCode {
    let group = child.id() as i32;
    loop {
        match child.try_wait() {
            Ok(Some(status)) => {
                let code = (status.code())
                    .or_else(|| {
                        std::os::unix::process::ExitStatusExt::signal(&status).map(|s| 128 + s)
                    })
                    .unwrap_or(1);
                return ExitCode::from(code.clamp(0, 255) as u8);
            }
            Ok(None) => {}
            Err(_) => break,
        }
        let mut fds = [libc::pollfd {
            fd: 1,
            events: 0,
            revents: 0,
        }];
        // SAFETY: poll(2) on one pollfd we own, for at most 200 ms.
        let ready = unsafe { libc::poll(fds.as_mut_ptr(), 1, 200) };
        if ready > 0 && fds[0].revents & (libc::POLLERR | libc::POLLHUP | libc::POLLNVAL) != 0 {
            break;
        }
    }
    // SAFETY: kill(2) on the process group the child leads.
    unsafe { libc::kill(-group, libc::SIGKILL) };
    let _ = child.wait();
    ExitCode::from(137)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_sandboxed_commands_variables_go_inside_never_on_the_launcher() {
        let dir = tempfile::tempdir().unwrap();
        let sandbox = Sandbox {
            program: "/usr/bin/bwrap".into(),
            hide: vec![],
            read_write: vec![dir.path().to_owned()],
            read_only: vec![],
            network: Network::Host,
            binds: vec![],
        };
        let env = [("PATH".to_owned(), "/planted/bin".to_owned())];
        let (cmd, pipe) =
            command(Some(&sandbox), "make", &[], dir.path(), dir.path(), &env).unwrap();
        assert!(pipe.is_some(), "the variables go through a pipe");
        let args: Vec<_> = cmd.get_args().map(|a| a.to_string_lossy()).collect();
        assert_eq!(args[..2], ["--args", "3"], "{args:?}");
        let launcher_path = (cmd.get_envs())
            .find(|(k, _)| *k == "PATH")
            .and_then(|(_, v)| v);
        assert_ne!(launcher_path, Some(std::ffi::OsStr::new("/planted/bin")));
        // Without a sandbox the command is the program itself: they are its own.
        let (cmd, pipe) = command(None, "make", &[], dir.path(), dir.path(), &env).unwrap();
        assert!(pipe.is_none());
        let path = (cmd.get_envs())
            .find(|(k, _)| *k == "PATH")
            .and_then(|(_, v)| v);
        assert_eq!(path, Some(std::ffi::OsStr::new("/planted/bin")));
    }
}
