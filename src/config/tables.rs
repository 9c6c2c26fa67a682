//! The config's small tables, each with its defaults and its check: `[sandbox]`,
//! `[continuity]`, `[retention]`, `[timeouts]`, `[metrics]`, `[pool]`, `[rooms]`,
//! `[queue]`, `[media]`, `[display]` and `[commands]`. (The runtime settings the core reads
//! straight from their tables, `[streaming]`, `[permissions]` and `[schedules]`, are
//! declared and checked beside the code that uses them.)

use std::path::PathBuf;
use std::time::Duration;

use serde::Deserialize;

use super::problems::Problems;
use crate::model::Verbosity;

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

impl MetricsConfig {
    /// Checks `[metrics]`.
    pub(super) fn check(&self, problems: &mut Problems) {
        if let Some(listen) = &self.listen
            && listen.parse::<std::net::SocketAddr>().is_err()
        {
            problems.bad(
                "listen",
                format!("`{listen}` is not an address and port, such as 127.0.0.1:9464"),
            );
        }
    }
}

impl TimeoutsConfig {
    /// Checks `[timeouts]`.
    pub(super) fn check(&self, problems: &mut Problems) {
        problems.at_least("initialize_secs", self.initialize_secs, 1);
        problems.at_least("new_session_secs", self.new_session_secs, 1);
    }
}

impl MediaConfig {
    /// Checks `[media]`.
    pub(super) fn check(&self, problems: &mut Problems) {
        if self.max_file_mb == 0 {
            problems.bad(
                "max_file_mb",
                "must be at least 1 (files are never fetched beyond it)",
            );
        }
    }
}

impl RoomsConfig {
    /// Checks `[rooms]`.
    pub(super) fn check(&self, problems: &mut Problems) {
        if self.handoff_max_hops == 0 {
            problems.bad(
                "handoff_max_hops",
                "must be at least 1 (turn hand-offs off with `handoff = false`)",
            );
        }
    }
}

impl QueueConfig {
    /// Checks `[queue]`.
    pub(super) fn check(&self, problems: &mut Problems) {
        if self.max_waiting == 0 {
            problems.bad(
                "max_waiting",
                "must be at least 1 (0 would refuse every message sent during a turn)",
            );
        }
    }
}

impl ContinuityConfig {
    /// Checks `[continuity]`.
    pub(super) fn check(&self, problems: &mut Problems) {
        if !(1..=1_000).contains(&self.sync_timeline_limit) {
            problems.bad("sync_timeline_limit", "must be between 1 and 1000");
        }
        problems.at_least("catch_up_max_events", self.catch_up_max_events as u64, 1);
        problems.at_least("catch_up_max_hours", self.catch_up_max_hours, 1);
    }
}

impl RetentionConfig {
    /// Checks `[retention]` against the catch-up window it must outlast.
    pub(super) fn check(&self, continuity: &ContinuityConfig, problems: &mut Problems) {
        let days = self.handled_days;
        if days > 0 && days * 24 <= continuity.catch_up_max_hours {
            problems.bad(
                "handled_days",
                format!(
                    "must be longer than the catch-up window ({} hours), or a message could be \
                     answered twice",
                    continuity.catch_up_max_hours
                ),
            );
        }
    }
}

impl CommandsConfig {
    /// Checks `[commands]`.
    pub(super) fn check(&self, problems: &mut Problems) {
        if self.prefix.trim().is_empty() || self.prefix.contains(' ') {
            problems.bad("prefix", "must be non-empty and without spaces");
        }
    }
}
