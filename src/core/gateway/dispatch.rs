//! Who a message is for and what it asks, carried out: deciding is pure
//! (`core::determination`, on top of `core::routing` and `core::command`); this file admits
//! the message and hands it to a channel, answers it, or runs a room command.

use std::collections::HashMap;
use std::sync::Arc;

use super::Gateway;
use crate::core::channel::{ChannelInput, ChannelReport};
use crate::core::command::Command;
use crate::core::command::registry::DuringTurn;
use crate::core::determination::{self, Determination};
use crate::core::inbound::IncomingMessage;
use crate::core::routing::{self, Addressed, Addressing, Member};
use crate::model::ThreadMode;
use crate::model::ids::{AgentId, ConversationKey, RoomId, UserId};
use crate::render::strings;
use crate::store::{PendingKind, RoomRouting, until_answered};

/// A message once decided, with what the decision read of its room.
struct Decided {
    /// The message, its addresses taken off (and out of its thread where the room is one
    /// conversation).
    message: IncomingMessage,
    /// The room's agents, as the agent that saw the message knows them.
    members: Vec<Member>,
    /// The room's routing settings.
    routing: RoomRouting,
    /// How the room treats threads.
    thread_mode: ThreadMode,
}

impl Gateway {
    /// A room message: decided (`core::determination`, pure), then carried out here.
    pub(super) async fn handle_message(self: &Arc<Self>, message: IncomingMessage) {
        // A message without text (empty, blanks, or formatting around nothing) and without
        // a file asks nothing: it is not prompted, so the agent is not asked to answer
        // silence.
        if message.body.trim().is_empty() && message.media.is_empty() {
            tracing::debug!(agent = %message.agent_id, room = %message.room_id, event = %message.event_id, "ignoring a message without text");
            return;
        }
        let (members, routing, addressing) = self.address(&message).await;
        // Where the room treats threads as part of its one conversation, a message in one
        // is the room's.
        let thread_mode = self.thread_mode(&routing);
        let message = match thread_mode {
            ThreadMode::One => IncomingMessage {
                thread: None,
                ..message
            },
            _ => message,
        };
        // The agent gets the text without the addresses in front of it.
        let message = IncomingMessage {
            body: addressing.text.clone(),
            ..message
        };
        let determination = self.determine(&message, &members, &addressing, &routing);
        let aside = !message.media.is_empty()
            && message.body.trim().is_empty()
            && routing::targets(&addressing, &members, routing.default_agent.as_ref()).is_empty();
        let decided = Decided {
            message,
            members,
            routing,
            thread_mode,
        };
        self.carry_out(determination, decided, aside).await;
    }

    /// Carries out what was decided for a message (`aside`: a file without a question that
    /// addresses no agent of the room).
    async fn carry_out(
        self: &Arc<Self>,
        determination: Determination,
        decided: Decided,
        aside: bool,
    ) {
        let Decided {
            message,
            members,
            routing,
            thread_mode,
        } = decided;
        let allowed = |sender: &UserId| self.people.may_prompt(sender);
        let as_command = Some(PendingKind::Command);
        match determination {
            // A file without a question, in a room where it addresses no agent: people
            // often paste a screenshot, then ask an agent about it. Each agent keeps it
            // quietly for a while (it may be for people only: nobody is told).
            Determination::NotMine if aside => {
                let input = ChannelInput::Aside(message.clone());
                self.admit_and_send(&message, allowed, None, input).await;
            }
            Determination::NotMine => {}
            // Where each message of the main timeline opens its own thread, the prompt is
            // the root of its thread's conversation.
            Determination::Prompt => match (thread_mode, &message.thread) {
                (ThreadMode::New, None) => {
                    let thread = Some(message.event_id.clone());
                    self.prompt(IncomingMessage { thread, ..message }).await
                }
                _ => self.prompt(message).await,
            },
            Determination::SlashNeedsAgent(_) | Determination::NoSuchAgent(_) => {
                if self.admit(&message, allowed, as_command).await {
                    let lines = self.agent_lines(&members, &HashMap::new());
                    let text = match &determination {
                        Determination::SlashNeedsAgent(slash) => {
                            strings::slash_needs_agent(slash, &lines)
                        }
                        Determination::NoSuchAgent(word) => strings::no_such_agent(word, &lines),
                        _ => unreachable!("matched above"),
                    };
                    self.answer(&message, text).await;
                }
            }
            Determination::RoomCommand(command) => {
                if self.admit(&message, allowed, as_command).await {
                    self.room_command(command, &message, &members, &routing)
                        .await
                }
            }
            // The channel settles it once carried out.
            Determination::AgentCommand(command) => {
                let may = self.may_give(&command);
                let input = ChannelInput::Command(command, message.clone());
                self.admit_and_send(&message, may, as_command, input).await;
            }
            Determination::CommandForNobody(command) => {
                if self
                    .admit(&message, self.may_give(&command), as_command)
                    .await
                {
                    // It may wait for the channels' reports: not on the chat side's time.
                    let this = self.clone();
                    self.channels.spawn(async move {
                        this.command_for_nobody(command, &message, &members).await;
                        this.settle(&message.agent_id, &message.event_id).await;
                    });
                }
            }
        }
    }

    /// Who may give `command`: whoever may prompt; admins too for a command that changes
    /// settings (what someone who is not an admin may choose, the channel decides:
    /// `settings_policy`); approvers too for one approvers may use (they may answer polls
    /// and stop turns without being allowed to prompt, as with a 🛑 reaction).
    fn may_give(&self, command: &Command) -> impl Fn(&UserId) -> bool + '_ {
        let (settings, for_approvers) = (command.changes_settings(), command.for_approvers());
        move |who: &UserId| {
            self.people.may_prompt(who)
                || (settings && self.people.is_admin(who))
                || (!settings && for_approvers && self.people.may_approve(who))
        }
    }

    /// Admits `message` for those `may` send it (waiting in the store as `kind`, if any),
    /// then hands `input` to its conversation's channel.
    async fn admit_and_send(
        &self,
        message: &IncomingMessage,
        may: impl Fn(&UserId) -> bool,
        kind: Option<PendingKind>,
        input: ChannelInput,
    ) {
        if self.admit(message, may, kind).await {
            self.send_to_channel(&message.conversation(), input).await;
        }
    }

    /// Carries out `command`, which `message` carried and the previous run admitted but never
    /// carried out, one the
    /// registry says runs late (`AfterCrash::Rerun`), for the agent it was admitted for:
    /// who answers was decided then (from the address in front, which the stored text no
    /// longer has), so it is not decided again, nor admitted again; settled once answered.
    pub(super) async fn rerun_command(
        self: &Arc<Self>,
        mut command: Command,
        message: IncomingMessage,
    ) {
        let (members, routing, _) = self.address(&message).await;
        if !command.is_for_agents() {
            return self
                .room_command(command, &message, &members, &routing)
                .await;
        }
        // An agent's name after the command says whose it is, not what it asks.
        command.take_agent(|word| {
            (members.iter().find(|m| m.is_named(word))).map(|m| m.agent_id.clone())
        });
        let input = ChannelInput::Command(command, message.clone());
        self.send_to_channel(&message.conversation(), input).await;
    }

    /// What `message` asks for, given the room's agents, whom it addresses and the room's
    /// routing choices (`core::determination`, pure).
    fn determine(
        &self,
        message: &IncomingMessage,
        members: &[Member],
        addressing: &Addressing,
        routing: &RoomRouting,
    ) -> Determination {
        determination::determine(
            (&self.prefix, super::commands::known()),
            &message.body,
            &message.agent_id,
            members,
            addressing,
            routing.default_agent.as_ref(),
        )
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
                reply_to_sender: message.reply_to_sender.as_ref(),
            },
            &members,
        );
        (members, routing, addressing)
    }

    /// The gateway's agents in `room_id` (the one that saw the message included), sorted by
    /// ID so every copy of a message sees them in the same order.
    pub(super) async fn members(&self, room_id: &RoomId, seen_by: &AgentId) -> Vec<Member> {
        // Who a message is for is read before it is admitted: it waits for a database
        // that is restarting, like the admission (see [`until_answered`]).
        let agents = until_answered("reading the room's agents", || {
            self.store.room_agents(room_id)
        });
        let mut ids = match agents.await {
            Ok(ids) => ids,
            Err(e) => {
                tracing::error!(room = %room_id, error = %e, "could not read the room's agents");
                Vec::new()
            }
        };
        if !ids.iter().any(|id| id == seen_by) {
            ids.push(seen_by.clone());
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
    pub(super) async fn room_routing(&self, room_id: &RoomId) -> RoomRouting {
        let routing = until_answered("reading the room's routing", || {
            self.store.room_routing(room_id)
        });
        match routing.await {
            Ok(routing) => routing,
            Err(e) => {
                tracing::error!(room = %room_id, error = %e, "could not read the room's routing");
                RoomRouting::default()
            }
        }
    }

    /// A prompt for this agent: admitted, then handed to its channel.
    pub(super) async fn prompt(&self, message: IncomingMessage) {
        // Approvers who may not prompt can still answer polls with a reply, which the
        // channel takes only as a poll answer.
        let answers_poll = message.reply_to.is_some();
        let trusted = |sender: &UserId| {
            self.people.may_prompt(sender) || (answers_poll && self.people.may_approve(sender))
        };
        // A prompt waits durably until its turn begins; a poll answer from someone who may
        // not prompt is answered at once or not at all (its poll dies with a restart).
        let prompts = self.people.may_prompt(&message.sender);
        if !self
            .admit(&message, trusted, prompts.then_some(PendingKind::Prompt))
            .await
        {
            return;
        }
        let input = match prompts {
            true => {
                // A person spoke: agents may hand work to each other again.
                self.hops.person_wrote(&message.room_id);
                ChannelInput::Prompt(message.clone())
            }
            false => ChannelInput::PollReply(message.clone()),
        };
        self.send_to_channel(&message.conversation(), input).await;
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
        // The conversation of each agent where the command was written (its thread).
        let here = |agent: &AgentId| {
            ConversationKey::new(room.clone(), agent.clone()).in_thread(message.thread.clone())
        };
        match command.during_turn() {
            DuringTurn::StopsTheTurn => {
                let mut stopped = false;
                for m in members {
                    let key = here(&m.agent_id);
                    if self.channels.report(&key).await.is_some_and(|r| r.running) {
                        stopped = true;
                        self.send_to_channel(
                            &key,
                            ChannelInput::Command(command.clone(), message.clone()),
                        )
                        .await;
                    }
                }
                if !stopped {
                    self.notice(message, strings::NOTHING_TO_STOP).await;
                }
            }
            DuringTurn::AnswersThePoll => {
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
                    [agent] => {
                        self.send_to_channel(
                            &here(agent),
                            ChannelInput::Command(command, message.clone()),
                        )
                        .await
                    }
                    _ => {
                        self.notice(message, strings::polls_of_several_agents(count))
                            .await
                    }
                }
            }
            DuringTurn::AtOnce | DuringTurn::Refused => {
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
        reports: &HashMap<AgentId, ChannelReport>,
    ) -> Vec<strings::AgentLine> {
        members
            .iter()
            .map(|m| strings::AgentLine {
                name: m.display_name.clone(),
                id: m.agent_id.to_string(),
                commands: reports
                    .get(&m.agent_id)
                    .map(|r| r.commands.clone())
                    .unwrap_or_default(),
            })
            .collect()
    }
}
