//! Who a message is for and what it asks: a prompt for the agents it addresses, a command
//! for one agent or for the room. Deciding is pure (`core::routing`, `core::command`); this
//! file carries the decision out.

use super::*;
use std::collections::HashMap;
use std::sync::Arc;

use crate::core::channel::{ChannelInput, ChannelReport};
use crate::core::command::{self, Command};
use crate::core::inbound::IncomingMessage;
use crate::core::routing::{self, Addressed, Addressing, Member};
use crate::render::strings;
use crate::store::{PendingKind, RoomRouting};

impl Gateway {
    pub(super) async fn handle_message(self: &Arc<Self>, message: IncomingMessage) {
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
    pub(super) async fn address(
        &self,
        message: &IncomingMessage,
    ) -> (Vec<Member>, RoomRouting, Addressing) {
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
    pub(super) async fn members(&self, room_id: &str, seen_by: &str) -> Vec<Member> {
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
    pub(super) async fn room_routing(&self, room_id: &str) -> RoomRouting {
        match self.store.room_routing(room_id).await {
            Ok(routing) => routing,
            Err(e) => {
                tracing::error!(room = room_id, error = %e, "could not read the room's routing");
                RoomRouting::default()
            }
        }
    }

    /// A message that is no command: a prompt for the agents it is for.
    pub(super) async fn prompt(
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
    pub(super) async fn agent_command(
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
                self.channels.spawn(async move {
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
    pub(super) async fn command_for_nobody(
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
                        .channels
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

    /// The room's agents as help texts name them, with the commands their channels report.
    pub(super) fn agent_lines(
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
}

/// Whether the agent that saw `message` is the room's first agent by ID: the one that
/// answers for the room when a message names no agent.
fn speaks_for_room(members: &[Member], message: &IncomingMessage) -> bool {
    members
        .first()
        .is_some_and(|m| m.agent_id == message.agent_id)
}
