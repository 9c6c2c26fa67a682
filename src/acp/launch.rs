//! What starting any command of an agent's needs, whatever its runner: its own session and
//! process group, and a pipe that hands it data (an environment) on a known descriptor, out
//! of sight of other users' `ps`.

use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::process::CommandExt as _;

/// A command ready to spawn, with what must stay open until it is spawned.
pub struct Launch {
    /// The command (a blocking one: `tokio::process::Command::from` makes it async).
    pub command: std::process::Command,
    /// The pipe the sandboxed command's own environment is read from, if it has one: kept
    /// open until the command is spawned, then dropped.
    pub env_pipe: Option<OwnedFd>,
    /// What the command must read on its stdin before anything else: the request to the
    /// helper on the agent's host (the SSH runner), which carries its environment.
    pub stdin_header: Option<Vec<u8>>,
}

impl Launch {
    /// The parts of a command that reads nothing but its header: the command, the pipe to
    /// keep open until it is spawned, and its stdin (a pipe holding the header, then the
    /// end; else nothing).
    pub fn for_command(
        self,
    ) -> std::io::Result<(std::process::Command, Option<OwnedFd>, std::process::Stdio)> {
        let stdin = match &self.stdin_header {
            Some(header) => std::process::Stdio::from(filled_pipe(header)?),
            None => std::process::Stdio::null(),
        };
        Ok((self.command, self.env_pipe, stdin))
    }
}

/// The file descriptor bubblewrap reads the sandboxed command's own environment from
/// (`--args 3`).
pub const ENV_FD: i32 = 3;

/// Most bytes of environment a command may ask for inside the sandbox: they are written to a
/// pipe before the command starts, which holds this much without blocking.
pub const MAX_INNER_ENV: usize = 32 * 1024;

/// What a pipe holds without a reader (Linux's default pipe size).
const PIPE_HOLDS: usize = 64 * 1024;

/// A session of its own for `cmd`: no controlling terminal (TIOCSTI), and one process
/// group for everything it starts, which the gateway signals as a whole.
pub fn own_session(cmd: &mut std::process::Command) {
    // SAFETY: setsid(2) is async-signal-safe and touches no memory of ours.
    unsafe {
        cmd.pre_exec(|| match libc::setsid() {
            -1 => Err(std::io::Error::last_os_error()),
            _ => Ok(()),
        });
    }
}

/// `cmd` gets SIGTERM when the gateway dies, so what it stands for (a container, a
/// connection to the agent's host) does not outlive the gateway.
pub fn ends_with_gateway(cmd: &mut std::process::Command) {
    // SAFETY: prctl(2) is async-signal-safe and touches no memory of ours.
    unsafe {
        cmd.pre_exec(|| {
            libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGTERM);
            Ok(())
        });
    }
}

/// A pipe holding `data` that `cmd` reads on descriptor 3 ([`ENV_FD`]); the returned end
/// must stay open until `cmd` is spawned.
pub fn read_on_fd3(cmd: &mut std::process::Command, data: &[u8]) -> std::io::Result<OwnedFd> {
    let pipe = filled_pipe(data)?;
    let fd = pipe.as_raw_fd();
    // SAFETY: dup2(2) and fcntl(2) are async-signal-safe and touch no memory of ours; the
    // pipe stays open in the parent until after the spawn.
    unsafe {
        cmd.pre_exec(move || {
            let moved = match fd == ENV_FD {
                true => libc::fcntl(fd, libc::F_SETFD, 0),
                false => libc::dup2(fd, ENV_FD),
            };
            match moved {
                -1 => Err(std::io::Error::last_os_error()),
                _ => Ok(()),
            }
        });
    }
    Ok(pipe)
}

/// A pipe whose write end got `data` and is closed: its read end (close-on-exec), for a
/// child to read `data` from. `data` must fit in the pipe (64 KiB; [`MAX_INNER_ENV`] is
/// less, with room for what goes with it).
fn filled_pipe(data: &[u8]) -> std::io::Result<OwnedFd> {
    use std::io::Write as _;
    if data.len() > PIPE_HOLDS {
        return Err(std::io::Error::other(format!(
            "the environment asked for is over {PIPE_HOLDS} bytes"
        )));
    }
    let mut fds = [0; 2];
    // SAFETY: pipe2(2) writes two descriptors into `fds`, which we own from here on.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } == -1 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: both descriptors were just made and are owned by nothing else.
    let (read, write) = unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
    std::fs::File::from(write).write_all(data)?;
    Ok(read)
}
