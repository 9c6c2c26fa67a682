//! A real third-party agent through the gateway, for the tests that run one: the homeserver,
//! the gateway with the agent, Alice (an admin) and Bob (who may prompt and approve, but is
//! no admin), and what every such test does (a poll, a command allowed from it).

use matrix_sdk::room::Room;

use super::{AgentSpec, Env, GatewayProcess, Person, Synapse, SynapseOptions};

/// A home of the agent's own, outside /tmp (which the sandbox replaces); removed when
/// dropped (an agent's home holds its packages' caches, a few hundred megabytes), so it
/// must live as long as the gateway that runs the agent: [`Real::with_home`].
pub fn agent_home(agent: &str) -> AgentHome {
    AgentHome(
        tempfile::Builder::new()
            .prefix(&format!("sidekicks-{agent}-home-"))
            .tempdir_in(env!("CARGO_TARGET_TMPDIR"))
            .unwrap(),
    )
}

/// An agent's home folder, removed when dropped; reads as its path.
pub struct AgentHome(tempfile::TempDir);

impl std::ops::Deref for AgentHome {
    type Target = std::path::Path;
    fn deref(&self) -> &std::path::Path {
        self.0.path()
    }
}

impl std::fmt::Debug for AgentHome {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.0.path().fmt(f)
    }
}

/// The environment of one real agent, and Bob.
pub struct Real {
    /// The homeserver, the gateway, Alice and the agent.
    pub env: Env,
    /// Bob: he may prompt and approve, but is no admin.
    pub bob: Person,
    /// The agents' homes, removed with the environment.
    homes: Vec<AgentHome>,
}

impl std::ops::Deref for Real {
    type Target = Env;
    fn deref(&self) -> &Env {
        &self.env
    }
}

impl std::ops::DerefMut for Real {
    fn deref_mut(&mut self) -> &mut Env {
        &mut self.env
    }
}

/// A gateway running the real agent `id` (its `[[agents]]` lines in `agent_toml`); Alice
/// and Bob may prompt and approve, Alice alone is an admin.
pub async fn start(id: &str, agent_toml: String) -> Real {
    let hs = Synapse::start(SynapseOptions::default()).await;
    let alice_id = hs.register("alice", "alice-password").await;
    let bob_id = hs.register("bob", "bob-password").await;
    let password = format!("{id}-password");
    let agent = hs.register(id, &password).await;
    let people = [alice_id.as_str(), bob_id.as_str()];
    let gw = GatewayProcess::start_with_approvers(
        &hs.url,
        &people,
        Some(&people),
        &[AgentSpec {
            id: id.into(),
            user_id: agent.clone(),
            password,
            demo_args: vec![],
            agent_toml,
        }],
        &format!("access.admins = [{alice_id:?}]\n[timeouts]\nnew_session_secs = 120"),
    );
    let alice = Person::login(&hs.url, &alice_id, "alice-password").await;
    let bob = Person::login(&hs.url, &bob_id, "bob-password").await;
    Real {
        env: Env {
            hs,
            gw,
            alice,
            agents: vec![agent.clone()],
            agent,
        },
        bob,
        homes: Vec::new(),
    }
}

impl Real {
    /// Keeps `home` (the agent's) until the environment is dropped.
    pub fn with_home(mut self, home: AgentHome) -> Self {
        self.homes.push(home);
        self
    }

    /// A room Alice made with the agent and Bob in it; Bob's view of it.
    pub async fn room_with_bob(&self) -> (Room, Room) {
        let room = self.room_with_agent(false).await;
        self.alice.invite(&room, &self.bob.user_id).await;
        let bobs = self.bob.join(room.room_id().as_str()).await;
        (room, bobs)
    }
}

/// Waits for the agent's `n`-th permission poll (from 0), with its choices (the agent's
/// options, which vary with the call, and Stop) pre-reacted.
pub async fn poll(env: &Env, room: &Room, n: usize) -> String {
    env.open_poll_any(room, "🔐", n).await
}

/// Asks agent `name` to run a command writing `made.txt`; checks it waits for the poll (the
/// file is not there while it is open), allows it, and checks the command ran; returns the
/// poll.
pub async fn run_allowed(env: &Env, room: &Room, name: &str, n: usize) -> String {
    let command = format!("echo made-by-{name} > made.txt && echo done");
    let made = env.gw.workspace(name).join("made.txt");
    env.alice
        .send(room, &format!("Please RUN: {command}"))
        .await;
    let asked = poll(env, room, n).await;
    assert!(!made.exists(), "the command ran before anyone answered");
    env.alice.react(room, &asked, "✅").await;
    let said = env
        .reply_where(room, "the command's result", |t| {
            t.contains("The command ran: done")
        })
        .await;
    assert!(said.contains("The command ran: done"), "{said}");
    assert_eq!(
        std::fs::read_to_string(&made).unwrap(),
        format!("made-by-{name}\n")
    );
    asked
}
