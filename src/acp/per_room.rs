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

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

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

/// An agent whose every room has a process (and a container) of its own.
pub struct PerRoomAgent {
    /// How to start one room's process, before it is given the room's folder.
    spec: ProcessSpec,
    /// The folder holding every room's folder (the part of `workspace` before `{room}`):
    /// the mount a room's container gets in its place is the room's own folder.
    root: PathBuf,
    /// Each room folder's process.
    rooms: Mutex<HashMap<PathBuf, Arc<SupervisedAgent>>>,
    /// The room process each session belongs to.
    sessions: Mutex<HashMap<String, Arc<SupervisedAgent>>>,
    /// The room process that started last, which answers what the agent advertises.
    last: Mutex<Option<Arc<SupervisedAgent>>>,
}

impl PerRoomAgent {
    /// An agent started from `spec`, one process per folder below `root`; none starts yet.
    pub fn new(spec: ProcessSpec, root: PathBuf) -> Arc<Self> {
        Arc::new(Self {
            spec,
            root,
            rooms: Mutex::default(),
            sessions: Mutex::default(),
            last: Mutex::default(),
        })
    }

    /// The process of the room whose folder holds `folder`, made (not started) on first
    /// use. A room's folder is the one just below the root (`{room}` may have more after
    /// it). `Err` for a folder outside the root, which no room's container may mount.
    fn room(&self, folder: &Path) -> Result<Arc<SupervisedAgent>, AgentError> {
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
        let room = rooms
            .entry(top.clone())
            .or_insert_with(|| SupervisedAgent::new(self.spec.for_room(&self.root, &top), None));
        Ok(room.clone())
    }

    /// The process of `folder`'s room, running, noted as the last one asked for.
    async fn live(&self, folder: &Path) -> Result<Arc<SupervisedAgent>, AgentError> {
        let room = self.room(folder)?;
        room.ensure_running(folder).await?;
        *self.last.lock().expect("last lock poisoned") = Some(room.clone());
        Ok(room)
    }

    fn last(&self) -> Option<Arc<SupervisedAgent>> {
        self.last.lock().expect("last lock poisoned").clone()
    }

    /// Notes that `room` holds `session`, just opened.
    fn held_by(&self, room: Arc<SupervisedAgent>, session: NewSession) -> NewSession {
        (self.sessions.lock().expect("sessions lock poisoned")).insert(session.id.clone(), room);
        session
    }

    /// The room process that holds `session_id`.
    fn holder(&self, session_id: &str) -> Result<Arc<SupervisedAgent>, AgentError> {
        (self.sessions.lock().expect("sessions lock poisoned"))
            .get(session_id)
            .cloned()
            .ok_or_else(|| AgentError::Failed(format!("no process holds session {session_id}")))
    }

    fn all(&self) -> Vec<Arc<SupervisedAgent>> {
        (self.rooms.lock().expect("rooms lock poisoned"))
            .values()
            .cloned()
            .collect()
    }
}

#[async_trait]
impl Supervised for PerRoomAgent {
    async fn shutdown(&self) {
        for room in self.all() {
            room.shutdown().await;
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
        let session = room.new_session(folder, tools).await?;
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
        let session = room.reopen_session(session_id, folder, tools).await?;
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
        let room = self.holder(session_id)?;
        let session = room.fork_session(session_id, folder, tools).await?;
        Ok(self.held_by(room, session))
    }

    async fn prompt(
        &self,
        session_id: &str,
        blocks: Vec<PromptBlock>,
    ) -> Result<TurnEnd, AgentError> {
        self.holder(session_id)?.prompt(session_id, blocks).await
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
        self.live(cwd).await?.list_sessions(cwd).await
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
        self.holder(session_id)
            .is_ok_and(|room| room.session_alive(session_id))
    }

    fn forget_session(&self, session_id: &str) {
        let room = (self.sessions.lock().expect("sessions lock poisoned")).remove(session_id);
        if let Some(room) = room {
            room.forget_session(session_id);
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
        let states: Vec<ProcessState> = self.all().iter().map(|r| r.process_state()).collect();
        let mut running: Option<(std::time::Duration, usize)> = None;
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
            room.stop().await;
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
        let agent = PerRoomAgent::new(spec, root.clone());
        let a = agent.room(&root.join("room-a")).unwrap();
        // A folder below a room's (`{room}/sub`) is that room's.
        assert!(Arc::ptr_eq(
            &a,
            &agent.room(&root.join("room-a/sub")).unwrap()
        ));
        let b = agent.room(&root.join("room-b")).unwrap();
        assert!(!Arc::ptr_eq(&a, &b));
        let mounts = |room: &SupervisedAgent| {
            let spec = room.spec();
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
