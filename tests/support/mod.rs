//! The integration test harness: a real Synapse, the real gateway binary with the real demo
//! agent, and people with their own Matrix clients.
#![allow(dead_code)]

pub mod agents;
pub mod container;
pub mod gateway;
pub mod model_server;
pub mod person;
pub mod ports;
pub mod postgres;
pub mod procs;
pub mod proxy;
pub mod real;
pub mod runners;
pub mod speech_server;
pub mod sshd;
pub mod store;
pub mod synapse;
pub mod with_bob;

pub use gateway::{AgentSpec, GatewayProcess};
pub use person::{Person, wait_until};
pub use synapse::{Synapse, SynapseOptions};

/// How long a test waits for something the gateway should do.
pub const PATIENCE: std::time::Duration = std::time::Duration::from_secs(60);

/// How the markers of [`Env::settled`] begin: no test's agent says it otherwise.
pub const SETTLED: &str = "(everything before this is answered)";

/// A new marker for [`Env::settled`]: numbered, so no two prompts of a test are the same
/// (tests count the prompts an agent received).
pub fn marker() -> String {
    static NEXT: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(1);
    let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    format!("{SETTLED} #{n}")
}

/// Whether `text` is a marker's answer.
pub fn is_marker(text: &str) -> bool {
    text.starts_with(SETTLED)
}

/// A homeserver, a gateway with one demo agent, and Alice (allowed) logged in.
pub struct Env {
    /// The homeserver.
    pub hs: Synapse,
    /// The gateway.
    pub gw: GatewayProcess,
    /// An allowed person.
    pub alice: Person,
    /// The agent's Matrix user ID (the first agent's, where there are several).
    pub agent: String,
    /// Every agent's Matrix user ID, in the order they were configured.
    pub agents: Vec<String>,
}

impl Env {
    /// Starts everything; `extra_toml` goes at the top of the gateway config.
    pub async fn start(options: SynapseOptions, extra_toml: &str) -> Self {
        Self::start_sharing_keys(options, extra_toml, person::CollectStrategy::AllDevices).await
    }

    /// Like [`Env::start`], with Alice's client sharing room keys following `strategy`.
    pub async fn start_sharing_keys(
        options: SynapseOptions,
        extra_toml: &str,
        strategy: person::CollectStrategy,
    ) -> Self {
        Self::start_with(options, extra_toml, strategy, &[], "").await
    }

    /// Like [`Env::start`], with `demo_args` after `demo-agent` on the agent's command line.
    pub async fn start_with_demo_args(
        options: SynapseOptions,
        extra_toml: &str,
        demo_args: &[&str],
    ) -> Self {
        Self::start_with(
            options,
            extra_toml,
            person::CollectStrategy::AllDevices,
            demo_args,
            "",
        )
        .await
    }

    /// Like [`Env::start`], with `agent_toml` added to the agent's `[[agents]]` table.
    pub async fn start_with_agent_toml(
        options: SynapseOptions,
        extra_toml: &str,
        agent_toml: &str,
    ) -> Self {
        Self::start_with(
            options,
            extra_toml,
            person::CollectStrategy::AllDevices,
            &[],
            agent_toml,
        )
        .await
    }

    /// Several demo agents, each `(id, demo_args)`: its Matrix user is `@id:…` and its
    /// display name `id agent`.
    pub async fn start_with_agents(
        options: SynapseOptions,
        extra_toml: &str,
        agents: &[(&str, &[&str])],
    ) -> Self {
        let hs = Synapse::start(options).await;
        let alice_id = hs.register("alice", "alice-password").await;
        let mut specs = Vec::new();
        for (id, demo_args) in agents {
            let password = format!("{id}-password");
            specs.push(AgentSpec {
                id: id.to_string(),
                user_id: hs.register(id, &password).await,
                password,
                demo_args: demo_args.iter().map(|a| a.to_string()).collect(),
                agent_toml: String::new(),
            });
        }
        let gw = GatewayProcess::start(&hs.url, &[alice_id.as_str()], &specs, extra_toml);
        let alice = Person::login(&hs.url, &alice_id, "alice-password").await;
        Self {
            hs,
            gw,
            alice,
            agent: specs[0].user_id.clone(),
            agents: specs.into_iter().map(|s| s.user_id).collect(),
        }
    }

    /// Like [`Env::start`], with Alice's client sharing keys following `strategy`,
    /// `demo_args` after `demo-agent` and `agent_toml` added to the agent's table.
    pub async fn start_with(
        options: SynapseOptions,
        extra_toml: &str,
        strategy: person::CollectStrategy,
        demo_args: &[&str],
        agent_toml: &str,
    ) -> Self {
        Self::start_full(options, extra_toml, strategy, demo_args, agent_toml, &[]).await
    }

    /// Like [`Env::start_with_agent_toml`], with `envs` in the gateway's environment.
    pub async fn start_with_envs(
        options: SynapseOptions,
        extra_toml: &str,
        agent_toml: &str,
        envs: &[(String, String)],
    ) -> Self {
        let strategy = person::CollectStrategy::AllDevices;
        Self::start_full(options, extra_toml, strategy, &[], agent_toml, envs).await
    }

    async fn start_full(
        options: SynapseOptions,
        extra_toml: &str,
        strategy: person::CollectStrategy,
        demo_args: &[&str],
        agent_toml: &str,
        envs: &[(String, String)],
    ) -> Self {
        let hs = Synapse::start(options).await;
        let alice_id = hs.register("alice", "alice-password").await;
        let agent = hs.register("demo", "demo-password").await;
        let gw = GatewayProcess::start_with_envs(
            &hs.url,
            &[alice_id.as_str()],
            &[AgentSpec {
                id: "demo".into(),
                user_id: agent.clone(),
                password: "demo-password".into(),
                demo_args: demo_args.iter().map(|a| a.to_string()).collect(),
                agent_toml: agent_toml.to_owned(),
            }],
            extra_toml,
            envs,
        );
        let alice =
            Person::login_sharing_keys(&hs.url, &alice_id, "alice-password", strategy).await;
        Self {
            hs,
            gw,
            alice,
            agents: vec![agent.clone()],
            agent,
        }
    }

    /// A room Alice created and every agent joined.
    pub async fn room_with_agents(&self) -> matrix_sdk::room::Room {
        let room = self.alice.create_room(false).await;
        for agent in &self.agents {
            self.alice.invite(&room, agent).await;
        }
        for agent in &self.agents {
            self.alice
                .wait_membership(&room, agent, matrix_sdk::RoomMemberships::JOIN)
                .await;
        }
        room
    }

    /// Waits for the agent's `n`-th poll (from 0) in `room` whose text starts with `head`
    /// (🔐 a permission poll, ❓ a question), with its `keys` choices all pre-reacted by the
    /// agent; returns its event ID.
    pub async fn open_poll(
        &self,
        room: &matrix_sdk::room::Room,
        head: &str,
        n: usize,
        keys: usize,
    ) -> String {
        let id = wait_until(PATIENCE, &format!("{head} poll #{n}"), || {
            self.alice
                .messages_from(room, &self.agent)
                .into_iter()
                .filter(|m| m.replaces.is_none() && m.body.starts_with(head))
                .nth(n)
                .map(|m| m.event_id)
        })
        .await;
        wait_until(PATIENCE, "the agent's reactions on the poll", || {
            let on = self.alice.reactions_on(&id);
            (on.iter().filter(|r| r.sender == self.agent).count() == keys).then_some(())
        })
        .await;
        id
    }

    /// [`Env::open_poll`] for a poll whose number of choices the test does not know (a
    /// real agent's options vary with the call): as many as its numbered lines.
    pub async fn open_poll_any(
        &self,
        room: &matrix_sdk::room::Room,
        head: &str,
        n: usize,
    ) -> String {
        let body = wait_until(PATIENCE, &format!("{head} poll #{n}"), || {
            self.alice
                .messages_from(room, &self.agent)
                .into_iter()
                .filter(|m| m.replaces.is_none() && m.body.starts_with(head))
                .nth(n)
                .map(|m| m.body)
        })
        .await;
        let numbered = |l: &str| {
            let digits = l.chars().take_while(char::is_ascii_digit).count();
            digits > 0 && l[digits..].starts_with(". ")
        };
        let keys = body.lines().filter(|l| numbered(l)).count();
        self.open_poll(room, head, n, keys).await
    }

    /// Waits until a message of `agent` in `room` currently shows `expected` (around
    /// blanks); returns its event ID.
    pub async fn message_from(
        &self,
        room: &matrix_sdk::room::Room,
        agent: &str,
        expected: &str,
    ) -> String {
        wait_until(PATIENCE, &format!("{agent} showing {expected:?}"), || {
            self.alice
                .messages_from(room, agent)
                .into_iter()
                .find(|m| {
                    self.alice
                        .current_text(&m.event_id)
                        .is_some_and(|t| t.trim() == expected)
                })
                .map(|m| m.event_id)
        })
        .await
    }

    /// Waits for a notice of `agent` in `room` containing `text`; returns its body.
    pub async fn notice_from(
        &self,
        room: &matrix_sdk::room::Room,
        agent: &str,
        text: &str,
    ) -> String {
        wait_until(
            PATIENCE,
            &format!("a notice of {agent} containing {text:?}"),
            || {
                self.alice
                    .messages_from(room, agent)
                    .into_iter()
                    .find(|m| m.notice && m.body.contains(text))
                    .map(|m| m.body)
            },
        )
        .await
    }

    /// Waits until the agent answered every message sent to it in `room` so far: Alice
    /// sends a [marker], which the conversation answers after all of
    /// them, since it answers in order. A test that asserts that nothing more happens (no
    /// message answered twice, no stray reply) waits for this instead of a clock: anything
    /// more would have come before the marker's answer.
    pub async fn settled(&self, room: &matrix_sdk::room::Room) {
        let marker = marker();
        self.prompt_and_wait(room, &format!("%say {marker}"), &marker)
            .await;
    }

    /// What the agent said in `room` once it [settled](Self::settled), its markers' answers
    /// left out.
    pub async fn texts_when_settled(&self, room: &matrix_sdk::room::Room) -> Vec<String> {
        self.settled(room).await;
        let mut texts = self.texts_from(room, &self.agent);
        texts.retain(|t| !is_marker(t));
        texts
    }

    /// What every message of `agent` in `room` currently shows, in order.
    pub fn texts_from(&self, room: &matrix_sdk::room::Room, agent: &str) -> Vec<String> {
        self.alice
            .messages_from(room, agent)
            .into_iter()
            .filter_map(|m| self.alice.current_text(&m.event_id))
            .collect()
    }

    /// A room Alice created and the agent joined.
    pub async fn room_with_agent(&self, encrypted: bool) -> matrix_sdk::room::Room {
        let room = self.alice.create_room(encrypted).await;
        self.alice.invite(&room, &self.agent).await;
        self.alice
            .wait_membership(&room, &self.agent, matrix_sdk::RoomMemberships::JOIN)
            .await;
        room
    }

    /// Waits for the agent's first message in `room`; returns its event ID.
    pub async fn first_reply(&self, room: &matrix_sdk::room::Room) -> String {
        wait_until(PATIENCE, "the agent's first message", || {
            self.alice
                .messages_from(room, &self.agent)
                .first()
                .map(|m| m.event_id.clone())
        })
        .await
    }

    /// What the demo agent says of its client in `room` (`%client`): who it is and what it
    /// offers.
    pub async fn client_line(&self, room: &matrix_sdk::room::Room) -> String {
        self.alice.send(room, "%client").await;
        self.reply_where(room, "the client line", |t| t.starts_with("client:"))
            .await
    }

    /// Waits for a notice from the agent in `room` containing `text`.
    pub async fn notice_containing(
        &self,
        room: &matrix_sdk::room::Room,
        text: &str,
    ) -> person::Seen {
        wait_until(PATIENCE, &format!("a notice containing {text:?}"), || {
            self.alice
                .messages_from(room, &self.agent)
                .into_iter()
                .find(|m| m.notice && m.body.contains(text))
        })
        .await
    }

    /// The agent's messages in `room` (their first versions) that currently read `text`.
    pub fn messages_reading(&self, room: &matrix_sdk::room::Room, text: &str) -> Vec<person::Seen> {
        (self.alice.messages_from(room, &self.agent).into_iter())
            .filter(|m| {
                m.replaces.is_none()
                    && self.alice.current_text(&m.event_id).as_deref() == Some(text)
            })
            .collect()
    }

    /// Has the demo agent call the room tool `tool` with the JSON arguments `json`
    /// (`%mcp-call sidekicks TOOL JSON`); what it said it got back.
    pub async fn call_tool(&self, room: &matrix_sdk::room::Room, tool: &str, json: &str) -> String {
        let before = self.alice.messages_from(room, &self.agent).len();
        self.alice
            .send(room, &format!("%mcp-call sidekicks {tool} {json}"))
            .await;
        wait_until(PATIENCE, &format!("the answer of {tool}"), || {
            (self.alice.messages_from(room, &self.agent).into_iter())
                .skip(before)
                .filter(|m| m.replaces.is_none())
                .filter_map(|m| self.alice.current_text(&m.event_id))
                .find(|t| t.starts_with("mcp-call"))
        })
        .await
    }

    /// Waits until one of the agent's messages in `room` currently shows a text for which
    /// `wanted` holds; returns that text. Edit events are not messages of their own (their
    /// fallback body, `* …`, is no text anyone reads): their message's text counts.
    pub async fn reply_where(
        &self,
        room: &matrix_sdk::room::Room,
        what: &str,
        wanted: impl Fn(&str) -> bool,
    ) -> String {
        wait_until(PATIENCE, what, || {
            self.alice
                .messages_from(room, &self.agent)
                .into_iter()
                .filter(|m| m.replaces.is_none())
                .filter_map(|m| self.alice.current_text(&m.event_id))
                .find(|t| wanted(t))
        })
        .await
    }

    /// How many messages the agent has posted in `room` so far (edits included): what
    /// [`Env::answer_since`] counts from.
    pub fn posted(&self, room: &matrix_sdk::room::Room) -> usize {
        self.alice.messages_from(room, &self.agent).len()
    }

    /// Waits until the agent's answer since its first `before` messages in `room`, read as
    /// a person reads it, satisfies `wanted`; returns it. An answer continues in a new
    /// message below each piece of work (a tool card, a poll) that came between its words
    /// (`docs/streaming.md`, "Read in order"): its messages' current texts are joined in
    /// order, the work's notices, polls and questions left out.
    pub async fn answer_since(
        &self,
        room: &matrix_sdk::room::Room,
        before: usize,
        what: &str,
        wanted: impl Fn(&str) -> bool,
    ) -> String {
        wait_until(PATIENCE, what, || {
            let text: String = (self.alice.messages_from(room, &self.agent).into_iter())
                .skip(before)
                .filter(|m| m.replaces.is_none() && !m.notice && !is_poll(&m.body))
                .filter_map(|m| self.alice.current_text(&m.event_id))
                .collect();
            wanted(&text).then_some(text)
        })
        .await
    }

    /// Sends `prompt` and waits until the answer to it satisfies `wanted` (see
    /// [`Env::answer_since`]); returns it.
    pub async fn ask(
        &self,
        room: &matrix_sdk::room::Room,
        prompt: &str,
        what: &str,
        wanted: impl Fn(&str) -> bool,
    ) -> String {
        let before = self.posted(room);
        self.alice.send(room, prompt).await;
        self.answer_since(room, before, what, wanted).await
    }

    /// Sends `prompt` and waits for the agent's reply message to show `expected`, complete
    /// (its live marker dropped: its turn has ended); returns the reply's event ID.
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
                .find(|m| {
                    self.alice.current_text(&m.event_id).as_deref() == Some(expected)
                        && !self.alice.is_live(&m.event_id)
                })
                .map(|m| m.event_id)
        })
        .await
    }
}

/// Whether a message first posted as `body` is a permission poll or a question (plain
/// messages, so that they notify; their cards come from them).
fn is_poll(body: &str) -> bool {
    body.starts_with("🔐") || body.starts_with("❓")
}

/// Whether `text` holds something shaped like a room tools token (64 hex characters).
pub fn has_token(text: &str) -> bool {
    let mut run = 0;
    for c in text.chars() {
        run = if c.is_ascii_hexdigit() { run + 1 } else { 0 };
        if run >= 64 {
            return true;
        }
    }
    false
}
