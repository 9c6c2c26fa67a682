//! The integration test harness: a real Synapse, the real gateway binary with the real demo
//! agent, and people with their own Matrix clients.
#![allow(dead_code)]

pub mod gateway;
pub mod person;
pub mod synapse;

use std::time::Duration;

pub use gateway::{AgentSpec, GatewayProcess};
pub use person::{Person, wait_until};
pub use synapse::{Synapse, SynapseOptions};

/// How long a test waits for something the gateway should do.
pub const PATIENCE: Duration = Duration::from_secs(60);

/// A homeserver, a gateway with one demo agent, and Alice (allowed) logged in.
pub struct Env {
    /// The homeserver.
    pub hs: Synapse,
    /// The gateway.
    pub gw: GatewayProcess,
    /// An allowed person.
    pub alice: Person,
    /// The agent's Matrix user ID.
    pub agent: String,
}

impl Env {
    /// Starts everything; `extra_toml` goes at the top of the gateway config.
    pub async fn start(options: SynapseOptions, extra_toml: &str) -> Self {
        let hs = Synapse::start(options).await;
        let alice_id = hs.register("alice", "alice-password").await;
        let agent = hs.register("demo", "demo-password").await;
        let gw = GatewayProcess::start(
            &hs.url,
            &[alice_id.as_str()],
            &[AgentSpec {
                id: "demo".into(),
                user_id: agent.clone(),
                password: "demo-password".into(),
            }],
            extra_toml,
        );
        let alice = Person::login(&hs.url, &alice_id, "alice-password").await;
        Self {
            hs,
            gw,
            alice,
            agent,
        }
    }

    /// A room Alice created and the agent joined.
    pub async fn room_with_agent(&self, encrypted: bool) -> matrix_sdk::room::Room {
        let room = self.alice.create_room(encrypted).await;
        self.alice.invite(&room, &self.agent).await;
        let deadline = tokio::time::Instant::now() + PATIENCE;
        while !self.alice.is_joined(&room, &self.agent).await {
            assert!(
                tokio::time::Instant::now() < deadline,
                "the agent did not join\n{}",
                self.gw.log()
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        room
    }

    /// Sends `prompt` and waits for the agent's reply message to show `expected`; returns
    /// the reply's event ID.
    pub async fn prompt_and_wait(
        &self,
        room: &matrix_sdk::room::Room,
        prompt: &str,
        expected: &str,
    ) -> String {
        let before = self.alice.messages_from(room, &self.agent).len();
        self.alice.send(room, prompt).await;
        wait_until(PATIENCE, &format!("a reply showing {expected:?}"), || {
            self.alice
                .messages_from(room, &self.agent)
                .into_iter()
                .skip(before)
                .find(|m| self.alice.current_text(&m.event_id).as_deref() == Some(expected))
                .map(|m| m.event_id)
        })
        .await
    }
}
