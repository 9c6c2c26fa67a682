//! One session an agent process opened, as the core holds it ([`SessionPort`]): it keeps
//! its process, so what is done to it goes there, whoever wraps the agent (the supervisor,
//! a process per room) and whatever process runs now.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use async_trait::async_trait;

use super::connection::AcpAgent;
use crate::core::agent::SessionPort;
use crate::model::agent::{AgentError, ConfigChoice, ConfigOption, Steered, TurnEnd};
use crate::model::ids::SessionId;
use crate::model::media::PromptBlock;

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
