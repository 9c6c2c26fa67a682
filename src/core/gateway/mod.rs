//! The entry point of the core: decides what an inbound event means (a prompt, a command, a
//! stop request, nothing), which agents of the room it is for, and hands it to their
//! [`Channel`]s. See `docs/rooms.md`.
//!
//! Every agent's Matrix user sees every message of its rooms. Each copy is handled on its
//! own, and routing is a pure function of the message and the room's agents, so the copy
//! seen by an agent the message is not for is simply dropped. Commands for the room (help,
//! status…) are answered by one agent of the room, the *responder*.

mod admission;
mod catch_up;
pub(crate) mod commands;
mod dispatch;
mod handoff;
mod outbox;
mod people;
mod receipts;
mod recovery;
mod registry;
mod room_settings;
mod scheduler;

pub use scheduler::ScheduleSettings;

#[cfg(test)]
mod tests;

use crate::model::ids::ConversationKey;
use std::collections::HashMap;
use std::sync::Arc;

use crate::core::access::AccessList;
use crate::core::catch_up::CatchUpBounds;
use crate::core::channel::ChannelInput;
use crate::core::context::AgentContext;
use crate::core::inbound::{Inbound, IncomingMessage};
use crate::core::pool::Pool;
use crate::core::voice::{RoomVoice, txn};
use crate::model::ids::{AgentId, EventId, RoomId, UserId};
use crate::model::{OutMessage, ThreadMode};
use crate::store::{LogFailure, Store, now_ms};
use handoff::Hops;
use people::People;
use registry::Channels;

/// How rooms with several agents behave, from the `[rooms]` config table.
#[derive(Debug, Clone, Copy)]
pub struct RoomRules {
    /// Whether hand-offs between agents are on where a room has not chosen.
    pub handoff: bool,
    /// Most hand-offs one person's message may cause.
    pub handoff_max_hops: u32,
    /// How threads map onto conversations where a room has not chosen.
    pub threads: ThreadMode,
}

impl Default for RoomRules {
    fn default() -> Self {
        Self {
            handoff: false,
            handoff_max_hops: 3,
            threads: ThreadMode::Separate,
        }
    }
}

/// Who may do what, from the `[access]` config table.
#[derive(Debug, Clone)]
pub struct AccessRules {
    /// Who may invite, prompt and stop.
    pub allowed: AccessList,
    /// Who may answer permission polls (and so also stop a turn from one).
    pub approvers: AccessList,
    /// Who may change an agent's mode, model and options.
    pub admins: AccessList,
}

/// How the gateway behaves, from the config.
#[derive(Debug, Clone)]
pub struct GatewaySettings {
    /// Chat command prefix.
    pub prefix: String,
    /// How rooms with several agents behave.
    pub rules: RoomRules,
    /// How far back a room's timeline is caught up after a gap.
    pub catch_up: CatchUpBounds,
    /// How schedules behave (`[schedules]`).
    pub schedules: ScheduleSettings,
}

impl Default for GatewaySettings {
    fn default() -> Self {
        Self {
            prefix: "!".into(),
            rules: RoomRules::default(),
            catch_up: CatchUpBounds::default(),
            schedules: ScheduleSettings::default(),
        }
    }
}

/// Routes inbound events to channels, after the checks every event goes through.
pub struct Gateway {
    /// Per-agent context, by agent ID.
    agents: HashMap<AgentId, Arc<AgentContext>>,
    /// Who the gateway listens to, and for what.
    people: People,
    /// The database.
    store: Store,
    /// Chat command prefix.
    prefix: String,
    /// The running channels, and the gateway's tasks.
    channels: Channels,
    /// The agent process pool (for `!agents`).
    pool: Arc<Pool>,
    /// How rooms with several agents behave.
    rules: RoomRules,
    /// How far back a room's timeline is caught up after a gap.
    catch_up: CatchUpBounds,
    /// Hand-offs since the last message from a person, by room, and their limit.
    hops: Hops,
    /// Wakes the outbox when the homeserver answers again.
    outbox_wake: tokio::sync::Notify,
    /// How schedules behave.
    schedules: ScheduleSettings,
    /// When this gateway started (ms): a scheduled run due before was missed.
    started_at: i64,
    /// Scheduled runs whose message could not be posted, by (schedule, due time): when to
    /// try again, and the wait after that.
    post_retries: std::sync::Mutex<HashMap<(i64, i64), (std::time::Instant, std::time::Duration)>>,
    /// The newest message taken in each room and thread whose read receipt waits: one
    /// receipt covers a burst.
    receipts: Arc<receipts::Receipts>,
}

impl Gateway {
    /// A gateway serving `agents`, whose processes `pool` runs.
    pub fn new(
        agents: Vec<Arc<AgentContext>>,
        access: AccessRules,
        store: Store,
        pool: Arc<Pool>,
        settings: GatewaySettings,
    ) -> Self {
        Self {
            people: People::new(
                agents.iter().map(|a| a.user_id.clone()).collect(),
                access.allowed,
                access.approvers,
                access.admins,
            ),
            agents: agents
                .into_iter()
                .map(|a| (a.agent_id.clone(), a))
                .collect(),
            store,
            prefix: settings.prefix,
            channels: Channels::default(),
            pool,
            hops: Hops::new(settings.rules.handoff_max_hops),
            rules: settings.rules,
            catch_up: settings.catch_up,
            outbox_wake: tokio::sync::Notify::new(),
            schedules: settings.schedules,
            started_at: now_ms(),
            post_retries: Default::default(),
            receipts: Default::default(),
        }
    }

    /// Stops every channel: running turns are cancelled and marked in the room, queued
    /// messages are reported as not answered. Waits at most `grace`.
    pub async fn shutdown(&self, grace: std::time::Duration) {
        self.channels.shutdown(grace).await;
    }

    /// Whether `inviter` may bring `agent_id` into `room_id`. On yes, the room's history up
    /// to now is marked as not for this agent.
    pub async fn accept_invite(
        &self,
        agent_id: &AgentId,
        room_id: &RoomId,
        inviter: &UserId,
    ) -> bool {
        if !self.people.may_prompt(inviter) {
            tracing::warn!(
                agent = %agent_id,
                room = %room_id,
                %inviter,
                "declining an invite from a user who is not allowed"
            );
            return false;
        }
        tracing::info!(
            agent = %agent_id,
            room = %room_id,
            %inviter,
            "accepting invite"
        );
        if let Err(e) = self
            .store
            .set_member_since(&ConversationKey::new(room_id, agent_id), now_ms())
            .await
        {
            tracing::error!(error = %e, "could not record the invite; history may be taken for prompts");
        }
        true
    }

    /// Notes that the agent left or was removed from a room.
    pub async fn left_room(&self, agent_id: &AgentId, room_id: &RoomId) {
        let key = ConversationKey::new(room_id, agent_id);
        if let Err(e) = self.store.forget_member(&key).await {
            tracing::error!(error = %e, "could not record leaving the room");
        }
        self.channels.forget(&key);
    }

    /// Takes in one event from the chat side.
    /// Quick: the chat side awaits it before it takes in the next event, so whatever must
    /// wait for channels (`!status`, `!help`, an unnamed `!stop`) runs in its own task.
    pub async fn handle(self: &Arc<Self>, inbound: Inbound) {
        match inbound {
            Inbound::Message(message) => self.handle_message(message).await,
            Inbound::Unreadable(message, why) => self.handle_unreadable(message, why).await,
            Inbound::Reaction(reaction) => self.handle_reaction(reaction),
            Inbound::PollResponse(response) => self.handle_poll_response(response),
            Inbound::Change(change) => self.handle_change(change),
        }
    }

    /// A message that could be decrypted only once its room key arrived, after it was
    /// taken in as undecryptable (and maybe reported so): it is taken in again, as what it
    /// is now.
    pub async fn handle_late(self: &Arc<Self>, inbound: Inbound) {
        if let Inbound::Message(message) | Inbound::Unreadable(message, _) = &inbound {
            self.store
                .unmark_handled(&message.agent_id, &message.event_id)
                .await
                .or_log("could not take a message decrypted late in again");
        }
        self.handle(inbound).await;
    }

    /// Answers `message` with a notice and settles it (it was admitted as a command).
    async fn answer(&self, message: &IncomingMessage, text: impl Into<String>) {
        self.notice(message, text).await;
        self.settle(&message.agent_id, &message.event_id).await;
    }

    /// Like [`Gateway::answer`], with `markdown` posted with its HTML.
    async fn answer_formatted(&self, message: &IncomingMessage, markdown: String) {
        let html = crate::render::markdown::to_html(&markdown, Default::default());
        self.say(
            message,
            OutMessage {
                html,
                ..OutMessage::notice(markdown)
            },
        )
        .await;
        self.settle(&message.agent_id, &message.event_id).await;
    }

    /// Records that the input `event_id` of `agent_id` no longer waits (a store failure is
    /// logged: at worst the input is reported again after a restart).
    async fn settle(&self, agent_id: &AgentId, event_id: &EventId) {
        if let Err(e) = self.store.settle(agent_id, event_id).await {
            tracing::error!(agent = %agent_id, event = %event_id, error = %e, "could not record an input as settled");
        }
    }

    /// Posts a notice in the message's room, as the agent that saw the message.
    async fn notice(&self, message: &IncomingMessage, text: impl Into<String>) {
        self.say(message, OutMessage::notice(text)).await;
    }

    /// Posts `out` as the answer to `message`, in its room (and thread), as the agent that
    /// saw the message.
    async fn say(&self, message: &IncomingMessage, out: OutMessage) {
        let Some(ctx) = self.agents.get(&message.agent_id) else {
            return;
        };
        RoomVoice::new(&*ctx.chat, &message.agent_id, &message.room_id)
            .say(
                &txn(
                    "answer",
                    &[message.agent_id.as_str(), message.event_id.as_str()],
                ),
                &out.in_thread(message.thread.clone()),
            )
            .await;
    }

    /// Hands `input` to the channel of conversation `key`, starting it if needed; a message
    /// its full queue refuses is answered with a notice and settled (nothing runs it later).
    async fn send_to_channel(&self, key: &ConversationKey, input: ChannelInput) {
        let Some(ctx) = self.agents.get(&key.agent) else {
            tracing::warn!(conversation = %key, "event for an unknown agent");
            return;
        };
        let Err(refused) = self.channels.send(ctx, key, input) else {
            return;
        };
        let Some(message) = refused.message() else {
            tracing::warn!(conversation = %key, "the channel's queue is full; an input was dropped");
            return;
        };
        tracing::warn!(conversation = %key, event = %message.event_id, "the channel's queue is full; a message was refused");
        self.notice(
            message,
            crate::render::strings::too_many_waiting(&ctx.display_name, None),
        )
        .await;
        if let Err(e) = self.store.settle(&key.agent, &message.event_id).await {
            tracing::error!(conversation = %key, error = %e, "could not record a refused message as settled");
        }
    }
}
