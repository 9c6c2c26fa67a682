//! The agent process pool: at most `max_running` agent processes at once, and an idle
//! timeout after which a process is stopped. Local models need memory; a deployment with
//! several agents on one machine runs only as many as it can hold.
//!
//! A turn holds a [`Lease`] on its agent from before its session is opened until it ends.
//! An agent with a lease, or whose process runs, occupies a slot. When every slot is taken,
//! the least recently used agent without a lease is stopped to make room; when all of them
//! have leases, the turn waits until one ends. A stopped agent is started again by its next
//! turn, which gets its sessions back the way `docs/continuity.md` describes. See
//! `docs/pool.md`.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::Notify;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::agent::AgentPort;
use crate::model::agent::ProcessState;
use crate::model::ids::AgentId;

/// The pool's limits, from the `[pool]` config table.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PoolSettings {
    /// Most agent processes running at once (`None`: no limit).
    pub max_running: Option<usize>,
    /// How long a process may go without a turn before it is stopped (`None`: never).
    pub idle_stop: Option<Duration>,
}

/// What the pool knows of one agent.
struct Slot {
    /// The agent's display name, for the room.
    name: String,
    /// The agent's process.
    port: Arc<dyn AgentPort>,
    /// Turns holding a lease on it.
    leases: usize,
    /// When its last lease ended (or the pool learnt of it): the LRU order.
    last_used: Instant,
}

/// The pool's bookkeeping, behind one lock never held across an await.
#[derive(Default)]
struct Slots {
    /// Every agent, by ID.
    agents: HashMap<AgentId, Slot>,
    /// Agents being stopped to make room or for idleness: they still hold their slot, and
    /// nobody else picks them.
    stopping: HashSet<AgentId>,
}

impl Slots {
    fn occupies(&self, id: &AgentId) -> bool {
        self.agents
            .get(id)
            .is_some_and(|s| s.leases > 0 || s.port.process_state().is_running())
    }
}

/// The agent processes of one gateway and the slots they run in.
pub struct Pool {
    /// Its limits.
    settings: PoolSettings,
    /// Its bookkeeping.
    slots: Mutex<Slots>,
    /// Woken when a lease ends or a process stops: a waiting turn looks again.
    freed: Notify,
}

/// Where an agent stands, for `!agents`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AgentState {
    /// The agent's ID.
    pub agent_id: AgentId,
    /// Its process.
    pub process: ProcessState,
    /// Turns running on it now.
    pub turns: usize,
}

/// Why a turn waits for a slot, told to the room once.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Waiting {
    /// The limit.
    pub max_running: usize,
    /// The agents holding the slots, all of them busy with a turn, by display name.
    pub busy: Vec<String>,
}

/// A turn's hold on its agent: while it lives, the agent is not stopped for idleness or to
/// make room. Dropping it ends the hold.
pub struct Lease {
    pool: Arc<Pool>,
    agent_id: AgentId,
}

impl Drop for Lease {
    fn drop(&mut self) {
        {
            let mut slots = self.pool.slots.lock().expect("pool lock poisoned");
            if let Some(slot) = slots.agents.get_mut(&self.agent_id) {
                slot.leases = slot.leases.saturating_sub(1);
                slot.last_used = Instant::now();
            }
        }
        self.pool.freed.notify_waiters();
    }
}

impl Pool {
    /// A pool for `agents` (ID, display name, process).
    pub fn new(
        settings: PoolSettings,
        agents: Vec<(AgentId, String, Arc<dyn AgentPort>)>,
    ) -> Arc<Self> {
        let now = Instant::now();
        let agents = agents
            .into_iter()
            .map(|(id, name, port)| {
                let slot = Slot {
                    name,
                    port,
                    leases: 0,
                    last_used: now,
                };
                (id, slot)
            })
            .collect();
        Arc::new(Self {
            settings,
            slots: Mutex::new(Slots {
                agents,
                stopping: HashSet::new(),
            }),
            freed: Notify::new(),
        })
    }

    /// A lease on `agent_id` for one turn. When every slot is busy, `on_wait` is called
    /// once (to tell the room) and the lease comes when a slot frees.
    pub async fn acquire(
        self: &Arc<Self>,
        agent_id: &AgentId,
        on_wait: impl AsyncFnOnce(Waiting),
    ) -> Lease {
        let mut on_wait = Some(on_wait);
        loop {
            let freed = self.freed.notified();
            tokio::pin!(freed);
            freed.as_mut().enable();
            let decision = self.try_acquire(agent_id);
            match decision {
                Decision::Granted => {
                    return Lease {
                        pool: self.clone(),
                        agent_id: agent_id.clone(),
                    };
                }
                Decision::Evict(victim) => {
                    tracing::info!(agent = %victim, for_agent = %agent_id, "stopping the least recently used idle agent to make room");
                    self.stop(&victim).await;
                }
                Decision::Wait(waiting) => {
                    if let Some(tell) = on_wait.take() {
                        tracing::info!(agent = %agent_id, busy = %waiting.busy.join(", "), "every agent slot is busy; the turn waits");
                        tell(waiting).await;
                    }
                    freed.await;
                }
                Decision::Hold => freed.await,
            }
        }
    }

    fn try_acquire(&self, agent_id: &AgentId) -> Decision {
        let mut slots = self.slots.lock().expect("pool lock poisoned");
        // An agent being stopped comes back once it has stopped.
        let stopping = slots.stopping.contains(agent_id);
        let occupied: Vec<AgentId> = slots
            .agents
            .keys()
            .filter(|id| *id != agent_id && slots.occupies(id))
            .cloned()
            .collect();
        let within_limit = self
            .settings
            .max_running
            .is_none_or(|max| occupied.len() < max);
        if !stopping && (slots.occupies(agent_id) || within_limit) {
            if let Some(slot) = slots.agents.get_mut(agent_id) {
                slot.leases += 1;
            }
            return Decision::Granted;
        }
        if stopping {
            return Decision::Hold;
        }
        let victim = occupied
            .iter()
            .filter(|id| !slots.stopping.contains(*id))
            .filter_map(|id| slots.agents.get(id).map(|s| (id, s)))
            .filter(|(_, s)| s.leases == 0)
            .min_by_key(|(_, s)| s.last_used)
            .map(|(id, _)| id.clone());
        match victim {
            Some(victim) => {
                slots.stopping.insert(victim.clone());
                Decision::Evict(victim)
            }
            None => Decision::Wait(Waiting {
                max_running: self.settings.max_running.unwrap_or(0),
                busy: occupied
                    .iter()
                    .filter_map(|id| slots.agents.get(id).map(|s| s.name.clone()))
                    .collect(),
            }),
        }
    }

    /// Stops `agent_id`'s process (already marked as stopping) and frees its slot.
    async fn stop(&self, agent_id: &AgentId) {
        let port = self
            .slots
            .lock()
            .expect("pool lock poisoned")
            .agents
            .get(agent_id)
            .map(|s| s.port.clone());
        if let Some(port) = port {
            port.stop().await;
        }
        self.slots
            .lock()
            .expect("pool lock poisoned")
            .stopping
            .remove(agent_id);
        self.freed.notify_waiters();
    }

    /// Stops the processes that have had no turn for `idle_stop`, until `shutdown`.
    pub async fn run_idle_stops(self: Arc<Self>, shutdown: CancellationToken) {
        let Some(idle) = self.settings.idle_stop else {
            return;
        };
        let every = (idle / 4).clamp(Duration::from_millis(200), Duration::from_secs(30));
        loop {
            tokio::select! {
                _ = shutdown.cancelled() => return,
                _ = tokio::time::sleep(every) => {}
            }
            for agent_id in self.idle_for(idle) {
                tracing::info!(agent = %agent_id, idle_for = ?idle, "stopping an idle agent process");
                self.stop(&agent_id).await;
            }
        }
    }

    /// The agents whose process runs without a lease since `idle` ago; marks them stopping.
    fn idle_for(&self, idle: Duration) -> Vec<AgentId> {
        let mut slots = self.slots.lock().expect("pool lock poisoned");
        let now = Instant::now();
        let idle: Vec<AgentId> = slots
            .agents
            .iter()
            .filter(|(id, s)| {
                s.leases == 0
                    && !slots.stopping.contains(*id)
                    && now.duration_since(s.last_used) >= idle
                    && s.port.process_state().is_running()
            })
            .map(|(id, _)| id.clone())
            .collect();
        slots.stopping.extend(idle.iter().cloned());
        idle
    }

    /// Where every agent stands, sorted by ID.
    pub fn states(&self) -> Vec<AgentState> {
        let slots = self.slots.lock().expect("pool lock poisoned");
        let mut states: Vec<AgentState> = slots
            .agents
            .iter()
            .map(|(id, s)| AgentState {
                agent_id: id.clone(),
                process: s.port.process_state(),
                turns: s.leases,
            })
            .collect();
        states.sort_by(|a, b| a.agent_id.cmp(&b.agent_id));
        states
    }

    /// Its limits.
    pub fn settings(&self) -> PoolSettings {
        self.settings
    }
}

/// What [`Pool::try_acquire`] decided.
enum Decision {
    /// The lease is taken.
    Granted,
    /// Stop this idle agent, then look again.
    Evict(AgentId),
    /// Wait for a slot to free.
    Wait(Waiting),
    /// Wait, without a word, for the agent itself to finish stopping (a matter of
    /// seconds); then it starts again.
    Hold,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::fakes::{FakeAgent, Script};

    fn pool(max: Option<usize>, idle: Option<Duration>) -> (Arc<Pool>, Vec<Arc<FakeAgent>>) {
        let agents: Vec<Arc<FakeAgent>> = (0..3)
            .map(|_| FakeAgent::new(Script::Chunks(vec![], Duration::ZERO)))
            .collect();
        let ports = agents
            .iter()
            .enumerate()
            .map(|(i, a)| {
                let port = a.clone() as Arc<dyn AgentPort>;
                (AgentId::new(format!("a{i}")), format!("Agent {i}"), port)
            })
            .collect();
        for a in &agents {
            a.set_running(false);
        }
        let settings = PoolSettings {
            max_running: max,
            idle_stop: idle,
        };
        (Pool::new(settings, ports), agents)
    }

    async fn no_wait(_: Waiting) {
        panic!("should not wait");
    }

    #[tokio::test]
    async fn without_a_limit_every_agent_gets_a_lease_at_once() {
        let (pool, agents) = pool(None, None);
        let _a = pool.acquire(&AgentId::from("a0"), no_wait).await;
        agents[0].set_running(true);
        let _b = pool.acquire(&AgentId::from("a1"), no_wait).await;
        let _c = pool.acquire(&AgentId::from("a2"), no_wait).await;
        assert_eq!(pool.states().iter().map(|s| s.turns).sum::<usize>(), 3);
    }

    #[tokio::test]
    async fn at_the_limit_the_least_recently_used_idle_agent_is_stopped() {
        let (pool, agents) = pool(Some(2), None);
        for id in ["a0", "a1"] {
            drop(pool.acquire(&AgentId::from(id), no_wait).await);
            agents[id[1..].parse::<usize>().unwrap()].set_running(true);
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        // a0 was used first: it makes room for a2.
        let _lease = pool.acquire(&AgentId::from("a2"), no_wait).await;
        assert_eq!(agents[0].stops(), 1);
        assert_eq!(agents[1].stops(), 0);
    }

    #[tokio::test]
    async fn when_every_slot_is_busy_the_turn_waits_and_is_told_once() {
        let (pool, agents) = pool(Some(1), None);
        let busy = pool.acquire(&AgentId::from("a0"), no_wait).await;
        agents[0].set_running(true);
        let told = Arc::new(Mutex::new(Vec::new()));
        let waiter = {
            let (pool, told) = (pool.clone(), told.clone());
            tokio::spawn(async move {
                let _lease = pool
                    .acquire(&AgentId::from("a1"), async |w: Waiting| {
                        told.lock().unwrap().push(w)
                    })
                    .await;
            })
        };
        tokio::time::sleep(Duration::from_millis(100)).await;
        assert!(!waiter.is_finished(), "a1 must wait while a0 works");
        assert_eq!(
            *told.lock().unwrap(),
            vec![Waiting {
                max_running: 1,
                busy: vec!["Agent 0".into()]
            }]
        );
        drop(busy);
        tokio::time::timeout(Duration::from_secs(2), waiter)
            .await
            .expect("a1 runs once a0's turn ended")
            .unwrap();
        assert_eq!(agents[0].stops(), 1, "a0, now idle, made room");
        assert_eq!(told.lock().unwrap().len(), 1);
    }

    #[tokio::test]
    async fn a_turn_for_an_agent_being_stopped_waits_silently_for_it_to_stop() {
        let (pool, agents) = pool(Some(1), None);
        agents[0].set_running(true);
        // a0 is picked as idle and is being stopped (not done yet).
        assert_eq!(pool.idle_for(Duration::ZERO), vec![AgentId::from("a0")]);
        let waiter = {
            let pool = pool.clone();
            tokio::spawn(async move { drop(pool.acquire(&AgentId::from("a0"), no_wait).await) })
        };
        tokio::time::sleep(Duration::from_millis(100)).await;
        assert!(!waiter.is_finished(), "it waits for the stop to finish");
        pool.stop(&AgentId::from("a0")).await;
        tokio::time::timeout(Duration::from_secs(2), waiter)
            .await
            .expect("the lease comes once the agent has stopped")
            .unwrap();
        assert_eq!(agents[0].stops(), 1);
    }

    #[tokio::test]
    async fn an_agent_idle_too_long_is_stopped_and_one_with_a_turn_is_not() {
        let (pool, agents) = pool(None, Some(Duration::from_millis(300)));
        let working = pool.acquire(&AgentId::from("a1"), no_wait).await;
        for a in &agents[..2] {
            a.set_running(true);
        }
        let shutdown = CancellationToken::new();
        let task = tokio::spawn(pool.clone().run_idle_stops(shutdown.clone()));
        tokio::time::sleep(Duration::from_millis(900)).await;
        assert_eq!(agents[0].stops(), 1, "idle: stopped");
        assert_eq!(agents[1].stops(), 0, "working: kept");
        assert_eq!(agents[2].stops(), 0, "never started: nothing to stop");
        drop(working);
        shutdown.cancel();
        task.await.unwrap();
    }
}
