//! The TOML configuration file: its shape, its validation and where secrets come from.
//!
//! Everything is checked once at start-up by [`Config::load`], so a typo or a missing folder
//! is reported with the key that holds it (`agents[1].workspace: …`) instead of surfacing later
//! as a confusing runtime failure.

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Deserialize;

use crate::core::gateway::ScheduleSettings;
use crate::core::poll::PermissionSettings;
use crate::core::view::stream::StreamSettings;
use crate::model::Verbosity;

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
    /// running needs it, `sidekicks check` (which does not touch Matrix) does not.
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

/// The agent sandbox, for every agent (each can change its `mode`).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct SandboxConfig {
    /// `auto` (bubblewrap where it works here, else none, with a warning), `bubblewrap`
    /// (an agent that cannot be sandboxed does not start) or `off`.
    pub mode: SandboxMode,
    /// The bubblewrap program.
    pub bwrap: PathBuf,
    /// More paths no agent may see, besides those the gateway always hides (its state
    /// folder, this config, password files, its own home, the other agents' workspaces).
    pub hide: Vec<PathBuf>,
}

impl Default for SandboxConfig {
    fn default() -> Self {
        Self {
            mode: SandboxMode::Auto,
            bwrap: "bwrap".into(),
            hide: Vec::new(),
        }
    }
}

/// Whether agents are sandboxed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SandboxMode {
    /// Bubblewrap where it works on this machine; otherwise none, with a warning.
    Auto,
    /// Always bubblewrap: an agent that cannot be sandboxed does not start.
    Bubblewrap,
    /// No sandbox: the agent sees what the gateway's Unix user sees.
    Off,
}

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

/// The allow-list.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AccessConfig {
    /// Matrix user IDs or glob patterns (`@*:example.org`) allowed to invite and prompt agents.
    pub allowed_users: Vec<String>,
    /// Who may answer permission polls (approve or refuse a tool call). Defaults to
    /// `allowed_users`; the agents' own users never count.
    #[serde(default)]
    pub approvers: Option<Vec<String>>,
    /// Who may choose any mode, model or option value (`!mode`, `!model`, `!set`), the modes
    /// that turn permission prompts off included; the others choose within each agent's
    /// `settings`. Defaults to the approvers.
    #[serde(default)]
    pub admins: Option<Vec<String>>,
    /// The power level an approver must also have in a room to answer its polls (e.g. 50,
    /// a moderator); unset: being an approver is enough.
    #[serde(default)]
    pub approver_min_power: Option<i64>,
    /// Users refused every role whatever the lists above say, as IDs or patterns: the
    /// bridge puppets, guests and bots a broad pattern would let in.
    #[serde(default)]
    pub deny: Vec<String>,
}

impl AccessConfig {
    /// The approvers, falling back to the allowed users.
    pub fn approvers(&self) -> &[String] {
        self.approvers.as_deref().unwrap_or(&self.allowed_users)
    }

    /// The admins, falling back to the approvers.
    pub fn admins(&self) -> &[String] {
        self.admins.as_deref().unwrap_or(self.approvers())
    }
}

/// Continuity settings.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ContinuityConfig {
    /// Most characters of earlier conversation sent with the first prompt of a new session
    /// (for agents that cannot `session/load`); 0 turns re-injection off.
    pub reinject_max_chars: usize,
    /// Whether a prompt whose turn was cut by a gateway crash is run again at the next
    /// start (off: the room is told how to retry, so nothing runs twice unasked).
    pub rerun_interrupted: bool,
    /// Whether editing the message being answered stops its answer and runs the new text
    /// (off: the room is told the edit is not run).
    pub rerun_edited: bool,
    /// Most timeline events per room a sync returns; a room with more new events than
    /// this is caught up page by page (`/messages`). Larger means fewer catch-ups.
    pub sync_timeline_limit: u32,
    /// Most events of one room taken in after a gap (the gateway was down, the sync fell
    /// behind); older messages are reported in the room as not answered.
    pub catch_up_max_events: usize,
    /// Oldest a message may be, in hours, and still be answered after a gap; older ones
    /// are reported in the room as not answered.
    pub catch_up_max_hours: u64,
}

impl Default for ContinuityConfig {
    fn default() -> Self {
        Self {
            reinject_max_chars: 12_000,
            rerun_interrupted: false,
            rerun_edited: false,
            sync_timeline_limit: 100,
            catch_up_max_events: 500,
            catch_up_max_hours: 24,
        }
    }
}

/// How long the database keeps what it no longer needs to work.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct RetentionConfig {
    /// Days a handled-event marker is kept (they stop a message from being answered
    /// twice). 0: the catch-up window (`continuity.catch_up_max_hours`) and one day more;
    /// a value must be longer than that window.
    pub handled_days: u64,
    /// Days transcript lines are kept (the conversation re-injected into new sessions).
    /// 0: kept for good.
    pub transcript_days: u64,
}

impl RetentionConfig {
    /// How long a handled-event marker is kept, given the catch-up window.
    pub fn handled(&self, catch_up_hours: u64) -> Duration {
        match self.handled_days {
            0 => Duration::from_secs((catch_up_hours + 24) * 3600),
            days => Duration::from_secs(days * 24 * 3600),
        }
    }

    /// How long transcript lines are kept (`None`: for good).
    pub fn transcript(&self) -> Option<Duration> {
        (self.transcript_days > 0).then(|| Duration::from_secs(self.transcript_days * 24 * 3600))
    }
}

/// Timeouts for agents.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct TimeoutsConfig {
    /// Seconds an agent may take to answer `initialize` when it starts.
    pub initialize_secs: u64,
    /// Seconds an agent may take to open (or load) a session.
    pub new_session_secs: u64,
    /// Seconds a turn may show no activity before the room gets a note saying how to stop
    /// it (0: never). The turn itself is never ended for being quiet.
    pub quiet_turn_secs: u64,
}

impl Default for TimeoutsConfig {
    fn default() -> Self {
        Self {
            initialize_secs: 30,
            new_session_secs: 120,
            quiet_turn_secs: 300,
        }
    }
}

/// Where metrics and health are served (`docs/operations.md`).
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct MetricsConfig {
    /// The address `/metrics`, `/health/live` and `/health/ready` are served on, such as
    /// `127.0.0.1:9464` (unset: not served). Keep it on loopback, or behind a proxy that
    /// only your monitoring reaches: the metrics name the agents and count their work.
    pub listen: Option<String>,
}

/// Agent process pool settings.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct PoolConfig {
    /// Most agent processes running at once (0: no limit). When the limit is reached, the
    /// least recently used idle agent is stopped to make room; a prompt for which no agent
    /// can be stopped waits for a slot (and the room is told).
    pub max_running: usize,
    /// Seconds an agent process may go without a turn before it is stopped (0: never). Its
    /// next prompt starts it again.
    pub idle_stop_secs: u64,
}

/// Settings for rooms with several agents.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct RoomsConfig {
    /// Whether an agent's answer that addresses another agent of the room is handed to it
    /// (rooms can change it with `!handoff`).
    pub handoff: bool,
    /// Most hand-offs between agents that one person's message may cause, so two agents
    /// cannot keep answering each other.
    pub handoff_max_hops: u32,
    /// How threads map onto conversations where a room has not chosen with `!threads`:
    /// `separate` (each thread a conversation of its own), `new` (each message of the main
    /// timeline opens its own thread) or `one` (threads are part of the room's conversation).
    pub threads: crate::model::ThreadMode,
}

impl Default for RoomsConfig {
    fn default() -> Self {
        Self {
            handoff: false,
            handoff_max_hops: 3,
            threads: crate::model::ThreadMode::Separate,
        }
    }
}

/// Messages waiting behind a running turn.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct QueueConfig {
    /// Most messages waiting behind the running turn of one conversation; past it a
    /// message is refused with a notice and nothing runs it later, so a flooded room
    /// cannot fill the gateway's memory or keep its agent busy for hours.
    pub max_waiting: usize,
    /// What a message written while the agent works does where a room has not chosen with
    /// `!queue`: `queue` (it waits its turn), `steer` (it joins the running turn where the
    /// agent offers steering) or `interrupt` (it stops the turn and is answered at once).
    pub mode: crate::model::QueueMode,
}

impl Default for QueueConfig {
    fn default() -> Self {
        Self {
            max_waiting: 1_000,
            mode: crate::model::QueueMode::Queue,
        }
    }
}

/// What agents take of people's files.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct MediaConfig {
    /// Largest file fetched for an agent, in MB (files people send that are larger get a
    /// notice and are never downloaded).
    pub max_file_mb: u64,
    /// Largest text file an agent gets as its text (where it takes embedded context), in
    /// KB; larger ones are given as a link to the saved file.
    pub embed_text_max_kb: u64,
    /// Whether a picture sent without a caption waits for its sender's next message (the
    /// question about it); `false` makes it a prompt by itself at once.
    pub wait_for_question: bool,
}

impl Default for MediaConfig {
    fn default() -> Self {
        let limits = crate::model::media::MediaLimits::default();
        Self {
            max_file_mb: limits.max_bytes / (1024 * 1024),
            embed_text_max_kb: limits.embed_text_max_bytes / 1024,
            wait_for_question: limits.wait_for_question,
        }
    }
}

impl MediaConfig {
    /// The limits as the core applies them.
    pub fn limits(&self) -> crate::model::media::MediaLimits {
        crate::model::media::MediaLimits {
            max_bytes: self.max_file_mb.saturating_mul(1024 * 1024),
            embed_text_max_bytes: self.embed_text_max_kb.saturating_mul(1024),
            wait_for_question: self.wait_for_question,
        }
    }
}

/// Display settings.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct DisplayConfig {
    /// What a room shows unless someone changed it with `!show`: `all` (tool cards, plan,
    /// thinking indicator, usage), `tools` (tool cards and plan) or `answer` (answers only).
    /// Permission polls and errors are always shown.
    pub show: Verbosity,
    /// Which pictures in an agent's Markdown are shown as pictures: `links` (none: each
    /// becomes its description and address, so nothing is fetched without a click) or
    /// `matrix` (those already on a Matrix server, `mxc://`).
    pub pictures: crate::render::markdown::Pictures,
    /// Whether agents mark people's messages with status reactions (👀 taken, then ✅
    /// answered, ❌ failed or 🛑 stopped) where a room has not chosen with `!reactions`.
    /// A waiting message is marked ⏳ either way.
    pub status_reactions: bool,
}

/// Chat command settings.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct CommandsConfig {
    /// The character(s) that start a chat command such as `!stop`.
    pub prefix: String,
}

impl Default for CommandsConfig {
    fn default() -> Self {
        Self { prefix: "!".into() }
    }
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
            agent.matrix.recovery_key_file.iter_mut().for_each(fix);
        }
        for hook in &mut self.webhooks {
            hook.secret_file.iter_mut().for_each(fix);
        }
    }
}

mod access_warnings;
mod agent;
mod layout_warnings;
mod secret_paths;
mod validate;
mod webhook;

pub use webhook::{WebhookConfig, WebhookListenerConfig};

#[cfg(test)]
mod tests;
