//! What the core knows of an agent: our own event and command types, independent of the ACP
//! SDK. `crate::acp` translates the protocol into these.

use std::path::Path;

use async_trait::async_trait;
use tokio::sync::{mpsc, oneshot};

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
}

/// One tool call's state as the agent reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ToolStatus {
    /// Announced, not started (often waiting for permission).
    Pending,
    /// Running.
    InProgress,
    /// Finished successfully.
    Completed,
    /// Finished with an error.
    Failed,
}

/// One option of a permission request, as offered by the agent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PermissionOption {
    /// The agent's own identifier, sent back verbatim when chosen.
    pub id: String,
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

/// How a permission request was answered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PermissionAnswer {
    /// One of the offered options, by its id.
    Selected(String),
    /// The turn was cancelled while the request was open.
    Cancelled,
}

/// A permission request from the agent, with the channel to answer it on.
#[derive(Debug)]
pub struct PermissionRequest {
    /// The tool call it concerns.
    pub tool_call_id: String,
    /// The tool call's human title, when the agent gave one.
    pub title: Option<String>,
    /// The options the agent offers.
    pub options: Vec<PermissionOption>,
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
    /// A tool call was announced.
    ToolCall {
        /// The agent's identifier for the call.
        id: String,
        /// Human title, e.g. `bash: ls`.
        title: String,
        /// Its status at announcement.
        status: ToolStatus,
    },
    /// A tool call changed.
    ToolCallUpdate {
        /// Which call.
        id: String,
        /// New status, if it changed.
        status: Option<ToolStatus>,
        /// New title, if it changed.
        title: Option<String>,
    },
    /// The agent's plan, as (entry, done) pairs.
    Plan(Vec<(String, bool)>),
    /// Context window usage: tokens used and window size (0 = unknown yet).
    Usage {
        /// Tokens in the context.
        used: u64,
        /// Size of the context window, 0 when not known yet.
        size: u64,
    },
    /// The slash commands the agent offers, with their descriptions.
    Commands(Vec<(String, String)>),
    /// The agent asks whether it may run a tool.
    Permission(PermissionRequest),
    /// An update kind this gateway does not handle; kept only for the log.
    Other(String),
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
    /// Prompt content it accepts besides text (image, audio, embedded context).
    pub prompt_capabilities: Vec<String>,
    /// Names of the authentication methods it offers.
    pub auth_methods: Vec<String>,
}

/// A session just created by `session/new`.
#[derive(Debug)]
pub struct NewSession {
    /// The agent's session identifier.
    pub id: String,
    /// The modes it offers (id, name) and the current one.
    pub modes: Vec<(String, String)>,
    /// The current mode, if the agent has modes.
    pub current_mode: Option<String>,
    /// Every update the agent sends for this session, in order.
    pub events: mpsc::UnboundedReceiver<AgentEvent>,
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
    /// The agent broke the protocol or could not be started.
    #[error("{0}")]
    Failed(String),
}

/// One running agent process, as the core sees it. Implemented by `crate::acp::AcpAgent`
/// and by a fake in tests.
#[async_trait]
pub trait AgentPort: Send + Sync {
    /// Opens a new session whose working folder is `cwd`.
    async fn new_session(&self, cwd: &Path) -> Result<NewSession, AgentError>;
    /// Sends a prompt and waits for the turn to end. Updates arrive on the session's
    /// event receiver, all of them before this returns.
    async fn prompt(&self, session_id: &str, text: String) -> Result<StopReason, AgentError>;
    /// Asks the agent to stop the running turn (`session/cancel`).
    async fn cancel(&self, session_id: &str) -> Result<(), AgentError>;
    /// The last lines the agent wrote to stderr, for diagnostics.
    fn stderr_tail(&self) -> String;
}
