//! The client's file methods (`fs/read_text_file`, `fs/write_text_file`): an agent reads
//! and writes text files through Sidekicks, within its session's working folder only.
//! Links are resolved before the check, so none leads out; a path outside is refused with a
//! JSON-RPC error that says so. See `docs/turns.md`.

use std::path::{Component, Path, PathBuf};

use crate::workspace::confined::open_within;

use std::io::{Read as _, Seek as _, Write as _};

use agent_client_protocol::Error;
use agent_client_protocol::v1::Responder;
use agent_client_protocol::v1::schema::{
    ReadTextFileRequest, ReadTextFileResponse, WriteTextFileRequest, WriteTextFileResponse,
};

/// JSON-RPC code of a file that does not exist (ACP's "resource not found").
const NOT_FOUND: i32 = -32002;

/// Why a file method was refused, as the JSON-RPC error the agent gets.
fn refused(path: &Path, why: &str) -> Error {
    Error::invalid_params().data(format!("{}: {why}", path.display()))
}

/// `path` (absolute, or relative to `root`) as a path inside `root` with its links
/// resolved, as far as it exists; refused when it leads outside `root`.
pub(super) fn inside(root: &Path, path: &Path) -> Result<PathBuf, Error> {
    let root = root
        .canonicalize()
        .map_err(|e| refused(root, &format!("the session's folder cannot be used: {e}")))?;
    let full = root.join(path);
    // `..` is refused outright: whether it climbs out depends on links not made yet.
    if full.components().any(|c| matches!(c, Component::ParentDir)) {
        return Err(refused(path, "`..` is not allowed"));
    }
    // The part that exists, with its links resolved, must be inside the folder.
    let mut existing = full.as_path();
    let mut rest = Vec::new();
    let real = loop {
        match existing.canonicalize() {
            Ok(real) => break real,
            Err(_) => {
                let (Some(parent), Some(name)) = (existing.parent(), existing.file_name()) else {
                    return Err(refused(path, "outside the session's folder"));
                };
                rest.push(name.to_owned());
                existing = parent;
            }
        }
    };
    if !real.starts_with(&root) {
        return Err(refused(path, "outside the session's folder"));
    }
    Ok(rest.into_iter().rev().fold(real, |p, name| p.join(name)))
}

/// `fs/read_text_file`: the text of `path`, from line `line` (1-based) for at most `limit`
/// lines when given.
pub fn read_text(
    root: &Path,
    path: &Path,
    line: Option<u32>,
    limit: Option<u32>,
) -> Result<String, Error> {
    let real = inside(root, path)?;
    let root = canonical(root)?;
    let mut options = std::fs::OpenOptions::new();
    options.read(true);
    let mut bytes = Vec::new();
    let read = open_within(&root, &real, &mut options).and_then(|mut f| f.read_to_end(&mut bytes));
    let text = match read {
        Ok(_) => String::from_utf8(bytes).map_err(|_| refused(path, "not UTF-8 text"))?,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Err(Error::new(
                NOT_FOUND,
                format!("{}: no such file", path.display()),
            ));
        }
        Err(e) => return Err(refused(path, &e.to_string())),
    };
    if line.is_none() && limit.is_none() {
        return Ok(text);
    }
    let skip = line.unwrap_or(1).saturating_sub(1) as usize;
    let take = limit.map_or(usize::MAX, |l| l as usize);
    Ok(text.split_inclusive('\n').skip(skip).take(take).collect())
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
pub fn write_text(root: &Path, path: &Path, content: &str) -> Result<Before, Error> {
    let real = inside(root, path)?;
    if real.is_dir() {
        return Err(refused(path, "a folder"));
    }
    if let Some(parent) = real.parent() {
        std::fs::create_dir_all(parent).map_err(|e| refused(path, &e.to_string()))?;
    }
    // Checked on the file opened, then emptied and written: one the agent swapped for a
    // link out in the meantime is refused untouched.
    let root = canonical(root)?;
    let mut options = std::fs::OpenOptions::new();
    options.read(true).write(true).create(true);
    open_within(&root, &real, &mut options)
        .and_then(|mut f| {
            let before = match f.metadata()?.len() {
                0 => Before::Nothing,
                n if n > DIFF_BYTES => Before::Unshown,
                _ => {
                    let mut bytes = Vec::new();
                    f.read_to_end(&mut bytes)?;
                    String::from_utf8(bytes).map_or(Before::Unshown, Before::Text)
                }
            };
            f.set_len(0)?;
            f.seek(std::io::SeekFrom::Start(0))?;
            f.write_all(content.as_bytes())?;
            Ok(before)
        })
        .map_err(|e| refused(path, &e.to_string()))
}

/// `root` with its links resolved.
fn canonical(root: &Path) -> Result<PathBuf, Error> {
    root.canonicalize()
        .map_err(|e| refused(root, &format!("the session's folder cannot be used: {e}")))
}

/// Answers `fs/read_text_file` off the dispatch loop: `folder` is the session's (`None`:
/// not a session of ours, or file access is off for this agent). With `missing_is_empty`
/// (the agent's dialect says so), a file that does not exist reads as empty text.
pub fn serve_read(
    agent: &str,
    folder: Option<PathBuf>,
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
                tracing::info!(agent, path = %path.display(), chars = text.len(), "the agent read a file through the client");
                let _ = responder.respond(ReadTextFileResponse::new(text));
            }
            Err(e) => {
                tracing::info!(agent, path = %path.display(), error = %e, "refused a file read");
                let _ = responder.respond_with_error(e);
            }
        }
    });
}

/// Answers `fs/write_text_file` off the dispatch loop (see [`serve_read`]); a write is
/// handed to `shown` (the path, the text before, `None` for a new file, and after) before
/// the agent hears it was made, so its card shows the diff.
pub fn serve_write(
    agent: &str,
    folder: Option<PathBuf>,
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
            .and_then(|root| path.strip_prefix(root).ok())
            .unwrap_or(&path)
            .to_owned();
        match answer {
            Ok(before) => {
                tracing::info!(agent, path = %path.display(), bytes = request.content.len(), "the agent wrote a file through the client");
                match before {
                    Before::Nothing => shown(&shown_path, None, &request.content),
                    Before::Text(old) => shown(&shown_path, Some(old), &request.content),
                    Before::Unshown => {}
                }
                let _ = responder.respond(WriteTextFileResponse::new());
            }
            Err(e) => {
                tracing::info!(agent, path = %path.display(), error = %e, "refused a file write");
                let _ = responder.respond_with_error(e);
            }
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    fn folder() -> (tempfile::TempDir, PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("ws");
        std::fs::create_dir_all(root.join("src")).unwrap();
        std::fs::write(root.join("src/lib.rs"), "one\ntwo\nthree\nfour\n").unwrap();
        std::fs::write(dir.path().join("secret"), "key").unwrap();
        std::os::unix::fs::symlink(dir.path().join("secret"), root.join("link")).unwrap();
        std::os::unix::fs::symlink(dir.path(), root.join("up")).unwrap();
        (dir, root)
    }

    #[test]
    fn reads_inside_with_lines_and_limit() {
        let (_dir, root) = folder();
        let read = |p: &str, line, limit| read_text(&root, Path::new(p), line, limit);
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
        let (dir, root) = folder();
        for path in [
            "../secret",
            "link",
            "up/secret",
            "/etc/passwd",
            "src/../../secret",
        ] {
            let err = read_text(&root, Path::new(path), None, None).unwrap_err();
            assert_eq!(err.code, Error::invalid_params().code, "{path}");
            assert!(write_text(&root, Path::new(path), "x").is_err(), "{path}");
        }
        assert_eq!(
            std::fs::read_to_string(dir.path().join("secret")).unwrap(),
            "key"
        );
        assert!(write_text(&root, Path::new("up/new.txt"), "x").is_err());
        assert!(!dir.path().join("new.txt").exists());
    }

    #[test]
    fn writes_inside_making_folders() {
        let (_dir, root) = folder();
        assert_eq!(
            write_text(&root, Path::new("src/lib.rs"), "changed\n").unwrap(),
            Before::Text("one\ntwo\nthree\nfour\n".into())
        );
        assert_eq!(
            std::fs::read_to_string(root.join("src/lib.rs")).unwrap(),
            "changed\n"
        );
        assert_eq!(
            write_text(&root, Path::new("docs/new/notes.md"), "# notes").unwrap(),
            Before::Nothing
        );
        assert_eq!(
            std::fs::read_to_string(root.join("docs/new/notes.md")).unwrap(),
            "# notes"
        );
        assert!(write_text(&root, Path::new("src"), "x").is_err());
    }
}
