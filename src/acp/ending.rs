//! What is done when an agent's connection ends, or the agent breaks the protocol: its
//! commands go, and a process that cannot be talked to any more is stopped.

use std::sync::Arc;

use tokio::sync::watch;

use super::client_terminal::Terminals;
use super::transport;
use crate::model::ids::AgentId;

/// Kills the agent's process group (`kill`) once `broken` says it broke the protocol.
pub(super) fn stop_when_broken(
    kill: impl Fn() + Send + 'static,
    mut broken: watch::Receiver<Option<String>>,
) {
    tokio::spawn(async move {
        if broken.wait_for(|b| b.is_some()).await.is_ok() {
            kill();
        }
    });
}

/// What is done when an agent's connection ends.
pub(super) struct Ended {
    /// The agent, for the log.
    pub(super) agent_id: AgentId,
    /// The process's exit status, once it has ended.
    pub(super) exit: watch::Receiver<Option<String>>,
    /// The commands it started through the client.
    pub(super) terminals: Arc<Terminals>,
    /// Where the agent is declared broken.
    pub(super) broken: watch::Sender<Option<String>>,
}

impl Ended {
    /// The connection ended with `ended`: the agent's commands go with it (nobody can ask
    /// for their output any more), and a process that lives on but cannot be talked to is
    /// stopped, so waiting requests fail and the next message starts it afresh.
    pub(super) fn after(self, ended: Result<(), agent_client_protocol::Error>) {
        let agent_id = &self.agent_id;
        self.terminals.end_all();
        match ended {
            Ok(()) => tracing::info!(agent = %agent_id, "ACP connection closed"),
            Err(e) if self.exit.borrow().is_some() => {
                tracing::info!(agent = %agent_id, error = %e, "ACP connection ended with the process")
            }
            Err(e) => {
                tracing::error!(agent = %agent_id, error = %e, "ACP connection failed; stopping the agent");
                let reason = format!("the connection to it failed ({e})");
                transport::declare_broken(&self.broken, reason);
            }
        }
    }
}
