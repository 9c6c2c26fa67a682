//! One agent process per room (`[agents.runner] per_room = true`, the container runner with
//! `{room}` in the workspace): each room's conversations run in a process of their own, in a
//! container that mounts only that room's folder, so one conversation's agent cannot see
//! another's files. Each room's process is supervised as a whole agent's is ([`Supervised`]:
//! started at its first session, restarted with back-off); to the core the rooms are still
//! one agent, which the pool counts once and stops as a whole.
//!
//! What belongs to a folder (a new, reopened or listed session) goes to that folder's process,
//! started first; what belongs to a session goes to the process that opened it. What the
//! agent advertises (its modes, what a prompt takes, how it signs in) is the same program's in
//! every room: it is read from the room process that started last, which is the one the core
//! has just asked for (`ensure_running` comes before those questions).
//!
//! With the pool's idle stop (`pool.idle_stop_secs`), a room's process that has had no use
//! for that long is stopped on its own, while the agent's other rooms go on. A use is a
//! session opened or found alive (a turn checks that first), and a turn from its start to
//! its end; the next turn there starts the process again and gets its session back.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::{Duration, Instant};

use async_trait::async_trait;

use super::process::ProcessSpec;
use super::supervisor::{Supervised, SupervisedAgent};
use crate::core::agent::AgentPort;
use crate::model::agent::{
    AgentError, ConfigChoice, ConfigOption, NewSession, ProcessState, Reopen, Steered, TurnEnd,
};
use crate::model::agent::{AuthMethodInfo, SessionListing, SessionTools};
use crate::model::media::{PromptBlock, PromptSupport};
use crate::model::modes::KnownModes;
use crate::workspace::folder::Folder;

/// One room's process, and how it is used.
struct Room {
    /// Its folder (the mount of its container).
    folder: PathBuf,
    /// The process.
    process: Arc<SupervisedAgent>,
    /// Turns running in it now: a busy room is never stopped for being idle.
    busy: AtomicUsize,
    /// When it was last used.
    used: Mutex<Instant>,
}

impl Room {
    fn touch(&self) {
        *self.used.lock().expect("room use poisoned") = Instant::now();
    }

    /// Whether it runs and has had no use for `idle`.
    fn idle_for(&self, idle: Duration) -> bool {
        self.busy.load(Ordering::SeqCst) == 0
            && self.used.lock().expect("room use poisoned").elapsed() >= idle
            && matches!(self.process.process_state(), ProcessState::Running { .. })
    }
}

/// A turn running in a room: counted while it lasts.
struct Busy(Arc<Room>);

impl Busy {
    fn new(room: Arc<Room>) -> Self {
        room.busy.fetch_add(1, Ordering::SeqCst);
        room.touch();
        Self(room)
    }
}

impl Drop for Busy {
    fn drop(&mut self) {
        self.0.touch();
        self.0.busy.fetch_sub(1, Ordering::SeqCst);
    }
}

/// An agent whose every room has a process (and a container) of its own.
pub struct PerRoomAgent {
    /// How to start one room's process, before it is given the room's folder.
    spec: ProcessSpec,
    /// The folder holding every room's folder (the part of `workspace` before `{room}`):
    /// the mount a room's container gets in its place is the room's own folder.
    root: PathBuf,
    /// Each room folder's process.
    rooms: Mutex<HashMap<PathBuf, Arc<Room>>>,
    /// The room each session belongs to.
    sessions: Mutex<HashMap<String, Arc<Room>>>,
    /// The room process that started last, which answers what the agent advertises.
    last: Mutex<Option<Arc<SupervisedAgent>>>,
}

impl PerRoomAgent {
    /// An agent started from `spec`, one process per folder below `root`; none starts yet.
    /// With `idle_stop`, a room's process unused that long is stopped (a task runs for
    /// that while the agent is held: call this inside the runtime).
    pub fn new(spec: ProcessSpec, root: PathBuf, idle_stop: Option<Duration>) -> Arc<Self> {
        let agent = Arc::new(Self {
            spec,
            root,
            rooms: Mutex::default(),
            sessions: Mutex::default(),
            last: Mutex::default(),
        });
        if let Some(idle) = idle_stop {
            tokio::spawn(stop_idle_rooms(Arc::downgrade(&agent), idle));
        }
        agent
    }

    /// Stops the process of each room that has had no use for `idle`, and forgets its
    /// sessions (a turn there opens one again).
    async fn stop_idle(&self, idle: Duration) {
        let idle_rooms: Vec<Arc<Room>> = (self.all().into_iter())
            .filter(|room| room.idle_for(idle))
            .collect();
        for room in idle_rooms {
            tracing::info!(agent = %self.spec.agent_id, folder = %room.folder.display(), "a room's agent process had no use; stopping it");
            room.process.stop().await;
            (self.sessions.lock().expect("sessions lock poisoned"))
                .retain(|_, r| !Arc::ptr_eq(r, &room));
        }
    }

    /// The process of the room whose folder holds `folder`, made (not started) on first
    /// use. A room's folder is the one just below the root (`{room}` may have more after
    /// it). `Err` for a folder outside the root, which no room's container may mount.
    fn room(&self, folder: &Path) -> Result<Arc<Room>, AgentError> {
        let top = (folder.strip_prefix(&self.root).ok())
            .and_then(|below| below.components().next())
            .filter(|c| matches!(c, std::path::Component::Normal(_)))
            .map(|c| self.root.join(c));
        let Some(top) = top else {
            return Err(AgentError::Failed(format!(
                "{} is not a room's folder below {}",
                folder.display(),
                self.root.display()
            )));
        };
        let mut rooms = self.rooms.lock().expect("rooms lock poisoned");
        let room = rooms.entry(top.clone()).or_insert_with(|| {
            Arc::new(Room {
                process: SupervisedAgent::new(self.spec.for_room(&self.root, &top), None),
                folder: top,
                busy: AtomicUsize::new(0),
                used: Mutex::new(Instant::now()),
            })
        });
        Ok(room.clone())
    }

    /// The room of `folder`, its process running, noted as the last one asked for.
    async fn live(&self, folder: &Path) -> Result<Arc<Room>, AgentError> {
        let room = self.room(folder)?;
        room.touch();
        room.process.ensure_running(folder).await?;
        *self.last.lock().expect("last lock poisoned") = Some(room.process.clone());
        Ok(room)
    }

    fn last(&self) -> Option<Arc<SupervisedAgent>> {
        self.last.lock().expect("last lock poisoned").clone()
    }

    /// Notes that `room` holds `session`, just opened.
    fn held_by(&self, room: Arc<Room>, session: NewSession) -> NewSession {
        (self.sessions.lock().expect("sessions lock poisoned")).insert(session.id.clone(), room);
        session
    }

    /// The room that holds `session_id`.
    fn holding(&self, session_id: &str) -> Result<Arc<Room>, AgentError> {
        (self.sessions.lock().expect("sessions lock poisoned"))
            .get(session_id)
            .cloned()
            .ok_or_else(|| AgentError::Failed(format!("no process holds session {session_id}")))
    }

    /// The room process that holds `session_id`.
    fn holder(&self, session_id: &str) -> Result<Arc<SupervisedAgent>, AgentError> {
        self.holding(session_id).map(|room| room.process.clone())
    }

    fn all(&self) -> Vec<Arc<Room>> {
        (self.rooms.lock().expect("rooms lock poisoned"))
            .values()
            .cloned()
            .collect()
    }
}

/// Stops `agent`'s idle rooms' processes, looking a few times per `idle`, until the agent
/// is dropped.
async fn stop_idle_rooms(agent: Weak<PerRoomAgent>, idle: Duration) {
    let every = (idle / 4).clamp(Duration::from_millis(250), Duration::from_secs(30));
    loop {
        tokio::time::sleep(every).await;
        let Some(agent) = agent.upgrade() else {
            return;
        };
        agent.stop_idle(idle).await;
    }
}

#[async_trait]
impl Supervised for PerRoomAgent {
    async fn shutdown(&self) {
        for room in self.all() {
            room.process.shutdown().await;
        }
    }
}

#[async_trait]
impl AgentPort for PerRoomAgent {
    async fn new_session(
        &self,
        folder: &Arc<Folder>,
        tools: Option<&SessionTools>,
    ) -> Result<NewSession, AgentError> {
        let room = self.live(folder.path()).await?;
        let session = room.process.new_session(folder, tools).await?;
        Ok(self.held_by(room, session))
    }

    async fn ensure_running(&self, folder: &Path) -> Result<(), AgentError> {
        self.live(folder).await.map(|_| ())
    }

    fn reopen_support(&self) -> Option<Reopen> {
        self.last().and_then(|r| r.reopen_support())
    }

    fn known_modes(&self) -> KnownModes {
        self.last().map(|r| r.known_modes()).unwrap_or_default()
    }

    fn prompt_support(&self) -> PromptSupport {
        self.last().map(|r| r.prompt_support()).unwrap_or_default()
    }

    async fn reopen_session(
        &self,
        session_id: &str,
        folder: &Arc<Folder>,
        tools: Option<&SessionTools>,
    ) -> Result<NewSession, AgentError> {
        let room = self.live(folder.path()).await?;
        let session = (room.process)
            .reopen_session(session_id, folder, tools)
            .await?;
        Ok(self.held_by(room, session))
    }

    fn forks(&self) -> bool {
        self.last().is_some_and(|r| r.forks())
    }

    async fn fork_session(
        &self,
        session_id: &str,
        folder: &Arc<Folder>,
        tools: Option<&SessionTools>,
    ) -> Result<NewSession, AgentError> {
        // A session forks in the process that holds it: its history is there.
        let room = self.holding(session_id)?;
        let session = (room.process)
            .fork_session(session_id, folder, tools)
            .await?;
        Ok(self.held_by(room, session))
    }

    async fn prompt(
        &self,
        session_id: &str,
        blocks: Vec<PromptBlock>,
    ) -> Result<TurnEnd, AgentError> {
        let busy = Busy::new(self.holding(session_id)?);
        busy.0.process.prompt(session_id, blocks).await
    }

    fn steers(&self) -> bool {
        self.last().is_some_and(|r| r.steers())
    }

    async fn steer(
        &self,
        session_id: &str,
        blocks: Vec<PromptBlock>,
    ) -> Result<Steered, AgentError> {
        self.holder(session_id)?.steer(session_id, blocks).await
    }

    async fn stop_task(&self, session_id: &str, task_id: &str) -> Result<bool, AgentError> {
        self.holder(session_id)?
            .stop_task(session_id, task_id)
            .await
    }

    async fn cancel(&self, session_id: &str) -> Result<(), AgentError> {
        self.holder(session_id)?.cancel(session_id).await
    }

    async fn list_sessions(&self, cwd: &Path) -> Result<Vec<SessionListing>, AgentError> {
        self.live(cwd).await?.process.list_sessions(cwd).await
    }

    fn auth_methods(&self) -> Vec<AuthMethodInfo> {
        self.last().map(|r| r.auth_methods()).unwrap_or_default()
    }

    async fn authenticate(&self, method_id: &str) -> Result<(), AgentError> {
        // The room that asked was started last; what signing in stores is in the agent's
        // home, which every room's container mounts.
        let room = self.last().ok_or_else(|| {
            AgentError::Failed("no room's process of this agent has started".into())
        })?;
        room.authenticate(method_id).await
    }

    async fn close_session(&self, session_id: &str) {
        if let Ok(room) = self.holder(session_id) {
            room.close_session(session_id).await
        }
    }

    fn stderr_tail(&self) -> String {
        self.last().map(|r| r.stderr_tail()).unwrap_or_default()
    }

    fn session_alive(&self, session_id: &str) -> bool {
        // Asked before a turn is sent to the session: a use of its room, so the room is not
        // stopped for being idle between this answer and the turn.
        self.holding(session_id).is_ok_and(|room| {
            room.touch();
            room.process.session_alive(session_id)
        })
    }

    fn forget_session(&self, session_id: &str) {
        let room = (self.sessions.lock().expect("sessions lock poisoned")).remove(session_id);
        if let Some(room) = room {
            room.process.forget_session(session_id);
        }
    }

    async fn set_mode(&self, session_id: &str, mode_id: &str) -> Result<(), AgentError> {
        self.holder(session_id)?.set_mode(session_id, mode_id).await
    }

    async fn set_option(
        &self,
        session_id: &str,
        option_id: &str,
        value: ConfigChoice,
    ) -> Result<Vec<ConfigOption>, AgentError> {
        (self.holder(session_id)?)
            .set_option(session_id, option_id, value)
            .await
    }

    fn process_state(&self) -> ProcessState {
        // Running while any room's process runs: its uptime the longest, its sessions all.
        let states: Vec<ProcessState> = (self.all().iter())
            .map(|r| r.process.process_state())
            .collect();
        let mut running: Option<(Duration, usize)> = None;
        for state in &states {
            if let ProcessState::Running { uptime, sessions } = state {
                let (longest, all) = running.unwrap_or_default();
                running = Some((longest.max(*uptime), all + sessions));
            }
        }
        match running {
            Some((uptime, sessions)) => ProcessState::Running { uptime, sessions },
            // A room whose process crashed says so; else none runs.
            None => (states.into_iter())
                .find(|s| matches!(s, ProcessState::Crashed { .. }))
                .unwrap_or(ProcessState::Stopped),
        }
    }

    async fn stop(&self) {
        for room in self.all() {
            room.process.stop().await;
        }
        (self.sessions.lock().expect("sessions lock poisoned")).clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_room_folder_has_one_process_whose_container_mounts_only_it() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("work");
        let mut spec = crate::acp::process::tests::spec("true");
        let mut container = crate::acp::container::tests::container(dir.path());
        container.read_write = vec![root.clone(), dir.path().join("home")];
        spec.container = Some(container);
        let agent = PerRoomAgent::new(spec, root.clone(), None);
        let a = agent.room(&root.join("room-a")).unwrap();
        // A folder below a room's (`{room}/sub`) is that room's.
        assert!(Arc::ptr_eq(
            &a,
            &agent.room(&root.join("room-a/sub")).unwrap()
        ));
        let b = agent.room(&root.join("room-b")).unwrap();
        assert!(!Arc::ptr_eq(&a, &b));
        let mounts = |room: &Room| {
            let spec = room.process.spec();
            (
                spec.container.as_ref().unwrap().read_write.clone(),
                spec.cwd.clone(),
            )
        };
        assert_eq!(
            mounts(&a),
            (
                vec![root.join("room-a"), dir.path().join("home")],
                root.join("room-a")
            )
        );
        assert_eq!(mounts(&b).0[0], root.join("room-b"));
        // The root itself, and what is outside it, is no room's.
        for outside in [root.clone(), dir.path().join("elsewhere"), root.join("..")] {
            assert!(agent.room(&outside).is_err(), "{}", outside.display());
        }
        assert!(matches!(agent.process_state(), ProcessState::Stopped));
    }
}
