//! What Sidekicks knows of an agent, as data: the updates of a turn, tool calls, plans,
//! permission requests, session settings, errors. Independent of the ACP SDK: `crate::acp`
//! translates the protocol into these, the core acts on them, `crate::render` words them.

use tokio::sync::oneshot;

use crate::model::ids::{PermissionOptionId, SessionId, ToolCallId};

/// Why a prompt turn ended, as the agent reported it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StopReason {
    /// The agent finished its answer.
    EndTurn,
    /// The model ran out of output tokens.
    MaxTokens,
    /// The agent hit its own limit of model requests in one turn.
    MaxTurnRequests,
    /// The model refused to answer.
    Refusal,
    /// The turn was cancelled (`session/cancel`).
    Cancelled,
    /// The agent ended its turn itself after a tool was refused (it said `cancelled`,
    /// though nobody asked it to stop).
    EndedAfterRefusal,
}

/// One tool call's state as the agent reports it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ToolStatus {
    /// Announced, not started (often waiting for permission).
    Pending,
    /// Running.
    InProgress,
    /// Finished successfully.
    Completed,
    /// Finished with an error.
    Failed,
    /// Stopped with its turn. Never sent by an agent: set by a dialect for calls an agent
    /// leaves open when a turn is cancelled.
    Cancelled,
}

/// What sort of work a tool call does; decides its icon and how its input is summarised.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ToolKind {
    /// Reads files or data.
    Read,
    /// Modifies files.
    Edit,
    /// Removes files.
    Delete,
    /// Moves or renames files.
    Move,
    /// Searches.
    Search,
    /// Runs a command.
    Execute,
    /// Internal reasoning.
    Think,
    /// Fetches from the network.
    Fetch,
    /// Changes the session mode.
    SwitchMode,
    /// Anything else.
    #[default]
    Other,
}

/// Something a tool call produced or will change, as the agent reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ToolContent {
    /// Text output (terminal output, a result, a message).
    Text(String),
    /// A change to one file.
    Diff {
        /// The file.
        path: String,
        /// Its text before, `None` for a new file.
        old: Option<String>,
        /// Its text after.
        new: String,
    },
}

/// The fields of a tool call. In an announcement all known fields are set; in an update
/// only those that changed; [`ToolCallFields::merge`] folds one into the other.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ToolCallFields {
    /// The agent's identifier for the call.
    pub id: ToolCallId,
    /// Human title, e.g. `bash: ls`.
    pub title: Option<String>,
    /// What sort of work it does.
    pub kind: Option<ToolKind>,
    /// Where it stands.
    pub status: Option<ToolStatus>,
    /// Files it touches, as `path` or `path:line`.
    pub locations: Option<Vec<String>>,
    /// What it produced or will change.
    pub content: Option<Vec<ToolContent>>,
    /// Its raw input (for example `{"command": "ls"}`), used to say what it will do.
    pub raw_input: Option<serde_json::Value>,
    /// Its raw output, shown when there is no other content.
    pub raw_output: Option<serde_json::Value>,
    /// What its command printed, as an agent reports it beside the protocol's fields (the
    /// `_meta.terminal_output` extension of Codex's and pi's adapters). The connection turns
    /// it into `raw_output` (the whole output so far) before the core sees the update.
    pub terminal_output: Option<TerminalOutput>,
}

/// A command's output reported beside a tool call's fields (`_meta.terminal_output_delta`,
/// `_meta.terminal_output`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TerminalOutput {
    /// More of it, to add to what came before.
    Append(String),
    /// All of it so far.
    Whole(String),
}

impl ToolCallFields {
    /// An update of call `id` that only says where it stands (set by the gateway, for
    /// calls an agent leaves as they should not stay).
    pub fn status_only(id: &ToolCallId, status: ToolStatus) -> Self {
        Self {
            id: id.clone(),
            status: Some(status),
            ..Self::default()
        }
    }

    /// Takes every field `update` sets; leaves the others as they were.
    pub fn merge(&mut self, update: ToolCallFields) {
        macro_rules! take {
            ($($field:ident),*) => {$(if update.$field.is_some() { self.$field = update.$field; })*};
        }
        take!(
            title, kind, status, locations, content, raw_input, raw_output
        );
    }
}

/// One step of the agent's plan.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PlanEntry {
    /// What the step is.
    pub text: String,
    /// Where it stands.
    pub status: PlanStatus,
}

/// Where a plan step stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PlanStatus {
    /// Not started.
    Pending,
    /// Being worked on.
    InProgress,
    /// Done.
    Completed,
}

/// Token counts the agent reports at the end of a turn (cumulative for the session, as the
/// protocol defines them).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TokenUsage {
    /// Input tokens.
    pub input: u64,
    /// Output tokens.
    pub output: u64,
    /// Reasoning tokens, when reported.
    pub thought: Option<u64>,
    /// Tokens read from the prompt cache, when reported.
    pub cached_read: Option<u64>,
    /// All tokens.
    pub total: u64,
}

/// How a prompt turn ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TurnEnd {
    /// Why it ended.
    pub reason: StopReason,
    /// Token counts, when the agent reports them.
    pub usage: Option<TokenUsage>,
}

impl From<StopReason> for TurnEnd {
    fn from(reason: StopReason) -> Self {
        Self {
            reason,
            usage: None,
        }
    }
}

/// One option of a permission request, as offered by the agent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PermissionOption {
    /// The agent's own identifier, sent back verbatim when chosen.
    pub id: PermissionOptionId,
    /// The label the agent gives it.
    pub name: String,
    /// What kind of choice it is.
    pub kind: PermissionKind,
}

/// The four kinds of permission option ACP defines.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PermissionKind {
    /// Allow this call only.
    AllowOnce,
    /// Allow this tool for the rest of the session.
    AllowAlways,
    /// Refuse this call only.
    RejectOnce,
    /// Refuse this tool for the rest of the session.
    RejectAlways,
}

impl PermissionKind {
    /// Whether choosing an option of this kind refuses the call: decided here once, for
    /// the poll's counting, the card's status and the agent's turn end alike.
    pub fn refuses(self) -> bool {
        matches!(self, Self::RejectOnce | Self::RejectAlways)
    }
}

/// How a permission request was answered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PermissionAnswer {
    /// One of the offered options, by its id.
    Selected(PermissionOptionId),
    /// The turn was cancelled while the request was open.
    Cancelled,
}

/// A permission request from the agent, with the channel to answer it on.
#[derive(Debug)]
pub struct PermissionRequest {
    /// The tool call it concerns: its ID and whatever details the agent put in the request
    /// (a request may come before, or without, the `tool_call` that announces them).
    pub tool: ToolCallFields,
    /// The options the agent offers.
    pub options: Vec<PermissionOption>,
    /// The agent said the call runs before it asked (OpenCode, Mistral Vibe): the call
    /// waits for the answer all the same, and runs again once allowed. The core shows it
    /// so; the adapter only reports what the agent said.
    pub resumes_when_allowed: bool,
    /// Where the answer goes; dropping it answers `cancelled`.
    pub reply: oneshot::Sender<PermissionAnswer>,
}

/// Something the agent reported about a session.
#[derive(Debug)]
pub enum AgentEvent {
    /// A piece of the answer text (Markdown).
    MessageChunk(String),
    /// A piece of the agent's reasoning; never part of the answer.
    ThoughtChunk(String),
    /// A file in the answer (a picture, a link to a file, a file's content): posted as a
    /// message of its own where it is in the workspace or carried whole.
    File(super::media::AnswerFile),
    /// A tool call was announced (every field the agent gave is set).
    ToolCall(ToolCallFields),
    /// A tool call changed (only the fields that changed are set).
    ToolCallUpdate(ToolCallFields),
    /// The agent's whole plan, replacing any earlier one.
    Plan(Vec<PlanEntry>),
    /// Context window usage: tokens used and window size (0 = unknown yet).
    Usage {
        /// Tokens in the context.
        used: u64,
        /// Size of the context window, 0 when not known yet.
        size: u64,
        /// What the session has cost so far, when the agent says.
        cost: Option<Cost>,
    },
    /// The session's title changed (`session_info_update`; `None`: it has none any more).
    Title(Option<String>),
    /// The slash commands the agent offers.
    Commands(Vec<SlashCommand>),
    /// The session's mode changed (the agent switched it, or confirmed a switch).
    ModeChanged(String),
    /// The session's config options, all of them, replacing the earlier list.
    Options(Vec<ConfigOption>),
    /// The agent asks whether it may run a tool.
    Permission(PermissionRequest),
    /// The agent asks the room a question (elicitation).
    Question(super::question::QuestionRequest),
    /// Background work the agent reports (Claude's adapter's async tasks): it may go on
    /// after the turn that started it.
    Task(TaskReport),
    /// The agent summarises its context to go on (`compaction_update`): the room is told
    /// once it is done, or has failed.
    Compaction(CompactionReport),
    /// A piece of a prompt the session replays (`user_message_chunk`: a reopened session
    /// retells its conversation); the room showed it already.
    UserMessageChunk(String),
    /// Updates of this session were dropped: the agent sent them faster than the room took
    /// them and its queue was full (`core::queues::SESSION_UPDATES`). What the room shows
    /// may be incomplete.
    Dropped {
        /// How many.
        count: u64,
    },
    /// An update that carries nothing Sidekicks uses (a `session_info_update` without a
    /// title, or a kind this version does not know): logged, never matched by its name.
    Unused {
        /// The update's kind (`sessionUpdate`), for the log.
        kind: String,
    },
}

/// What the agent says of one summary of its context (a compaction): each report of the
/// same ID updates it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CompactionReport {
    /// The agent's ID for it, unique within the session.
    pub id: String,
    /// Where it stands.
    pub state: CompactionState,
    /// What went wrong, when it failed and the agent says.
    pub error: Option<String>,
}

/// Where a compaction stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CompactionState {
    /// Started, not finished (or a state this version does not know).
    Running,
    /// The summary is made: the context holds it instead of the conversation so far.
    Done,
    /// It failed: the context is as it was.
    Failed,
    /// It was cancelled.
    Cancelled,
}

/// What the agent says of one background task: only what changed is set (a task is
/// announced with its name, then reports progress and its state).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TaskReport {
    /// The agent's ID for the task (what stopping it names).
    pub id: String,
    /// Its name, when announced.
    pub name: Option<String>,
    /// What it does or how far it got.
    pub description: Option<String>,
    /// Its state, when it changed.
    pub state: Option<TaskState>,
    /// How it ended, in the agent's words.
    pub summary: Option<String>,
    /// Whether it can be stopped (`_session/async_task/stop`), when announced.
    pub can_stop: Option<bool>,
}

/// Where a background task stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TaskState {
    /// It runs.
    Running,
    /// It ended well.
    Completed,
    /// It ended badly.
    Failed,
    /// It was stopped.
    Stopped,
}

impl TaskState {
    /// The state named `name` (`running`, `completed`, `failed`, `stopped`).
    pub fn from_name(name: &str) -> Option<Self> {
        Some(match name {
            "running" => Self::Running,
            "completed" => Self::Completed,
            "failed" => Self::Failed,
            "stopped" => Self::Stopped,
            _ => return None,
        })
    }

    /// Whether the task is over.
    pub fn is_over(self) -> bool {
        self != Self::Running
    }
}

/// An MCP server an agent's sessions get (`mcpServers` of `session/new`, `load`, `resume`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum McpServerSpec {
    /// One the agent starts itself, speaking over stdio (every agent takes these).
    Stdio {
        /// Its name, for the agent.
        name: String,
        /// The program.
        command: std::path::PathBuf,
        /// Its arguments.
        args: Vec<String>,
        /// Its environment (values are secrets: masked wherever the agent's words go).
        env: Vec<(String, crate::model::Secret)>,
    },
    /// One reached over HTTP, for agents that advertise HTTP MCP.
    Http {
        /// Its name, for the agent.
        name: String,
        /// Its URL.
        url: String,
        /// Headers sent with each request (values are secrets).
        headers: Vec<(String, crate::model::Secret)>,
    },
}

/// Where, inside a sandbox, the room tools' socket file is found (bound in from the state
/// folder) by an agent without network.
pub const ROOM_TOOLS_SOCKET: &str = "/run/sidekicks/room-tools.sock";

/// The gateway's own MCP server for one session (its room tools), both ways an agent can
/// reach it: the agent side gives HTTP to an agent that takes it, else stdio.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SessionTools {
    /// A command the agent starts, which passes the protocol on to the gateway.
    pub stdio: McpServerSpec,
    /// The same command, reaching the gateway through its socket file as an agent without
    /// network sees it (bound into its sandbox).
    pub local: McpServerSpec,
    /// The gateway's loopback HTTP endpoint, with the session's token in a header.
    pub http: McpServerSpec,
}

impl McpServerSpec {
    /// Its name.
    pub fn name(&self) -> &str {
        match self {
            McpServerSpec::Stdio { name, .. } | McpServerSpec::Http { name, .. } => name,
        }
    }
}

/// A way an agent offers to sign in (`authMethods` of its `initialize` answer).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AuthMethodInfo {
    /// Its ID, for `authenticate` (`!login ID`).
    pub id: String,
    /// Its name, for people.
    pub name: String,
    /// What the agent says about it (often which variable or command it needs).
    pub description: Option<String>,
    /// For a method run in a terminal: the command line a person runs on the host (the
    /// agent's own command with the method's arguments).
    pub terminal: Option<String>,
}

impl AgentError {
    /// Whether the agent refused because it is not signed in (`auth_required`, -32000).
    pub fn is_auth_required(&self) -> bool {
        matches!(self, AgentError::Rpc { code: -32000, .. })
    }
}

/// What a session has cost so far, as the agent reported it.
#[derive(Debug, Clone, PartialEq)]
pub struct Cost {
    /// The amount.
    pub amount: f64,
    /// Its currency (ISO 4217, such as `USD`).
    pub currency: String,
}

/// What an agent advertised when it was initialised.
#[derive(Debug, Clone, Default)]
pub struct AgentInfo {
    /// The ACP protocol version it answered with.
    pub protocol_version: u16,
    /// `agentInfo.name`, if given.
    pub name: Option<String>,
    /// `agentInfo.title`, if given.
    pub title: Option<String>,
    /// `agentInfo.version`, if given.
    pub version: Option<String>,
    /// Whether it can `session/load`.
    pub load_session: bool,
    /// Whether it can `session/resume` (get a session back without replaying it).
    pub resume_session: bool,
    /// Whether it can `session/close` (free a session it holds).
    pub close_session: bool,
    /// Whether it can `session/fork` (a new session that starts as a copy of another,
    /// for `!fork`).
    pub fork_session: bool,
    /// Whether it can `session/list` (its sessions, for `!sessions`).
    pub list_sessions: bool,
    /// Whether it takes MCP servers over HTTP (`mcpCapabilities.http`).
    pub mcp_http: bool,
    /// Prompt content it accepts besides text and links (image, audio, embedded context).
    pub prompt_capabilities: super::media::PromptSupport,
    /// Names of the authentication methods it offers.
    pub auth_methods: Vec<AuthMethodInfo>,
    /// Whether it takes a message into the turn that is running (`_session/steering`,
    /// advertised as `_meta.steering.supported`, as Claude's adapter does).
    pub steering: bool,
}

/// What became of a message steered into a running turn.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Steered {
    /// It joined the running turn, which answers it.
    Injected,
    /// The session had no turn running (it ended meanwhile): the message is a prompt of
    /// its own.
    NoTurn,
    /// The agent tried and could not (Codex's adapter answers `failed`): the message is a
    /// prompt of its own.
    Failed,
}

/// One of an agent's sessions, as `session/list` describes it (for `!sessions`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SessionListing {
    /// Its ID.
    pub id: SessionId,
    /// Its working folder.
    pub cwd: std::path::PathBuf,
    /// Its title, if the agent gave one.
    pub title: Option<String>,
    /// When it last changed (ISO 8601), if the agent said.
    pub updated_at: Option<String>,
}

/// How an agent can get back a session it created earlier (after a restart of the gateway
/// or of the agent), instead of a new session with the conversation re-injected.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reopen {
    /// `session/load`: the agent replays the conversation (not shown in the room again).
    Load,
    /// `session/resume`: the agent carries on without replaying anything.
    Resume,
}

impl Reopen {
    /// The way chosen for an agent advertising these capabilities: load first, as it is
    /// the stable protocol method; `None` when it can do neither.
    pub fn for_agent(info: &AgentInfo) -> Option<Self> {
        if info.load_session {
            Some(Self::Load)
        } else if info.resume_session {
            Some(Self::Resume)
        } else {
            None
        }
    }

    /// How a session reopened this way got its conversation back, as recorded in the store
    /// (`sessions.continuity`).
    pub fn continuity(self) -> &'static str {
        match self {
            Self::Load => "loaded",
            Self::Resume => "resumed",
        }
    }
}

/// A setting of a session that the agent lets people change (an ACP config option): the
/// model, a reasoning level, a mode…
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigOption {
    /// The agent's identifier, sent back to change it.
    pub id: String,
    /// Its label.
    pub name: String,
    /// What it is about (`model`, `mode`, `thought_level`, or the agent's own word), so
    /// `!model` finds the model choice whatever the agent calls it.
    pub category: Option<String>,
    /// Its kind and current value.
    pub value: ConfigValue,
}

/// The kind and current value of a [`ConfigOption`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ConfigValue {
    /// One of a list of values.
    Choice {
        /// The current value's identifier.
        current: String,
        /// The values offered: (identifier, label).
        choices: Vec<(String, String)>,
    },
    /// On or off.
    Toggle(bool),
}

/// A new value for a [`ConfigOption`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ConfigChoice {
    /// The identifier of one of the offered values.
    Value(String),
    /// On or off, for a toggle.
    Toggle(bool),
}

/// What people can change about a session: its modes and config options, as the agent
/// advertised them.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SessionSettings {
    /// The modes it offers (id, name).
    pub modes: Vec<(String, String)>,
    /// The current mode, if the agent has modes.
    pub current_mode: Option<String>,
    /// Its config options.
    pub options: Vec<ConfigOption>,
}

/// What an agent replayed of a session it loaded, counted for a one-line summary.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Replayed {
    /// People's messages.
    pub prompts: usize,
    /// The agent's answers.
    pub answers: usize,
    /// Tool calls.
    pub tool_calls: usize,
}

/// Failures talking to an agent.
#[derive(Debug, Clone, thiserror::Error)]
pub enum AgentError {
    /// The agent answered a request with a JSON-RPC error: a normal outcome of a turn.
    #[error("the agent answered with an error ({code}): {message}")]
    Rpc {
        /// JSON-RPC error code.
        code: i64,
        /// The agent's message.
        message: String,
    },
    /// The agent speaks a protocol version we do not.
    #[error("the agent speaks ACP protocol version {0}; Sidekicks speaks version 1")]
    UnsupportedVersion(u16),
    /// The agent process is gone.
    #[error("the agent process stopped ({status})")]
    Exited {
        /// Exit status as text (`exit code 3`, `signal 9`).
        status: String,
    },
    /// The agent did not answer in time.
    #[error("the agent did not answer {0} in time")]
    Timeout(&'static str),
    /// The agent aborted the turn for a reason its dialect explains in words for people.
    #[error("{0}")]
    TurnAborted(String),
    /// The agent broke the protocol (garbage on stdout) and Sidekicks stopped it.
    #[error("the agent broke the protocol: {0}")]
    Broken(String),
    /// The agent's program could not be started.
    #[error("cannot start `{command}`: {cause}")]
    Start {
        /// The program.
        command: String,
        /// Why, whole (the system's refusal).
        #[source]
        cause: super::errors::Cause,
    },
    /// The agent failed otherwise (in words for the room).
    #[error("{0}")]
    Failed(String),
    /// Its session is not used: it could not be put in a mode that asks before acting (in
    /// words for the room).
    #[error("{0}")]
    Unfenced(String),
}

impl AgentError {
    /// The agent's program `command` could not be started, because of `cause`.
    pub fn start(command: &str, cause: impl std::error::Error + Send + Sync + 'static) -> Self {
        Self::Start {
            command: command.to_owned(),
            cause: super::errors::Cause::new(cause),
        }
    }
}

/// Where an agent process stands, for `!agents` and the process pool.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ProcessState {
    /// It runs.
    Running {
        /// How long it has been running.
        uptime: std::time::Duration,
        /// The sessions it holds.
        sessions: usize,
    },
    /// Not running, by design: not started yet, or stopped to free its slot.
    Stopped,
    /// It ended on its own (crashed, or was stopped for breaking the protocol).
    Crashed {
        /// Its exit status as text.
        status: String,
    },
}

impl ProcessState {
    /// Whether the process runs (and so holds a slot of the pool).
    pub fn is_running(&self) -> bool {
        matches!(self, ProcessState::Running { .. })
    }
}

/// A slash command the agent offers (`/compact`), as it advertised it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SlashCommand {
    /// Its name, without the slash.
    pub name: String,
    /// What it does, in the agent's words.
    pub description: String,
}

impl SlashCommand {
    /// The command `name`, described as `description`.
    pub fn new(name: impl Into<String>, description: impl Into<String>) -> Self {
        Self {
            name: name.into(),
            description: description.into(),
        }
    }
}
