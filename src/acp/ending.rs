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

/// The line of an agent's last stderr lines (`tail`) that says why it stopped: the first
/// that reads as an error (`Error: Cannot find module …`, `ModuleNotFoundError: …`,
/// `error: …`, `fatal: …`, a panic), which runtimes print above their stack and their
/// own closing line (`Node.js v22.23.5`); else the last line that is not blank.
pub(super) fn why_it_stopped(tail: &str) -> Option<&str> {
    let lines = || tail.lines().map(str::trim).filter(|l| !l.is_empty());
    let error = |line: &&str| {
        // `Error: …`, `ModuleNotFoundError: …`, `Model Configuration Error:`, `fatal: …`.
        let head = line.split(':').next().unwrap_or("");
        let last = head.split_whitespace().last().unwrap_or("").to_lowercase();
        let labelled = line.contains(':')
            && ["error", "fatal", "panic", "exception"]
                .iter()
                .any(|w| last.contains(w));
        labelled || line.contains("panicked at") || line.starts_with("Error ")
    };
    lines().find(error).or_else(|| lines().next_back())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_line_that_says_why_comes_before_the_runtimes_own_last_words() {
        let node = "node:internal/modules/cjs/loader:1228\n  throw err;\n  ^\n\n\
                    Error: Cannot find module '/srv/agent/dist/index.js'\n    at Module._resolveFilename \
                    (node:internal/modules/cjs/loader:1225:15)\n{\n  code: 'MODULE_NOT_FOUND'\n}\n\n\
                    Node.js v22.23.5\n";
        assert_eq!(
            why_it_stopped(node),
            Some("Error: Cannot find module '/srv/agent/dist/index.js'")
        );
        let python = "Traceback (most recent call last):\n  File \"/x/vibe\", line 5, in <module>\n\
                      ModuleNotFoundError: No module named 'vibe'\n";
        assert_eq!(
            why_it_stopped(python),
            Some("ModuleNotFoundError: No module named 'vibe'")
        );
        let rust = "thread 'main' panicked at src/main.rs:3:5:\nboom\n";
        assert_eq!(
            why_it_stopped(rust),
            Some("thread 'main' panicked at src/main.rs:3:5:")
        );
        let cli = "\nModel Configuration Error:\nNo model configured\n\nVisit https://x/\n";
        assert_eq!(why_it_stopped(cli), Some("Model Configuration Error:"));
        assert_eq!(why_it_stopped("starting\nbye\n\n"), Some("bye"));
        assert_eq!(why_it_stopped("\n \n"), None);
    }
}
