//! The work an [`AcpAgent`](super::AcpAgent) hands the task that owns the SDK connection:
//! one variant per request it makes of the agent, each with where its answer goes, and how
//! that task sends each (`Request::send`, never waiting for an answer itself); and the
//! `initialize` request that opens the connection.

use std::future::Future;
use std::path::PathBuf;

use agent_client_protocol::schema::ProtocolVersion;
use agent_client_protocol::v1::ConnectionTo;
use agent_client_protocol::v1::schema::{
    AuthenticateRequest, CancelNotification, ClientCapabilities, ClientSessionCapabilities,
    CloseSessionRequest, CompactionCapabilities, ContentBlock, ElicitationCapabilities,
    ElicitationFormCapabilities, ElicitationUrlCapabilities, FileSystemCapabilities,
    ForkSessionRequest, Implementation, InitializeRequest, ListSessionsRequest,
    ListSessionsResponse, LoadSessionRequest, McpServer, NewSessionRequest, NewSessionResponse,
    PromptRequest, PromptResponse, ResumeSessionRequest, SessionConfigOption,
    SessionConfigOptionValue, SetSessionConfigOptionRequest, SetSessionModeRequest,
};
use agent_client_protocol::{Agent, Error, UntypedMessage};

/// The method that steers a message into a running turn (the contract of Claude's
/// adapter, `@agentclientprotocol/claude-agent-acp`).
pub(super) const STEER_METHOD: &str = "_session/steering";
use tokio::sync::oneshot;

use super::events;
use crate::model::agent::{Reopen, SessionTools};
use crate::model::ids::AgentId;

/// Work for the task that owns the SDK connection.
pub(super) enum Request {
    /// `session/new` with this working folder.
    NewSession {
        /// The session's `cwd`.
        cwd: PathBuf,
        /// The gateway's room tools for it.
        tools: Option<SessionTools>,
        /// Where the answer goes.
        reply: oneshot::Sender<Result<NewSessionResponse, agent_client_protocol::Error>>,
    },
    /// `session/load` or `session/resume` of an earlier session.
    Reopen {
        /// Which of the two.
        how: Reopen,
        /// The session to get back.
        session: String,
        /// The session's `cwd`.
        cwd: PathBuf,
        /// The gateway's room tools for it.
        tools: Option<SessionTools>,
        /// Where the answer goes (the new-session shape: only the settings matter).
        reply: oneshot::Sender<Result<NewSessionResponse, agent_client_protocol::Error>>,
    },
    /// `session/fork` of an earlier session: a new session that starts as its copy.
    Fork {
        /// The session to copy.
        session: String,
        /// The new session's `cwd`.
        cwd: PathBuf,
        /// The gateway's room tools for it.
        tools: Option<SessionTools>,
        /// Where the answer goes (the new-session shape: the new ID and its settings).
        reply: oneshot::Sender<Result<NewSessionResponse, agent_client_protocol::Error>>,
    },
    /// `session/prompt`.
    Prompt {
        /// The session.
        session: String,
        /// The prompt's content blocks.
        blocks: Vec<ContentBlock>,
        /// Where the answer goes.
        reply: oneshot::Sender<Result<PromptResponse, agent_client_protocol::Error>>,
    },
    /// `session/set_mode`.
    SetMode {
        /// The session.
        session: String,
        /// The mode to switch to.
        mode: String,
        /// Where the answer goes.
        reply: oneshot::Sender<Result<(), agent_client_protocol::Error>>,
    },
    /// `session/set_config_option`.
    SetOption {
        /// The session.
        session: String,
        /// The option to change.
        option: String,
        /// Its new value.
        value: SessionConfigOptionValue,
        /// Where the answer goes: every option as the agent now has them.
        reply: oneshot::Sender<Result<Vec<SessionConfigOption>, agent_client_protocol::Error>>,
    },
    /// `session/list`, one page.
    List {
        /// The working folder the sessions must have.
        cwd: PathBuf,
        /// Where the previous page ended, if anywhere.
        cursor: Option<String>,
        /// Where the answer goes.
        reply: oneshot::Sender<Result<ListSessionsResponse, agent_client_protocol::Error>>,
    },
    /// `authenticate`.
    Authenticate {
        /// The sign-in method's ID.
        method: String,
        /// Where the answer goes.
        reply: oneshot::Sender<Result<(), agent_client_protocol::Error>>,
    },
    /// `session/close`.
    Close {
        /// The session to free.
        session: String,
        /// Where the answer goes.
        reply: oneshot::Sender<Result<(), agent_client_protocol::Error>>,
    },
    /// A method of an extension the agent offers (`_session/steering`,
    /// `_session/async_task/stop`), with its params as they go on the wire.
    Extension {
        /// The method.
        method: &'static str,
        /// Its params.
        params: serde_json::Value,
        /// Where the answer goes, as the agent gave it.
        reply: oneshot::Sender<Result<serde_json::Value, agent_client_protocol::Error>>,
    },
    /// `session/cancel` (a notification: no answer).
    Cancel {
        /// The session whose turn to stop.
        session: String,
    },
}

/// The MCP servers a new or reopened session is offered, and what decides which.
pub(super) struct McpOffer<'a> {
    /// The configured servers, as the agent takes them.
    pub(super) servers: Vec<McpServer>,
    /// Whether the agent takes HTTP servers.
    pub(super) http: bool,
    /// How its sessions reach the room tools.
    pub(super) route: events::ToolsRoute,
    /// The agent, for the log.
    pub(super) agent_id: &'a AgentId,
}

impl McpOffer<'_> {
    /// The servers for one session, with the room tools `tools` opened to it, if any.
    fn with(&self, tools: Option<SessionTools>) -> Vec<McpServer> {
        events::with_tools(&self.servers, tools, self.http, &self.route, self.agent_id)
    }
}

impl Request {
    /// Extension method `method` with `params`, and where its answer will come.
    pub(super) fn extension(
        method: &'static str,
        params: serde_json::Value,
    ) -> (Self, oneshot::Receiver<Result<serde_json::Value, Error>>) {
        let (reply, rx) = oneshot::channel();
        let request = Request::Extension {
            method,
            params,
            reply,
        };
        (request, rx)
    }

    /// Sends this request to the agent over `cx`, offering new and reopened sessions
    /// `offer`'s MCP servers. Each answer is awaited in a task of its own, so the
    /// connection's loop never waits for one.
    pub(super) fn send(self, cx: &ConnectionTo<Agent>, offer: &McpOffer) {
        let cx = cx.clone();
        match self {
            Request::NewSession { cwd, tools, reply } => {
                answer(reply, new_session(cx, cwd, offer.with(tools)))
            }
            Request::Reopen {
                how,
                session,
                cwd,
                tools,
                reply,
            } => answer(reply, reopen(cx, how, session, cwd, offer.with(tools))),
            Request::Fork {
                session,
                cwd,
                tools,
                reply,
            } => answer(reply, fork(cx, session, cwd, offer.with(tools))),
            Request::Prompt {
                session,
                blocks,
                reply,
            } => {
                let request = PromptRequest::new(session, blocks);
                answer(
                    reply,
                    async move { cx.send_request(request).block_task().await },
                )
            }
            Request::SetMode {
                session,
                mode,
                reply,
            } => {
                let request = SetSessionModeRequest::new(session, mode);
                answer(reply, async move {
                    cx.send_request(request).block_task().await.map(|_| ())
                })
            }
            Request::SetOption {
                session,
                option,
                value,
                reply,
            } => {
                let request = SetSessionConfigOptionRequest::new(session, option, value);
                answer(reply, async move {
                    let response = cx.send_request(request).block_task().await;
                    response.map(|r| r.config_options)
                })
            }
            Request::List { cwd, cursor, reply } => {
                let request = ListSessionsRequest::new().cwd(cwd).cursor(cursor);
                answer(
                    reply,
                    async move { cx.send_request(request).block_task().await },
                )
            }
            Request::Authenticate { method, reply } => {
                let request = AuthenticateRequest::new(method);
                answer(reply, async move {
                    cx.send_request(request).block_task().await.map(|_| ())
                })
            }
            Request::Close { session, reply } => {
                let request = CloseSessionRequest::new(session);
                answer(reply, async move {
                    cx.send_request(request).block_task().await.map(|_| ())
                })
            }
            Request::Extension {
                method,
                params,
                reply,
            } => answer(reply, extension(cx, method, params)),
            Request::Cancel { session } => cancel(&cx, session, offer.agent_id),
        }
    }
}

/// Awaits `answered` in a task of its own and sends what it gives to `reply` (whose asker
/// may have given up: then it is dropped).
fn answer<T: Send + 'static>(
    reply: oneshot::Sender<Result<T, Error>>,
    answered: impl Future<Output = Result<T, Error>> + Send + 'static,
) {
    tokio::spawn(async move {
        let _ = reply.send(answered.await);
    });
}

/// `session/cancel` of `session`'s turn (a notification: a failure is only logged).
fn cancel(cx: &ConnectionTo<Agent>, session: String, agent: &AgentId) {
    if let Err(e) = cx.send_notification(CancelNotification::new(session)) {
        tracing::warn!(agent = %agent, error = %e, "could not send session/cancel");
    }
}

/// The params of `_session/steering` of `blocks` into `session`'s running turn, asking for
/// `promptRequired` (not a turn started by the agent) when none runs: the gateway owns
/// what happens to a message no turn took.
pub(super) fn steer_params(session: &str, blocks: Vec<ContentBlock>) -> serde_json::Value {
    serde_json::json!({
        "sessionId": session,
        "prompt": blocks,
        "_meta": {"steering": {"idleBehavior": "promptRequired"}},
    })
}

/// Extension method `method` with `params`, answered as the agent gave it.
async fn extension(
    cx: ConnectionTo<Agent>,
    method: &str,
    params: serde_json::Value,
) -> Result<serde_json::Value, Error> {
    let request = UntypedMessage::new(method, params)?;
    cx.send_request(request).block_task().await
}

/// `session/new` in `cwd`, offered `mcp`.
async fn new_session(
    cx: ConnectionTo<Agent>,
    cwd: PathBuf,
    mcp: Vec<McpServer>,
) -> Result<NewSessionResponse, Error> {
    let request = NewSessionRequest::new(cwd).mcp_servers(mcp);
    cx.send_request(request).block_task().await
}

/// `session/fork` of `session` into a new session in `cwd`, offered `mcp`, answered in the
/// new-session shape: the new session's ID and settings.
async fn fork(
    cx: ConnectionTo<Agent>,
    session: String,
    cwd: PathBuf,
    mcp: Vec<McpServer>,
) -> Result<NewSessionResponse, Error> {
    let request = ForkSessionRequest::new(session, cwd).mcp_servers(mcp);
    let response = cx.send_request(request).block_task().await?;
    Ok(NewSessionResponse::new(response.session_id)
        .modes(response.modes)
        .config_options(response.config_options))
}

/// `session/load` or `session/resume` (`how`) of `session`, answered in the new-session
/// shape: only its settings matter.
async fn reopen(
    cx: ConnectionTo<Agent>,
    how: Reopen,
    session: String,
    cwd: PathBuf,
    mcp: Vec<McpServer>,
) -> Result<NewSessionResponse, Error> {
    let id = session.clone();
    let (modes, options) = match how {
        Reopen::Load => {
            let request = LoadSessionRequest::new(session, cwd).mcp_servers(mcp);
            let response = cx.send_request(request).block_task().await?;
            (response.modes, response.config_options)
        }
        Reopen::Resume => {
            let request = ResumeSessionRequest::new(session, cwd).mcp_servers(mcp);
            let response = cx.send_request(request).block_task().await?;
            (response.modes, response.config_options)
        }
    };
    Ok(NewSessionResponse::new(id)
        .modes(modes)
        .config_options(options))
}

/// What `initialize` offers the agent beyond questions (forms and links, always).
#[derive(Debug, Clone, Copy)]
pub(super) struct Offer {
    /// Its sessions' files through the client (`fs/*`).
    pub files: bool,
    /// Commands run by the client (`terminal/*`).
    pub terminals: bool,
    /// That background tasks are shown and stopped (`tasks.rs`), where its dialect says
    /// the offer changes nothing else Sidekicks reads.
    pub background_tasks: bool,
}

impl Offer {
    /// What the agent `spec` runs is offered, with terminals when `terminals`.
    pub(super) fn to(spec: &super::process::ProcessSpec, terminals: bool) -> Self {
        let dialect = super::dialect::expected(
            spec.dialect.as_deref(),
            spec.agent_id.as_str(),
            &spec.command,
            &spec.args,
        );
        Self {
            files: spec.file_access,
            terminals,
            background_tasks: dialect.background_tasks,
        }
    }
}

/// `initialize`: who Sidekicks is and what it offers the agent.
pub(super) fn initialize_request(offer: Offer) -> InitializeRequest {
    let questions = ElicitationCapabilities::new()
        .form(ElicitationFormCapabilities::new())
        .url(ElicitationUrlCapabilities::new());
    let files = FileSystemCapabilities::new()
        .read_text_file(offer.files)
        .write_text_file(offer.files);
    // The room is told when the agent summarises its context (`compaction_update`).
    let session = ClientSessionCapabilities::new().compaction(CompactionCapabilities::new());
    let mut capabilities = ClientCapabilities::new()
        .fs(files)
        .terminal(offer.terminals)
        .elicitation(questions)
        .session(session);
    if offer.background_tasks {
        capabilities = capabilities.meta(super::tasks::capability_meta());
    }
    InitializeRequest::new(ProtocolVersion::V1)
        .client_capabilities(capabilities)
        .client_info(
            Implementation::new("sidekicks", env!("CARGO_PKG_VERSION"))
                .title("Sidekicks".to_string()),
        )
}
