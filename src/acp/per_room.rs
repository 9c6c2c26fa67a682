//! One agent process per room (`[agents.runner] per_room = true`, the container runner with
//! `{room}` in the workspace): each room's conversations run in a process of their own, in a
//! container that mounts only that room's folder, so one conversation's agent cannot see
//! another's files. Each room's process is supervised as a whole agent's is ([`Supervised`]:
//! started at its first session, restarted with back-off); to the core the rooms are still
//! one agent, which the pool counts once and stops as a whole.
//!
//! What belongs to a folder (a new, reopened or listed session) goes to that folder's process,
//! started first; what belongs to a session goes to the process that opened it, through the
//! session's handle ([`RoomSession`] adds the room's use to it). What the
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
use std::sync::{Arc, Mutex, Weak};
use std::time::{Duration, Instant};

use async_trait::async_trait;

use super::process::ProcessSpec;
use super::supervisor::{Supervised, SupervisedAgent};
use crate::core::agent::{AgentPort, AgentSession, NewSession, PlaceWait, PlaceWaits, SessionPort};
use crate::model::agent::{
    AgentError, ConfigChoice, ConfigOption, ProcessState, Reopen, Steered, TurnEnd,
};
use crate::model::agent::{AuthMethodInfo, SessionListing, SessionTools};
use crate::model::ids::SessionId;
use crate::model::media::{PromptBlock, PromptSupport};
use crate::model::modes::KnownModes;
use crate::workspace::folder::Folder;

/// One room's process, and how it is used.
struct Room {
    /// Its folder (the mount of its container).
    folder: PathBuf,
    /// The process.
    process: Arc<SupervisedAgent>,
    /// How it is used: one lock for the use and the idle stop's claim, so the two never
    /// cross.
    usage: Mutex<Usage>,
    /// Held while its process is stopped for being idle, and while it is started: a turn
    /// that comes in the middle of a stop waits for it, then starts the process again.
    gate: tokio::sync::Mutex<()>,
}

/// How a room's process is used.
#[derive(Debug)]
struct Usage {
    /// Turns running in it now: a busy room is never stopped for being idle.
    busy: usize,
    /// When it was last used.
    used: Instant,
    /// Claimed by the idle stop: it is being stopped, and no use may begin until it is.
    stopping: bool,
}

impl Usage {
    fn new(now: Instant) -> Self {
        Self {
            busy: 0,
            used: now,
            stopping: false,
        }
    }

    /// A use at `now`, unless the process is being stopped (`false`: it is no longer
    /// there to be used).
    fn begin(&mut self, now: Instant) -> bool {
        if !self.stopping {
            self.used = now;
        }
        !self.stopping
    }

    /// Claims the process for the idle stop when it has had no use for `idle` at `now`;
    /// from then on, until [`Usage::stopped`], no use begins.
    fn claim_idle(&mut self, idle: Duration, now: Instant) -> bool {
        self.stopping =
            self.stopping || (self.busy == 0 && now.saturating_duration_since(self.used) >= idle);
        self.stopping
    }

    /// The idle stop is over: the next use starts the process again.
    fn stopped(&mut self, now: Instant) {
        self.stopping = false;
        self.used = now;
    }
}

impl Room {
    fn usage(&self) -> std::sync::MutexGuard<'_, Usage> {
        self.usage.lock().expect("room use poisoned")
    }

    /// Notes a use; `false` while its process is being stopped for being idle.
    fn touch(&self) -> bool {
        self.usage().begin(Instant::now())
    }
}

/// A turn running in a room: counted while it lasts; its end is told to rooms waiting for
/// a place.
struct Busy(Arc<Room>, Arc<tokio::sync::Notify>);

impl Busy {
    /// The turn's use of `room`; `Err` when its process is being stopped for being idle
    /// (the turn's session goes with it).
    fn new(room: Arc<Room>, ended: Arc<tokio::sync::Notify>) -> Result<Self, AgentError> {
        let mut usage = room.usage();
        if !usage.begin(Instant::now()) {
            return Err(AgentError::Exited {
                status: "stopped for having no use".into(),
            });
        }
        usage.busy += 1;
        drop(usage);
        Ok(Self(room, ended))
    }
}

impl Drop for Busy {
    fn drop(&mut self) {
        let mut usage = self.0.usage();
        usage.busy -= 1;
        usage.used = Instant::now();
        drop(usage);
        self.1.notify_waiters();
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
    /// The room each open session belongs to: a fork is made where its source's history is.
    sessions: Arc<SessionRooms>,
    /// The room process that started last, which answers what the agent advertises.
    last: Mutex<Option<Arc<SupervisedAgent>>>,
    /// How many room processes may run, and how long one may go unused.
    limits: RoomLimits,
    /// Held while a room looks for a place under `max_running` and, having one, starts its
    /// process: two rooms starting at once never both take the last place.
    starting: tokio::sync::Mutex<()>,
    /// Told when a turn ends: a room waiting for a place looks again.
    turn_ended: Arc<tokio::sync::Notify>,
}

/// The limits on one agent's room processes.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct RoomLimits {
    /// A room's process unused this long is stopped (`pool.idle_stop_secs`); `None`: never.
    pub idle_stop: Option<Duration>,
    /// The most room processes running at once (`[agents.runner] max_rooms`; 0: no limit).
    /// To start another, the one used least recently that runs no turn is stopped; when
    /// every one runs a turn (or was used in the last few seconds), the new room waits.
    pub max_running: usize,
}

impl PerRoomAgent {
    /// An agent started from `spec`, one process per folder below `root`; none starts yet.
    /// With an idle stop, a room's process unused that long is stopped (a task runs for
    /// that while the agent is held: call this inside the runtime).
    pub fn new(spec: ProcessSpec, root: PathBuf, limits: RoomLimits) -> Arc<Self> {
        let agent = Arc::new(Self {
            spec,
            root,
            rooms: Mutex::default(),
            sessions: Arc::default(),
            last: Mutex::default(),
            limits,
            starting: tokio::sync::Mutex::new(()),
            turn_ended: Arc::default(),
        });
        if let Some(idle) = limits.idle_stop {
            tokio::spawn(stop_idle_rooms(Arc::downgrade(&agent), idle));
        }
        agent
    }

    /// Stops the process of each room that has had no use for `idle`, and forgets its
    /// sessions (a turn there opens one again).
    async fn stop_idle(&self, idle: Duration) {
        for room in self.all() {
            if !is_running(&room) {
                continue;
            }
            // The claim and a use take the same lock: a turn that found its session alive
            // has made the room used, and one that comes after the claim finds it gone.
            let _gate = room.gate.lock().await;
            if !room.usage().claim_idle(idle, Instant::now()) {
                continue;
            }
            tracing::info!(agent = %self.spec.agent_id, folder = %room.folder.display(), "a room's agent process had no use; stopping it");
            self.stop_claimed(&room).await;
        }
    }

    /// Stops `room`'s process, claimed for stopping (its gate held), and forgets its
    /// sessions (a turn there opens one again).
    async fn stop_claimed(&self, room: &Arc<Room>) {
        room.process.stop().await;
        (self.sessions.lock()).retain(|_, r| !Arc::ptr_eq(r, room));
        room.usage().stopped(Instant::now());
    }

    /// Makes a place for `room`'s process to start under `max_running`: stops the running
    /// room process used least recently that runs no turn (and was not just used), or waits
    /// until one is so, saying so on `waits` and giving up when it says to. Returns the hold
    /// on starting, to keep until it has started (two rooms never both take the last place).
    async fn make_place(
        &self,
        room: &Arc<Room>,
        waits: Option<PlaceWaits>,
    ) -> Result<Option<tokio::sync::MutexGuard<'_, ()>>, AgentError> {
        let max = self.limits.max_running;
        if max == 0 || is_running(room) {
            return Ok(None);
        }
        let (mut tell, give_up) = match waits {
            Some(waits) => (Some(waits.tell), Some(waits.give_up)),
            None => (None, None),
        };
        let mut logged = false;
        loop {
            // Asked before looking, so a turn ending meanwhile is not missed.
            let ended = self.turn_ended.notified();
            let starting = self.starting.lock().await;
            let mut running: Vec<Arc<Room>> = (self.all().into_iter())
                .filter(|r| !Arc::ptr_eq(r, room) && is_running(r))
                .collect();
            if running.len() < max {
                return Ok(Some(starting));
            }
            running.sort_by_key(|r| r.usage().used);
            for other in running {
                // A room being started or stopped is in use.
                let Ok(_gate) = other.gate.try_lock() else {
                    continue;
                };
                if !other.usage().claim_idle(JUST_USED, Instant::now()) {
                    continue;
                }
                tracing::info!(agent = %self.spec.agent_id, folder = %other.folder.display(), max, "stopping the room's agent process used least recently, to make a place for another room's");
                self.stop_claimed(&other).await;
                return Ok(Some(starting));
            }
            // Waited for without the hold: other rooms look (and are told) too.
            drop(starting);
            if !logged {
                tracing::info!(agent = %self.spec.agent_id, folder = %room.folder.display(), max, "every room's agent process runs a turn or was just used: this room waits for one to be free");
                logged = true;
            }
            if let Some(tell) = tell.take() {
                // The core may have stopped listening: nothing to tell then.
                let _ = tell.send(PlaceWait { max_rooms: max });
            }
            // Looked at again now and then, should a stop or a crash free a place unseen.
            tokio::select! {
                _ = tokio::time::timeout(Duration::from_secs(1), ended) => {}
                () = given_up(give_up.as_ref()) => {
                    tracing::info!(agent = %self.spec.agent_id, folder = %room.folder.display(), "a room's wait for a place was given up");
                    return Err(AgentError::Failed("the wait for a free place was given up".into()));
                }
            }
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
                usage: Mutex::new(Usage::new(Instant::now())),
                gate: tokio::sync::Mutex::new(()),
            })
        });
        Ok(room.clone())
    }

    /// The room of `folder`, its process running, noted as the last one asked for. Waits
    /// for an idle stop of it under way to end, then starts it again; a wait for a place
    /// under `max_rooms` is said on `waits`, and given up when they say so.
    async fn live(
        &self,
        folder: &Path,
        waits: Option<PlaceWaits>,
    ) -> Result<Arc<Room>, AgentError> {
        let room = self.room(folder)?;
        let gate = room.gate.lock().await;
        room.touch();
        let place = self.make_place(&room, waits).await?;
        // A whole agent's process never waits for a place: nothing to hear from it.
        (room.process)
            .ensure_running(folder, PlaceWaits::unheard())
            .await?;
        drop((place, gate));
        *self.last.lock().expect("last lock poisoned") = Some(room.process.clone());
        Ok(room)
    }

    fn last(&self) -> Option<Arc<SupervisedAgent>> {
        self.last.lock().expect("last lock poisoned").clone()
    }

    /// Notes that `room` holds `session`, just opened; its handle counts its turns as the
    /// room's use.
    fn held_by(&self, room: Arc<Room>, mut session: NewSession) -> NewSession {
        self.sessions
            .lock()
            .insert(session.id().clone(), room.clone());
        session.session = Arc::new(RoomSession {
            inner: session.session,
            room,
            rooms: self.sessions.clone(),
            turn_ended: self.turn_ended.clone(),
        });
        session
    }

    /// The room that holds session `id`.
    fn holding(&self, id: &SessionId) -> Result<Arc<Room>, AgentError> {
        (self.sessions.lock().get(id).cloned())
            .ok_or_else(|| AgentError::Failed(format!("no process holds session {id}")))
    }

    fn all(&self) -> Vec<Arc<Room>> {
        (self.rooms.lock().expect("rooms lock poisoned"))
            .values()
            .cloned()
            .collect()
    }
}

/// A room's process used this recently is not stopped to make a place for another's: its
/// session was just found alive, and its turn is about to be sent.
const JUST_USED: Duration = Duration::from_secs(5);

/// Resolves when `give_up` is cancelled; never without one.
async fn given_up(give_up: Option<&tokio_util::sync::CancellationToken>) {
    match give_up {
        Some(token) => token.cancelled().await,
        None => std::future::pending().await,
    }
}

/// Whether `room`'s process runs (a crashed one waiting to be started again does not).
fn is_running(room: &Room) -> bool {
    matches!(room.process.process_state(), ProcessState::Running { .. })
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
        let room = self.live(folder.path(), None).await?;
        let session = room.process.new_session(folder, tools).await?;
        Ok(self.held_by(room, session))
    }

    async fn ensure_running(&self, folder: &Path, waits: PlaceWaits) -> Result<(), AgentError> {
        self.live(folder, Some(waits)).await.map(|_| ())
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
        id: &SessionId,
        folder: &Arc<Folder>,
        tools: Option<&SessionTools>,
    ) -> Result<NewSession, AgentError> {
        let room = self.live(folder.path(), None).await?;
        let session = (room.process).reopen_session(id, folder, tools).await?;
        Ok(self.held_by(room, session))
    }

    fn forks(&self) -> bool {
        self.last().is_some_and(|r| r.forks())
    }

    async fn fork_session(
        &self,
        source: &SessionId,
        folder: &Arc<Folder>,
        tools: Option<&SessionTools>,
    ) -> Result<NewSession, AgentError> {
        // A session forks in the process that holds it: its history is there.
        let room = self.holding(source)?;
        let session = (room.process).fork_session(source, folder, tools).await?;
        Ok(self.held_by(room, session))
    }

    fn steers(&self) -> bool {
        self.last().is_some_and(|r| r.steers())
    }

    async fn list_sessions(&self, cwd: &Path) -> Result<Vec<SessionListing>, AgentError> {
        self.live(cwd, None).await?.process.list_sessions(cwd).await
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

    fn stderr_tail(&self) -> String {
        self.last().map(|r| r.stderr_tail()).unwrap_or_default()
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
        self.sessions.lock().clear();
    }
}

/// The room each open session belongs to.
#[derive(Default)]
struct SessionRooms(Mutex<HashMap<SessionId, Arc<Room>>>);

impl SessionRooms {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<SessionId, Arc<Room>>> {
        self.0.lock().expect("sessions lock poisoned")
    }
}

/// A session of a room's process: a turn in it is a use of the room (which is not stopped
/// for being idle while it runs), and so is finding it alive (asked before a turn is sent).
struct RoomSession {
    /// The session, in the room's process.
    inner: AgentSession,
    /// Its room.
    room: Arc<Room>,
    /// Every open session's room, which it leaves when it is forgotten or closed.
    rooms: Arc<SessionRooms>,
    /// Told when a turn ends: a room waiting for a place looks again.
    turn_ended: Arc<tokio::sync::Notify>,
}

#[async_trait]
impl SessionPort for RoomSession {
    fn id(&self) -> &SessionId {
        self.inner.id()
    }

    async fn prompt(&self, blocks: Vec<PromptBlock>) -> Result<TurnEnd, AgentError> {
        let _busy = Busy::new(self.room.clone(), self.turn_ended.clone())?;
        self.inner.prompt(blocks).await
    }

    fn alive(&self) -> bool {
        // A use of its room, so the room is not stopped for being idle between this answer
        // and the turn.
        self.room.touch() && self.inner.alive()
    }

    fn forget(&self) {
        self.rooms.lock().remove(self.id());
        self.inner.forget();
    }

    async fn close(&self) {
        self.rooms.lock().remove(self.id());
        self.inner.close().await;
    }

    async fn steer(&self, blocks: Vec<PromptBlock>) -> Result<Steered, AgentError> {
        self.inner.steer(blocks).await
    }

    async fn stop_task(&self, task_id: &str) -> Result<bool, AgentError> {
        self.inner.stop_task(task_id).await
    }

    async fn cancel(&self) -> Result<(), AgentError> {
        self.inner.cancel().await
    }

    async fn set_mode(&self, mode_id: &str) -> Result<(), AgentError> {
        self.inner.set_mode(mode_id).await
    }

    async fn set_option(
        &self,
        option_id: &str,
        value: ConfigChoice,
    ) -> Result<Vec<ConfigOption>, AgentError> {
        self.inner.set_option(option_id, value).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_idle_stop_and_a_use_never_cross() {
        let idle = Duration::from_secs(60);
        let t0 = Instant::now();
        let later = t0 + idle;
        // Used within `idle`: not claimed.
        let mut usage = Usage::new(t0);
        assert!(usage.begin(t0 + Duration::from_secs(30)));
        assert!(!usage.claim_idle(idle, later));
        // A turn running: never claimed, however long it runs.
        usage.busy = 1;
        assert!(!usage.claim_idle(idle, later + idle * 10));
        usage.busy = 0;
        // Unused for `idle`: claimed, and from then on no use begins (a turn that looks
        // finds its session gone and opens one again, which waits for the stop).
        assert!(usage.claim_idle(idle, later + idle));
        assert!(!usage.begin(later + idle));
        assert!(!usage.begin(later + idle * 2), "still stopping");
        // Stopped: the next use begins, and the room is not idle again until `idle` later.
        usage.stopped(later + idle * 2);
        assert!(usage.begin(later + idle * 2));
        assert!(!usage.claim_idle(idle, later + idle * 2));
    }

    #[test]
    fn each_room_folder_has_one_process_whose_container_mounts_only_it() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("work");
        let mut spec = crate::acp::process::tests::spec("true");
        let mut container = crate::acp::container::tests::container(dir.path());
        let home = dir.path().join("home");
        container.read_write = vec![root.clone(), home.clone()];
        spec.container = Some(container);
        spec.home = Some(home.clone());
        let agent = PerRoomAgent::new(spec, root.clone(), RoomLimits::default());
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
                spec.home.clone().unwrap(),
            )
        };
        // Its own folder, and a home of its own made from the agent's: never the agent's
        // home, which every room would share.
        let a_home = home.join("rooms/room-a");
        assert_eq!(
            mounts(&a),
            (
                vec![root.join("room-a"), a_home.clone()],
                root.join("room-a"),
                a_home
            )
        );
        assert_eq!(
            mounts(&b).0,
            vec![root.join("room-b"), home.join("rooms/room-b")]
        );
        // The root itself, and what is outside it, is no room's.
        for outside in [root.clone(), dir.path().join("elsewhere"), root.join("..")] {
            assert!(agent.room(&outside).is_err(), "{}", outside.display());
        }
        assert!(matches!(agent.process_state(), ProcessState::Stopped));
    }
}
