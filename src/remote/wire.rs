//! What the gateway asks the `sidekicks remote` helper on an agent's host: one JSON line on
//! the helper's stdin, then (for a write) the bytes it names; the helper answers a file
//! operation with one JSON line, then the bytes that answer names. A run hands the rest of
//! the connection to the command that was asked for.

use std::io::{Read, Write};
use std::path::PathBuf;

use serde::{Deserialize, Serialize};

/// Longest line either side reads: a request carries an environment (at most
/// `acp::launch::MAX_INNER_ENV` asked for one command, plus the configured one) and paths.
pub const MAX_LINE: usize = 256 * 1024;

/// One request to the helper.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "ask", rename_all = "snake_case")]
pub enum Request {
    /// Is the host there, and what does it have ([`Hello`])? Asked before an agent process
    /// starts on it.
    Hello,
    /// Run a command; the rest of the connection is its stdin, stdout and stderr.
    Run(RunRequest),
    /// One file operation beneath a conversation's folder.
    File(FileRequest),
    /// One step of worktree mode.
    Worktree(WorktreeRequest),
}

/// The helper's answer to [`Request::Hello`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Hello {
    /// The helper's version, for the log (the gateway and the host may differ).
    pub version: String,
    /// Whether bubblewrap works there.
    pub bubblewrap: bool,
}

/// Whether a remote command runs in the host's bubblewrap sandbox. There is no "never":
/// the helper sandboxes every command wherever the host has bubblewrap, so a client (or
/// whoever holds its key) cannot ask it off.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SandboxWish {
    /// Where the host has it; without it the command runs as the remote user.
    Auto,
    /// Always: a host without it refuses to run the command.
    Required,
}

/// A command to run on the agent's host: the agent itself, or one of its commands
/// (`terminal/create`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunRequest {
    /// The program (a path, or a name in the remote user's `PATH`).
    pub program: String,
    /// Its arguments.
    pub args: Vec<String>,
    /// Its working folder.
    pub cwd: PathBuf,
    /// Its whole environment besides `PATH` (the remote user's) and `HOME`.
    pub env: Vec<(String, String)>,
    /// The box it runs in.
    pub boxing: Boxing,
    /// For the agent with the room tools: the socket on this host that its connection
    /// forwards to the gateway's room tools, bound into its sandbox at
    /// [`crate::model::agent::ROOM_TOOLS_SOCKET`] (the sandbox is required then).
    #[serde(default)]
    pub room_tools: Option<PathBuf>,
}

/// What the agent's commands (git for its worktrees included) may reach on its host.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Boxing {
    /// Its `HOME`: an absolute path, or `~/…` below the remote user's home.
    pub home: String,
    /// The folder it may write besides its home: the workspace root.
    pub workspace: PathBuf,
    /// In worktree mode, the repository, whose git folder it writes when it commits.
    pub repository: Option<PathBuf>,
    /// Whether it runs in the host's sandbox.
    pub sandbox: SandboxWish,
    /// Whether it has no network but a loopback of its own.
    pub offline: bool,
    /// What its sandbox hides besides the remote user's keys and the homes of the
    /// gateway's other agents there: what the gateway hides from agents at home.
    pub hide: Vec<PathBuf>,
}

/// One step of worktree mode on the agent's host, done there by the gateway's own
/// worktree code with git in the host's sandbox.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WorktreeRequest {
    /// Where git runs, and what it may write.
    pub boxing: Boxing,
    /// What a new branch starts from; `None`: the repository's `HEAD`.
    pub base: Option<String>,
    /// The start of every conversation's branch name.
    pub branch_prefix: String,
    /// The step.
    pub op: WorktreeOp,
}

/// A step of worktree mode (`workspace::Worktrees`' methods).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "op", rename_all = "snake_case")]
pub enum WorktreeOp {
    /// Make `folder` a worktree on `branch` unless it is one.
    Ensure {
        /// The conversation's folder.
        folder: PathBuf,
        /// Its branch.
        branch: String,
    },
    /// How the worktree in `folder` stands.
    Status {
        /// The conversation's folder.
        folder: PathBuf,
    },
    /// Remove the worktree in `folder`, its branch kept.
    Remove {
        /// The conversation's folder.
        folder: PathBuf,
    },
    /// The conversations' worktrees.
    List,
}

/// The helper's answer to a [`WorktreeRequest`], as JSON the gateway's worktree code reads
/// back (`Ok` or the error, each in that code's own types).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "answer", rename_all = "snake_case")]
pub enum WorktreeAnswer {
    /// Done; what the step returns.
    Done {
        /// The value.
        value: serde_json::Value,
    },
    /// Failed; the error.
    Failed {
        /// The error.
        error: serde_json::Value,
    },
}

/// A file operation beneath the folder `below` of `root` (opened the way
/// `workspace::folder::Folder::open` opens it).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FileRequest {
    /// The workspace root (the operator's: links in it are followed).
    pub root: PathBuf,
    /// The conversation's folder below it (no link followed).
    pub below: PathBuf,
    /// What to do.
    pub op: FileOp,
}

/// One operation; its `path` is relative to the conversation's folder.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "op", rename_all = "snake_case")]
pub enum FileOp {
    /// Open the folder (made if missing): nothing else.
    Open,
    /// Is `path` a folder beneath it?
    IsDir {
        /// The path.
        path: PathBuf,
    },
    /// Make the folder `path` and those above it.
    CreateDirs {
        /// The path.
        path: PathBuf,
    },
    /// Read `path` whole, if at most `max` bytes.
    Read {
        /// The path.
        path: PathBuf,
        /// The most read.
        max: u64,
    },
    /// Send `path` until the connection is closed (a reader that stops early).
    Stream {
        /// The path.
        path: PathBuf,
    },
    /// Write the `len` bytes that follow the request to `path`.
    Write {
        /// The path.
        path: PathBuf,
        /// Replace an existing file (else only make a new one).
        replace: bool,
        /// Return what a replaced file held, when at most this many bytes.
        keep: u64,
        /// How many bytes follow.
        len: u64,
    },
}

/// The helper's answer to a [`FileRequest`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "answer", rename_all = "snake_case")]
pub enum FileAnswer {
    /// Done; `len` bytes follow (what was read, or what a replaced file held).
    Done {
        /// A replaced file's size, for a write.
        size: u64,
        /// How many bytes follow (`u64::MAX` for a stream: until the end).
        len: u64,
    },
    /// Refused, and why (the kind of `workspace::folder::FolderError`).
    Refused {
        /// `outside`, `not_found`, `not_a_file`, `too_large` or `io`.
        kind: String,
        /// The detail.
        detail: String,
        /// For `too_large`: the size and the most read.
        size: u64,
        /// For `too_large`: the most read.
        max: u64,
    },
}

/// Why a line could not be read.
#[derive(Debug, thiserror::Error)]
pub enum WireError {
    /// The other side closed before a whole line.
    #[error("the connection ended before a whole line")]
    Ended,
    /// The line is longer than [`MAX_LINE`].
    #[error("a line over {MAX_LINE} bytes")]
    TooLong,
    /// The line is not what was expected.
    #[error("not understood: {0}")]
    Garbled(#[from] serde_json::Error),
    /// Reading or writing failed.
    #[error("{0}")]
    Io(#[from] std::io::Error),
}

/// Writes `value` as one line.
pub fn write_line<T: Serialize>(out: &mut impl Write, value: &T) -> Result<(), WireError> {
    let mut line = serde_json::to_vec(value)?;
    line.push(b'\n');
    out.write_all(&line)?;
    Ok(())
}

/// Reads one line and parses it, a byte at a time from `input`, so that nothing after the
/// line is taken from it (a run hands the rest to its command).
pub fn read_line<T: for<'de> Deserialize<'de>>(input: &mut impl Read) -> Result<T, WireError> {
    let mut line = Vec::new();
    let mut byte = [0u8; 1];
    loop {
        match input.read(&mut byte) {
            Ok(0) => return Err(WireError::Ended),
            Ok(_) if byte[0] == b'\n' => break,
            Ok(_) if line.len() >= MAX_LINE => return Err(WireError::TooLong),
            Ok(_) => line.push(byte[0]),
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e.into()),
        }
    }
    Ok(serde_json::from_slice(&line)?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_request_is_one_line_and_what_follows_it_is_left_unread() {
        let asked = Request::File(FileRequest {
            root: "/srv/work".into(),
            below: "room\nwith a newline".into(),
            op: FileOp::Write {
                path: "a.txt".into(),
                replace: true,
                keep: 10,
                len: 5,
            },
        });
        let mut bytes = Vec::new();
        write_line(&mut bytes, &asked).unwrap();
        assert_eq!(bytes.iter().filter(|b| **b == b'\n').count(), 1);
        bytes.extend_from_slice(b"hello");
        let mut input = &bytes[..];
        let read: Request = read_line(&mut input).unwrap();
        assert_eq!(read, asked);
        assert_eq!(input, b"hello", "the payload is still there");
    }

    #[test]
    fn no_client_can_ask_the_helper_to_run_without_its_sandbox() {
        let run = |sandbox: &str| {
            format!(
                "{{\"ask\":\"run\",\"program\":\"sh\",\"args\":[],\"cwd\":\"/w\",\"env\":[],\
                 \"boxing\":{{\"home\":\"~/h\",\"workspace\":\"/w\",\"repository\":null,\
                 \"sandbox\":\"{sandbox}\",\"offline\":false,\"hide\":[]}}}}\n"
            )
        };
        assert!(read_line::<Request>(&mut run("auto").as_bytes()).is_ok());
        assert!(read_line::<Request>(&mut run("required").as_bytes()).is_ok());
        // There is no "off": such a request is refused, nothing runs.
        assert!(matches!(
            read_line::<Request>(&mut run("off").as_bytes()),
            Err(WireError::Garbled(_))
        ));
    }

    #[test]
    fn a_line_that_ends_early_is_too_long_or_garbled_is_refused() {
        assert!(matches!(
            read_line::<Request>(&mut &b"{\"ask\":"[..]),
            Err(WireError::Ended)
        ));
        assert!(matches!(
            read_line::<Request>(&mut &b"{\"ask\":\"nope\"}\n"[..]),
            Err(WireError::Garbled(_))
        ));
        let long = vec![b'x'; MAX_LINE + 1];
        assert!(matches!(
            read_line::<Request>(&mut &long[..]),
            Err(WireError::TooLong)
        ));
    }
}
