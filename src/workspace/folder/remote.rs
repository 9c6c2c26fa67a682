//! A conversation's folder on the agent's host (the SSH runner): both sides of one file
//! operation. [`RemoteFolder`] sends it from the gateway; [`serve`] does it in the
//! `sidekicks remote` helper there, with [`Folder`] opening the folder and the file by
//! handle exactly as at home. A refusal crosses as its kind, and reads as the same
//! [`FolderError`] on the gateway's side.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::{Folder, FolderError, Reader, Write};
use crate::remote::Link;
use crate::remote::wire::{self, FileAnswer, FileOp, FileRequest, Request};

/// Most bytes a write sends to the agent's host (the largest file a person shares or an
/// agent writes, with room to spare).
pub const MAX_WRITE: u64 = 256 * 1024 * 1024;

/// The folder `below` `root` on the host `link` reaches.
#[derive(Debug)]
pub struct RemoteFolder {
    /// The agent's way to its host.
    link: Arc<Link>,
    /// The workspace root there.
    root: PathBuf,
    /// The conversation's folder below it.
    below: PathBuf,
}

impl RemoteFolder {
    /// The folder, opened (made if missing) there once to see that it can be.
    pub(super) fn open(link: Arc<Link>, root: &Path, below: &Path) -> Result<Self, FolderError> {
        let folder = Self {
            link,
            root: root.to_owned(),
            below: below.to_owned(),
        };
        folder.ask(FileOp::Open, &[])?;
        Ok(folder)
    }

    /// Whether `path` is a folder there.
    pub(super) fn is_dir(&self, path: &Path) -> Result<(), FolderError> {
        let path = path.to_owned();
        self.ask(FileOp::IsDir { path }, &[]).map(|_| ())
    }

    /// Makes the folder `path` there.
    pub(super) fn create_dirs(&self, path: &Path) -> Result<(), FolderError> {
        let path = path.to_owned();
        self.ask(FileOp::CreateDirs { path }, &[]).map(|_| ())
    }

    /// Reads `path` whole, if at most `max` bytes.
    pub(super) fn read(&self, path: &Path, max: u64) -> Result<Vec<u8>, FolderError> {
        let path = path.to_owned();
        let (_, len, exchange) = self.ask(FileOp::Read { path, max }, &[])?;
        if len > max {
            return Err(FolderError::TooLarge { size: len, max });
        }
        read_exactly(exchange, len)
    }

    /// A reader of `path`, streamed from there.
    pub(super) fn stream(&self, path: &Path) -> Result<Reader, FolderError> {
        let path = path.to_owned();
        let (_, _, exchange) = self.ask(FileOp::Stream { path }, &[])?;
        Ok(Box::new(exchange))
    }

    /// Writes `data` to `path` there; as [`Folder::write`].
    pub(super) fn write(
        &self,
        path: &Path,
        data: &[u8],
        how: Write,
        keep: u64,
    ) -> Result<(u64, Option<Vec<u8>>), FolderError> {
        let op = FileOp::Write {
            path: path.to_owned(),
            replace: how == Write::Replace,
            keep,
            len: data.len() as u64,
        };
        let (size, len, exchange) = self.ask(op, data)?;
        let before = read_exactly(exchange, len.min(keep))?;
        Ok((size, (!before.is_empty()).then_some(before)))
    }

    /// Sends `op` (and `payload`) to the helper on the agent's host; its answer: a replaced
    /// file's size, how many bytes follow, and the connection to read them from.
    fn ask(
        &self,
        op: FileOp,
        payload: &[u8],
    ) -> Result<(u64, u64, crate::remote::link::Exchange), FolderError> {
        let request = Request::File(FileRequest {
            root: self.root.clone(),
            below: self.below.clone(),
            op,
        });
        let (answer, exchange) = (self.link.ask::<FileAnswer>(&request, payload))
            .map_err(|why| FolderError::Io(std::io::Error::other(why)))?;
        match answer {
            FileAnswer::Done { size, len } => Ok((size, len, exchange)),
            FileAnswer::Refused {
                kind,
                detail,
                size,
                max,
            } => Err(refused(&kind, detail, size, max)),
        }
    }
}

/// Reads the `len` bytes that follow an answer.
fn read_exactly(exchange: impl Read, len: u64) -> Result<Vec<u8>, FolderError> {
    let mut data = Vec::new();
    exchange.take(len).read_to_end(&mut data)?;
    if (data.len() as u64) < len {
        return Err(FolderError::Io(std::io::Error::other(
            "the agent's host sent less than it announced",
        )));
    }
    Ok(data)
}

/// The reasons a path leads out of a folder, as the helper names them.
const OUTSIDE: [&str; 4] = [
    "`..`",
    "an absolute path elsewhere",
    "a link",
    "a NUL character",
];

/// `error` as the helper's refusal.
fn refusal(error: &FolderError) -> FileAnswer {
    let (kind, detail, size, max) = match error {
        FolderError::Outside(why) => ("outside", why.to_string(), 0, 0),
        FolderError::NotFound => ("not_found", String::new(), 0, 0),
        FolderError::NotAFile => ("not_a_file", String::new(), 0, 0),
        FolderError::TooLarge { size, max } => ("too_large", String::new(), *size, *max),
        FolderError::Io(e) => ("io", e.to_string(), 0, 0),
    };
    FileAnswer::Refused {
        kind: kind.into(),
        detail,
        size,
        max,
    }
}

/// The helper's refusal as the error it was there.
fn refused(kind: &str, detail: String, size: u64, max: u64) -> FolderError {
    match kind {
        "outside" => FolderError::Outside(
            OUTSIDE
                .iter()
                .find(|w| **w == detail)
                .copied()
                .unwrap_or("refused on the agent's host"),
        ),
        "not_found" => FolderError::NotFound,
        "not_a_file" => FolderError::NotAFile,
        "too_large" => FolderError::TooLarge { size, max },
        _ => FolderError::Io(std::io::Error::other(detail)),
    }
}

/// The helper's side: does `request` beneath its folder, reading a write's bytes from
/// `input` and answering on `out`.
pub fn serve(
    request: FileRequest,
    input: &mut impl Read,
    out: &mut impl std::io::Write,
) -> Result<(), wire::WireError> {
    let folder = match Folder::open(&request.root, &request.below) {
        Ok(folder) => folder,
        Err(e) => return wire::write_line(out, &refusal(&e)),
    };
    let done = match request.op {
        FileOp::Open => Ok(answer(out, 0, 0)),
        FileOp::IsDir { path } => folder.is_dir(&path).map(|_| answer(out, 0, 0)),
        FileOp::CreateDirs { path } => folder.create_dirs(&path).map(|_| answer(out, 0, 0)),
        FileOp::Read { path, max } => folder.read(&path, max).map(|data| {
            answer(out, 0, data.len() as u64)?;
            Ok(out.write_all(&data)?)
        }),
        FileOp::Stream { path } => folder.open_read(&path).map(|mut file| {
            answer(out, 0, u64::MAX)?;
            // The reader on the gateway's side may stop early and close: not a failure.
            let _ = std::io::copy(&mut file, out);
            Ok(())
        }),
        FileOp::Write {
            path,
            replace,
            keep,
            len,
        } => {
            if len > MAX_WRITE {
                let too_large = FolderError::TooLarge {
                    size: len,
                    max: MAX_WRITE,
                };
                return wire::write_line(out, &refusal(&too_large));
            }
            let data = read_exactly(&mut *input, len)?;
            let how = match replace {
                true => Write::Replace,
                false => Write::CreateNew,
            };
            folder.write(&path, &data, how, keep).map(|(size, before)| {
                let before = before.unwrap_or_default();
                answer(out, size, before.len() as u64)?;
                Ok(out.write_all(&before)?)
            })
        }
    };
    match done {
        Ok(sent) => sent,
        Err(e) => wire::write_line(out, &refusal(&e)),
    }
}

/// Says the operation was done and `len` bytes follow.
fn answer(out: &mut impl std::io::Write, size: u64, len: u64) -> Result<(), wire::WireError> {
    wire::write_line(out, &FileAnswer::Done { size, len })
}

impl From<FolderError> for wire::WireError {
    fn from(e: FolderError) -> Self {
        wire::WireError::Io(std::io::Error::other(e.to_string()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The helper's answer to `op` on `dir`, with `payload` after the request.
    fn served(dir: &Path, op: FileOp, payload: &[u8]) -> (FileAnswer, Vec<u8>) {
        let request = FileRequest {
            root: dir.to_owned(),
            below: "room".into(),
            op,
        };
        let mut out = Vec::new();
        serve(request, &mut &payload[..], &mut out).unwrap();
        let mut reader = &out[..];
        let answer: FileAnswer = wire::read_line(&mut reader).unwrap();
        (answer, reader.to_vec())
    }

    #[test]
    fn the_helper_writes_and_reads_beneath_the_folder_and_refuses_a_link_out() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        let write = |path: &str, replace| FileOp::Write {
            path: path.into(),
            replace,
            keep: 100,
            len: 5,
        };
        let (answer, _) = served(d, write("notes/a.txt", false), b"hello");
        assert_eq!(answer, FileAnswer::Done { size: 0, len: 0 });
        assert_eq!(std::fs::read(d.join("room/notes/a.txt")).unwrap(), b"hello");
        // Replaced: what it held comes back.
        let (answer, before) = served(d, write("notes/a.txt", true), b"world");
        assert_eq!(answer, FileAnswer::Done { size: 5, len: 5 });
        assert_eq!(before, b"hello");
        let read = FileOp::Read {
            path: "notes/a.txt".into(),
            max: 100,
        };
        let (_, data) = served(d, read, b"");
        assert_eq!(data, b"world");
        // A link the agent planted leads nowhere, and the refusal keeps its kind.
        std::fs::write(d.join("secret"), "s").unwrap();
        std::os::unix::fs::symlink(d.join("secret"), d.join("room/leak")).unwrap();
        let read = FileOp::Read {
            path: "leak".into(),
            max: 100,
        };
        let (answer, _) = served(d, read, b"");
        let FileAnswer::Refused {
            kind,
            detail,
            size,
            max,
        } = answer
        else {
            panic!("read through a link: {answer:?}");
        };
        assert!(matches!(
            refused(&kind, detail, size, max),
            FolderError::Outside("a link")
        ));
        let (answer, _) = served(d, write("leak", true), b"owned");
        assert!(matches!(answer, FileAnswer::Refused { .. }), "{answer:?}");
        assert_eq!(std::fs::read(d.join("secret")).unwrap(), b"s");
    }

    #[test]
    fn each_refusal_reads_back_as_the_error_it_was() {
        for error in [
            FolderError::Outside("`..`"),
            FolderError::NotFound,
            FolderError::NotAFile,
            FolderError::TooLarge { size: 9, max: 3 },
        ] {
            let FileAnswer::Refused {
                kind,
                detail,
                size,
                max,
            } = refusal(&error)
            else {
                unreachable!()
            };
            assert_eq!(
                refused(&kind, detail, size, max).to_string(),
                error.to_string()
            );
        }
    }
}
