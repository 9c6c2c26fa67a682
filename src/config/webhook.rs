//! `[webhook_listener]` and the `[[webhooks]]` tables: HTTP requests that prompt an agent
//! (`docs/schedules.md`, "Webhooks").

use std::path::PathBuf;

use serde::Deserialize;

use super::problems::Problems;
use crate::core::webhooks::signature::Signing;
use crate::model::Secret;

/// Where webhooks are served.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct WebhookListenerConfig {
    /// The address webhooks are served on (`/hooks/NAME`), such as `127.0.0.1:8088`
    /// (unset: none served). Put it behind a TLS proxy the senders reach.
    pub listen: Option<String>,
    /// How far a generic signature's timestamp may be from now (`hmac-sha256`), seconds.
    pub max_age_secs: u64,
    /// How long a request's body may take to arrive once its headers have, seconds (then
    /// `408` and the connection closed): a client that announces a body and never sends it
    /// holds none of the listener's connections for longer.
    pub body_timeout_secs: u64,
}

impl Default for WebhookListenerConfig {
    fn default() -> Self {
        Self {
            listen: None,
            max_age_secs: 300,
            body_timeout_secs: 10,
        }
    }
}

/// One webhook: a path, the room and agent it prompts, as whom, how it is signed.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WebhookConfig {
    /// Its name: its path is `/hooks/NAME`, and the room sees it by it.
    pub name: String,
    /// The room it prompts in (its ID).
    pub room: String,
    /// The agent it prompts (its `id`).
    pub agent: String,
    /// The allowed user whose prompt each delivery is: it runs with their rights, and
    /// polls mention them. A webhook gets no rights of its own.
    pub run_as: String,
    /// How its sender signs: `github`, `gitlab` or `hmac-sha256`.
    pub signature: Signing,
    /// A file holding the secret (trimmed).
    #[serde(default)]
    pub secret_file: Option<PathBuf>,
    /// An environment variable holding the secret.
    #[serde(default)]
    pub secret_env: Option<String>,
    /// The prompt, filled from the request's JSON (`{{ref}}`, `{{head_commit.message}}`).
    pub prompt: String,
    /// Whether a delivery answers in the room's conversation (else in a thread of its own).
    #[serde(default)]
    pub here: bool,
    /// The largest body taken, in KiB (413 beyond).
    #[serde(default = "default_max_body_kb")]
    pub max_body_kb: usize,
    /// Most deliveries taken per minute (429 beyond).
    #[serde(default = "default_per_minute")]
    pub per_minute: u32,
}

fn default_max_body_kb() -> usize {
    256
}

fn default_per_minute() -> u32 {
    30
}

impl WebhookConfig {
    /// The secret, from its file or variable.
    pub fn secret(&self) -> Result<Secret, String> {
        super::secret_from(self.secret_env.as_deref(), self.secret_file.as_deref())?
            .ok_or_else(|| "no secret: set secret_file or secret_env".into())
    }
}

impl WebhookConfig {
    /// Checks one `[[webhooks]]` table; `agents` are the configured agents' IDs. (Whether
    /// its name is another webhook's is `Config::problems`'.)
    pub(super) fn check(&self, agents: &[&str], problems: &mut Problems) {
        let name_ok = !self.name.is_empty()
            && (self.name.chars()).all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_');
        if !name_ok {
            problems.bad(
                "name",
                "use letters, digits, - and _ (it is the path /hooks/NAME)",
            );
        }
        if !agents.contains(&self.agent.as_str()) {
            problems.bad("agent", format!("no agent has the id `{}`", self.agent));
        }
        if !self.room.starts_with('!') {
            problems.bad("room", format!("`{}` is not a room ID (`!…`)", self.room));
        }
        if !self.run_as.starts_with('@') || !self.run_as.contains(':') {
            problems.bad("run_as", format!("`{}` is not a user ID", self.run_as));
        }
        if self.secret_file.is_some() == self.secret_env.is_some() {
            problems.bad("secret_file", "give exactly one of secret_file, secret_env");
        } else if let Err(e) = self.secret() {
            problems.bad("secret_file", e);
        }
        if let Err(e) = crate::core::webhooks::template::check(&self.prompt) {
            problems.bad("prompt", format!("not a template: {e}"));
        }
        if self.max_body_kb == 0 || self.per_minute == 0 {
            problems.bad(
                "max_body_kb",
                "max_body_kb and per_minute must be at least 1",
            );
        }
    }
}
