//! Keeping an agent available: when its process has died, the next new session starts it
//! again, with back-off so a crashing agent does not loop. A session holds the process that
//! opened it (its handle goes there, past the supervisor), so a request for a session of a
//! dead process fails with its exit status (and the channel opens a new session, which
//! brings the process back).
//!
//! The process pool (`core::pool`) may also stop a process on purpose, or leave it unstarted
//! until its first turn: that is no crash, so the next session starts it without back-off.

use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use tokio::time::Instant;

use super::connection::AcpAgent;
use super::process::ProcessSpec;
use crate::core::agent::{AgentPort, NewSession, PlaceWaits};
use crate::model::agent::{AgentError, ProcessState, Reopen};
use crate::model::agent::{AuthMethodInfo, SessionListing, SessionTools};
use crate::model::ids::SessionId;
use crate::model::media::PromptSupport;
use crate::model::modes::KnownModes;
use crate::workspace::folder::Folder;

/// Shortest wait before a restart after a crash.
const FIRST_DELAY: Duration = Duration::from_secs(1);
/// Longest wait between restarts of an agent that keeps crashing.
const MAX_DELAY: Duration = Duration::from_secs(300);
/// A process that ran this long is considered healthy: the back-off starts over.
const HEALTHY_AFTER: Duration = Duration::from_secs(120);
/// Longest a new session waits for a restart; past it, the caller is told when to retry.
const MAX_WAIT: Duration = Duration::from_secs(10);

/// When an agent may be started again, growing while it keeps crashing.
#[derive(Debug)]
pub struct Backoff {
    /// The wait imposed by the last crash.
    delay: Duration,
    /// When the current process started.
    started: Instant,
    /// When the dead process may be started again, once its death was noticed.
    next: Option<Instant>,
}

impl Backoff {
    /// The back-off of a process started at `now`.
    pub fn new(now: Instant) -> Self {
        Self {
            delay: Duration::ZERO,
            started: now,
            next: None,
        }
    }

    /// When the dead process may be started again: decided once per death, so asking
    /// again (more messages while it waits) does not push the restart further away.
    pub fn due(&mut self, now: Instant) -> Instant {
        match self.next {
            Some(at) => at,
            None => {
                let at = self.restart_at(now);
                self.next = Some(at);
                at
            }
        }
    }

    /// When a process found dead at `now` may be started again: at once after a healthy
    /// run, else after a delay that doubles with each quick crash (1 s up to 5 min).
    pub fn restart_at(&mut self, now: Instant) -> Instant {
        self.delay = if now.duration_since(self.started) >= HEALTHY_AFTER {
            Duration::ZERO
        } else {
            (self.delay * 2).clamp(FIRST_DELAY, MAX_DELAY)
        };
        self.started + self.delay.max(now.duration_since(self.started))
    }

    /// Notes that a new process started at `now`, or failed to start (it counts as a
    /// process that died at once).
    pub fn started(&mut self, now: Instant) {
        self.started = now;
        self.next = None;
    }
}

/// An agent's processes as the gateway holds them: what the core needs of them, and the
/// stop at shutdown, which (unlike [`AgentPort::stop`]) waits for no restart in progress.
#[async_trait]
pub trait Supervised: AgentPort {
    /// Stops every process of the agent.
    async fn shutdown(&self);
}

/// An agent process, started on demand: at its first session, and again after it died or
/// was stopped.
pub struct SupervisedAgent {
    /// How to start it.
    spec: ProcessSpec,
    /// The current process (the last one, once it has ended); `None` before the first start.
    current: Mutex<Option<Arc<AcpAgent>>>,
    /// Whether the current process was stopped on purpose (pool), not crashed.
    stopped: std::sync::atomic::AtomicBool,
    /// Restarts, one at a time, with their back-off.
    restarts: tokio::sync::Mutex<Backoff>,
}

impl SupervisedAgent {
    /// Supervises `first`, started from `spec`; without it, the agent starts at its first
    /// session.
    pub fn new(spec: ProcessSpec, first: Option<Arc<AcpAgent>>) -> Arc<Self> {
        Arc::new(Self {
            spec,
            current: Mutex::new(first),
            stopped: Default::default(),
            restarts: tokio::sync::Mutex::new(Backoff::new(Instant::now())),
        })
    }

    /// How it is started.
    #[cfg(test)]
    pub(super) fn spec(&self) -> &ProcessSpec {
        &self.spec
    }

    fn current(&self) -> Option<Arc<AcpAgent>> {
        self.current.lock().expect("agent lock poisoned").clone()
    }

    /// The current process, started first if it has not started yet, was stopped, or has
    /// died (then with back-off).
    async fn live(&self) -> Result<Arc<AcpAgent>, AgentError> {
        use std::sync::atomic::Ordering;
        let mut backoff = self.restarts.lock().await;
        let current = self.current();
        let status = match &current {
            Some(current) => match current.exit_status() {
                None => return Ok(current.clone()),
                Some(status) => Some(status),
            },
            None => None,
        };
        // Not started yet, or stopped on purpose: no crash, no back-off.
        let wait = match status {
            Some(status) if !self.stopped.load(Ordering::SeqCst) => {
                let at = backoff.due(Instant::now());
                let wait = at.saturating_duration_since(Instant::now());
                if wait > MAX_WAIT {
                    return Err(AgentError::Failed(format!(
                        "the agent process keeps stopping (last: {status}); Sidekicks will start it again in {} s",
                        wait.as_secs()
                    )));
                }
                tracing::warn!(agent = %self.spec.agent_id, %status, wait = ?wait, "the agent process had stopped; starting it again");
                crate::core::metrics::metrics().agent_restarted(&self.spec.agent_id);
                wait
            }
            _ => {
                tracing::info!(agent = %self.spec.agent_id, "starting the agent process");
                Duration::ZERO
            }
        };
        tokio::time::sleep(wait).await;
        let started = AcpAgent::start(&self.spec).await;
        backoff.started(Instant::now());
        self.stopped.store(false, Ordering::SeqCst);
        let fresh = started?;
        *self.current.lock().expect("agent lock poisoned") = Some(fresh.clone());
        Ok(fresh)
    }
}

#[async_trait]
impl Supervised for SupervisedAgent {
    async fn shutdown(&self) {
        if let Some(current) = self.current() {
            current.shutdown().await;
        }
    }
}

#[async_trait]
impl AgentPort for SupervisedAgent {
    async fn new_session(
        &self,
        folder: &Arc<Folder>,
        tools: Option<&SessionTools>,
    ) -> Result<NewSession, AgentError> {
        self.live().await?.new_session(folder, tools).await
    }

    async fn ensure_running(&self, _folder: &Path, _waits: PlaceWaits) -> Result<(), AgentError> {
        self.live().await.map(|_| ())
    }

    fn reopen_support(&self) -> Option<Reopen> {
        // Known once the agent has started; until then, a session can only be new.
        self.current().and_then(|c| c.reopen_support())
    }

    fn known_modes(&self) -> KnownModes {
        // Known once the agent has started (its dialect may come from its own name).
        self.current().map(|c| c.known_modes()).unwrap_or_default()
    }

    fn prompt_support(&self) -> PromptSupport {
        // Known once the agent has started (a turn starts it before its prompt is made).
        self.current()
            .map(|c| c.prompt_support())
            .unwrap_or_default()
    }

    async fn reopen_session(
        &self,
        id: &SessionId,
        folder: &Arc<Folder>,
        tools: Option<&SessionTools>,
    ) -> Result<NewSession, AgentError> {
        self.live().await?.reopen_session(id, folder, tools).await
    }

    fn forks(&self) -> bool {
        // Known once the agent has started (a session is opened only on a started agent).
        self.current().is_some_and(|c| c.forks())
    }

    async fn fork_session(
        &self,
        source: &SessionId,
        folder: &Arc<Folder>,
        tools: Option<&SessionTools>,
    ) -> Result<NewSession, AgentError> {
        self.live().await?.fork_session(source, folder, tools).await
    }

    fn steers(&self) -> bool {
        // Known once the agent has started (a turn runs only on a started agent).
        self.current().is_some_and(|c| c.steers())
    }

    async fn list_sessions(&self, cwd: &Path) -> Result<Vec<SessionListing>, AgentError> {
        self.live().await?.list_sessions(cwd).await
    }

    fn auth_methods(&self) -> Vec<AuthMethodInfo> {
        self.current().map(|c| c.auth_methods()).unwrap_or_default()
    }

    async fn authenticate(&self, method_id: &str) -> Result<(), AgentError> {
        self.live().await?.authenticate(method_id).await
    }

    fn stderr_tail(&self) -> String {
        self.current().map(|c| c.stderr_tail()).unwrap_or_default()
    }

    fn process_state(&self) -> ProcessState {
        match self.current() {
            None => ProcessState::Stopped,
            Some(_) if self.stopped.load(std::sync::atomic::Ordering::SeqCst) => {
                ProcessState::Stopped
            }
            Some(current) => current.process_state(),
        }
    }

    async fn stop(&self) {
        // Taken under the restart lock, so a start in progress is not stopped half-way.
        let _restarts = self.restarts.lock().await;
        let Some(current) = self.current() else {
            return;
        };
        if current.exit_status().is_some() {
            return;
        }
        self.stopped
            .store(true, std::sync::atomic::Ordering::SeqCst);
        current.shutdown().await;
        tracing::info!(agent = %self.spec.agent_id, "agent process stopped");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quick_crashes_back_off_and_a_healthy_run_starts_over() {
        let t0 = Instant::now();
        let mut b = Backoff::new(t0);
        // Crashes right after starting: 1 s, 2 s, 4 s after each start.
        let mut start = t0;
        for expected in [1, 2, 4, 8] {
            let at = b.restart_at(start);
            assert_eq!(at.duration_since(start), Duration::from_secs(expected));
            start = at;
            b.started(start);
        }
        // A process that ran for long is restarted at once, and the delays start over.
        let late = start + HEALTHY_AFTER;
        assert_eq!(b.restart_at(late), late);
        b.started(late);
        assert_eq!(
            b.restart_at(late).duration_since(late),
            Duration::from_secs(1)
        );
    }

    #[test]
    fn the_restart_time_is_decided_once_per_death() {
        let t0 = Instant::now();
        let mut b = Backoff::new(t0);
        let at = b.due(t0);
        assert_eq!(b.due(t0 + Duration::from_millis(500)), at);
        b.started(at);
        assert!(b.due(at) > at, "a new death gets a new, later time");
    }

    #[test]
    fn the_delay_never_exceeds_five_minutes() {
        let t0 = Instant::now();
        let mut b = Backoff::new(t0);
        for _ in 0..20 {
            b.restart_at(t0);
        }
        assert_eq!(b.restart_at(t0).duration_since(t0), MAX_DELAY);
    }
}
