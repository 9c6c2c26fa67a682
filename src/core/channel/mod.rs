//! One conversation (room × thread × agent): its ACP session, its queue of prompts and the
//! turn that runs.
//!
//! Each conversation has one task ([`Channel::run`]) fed by a bounded queue of
//! [`ChannelInput`]s (its size and what happens when it is full: `core::queues`), so
//! prompts are answered strictly in order and a stop request reaches the running turn
//! without waiting behind it. The channel's state is in parts of their own, each behind its
//! methods (`queue`, `slot`, `running_turn`, `reported`, `held`, `folder`,
//! `mode_keeper`). See `docs/turns.md`.

mod approval_options;
mod attachments;
mod budget;
mod changes;
pub(crate) mod commands;
mod compaction;
mod files_out;
mod folder;
mod held;
mod journal;
mod mode_keeper;
mod modes;
mod queue;
mod reported;
mod running_turn;
mod session;
mod setting_change;
mod slot;
mod status_marks;
mod tasks;
mod turn;
mod turn_end;
mod turn_input;
mod typing;
mod voice_notes;
mod waiting_marks;
mod written_during_turn;

#[cfg(test)]
mod tests;

use std::collections::VecDeque;
use std::sync::Arc;

use tokio::sync::{mpsc, oneshot};
use tokio_util::sync::CancellationToken;

use crate::core::command::Command;
use crate::core::command::registry::DuringTurn;
use crate::core::context::AgentContext;
use crate::core::inbound::{IncomingChange, IncomingMessage};
use crate::core::pool::{Lease, Waiting};
use crate::core::thread_chat::ThreadChat;
use crate::core::voice::RoomVoice;
use crate::model::Verbosity;
use crate::model::agent::SlashCommand;
use crate::model::ids::{ConversationKey, EventId, RoomId, UserId};
use crate::render::strings;
use crate::store::LogFailure;
use folder::FolderSlot;
use held::HeldFiles;
use mode_keeper::ModeKeeper;
use queue::{Queue, Queued};
use reported::Reported;
use running_turn::RunningTurn;
use slot::SessionSlot;
use turn::sleep_until_opt;

/// What a channel tells `!status` and `!help` about itself.
#[derive(Debug, Clone, Default)]
pub struct ChannelReport {
    /// Whether a turn runs.
    pub running: bool,
    /// Whether a turn waits for a slot of the process pool.
    pub waiting: bool,
    /// Messages waiting behind it.
    pub queued: usize,
    /// Those messages, in the order they run.
    pub waiting_prompts: Vec<WaitingPrompt>,
    /// Permission polls waiting for an answer.
    pub polls: usize,
    /// Whether a session is open.
    pub has_session: bool,
    /// The session's current mode, by name, and whether it asks before acting.
    pub mode: Option<String>,
    /// The usage line, if the agent reported usage.
    pub usage: Option<String>,
    /// The session's title, if the agent gave one (`session_info_update`).
    pub title: Option<String>,
    /// The agent's slash commands (name, description).
    pub commands: Vec<SlashCommand>,
}

/// A prompt waiting behind a running turn, as `!queue` lists it.
#[derive(Debug, Clone)]
pub struct WaitingPrompt {
    /// Its message.
    pub event_id: EventId,
    /// Who wrote it.
    pub sender: UserId,
    /// Its text.
    pub body: String,
}

/// Something for a channel to do.
#[derive(Debug)]
pub enum ChannelInput {
    /// A message to answer.
    Prompt(IncomingMessage),
    /// A prompt whose turn a gateway crash cut, to run again (`continuity.rerun_interrupted`);
    /// it is in the transcript already.
    Rerun(IncomingMessage),
    /// A prompt the previous run admitted but never began, taken up again at start-up.
    Resumed {
        /// The message.
        message: IncomingMessage,
        /// The ⏳ reaction the previous run put on it, if any.
        reaction: Option<EventId>,
    },
    /// A file sent without a question to nobody in particular (a room with several
    /// agents and no default): kept quietly for a while, in case its sender's next message
    /// to this agent asks about it.
    Aside(IncomingMessage),
    /// A chat command, with the message that carried it.
    Command(Command, IncomingMessage),
    /// A reply from someone who may approve but not prompt: it counts only as an answer
    /// to a poll.
    PollReply(IncomingMessage),
    /// The gateway asks how the channel stands (for `!status` and `!help`).
    Report(oneshot::Sender<ChannelReport>),
    /// Someone edited or redacted a message: a queued prompt of this channel changes or
    /// leaves the queue; the running one is stopped (redacted) or left as it is (edited).
    Changed(IncomingChange),
    /// A waiting prompt is taken out of the queue by `!queue drop` or `!queue clear`
    /// (the gateway checked who may): it will not run. Answers whether it was waiting.
    Withdraw {
        /// The prompt's message.
        target: EventId,
        /// Who took it out.
        by: UserId,
        /// Whether it waited here and is out now.
        reply: oneshot::Sender<bool>,
    },
    /// Someone other than an agent reacted to `target` (a 🛑 only from someone who may
    /// stop turns; the channel checks who may answer polls).
    Reaction {
        /// Who reacted.
        by: UserId,
        /// The event reacted to.
        target: EventId,
        /// The reaction key.
        key: String,
    },
    /// Someone other than an agent answered native poll `target` with `answer` (its Stop
    /// only someone who may stop turns; the channel checks who may answer polls).
    PollAnswer {
        /// Who answered.
        by: UserId,
        /// The poll.
        target: EventId,
        /// The ID of the answer chosen.
        answer: String,
    },
}

impl ChannelInput {
    /// The message this input carries, if it carries one (a queue that refuses the input
    /// answers it).
    pub fn message(&self) -> Option<&IncomingMessage> {
        match self {
            Self::Prompt(message)
            | Self::Rerun(message)
            | Self::Resumed { message, .. }
            | Self::Aside(message)
            | Self::Command(_, message)
            | Self::PollReply(message) => Some(message),
            Self::Report(_)
            | Self::Withdraw { .. }
            | Self::Changed(_)
            | Self::Reaction { .. }
            | Self::PollAnswer { .. } => None,
        }
    }
}

/// One conversation (room × thread × agent): the task that answers it, made of parts that each
/// own one job behind their methods.
pub struct Channel {
    /// What is shared by all rooms of this agent.
    ctx: Arc<AgentContext>,
    /// The conversation this channel holds: its room (an opaque ID) and agent, the key of
    /// its session, transcript and crash journal in the store.
    key: ConversationKey,
    /// Prompts, commands and stop requests, in arrival order.
    inputs: mpsc::Receiver<ChannelInput>,
    /// Fires when the gateway shuts down: the running turn is stopped and marked.
    shutdown: CancellationToken,
    /// Prompts waiting behind the running turn.
    queue: Queue,
    /// Inputs that came while a turn waited for a slot and must wait until it has run.
    deferred: VecDeque<ChannelInput>,
    /// The ACP session, opened at the first prompt.
    slot: SessionSlot,
    /// What the agent last reported: its slash commands, the session's title, usage.
    reported: Reported,
    /// What the room was told of the agent's summaries of its context.
    compactions: compaction::Compactions,
    /// The agent's background tasks here, and their cards.
    tasks: tasks::BackgroundTasks,
    /// Files sent without a question, waiting for their sender's next message.
    held: HeldFiles,
    /// The conversation's folder, held open once it was first needed.
    folder: FolderSlot,
    /// The mode this conversation keeps, and whether the running turn lost its session.
    modes: ModeKeeper,
    /// How starting the agent's process went while the turn waited for its lease (it may
    /// wait for a place, and be given up meanwhile): used by the turn's session, once.
    started: Option<Result<(), crate::model::agent::AgentError>>,
}

impl Channel {
    /// A channel for `room`, reading its inputs from `inputs`.
    pub fn new(
        ctx: Arc<AgentContext>,
        key: ConversationKey,
        inputs: mpsc::Receiver<ChannelInput>,
        shutdown: CancellationToken,
    ) -> Self {
        // A thread's conversation posts everything into its thread.
        let ctx = match &key.thread {
            Some(root) => Arc::new(AgentContext {
                chat: ThreadChat::wrap(ctx.chat.clone(), root.clone()),
                ..(*ctx).clone()
            }),
            None => ctx,
        };
        let queue = Queue::new(ctx.agent_id.clone(), ctx.max_waiting);
        Self {
            key,
            ctx,
            inputs,
            shutdown,
            queue,
            deferred: VecDeque::new(),
            slot: SessionSlot::default(),
            reported: Reported::default(),
            compactions: compaction::Compactions::default(),
            tasks: tasks::BackgroundTasks::default(),
            held: HeldFiles::default(),
            folder: FolderSlot::default(),
            modes: ModeKeeper::default(),
            started: None,
        }
    }

    /// What this room shows, as chosen with `!show` (read at each turn: the gateway
    /// changes it for every agent of the room) or configured.
    async fn verbosity(&self) -> Verbosity {
        let stored = (self.ctx.store.room_verbosity(&self.key.room).await)
            .or_log("could not read the room's settings")
            .flatten()
            .and_then(|word| Verbosity::parse(&word));
        stored.unwrap_or_else(|| self.ctx.verbosity.get())
    }

    /// Runs until the input queue is closed or the gateway shuts down.
    pub async fn run(mut self) {
        loop {
            self.queue.count();
            if self.shutdown.is_cancelled() {
                self.abandon_queue().await;
                self.queue.count();
                return;
            }
            // What came while the last turn waited for a slot goes before the next turn.
            let deferred = self.deferred.pop_front();
            if deferred.is_none()
                && let Some(next) = self.queue.next()
            {
                if let Some(reaction) = &next.reaction {
                    let _ = self.ctx.chat.redact(&self.key.room, reaction).await;
                }
                // The prompts that come from now on wait behind this turn.
                self.queue.turn_began();
                // Held until the turn ends: the pool neither stops the agent nor gives its
                // slot away.
                if let Some(lease) = self.lease_for_turn(&next).await {
                    let event_id = next.message.event_id.clone();
                    self.run_turn(next).await;
                    self.started = None;
                    drop(lease);
                    // Answered, one way or another: a turn that began settled it already;
                    // one refused before (an unknown slash command, no session) is here. One
                    // queued again (edited while it ran) waits on.
                    if !self.queue.holds(&event_id) {
                        self.settle(&event_id).await;
                    }
                }
                self.queue.turn_ended();
                continue;
            }
            let input = match deferred {
                Some(input) => input,
                None => tokio::select! {
                    _ = self.shutdown.cancelled() => continue,
                    // Between turns too, so a session's bounded queue never fills while
                    // the room is quiet (`core::queues::SESSION_UPDATES`).
                    Some(event) = self.slot.next_update() => {
                        self.handle_event(event, None).await;
                        continue;
                    }
                    input = self.inputs.recv() => match input {
                        Some(input) => input,
                        None => return,
                    },
                },
            };
            self.take_input(input).await;
        }
    }

    /// Carries out one input that came while no turn runs.
    async fn take_input(&mut self, input: ChannelInput) {
        match input {
            ChannelInput::Prompt(message) => {
                if let Some(message) = self.gather(message, false).await {
                    self.queue.push_back(Queued::new(message))
                }
            }
            ChannelInput::Rerun(message) => self.queue.push_back(Queued::rerun(message)),
            ChannelInput::Aside(message) => self.hold_aside(message),
            ChannelInput::Resumed { message, reaction } => {
                if let Some(message) = self.gather(message, true).await {
                    self.queue.push_back(Queued::marked(message, reaction))
                }
            }
            ChannelInput::Command(command, message) => {
                self.drain_events(None).await;
                self.answer_command(&command, &message.sender, false).await;
                self.settle(&message.event_id).await;
            }
            ChannelInput::Report(reply) => {
                self.drain_events(None).await;
                let _ = reply.send(self.report(None, false));
            }
            ChannelInput::Changed(change) => {
                self.change_queued(&change).await;
            }
            ChannelInput::Withdraw { target, by, reply } => {
                let _ = reply.send(self.withdraw(&target, &by).await);
            }
            // Polls exist only during a turn.
            // 🛑 on a background task's card stops it, between turns too.
            ChannelInput::Reaction { by, target, key } => {
                self.task_reaction(&by, &target, &key).await;
            }
            ChannelInput::PollAnswer { .. } | ChannelInput::PollReply(_) => {}
        }
    }

    /// At shutdown: tells the room its queued messages will be answered after the next
    /// start (they wait in the store, ⏳ and all), so nobody wonders.
    async fn abandon_queue(&mut self) {
        if !self.queue.is_empty() {
            self.notice(strings::queue_kept_at_shutdown(self.queue.len()))
                .await;
        }
        self.queue.clear();
    }

    async fn notice(&self, text: impl Into<String>) {
        post_notice(&self.ctx, &self.key.room, text.into()).await;
    }

    /// The agent's voice in this channel's room: what it says outside its answers.
    fn voice(&self) -> RoomVoice<'_> {
        RoomVoice::new(&*self.ctx.chat, &self.ctx.agent_id, &self.key.room)
    }

    /// Records that the input `event_id` no longer waits (a store failure is logged: at
    /// worst a prompt is taken up again after a restart, which begins no turn twice).
    async fn settle(&self, event_id: &EventId) {
        if let Err(e) = self.ctx.store.settle(&self.ctx.agent_id, event_id).await {
            tracing::error!(agent = %self.ctx.agent_id, room = %self.key.room, event = %event_id, error = %e, "could not record an input as settled");
        }
    }

    /// How the channel stands, for `!status` and `!help`: `turn` is the running turn, if
    /// one runs; `waiting`: a turn waits for a slot of the process pool.
    fn report(&self, turn: Option<&RunningTurn>, waiting: bool) -> ChannelReport {
        ChannelReport {
            running: turn.is_some(),
            waiting,
            queued: self.queue.len(),
            waiting_prompts: self.queue.waiting(),
            polls: turn.map_or(0, |turn| turn.approvals().open_count()),
            has_session: self.slot.is_open(),
            mode: (self.slot.settings())
                .and_then(crate::core::settings_policy::current_mode)
                .map(|mode| strings::mode_status(&self.mode_label(&mode), self.mode_note(&mode))),
            usage: self.reported.usage_line(),
            title: self.reported.title().map(str::to_owned),
            commands: self.reported.commands().to_vec(),
        }
    }

    /// This agent, as help texts name it.
    fn agent_line(&self) -> strings::AgentLine {
        strings::AgentLine {
            name: self.ctx.display_name.clone(),
            id: self.ctx.agent_id.to_string(),
            commands: self.reported.commands().to_vec(),
        }
    }

    /// Whether other agents of the gateway are in this room (slash commands are then
    /// written `/agent:cmd`).
    async fn several_agents_here(&self) -> bool {
        (self.ctx.store.room_agents(&self.key.room).await)
            .or_log("could not read the room's agents")
            .is_some_and(|agents| agents.len() > 1)
    }

    /// A lease on the agent from the process pool; tells the room when it must wait.
    async fn lease(&self) -> Lease {
        let ctx = self.ctx.clone();
        let tell = async |waiting| tell_waiting(&ctx, &self.key.room, waiting).await;
        ctx.pool.acquire(&ctx.agent_id, tell).await
    }

    /// A lease for the turn of `queued`, with the agent's process for the conversation's
    /// folder started (noted in `started` for the turn's session). While it waits for a
    /// slot, or for a place for that process (a container per room, at `max_rooms`), the
    /// channel keeps listening: prompts queue up behind it, `!status` is answered, `!stop`
    /// gives the waiting prompt up, and at shutdown it goes back to the queue (kept in the
    /// store for the next start). Other inputs wait until the turn is over. `None`: the
    /// turn does not run.
    async fn lease_for_turn(&mut self, queued: &Queued) -> Option<Lease> {
        let ctx = self.ctx.clone();
        let room = self.key.room.clone();
        // A folder that cannot be prepared is told when the turn's session is opened.
        let folder = self.prepare_folder().await.ok();
        let give_up = CancellationToken::new();
        let starting = std::sync::atomic::AtomicBool::new(false);
        let tell = async |waiting| tell_waiting(&ctx, &room, waiting).await;
        let ready = async {
            let lease = ctx.pool.acquire(&ctx.agent_id, tell).await;
            starting.store(true, std::sync::atomic::Ordering::SeqCst);
            let started = match &folder {
                Some(folder) => {
                    Some(session::start_agent(&ctx, &room, folder.path(), give_up.clone()).await)
                }
                None => None,
            };
            (lease, started)
        };
        tokio::pin!(ready);
        // Giving up: a wait for a slot is dropped; a start is told to give up its wait for
        // a place and awaited, so that no stop or start of a process is cut in half.
        let give_up_ready = async |ready: std::pin::Pin<&mut _>| {
            if starting.load(std::sync::atomic::Ordering::SeqCst) {
                give_up.cancel();
                let _: (Lease, _) = ready.await;
            }
        };
        loop {
            tokio::select! {
                biased;
                (lease, started) = &mut ready => {
                    self.started = started;
                    return Some(lease);
                }
                _ = sleep_until_opt(self.queue.next_mark_at()) => self.mark_waiting().await,
                _ = self.shutdown.cancelled() => {
                    give_up_ready(ready.as_mut()).await;
                    self.queue.push_front(Queued {
                        message: queued.message.clone(),
                        reaction: None,
                        ..*queued
                    });
                    return None;
                }
                Some(input) = self.inputs.recv() => match input {
                    ChannelInput::Prompt(message) => self.queue_behind(message, None).await,
                    ChannelInput::Resumed { message, reaction } => {
                        self.queue_behind_resumed(message, reaction).await
                    }
                    ChannelInput::Rerun(message) => self.queue.push_back(Queued::rerun(message)),
                    ChannelInput::Report(reply) => {
                        let _ = reply.send(self.report(None, true));
                    }
                    ChannelInput::Command(command, message)
                        if command.during_turn() == DuringTurn::StopsTheTurn =>
                    {
                        give_up_ready(ready.as_mut()).await;
                        tracing::info!(agent = %ctx.agent_id, room = %self.key.room, by = %message.sender, "a prompt waiting for a slot was given up");
                        self.notice(strings::gave_up_waiting(&ctx.display_name, message.sender.as_str()))
                            .await;
                        self.settle(&message.event_id).await;
                        self.settle(&queued.message.event_id).await;
                        return None;
                    }
                    other => self.deferred.push_back(other),
                },
            }
        }
    }

    /// Queues `message` behind the running (or waiting) turn, marked ⏳; a file without a
    /// question waits for one instead (see [`Channel::gather`]).
    async fn queue_behind(&mut self, message: IncomingMessage, reaction: Option<EventId>) {
        if let Some(message) = self.gather(message, false).await {
            self.mark_and_queue(message, reaction).await
        }
    }

    /// [`Channel::queue_behind`] for a prompt taken in before a restart, ⏳ and all
    /// (`reaction`, put on by the run before).
    async fn queue_behind_resumed(&mut self, message: IncomingMessage, reaction: Option<EventId>) {
        if let Some(message) = self.gather(message, true).await {
            self.mark_and_queue(message, reaction).await
        }
    }
}

/// Tells the room that a turn must wait for a slot of the process pool.
async fn tell_waiting(ctx: &AgentContext, room: &RoomId, waiting: Waiting) {
    let text = strings::waiting_for_slot(&ctx.display_name, waiting.max_running, &waiting.busy);
    post_notice(ctx, room, text).await;
}

/// Posts a one-off notice in `room` as the agent; a failure is logged, never fatal.
async fn post_notice(ctx: &AgentContext, room: &RoomId, text: String) {
    RoomVoice::new(&*ctx.chat, &ctx.agent_id, room)
        .notice(text)
        .await;
}
