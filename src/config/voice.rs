//! `[voice]`: the speech-to-text service voice notes are heard by (`docs/conversations.md`,
//! "Voice notes"). Unset, a voice note is a file, as any other sound.

use std::path::PathBuf;

use serde::Deserialize;

use super::problems::Problems;
use crate::model::Secret;

/// Where and how voice notes are transcribed.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct VoiceConfig {
    /// An OpenAI-compatible transcription endpoint, whole:
    /// `http://127.0.0.1:8080/v1/audio/transcriptions` (unset: voice notes are files).
    pub transcribe_url: Option<String>,
    /// A file holding the service's key, sent as a bearer token (trimmed).
    pub key_file: Option<PathBuf>,
    /// An environment variable holding the service's key.
    pub key_env: Option<String>,
    /// The `model` the service is asked for.
    pub model: String,
    /// The language spoken (ISO-639-1, such as `en`), if all notes are in one: spares the
    /// service a guess.
    pub language: Option<String>,
    /// How long one note may take to be heard before it goes to the agent as a file,
    /// seconds.
    pub timeout_secs: u64,
}

impl Default for VoiceConfig {
    fn default() -> Self {
        Self {
            transcribe_url: None,
            key_file: None,
            key_env: None,
            model: "whisper-1".into(),
            language: None,
            timeout_secs: 60,
        }
    }
}

impl VoiceConfig {
    /// The service's key, from its file or variable (`None`: it wants none).
    pub fn key(&self) -> Result<Option<Secret>, String> {
        super::secret_from(self.key_env.as_deref(), self.key_file.as_deref())
    }

    /// Checks `[voice]`.
    pub(super) fn check(&self, problems: &mut Problems) {
        if let Some(url) = &self.transcribe_url {
            match url::Url::parse(url) {
                Ok(u) if matches!(u.scheme(), "http" | "https") && u.host().is_some() => {}
                _ => problems.bad(
                    "transcribe_url",
                    "not an http:// or https:// URL (such as http://127.0.0.1:8080/v1/audio/transcriptions)",
                ),
            }
        }
        if self.key_file.is_some() && self.key_env.is_some() {
            problems.bad("key_file", "give at most one of key_file, key_env");
        } else if let Err(e) = self.key() {
            problems.bad("key_file", e);
        }
        if self.model.trim().is_empty() {
            problems.bad("model", "name the model the service is asked for");
        }
        let language_ok = (self.language.as_deref()).is_none_or(|l| {
            (2..=3).contains(&l.len()) && l.chars().all(|c| c.is_ascii_lowercase())
        });
        if !language_ok {
            problems.bad("language", "an ISO-639-1 code such as `en`");
        }
        problems.at_least("timeout_secs", self.timeout_secs, 1);
    }
}
