//! The TOML configuration file: its shape, its validation and where secrets come from.
//!
//! Everything is checked once at start-up by [`Config::load`], so a typo or a missing folder
//! is reported with the key that holds it (`agents[1].workspace: …`) instead of surfacing later
//! as a confusing runtime failure.

use std::path::{Path, PathBuf};

use serde::Deserialize;

use crate::core::gateway::ScheduleSettings;
use crate::core::poll::PermissionSettings;
use crate::core::view::stream::StreamSettings;

pub use agent::*;

/// A configuration problem, naming the key it concerns.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// The file could not be read at all.
    #[error("cannot read config file {path}: {source}")]
    Read {
        /// The file we tried to read.
        path: PathBuf,
        /// Why reading failed.
        source: std::io::Error,
    },
    /// The file is not valid TOML or has a value of the wrong type or an unknown key.
    #[error("config file {path} is not valid: {message}")]
    Parse {
        /// The file being parsed.
        path: PathBuf,
        /// The TOML parser's message, which names the line and the key.
        message: String,
    },
    /// The file parsed, but some values are unusable.
    #[error("config file {path} has {} problem(s):\n{}", problems.len(), problems.iter().map(|p| format!("  - {p}")).collect::<Vec<_>>().join("\n"))]
    Invalid {
        /// The file being validated.
        path: PathBuf,
        /// Every problem found, each naming its key.
        problems: Vec<Problem>,
    },
}

/// One invalid value: the key and what is wrong with it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Problem {
    /// Dotted path of the key, e.g. `agents[0].matrix.password_env`.
    pub key: String,
    /// What is wrong, in words a person can act on.
    pub problem: String,
    /// Whether it is a Matrix secret (a password, the store passphrase) that cannot be read:
    /// running needs it, `sidekicks check` (which does not sign in) does not.
    pub matrix_secret: bool,
}

impl std::fmt::Display for Problem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.key, self.problem)
    }
}

/// The whole configuration file.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Config {
    /// Folder for the SQLite database and the agents' Matrix stores; created if missing.
    pub state_dir: PathBuf,
    /// Where the gateway keeps its state (sessions, transcripts, what it has handled):
    /// unset, the SQLite file `state_dir/sidekicks.db`; or a database URL, `sqlite://PATH`
    /// or `postgres://USER@HOST/DATABASE` for a PostgreSQL server (its password from a
    /// pgpass file, `PGPASSFILE`, rather than in the URL).
    #[serde(default)]
    pub store: Option<String>,
    /// How to reach the homeserver.
    pub matrix: MatrixConfig,
    /// Who may invite and prompt the agents.
    pub access: AccessConfig,
    /// How replies are streamed into the room (its keys are declared on
    /// [`StreamSettings`]; `pictures` comes from `[display]`, see [`Config::stream_settings`]).
    #[serde(default)]
    pub streaming: StreamSettings,
    /// Chat command settings.
    #[serde(default)]
    pub commands: CommandsConfig,
    /// How permission polls behave (its keys are declared on [`PermissionSettings`]).
    #[serde(default)]
    pub permissions: PermissionSettings,
    /// What rooms show of the agents' work besides their answers.
    #[serde(default)]
    pub display: DisplayConfig,
    /// How schedules set from rooms behave (its keys are declared on [`ScheduleSettings`]).
    #[serde(default)]
    pub schedules: ScheduleSettings,
    /// Where webhooks are served.
    #[serde(default)]
    pub webhook_listener: WebhookListenerConfig,
    /// The webhooks: HTTP requests that prompt an agent.
    #[serde(default)]
    pub webhooks: Vec<WebhookConfig>,
    /// How conversations survive the loss of their session, and how far back a gap in a
    /// room's timeline is caught up.
    #[serde(default)]
    pub continuity: ContinuityConfig,
    /// How long handled-event markers and transcripts are kept.
    #[serde(default)]
    pub retention: RetentionConfig,
    /// How long agents may take before Sidekicks gives up or speaks up.
    #[serde(default)]
    pub timeouts: TimeoutsConfig,
    /// How many agent processes run at once, and when an idle one is stopped.
    #[serde(default)]
    pub pool: PoolConfig,
    /// How rooms with several agents behave.
    #[serde(default)]
    pub rooms: RoomsConfig,
    /// How many messages may wait behind a running turn.
    #[serde(default)]
    pub queue: QueueConfig,
    /// What agents take of people's files (pictures, files, audio, video).
    #[serde(default)]
    pub media: MediaConfig,
    /// What agents may spend in each room.
    #[serde(default)]
    pub budgets: BudgetsConfig,
    /// The speech-to-text service voice notes are heard by.
    #[serde(default)]
    pub voice: VoiceConfig,
    /// Whether agents run in a sandbox that keeps the gateway's secrets out of their reach.
    #[serde(default)]
    pub sandbox: SandboxConfig,
    /// Where metrics and health are served for operators.
    #[serde(default)]
    pub metrics: MetricsConfig,
    /// The agents this gateway runs; each is its own Matrix user.
    #[serde(default, rename = "agents")]
    pub agents: Vec<AgentConfig>,
    /// The file this config was read from, so the sandbox can hide it from agents.
    #[serde(skip)]
    pub source: Option<PathBuf>,
}

/// `true`, for settings on by default.
fn yes() -> bool {
    true
}

impl Config {
    /// How replies stream: `[streaming]`, with `[display] pictures`.
    pub fn stream_settings(&self) -> StreamSettings {
        StreamSettings {
            pictures: self.display.pictures,
            ..self.streaming.clone()
        }
    }
}

impl Config {
    /// The URL of the state database: [`Config::store`], or the SQLite file in
    /// `state_dir`.
    pub fn store_url(&self) -> String {
        self.store
            .clone()
            .unwrap_or_else(|| crate::store::sqlite_url(&self.state_dir.join("sidekicks.db")))
    }
}

impl Config {
    /// Reads, parses and validates a config file.
    pub fn load(path: &Path) -> Result<Self, ConfigError> {
        let text = std::fs::read_to_string(path).map_err(|source| ConfigError::Read {
            path: path.to_owned(),
            source,
        })?;
        Self::from_toml(&text, path)
    }

    /// Parses and validates config text; `path` is only used in messages and to resolve
    /// relative folders.
    pub fn from_toml(text: &str, path: &Path) -> Result<Self, ConfigError> {
        let (config, _) = Self::parse(text, path, true)?;
        Ok(config)
    }

    /// Reads, parses and validates a config file for `sidekicks check`, which does not
    /// touch Matrix: a Matrix secret that cannot be read is returned beside the config
    /// instead of making it invalid.
    pub fn load_for_check(path: &Path) -> Result<(Self, Vec<Problem>), ConfigError> {
        let text = std::fs::read_to_string(path).map_err(|source| ConfigError::Read {
            path: path.to_owned(),
            source,
        })?;
        Self::parse(&text, path, false)
    }

    /// Parses and validates config text; with `matrix_secrets` false, the Matrix secrets
    /// that cannot be read are returned apart, not counted as problems.
    fn parse(
        text: &str,
        path: &Path,
        matrix_secrets: bool,
    ) -> Result<(Self, Vec<Problem>), ConfigError> {
        let mut config: Config = toml::from_str(text).map_err(|e| ConfigError::Parse {
            path: path.to_owned(),
            message: e.to_string(),
        })?;
        // Folders are relative to the config file wherever the gateway is started from,
        // a config given by a relative path included.
        let path = &std::path::absolute(path).unwrap_or_else(|_| path.to_owned());
        let base = path.parent().unwrap_or(Path::new("."));
        config.resolve_relative(base);
        config.source = Some(base.join(path.file_name().unwrap_or_default()));
        let (set_aside, problems): (Vec<Problem>, Vec<Problem>) =
            (config.problems().into_iter()).partition(|p| p.matrix_secret && !matrix_secrets);
        if problems.is_empty() {
            Ok((config, set_aside))
        } else {
            Err(ConfigError::Invalid {
                path: path.to_owned(),
                problems,
            })
        }
    }

    /// Makes relative folders relative to the config file, so the gateway behaves the same
    /// whatever folder it is started from.
    fn resolve_relative(&mut self, base: &Path) {
        let fix = |p: &mut PathBuf| {
            if p.is_relative() {
                *p = base.join(&*p);
            }
        };
        fix(&mut self.state_dir);
        self.matrix.store_passphrase_file.iter_mut().for_each(fix);
        self.sandbox.hide.iter_mut().for_each(fix);
        for agent in &mut self.agents {
            let named = agent
                .workspace
                .to_string_lossy()
                .replace("{agent}", &agent.id);
            agent.workspace = PathBuf::from(named);
            if let RunnerConfig::Ssh(ssh) = &mut agent.runner {
                // Its workspace and home are paths on its hosts, its keys files here.
                fix(&mut ssh.known_hosts);
                fix(&mut ssh.identity);
            } else {
                fix(&mut agent.workspace);
                agent.home.iter_mut().for_each(fix);
            }
            agent.sandbox.read_only.iter_mut().for_each(fix);
            agent.sandbox.read_write.iter_mut().for_each(fix);
            if let Some(w) = &mut agent.worktree
                && !matches!(agent.runner, RunnerConfig::Ssh(_))
            {
                fix(&mut w.repository);
            }
            if let Some(f) = &mut agent.matrix.password_file {
                fix(f);
            }
            agent.matrix.access_token_file.iter_mut().for_each(fix);
            agent.matrix.recovery_key_file.iter_mut().for_each(fix);
        }
        for hook in &mut self.webhooks {
            hook.secret_file.iter_mut().for_each(fix);
        }
        self.voice.key_file.iter_mut().for_each(fix);
    }
}

mod access;
mod access_warnings;
mod agent;
mod budgets;
mod layout_warnings;
mod matrix;
mod problems;
mod runner;
mod secret_paths;
mod tables;
mod validate;
mod voice;
mod webhook;

pub use access::AccessConfig;
pub use budgets::BudgetsConfig;
pub use matrix::MatrixConfig;
pub(crate) use matrix::secret_from;
pub use runner::{ContainerRunnerConfig, RunnerConfig, SshRunnerConfig};
pub use tables::{
    CommandsConfig, ContinuityConfig, DisplayConfig, MediaConfig, MetricsConfig, PoolConfig,
    QueueConfig, RetentionConfig, RoomsConfig, SandboxConfig, SandboxMode, TimeoutsConfig,
};
pub use voice::VoiceConfig;
pub use webhook::{WebhookConfig, WebhookListenerConfig};

#[cfg(test)]
mod tests;
