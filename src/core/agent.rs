//! The agent ports: what the core needs from an agent process ([`AgentPort`]: its
//! lifecycle, what it advertises, opening sessions) and from one session it opened
//! ([`SessionPort`]: turns, steering, modes, options). Implemented by `crate::acp` and by a
//! fake in tests. The data they speak lives in [`crate::model::agent`].
//!
//! A session is a handle of its own, given with the session, so what is done to it goes to
//! the process that opened it without the wrappers around an agent (the supervisor, a
//! process per room) passing each call on: a wrapper wraps only what it changes.

use std::path::Path;
use std::sync::Arc;

use async_trait::async_trait;

use crate::workspace::folder::Folder;

use tokio::sync::mpsc;

use crate::model::agent::{
    AgentError, AgentEvent, AuthMethodInfo, ConfigChoice, ConfigOption, ProcessState, Reopen,
    Replayed, SessionListing, SessionSettings, SessionTools, Steered, TurnEnd,
};
use crate::model::ids::SessionId;
use crate::model::media::{PromptBlock, PromptSupport};
use crate::model::modes::KnownModes;

/// How a start that may wait for a place (an agent with a container per room, at
/// `max_rooms`) and the conversation that asked for it talk to each other.
#[derive(Debug)]
pub struct PlaceWaits {
    /// Told, once, that the start waits for a place: the core tells the room, as it does
    /// for the process pool's waits.
    pub tell: tokio::sync::oneshot::Sender<PlaceWait>,
    /// Cancelled when the conversation gives the wait up (`!stop`, a shutdown): a start
    /// still waiting for its place ends with an error; one already under way goes on to its
    /// end, so no stop or start is ever cut in half.
    pub give_up: tokio_util::sync::CancellationToken,
}

impl PlaceWaits {
    /// For a start nobody listens to, and that is not given up.
    pub fn unheard() -> Self {
        Self {
            tell: tokio::sync::oneshot::channel().0,
            give_up: tokio_util::sync::CancellationToken::new(),
        }
    }
}

/// Why a conversation's process waits to start: each of the agent's room processes it may
/// run at once (`max_rooms`) is running a turn, or was just used.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PlaceWait {
    /// The most room processes the agent runs at once.
    pub max_rooms: usize,
}

/// One running agent process, as the core sees it: its lifecycle, what it advertises, and
/// the sessions it opens ([`SessionPort`] for what is done to one).
#[async_trait]
pub trait AgentPort: Send + Sync {
    /// Opens a new session working in `folder` (its `cwd` is the folder's path; the
    /// agent's file requests reach that folder, as it was opened, and nothing else), given
    /// the gateway's room tools (`tools`) besides the agent's configured MCP servers.
    async fn new_session(
        &self,
        folder: &Arc<Folder>,
        tools: Option<&SessionTools>,
    ) -> Result<NewSession, AgentError>;
    /// What its dialect knows of its modes: which ask before acting, which one sessions are
    /// put in. Nothing known until it has started (its dialect may come from its name).
    fn known_modes(&self) -> KnownModes {
        KnownModes::UNKNOWN
    }
    /// What the agent takes in a prompt besides text and links, as it advertised; nothing
    /// until it has started.
    fn prompt_support(&self) -> PromptSupport {
        PromptSupport::default()
    }
    /// The agent's sessions whose working folder is `cwd` (`session/list`, at most a few
    /// pages); an error when the agent cannot list them.
    async fn list_sessions(&self, _cwd: &Path) -> Result<Vec<SessionListing>, AgentError> {
        Err(AgentError::Failed(
            "this agent cannot list its sessions".into(),
        ))
    }
    /// The ways the agent offers to sign in, as it advertised (none until it started).
    fn auth_methods(&self) -> Vec<AuthMethodInfo> {
        Vec::new()
    }
    /// Signs the agent in with method `method_id` (`authenticate`).
    async fn authenticate(&self, _method_id: &str) -> Result<(), AgentError> {
        Err(AgentError::Failed("this agent offers no sign-in".into()))
    }
    /// Whether the agent takes a message into a running turn ([`SessionPort::steer`]), as
    /// it advertised; `false` until it has started. No default: a wrapper that forgot to
    /// pass it on would quietly turn steering off.
    fn steers(&self) -> bool;
    /// The last lines the agent wrote to stderr, for diagnostics.
    fn stderr_tail(&self) -> String;
    /// Starts the agent process that serves `folder` (a conversation's) if it is not
    /// running (it starts lazily, and the process pool may have stopped it), so what it
    /// advertises is known before a session is opened there. One process serves every
    /// folder, unless the agent runs a container per room; then a room whose process must
    /// wait for a place (`max_rooms`) says so on `waits`, for the core to tell the room, and
    /// stops waiting when the core gives the wait up.
    async fn ensure_running(&self, _folder: &Path, _waits: PlaceWaits) -> Result<(), AgentError> {
        Ok(())
    }
    /// Whether (and how) this agent can get back a session it created earlier; `None` for
    /// most agents, whose conversations are re-injected into a new session instead.
    fn reopen_support(&self) -> Option<Reopen> {
        None
    }
    /// Gets back session `id` in `folder` the way [`AgentPort::reopen_support`] says, given
    /// the room tools as [`AgentPort::new_session`] is. Anything the agent replays while
    /// loading is not passed on: the room has shown it already.
    async fn reopen_session(
        &self,
        id: &SessionId,
        _folder: &Arc<Folder>,
        _tools: Option<&SessionTools>,
    ) -> Result<NewSession, AgentError> {
        Err(AgentError::Failed(format!(
            "this agent cannot reopen session {id}"
        )))
    }
    /// Whether the agent can fork a session ([`AgentPort::fork_session`]), as it
    /// advertised; `false` until it has started. No default: a wrapper that forgot to pass
    /// it on would quietly re-inject every fork's conversation instead.
    fn forks(&self) -> bool;
    /// Opens a new session in `folder` that starts as a copy of session `source`
    /// (`session/fork`), given the room tools as [`AgentPort::new_session`] is: the copy
    /// remembers the conversation, nothing is re-injected. The source is named by its ID
    /// (the store keeps it): it may belong to another conversation, or to none any more.
    async fn fork_session(
        &self,
        source: &SessionId,
        folder: &Arc<Folder>,
        tools: Option<&SessionTools>,
    ) -> Result<NewSession, AgentError>;
    /// Whether the agent process runs, since when, and how many sessions it holds.
    fn process_state(&self) -> ProcessState;
    /// Stops the agent process to free its slot (the pool's idle stop or eviction). Its
    /// sessions end with it; the next prompt starts it again and gets them back the way
    /// the session continuity work provides. Not reported as a crash.
    async fn stop(&self);
}

/// One session an agent opened, as the core sees it: what is done to it goes to the
/// process that opened it. Implemented by `crate::acp` and by a fake in tests.
#[async_trait]
pub trait SessionPort: Send + Sync {
    /// The agent's ID for the session (what the store keeps, to get it back or fork it).
    fn id(&self) -> &SessionId;
    /// Sends a prompt (text, and the files that go with it) and waits for the turn to end.
    /// Updates arrive on the session's event receiver, all of them before this returns.
    async fn prompt(&self, blocks: Vec<PromptBlock>) -> Result<TurnEnd, AgentError>;
    /// Sends `blocks` into the turn running in the session (`_session/steering`): the turn
    /// answers them. [`Steered::NoTurn`] when no turn runs there any more.
    async fn steer(&self, blocks: Vec<PromptBlock>) -> Result<Steered, AgentError>;
    /// Stops background task `task_id` of the session (`_session/async_task/stop`);
    /// `false` when the agent did not stop it (it had ended, or cannot be stopped).
    async fn stop_task(&self, task_id: &str) -> Result<bool, AgentError>;
    /// Asks the agent to stop the running turn (`session/cancel`).
    async fn cancel(&self) -> Result<(), AgentError>;
    /// Switches the session to mode `mode_id` (`session/set_mode`), in place.
    async fn set_mode(&self, mode_id: &str) -> Result<(), AgentError>;
    /// Changes config option `option_id` of the session (`session/set_config_option`), in
    /// place; returns every option as the agent now has them.
    async fn set_option(
        &self,
        option_id: &str,
        value: ConfigChoice,
    ) -> Result<Vec<ConfigOption>, AgentError>;
    /// Whether the session can still take prompts: `false` once the process that opened
    /// it has died or was stopped, or the session was forgotten, so the caller opens a new
    /// session instead of losing a message to it.
    fn alive(&self) -> bool;
    /// Forgets the session: its channel has left it (a fresh start, a process that died),
    /// so nothing is kept for it any more and what still comes for it is dropped.
    fn forget(&self);
    /// Frees the session on the agent's side (`session/close`, where the agent offers it;
    /// forgotten only, otherwise): its conversation was reset. A failure is only logged.
    async fn close(&self);
}

/// A session, shared by the channel that holds it and the turn that runs in it.
pub type AgentSession = Arc<dyn SessionPort>;

/// A session just opened by `session/new` or `session/fork` (or got back by
/// `session/load` or `session/resume`).
pub struct NewSession {
    /// The session, to prompt and change.
    pub session: AgentSession,
    /// Its modes and config options.
    pub settings: SessionSettings,
    /// Every update the agent sends for this session, in order.
    pub events: mpsc::Receiver<AgentEvent>,
    /// For a session loaded or resumed: what the agent replayed of it (not shown again).
    pub replayed: Replayed,
}

impl NewSession {
    /// The session's ID.
    pub fn id(&self) -> &SessionId {
        self.session.id()
    }
}

impl std::fmt::Debug for NewSession {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NewSession")
            .field("id", self.id())
            .field("settings", &self.settings)
            .field("replayed", &self.replayed)
            .finish_non_exhaustive()
    }
}
