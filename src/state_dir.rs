//! The gateway's state folder (`state_dir`): the database, every agent's Matrix access
//! token and crypto store. It is made private to the gateway's Unix user: the folder and
//! every folder in it `0700`, every file `0600`, so no other local user can read a token or
//! a transcript. (An agent runs as the gateway's user; keeping it out is the sandbox's job.)
//! The homes of sandboxed agents live here too ([`AGENT_HOMES`]); only their folders are
//! made private, what the agents keep in them is theirs (a program they install must stay
//! runnable).

use std::io;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;

/// The folder of `state_dir` that holds the sandboxed agents' own homes.
pub const AGENT_HOMES: &str = "agent-homes";

/// Creates `dir` if needed and makes it and everything in it private (see the module).
/// Called at start and again once the Matrix users have written their stores.
pub fn make_private(dir: &Path) -> io::Result<()> {
    std::fs::create_dir_all(dir)?;
    restrict(dir, true)
}

/// Makes `file` exist (empty, `0600`, never through a link) when it does not yet, so that
/// the agents' sandboxes, made before the gateway writes it, hide it (a recovery key written
/// on the first start). An existing file is left as it is.
pub fn reserve_private_file(file: &Path) -> io::Result<()> {
    use std::os::unix::fs::OpenOptionsExt as _;
    let made = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .custom_flags(libc::O_NOFOLLOW)
        .open(file);
    match made {
        Ok(_) => Ok(()),
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => Ok(()),
        Err(e) => Err(e),
    }
}

/// Writes a file only its owner can read (an access token, a recovery key, the host an
/// agent ran on): whole, into a file made new beside it, then renamed into place.
pub fn write_private(path: &Path, content: &str) -> std::io::Result<()> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    let tmp = path.with_extension("tmp");
    // Made new, never through a link: a stale one (a crash) is removed first.
    match std::fs::remove_file(&tmp) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => return Err(e),
        _ => {}
    }
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .custom_flags(libc::O_NOFOLLOW)
        .open(&tmp)?;
    file.write_all(content.as_bytes())?;
    file.sync_all()?;
    std::fs::rename(tmp, path)
}

/// Creates `dir` if needed and makes the folder itself private, leaving what it holds as
/// it is (an agent's home).
pub fn create_private(dir: &Path) -> io::Result<()> {
    std::fs::create_dir_all(dir)?;
    set_mode(dir, &std::fs::metadata(dir)?, 0o700)
}

fn restrict(path: &Path, top: bool) -> io::Result<()> {
    let meta = std::fs::symlink_metadata(path)?;
    if meta.file_type().is_symlink() {
        return Ok(());
    }
    if meta.is_dir() {
        set_mode(path, &meta, 0o700)?;
        for entry in std::fs::read_dir(path)? {
            let entry = entry?;
            if top && entry.file_name() == AGENT_HOMES {
                for home in std::fs::read_dir(entry.path())? {
                    let home = home?.path();
                    let meta = std::fs::symlink_metadata(&home)?;
                    if meta.is_dir() {
                        set_mode(&home, &meta, 0o700)?;
                    }
                }
                set_mode(&entry.path(), &entry.metadata()?, 0o700)?;
                continue;
            }
            restrict(&entry.path(), false)?;
        }
        Ok(())
    } else {
        set_mode(path, &meta, 0o600)
    }
}

fn set_mode(path: &Path, meta: &std::fs::Metadata, mode: u32) -> io::Result<()> {
    if meta.permissions().mode() & 0o777 != mode {
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mode(path: &Path) -> u32 {
        std::fs::metadata(path).unwrap().permissions().mode() & 0o777
    }

    #[test]
    fn the_state_folder_and_all_it_holds_are_private() {
        let tmp = tempfile::tempdir().unwrap();
        let state = tmp.path().join("state");
        std::fs::create_dir_all(state.join("matrix/demo")).unwrap();
        let token = state.join("matrix/demo/session.json");
        std::fs::write(&token, "{}").unwrap();
        std::fs::set_permissions(&token, std::fs::Permissions::from_mode(0o644)).unwrap();
        std::fs::set_permissions(&state, std::fs::Permissions::from_mode(0o755)).unwrap();
        make_private(&state).unwrap();
        assert_eq!(mode(&state), 0o700);
        assert_eq!(mode(&state.join("matrix/demo")), 0o700);
        assert_eq!(mode(&token), 0o600);
        // What an agent keeps in its home stays as it is: a program it installed stays
        // runnable. The home itself is private.
        let home = state.join(AGENT_HOMES).join("demo");
        std::fs::create_dir_all(home.join("bin")).unwrap();
        std::fs::set_permissions(&home, std::fs::Permissions::from_mode(0o755)).unwrap();
        let tool = home.join("bin/tool");
        std::fs::write(&tool, "#!/bin/sh\n").unwrap();
        std::fs::set_permissions(&tool, std::fs::Permissions::from_mode(0o755)).unwrap();
        make_private(&state).unwrap();
        assert_eq!(mode(&tool), 0o755);
        assert_eq!(mode(&home.join("bin")), 0o755);
        assert_eq!(mode(&home), 0o700);
        assert_eq!(mode(&state.join(AGENT_HOMES)), 0o700);
        // A folder that does not exist yet is created private.
        let fresh = tmp.path().join("fresh/state");
        make_private(&fresh).unwrap();
        assert_eq!(mode(&fresh), 0o700);
    }
}
