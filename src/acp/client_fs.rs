//! The client's file methods (`fs/read_text_file`, `fs/write_text_file`): an agent reads
//! and writes text files through Sidekicks, within its session's folder only: opened
//! beneath the folder's handle, one component at a time, never following a link
//! (`workspace::folder`), regular files only, reads capped. A path outside is refused with
//! a JSON-RPC error that says so. See `docs/acp-client.md`.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use std::io::BufRead as _;

use agent_client_protocol::Error;
use agent_client_protocol::v1::Responder;
use agent_client_protocol::v1::schema::{
    ReadTextFileRequest, ReadTextFileResponse, WriteTextFileRequest, WriteTextFileResponse,
};

use crate::model::ids::AgentId;
use crate::workspace::folder::{Folder, FolderError, Write};

/// JSON-RPC code of a file that does not exist (ACP's "resource not found").
const NOT_FOUND: i32 = -32002;

/// Most bytes of a file `fs/read_text_file` reads: a whole file larger than this is
/// refused; a part of one (`line`, `limit`) is read while it stays within it.
pub const MAX_READ_BYTES: u64 = 16 * 1024 * 1024;

/// Why a file method was refused, as the JSON-RPC error the agent gets.
fn refused(path: &Path, why: &str) -> Error {
    Error::invalid_params().data(format!("{}: {why}", path.display()))
}

/// The agent's error for a refusal of the folder.
fn refusal(path: &Path, e: FolderError) -> Error {
    match e {
        FolderError::NotFound => Error::new(NOT_FOUND, format!("{}: no such file", path.display())),
        FolderError::Outside("`..`") => refused(path, "`..` is not allowed"),
        FolderError::Outside(_) => refused(path, "outside the session's folder"),
        FolderError::TooLarge { size, max } => refused(
            path,
            &format!(
                "{size} bytes, more than the {max} read at once: read it in parts (line, limit)"
            ),
        ),
        other => refused(path, &other.to_string()),
    }
}

/// `path` (absolute inside the session's folder, or relative to it) as a folder of the
/// session reached without a link: its path, for a command's working folder.
pub(super) fn inside_dir(folder: &Folder, path: &Path) -> Result<PathBuf, Error> {
    let parts = folder.relative(path).map_err(|e| refusal(path, e))?;
    folder.is_dir(path).map_err(|e| match e {
        FolderError::NotAFile | FolderError::NotFound => {
            refused(path, "not a folder of the session")
        }
        e => refusal(path, e),
    })?;
    Ok(parts
        .iter()
        .fold(folder.path().to_owned(), |p, c| p.join(c)))
}

/// `fs/read_text_file`: the text of `path`, from line `line` (1-based) for at most `limit`
/// lines when given.
pub fn read_text(
    folder: &Folder,
    path: &Path,
    line: Option<u32>,
    limit: Option<u32>,
) -> Result<String, Error> {
    if line.is_none() && limit.is_none() {
        let bytes = folder
            .read(path, MAX_READ_BYTES)
            .map_err(|e| refusal(path, e))?;
        return String::from_utf8(bytes).map_err(|_| refused(path, "not UTF-8 text"));
    }
    // A part of a file: read line by line, within the cap.
    let file = folder.open_read(path).map_err(|e| refusal(path, e))?;
    let skip = line.unwrap_or(1).saturating_sub(1) as usize;
    let take = limit.map_or(usize::MAX, |l| l as usize);
    let mut reader = std::io::BufReader::new(std::io::Read::take(file, MAX_READ_BYTES + 1));
    let (mut out, mut read, mut taken, mut index) = (String::new(), 0u64, 0usize, 0usize);
    let mut buf = Vec::new();
    while taken < take {
        buf.clear();
        let n = reader
            .read_until(b'\n', &mut buf)
            .map_err(|e| refused(path, &e.to_string()))?;
        if n == 0 {
            break;
        }
        read += n as u64;
        if read > MAX_READ_BYTES {
            return Err(refusal(
                path,
                FolderError::TooLarge {
                    size: read,
                    max: MAX_READ_BYTES,
                },
            ));
        }
        if index >= skip {
            out.push_str(std::str::from_utf8(&buf).map_err(|_| refused(path, "not UTF-8 text"))?);
            taken += 1;
        }
        index += 1;
    }
    Ok(out)
}

/// Largest earlier text of a written file shown in a diff.
const DIFF_BYTES: u64 = 256 * 1024;

/// What a written file held before, for the diff its card shows.
#[derive(Debug, PartialEq)]
pub enum Before {
    /// It did not exist (or was empty).
    Nothing,
    /// This text.
    Text(String),
    /// Something not worth a diff (not UTF-8 text, or large).
    Unshown,
}

/// `fs/write_text_file`: writes `content` to `path` (its missing folders made), replacing
/// what was there, which it returns.
pub fn write_text(folder: &Folder, path: &Path, content: &str) -> Result<Before, Error> {
    let (size, before) = folder
        .write(path, content.as_bytes(), Write::Replace, DIFF_BYTES)
        .map_err(|e| match e {
            FolderError::NotAFile => refused(path, "not a regular file (a folder?)"),
            e => refusal(path, e),
        })?;
    Ok(match (size, before) {
        (0, _) => Before::Nothing,
        (_, Some(old)) => String::from_utf8(old).map_or(Before::Unshown, Before::Text),
        (_, None) => Before::Unshown,
    })
}

/// Answers `fs/read_text_file` off the dispatch loop: `folder` is the session's (`None`:
/// not a session of ours, or file access is off for this agent). With `missing_is_empty`
/// (the agent's dialect says so), a file that does not exist reads as empty text.
pub fn serve_read(
    agent: &AgentId,
    folder: Option<Arc<Folder>>,
    missing_is_empty: bool,
    request: ReadTextFileRequest,
    responder: Responder<ReadTextFileResponse>,
) {
    let agent = agent.to_owned();
    tokio::task::spawn_blocking(move || {
        let path = request.path.clone();
        let answer = match folder {
            Some(root) => read_text(&root, &path, request.line, request.limit),
            None => Err(refused(&path, "no file access for this session")),
        };
        let answer = match answer {
            Err(e) if missing_is_empty && i32::from(e.code) == NOT_FOUND => Ok(String::new()),
            answer => answer,
        };
        match answer {
            Ok(text) => {
                tracing::info!(%agent, path = %path.display(), chars = text.len(), "the agent read a file through the client");
                let _ = responder.respond(ReadTextFileResponse::new(text));
            }
            Err(e) => {
                tracing::info!(%agent, path = %path.display(), error = %e, "refused a file read");
                let _ = responder.respond_with_error(e);
            }
        }
    });
}

/// Answers `fs/write_text_file` off the dispatch loop (see [`serve_read`]); a write is
/// handed to `shown` (the path, the text before, `None` for a new file, and after) before
/// the agent hears it was made, so its card shows the diff.
pub fn serve_write(
    agent: &AgentId,
    folder: Option<Arc<Folder>>,
    request: WriteTextFileRequest,
    responder: Responder<WriteTextFileResponse>,
    shown: impl FnOnce(&Path, Option<String>, &str) + Send + 'static,
) {
    let agent = agent.to_owned();
    tokio::task::spawn_blocking(move || {
        let path = request.path.clone();
        let answer = match &folder {
            Some(root) => write_text(root, &path, &request.content),
            None => Err(refused(&path, "no file access for this session")),
        };
        // The card names the file as the room knows it: from the conversation's folder.
        let shown_path = folder
            .as_ref()
            .and_then(|root| path.strip_prefix(root.path()).ok())
            .unwrap_or(&path)
            .to_owned();
        match answer {
            Ok(before) => {
                tracing::info!(%agent, path = %path.display(), bytes = request.content.len(), "the agent wrote a file through the client");
                match before {
                    Before::Nothing => shown(&shown_path, None, &request.content),
                    Before::Text(old) => shown(&shown_path, Some(old), &request.content),
                    Before::Unshown => {}
                }
                let _ = responder.respond(WriteTextFileResponse::new());
            }
            Err(e) => {
                tracing::info!(%agent, path = %path.display(), error = %e, "refused a file write");
                let _ = responder.respond_with_error(e);
            }
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A session's folder `ws` (with a file, and links out) beside a secret.
    fn folder() -> (tempfile::TempDir, PathBuf, Folder) {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("ws");
        std::fs::create_dir_all(root.join("src")).unwrap();
        std::fs::write(root.join("src/lib.rs"), "one\ntwo\nthree\nfour\n").unwrap();
        std::fs::write(dir.path().join("secret"), "key").unwrap();
        std::os::unix::fs::symlink(dir.path().join("secret"), root.join("link")).unwrap();
        std::os::unix::fs::symlink(dir.path(), root.join("up")).unwrap();
        let folder = Folder::open(&root, Path::new("")).unwrap();
        (dir, root, folder)
    }

    #[test]
    fn reads_inside_with_lines_and_limit() {
        let (_dir, root, folder) = folder();
        let read = |p: &str, line, limit| read_text(&folder, Path::new(p), line, limit);
        assert_eq!(
            read("src/lib.rs", None, None).unwrap(),
            "one\ntwo\nthree\nfour\n"
        );
        assert_eq!(
            read("src/lib.rs", Some(2), Some(2)).unwrap(),
            "two\nthree\n"
        );
        assert_eq!(read("src/lib.rs", Some(4), None).unwrap(), "four\n");
        assert_eq!(read("src/lib.rs", None, Some(1)).unwrap(), "one\n");
        let absolute = root.join("src/lib.rs");
        assert!(read(absolute.to_str().unwrap(), None, None).is_ok());
        assert_eq!(
            read("missing.txt", None, None).unwrap_err().code,
            agent_client_protocol::ErrorCode::from(NOT_FOUND)
        );
    }

    #[test]
    fn nothing_outside_the_folder_is_read_or_written() {
        let (dir, _root, folder) = folder();
        for path in [
            "../secret",
            "link",
            "up/secret",
            "/etc/passwd",
            "src/../../secret",
        ] {
            let err = read_text(&folder, Path::new(path), None, None).unwrap_err();
            assert_eq!(err.code, Error::invalid_params().code, "{path}");
            assert!(write_text(&folder, Path::new(path), "x").is_err(), "{path}");
        }
        assert_eq!(
            std::fs::read_to_string(dir.path().join("secret")).unwrap(),
            "key"
        );
        assert!(write_text(&folder, Path::new("up/new.txt"), "x").is_err());
        assert!(!dir.path().join("new.txt").exists());
    }

    #[test]
    fn writes_inside_making_folders() {
        let (_dir, root, folder) = folder();
        assert_eq!(
            write_text(&folder, Path::new("src/lib.rs"), "changed\n").unwrap(),
            Before::Text("one\ntwo\nthree\nfour\n".into())
        );
        assert_eq!(
            std::fs::read_to_string(root.join("src/lib.rs")).unwrap(),
            "changed\n"
        );
        assert_eq!(
            write_text(&folder, Path::new("docs/new/notes.md"), "# notes").unwrap(),
            Before::Nothing
        );
        assert_eq!(
            std::fs::read_to_string(root.join("docs/new/notes.md")).unwrap(),
            "# notes"
        );
        assert!(write_text(&folder, Path::new("src"), "x").is_err());
    }

    #[test]
    fn a_huge_file_is_refused_whole_and_read_in_parts() {
        let (_dir, root, folder) = folder();
        let big = std::fs::File::create(root.join("big.log")).unwrap();
        big.set_len(MAX_READ_BYTES + 1).unwrap();
        let whole = read_text(&folder, Path::new("big.log"), None, None).unwrap_err();
        assert!(
            format!("{whole:?}").contains("read it in parts"),
            "{whole:?}"
        );
        std::fs::write(root.join("lines.txt"), "a\nb\nc\n").unwrap();
        assert_eq!(
            read_text(&folder, Path::new("lines.txt"), Some(2), Some(1)).unwrap(),
            "b\n"
        );
    }
}
