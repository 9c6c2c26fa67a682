//! One session an agent process opened, as the core holds it ([`SessionPort`]): it keeps
//! its process, so what is done to it goes there, whoever wraps the agent (the supervisor,
//! a process per room) and whatever process runs now. Below it, what the process does for
//! one session: registering it when opened, its turns, steering, cancel, modes, options.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use agent_client_protocol::v1::schema::NewSessionResponse;
use async_trait::async_trait;
use tokio::sync::oneshot;

use super::AcpAgent;
use crate::acp::events;
use crate::acp::requests::{Request, STEER_METHOD, steer_params};
use crate::acp::tasks;
use crate::core::agent::{NewSession, SessionPort};
use crate::model::agent::{AgentError, ConfigChoice, ConfigOption, Steered, StopReason, TurnEnd};
use crate::model::ids::SessionId;
use crate::model::media::PromptBlock;
use crate::workspace::folder::Folder;

/// A session of one agent process.
pub(super) struct AcpSession {
    /// The process that opened it (kept after it ended: its calls then fail as it did).
    agent: Arc<AcpAgent>,
    /// The agent's ID for it.
    id: SessionId,
    /// Set when its channel let go of it: it is not alive any more.
    forgotten: AtomicBool,
}

impl AcpSession {
    pub(super) fn new(agent: Arc<AcpAgent>, id: SessionId) -> Self {
        Self {
            agent,
            id,
            forgotten: AtomicBool::new(false),
        }
    }
}

#[async_trait]
impl SessionPort for AcpSession {
    fn id(&self) -> &SessionId {
        &self.id
    }

    async fn prompt(&self, blocks: Vec<PromptBlock>) -> Result<TurnEnd, AgentError> {
        self.agent.prompt(self.id.as_str(), blocks).await
    }

    async fn steer(&self, blocks: Vec<PromptBlock>) -> Result<Steered, AgentError> {
        self.agent.steer(self.id.as_str(), blocks).await
    }

    async fn stop_task(&self, task_id: &str) -> Result<bool, AgentError> {
        self.agent.stop_task(self.id.as_str(), task_id).await
    }

    async fn cancel(&self) -> Result<(), AgentError> {
        self.agent.cancel(self.id.as_str()).await
    }

    async fn set_mode(&self, mode_id: &str) -> Result<(), AgentError> {
        self.agent.set_mode(self.id.as_str(), mode_id).await
    }

    async fn set_option(
        &self,
        option_id: &str,
        value: ConfigChoice,
    ) -> Result<Vec<ConfigOption>, AgentError> {
        (self.agent)
            .set_option(self.id.as_str(), option_id, value)
            .await
    }

    fn alive(&self) -> bool {
        !self.forgotten.load(Ordering::SeqCst) && self.agent.running()
    }

    fn forget(&self) {
        self.forgotten.store(true, Ordering::SeqCst);
        self.agent.forget_session(self.id.as_str());
    }

    async fn close(&self) {
        self.forgotten.store(true, Ordering::SeqCst);
        // A session whose process is gone is closed already.
        if self.agent.exit_status().is_none() {
            self.agent.close_session(self.id.as_str()).await;
        }
    }
}

/// What is done to one session, called by its handle ([`AcpSession`]).
impl AcpAgent {
    /// Registers session `id`, just opened in `cwd`, and describes it.
    pub(super) fn opened(
        &self,
        id: SessionId,
        folder: &Arc<Folder>,
        response: &NewSessionResponse,
    ) -> NewSession {
        let events = self.sessions().register(id.as_str(), folder.clone());
        let agent = self
            .me
            .upgrade()
            .expect("a session is opened through its agent's Arc");
        NewSession {
            session: Arc::new(AcpSession::new(agent, id)),
            settings: events::session_settings(
                response.modes.as_ref(),
                response.config_options.as_deref(),
            ),
            events,
            replayed: Default::default(),
        }
    }

    pub(super) async fn prompt(
        &self,
        session_id: &str,
        blocks: Vec<PromptBlock>,
    ) -> Result<TurnEnd, AgentError> {
        self.sessions().turn_started(session_id);
        let (reply, rx) = oneshot::channel();
        self.send(Request::Prompt {
            session: session_id.to_owned(),
            blocks: blocks.into_iter().map(events::prompt_block).collect(),
            reply,
        })
        .await?;
        // A turn may legitimately run for hours; stopping it is the person's call.
        match self.wait("session/prompt", None, rx).await {
            Ok(response) => {
                let mut end = events::turn_end(response);
                end.reason = self.sessions().turn_ended(session_id, end.reason);
                Ok(end)
            }
            // An agent that answers our own cancel with an error (Qwen Code's "Request was
            // aborted.") stopped all the same: the turn reads as stopped, not failed.
            Err(AgentError::Rpc { code, message })
                if self.sessions().cancel_was_requested(session_id) =>
            {
                tracing::info!(agent = %self.agent_id, code, %message, "the turn ended with an error after our cancel; taken as stopped");
                let reason = self
                    .sessions()
                    .turn_ended(session_id, StopReason::Cancelled);
                Ok(reason.into())
            }
            Err(AgentError::Rpc { code, message }) => {
                match self.sessions().explain_error(code, &message) {
                    Some(text) => {
                        tracing::info!(agent = %self.agent_id, code, %message, "the turn ended with an error the agent's dialect explains");
                        Err(AgentError::TurnAborted(text))
                    }
                    None => Err(AgentError::Rpc { code, message }),
                }
            }
            Err(e) => Err(e),
        }
    }

    pub(super) async fn close_session(&self, session_id: &str) {
        self.sessions().unregister(session_id);
        self.terminals.end_session(session_id);
        if !self.info.close_session {
            return;
        }
        let (reply, rx) = oneshot::channel();
        let session = session_id.to_owned();
        if self.send(Request::Close { session, reply }).await.is_err() {
            return;
        }
        match self
            .wait("session/close", Some(self.session_timeout), rx)
            .await
        {
            Ok(()) => {
                tracing::info!(agent = %self.agent_id, session = session_id, "session closed")
            }
            Err(e) => {
                tracing::warn!(agent = %self.agent_id, session = session_id, error = %e, "session/close failed")
            }
        }
    }

    pub(super) async fn steer(
        &self,
        session_id: &str,
        blocks: Vec<PromptBlock>,
    ) -> Result<Steered, AgentError> {
        let blocks = blocks.into_iter().map(events::prompt_block).collect();
        let answer = (self.call_extension(STEER_METHOD, steer_params(session_id, blocks))).await?;
        events::steered(&answer).ok_or_else(|| {
            AgentError::Failed(format!(
                "an answer to _session/steering of no known outcome: {answer}"
            ))
        })
    }

    pub(super) async fn stop_task(
        &self,
        session_id: &str,
        task_id: &str,
    ) -> Result<bool, AgentError> {
        let params = tasks::stop_params(session_id, task_id);
        let answer = (self.call_extension(tasks::STOP_METHOD, params)).await?;
        Ok(tasks::stopped(&answer))
    }

    pub(super) async fn cancel(&self, session_id: &str) -> Result<(), AgentError> {
        self.sessions().cancel_requested(session_id);
        self.terminals.stop_session(session_id);
        self.send(Request::Cancel {
            session: session_id.to_owned(),
        })
        .await
    }

    pub(super) async fn set_mode(&self, session_id: &str, mode_id: &str) -> Result<(), AgentError> {
        let (reply, rx) = oneshot::channel();
        self.send(Request::SetMode {
            session: session_id.to_owned(),
            mode: mode_id.to_owned(),
            reply,
        })
        .await?;
        self.wait("session/set_mode", Some(self.session_timeout), rx)
            .await
    }

    pub(super) async fn set_option(
        &self,
        session_id: &str,
        option_id: &str,
        value: ConfigChoice,
    ) -> Result<Vec<ConfigOption>, AgentError> {
        let (reply, rx) = oneshot::channel();
        self.send(Request::SetOption {
            session: session_id.to_owned(),
            option: option_id.to_owned(),
            value: events::config_value(value),
            reply,
        })
        .await?;
        let options = self
            .wait("session/set_config_option", Some(self.session_timeout), rx)
            .await?;
        Ok(events::config_options(options))
    }

    pub(super) fn forget_session(&self, session_id: &str) {
        self.sessions().unregister(session_id);
        self.terminals.end_session(session_id);
    }
}
