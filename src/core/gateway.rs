//! The entry point of the core: decides what an inbound event means (a prompt, a command, a
//! stop request, nothing), which agents of the room it is for, and hands it to their
//! [`Channel`]s. See `docs/rooms.md`.
//!
//! Every agent's Matrix user sees every message of its rooms. Each copy is handled on its
//! own, and routing is a pure function of the message and the room's agents, so the copy
//! seen by an agent the message is not for is simply dropped. Commands for the room (help,
//! status…) are answered by one agent of the room, the *responder*.

mod catch_up;
mod handoff;
mod outbox;
mod recovery;
mod room_commands;

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::{mpsc, oneshot};
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use super::access::AccessList;
use super::catch_up::CatchUpBounds;
use super::channel::{AgentContext, Channel, ChannelInput, ChannelReport};
use super::chat::OutMessage;
use super::command::{self, Command};
use super::inbound::{Inbound, IncomingMessage, IncomingReaction, Unreadable};
use super::poll;
use super::pool::Pool;
use super::routing::{self, Addressed, Addressing, Member};
use crate::render::strings;
use crate::store::{PendingInput, PendingKind, RoomRouting, Store, now_ms};

/// How long `!status` and `!help` wait for a channel busy with something else to report.
const REPORT_TIMEOUT: Duration = Duration::from_secs(3);

/// How rooms with several agents behave, from the `[rooms]` config table.
#[derive(Debug, Clone, Copy)]
pub struct RoomRules {
    /// Whether hand-offs between agents are on where a room has not chosen.
    pub handoff: bool,
    /// Most hand-offs one person's message may cause.
    pub handoff_max_hops: u32,
}

impl Default for RoomRules {
    fn default() -> Self {
        Self {
            handoff: false,
            handoff_max_hops: 3,
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
}

impl Default for GatewaySettings {
    fn default() -> Self {
        Self {
            prefix: "!".into(),
            rules: RoomRules::default(),
            catch_up: CatchUpBounds::default(),
        }
    }
}

/// Routes inbound events to channels, after the checks every event goes through.
pub struct Gateway {
    /// Per-agent context, by agent ID.
    agents: HashMap<String, Arc<AgentContext>>,
    /// The Matrix users of all agents: their messages are never prompts.
    agent_users: HashSet<String>,
    /// Who may invite, prompt and stop.
    access: AccessList,
    /// Who may answer permission polls (and so also stop a turn from one).
    approvers: AccessList,
    /// The database.
    store: Store,
    /// Chat command prefix.
    prefix: String,
    /// The input queue of each running channel, by (room, agent).
    channels: Mutex<HashMap<(String, String), mpsc::UnboundedSender<ChannelInput>>>,
    /// The channel tasks, so shutdown can wait for their turns to be marked.
    tasks: TaskTracker,
    /// Cancelled at shutdown; every channel watches it.
    shutdown: CancellationToken,
    /// The agent process pool (for `!agents`).
    pool: Arc<Pool>,
    /// How rooms with several agents behave.
    rules: RoomRules,
    /// How far back a room's timeline is caught up after a gap.
    catch_up: CatchUpBounds,
    /// Hand-offs since the last message from a person, by room.
    hops: Mutex<HashMap<String, u32>>,
    /// Wakes the outbox when the homeserver answers again.
    outbox_wake: tokio::sync::Notify,
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
            agent_users: agents.iter().map(|a| a.user_id.clone()).collect(),
            agents: agents
                .into_iter()
                .map(|a| (a.agent_id.clone(), a))
                .collect(),
            access: access.allowed,
            approvers: access.approvers,
            store,
            prefix: settings.prefix,
            channels: Mutex::default(),
            tasks: TaskTracker::new(),
            shutdown: CancellationToken::new(),
            pool,
            rules: settings.rules,
            catch_up: settings.catch_up,
            hops: Mutex::default(),
            outbox_wake: tokio::sync::Notify::new(),
        }
    }

    /// Stops every channel: running turns are cancelled and marked in the room, queued
    /// messages are reported as not answered. Waits at most `grace`.
    pub async fn shutdown(&self, grace: std::time::Duration) {
        self.shutdown.cancel();
        self.tasks.close();
        if tokio::time::timeout(grace, self.tasks.wait())
            .await
            .is_err()
        {
            tracing::warn!("some channels did not finish in time");
        }
    }

    /// Whether `inviter` may bring `agent_id` into `room_id`. On yes, the room's history up
    /// to now is marked as not for this agent.
    pub async fn accept_invite(&self, agent_id: &str, room_id: &str, inviter: &str) -> bool {
        if !self.access.allows(inviter) {
            tracing::warn!(
                agent = agent_id,
                room = room_id,
                inviter,
                "declining an invite from a user who is not allowed"
            );
            return false;
        }
        tracing::info!(
            agent = agent_id,
            room = room_id,
            inviter,
            "accepting invite"
        );
        if let Err(e) = self
            .store
            .set_member_since(room_id, agent_id, now_ms())
            .await
        {
            tracing::error!(error = %e, "could not record the invite; history may be taken for prompts");
        }
        true
    }

    /// Notes that the agent left or was removed from a room.
    pub async fn left_room(&self, agent_id: &str, room_id: &str) {
        if let Err(e) = self.store.forget_member(room_id, agent_id).await {
            tracing::error!(error = %e, "could not record leaving the room");
        }
        self.channels
            .lock()
            .expect("channel map poisoned")
            .remove(&(room_id.to_owned(), agent_id.to_owned()));
    }

    /// Takes in one event from the chat side.
    /// Quick: the chat side awaits it before it takes in the next event, so whatever must
    /// wait for channels (`!status`, `!help`, an unnamed `!stop`) runs in its own task.
    pub async fn handle(self: &Arc<Self>, inbound: Inbound) {
        match inbound {
            Inbound::Message(message) => self.handle_message(message).await,
            Inbound::Unreadable(message, why) => self.handle_unreadable(message, why).await,
            Inbound::Reaction(reaction) => self.handle_reaction(reaction),
        }
    }

    /// The checks every message passes before an agent acts on it: not from an agent, from
    /// a user `trusted` to send it, newer than the agent's arrival, and not handled before.
    /// This last check records it as handled and, when `pending` names what it carries, in
    /// the same transaction as waiting to be settled: from then on it survives a crash.
    async fn admit(
        &self,
        message: &IncomingMessage,
        trusted: impl Fn(&str) -> bool,
        pending: Option<PendingKind>,
    ) -> bool {
        let IncomingMessage {
            agent_id,
            room_id,
            event_id,
            sender,
            ..
        } = message;
        if self.agent_users.contains(sender) {
            return false;
        }
        if !trusted(sender) {
            tracing::info!(agent = %agent_id, room = %room_id, %sender, "ignoring a message from a user who is not allowed");
            return false;
        }
        let since = match self.store.member_since(room_id, agent_id, now_ms()).await {
            Ok(since) => since,
            Err(e) => {
                tracing::error!(error = %e, "store unavailable; message not handled");
                return false;
            }
        };
        if (message.timestamp_ms as i64) < since {
            tracing::debug!(%event_id, "message from before the agent arrived; not a prompt");
            return false;
        }
        let pending = pending.map(|kind| PendingInput {
            room_id: room_id.clone(),
            agent_id: agent_id.clone(),
            event_id: event_id.clone(),
            kind,
            sender: sender.clone(),
            body: message.body.clone(),
            reply_to: message.reply_to.clone(),
            sent_at: message.timestamp_ms as i64,
            queued_reaction: None,
        });
        match self
            .store
            .admit(event_id, agent_id, room_id, pending.as_ref())
            .await
        {
            Ok(true) => {
                tracing::debug!(agent = %agent_id, room = %room_id, event = %event_id, "admitted");
                true
            }
            Ok(false) => {
                tracing::debug!(%event_id, "already handled");
                false
            }
            Err(e) => {
                tracing::error!(error = %e, "store unavailable; message not handled");
                false
            }
        }
    }

    async fn handle_message(self: &Arc<Self>, message: IncomingMessage) {
        // A message without text (empty, blanks, or formatting around nothing) asks
        // nothing: it is not prompted, so the agent is not asked to answer silence.
        if message.body.trim().is_empty() {
            tracing::debug!(agent = %message.agent_id, room = %message.room_id, event = %message.event_id, "ignoring a message without text");
            return;
        }
        let (members, routing, addressing) = self.address(&message).await;
        // The agent gets the text without the addresses in front of it.
        let message = IncomingMessage {
            body: addressing.text.clone(),
            ..message
        };
        match command::parse(&self.prefix, &message.body) {
            Some(command) if command.is_for_agents() => {
                self.agent_command(command, message, &members, &addressing, &routing)
                    .await
            }
            Some(command) => {
                // The agent named first answers, else the first by ID: never the default
                // agent, which the command itself may change before another copy is read.
                let responder = addressing
                    .named
                    .first()
                    .or_else(|| members.first().map(|m| &m.agent_id));
                if responder != Some(&message.agent_id)
                    || !self
                        .admit(
                            &message,
                            |s| self.access.allows(s),
                            Some(PendingKind::Command),
                        )
                        .await
                {
                    return;
                }
                self.room_command(command, &message, &members, &routing)
                    .await
            }
            None => self.prompt(message, &members, &addressing, &routing).await,
        }
    }

    /// The room's agents and routing choices, and whom `message` addresses among them.
    async fn address(&self, message: &IncomingMessage) -> (Vec<Member>, RoomRouting, Addressing) {
        let members = self.members(&message.room_id, &message.agent_id).await;
        let routing = self.room_routing(&message.room_id).await;
        let addressing = routing::addressing(
            Addressed {
                body: &message.body,
                mentions: &message.mentions,
                reply_to_sender: message.reply_to_sender.as_deref(),
            },
            &members,
        );
        (members, routing, addressing)
    }

    /// The gateway's agents in `room_id` (the one that saw the message included), sorted by
    /// ID so every copy of a message sees them in the same order.
    async fn members(&self, room_id: &str, seen_by: &str) -> Vec<Member> {
        let mut ids = match self.store.room_agents(room_id).await {
            Ok(ids) => ids,
            Err(e) => {
                tracing::error!(room = room_id, error = %e, "could not read the room's agents");
                Vec::new()
            }
        };
        if !ids.iter().any(|id| id == seen_by) {
            ids.push(seen_by.to_owned());
        }
        ids.sort();
        ids.iter()
            .filter_map(|id| self.agents.get(id))
            .map(|ctx| Member {
                agent_id: ctx.agent_id.clone(),
                user_id: ctx.user_id.clone(),
                display_name: ctx.display_name.clone(),
            })
            .collect()
    }

    /// The routing choices of `room_id` (none when the store fails: logged).
    async fn room_routing(&self, room_id: &str) -> RoomRouting {
        match self.store.room_routing(room_id).await {
            Ok(routing) => routing,
            Err(e) => {
                tracing::error!(room = room_id, error = %e, "could not read the room's routing");
                RoomRouting::default()
            }
        }
    }

    /// A message that is no command: a prompt for the agents it is for.
    async fn prompt(
        &self,
        message: IncomingMessage,
        members: &[Member],
        addressing: &Addressing,
        routing: &RoomRouting,
    ) {
        let targets = routing::targets(addressing, members, routing.default_agent.as_deref());
        if targets.is_empty() {
            // A slash command for nobody, where several agents are: say how to name one.
            if let Some(slash) = routing::slash_command(&message.body)
                && speaks_for_room(members, &message)
                && self
                    .admit(
                        &message,
                        |s| self.access.allows(s),
                        Some(PendingKind::Command),
                    )
                    .await
            {
                let lines = self.agent_lines(members, &HashMap::new());
                self.answer(&message, strings::slash_needs_agent(slash, &lines))
                    .await;
            }
            return;
        }
        if !targets.contains(&message.agent_id) {
            return;
        }
        // Approvers who may not prompt can still answer polls with a reply, which the
        // channel takes only as a poll answer.
        let answers_poll = message.reply_to.is_some();
        let trusted = |sender: &str| {
            self.access.allows(sender) || (answers_poll && self.approvers.allows(sender))
        };
        // A prompt waits durably until its turn begins; a poll answer from someone who may
        // not prompt is answered at once or not at all (its poll dies with a restart).
        let prompts = self.access.allows(&message.sender);
        if !self
            .admit(&message, trusted, prompts.then_some(PendingKind::Prompt))
            .await
        {
            return;
        }
        let input = match prompts {
            true => {
                // A person spoke: agents may hand work to each other again.
                self.hops
                    .lock()
                    .expect("hops poisoned")
                    .remove(&message.room_id);
                ChannelInput::Prompt(message.clone())
            }
            false => ChannelInput::PollReply(message.clone()),
        };
        self.send_to_channel(&message.room_id, &message.agent_id, input);
    }

    /// A command for agents (`!stop`, `!new`, `!mode`…, poll answers): it goes to the
    /// agents it names, by address or as its first word; else to the room's only or
    /// default agent; else, where several are, the responder sorts it out.
    async fn agent_command(
        self: &Arc<Self>,
        mut command: Command,
        message: IncomingMessage,
        members: &[Member],
        addressing: &Addressing,
        routing: &RoomRouting,
    ) {
        let mut named = addressing.named.clone();
        let by_word = command.take_agent(|word| {
            members
                .iter()
                .find(|m| m.is_named(word))
                .map(|m| m.agent_id.clone())
        });
        if let Some(agent) = by_word
            && !named.contains(&agent)
        {
            named.push(agent);
        }
        // `!new ghost`: a name, but of no agent here. Said once, by the first agent.
        if let Some(word) = command.stray_word() {
            if speaks_for_room(members, &message)
                && self
                    .admit(
                        &message,
                        |s| self.access.allows(s),
                        Some(PendingKind::Command),
                    )
                    .await
            {
                let lines = self.agent_lines(members, &HashMap::new());
                self.answer(&message, strings::no_such_agent(word, &lines))
                    .await;
            }
            return;
        }
        let targets = match named.is_empty() {
            false => named,
            true => routing::targets(
                &Addressing::default(),
                members,
                routing.default_agent.as_deref(),
            ),
        };
        let is_answer = matches!(command, Command::Answer(_));
        let trusted = |sender: &str| {
            self.access.allows(sender) || (is_answer && self.approvers.allows(sender))
        };
        if targets.is_empty() {
            if speaks_for_room(members, &message)
                && self
                    .admit(&message, trusted, Some(PendingKind::Command))
                    .await
            {
                // It may wait for the channels' reports: not on the chat side's time.
                let (this, members) = (self.clone(), members.to_vec());
                self.tasks.spawn(async move {
                    this.command_for_nobody(command, &message, &members).await;
                    this.settle(&message.agent_id, &message.event_id).await;
                });
            }
            return;
        }
        // The channel settles it once carried out.
        if !targets.contains(&message.agent_id)
            || !self
                .admit(&message, trusted, Some(PendingKind::Command))
                .await
        {
            return;
        }
        let input = ChannelInput::Command(command, message.clone());
        self.send_to_channel(&message.room_id, &message.agent_id, input);
    }

    /// A command for one agent that names none, in a room with several and no default:
    /// `!stop` stops every turn running here, a poll answer goes to the agent whose poll is
    /// open; anything else asks which agent is meant.
    async fn command_for_nobody(
        &self,
        command: Command,
        message: &IncomingMessage,
        members: &[Member],
    ) {
        let room = &message.room_id;
        match &command {
            Command::Stop(_) => {
                let mut stopped = false;
                for m in members {
                    if self
                        .report(room, &m.agent_id)
                        .await
                        .is_some_and(|r| r.running)
                    {
                        stopped = true;
                        self.send_to_channel(
                            room,
                            &m.agent_id,
                            ChannelInput::Command(command.clone(), message.clone()),
                        );
                    }
                }
                if !stopped {
                    self.notice(message, strings::NOTHING_TO_STOP).await;
                }
            }
            Command::Answer(_) => {
                let mut with_polls = Vec::new();
                let mut count = 0;
                for m in members {
                    let polls = self.store.open_polls(&m.agent_id).await.unwrap_or_default();
                    let here = polls.iter().filter(|p| &p.room_id == room).count();
                    if here > 0 {
                        with_polls.push(m.agent_id.clone());
                        count += here;
                    }
                }
                match with_polls.as_slice() {
                    [] => self.notice(message, strings::NO_OPEN_POLL).await,
                    [agent] => self.send_to_channel(
                        room,
                        agent,
                        ChannelInput::Command(command, message.clone()),
                    ),
                    _ => {
                        self.notice(message, strings::polls_of_several_agents(count))
                            .await
                    }
                }
            }
            _ => {
                let word = message
                    .body
                    .trim()
                    .strip_prefix(&self.prefix)
                    .and_then(|rest| rest.split_whitespace().next())
                    .unwrap_or("")
                    .to_lowercase();
                let lines = self.agent_lines(members, &HashMap::new());
                self.notice(message, strings::which_agent(&self.prefix, &word, &lines))
                    .await;
            }
        }
    }

    /// Asks the channel of (`room_id`, `agent_id`), if it exists, how it stands.
    async fn report(&self, room_id: &str, agent_id: &str) -> Option<ChannelReport> {
        let (reply, answer) = oneshot::channel();
        {
            let channels = self.channels.lock().expect("channel map poisoned");
            let tx = channels.get(&(room_id.to_owned(), agent_id.to_owned()))?;
            tx.send(ChannelInput::Report(reply)).ok()?;
        }
        tokio::time::timeout(REPORT_TIMEOUT, answer)
            .await
            .ok()?
            .ok()
    }

    /// The room's agents as help texts name them, with the commands their channels report.
    fn agent_lines(
        &self,
        members: &[Member],
        reports: &HashMap<String, ChannelReport>,
    ) -> Vec<strings::AgentLine> {
        members
            .iter()
            .map(|m| strings::AgentLine {
                name: m.display_name.clone(),
                id: m.agent_id.clone(),
                commands: reports
                    .get(&m.agent_id)
                    .map(|r| r.commands.clone())
                    .unwrap_or_default(),
            })
            .collect()
    }

    /// Answers `message` with a notice and settles it (it was admitted as a command).
    async fn answer(&self, message: &IncomingMessage, text: impl Into<String>) {
        self.notice(message, text).await;
        self.settle(&message.agent_id, &message.event_id).await;
    }

    /// Records that the input `event_id` of `agent_id` no longer waits (a store failure is
    /// logged: at worst the input is reported again after a restart).
    async fn settle(&self, agent_id: &str, event_id: &str) {
        if let Err(e) = self.store.settle(agent_id, event_id).await {
            tracing::error!(agent = agent_id, event = event_id, error = %e, "could not record an input as settled");
        }
    }

    /// Posts a notice in the message's room, as the agent that saw the message.
    async fn notice(&self, message: &IncomingMessage, text: impl Into<String>) {
        let Some(ctx) = self.agents.get(&message.agent_id) else {
            return;
        };
        let txn = format!("answer-{}-{}", message.agent_id, message.event_id);
        if let Err(e) = ctx
            .chat
            .send(&message.room_id, &txn, &OutMessage::notice(text))
            .await
        {
            tracing::warn!(agent = %message.agent_id, room = %message.room_id, error = %e, "could not post a notice");
        }
    }

    /// A message the agent cannot read (undecryptable, or media): the person is told, so
    /// nothing is silently lost. Media is answered by the agents it is for, like a prompt;
    /// a message an agent could not decrypt is reported by that agent, whoever it was for.
    async fn handle_unreadable(&self, message: IncomingMessage, why: Unreadable) {
        // Media and messages that could not be parsed are for the agents they address, like
        // a prompt; one an agent could not decrypt, it reports whoever it was for.
        if let Unreadable::Unsupported(_) | Unreadable::Malformed(_) = why {
            let (members, routing, addressing) = self.address(&message).await;
            let targets = routing::targets(&addressing, &members, routing.default_agent.as_deref());
            if !targets.contains(&message.agent_id) {
                return;
            }
        }
        if !self
            .admit(&message, |sender| self.access.allows(sender), None)
            .await
        {
            return;
        }
        tracing::warn!(agent = %message.agent_id, room = %message.room_id, event = %message.event_id, sender = %message.sender, reason = ?why, "a message the agent cannot read");
        let Some(ctx) = self.agents.get(&message.agent_id) else {
            return;
        };
        let text = match &why {
            Unreadable::Undecryptable => strings::undecryptable(&message.sender),
            Unreadable::Unsupported(kind) => strings::unsupported_message(kind),
            Unreadable::Malformed(what) => strings::unreadable_message(what),
        };
        let txn = format!("unreadable-{}", message.event_id);
        let notice = OutMessage::notice(text).replying_to(&message.event_id);
        if let Err(e) = ctx.chat.send(&message.room_id, &txn, &notice).await {
            tracing::warn!(error = %e, "could not post the notice");
        }
    }

    /// A reaction goes to its channel, which knows whether it targets a reply or a poll.
    /// The agents' own reactions (the choices pre-put on polls) never count, and a 🛑 only
    /// from someone who may stop turns; who may answer a poll is checked by the channel.
    fn handle_reaction(&self, reaction: IncomingReaction) {
        if self.agent_users.contains(&reaction.sender) {
            return;
        }
        if poll::is_stop_key(&reaction.key)
            && !self.access.allows(&reaction.sender)
            && !self.approvers.allows(&reaction.sender)
        {
            tracing::info!(agent = %reaction.agent_id, room = %reaction.room_id, sender = %reaction.sender, "ignoring a stop reaction from a user who is not allowed");
            return;
        }
        let key = (reaction.room_id.clone(), reaction.agent_id.clone());
        // A reaction only matters to a channel that exists (it has a turn or a poll).
        if let Some(tx) = self
            .channels
            .lock()
            .expect("channel map poisoned")
            .get(&key)
        {
            let _ = tx.send(ChannelInput::Reaction {
                by: reaction.sender,
                target: reaction.target_event_id,
                key: reaction.key,
            });
        }
    }

    fn send_to_channel(&self, room_id: &str, agent_id: &str, input: ChannelInput) {
        let Some(ctx) = self.agents.get(agent_id) else {
            tracing::warn!(agent = agent_id, "event for an unknown agent");
            return;
        };
        let spawn = || {
            let (tx, rx) = mpsc::unbounded_channel();
            self.tasks.spawn(
                Channel::new(ctx.clone(), room_id.to_owned(), rx, self.shutdown.clone()).run(),
            );
            tx
        };
        let mut channels = self.channels.lock().expect("channel map poisoned");
        let tx = channels
            .entry((room_id.to_owned(), agent_id.to_owned()))
            .or_insert_with(spawn);
        if let Err(mpsc::error::SendError(input)) = tx.send(input) {
            // The channel task ended, which only a panic does: start a fresh one.
            tracing::error!(
                agent = agent_id,
                room = room_id,
                "channel task died; starting a new one"
            );
            *tx = spawn();
            let _ = tx.send(input);
        }
    }
}

/// Whether the agent that saw `message` is the room's first agent by ID: the one that
/// answers for the room when a message names no agent.
fn speaks_for_room(members: &[Member], message: &IncomingMessage) -> bool {
    members
        .first()
        .is_some_and(|m| m.agent_id == message.agent_id)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::activity::Verbosity;
    use crate::core::agent::AgentPort;
    use crate::core::approvals::PermissionSettings;
    use crate::core::channel::Handoff;
    use crate::core::fakes::{FakeAgent, FakeChat, Script};
    use crate::core::pool::PoolSettings;
    use crate::render::stream::StreamSettings;
    use crate::store::{Role, TranscriptLine};
    use std::path::PathBuf;
    use std::time::Duration;

    async fn gateway() -> (Arc<Gateway>, Arc<FakeAgent>, Arc<FakeChat>) {
        let (gw, agent, chat, _) = gateway_with(false).await;
        (gw, agent, chat)
    }

    async fn gateway_with(
        rerun_interrupted: bool,
    ) -> (Arc<Gateway>, Arc<FakeAgent>, Arc<FakeChat>, Store) {
        let script = Script::Chunks(vec!["ok".into()], Duration::from_millis(10));
        let (gw, mut agents, store, _) =
            gateway_of(&[("demo", script)], rerun_interrupted, RoomRules::default()).await;
        let (agent, chat) = agents.remove(0);
        (gw, agent, chat, store)
    }

    /// A test gateway, its fake agents with their chats, its store, and where its agents'
    /// finished answers go for hand-off.
    type TestGateway = (
        Arc<Gateway>,
        Vec<(Arc<FakeAgent>, Arc<FakeChat>)>,
        Store,
        mpsc::UnboundedReceiver<Handoff>,
    );

    /// A gateway with one fake agent per (ID, script); agent `x` is `@x:x`, shown as `X…`.
    /// Hand-offs go to the returned receiver.
    async fn gateway_of(
        agents: &[(&str, Script)],
        rerun_interrupted: bool,
        rules: RoomRules,
    ) -> TestGateway {
        let store = Store::in_memory().await.unwrap();
        let fakes: Vec<(Arc<FakeAgent>, Arc<FakeChat>)> = agents
            .iter()
            .map(|(_, script)| (FakeAgent::new(script.clone()), FakeChat::new()))
            .collect();
        let name = |id: &str| {
            let mut chars = id.chars();
            chars
                .next()
                .map(|c| c.to_uppercase().chain(chars).collect())
                .unwrap_or_default()
        };
        let pool = Pool::new(
            PoolSettings::default(),
            agents
                .iter()
                .zip(&fakes)
                .map(|((id, _), (agent, _))| {
                    let port: Arc<dyn AgentPort> = agent.clone();
                    (id.to_string(), name(id), port)
                })
                .collect(),
        );
        let users: Vec<String> = agents.iter().map(|(id, _)| format!("@{id}:x")).collect();
        let (handoffs, handed) = mpsc::unbounded_channel();
        let contexts = agents
            .iter()
            .zip(&fakes)
            .map(|((id, _), (agent, chat))| {
                Arc::new(AgentContext {
                    agent_id: id.to_string(),
                    display_name: name(id),
                    user_id: format!("@{id}:x"),
                    agent: agent.clone(),
                    chat: chat.clone(),
                    store: store.clone(),
                    workspace: PathBuf::from("/tmp"),
                    stream: StreamSettings {
                        interval: Duration::from_millis(100),
                        max_edits: 10,
                        max_bytes: 10_000,
                        max_reply_bytes: 1_000_000,
                        patience: crate::render::live::MAX_OUTAGE,
                    },
                    command_prefix: "!".into(),
                    approvers: AccessList::new(&["@alice:x", "@boss:x"]),
                    allowed: AccessList::new(&["@alice:x"]),
                    agent_users: users.clone(),
                    permissions: PermissionSettings {
                        timeout: Duration::from_secs(60),
                        propose_stop_after: 3,
                    },
                    verbosity: Verbosity::All,
                    reinject_max_chars: 10_000,
                    quiet_note: None,
                    rerun_interrupted,
                    pool: pool.clone(),
                    handoffs: Some(handoffs.clone()),
                })
            })
            .collect();
        let gw = Arc::new(Gateway::new(
            contexts,
            AccessRules {
                allowed: AccessList::new(&["@alice:x"]),
                approvers: AccessList::new(&["@alice:x", "@boss:x"]),
            },
            store.clone(),
            pool,
            GatewaySettings {
                rules,
                ..GatewaySettings::default()
            },
        ));
        (gw, fakes, store, handed)
    }

    fn msg(id: &str, sender: &str, ts: u64) -> Inbound {
        Inbound::Message(IncomingMessage {
            agent_id: "demo".into(),
            room_id: "!r".into(),
            event_id: id.into(),
            sender: sender.into(),
            body: format!("hello {id}"),
            timestamp_ms: ts,
            reply_to: None,
            ..Default::default()
        })
    }

    #[tokio::test]
    async fn only_new_messages_from_allowed_humans_become_prompts_once() {
        let (gw, agent, _) = gateway().await;
        assert!(gw.accept_invite("demo", "!r", "@alice:x").await);
        let now = now_ms() as u64;
        gw.handle(msg("$old", "@alice:x", now - 60_000)).await;
        gw.handle(msg("$stranger", "@mallory:x", now + 1)).await;
        gw.handle(msg("$self", "@demo:x", now + 1)).await;
        gw.handle(msg("$ok", "@alice:x", now + 1)).await;
        gw.handle(msg("$ok", "@alice:x", now + 1)).await;
        tokio::time::sleep(Duration::from_millis(500)).await;
        let prompts = agent.prompt_texts();
        assert_eq!(prompts, vec!["hello $ok"]);
    }

    #[tokio::test]
    async fn an_undecryptable_message_is_reported_once_and_never_prompted() {
        let (gw, agent, chat) = gateway().await;
        assert!(gw.accept_invite("demo", "!r", "@alice:x").await);
        let Inbound::Message(m) = msg("$utd", "@alice:x", now_ms() as u64 + 1) else {
            unreachable!()
        };
        gw.handle(Inbound::Unreadable(m.clone(), Unreadable::Undecryptable))
            .await;
        gw.handle(Inbound::Unreadable(m, Unreadable::Undecryptable))
            .await;
        tokio::time::sleep(Duration::from_millis(200)).await;
        let shown = chat.shown("!r");
        assert_eq!(shown.len(), 1, "{shown:?}");
        assert!(shown[0].contains("could not decrypt"), "{shown:?}");
        assert!(agent.prompts().is_empty());
    }

    #[tokio::test]
    async fn invites_from_strangers_are_declined() {
        let (gw, _, _) = gateway().await;
        assert!(!gw.accept_invite("demo", "!r", "@mallory:x").await);
        assert!(gw.accept_invite("demo", "!r", "@alice:x").await);
    }

    #[tokio::test]
    async fn an_approver_who_may_not_prompt_can_only_answer_polls() {
        let (gw, agent, chat) = gateway().await;
        assert!(gw.accept_invite("demo", "!r", "@alice:x").await);
        let now = now_ms() as u64 + 1;
        gw.handle(msg("$prompt", "@boss:x", now)).await;
        let Inbound::Message(mut answer) = msg("$answer", "@boss:x", now) else {
            unreachable!()
        };
        answer.body = "!allow".into();
        gw.handle(Inbound::Message(answer)).await;
        tokio::time::sleep(Duration::from_millis(300)).await;
        assert!(agent.prompts().is_empty(), "not a prompt");
        // The poll command reached the channel, which says nothing waits for approval.
        assert_eq!(chat.shown("!r"), vec![strings::NO_OPEN_POLL]);
    }

    #[tokio::test]
    async fn a_prompt_cut_by_a_crash_is_rerun_once_when_configured() {
        for (setting, already_rerun, expected_prompts) in
            [(true, false, 1), (true, true, 0), (false, false, 0)]
        {
            let (gw, agent, chat, store) = gateway_with(setting).await;
            store
                .append_transcript(
                    "!r",
                    "demo",
                    TranscriptLine {
                        role: Role::User,
                        sender: "@alice:x",
                        event_id: Some("$p"),
                        body: "build it",
                        stop_reason: None,
                    },
                )
                .await
                .unwrap();
            store
                .begin_turn("!r", "demo", "$p", already_rerun)
                .await
                .unwrap();
            gw.clean_up_previous_run().await;
            let deadline = tokio::time::Instant::now() + Duration::from_secs(2);
            while agent.prompts().len() < expected_prompts && tokio::time::Instant::now() < deadline
            {
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
            let prompts = agent.prompt_texts();
            let case = format!("setting {setting}, already re-run {already_rerun}");
            assert_eq!(prompts.len(), expected_prompts, "{case}: {prompts:?}");
            if expected_prompts == 1 {
                assert_eq!(prompts[0], "build it", "{case}");
            }
            let notice = chat.shown("!r").into_iter().next().unwrap_or_default();
            let promised = notice.contains("runs it again");
            assert_eq!(promised, expected_prompts == 1, "{case}: {notice}");
        }
    }

    /// An input as the previous run left it waiting.
    fn waiting(id: &str, kind: PendingKind, body: &str, reply_to: Option<&str>) -> PendingInput {
        PendingInput {
            room_id: "!r".into(),
            agent_id: "demo".into(),
            event_id: id.into(),
            kind,
            sender: "@alice:x".into(),
            body: body.into(),
            reply_to: reply_to.map(str::to_owned),
            sent_at: now_ms(),
            queued_reaction: None,
        }
    }

    #[tokio::test]
    async fn inputs_the_previous_run_left_waiting_are_taken_up_in_order() {
        let (gw, agent, chat, store) = gateway_with(false).await;
        let poll = crate::store::StoredPoll {
            event_id: "$poll".into(),
            room_id: "!r".into(),
            body: "expired".into(),
            html: None,
        };
        store.save_poll("demo", &poll).await.unwrap();
        for input in [
            waiting("$1", PendingKind::Prompt, "first", None),
            waiting("$2", PendingKind::Command, "!mode code", None),
            waiting("$3", PendingKind::Prompt, "1", Some("$poll")),
            waiting("$4", PendingKind::Prompt, "second", None),
        ] {
            let id = input.event_id.clone();
            assert!(store.admit(&id, "demo", "!r", Some(&input)).await.unwrap());
        }
        gw.clean_up_previous_run().await;
        let deadline = tokio::time::Instant::now() + Duration::from_secs(2);
        while agent.prompts().len() < 2 && tokio::time::Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
        // Prompts run in their order; the answer to the dead poll is not a prompt.
        assert_eq!(agent.prompt_texts(), vec!["first", "second"]);
        let said = chat.messages("!r");
        let report = said
            .iter()
            .find(|m| m.body.contains("before it carried out “!mode code”"))
            .expect("the command is reported");
        assert_eq!(report.reply_to.as_deref(), Some("$2"));
        assert!(store.pending_inputs("demo").await.unwrap().is_empty());
        // Taken up once: a second start finds nothing left.
        gw.clean_up_previous_run().await;
        tokio::time::sleep(Duration::from_millis(200)).await;
        assert_eq!(agent.prompts().len(), 2);
    }

    #[tokio::test]
    async fn a_prompt_is_waiting_in_the_store_until_its_turn_begins() {
        let script = Script::Chunks(vec!["ok".into()], Duration::from_millis(300));
        let (gw, mut agents, store, _) =
            gateway_of(&[("demo", script)], false, RoomRules::default()).await;
        let (agent, _) = agents.remove(0);
        assert!(gw.accept_invite("demo", "!r", "@alice:x").await);
        let now = now_ms() as u64 + 1;
        gw.handle(msg("$1", "@alice:x", now)).await;
        gw.handle(msg("$2", "@alice:x", now)).await;
        let deadline = tokio::time::Instant::now() + Duration::from_secs(2);
        while agent.prompts().is_empty() && tokio::time::Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        // The first began (no longer waiting); the second waits behind it, in the store.
        let waiting: Vec<String> = store
            .pending_inputs("demo")
            .await
            .unwrap()
            .into_iter()
            .map(|p| p.event_id)
            .collect();
        assert_eq!(waiting, ["$2"]);
        assert_eq!(store.unfinished_turns("demo").await.unwrap().len(), 1);
    }

    #[tokio::test]
    async fn the_outbox_delivers_in_order_once_the_homeserver_answers() {
        let (gw, _, chat, store) = gateway_with(false).await;
        let item = |room: &str, txn: &str, body: &str| crate::store::OutboxItem {
            id: 0,
            room_id: room.into(),
            event_id: None,
            txn_id: txn.into(),
            body: body.into(),
            html: None,
            notice: false,
        };
        store
            .outbox_add(
                "demo",
                &[
                    item("!a", "t1", "a1"),
                    item("!a", "t2", "a2"),
                    item("!b", "t3", "b1"),
                ],
            )
            .await
            .unwrap();
        // The first try fails in room !a: its later item waits, room !b goes on.
        chat.fail_calls(&[1]);
        gw.deliver_outbox().await;
        assert!(chat.shown("!a").is_empty());
        assert_eq!(chat.shown("!b"), vec!["b1"]);
        gw.deliver_outbox().await;
        assert_eq!(chat.shown("!a"), vec!["a1", "a2"]);
        assert!(store.outbox("demo").await.unwrap().is_empty());
    }

    #[tokio::test]
    async fn messages_past_the_catch_up_bound_are_reported_once_and_never_answered() {
        let (gw, agent, chat) = gateway().await;
        assert!(gw.accept_invite("demo", "!r", "@alice:x").await);
        let now = now_ms() as u64 + 1;
        let missed: Vec<Inbound> = ["$1", "$2"]
            .iter()
            .map(|id| msg(id, "@alice:x", now))
            .chain([msg("$3", "@mallory:x", now)])
            .collect();
        gw.report_missed("demo", "!r", missed.clone(), false).await;
        gw.report_missed("demo", "!r", missed.clone(), false).await;
        let shown = chat.shown("!r");
        assert_eq!(shown.len(), 1, "reported once: {shown:?}");
        assert!(
            shown[0].contains("2 messages from while I was away"),
            "{shown:?}"
        );
        // Brought again (a stale sync response): not answered.
        for inbound in missed {
            gw.handle(inbound).await;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
        assert!(agent.prompts().is_empty());
    }

    #[tokio::test]
    async fn messages_without_text_are_not_prompted() {
        let (gw, agent, _) = gateway().await;
        assert!(gw.accept_invite("demo", "!r", "@alice:x").await);
        for (id, body) in [("$1", ""), ("$2", "  \n\t "), ("$3", "real")] {
            let Inbound::Message(mut m) = msg(id, "@alice:x", now_ms() as u64 + 1) else {
                unreachable!()
            };
            m.body = body.into();
            gw.handle(Inbound::Message(m)).await;
        }
        let deadline = tokio::time::Instant::now() + Duration::from_secs(2);
        while agent.prompts().is_empty() && tokio::time::Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
        let prompts = agent.prompt_texts();
        assert_eq!(prompts, vec!["real"]);
    }

    /// [`gateway_of`], with every agent invited into room `!r` by Alice.
    async fn gateway_in_room(
        agents: &[(&str, Script)],
        rerun_interrupted: bool,
        rules: RoomRules,
    ) -> TestGateway {
        let built = gateway_of(agents, rerun_interrupted, rules).await;
        for (id, _) in agents {
            assert!(built.0.accept_invite(id, "!r", "@alice:x").await);
        }
        built
    }

    /// The copy of a message that agent `agent` sees (every agent of the room sees one).
    fn copy_for(agent: &str, id: &str, body: &str) -> IncomingMessage {
        IncomingMessage {
            agent_id: agent.into(),
            room_id: "!r".into(),
            event_id: id.into(),
            sender: "@alice:x".into(),
            body: body.into(),
            timestamp_ms: now_ms() as u64 + 1,
            ..Default::default()
        }
    }

    /// Hands every agent of `agents` its copy of the message `edit` makes of a plain one.
    async fn to_all(
        gw: &Arc<Gateway>,
        agents: &[&str],
        id: &str,
        edit: impl Fn(&mut IncomingMessage),
    ) {
        for agent in agents {
            let mut m = copy_for(agent, id, "");
            edit(&mut m);
            gw.handle(Inbound::Message(m)).await;
        }
    }

    async fn settle() {
        tokio::time::sleep(Duration::from_millis(400)).await;
    }

    fn two_agents() -> [(&'static str, Script); 2] {
        let ok = || Script::Chunks(vec!["ok".into()], Duration::from_millis(5));
        [("claude", ok()), ("codex", ok())]
    }

    #[tokio::test]
    async fn messages_go_to_the_agents_they_address_and_nobody_else() {
        let (gw, fakes, _, _) = gateway_in_room(&two_agents(), false, RoomRules::default()).await;
        let agents = ["claude", "codex"];
        let body = |text: &'static str| move |m: &mut IncomingMessage| m.body = text.into();
        to_all(&gw, &agents, "$1", body("nobody in particular")).await;
        to_all(&gw, &agents, "$2", body("codex: only you")).await;
        to_all(&gw, &agents, "$3", |m| {
            m.body = "Claude look".into();
            m.mentions = vec!["@claude:x".into()];
        })
        .await;
        to_all(&gw, &agents, "$4", |m| {
            m.body = "and then?".into();
            m.reply_to = Some("$earlier".into());
            m.reply_to_sender = Some("@codex:x".into());
        })
        .await;
        to_all(&gw, &agents, "$5", body("@claude @codex both of you")).await;
        settle().await;
        assert_eq!(
            fakes[0].0.prompt_texts(),
            vec!["Claude look", "both of you"]
        );
        assert_eq!(
            fakes[1].0.prompt_texts(),
            vec!["only you", "and then?", "both of you"]
        );
    }

    #[tokio::test]
    async fn unaddressed_messages_go_to_the_default_agent_or_the_only_one() {
        let (gw, fakes, store, _) =
            gateway_in_room(&two_agents(), false, RoomRules::default()).await;
        let agents = ["claude", "codex"];
        to_all(&gw, &agents, "$1", |m| m.body = "!default codex".into()).await;
        settle().await;
        assert_eq!(
            store
                .room_routing("!r")
                .await
                .unwrap()
                .default_agent
                .as_deref(),
            Some("codex")
        );
        to_all(&gw, &agents, "$2", |m| m.body = "to the default".into()).await;
        // With one agent left, every message goes to it.
        gw.left_room("codex", "!r").await;
        to_all(&gw, &["claude"], "$3", |m| {
            m.body = "to the only one".into()
        })
        .await;
        settle().await;
        assert_eq!(fakes[1].0.prompt_texts(), vec!["to the default"]);
        assert_eq!(fakes[0].0.prompt_texts(), vec!["to the only one"]);
        let said: Vec<String> = fakes.iter().flat_map(|(_, c)| c.shown("!r")).collect();
        assert_eq!(
            said.iter().filter(|t| t.contains("go to Codex")).count(),
            1,
            "the room command is answered once: {said:?}"
        );
    }

    #[tokio::test]
    async fn commands_for_one_agent_reach_only_it_and_unnamed_ones_ask_which() {
        let (gw, fakes, _, _) = gateway_in_room(&two_agents(), false, RoomRules::default()).await;
        let agents = ["claude", "codex"];
        to_all(&gw, &agents, "$1", |m| m.body = "!new codex".into()).await;
        to_all(&gw, &agents, "$2", |m| m.body = "!new".into()).await;
        to_all(&gw, &agents, "$3", |m| m.body = "!status".into()).await;
        settle().await;
        let claude = fakes[0].1.shown("!r");
        let codex = fakes[1].1.shown("!r");
        assert!(codex.iter().any(|t| t.contains("Fresh start")), "{codex:?}");
        assert!(
            !claude.iter().any(|t| t.contains("Fresh start")),
            "{claude:?}"
        );
        // The responder (first agent by ID) asks which agent `!new` is for, and answers
        // `!status` once for both.
        assert!(
            claude
                .iter()
                .any(|t| t.contains("!new claude or !new codex")),
            "{claude:?}"
        );
        let status: Vec<&String> = claude
            .iter()
            .chain(codex.iter())
            .filter(|t| t.contains("no session yet"))
            .collect();
        assert_eq!(status.len(), 1, "{status:?}");
        assert!(status[0].contains("Claude: idle") && status[0].contains("Codex: idle"));
    }

    #[tokio::test]
    async fn an_unnamed_stop_stops_every_turn_running_in_the_room() {
        let (gw, fakes, _, _) = gateway_in_room(
            &[
                ("claude", Script::UntilCancelled),
                ("codex", Script::UntilCancelled),
            ],
            false,
            RoomRules::default(),
        )
        .await;
        let agents = ["claude", "codex"];
        to_all(&gw, &agents, "$1", |m| m.body = "claude: work".into()).await;
        settle().await;
        to_all(&gw, &agents, "$2", |m| m.body = "!stop".into()).await;
        settle().await;
        let claude = fakes[0].1.shown("!r");
        assert!(
            claude.iter().any(|t| t.contains("Stopped by @alice:x")),
            "{claude:?}"
        );
        assert!(
            fakes[1].1.shown("!r").is_empty(),
            "codex had nothing to stop"
        );
    }

    #[tokio::test]
    async fn hand_offs_between_agents_stop_at_the_hop_limit() {
        let say = |text: &str| Script::Chunks(vec![text.into()], Duration::from_millis(5));
        let rules = RoomRules {
            handoff: true,
            handoff_max_hops: 3,
        };
        let (gw, fakes, _, handed) = gateway_in_room(
            &[
                ("claude", say("codex: ping")),
                ("codex", say("@claude pong")),
            ],
            false,
            rules,
        )
        .await;
        tokio::spawn(gw.clone().run_handoffs(handed));
        let agents = ["claude", "codex"];
        to_all(&gw, &agents, "$1", |m| m.body = "claude: start".into()).await;
        tokio::time::sleep(Duration::from_secs(2)).await;
        // start → claude; claude → codex (1); codex → claude (2); claude → codex (3); stop.
        assert_eq!(
            fakes[0].0.prompt_texts().len(),
            2,
            "{:?}",
            fakes[0].0.prompt_texts()
        );
        assert_eq!(
            fakes[1].0.prompt_texts().len(),
            2,
            "{:?}",
            fakes[1].0.prompt_texts()
        );
        assert_eq!(
            fakes[1].0.prompt_texts()[0],
            "Claude (another agent in this room) hands this to you:\n\nping"
        );
        let said: Vec<String> = fakes.iter().flat_map(|(_, c)| c.shown("!r")).collect();
        assert_eq!(
            said.iter()
                .filter(|t| t.contains("the most allowed"))
                .count(),
            1,
            "{said:?}"
        );
        // A person's message starts the count over.
        to_all(&gw, &agents, "$2", |m| m.body = "codex: again".into()).await;
        tokio::time::sleep(Duration::from_secs(2)).await;
        assert_eq!(
            fakes[1].0.prompt_texts().len(),
            4,
            "{:?}",
            fakes[1].0.prompt_texts()
        );
    }

    #[tokio::test]
    async fn without_hand_offs_an_agent_addressing_another_prompts_nothing() {
        let say = |text: &str| Script::Chunks(vec![text.into()], Duration::from_millis(5));
        let (gw, fakes, _, handed) = gateway_in_room(
            &[("claude", say("codex: ping")), ("codex", say("pong"))],
            false,
            RoomRules::default(),
        )
        .await;
        tokio::spawn(gw.clone().run_handoffs(handed));
        to_all(&gw, &["claude", "codex"], "$1", |m| {
            m.body = "claude: start".into()
        })
        .await;
        tokio::time::sleep(Duration::from_secs(1)).await;
        assert_eq!(fakes[0].0.prompts().len(), 1);
        assert!(fakes[1].0.prompts().is_empty());
    }

    #[tokio::test]
    async fn media_is_answered_by_the_agents_it_is_for_only() {
        let (gw, fakes, _, _) = gateway_in_room(&two_agents(), false, RoomRules::default()).await;
        let image = |agent: &str, id: &str, reply_to_codex: bool| {
            let mut m = copy_for(agent, id, "");
            if reply_to_codex {
                m.reply_to = Some("$earlier".into());
                m.reply_to_sender = Some("@codex:x".into());
            }
            Inbound::Unreadable(m, Unreadable::Unsupported("m.image".into()))
        };
        for agent in ["claude", "codex"] {
            gw.handle(image(agent, "$1", false)).await;
            gw.handle(image(agent, "$2", true)).await;
        }
        settle().await;
        assert!(
            fakes[0].1.shown("!r").is_empty(),
            "{:?}",
            fakes[0].1.shown("!r")
        );
        let codex = fakes[1].1.shown("!r");
        assert_eq!(codex.len(), 1, "{codex:?}");
        assert!(
            codex[0].contains("image messages are not supported"),
            "{codex:?}"
        );
    }

    #[tokio::test]
    async fn a_command_naming_no_agent_here_changes_nothing_and_says_so() {
        let script = Script::Chunks(vec!["ok".into()], Duration::ZERO);
        let (gw, fakes, _, _) =
            gateway_in_room(&[("demo", script)], false, RoomRules::default()).await;
        to_all(&gw, &["demo"], "$1", |m| m.body = "!new ghost".into()).await;
        settle().await;
        let shown = fakes[0].1.shown("!r");
        assert_eq!(shown.len(), 1, "{shown:?}");
        assert!(
            shown[0].contains("No agent here is called “ghost”"),
            "{shown:?}"
        );
        assert!(!shown[0].contains("Fresh start"));
    }
}
