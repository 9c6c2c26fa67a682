//! The TOML configuration file: its shape, its validation and where secrets come from.
//!
//! Everything is checked once at start-up by [`Config::load`], so a typo or a missing folder
//! is reported with the key that holds it (`agents[1].workspace: …`) instead of surfacing later
//! as a confusing runtime failure.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Deserialize;

use crate::model::Verbosity;

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
    /// How to reach the homeserver.
    pub matrix: MatrixConfig,
    /// Who may invite and prompt the agents.
    pub access: AccessConfig,
    /// How replies are streamed into the room.
    #[serde(default)]
    pub streaming: StreamingConfig,
    /// Chat command settings.
    #[serde(default)]
    pub commands: CommandsConfig,
    /// How permission polls behave.
    #[serde(default)]
    pub permissions: PermissionsConfig,
    /// What rooms show of the agents' work besides their answers.
    #[serde(default)]
    pub display: DisplayConfig,
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
    /// The agents this gateway runs; each is its own Matrix user.
    #[serde(default, rename = "agents")]
    pub agents: Vec<AgentConfig>,
}

/// The homeserver connection.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MatrixConfig {
    /// Base URL of the homeserver's client API, e.g. `https://matrix.example.org`.
    pub homeserver: String,
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
}

impl AccessConfig {
    /// The approvers, falling back to the allowed users.
    pub fn approvers(&self) -> &[String] {
        self.approvers.as_deref().unwrap_or(&self.allowed_users)
    }
}

/// Permission poll settings.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct PermissionsConfig {
    /// Seconds a poll stays open; then the request is refused (the agent's "reject" option).
    pub timeout_secs: u64,
    /// After this many refused tool calls in one turn, the gateway proposes to stop the turn.
    pub propose_stop_after: u32,
}

impl Default for PermissionsConfig {
    fn default() -> Self {
        Self {
            timeout_secs: 600,
            propose_stop_after: 3,
        }
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
}

impl Default for RoomsConfig {
    fn default() -> Self {
        Self {
            handoff: false,
            handoff_max_hops: 3,
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
}

/// Streaming (edit coalescing) settings.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct StreamingConfig {
    /// Minimum time between two edits of a streamed reply, in milliseconds.
    pub edit_interval_ms: u64,
    /// Most edits one reply message receives before only the final edit is sent.
    pub max_edits_per_message: u32,
    /// Largest reply text (in bytes of Markdown) one message holds before the reply
    /// continues in a new message.
    pub max_message_bytes: usize,
    /// Largest whole reply, in bytes of Markdown: past it the reply is cut with a line
    /// saying so, and the rest of the agent's answer is dropped, not kept in memory.
    pub max_reply_bytes: usize,
    /// Seconds the end of a turn keeps retrying its final edits while the homeserver
    /// fails; past it, what is left waits in the outbox and is delivered once the
    /// homeserver is back, and the next prompt runs meanwhile.
    pub outage_patience_secs: u64,
}

impl Default for StreamingConfig {
    fn default() -> Self {
        Self {
            edit_interval_ms: 1000,
            max_edits_per_message: 120,
            max_message_bytes: 12_000,
            max_reply_bytes: 1_000_000,
            outage_patience_secs: 300,
        }
    }
}

impl StreamingConfig {
    /// The edit interval as a [`Duration`].
    pub fn edit_interval(&self) -> Duration {
        Duration::from_millis(self.edit_interval_ms)
    }
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

/// One agent: the process to run and the Matrix account it speaks through.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AgentConfig {
    /// Short stable identifier (letters, digits, `-`, `_`), used in the store and in logs.
    pub id: String,
    /// Name shown in rooms; set as the Matrix display name.
    pub display_name: String,
    /// Program to run (a path, or a name looked up in `PATH`).
    pub command: String,
    /// Arguments for the program.
    #[serde(default)]
    pub args: Vec<String>,
    /// Environment given to the agent. Apart from these, the agent only gets `PATH` and `HOME`
    /// and the variables named in `inherit_env`.
    #[serde(default)]
    pub env: BTreeMap<String, Secret>,
    /// Names of gateway environment variables passed through to the agent unchanged.
    #[serde(default)]
    pub inherit_env: Vec<String>,
    /// The agent's working folder: the `cwd` of its process and of every ACP session.
    pub workspace: PathBuf,
    /// The agent's known deviations from canonical ACP, by dialect name (`acp`, `mm`,
    /// `claude-code`, `codex`, `gemini`). Unset: recognised from the agent's ID or the name
    /// it gives at `initialize`, else canonical ACP.
    pub dialect: Option<String>,
    /// The agent's Matrix account.
    pub matrix: AgentMatrixConfig,
}

/// An agent's Matrix account.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AgentMatrixConfig {
    /// Full Matrix user ID, e.g. `@claude:example.org`.
    pub user_id: String,
    /// Password given inline (prefer `password_env` or `password_file`).
    pub password: Option<Secret>,
    /// Name of an environment variable holding the password.
    pub password_env: Option<String>,
    /// File whose content (trimmed) is the password.
    pub password_file: Option<PathBuf>,
}

pub use crate::model::Secret;

impl AgentMatrixConfig {
    /// Reads the password from wherever the config says it is.
    pub fn password(&self) -> Result<Secret, String> {
        if let Some(p) = &self.password {
            return Ok(p.clone());
        }
        if let Some(var) = &self.password_env {
            return std::env::var(var)
                .map(Secret::new)
                .map_err(|_| format!("environment variable {var} is not set"));
        }
        if let Some(file) = &self.password_file {
            return std::fs::read_to_string(file)
                .map(|s| Secret::new(s.trim()))
                .map_err(|e| format!("cannot read {}: {e}", file.display()));
        }
        Err("no password: set one of password, password_env, password_file".into())
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
        let mut config: Config = toml::from_str(text).map_err(|e| ConfigError::Parse {
            path: path.to_owned(),
            message: e.to_string(),
        })?;
        let base = path.parent().unwrap_or(Path::new("."));
        config.resolve_relative(base);
        let problems = config.problems();
        if problems.is_empty() {
            Ok(config)
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
        for agent in &mut self.agents {
            fix(&mut agent.workspace);
            if let Some(f) = &mut agent.matrix.password_file {
                fix(f);
            }
        }
    }

    /// Every problem in the config; empty when it is usable.
    pub fn problems(&self) -> Vec<Problem> {
        let mut out = Vec::new();
        let mut bad = |key: String, problem: String| out.push(Problem { key, problem });

        let hs = self.matrix.homeserver.trim();
        if !(hs.starts_with("http://") || hs.starts_with("https://")) {
            bad(
                "matrix.homeserver".into(),
                format!("`{hs}` is not an http:// or https:// URL"),
            );
        }
        if self.access.allowed_users.is_empty() {
            bad(
                "access.allowed_users".into(),
                "is empty: nobody could use the agents".into(),
            );
        }
        for (i, pattern) in self.access.allowed_users.iter().enumerate() {
            if !pattern.starts_with('@') || !pattern.contains(':') {
                bad(
                    format!("access.allowed_users[{i}]"),
                    format!("`{pattern}` is not a user ID or pattern like `@*:example.org`"),
                );
            }
        }
        for (i, pattern) in self.access.approvers.iter().flatten().enumerate() {
            if !pattern.starts_with('@') || !pattern.contains(':') {
                bad(
                    format!("access.approvers[{i}]"),
                    format!("`{pattern}` is not a user ID or pattern like `@*:example.org`"),
                );
            }
        }
        if self.permissions.timeout_secs < 5 {
            bad(
                "permissions.timeout_secs".into(),
                "must be at least 5 (people need time to answer)".into(),
            );
        }
        for (key, value) in [
            ("timeouts.initialize_secs", self.timeouts.initialize_secs),
            ("timeouts.new_session_secs", self.timeouts.new_session_secs),
        ] {
            if value == 0 {
                bad(key.into(), "must be at least 1".into());
            }
        }
        if self.rooms.handoff_max_hops == 0 {
            bad(
                "rooms.handoff_max_hops".into(),
                "must be at least 1 (turn hand-offs off with `handoff = false`)".into(),
            );
        }
        if self.permissions.propose_stop_after == 0 {
            bad(
                "permissions.propose_stop_after".into(),
                "must be at least 1".into(),
            );
        }
        if self.streaming.edit_interval_ms < 100 {
            bad(
                "streaming.edit_interval_ms".into(),
                "must be at least 100".into(),
            );
        }
        if self.streaming.max_edits_per_message == 0 {
            bad(
                "streaming.max_edits_per_message".into(),
                "must be at least 1".into(),
            );
        }
        if !(1_000..=30_000).contains(&self.streaming.max_message_bytes) {
            bad(
                "streaming.max_message_bytes".into(),
                "must be between 1000 and 30000 (a Matrix event holds at most 64 KiB)".into(),
            );
        }
        if self.streaming.max_reply_bytes < self.streaming.max_message_bytes {
            bad(
                "streaming.max_reply_bytes".into(),
                "must be at least streaming.max_message_bytes".into(),
            );
        }
        if self.streaming.outage_patience_secs == 0 {
            bad(
                "streaming.outage_patience_secs".into(),
                "must be at least 1".into(),
            );
        }
        if !(1..=1_000).contains(&self.continuity.sync_timeline_limit) {
            bad(
                "continuity.sync_timeline_limit".into(),
                "must be between 1 and 1000".into(),
            );
        }
        if self.continuity.catch_up_max_events == 0 {
            bad(
                "continuity.catch_up_max_events".into(),
                "must be at least 1".into(),
            );
        }
        if self.continuity.catch_up_max_hours == 0 {
            bad(
                "continuity.catch_up_max_hours".into(),
                "must be at least 1".into(),
            );
        }
        let days = self.retention.handled_days;
        if days > 0 && days * 24 <= self.continuity.catch_up_max_hours {
            bad(
                "retention.handled_days".into(),
                format!(
                    "must be longer than the catch-up window ({} hours), or a message could be \
                     answered twice",
                    self.continuity.catch_up_max_hours
                ),
            );
        }
        if self.commands.prefix.trim().is_empty() || self.commands.prefix.contains(' ') {
            bad(
                "commands.prefix".into(),
                "must be non-empty and without spaces".into(),
            );
        }
        if self.agents.is_empty() {
            bad("agents".into(), "no agent is configured".into());
        }
        let mut ids = std::collections::HashSet::new();
        let mut users = std::collections::HashSet::new();
        for (i, a) in self.agents.iter().enumerate() {
            let k = |field: &str| format!("agents[{i}].{field}");
            if a.id.is_empty()
                || !a
                    .id
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
            {
                bad(
                    k("id"),
                    format!("`{}` must be letters, digits, - or _", a.id),
                );
            } else if !ids.insert(a.id.clone()) {
                bad(k("id"), format!("`{}` is used by another agent", a.id));
            }
            if a.display_name.trim().is_empty() {
                bad(k("display_name"), "is empty".into());
            }
            if a.command.trim().is_empty() {
                bad(k("command"), "is empty".into());
            }
            if !a.workspace.is_dir() {
                bad(
                    k("workspace"),
                    format!("{} is not an existing folder", a.workspace.display()),
                );
            }
            if let Some(name) = &a.dialect
                && crate::acp::dialect::named(name).is_none()
            {
                let known: Vec<&str> = crate::acp::dialect::ALL.iter().map(|d| d.name).collect();
                bad(
                    k("dialect"),
                    format!("`{name}` is not a known dialect ({})", known.join(", ")),
                );
            }
            for name in a.env.keys().chain(a.inherit_env.iter()) {
                if name.is_empty() || name.contains('=') {
                    bad(k("env"), format!("`{name}` is not a variable name"));
                }
            }
            let uid = &a.matrix.user_id;
            if !uid.starts_with('@') || !uid.contains(':') {
                bad(
                    k("matrix.user_id"),
                    format!("`{uid}` is not a Matrix user ID like `@name:example.org`"),
                );
            } else if !users.insert(uid.clone()) {
                bad(
                    k("matrix.user_id"),
                    format!("`{uid}` is used by another agent"),
                );
            }
            let sources = [
                a.matrix.password.is_some(),
                a.matrix.password_env.is_some(),
                a.matrix.password_file.is_some(),
            ]
            .iter()
            .filter(|s| **s)
            .count();
            if sources != 1 {
                bad(
                    k("matrix"),
                    "give exactly one of password, password_env, password_file".into(),
                );
            } else if let Err(e) = a.matrix.password() {
                bad(k("matrix"), e);
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write_config(dir: &Path, body: &str) -> PathBuf {
        let path = dir.join("sidekicks.toml");
        std::fs::write(&path, body).unwrap();
        path
    }

    fn valid(ws: &Path) -> String {
        format!(
            r#"
state_dir = "state"
[matrix]
homeserver = "http://127.0.0.1:8008"
[access]
allowed_users = ["@alice:example.org", "@*:team.example.org"]
[[agents]]
id = "demo"
display_name = "Demo"
command = "sidekicks"
args = ["demo-agent"]
workspace = "{}"
[agents.matrix]
user_id = "@demo:example.org"
password = "secret"
"#,
            ws.display()
        )
    }

    /// A temporary folder, removed when the returned guard is dropped.
    fn tmp() -> tempfile::TempDir {
        tempfile::Builder::new()
            .prefix("sidekicks-config-test-")
            .tempdir()
            .unwrap()
    }

    #[test]
    fn a_valid_file_loads_with_defaults_and_resolved_paths() {
        let tmp = tmp();
        let dir = tmp.path();
        let cfg = Config::load(&write_config(dir, &valid(dir))).unwrap();
        assert_eq!(cfg.state_dir, dir.join("state"));
        assert_eq!(cfg.streaming.edit_interval_ms, 1000);
        assert_eq!(cfg.commands.prefix, "!");
        assert_eq!(cfg.pool.max_running, 0, "no limit unless configured");
        assert!(!cfg.rooms.handoff);
        assert_eq!(cfg.agents[0].matrix.password().unwrap().expose(), "secret");
        // Handled markers outlive the catch-up window by a day; transcripts stay.
        assert_eq!(
            cfg.retention.handled(cfg.continuity.catch_up_max_hours),
            Duration::from_secs(48 * 3600)
        );
        assert_eq!(cfg.retention.transcript(), None);
    }

    #[test]
    fn secrets_do_not_show_in_debug_output() {
        let tmp = tmp();
        let dir = tmp.path();
        let text = valid(dir).replace(
            "workspace =",
            "env = { API_KEY = \"sk-hunter2\" }\nworkspace =",
        );
        let cfg = Config::from_toml(&text, &dir.join("c.toml")).unwrap();
        let shown = format!("{cfg:?}");
        assert!(!shown.contains("hunter2"), "{shown}");
        assert!(!shown.contains("\"secret\""), "{shown}");
        assert_eq!(cfg.agents[0].env["API_KEY"].expose(), "sk-hunter2");
    }

    #[test]
    fn problems_name_their_keys() {
        let tmp = tmp();
        let dir = tmp.path();
        let cases: &[(&str, &str, &str)] = &[
            ("http://127.0.0.1:8008", "ftp://x", "matrix.homeserver"),
            (
                "\"@alice:example.org\"",
                "\"alice\"",
                "access.allowed_users[0]",
            ),
            (
                "user_id = \"@demo:example.org\"",
                "user_id = \"demo\"",
                "agents[0].matrix.user_id",
            ),
            (
                "password = \"secret\"",
                "password_env = \"SIDEKICKS_SURELY_UNSET_VAR\"",
                "agents[0].matrix",
            ),
            ("id = \"demo\"", "id = \"de mo\"", "agents[0].id"),
            (
                "id = \"demo\"",
                "id = \"demo\"\ndialect = \"klingon\"",
                "agents[0].dialect",
            ),
            (
                "[matrix]",
                "[timeouts]\ninitialize_secs = 0\n[matrix]",
                "timeouts.initialize_secs",
            ),
            (
                "[matrix]",
                "[rooms]\nhandoff_max_hops = 0\n[matrix]",
                "rooms.handoff_max_hops",
            ),
            (
                "[matrix]",
                "[continuity]\nsync_timeline_limit = 0\n[matrix]",
                "continuity.sync_timeline_limit",
            ),
            (
                "[matrix]",
                "[continuity]\ncatch_up_max_hours = 0\n[matrix]",
                "continuity.catch_up_max_hours",
            ),
            (
                "[matrix]",
                "[continuity]\ncatch_up_max_hours = 48\n[retention]\nhandled_days = 2\n[matrix]",
                "retention.handled_days",
            ),
            (
                "[matrix]",
                "[streaming]\nmax_reply_bytes = 500\n[matrix]",
                "streaming.max_reply_bytes",
            ),
        ];
        for (from, to, key) in cases {
            let text = valid(dir).replacen(from, to, 1);
            let err = Config::from_toml(&text, &dir.join("c.toml")).unwrap_err();
            match err {
                ConfigError::Invalid { problems, .. } => {
                    assert!(
                        problems.iter().any(|p| p.key == *key),
                        "expected a problem at {key}, got {problems:?}"
                    );
                }
                other => panic!("expected Invalid for {key}, got {other}"),
            }
        }
    }

    #[test]
    fn a_missing_workspace_is_reported() {
        let tmp = tmp();
        let dir = tmp.path();
        let text = valid(&dir.join("nope"));
        let err = Config::from_toml(&text, &dir.join("c.toml")).unwrap_err();
        assert!(err.to_string().contains("agents[0].workspace"), "{err}");
    }

    #[test]
    fn unknown_keys_and_wrong_types_are_parse_errors() {
        let tmp = tmp();
        let dir = tmp.path();
        let text = valid(dir).replace("[access]", "[access]\nallowed_userz = []");
        let err = Config::from_toml(&text, &dir.join("c.toml")).unwrap_err();
        assert!(err.to_string().contains("allowed_userz"), "{err}");
        let text = valid(dir).replace("args = [\"demo-agent\"]", "args = 3");
        assert!(matches!(
            Config::from_toml(&text, &dir.join("c.toml")),
            Err(ConfigError::Parse { .. })
        ));
    }

    #[test]
    fn duplicate_agent_ids_are_refused() {
        let tmp = tmp();
        let dir = tmp.path();
        let one = valid(dir);
        let agent = &one[one.find("[[agents]]").unwrap()..];
        let text = format!("{one}\n{}", agent.replace("@demo:", "@demo2:"));
        let err = Config::from_toml(&text, &dir.join("c.toml")).unwrap_err();
        assert!(
            err.to_string().contains("agents[1].id: `demo` is used"),
            "{err}"
        );
    }
}
