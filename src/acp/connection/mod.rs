//! The ACP client connection to one agent process, built on the official SDK, exposed to
//! the core as [`AgentPort`], its sessions as [`AcpSession`]s.
//!
//! The SDK runs incoming messages through one sequential dispatch loop, so our handlers never
//! wait there: notifications are translated and pushed onto the session's queue, and a
//! permission request or a question (`client_question.rs`) is handed to the core with a
//! oneshot channel while a spawned task waits for the answer; file and terminal requests are
//! served by `client_fs.rs` and `client_terminal.rs`, off the loop where they wait. Requests
//! we send (`session/new`, `session/load`, `session/resume`, `session/prompt`,
//! `session/set_mode`, `session/set_config_option`) run in their own tasks, so a long prompt
//! never holds up a `session/cancel`. The agent's dialect is applied on the way
//! (`sessions/`), and what it writes to stdout is guarded (`transport.rs`).

use std::path::Path;

use crate::model::ids::AgentId;
use crate::workspace::folder::Folder;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use agent_client_protocol::schema::ProtocolVersion;
use agent_client_protocol::v1::ConnectionTo;
use agent_client_protocol::v1::schema::{AgentRequest, InitializeResponse};
use agent_client_protocol::{Agent, Client, UntypedMessage};
use async_trait::async_trait;
use tokio::sync::{mpsc, oneshot, watch};

mod session;

use super::client_requests::Served;
use super::client_terminal::Terminals;
use super::dialect::{self, Dialect};
use super::ending::{Ended, stop_when_broken};
use super::events;
use super::process::{AgentProcess, ProcessSpec, StderrTail};
use super::requests::{McpOffer, Offer, Request, initialize_request};
use super::sessions::Sessions;
use super::transport;
use crate::core::agent::{AgentPort, NewSession};
use crate::model::agent::{
    AgentError, AgentInfo, AuthMethodInfo, ProcessState, Reopen, SessionListing, SessionTools,
};
use crate::model::ids::SessionId;
use crate::model::media::PromptSupport;
use crate::model::modes::KnownModes;

/// A running agent speaking ACP over its stdio.
pub struct AcpAgent {
    /// The configured agent ID, for logs and errors.
    agent_id: AgentId,
    /// Work for the connection task.
    requests: mpsc::Sender<Request>,
    /// Where each session's updates go.
    sessions: Arc<Mutex<Sessions>>,
    /// The commands its sessions run through us.
    terminals: Arc<Terminals>,
    /// What the agent advertised at `initialize`.
    info: AgentInfo,
    /// The process, to stop it.
    process: tokio::sync::Mutex<AgentProcess>,
    /// The exit status once the process has ended.
    exit: watch::Receiver<Option<String>>,
    /// The last lines of its stderr.
    stderr: StderrTail,
    /// Why the agent was stopped for breaking the protocol, once it was.
    broken: watch::Receiver<Option<String>>,
    /// The dialect applied to it.
    dialect: Dialect,
    /// How long it may take to open, load or resume a session.
    session_timeout: Duration,
    /// When the process started, for its uptime.
    started: std::time::Instant,
    /// Set when it is being stopped on purpose: its sessions take no more prompts, even
    /// before its exit is seen.
    stopping: std::sync::atomic::AtomicBool,
    /// Itself, for the sessions it opens to hold (see [`super::session::AcpSession`]).
    me: std::sync::Weak<AcpAgent>,
}

impl AcpAgent {
    /// Starts the agent process, connects and runs `initialize`. Refuses an agent that
    /// answers with a protocol version other than 1.
    pub async fn start(spec: &ProcessSpec) -> Result<Arc<Self>, AgentError> {
        let spec = &spec.for_process();
        let spawned = super::on_host::spawn(spec).await?;
        let (exit, stderr) = (spawned.process.exit.clone(), spawned.process.stderr.clone());
        let sessions = Arc::new(Mutex::new(Sessions::default()));
        let terminals = Terminals::new(spec, sessions.clone());
        let (requests, requests_rx) = mpsc::channel(crate::core::queues::AGENT_REQUESTS);
        let (init_tx, init_rx) = oneshot::channel();

        let (broken_tx, broken) = watch::channel(None);
        let guard = transport::Guard::new(
            spec.agent_id.clone(),
            spec.secret_values(),
            broken_tx.clone(),
        );
        let transport = transport::lines(spawned.stdin, spawned.stdout, guard);
        // An agent that broke the protocol is stopped: its requests fail at once instead
        // of waiting for answers that will not come.
        stop_when_broken(spawned.process.killer(), broken.clone());
        let connection = run_connection(
            spec.clone(),
            transport,
            sessions.clone(),
            terminals.clone(),
            requests_rx,
            init_tx,
        );
        let ended = Ended {
            agent_id: spec.agent_id.clone(),
            exit: exit.clone(),
            terminals: terminals.clone(),
            broken: broken_tx,
        };
        tokio::spawn(async move { ended.after(connection.await) });

        let agent = Self {
            agent_id: spec.agent_id.clone(),
            requests,
            sessions,
            terminals,
            info: AgentInfo::default(),
            process: tokio::sync::Mutex::new(spawned.process),
            exit,
            stderr,
            broken,
            dialect: dialect::ACP,
            session_timeout: spec.session_timeout,
            started: std::time::Instant::now(),
            stopping: Default::default(),
            me: std::sync::Weak::new(),
        };
        agent.initialized(spec, init_rx).await
    }

    /// The agent, once it has answered `initialize` (`init`) in protocol version 1, with
    /// what it advertised and its dialect; stopped, with why, when it did not.
    async fn initialized(
        self,
        spec: &ProcessSpec,
        init: oneshot::Receiver<Result<InitializeResponse, agent_client_protocol::Error>>,
    ) -> Result<Arc<Self>, AgentError> {
        let agent = self;
        let response = match agent
            .wait("initialize", Some(spec.initialize_timeout), init)
            .await
        {
            Ok(response) => response,
            Err(e) => {
                agent.shutdown().await;
                return Err(agent.with_last_words(e));
            }
        };
        let info = sign_in_commands(events::agent_info(&response), &spec.command);
        if response.protocol_version != ProtocolVersion::V1 {
            agent.shutdown().await;
            return Err(AgentError::UnsupportedVersion(
                response.protocol_version.as_u16(),
            ));
        }
        let dialect = dialect::for_agent(
            spec.dialect.as_deref(),
            spec.agent_id.as_str(),
            info.name.as_deref(),
        );
        agent.sessions().set_dialect(dialect);
        let (name, version) = (info.name.as_deref(), info.version.as_deref());
        tracing::info!(agent = %spec.agent_id, name = name.unwrap_or("(unnamed)"), version = version.unwrap_or("(none)"), dialect = %dialect.name, "agent initialised");
        Ok(Arc::new_cyclic(|me| Self {
            info,
            dialect,
            me: me.clone(),
            ..agent
        }))
    }

    /// `error`, with the line of the agent's last stderr lines that says why when it is an
    /// exit ([`super::ending::why_it_stopped`]): an agent that dies before it answers
    /// usually said why there, above its runtime's stack and last words.
    fn with_last_words(&self, error: AgentError) -> AgentError {
        let AgentError::Exited { status } = error else {
            return error;
        };
        let tail = self.stderr.last(40);
        let status = match super::ending::why_it_stopped(&tail) {
            Some(line) => format!("{status}: {line}"),
            None => status,
        };
        AgentError::Exited { status }
    }

    /// The process's exit status, once it has ended.
    pub fn exit_status(&self) -> Option<String> {
        self.exit.borrow().clone()
    }

    /// What the agent advertised.
    pub fn info(&self) -> &AgentInfo {
        &self.info
    }

    /// The name of the dialect applied to the agent (`acp` when it needs none).
    pub fn dialect(&self) -> &'static str {
        self.dialect.name
    }

    /// Stops the agent process (SIGTERM, then SIGKILL after a grace period).
    pub async fn shutdown(&self) {
        (self.stopping).store(true, std::sync::atomic::Ordering::SeqCst);
        self.terminals.end_all();
        self.process.lock().await.stop(Duration::from_secs(3)).await;
    }

    /// Waits for a reply to a request, turning a dead process or a timeout into errors.
    async fn wait<T>(
        &self,
        what: &'static str,
        timeout: Option<Duration>,
        rx: oneshot::Receiver<Result<T, agent_client_protocol::Error>>,
    ) -> Result<T, AgentError> {
        let received = match timeout {
            Some(limit) => tokio::time::timeout(limit, rx)
                .await
                .map_err(|_| AgentError::Timeout(what))?,
            None => rx.await,
        };
        let result = match received {
            Err(_closed) => return Err(self.gone().await),
            Ok(result) => result,
        };
        match result {
            Ok(value) => Ok(value),
            Err(e) if self.exit.borrow().is_some() || is_transport_error(&e) => {
                Err(self.gone().await)
            }
            // The SDK refuses an answer in another protocol version before we see it; its
            // error names the version the agent spoke.
            Err(e)
                if let Some(version) = e
                    .data
                    .as_ref()
                    .and_then(|d| events::spoken_version(&d.to_string())) =>
            {
                Err(AgentError::UnsupportedVersion(version))
            }
            Err(e) => Err(AgentError::Rpc {
                code: i32::from(e.code) as i64,
                message: e.message,
            }),
        }
    }

    /// The error to report once the connection is gone: the exit status when the process
    /// ended (waiting briefly for it), else a protocol failure.
    async fn gone(&self) -> AgentError {
        if let Some(reason) = self.broken.borrow().clone() {
            return AgentError::Broken(reason);
        }
        let mut exit = self.exit.clone();
        let status = tokio::time::timeout(Duration::from_secs(2), exit.wait_for(|s| s.is_some()))
            .await
            .ok()
            .and_then(|s| s.ok().and_then(|s| s.clone()));
        match status {
            Some(status) => AgentError::Exited { status },
            None => AgentError::Failed(format!("the connection to agent {} broke", self.agent_id)),
        }
    }

    /// The session routing, locked (never held across an await).
    fn sessions(&self) -> std::sync::MutexGuard<'_, Sessions> {
        self.sessions.lock().expect("sessions poisoned")
    }

    /// Whether the process still takes prompts: not ended, nor being stopped.
    pub(super) fn running(&self) -> bool {
        !self.stopping.load(std::sync::atomic::Ordering::SeqCst) && self.exit_status().is_none()
    }

    /// Hands a request to the connection task (waiting while its queue is full:
    /// `core::queues::AGENT_REQUESTS`); fails with the exit status once it is gone.
    async fn send(&self, request: Request) -> Result<(), AgentError> {
        match self.requests.send(request).await {
            Ok(()) => Ok(()),
            Err(_) => Err(self.gone().await),
        }
    }

    /// Calls extension method `method` (`_session/steering`, `_session/async_task/stop`)
    /// with `params`; its answer as the agent gave it.
    async fn call_extension(
        &self,
        method: &'static str,
        params: serde_json::Value,
    ) -> Result<serde_json::Value, AgentError> {
        let (request, rx) = Request::extension(method, params);
        self.send(request).await?;
        self.wait(method, Some(self.session_timeout), rx).await
    }
}

fn is_transport_error(e: &agent_client_protocol::Error) -> bool {
    agent_client_protocol::is_connection_terminated(e)
        || agent_client_protocol::is_incoming_transport_closed(e)
}

#[async_trait]
impl AgentPort for AcpAgent {
    async fn new_session(
        &self,
        folder: &Arc<Folder>,
        tools: Option<&SessionTools>,
    ) -> Result<NewSession, AgentError> {
        let (reply, rx) = oneshot::channel();
        self.send(Request::NewSession {
            cwd: folder.path().to_owned(),
            tools: tools.cloned(),
            reply,
        })
        .await?;
        let response = self
            .wait("session/new", Some(self.session_timeout), rx)
            .await?;
        let id = SessionId::new(response.session_id.0.to_string());
        Ok(self.opened(id, folder, &response))
    }

    fn reopen_support(&self) -> Option<Reopen> {
        Reopen::for_agent(&self.info)
    }

    fn known_modes(&self) -> KnownModes {
        self.dialect.modes
    }

    fn prompt_support(&self) -> PromptSupport {
        self.info.prompt_capabilities
    }

    async fn reopen_session(
        &self,
        id: &SessionId,
        folder: &Arc<Folder>,
        tools: Option<&SessionTools>,
    ) -> Result<NewSession, AgentError> {
        let Some(how) = self.reopen_support() else {
            return Err(AgentError::Failed(format!(
                "agent {} advertises neither session/load nor session/resume",
                self.agent_id
            )));
        };
        self.sessions().unregister(id.as_str());
        let (reply, rx) = oneshot::channel();
        self.send(Request::Reopen {
            how,
            session: id.to_string(),
            cwd: folder.path().to_owned(),
            tools: tools.cloned(),
            reply,
        })
        .await?;
        let what = match how {
            Reopen::Load => "session/load",
            Reopen::Resume => "session/resume",
        };
        let response = self.wait(what, Some(self.session_timeout), rx).await?;
        // Every update of the replay came before the answer and is held: drop it.
        let replayed = self.sessions().drop_replay(id.as_str());
        let mut session = self.opened(id.clone(), folder, &response);
        session.replayed = replayed;
        Ok(session)
    }

    fn forks(&self) -> bool {
        self.info.fork_session
    }

    async fn fork_session(
        &self,
        source: &SessionId,
        folder: &Arc<Folder>,
        tools: Option<&SessionTools>,
    ) -> Result<NewSession, AgentError> {
        let (reply, rx) = oneshot::channel();
        self.send(Request::Fork {
            session: source.to_string(),
            cwd: folder.path().to_owned(),
            tools: tools.cloned(),
            reply,
        })
        .await?;
        let response = (self.wait("session/fork", Some(self.session_timeout), rx)).await?;
        let id = SessionId::new(response.session_id.0.to_string());
        Ok(self.opened(id, folder, &response))
    }

    async fn list_sessions(&self, cwd: &Path) -> Result<Vec<SessionListing>, AgentError> {
        if !self.info.list_sessions {
            return Err(AgentError::Failed(format!(
                "agent {} does not offer session/list",
                self.agent_id
            )));
        }
        let mut listed = Vec::new();
        let mut cursor = None;
        // A few pages are plenty for a chat message; an agent paging for ever stops here.
        for _ in 0..LIST_PAGES {
            let (reply, rx) = oneshot::channel();
            self.send(Request::List {
                cwd: cwd.to_owned(),
                cursor,
                reply,
            })
            .await?;
            let page = self
                .wait("session/list", Some(self.session_timeout), rx)
                .await?;
            listed.extend(page.sessions.into_iter().map(events::session_listing));
            cursor = page.next_cursor;
            if cursor.is_none() {
                break;
            }
        }
        // The agent filters by folder; what it lists elsewhere is not ours to show.
        listed.retain(|s: &SessionListing| s.cwd == cwd);
        Ok(listed)
    }

    fn auth_methods(&self) -> Vec<AuthMethodInfo> {
        self.info.auth_methods.clone()
    }

    async fn authenticate(&self, method_id: &str) -> Result<(), AgentError> {
        let (reply, rx) = oneshot::channel();
        self.send(Request::Authenticate {
            method: method_id.to_owned(),
            reply,
        })
        .await?;
        // Signing in may wait for a browser or a server: as long as opening a session.
        self.wait("authenticate", Some(self.session_timeout), rx)
            .await
    }

    fn steers(&self) -> bool {
        self.info.steering
    }

    fn stderr_tail(&self) -> String {
        self.stderr.last(20)
    }

    fn process_state(&self) -> ProcessState {
        match self.exit_status() {
            Some(status) => ProcessState::Crashed { status },
            None => ProcessState::Running {
                uptime: self.started.elapsed(),
                sessions: self.sessions().count(),
            },
        }
    }

    async fn stop(&self) {
        self.shutdown().await;
    }
}

/// `info` with each terminal sign-in as the command it runs: the agent's own `command`
/// with the method's arguments.
fn sign_in_commands(mut info: AgentInfo, command: &str) -> AgentInfo {
    for method in &mut info.auth_methods {
        if let Some(args) = &mut method.terminal {
            *args = format!("{command} {args}").trim().to_owned();
        }
    }
    info
}

/// Most pages of `session/list` read for one `!sessions`.
const LIST_PAGES: usize = 5;

/// Runs the SDK connection until the agent goes away or every [`AcpAgent`] handle is dropped.
async fn run_connection(
    spec: ProcessSpec,
    transport: impl agent_client_protocol::ConnectTo<Client> + 'static,
    sessions: Arc<Mutex<Sessions>>,
    terminals: Arc<Terminals>,
    mut requests: mpsc::Receiver<Request>,
    init: oneshot::Sender<Result<InitializeResponse, agent_client_protocol::Error>>,
) -> Result<(), agent_client_protocol::Error> {
    // Without a network, or on another host, the room tools come through the socket file.
    let remote = (spec.remote.as_ref()).map(|link| link.settings().program.clone());
    let route = events::ToolsRoute::of(spec.network(), remote);
    let offer = Offer::to(&spec, terminals.enabled());
    let ProcessSpec {
        agent_id,
        file_access,
        mcp_servers,
        ..
    } = spec;
    let served = Served {
        agent: agent_id.clone(),
        sessions,
        terminals,
        file_access,
    };
    let notified = served.clone();
    Client
        .v1()
        .name("sidekicks")
        .on_receive_request(
            async move |request: AgentRequest, responder, _cx| {
                served.request(request, responder.erase_to_json());
                Ok(())
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_notification(
            async move |message: UntypedMessage, _cx| {
                notified.notification(message);
                Ok(())
            },
            agent_client_protocol::on_receive_notification!(),
        )
        .connect_with(transport, async move |cx: ConnectionTo<Agent>| {
            let initialize = initialize_request(offer);
            let response = cx.send_request(initialize).block_task().await;
            let ok = response.is_ok();
            // HTTP MCP servers only for agents that take them; every agent takes stdio ones.
            let http = response
                .as_ref()
                .is_ok_and(|r| r.agent_capabilities.mcp_capabilities.http);
            let mcp = events::mcp_servers(&mcp_servers, http, &agent_id);
            let _ = init.send(response);
            if !ok {
                return Ok(());
            }
            let tools = McpOffer {
                servers: mcp,
                http,
                route,
                agent_id: &agent_id,
            };
            while let Some(request) = requests.recv().await {
                request.send(&cx, &tools);
            }
            Ok(())
        })
        .await
}
