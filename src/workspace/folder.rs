//! A conversation's folder, held open. Everything the gateway reads or writes for an agent
//! (its `fs/*` requests, people's files saved in its inbox, the files its answers link to,
//! `!file`, the room tools) is opened beneath this handle, one path component at a time,
//! never following a link: neither `..`, nor a link, nor a folder the agent swaps for a link
//! between two requests (or while one is made) leads out of it. The folder itself is opened
//! once, when its conversation first needs it, the same way below the workspace root the
//! operator configured; an agent that later replaces it (it may write the folder above, with
//! `{room}` workspaces) changes nothing for the gateway, which keeps the folder it opened.
//!
//! Only regular files are read or written (no FIFO to hang on, no device), without blocking,
//! and reads are capped.
//!
//! The folder of an agent on another host (the SSH runner) is the same folder there: each
//! operation is sent to the `sidekicks remote` helper on the agent's host ([`remote`]),
//! which opens the folder and the file the same way, with this code.

use std::ffi::{CString, OsStr, OsString};
use std::fs::File;
use std::io::{Read as _, Seek as _, Write as _};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Component, Path, PathBuf};

/// Why a file of the folder was not read or written.
#[derive(Debug, thiserror::Error)]
pub enum FolderError {
    /// The path leads out of the folder: `..`, an absolute path elsewhere, or a link.
    #[error("outside the conversation's folder ({0})")]
    Outside(&'static str),
    /// Nothing is there.
    #[error("no such file")]
    NotFound,
    /// It is not a regular file (a folder, a FIFO, a device, a socket).
    #[error("not a regular file")]
    NotAFile,
    /// It is larger than the gateway reads.
    #[error("{size} bytes, more than the {max} read at most")]
    TooLarge {
        /// Its size.
        size: u64,
        /// The most read.
        max: u64,
    },
    /// The system refused (permissions, a full disk…).
    #[error("{0}")]
    Io(#[source] std::io::Error),
}

impl From<std::io::Error> for FolderError {
    fn from(e: std::io::Error) -> Self {
        match e.raw_os_error() {
            Some(libc::ENOENT) => FolderError::NotFound,
            // O_NOFOLLOW on a link, or a link where a folder was asked for.
            Some(libc::ELOOP) => FolderError::Outside("a link"),
            Some(libc::ENXIO) => FolderError::NotAFile,
            _ => FolderError::Io(e),
        }
    }
}

/// How a file is written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Write {
    /// Made if missing, else emptied and written (what it held is returned).
    Replace,
    /// Made new; an existing one is left alone (`AlreadyExists`).
    CreateNew,
}

/// A conversation's folder, opened once and held.
#[derive(Debug)]
pub struct Folder {
    /// Where it is.
    place: Place,
    /// Its path as the agent knows it: its session's `cwd`, and what absolute paths it
    /// gives are taken relative to.
    path: PathBuf,
}

/// Where a folder is, and how it is reached.
#[derive(Debug)]
enum Place {
    /// On the gateway's host, held open (`O_PATH`): every file is opened from it.
    Here(OwnedFd),
    /// On the agent's host, through the helper there.
    There(remote::RemoteFolder),
}

/// What [`Folder::open_read`] gives: a reader of the file, here or on the agent's host.
pub type Reader = Box<dyn std::io::Read + Send>;

impl Folder {
    /// Opens `root` (the workspace root the operator configured: links in it are the
    /// operator's and are followed) and then `below` it one component at a time, never
    /// following a link (the part an agent can change), making the folders that are missing.
    pub fn open(root: &Path, below: &Path) -> Result<Folder, FolderError> {
        std::fs::create_dir_all(root)?;
        let fd = open_path(&cstring(root.as_os_str())?, libc::AT_FDCWD, true)?;
        let mut folder = Folder {
            place: Place::Here(fd),
            path: root.to_owned(),
        };
        let parts = components(below)?;
        if !parts.is_empty() {
            folder.place = Place::Here(folder.dir(&parts, true)?);
            folder.path = root.join(below);
        }
        Ok(folder)
    }

    /// Opens the folder `below` `root` on the agent's host that `link` reaches, the way
    /// [`Folder::open`] does there.
    pub fn open_remote(
        link: std::sync::Arc<crate::remote::Link>,
        root: &Path,
        below: &Path,
    ) -> Result<Folder, FolderError> {
        let parts = components(below)?;
        let path = match parts.is_empty() {
            true => root.to_owned(),
            false => root.join(below),
        };
        Ok(Folder {
            place: Place::There(remote::RemoteFolder::open(link, root, below)?),
            path,
        })
    }

    /// Its path as the agent knows it.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// `path` (relative to the folder, or absolute inside [`Folder::path`]) as the
    /// components below the folder; `..` and absolute paths elsewhere are refused.
    pub fn relative(&self, path: &Path) -> Result<Vec<OsString>, FolderError> {
        let rest = match path.is_absolute() {
            true => path
                .strip_prefix(&self.path)
                .map_err(|_| FolderError::Outside("an absolute path elsewhere"))?,
            false => path,
        };
        components(rest)
    }

    /// Whether `path` is a folder beneath this one, reached without a link.
    pub fn is_dir(&self, path: &Path) -> Result<(), FolderError> {
        let parts = self.relative(path)?;
        if let Place::There(remote) = &self.place {
            return remote.is_dir(&joined(&parts));
        }
        self.dir(&parts, false).map(|_| ())
    }

    /// Reads `path` whole when it is a regular file of at most `max` bytes.
    pub fn read(&self, path: &Path, max: u64) -> Result<Vec<u8>, FolderError> {
        if let Place::There(remote) = &self.place {
            return remote.read(&joined(&self.relative(path)?), max);
        }
        let mut file = self.open_file(path, libc::O_RDONLY, 0)?;
        let size = file.metadata()?.len();
        if size > max {
            return Err(FolderError::TooLarge { size, max });
        }
        let mut data = Vec::new();
        // A file that grows meanwhile is read to the cap, not past it.
        (&mut file).take(max + 1).read_to_end(&mut data)?;
        if data.len() as u64 > max {
            return Err(FolderError::TooLarge {
                size: data.len() as u64,
                max,
            });
        }
        Ok(data)
    }

    /// Opens `path` for reading when it is a regular file (for a reader that stops early).
    pub fn open_read(&self, path: &Path) -> Result<Reader, FolderError> {
        if let Place::There(remote) = &self.place {
            return remote.stream(&joined(&self.relative(path)?));
        }
        Ok(Box::new(self.open_file(path, libc::O_RDONLY, 0)?))
    }

    /// Writes `data` to `path` the way `how` says, making missing folders; returns the size
    /// a replaced file had (0 for a new one) and what it held when that was at most `keep`
    /// bytes (and not empty).
    pub fn write(
        &self,
        path: &Path,
        data: &[u8],
        how: Write,
        keep: u64,
    ) -> Result<(u64, Option<Vec<u8>>), FolderError> {
        let parts = self.relative(path)?;
        let Some((name, parents)) = parts.split_last() else {
            return Err(FolderError::NotAFile);
        };
        if let Place::There(remote) = &self.place {
            return remote.write(&joined(&parts), data, how, keep);
        }
        let dir = self.dir(parents, true)?;
        let flags = match how {
            Write::Replace => libc::O_RDWR | libc::O_CREAT,
            Write::CreateNew => libc::O_WRONLY | libc::O_CREAT | libc::O_EXCL,
        };
        let mut file = open_file_at(&dir, name, flags, 0o644)?;
        let size = file.metadata()?.len();
        let before = match (how, size) {
            (Write::Replace, 1..) if size <= keep => {
                let mut old = Vec::new();
                (&mut file).take(keep).read_to_end(&mut old)?;
                Some(old)
            }
            _ => None,
        };
        file.set_len(0)?;
        file.seek(std::io::SeekFrom::Start(0))?;
        file.write_all(data)?;
        Ok((size, before))
    }

    /// Makes the folder `path` (and those above it) beneath this one.
    pub fn create_dirs(&self, path: &Path) -> Result<(), FolderError> {
        let parts = self.relative(path)?;
        if let Place::There(remote) = &self.place {
            return remote.create_dirs(&joined(&parts));
        }
        self.dir(&parts, true).map(|_| ())
    }

    /// Opens `path` with `flags` when it is a regular file.
    fn open_file(&self, path: &Path, flags: i32, mode: u32) -> Result<File, FolderError> {
        let parts = self.relative(path)?;
        let Some((name, parents)) = parts.split_last() else {
            return Err(FolderError::NotAFile);
        };
        let dir = self.dir(parents, false)?;
        open_file_at(&dir, name, flags, mode)
    }

    /// The folder `parts` below this one, each step without following a link; missing ones
    /// made when `create`. Only for a folder on this host.
    fn dir(&self, parts: &[OsString], create: bool) -> Result<OwnedFd, FolderError> {
        let Place::Here(fd) = &self.place else {
            return Err(FolderError::Io(std::io::Error::other(
                "a folder on another host is not opened here",
            )));
        };
        // A duplicate of the handle, so every step owns what it opened.
        let mut current = fd.try_clone()?;
        for part in parts {
            let name = cstring(part)?;
            let next = match open_path(&name, current.as_raw_fd(), false) {
                Err(FolderError::NotFound) if create => {
                    // SAFETY: mkdirat(2) with a valid directory descriptor and a NUL-ended
                    // name; an existing entry (a race) is met by the open below.
                    let made = unsafe { libc::mkdirat(current.as_raw_fd(), name.as_ptr(), 0o755) };
                    if made == -1 {
                        let e = std::io::Error::last_os_error();
                        if e.raw_os_error() != Some(libc::EEXIST) {
                            return Err(e.into());
                        }
                    }
                    open_path(&name, current.as_raw_fd(), false)?
                }
                other => other?,
            };
            current = next;
        }
        Ok(current)
    }
}

/// Opens directory `name` relative to `dir` as a handle (`O_PATH`), following a link only
/// when `follow` (the operator's root).
fn open_path(name: &CString, dir: i32, follow: bool) -> Result<OwnedFd, FolderError> {
    let nofollow = if follow { 0 } else { libc::O_NOFOLLOW };
    let flags = libc::O_PATH | libc::O_DIRECTORY | libc::O_CLOEXEC | nofollow;
    // SAFETY: openat(2) with a NUL-ended name; the descriptor it returns is ours.
    let fd = unsafe { libc::openat(dir, name.as_ptr(), flags) };
    if fd == -1 {
        let e = std::io::Error::last_os_error();
        // A link met with O_NOFOLLOW|O_DIRECTORY reads ENOTDIR on some kernels.
        return Err(match e.raw_os_error() {
            Some(libc::ENOTDIR) if !follow => match is_link(dir, name) {
                true => FolderError::Outside("a link"),
                false => FolderError::NotAFile,
            },
            _ => e.into(),
        });
    }
    // SAFETY: `fd` was just returned by openat and is owned by nothing else.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// Whether `name` in `dir` is a symbolic link.
fn is_link(dir: i32, name: &CString) -> bool {
    // SAFETY: fstatat(2) fills `stat`, a plain struct we own.
    unsafe {
        let mut stat: libc::stat = std::mem::zeroed();
        libc::fstatat(dir, name.as_ptr(), &mut stat, libc::AT_SYMLINK_NOFOLLOW) == 0
            && stat.st_mode & libc::S_IFMT == libc::S_IFLNK
    }
}

/// Opens file `name` in `dir` with `flags`, never following a link and never blocking (a
/// FIFO opens at once, and is refused with everything else that is not a regular file).
fn open_file_at(dir: &OwnedFd, name: &OsStr, flags: i32, mode: u32) -> Result<File, FolderError> {
    let name = cstring(name)?;
    let flags = flags | libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_CLOEXEC;
    // SAFETY: openat(2) with a valid directory descriptor and a NUL-ended name.
    let fd = unsafe { libc::openat(dir.as_raw_fd(), name.as_ptr(), flags, mode) };
    if fd == -1 {
        let e = std::io::Error::last_os_error();
        return Err(match e.raw_os_error() {
            Some(libc::EISDIR) => FolderError::NotAFile,
            _ => e.into(),
        });
    }
    // SAFETY: `fd` was just returned by openat and is owned by nothing else.
    let file = unsafe { File::from_raw_fd(fd) };
    if !file.metadata()?.is_file() {
        return Err(FolderError::NotAFile);
    }
    clear_nonblocking(&file)?;
    Ok(file)
}

/// Makes reads of a regular file opened without blocking ordinary again.
fn clear_nonblocking(file: &File) -> std::io::Result<()> {
    let fd = file.as_raw_fd();
    // SAFETY: fcntl(2) on a descriptor we own, with integer arguments only.
    unsafe {
        let flags = libc::fcntl(fd, libc::F_GETFL);
        if flags == -1 || libc::fcntl(fd, libc::F_SETFL, flags & !libc::O_NONBLOCK) == -1 {
            return Err(std::io::Error::last_os_error());
        }
    }
    Ok(())
}

/// The plain components of a relative path: `.` dropped, `..` and roots refused.
fn components(path: &Path) -> Result<Vec<OsString>, FolderError> {
    let mut out = Vec::new();
    for part in path.components() {
        match part {
            Component::Normal(name) => out.push(name.to_owned()),
            Component::CurDir => {}
            Component::ParentDir => return Err(FolderError::Outside("`..`")),
            Component::RootDir | Component::Prefix(_) => {
                return Err(FolderError::Outside("an absolute path elsewhere"));
            }
        }
    }
    Ok(out)
}

/// `parts` as one relative path, as the helper on the agent's host takes it.
fn joined(parts: &[OsString]) -> PathBuf {
    parts.iter().collect()
}

fn cstring(text: &OsStr) -> Result<CString, FolderError> {
    CString::new(text.as_bytes()).map_err(|_| FolderError::Outside("a NUL character"))
}

pub mod remote;

#[cfg(test)]
mod tests;
