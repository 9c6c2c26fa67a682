//! `[matrix]`: the homeserver and the agents' Matrix stores, and where a secret comes from.

use std::path::{Path, PathBuf};

use serde::Deserialize;

use super::problems::Problems;
use crate::model::Secret;

/// The homeserver connection.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MatrixConfig {
    /// Base URL of the homeserver's client API, e.g. `https://matrix.example.org`.
    pub homeserver: String,
    /// Refuse encrypted messages and reactions from devices their owner has not
    /// cross-signed (besides those always refused: keys of another user, an identity that
    /// changed since it was verified).
    #[serde(default)]
    pub require_cross_signed: bool,
    /// Refuse them also when the sender's identity was not verified by the agent's own
    /// (its user-signing key signed it, as when someone signed in as the agent verifies the
    /// person): a homeserver that makes a new identity for a user, with devices it
    /// cross-signs, is believed otherwise. Implies `require_cross_signed`.
    #[serde(default)]
    pub require_verified_identity: bool,
    /// Name of an environment variable holding the passphrase that encrypts the agents'
    /// Matrix stores (their end-to-end keys) at rest.
    #[serde(default)]
    pub store_passphrase_env: Option<String>,
    /// A file whose content (trimmed) is that passphrase.
    #[serde(default)]
    pub store_passphrase_file: Option<PathBuf>,
}

impl MatrixConfig {
    /// The passphrase for the agents' Matrix stores, if one is configured.
    pub fn store_passphrase(&self) -> Result<Option<Secret>, String> {
        secret_from(
            self.store_passphrase_env.as_deref(),
            self.store_passphrase_file.as_deref(),
        )
    }
}

/// A secret from the environment variable `env`, else from the file `file` (trimmed);
/// `None` when neither is given. An unset or empty variable, an empty or unreadable file
/// is an error that says which.
pub(crate) fn secret_from(
    env: Option<&str>,
    file: Option<&Path>,
) -> Result<Option<Secret>, String> {
    if let Some(var) = env {
        return match std::env::var(var) {
            Ok(value) if !value.is_empty() => Ok(Some(Secret::new(value))),
            _ => Err(format!("environment variable {var} is not set")),
        };
    }
    if let Some(file) = file {
        return match std::fs::read_to_string(file) {
            Ok(text) if !text.trim().is_empty() => Ok(Some(Secret::new(text.trim()))),
            Ok(_) => Err(format!("{} is empty", file.display())),
            Err(e) => Err(format!("cannot read {}: {e}", file.display())),
        };
    }
    Ok(None)
}

impl MatrixConfig {
    /// Checks `[matrix]`.
    pub(super) fn check(&self, problems: &mut Problems) {
        let hs = self.homeserver.trim();
        if !(hs.starts_with("http://") || hs.starts_with("https://")) {
            problems.bad(
                "homeserver",
                format!("`{hs}` is not an http:// or https:// URL"),
            );
        }
        if self.store_passphrase_env.is_some() && self.store_passphrase_file.is_some() {
            problems.bad(
                "",
                "give at most one of store_passphrase_env, store_passphrase_file",
            );
        } else if let Err(e) = self.store_passphrase() {
            problems.unreadable_secret("store_passphrase", e);
        }
    }
}
