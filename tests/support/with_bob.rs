//! A room with two people: Alice, who may prompt and approve, and Bob, who may prompt but
//! (unless a test says otherwise) not approve.

use matrix_sdk::room::Room;

use super::{AgentSpec, Env, GatewayProcess, Person, Synapse, SynapseOptions};

/// The agent's user ID in these environments.
pub const AGENT: &str = "@demo:localhost";

/// A homeserver, a gateway with the demo agent (`demo_args` on its command line,
/// `agent_toml` in its `[[agents]]` table, `extra_toml` at the top of the config) whose
/// approvers are `approvers` (by localpart), Alice in the environment and Bob returned.
pub async fn start_approving(
    extra_toml: &str,
    demo_args: &[&str],
    agent_toml: &str,
    approvers: &[&str],
) -> (Env, Person) {
    let approver_ids: Vec<String> = approvers
        .iter()
        .map(|a| format!("@{a}:localhost"))
        .collect();
    let hs = Synapse::start(SynapseOptions::default()).await;
    let alice_id = hs.register("alice", "alice-password").await;
    let bob_id = hs.register("bob", "bob-password").await;
    let agent = hs.register("demo", "demo-password").await;
    assert_eq!(agent, AGENT);
    let gw = GatewayProcess::start_with_approvers(
        &hs.url,
        &[alice_id.as_str(), bob_id.as_str()],
        Some(&approver_ids.iter().map(String::as_str).collect::<Vec<_>>()),
        &[AgentSpec {
            id: "demo".into(),
            user_id: agent.clone(),
            password: "demo-password".into(),
            demo_args: demo_args.iter().map(|a| a.to_string()).collect(),
            agent_toml: agent_toml.to_owned(),
        }],
        extra_toml,
    );
    let alice = Person::login(&hs.url, &alice_id, "alice-password").await;
    let bob = Person::login(&hs.url, &bob_id, "bob-password").await;
    (
        Env {
            hs,
            gw,
            alice,
            agents: vec![agent.clone()],
            agent,
        },
        bob,
    )
}

/// A room with Alice, the agent and Bob.
pub async fn room_with_bob(env: &Env, bob: &Person) -> (Room, Room) {
    let room = env.room_with_agent(false).await;
    env.alice.invite(&room, &bob.user_id).await;
    let bobs = bob.join(room.room_id().as_str()).await;
    (room, bobs)
}
