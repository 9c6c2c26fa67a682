//! Opening a file inside a folder an agent can change, without following it out: the agent
//! may swap a folder for a link between a check and an open, so the check is made on the
//! file actually opened (its path as the kernel resolved it), and the last part of the path
//! is never followed if it is a link.

use std::fs::{File, OpenOptions};
use std::io;
use std::os::fd::AsRawFd;
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;

/// Opens `path` with `options` (not following a link at its end) and makes sure the file
/// opened lies inside `root` (a canonical path); anything else is refused as
/// `PermissionDenied`. Open for writing without truncating: a file refused is left as it
/// was (at worst an empty one is made outside, when `options` creates).
pub fn open_within(root: &Path, path: &Path, options: &mut OpenOptions) -> io::Result<File> {
    let file = options.custom_flags(libc::O_NOFOLLOW).open(path)?;
    let opened = std::fs::read_link(format!("/proc/self/fd/{}", file.as_raw_fd()))?;
    if !opened.starts_with(root) {
        return Err(io::Error::new(
            io::ErrorKind::PermissionDenied,
            format!("{} leads outside {}", path.display(), root.display()),
        ));
    }
    Ok(file)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_files_that_are_inside_are_opened() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("ws").canonicalize().ok();
        std::fs::create_dir_all(dir.path().join("ws/sub")).unwrap();
        let root = root.unwrap_or_else(|| dir.path().join("ws").canonicalize().unwrap());
        std::fs::write(root.join("sub/a.txt"), "a").unwrap();
        std::fs::write(dir.path().join("secret"), "s").unwrap();
        std::os::unix::fs::symlink(dir.path().join("secret"), root.join("link")).unwrap();
        std::os::unix::fs::symlink(dir.path(), root.join("up")).unwrap();
        let read = || {
            let mut o = OpenOptions::new();
            o.read(true);
            o
        };
        assert!(open_within(&root, &root.join("sub/a.txt"), &mut read()).is_ok());
        // A link at the end is not followed; one on the way is caught by the check.
        assert!(open_within(&root, &root.join("link"), &mut read()).is_err());
        let err = open_within(&root, &root.join("up/secret"), &mut read()).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::PermissionDenied);
        let mut write = OpenOptions::new();
        write.write(true);
        assert!(open_within(&root, &root.join("up/secret"), &mut write).is_err());
        assert_eq!(
            std::fs::read_to_string(dir.path().join("secret")).unwrap(),
            "s"
        );
    }
}
