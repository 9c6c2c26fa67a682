//! Key backup and recovery: with a recovery key in a file, an agent whose store is lost
//! (a new disk, a wiped state folder) logs in as a new device and gets its identity back:
//! its cross-signing keys, so its new device is signed and clients that share room keys
//! only with signed devices still talk to it, and its key backup, so messages from before
//! can still be decrypted.
//!
//! Run once per start, after the first sync (the account's secret storage is known then):
//! - no recovery on the account: turned on (secret storage and key backup); the new key is
//!   written to the file, or, when the file holds a passphrase of the operator's, that
//!   passphrase becomes the key;
//! - recovery on, this device lacking secrets (a new device): recovered with the file;
//! - recovery on and complete: nothing to do; but when the file is missing, the key is
//!   made anew (this device holds every secret, so nothing is lost; the old key stops
//!   working) and written to the file.
//!
//! The key is never logged.

use crate::model::errors::Chain;
use crate::model::ids::AgentId;
use std::path::Path;

use futures::StreamExt;
use matrix_sdk::encryption::recovery::RecoveryState;
use tokio_util::sync::CancellationToken;

use super::client::MatrixAgent;

/// Writes `content` into `file` itself (made `0600` if missing, never through a link),
/// replacing what it held, and syncs it.
fn write_in_place(file: &Path, content: &str) -> std::io::Result<()> {
    use std::io::Write as _;
    use std::os::unix::fs::{OpenOptionsExt as _, PermissionsExt as _};
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .mode(0o600)
        .custom_flags(libc::O_NOFOLLOW)
        .open(file)?;
    if !f.metadata()?.is_file() {
        return Err(std::io::Error::other("not a regular file"));
    }
    f.set_permissions(std::fs::Permissions::from_mode(0o600))?;
    f.set_len(0)?;
    f.write_all(content.as_bytes())?;
    f.sync_all()
}

/// What to do about recovery, from its state on the account and the file's content.
#[derive(Debug, PartialEq, Eq)]
enum Step {
    /// Recovery is set up and this device has every secret.
    Nothing,
    /// Turn recovery on; `Some`: with the operator's passphrase from the file, `None`:
    /// with a new key written to the file.
    Enable(Option<String>),
    /// Get the secrets with the key from the file.
    Recover(String),
    /// Recovery is on but the file is missing: the device cannot get the secrets.
    KeyMissing,
    /// Recovery is on and complete, but the file that should hold its key is missing: a
    /// new key is made and written there.
    NewKey,
}

/// Decides the step; `key`: the file's trimmed content, `None` when missing or empty.
fn step(state: RecoveryState, key: Option<String>) -> Step {
    match (state, key) {
        (RecoveryState::Enabled, Some(_)) | (RecoveryState::Unknown, _) => Step::Nothing,
        (RecoveryState::Enabled, None) => Step::NewKey,
        (RecoveryState::Disabled, key) => Step::Enable(key),
        (RecoveryState::Incomplete, Some(key)) => Step::Recover(key),
        (RecoveryState::Incomplete, None) => Step::KeyMissing,
    }
}

/// The file's trimmed content; `None` when it does not exist or is empty.
fn read_key(file: &Path) -> std::io::Result<Option<String>> {
    match std::fs::read_to_string(file) {
        Ok(text) => Ok(Some(text.trim().to_owned()).filter(|k| !k.is_empty())),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e),
    }
}

impl MatrixAgent {
    /// Keeps the agent recoverable: once its recovery state is known, turns recovery on or
    /// recovers this device, as [the module](self) says. Ends at once without a key file.
    pub(super) async fn keep_recoverable(self, shutdown: CancellationToken) {
        let Some(file) = self.recovery_key_file.clone() else {
            return;
        };
        let recovery = self.client.encryption().recovery();
        let mut states = recovery.state_stream();
        let known = async {
            while let Some(state) = states.next().await {
                if state != RecoveryState::Unknown {
                    return Some(state);
                }
            }
            None
        };
        let state = tokio::select! {
            _ = shutdown.cancelled() => return,
            state = known => state,
        };
        let Some(state) = state else { return };
        let key = match read_key(&file) {
            Ok(key) => key,
            Err(e) => {
                tracing::error!(agent = %self.agent_id, file = %file.display(), error = %Chain(&e), "cannot read the recovery key file; recovery left as it is");
                return;
            }
        };
        let (agent, shown) = (&self.agent_id, file.display());
        match step(state, key) {
            Step::Nothing => {
                tracing::info!(agent = %agent, "recovery is on: identity and key backup kept");
            }
            Step::Enable(passphrase) => {
                let enable = recovery.enable().wait_for_backups_to_upload();
                let enabled = match &passphrase {
                    Some(p) => enable.with_passphrase(p).await,
                    None => enable.await,
                };
                match enabled {
                    Ok(_) if passphrase.is_some() => {
                        tracing::info!(agent = %agent, file = %shown, "recovery turned on with the passphrase in the file: keep a copy of it somewhere safe");
                    }
                    Ok(new_key) => keep_key(agent, &file, &new_key, "recovery turned on"),
                    Err(e) => {
                        tracing::error!(agent = %agent, error = %Chain(&e), "could not turn recovery on; a lost store would lose the agent's identity");
                    }
                }
            }
            Step::Recover(key) => match recovery.recover(&key).await {
                Ok(()) => {
                    tracing::info!(agent = %agent, "recovered the agent's identity and key backup: this device is signed again");
                }
                Err(e) => {
                    tracing::error!(agent = %agent, file = %shown, error = %Chain(&e), "could not recover with the key in the file (is it this account's?); this device stays unsigned");
                }
            },
            Step::KeyMissing => {
                tracing::warn!(agent = %agent, file = %shown, "the account has recovery turned on but the key file does not exist: this new device cannot get the agent's identity back; put the recovery key there and restart");
            }
            Step::NewKey => match recovery.reset_key().await {
                Ok(new_key) => keep_key(
                    agent,
                    &file,
                    &new_key,
                    "the recovery key file did not exist: a new key is made (the old one no longer works)",
                ),
                Err(e) => {
                    tracing::error!(agent = %agent, file = %shown, error = %Chain(&e), "the recovery key file does not exist and a new key could not be made; a lost store could not be recovered");
                }
            },
        }
    }
}

/// Writes a new recovery key to `file` (only its owner may read it), saying so; `what`
/// happened is logged with it. The key itself never reaches the log. Written in place (the
/// file is made, empty, before any agent starts): the agents' sandboxes hide the file as it
/// was then, and a file put there by a rename would not be hidden.
fn keep_key(agent: &AgentId, file: &Path, key: &str, what: &str) {
    match write_in_place(file, &format!("{key}\n")) {
        Ok(()) => {
            tracing::info!(%agent, file = %file.display(), "{what}; the key is written to the file: keep a copy of it somewhere safe");
        }
        // Next start, the file is still missing: a new key is made again.
        Err(e) => {
            tracing::error!(%agent, file = %file.display(), error = %Chain(&e), "{what}, but the key could not be written to the file; a lost store could not be recovered");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_step_follows_the_state_and_the_file() {
        let key = || Some("EsT1 abcd".to_owned());
        let table = [
            (RecoveryState::Unknown, key(), Step::Nothing),
            (RecoveryState::Enabled, key(), Step::Nothing),
            (RecoveryState::Enabled, None, Step::NewKey),
            (RecoveryState::Disabled, None, Step::Enable(None)),
            (RecoveryState::Disabled, key(), Step::Enable(key())),
            (
                RecoveryState::Incomplete,
                key(),
                Step::Recover(key().unwrap()),
            ),
            (RecoveryState::Incomplete, None, Step::KeyMissing),
        ];
        for (state, key, expected) in table {
            assert_eq!(step(state, key.clone()), expected, "{state:?} {key:?}");
        }
    }

    #[test]
    fn an_empty_or_missing_file_holds_no_key() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("key");
        assert_eq!(read_key(&file).unwrap(), None);
        std::fs::write(&file, "  \n").unwrap();
        assert_eq!(read_key(&file).unwrap(), None);
        std::fs::write(&file, " EsT1 abcd \n").unwrap();
        assert_eq!(read_key(&file).unwrap().as_deref(), Some("EsT1 abcd"));
    }

    #[test]
    fn keys_are_written_into_the_file_itself_never_through_a_link() {
        let dir = tempfile::tempdir().unwrap();
        let elsewhere = dir.path().join("elsewhere");
        std::fs::write(&elsewhere, "untouched").unwrap();
        let key = dir.path().join("key");
        std::os::unix::fs::symlink(&elsewhere, &key).unwrap();
        assert!(write_in_place(&key, "EsT1 abcd").is_err());
        assert_eq!(std::fs::read_to_string(&elsewhere).unwrap(), "untouched");
        // The session file's temporary file: a link planted there is replaced, not followed.
        let session = dir.path().join("session.json");
        std::os::unix::fs::symlink(&elsewhere, session.with_extension("tmp")).unwrap();
        crate::state_dir::write_private(&session, "{}").unwrap();
        assert_eq!(std::fs::read_to_string(&elsewhere).unwrap(), "untouched");
        assert_eq!(std::fs::read_to_string(&session).unwrap(), "{}");
        // The reserved key file: made 0600, a link in its place refused.
        let reserved = dir.path().join("reserved");
        crate::state_dir::reserve_private_file(&reserved).unwrap();
        use std::os::unix::fs::PermissionsExt as _;
        let mode = std::fs::metadata(&reserved).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
        write_in_place(&reserved, "EsT1 abcd").unwrap();
        assert_eq!(std::fs::read_to_string(&reserved).unwrap(), "EsT1 abcd");
    }
}
