//! One (room, agent) pair: its ACP session, its queue of prompts and the turn that runs.
//!
//! Each pair has one task ([`Channel::run`]) fed by an unbounded queue of [`ChannelInput`]s,
//! so prompts are answered strictly in order and a stop request reaches the running turn
//! without waiting behind it. See `docs/turns.md`.

use std::collections::{HashMap, VecDeque};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::{mpsc, oneshot};
use tokio_util::sync::CancellationToken;

use super::access::AccessList;
use super::activity::{Activity, Verbosity};
use super::agent::{
    AgentError, AgentEvent, AgentPort, ConfigValue, PermissionAnswer, PermissionKind,
    PermissionRequest, SessionSettings, StopReason, TokenUsage, TurnEnd,
};
use super::approvals::{Approvals, PermissionSettings, Picked};
use super::chat::{ChatPort, OutMessage, Undelivered};
use super::command::Command;
use super::continuity;
use super::crash_journal::JournaledReplies;
use super::inbound::IncomingMessage;
use super::poll::{self, Reply};
use super::pool::{Lease, Pool, Waiting};
use super::routing;
use super::session_settings::{self, Refusal, SettingPlan, SettingRequest, Shown};
use crate::render::cards::{self, PollOutcome};
use crate::render::stream::{ReplyStream, StreamSettings};
use crate::render::strings;
use crate::store::{CutMessage, OutboxItem, Role, Store, TranscriptLine};

/// How long a turn may take to end after `session/cancel` at shutdown.
const SHUTDOWN_CANCEL_GRACE: Duration = Duration::from_secs(3);

/// How often the typing notice is renewed while the agent works.
const TYPING_REFRESH: Duration = Duration::from_secs(3);

/// How long a new session's command list may take to arrive after `session/new` (agents
/// send it right after their answer).
const COMMANDS_GRACE: Duration = Duration::from_secs(1);

/// Everything a channel needs that is the same for all rooms of one agent.
pub struct AgentContext {
    /// The agent's configured ID.
    pub agent_id: String,
    /// The agent's display name, used in messages.
    pub display_name: String,
    /// The agent's Matrix user ID (the author of its replies in the transcript).
    pub user_id: String,
    /// The agent process.
    pub agent: Arc<dyn AgentPort>,
    /// The agent's Matrix user.
    pub chat: Arc<dyn ChatPort>,
    /// The database.
    pub store: Store,
    /// The `cwd` of every session.
    pub workspace: PathBuf,
    /// How replies stream.
    pub stream: StreamSettings,
    /// The chat command prefix, for help texts.
    pub command_prefix: String,
    /// Who may answer permission polls.
    pub approvers: AccessList,
    /// Who may prompt: the agent's stderr is shown only in rooms where everyone is one of
    /// them (or one of the gateway's agents).
    pub allowed: AccessList,
    /// The Matrix users of all the gateway's agents.
    pub agent_users: Vec<String>,
    /// How permission polls behave.
    pub permissions: PermissionSettings,
    /// What a room shows of the agent's work until someone changes it with `!show`.
    pub verbosity: Verbosity,
    /// Most characters of earlier conversation re-injected into a new session (0: none).
    pub reinject_max_chars: usize,
    /// How long a turn may show nothing before the room is told how to stop it (`None`:
    /// never).
    pub quiet_note: Option<Duration>,
    /// Whether a prompt whose turn a gateway crash cut runs again at the next start.
    pub rerun_interrupted: bool,
    /// The agent process pool: a turn holds a lease on its agent while it runs.
    pub pool: Arc<Pool>,
    /// Where a finished answer goes so the gateway can hand it to the agents it addresses
    /// (`None`: never).
    pub handoffs: Option<mpsc::UnboundedSender<Handoff>>,
}

/// An agent's finished answer, for the gateway to hand to the other agents it addresses
/// (when the room allows hand-offs).
#[derive(Debug, Clone)]
pub struct Handoff {
    /// The room.
    pub room_id: String,
    /// The agent that answered.
    pub from_agent: String,
    /// The answer's first message: the event the hand-off prompts refer to.
    pub event_id: String,
    /// The whole answer (Markdown).
    pub text: String,
}

/// What a channel tells `!status` and `!help` about itself.
#[derive(Debug, Clone, Default)]
pub struct ChannelReport {
    /// Whether a turn runs.
    pub running: bool,
    /// Whether a turn waits for a slot of the process pool.
    pub waiting: bool,
    /// Messages waiting behind it.
    pub queued: usize,
    /// Permission polls waiting for an answer.
    pub polls: usize,
    /// Whether a session is open.
    pub has_session: bool,
    /// The session's current mode, by name.
    pub mode: Option<String>,
    /// The usage line, if the agent reported usage.
    pub usage: Option<String>,
    /// The agent's slash commands (name, description).
    pub commands: Vec<(String, String)>,
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
        reaction: Option<String>,
    },
    /// A chat command, with the message that carried it.
    Command(Command, IncomingMessage),
    /// A reply from someone who may approve but not prompt: it counts only as an answer
    /// to a poll.
    PollReply(IncomingMessage),
    /// The gateway asks how the channel stands (for `!status` and `!help`).
    Report(oneshot::Sender<ChannelReport>),
    /// Someone other than an agent reacted to `target` (a 🛑 only from someone who may
    /// stop turns; the channel checks who may answer polls).
    Reaction {
        /// Who reacted.
        by: String,
        /// The event reacted to.
        target: String,
        /// The reaction key.
        key: String,
    },
}

/// The open ACP session of this channel.
struct Session {
    /// The agent's session ID.
    id: String,
    /// The session's updates, in the order the agent sent them.
    events: mpsc::UnboundedReceiver<AgentEvent>,
    /// Its modes and config options, kept up to date with the agent's updates.
    settings: SessionSettings,
    /// Whether it is new and the earlier conversation has not been given to it yet: its
    /// first ordinary prompt carries it (a command may open the session before any
    /// prompt, and a slash command must start its prompt).
    fresh: bool,
    /// The first prompt it was sent: what came before it is the earlier conversation.
    first_prompt: Option<String>,
}

/// One (room, agent) pair.
pub struct Channel {
    /// What is shared by all rooms of this agent.
    ctx: Arc<AgentContext>,
    /// The room (opaque ID).
    room: String,
    /// Prompts, commands and stop requests, in arrival order.
    inputs: mpsc::UnboundedReceiver<ChannelInput>,
    /// The ACP session, opened at the first prompt.
    session: Option<Session>,
    /// Prompts waiting behind the running turn.
    queue: VecDeque<Queued>,
    /// Inputs that came while a turn waited for a slot and must wait until it has run.
    deferred: VecDeque<ChannelInput>,
    /// The agent's slash commands, as last advertised (listed by `!help`).
    commands: Vec<(String, String)>,
    /// Fires when the gateway shuts down: the running turn is stopped and marked.
    shutdown: CancellationToken,
    /// Open permission polls and the running turn's refusals.
    approvals: Approvals,
    /// What the agent last reported about usage.
    usage: Usage,
}

/// A prompt waiting for its turn.
struct Queued {
    /// The message.
    message: IncomingMessage,
    /// The "queued" reaction put on it, removed when its turn starts.
    reaction: Option<String>,
    /// Whether it is the re-run of a prompt a crash cut.
    rerun: bool,
}

impl Queued {
    fn new(message: IncomingMessage) -> Self {
        Self {
            message,
            reaction: None,
            rerun: false,
        }
    }

    fn rerun(message: IncomingMessage) -> Self {
        Self {
            rerun: true,
            ..Self::new(message)
        }
    }
}

/// Usage as the agent reported it for this channel's session.
#[derive(Default)]
struct Usage {
    /// Context window: tokens used and window size (0 when not known yet).
    context: Option<(u64, u64)>,
    /// Token counts from the last prompt result.
    tokens: Option<TokenUsage>,
}

impl Usage {
    fn line(&self) -> Option<String> {
        cards::usage_line(self.context, self.tokens.as_ref())
    }
}

/// What a running turn shows: the streamed reply and the work around it.
struct TurnView {
    /// The answer.
    stream: ReplyStream,
    /// Tool cards, plan and thinking.
    activity: Activity,
    /// Who sent the prompt: notified when a poll waits for them.
    prompter: String,
    /// The prompt's event, for the log.
    prompt_event: String,
    /// The reply message (and length of its text) last recorded for a crash.
    saved_reply: Option<(String, usize)>,
    /// How much of the answer text (bytes) is recorded for a crash.
    saved_text: usize,
    /// The cut versions of cards last recorded for a crash, by event ID.
    saved_cards: HashMap<String, OutMessage>,
    /// What the reply says if a crash cuts it: whether the prompt will run again.
    cut_footer: &'static str,
}

/// State of the running turn that inputs may change.
#[derive(Default)]
struct TurnControl {
    /// Who asked to stop, once someone did.
    stopped_by: Option<String>,
    /// Set when the gateway shuts down during the turn: by then the turn must end.
    shutdown_deadline: Option<tokio::time::Instant>,
}

impl Channel {
    /// A channel for `room`, reading its inputs from `inputs`.
    pub fn new(
        ctx: Arc<AgentContext>,
        room: String,
        inputs: mpsc::UnboundedReceiver<ChannelInput>,
        shutdown: CancellationToken,
    ) -> Self {
        Self {
            ctx,
            room,
            inputs,
            session: None,
            queue: VecDeque::new(),
            deferred: VecDeque::new(),
            commands: Vec::new(),
            shutdown,
            approvals: Approvals::default(),
            usage: Usage::default(),
        }
    }

    /// What this room shows, as chosen with `!show` (read at each turn: the gateway
    /// changes it for every agent of the room) or configured.
    async fn verbosity(&self) -> Verbosity {
        let stored = match self.ctx.store.room_verbosity(&self.room).await {
            Ok(word) => word.as_deref().and_then(Verbosity::parse),
            Err(e) => {
                tracing::error!(error = %e, "could not read the room's settings");
                None
            }
        };
        stored.unwrap_or(self.ctx.verbosity)
    }

    /// Runs until the input queue is closed or the gateway shuts down.
    pub async fn run(mut self) {
        loop {
            if self.shutdown.is_cancelled() {
                self.abandon_queue().await;
                return;
            }
            // What came while the last turn waited for a slot goes before the next turn.
            let deferred = self.deferred.pop_front();
            if deferred.is_none()
                && let Some(next) = self.queue.pop_front()
            {
                if let Some(reaction) = &next.reaction {
                    let _ = self.ctx.chat.redact(&self.room, reaction).await;
                }
                // Held until the turn ends: the pool neither stops the agent nor gives its
                // slot away.
                if let Some(lease) = self.lease_for_turn(&next).await {
                    let event_id = next.message.event_id.clone();
                    self.run_turn(next.message, next.rerun).await;
                    drop(lease);
                    // Answered, one way or another: a turn that began settled it already;
                    // one refused before (an unknown slash command, no session) is here.
                    self.settle(&event_id).await;
                }
                continue;
            }
            let input = match deferred {
                Some(input) => input,
                None => tokio::select! {
                    _ = self.shutdown.cancelled() => continue,
                    input = self.inputs.recv() => match input {
                        Some(input) => input,
                        None => return,
                    },
                },
            };
            match input {
                ChannelInput::Prompt(message) => self.queue.push_back(Queued::new(message)),
                ChannelInput::Rerun(message) => self.queue.push_back(Queued::rerun(message)),
                ChannelInput::Resumed { message, reaction } => self.queue.push_back(Queued {
                    reaction,
                    ..Queued::new(message)
                }),
                ChannelInput::Command(Command::NewConversation(_), message) => {
                    self.start_fresh().await;
                    self.settle(&message.event_id).await;
                }
                ChannelInput::Command(command, message) => {
                    self.drain_events(None).await;
                    self.answer_command(&command, false).await;
                    self.settle(&message.event_id).await;
                }
                ChannelInput::Report(reply) => {
                    self.drain_events(None).await;
                    let _ = reply.send(self.report(false, false));
                }
                // Polls exist only during a turn.
                ChannelInput::Reaction { .. } | ChannelInput::PollReply(_) => {}
            }
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
        post_notice(&self.ctx, &self.room, text.into()).await;
    }

    /// Leaves the channel's session, if one is open: the agent forgets it too.
    fn drop_session(&mut self) {
        if let Some(session) = self.session.take() {
            self.ctx.agent.forget_session(&session.id);
        }
    }

    /// Records that the input `event_id` no longer waits (a store failure is logged: at
    /// worst a prompt is taken up again after a restart, which begins no turn twice).
    async fn settle(&self, event_id: &str) {
        if let Err(e) = self.ctx.store.settle(&self.ctx.agent_id, event_id).await {
            tracing::error!(agent = %self.ctx.agent_id, room = %self.room, event = event_id, error = %e, "could not record an input as settled");
        }
    }

    /// How the channel stands, for `!status` and `!help`; `waiting`: a turn waits for a
    /// slot of the process pool.
    fn report(&self, running: bool, waiting: bool) -> ChannelReport {
        let settings = self.session.as_ref().map(|s| &s.settings);
        ChannelReport {
            running,
            waiting,
            queued: self.queue.len(),
            polls: self.approvals.open_count(),
            has_session: self.session.is_some(),
            mode: settings.and_then(|s| {
                let current = s.current_mode.as_ref()?;
                s.modes
                    .iter()
                    .find(|(id, _)| id == current)
                    .map(|(_, name)| name.clone())
                    .or_else(|| Some(current.clone()))
            }),
            usage: self.usage.line(),
            commands: self.commands.clone(),
        }
    }

    /// This agent, as help texts name it.
    fn agent_line(&self) -> strings::AgentLine {
        strings::AgentLine {
            name: self.ctx.display_name.clone(),
            id: self.ctx.agent_id.clone(),
            commands: self.commands.clone(),
        }
    }

    /// Whether other agents of the gateway are in this room (slash commands are then
    /// written `/agent:cmd`).
    async fn several_agents_here(&self) -> bool {
        match self.ctx.store.room_agents(&self.room).await {
            Ok(agents) => agents.len() > 1,
            Err(e) => {
                tracing::error!(error = %e, "could not read the room's agents");
                false
            }
        }
    }

    /// Answers a command for this agent that does not act on the running turn (those are
    /// handled in [`Channel::handle_input_during_turn`]); room commands are the gateway's.
    async fn answer_command(&mut self, command: &Command, running: bool) {
        let text = match command {
            Command::Stop(_) => strings::NOTHING_TO_STOP.to_owned(),
            Command::Answer(_) => strings::NO_OPEN_POLL.to_owned(),
            // Only reaches here during a turn: a session cannot change under it.
            Command::NewConversation(_) => strings::FRESH_START_WHILE_RUNNING.to_owned(),
            Command::Logs(_) => return self.show_stderr(true).await,
            Command::Commands(_) => {
                let Some(_lease) = self.session_for_command().await else {
                    return;
                };
                // During a turn the session's updates are the turn's: never drained here.
                if !running {
                    self.await_commands().await;
                }
                strings::agent_commands(&self.agent_line(), self.several_agents_here().await)
            }
            Command::Mode(words) => {
                let request = SettingRequest::Mode(words.first().cloned());
                return self.change_setting(request, running).await;
            }
            Command::Model(words) => {
                let request = SettingRequest::Model(words.first().cloned());
                return self.change_setting(request, running).await;
            }
            Command::Set(words) => {
                let request = SettingRequest::Option(words.first().cloned(), words.get(1).cloned());
                return self.change_setting(request, running).await;
            }
            Command::Help
            | Command::Agents
            | Command::Status
            | Command::Show(_)
            | Command::Default(_)
            | Command::Handoff(_)
            | Command::Unknown(_) => {
                tracing::warn!(agent = %self.ctx.agent_id, ?command, "a room command reached a channel; the gateway answers those");
                return;
            }
        };
        self.notice(text).await;
    }

    /// Opens the session a command needs, with a pool lease to hold while the command
    /// works on it (so the pool does not stop the agent meanwhile); says why in the room
    /// when it cannot. During a turn the agent already has a lease, so this one comes at
    /// once.
    async fn session_for_command(&mut self) -> Option<Lease> {
        let lease = self.lease().await;
        self.open_session().await.then_some(lease)
    }

    /// The agent's command list arrives just after `session/new`: waits a moment for it
    /// when the session is new and the list is still empty.
    async fn await_commands(&mut self) {
        let fresh = self.session.as_ref().is_some_and(|s| s.fresh);
        self.drain_events(None).await;
        if !fresh || !self.commands.is_empty() {
            return;
        }
        let deadline = tokio::time::Instant::now() + COMMANDS_GRACE;
        while self.commands.is_empty() {
            let Some(session) = self.session.as_mut() else {
                return;
            };
            match tokio::time::timeout_at(deadline, session.events.recv()).await {
                Ok(Some(event)) => self.handle_event(event, None).await,
                Ok(None) | Err(_) => return,
            }
        }
    }

    /// `!mode`, `!model`, `!set`: shows or changes the session's settings, in place only.
    /// Requests are handled one at a time in the order they came, so the last one asked
    /// for is what the session ends up with. During a turn (`running`) the change is made
    /// all the same (ACP allows it), and the turn's updates are left to the turn.
    async fn change_setting(&mut self, request: SettingRequest, running: bool) {
        let Some(_lease) = self.session_for_command().await else {
            return;
        };
        if !running {
            // Updates since the last turn may have changed the settings.
            self.drain_events(None).await;
        }
        let ctx = self.ctx.clone();
        let prefix = &ctx.command_prefix;
        let name = &ctx.display_name;
        let Some(session) = self.session.as_mut() else {
            return;
        };
        let text = match session_settings::plan(&session.settings, &request) {
            SettingPlan::Show(Shown::Modes(modes, current)) => strings::choices(
                name,
                "modes",
                current.as_deref(),
                &modes,
                &format!("{prefix}mode NAME"),
            ),
            SettingPlan::Show(Shown::Option(option)) => {
                let how = match &request {
                    SettingRequest::Model(_) => format!("{prefix}model NAME"),
                    SettingRequest::Mode(_) => format!("{prefix}mode NAME"),
                    SettingRequest::Option(..) => format!("{prefix}set {} VALUE", option.id),
                };
                match &option.value {
                    ConfigValue::Choice { current, choices } => strings::choices(
                        name,
                        &option.name.to_lowercase(),
                        Some(current),
                        choices,
                        &how,
                    ),
                    ConfigValue::Toggle(on) => strings::options(
                        name,
                        &[(option.id.clone(), option.name.clone(), on_off(*on))],
                        prefix,
                    ),
                }
            }
            SettingPlan::Show(Shown::Options(options)) => {
                let lines: Vec<(String, String, String)> = options
                    .iter()
                    .map(|o| (o.id.clone(), o.name.clone(), option_value(o)))
                    .collect();
                strings::options(name, &lines, prefix)
            }
            SettingPlan::SetMode(mode) => match ctx.agent.set_mode(&session.id, &mode).await {
                Ok(()) => {
                    tracing::info!(agent = %ctx.agent_id, room = %self.room, %mode, "mode switched");
                    session.settings.current_mode = Some(mode.clone());
                    let label = session
                        .settings
                        .modes
                        .iter()
                        .find(|(id, _)| *id == mode)
                        .map(|(_, name)| name.clone())
                        .unwrap_or(mode);
                    strings::setting_changed(name, "mode", &label)
                }
                Err(e) => strings::setting_failed(name, &e.to_string()),
            },
            SettingPlan::SetOption(option, value) => {
                match ctx.agent.set_option(&session.id, &option, value).await {
                    Ok(options) => {
                        tracing::info!(agent = %ctx.agent_id, room = %self.room, %option, "config option changed");
                        session.settings.options = options;
                        match session.settings.options.iter().find(|o| o.id == option) {
                            Some(o) => strings::setting_changed(
                                name,
                                &o.name.to_lowercase(),
                                &option_value(o),
                            ),
                            None => strings::setting_changed(name, &option, "changed"),
                        }
                    }
                    Err(e) => strings::setting_failed(name, &e.to_string()),
                }
            }
            SettingPlan::Refuse(Refusal::NotOffered(what)) => {
                strings::setting_not_offered(name, what, prefix, &ctx.agent_id)
            }
            SettingPlan::Refuse(Refusal::Unknown { asked, choices }) => {
                strings::no_such_choice(&asked, &choices)
            }
        };
        self.notice(text).await;
    }

    /// A lease on the agent from the process pool; tells the room when it must wait.
    async fn lease(&self) -> Lease {
        let ctx = self.ctx.clone();
        let tell = async |waiting| tell_waiting(&ctx, &self.room, waiting).await;
        ctx.pool.acquire(&ctx.agent_id, tell).await
    }

    /// A lease for the turn of `queued`. While it waits for a slot the channel keeps
    /// listening: prompts queue up behind it, `!status` is answered, `!stop` gives the
    /// waiting prompt up, and at shutdown it goes back to the queue (kept in the store for
    /// the next start). Other inputs wait until the turn is over. `None`: the turn does not
    /// run.
    async fn lease_for_turn(&mut self, queued: &Queued) -> Option<Lease> {
        let ctx = self.ctx.clone();
        let room = self.room.clone();
        let tell = async |waiting| tell_waiting(&ctx, &room, waiting).await;
        let acquire = ctx.pool.acquire(&ctx.agent_id, tell);
        tokio::pin!(acquire);
        loop {
            tokio::select! {
                biased;
                lease = &mut acquire => return Some(lease),
                _ = self.shutdown.cancelled() => {
                    self.queue.push_front(Queued {
                        message: queued.message.clone(),
                        reaction: None,
                        rerun: queued.rerun,
                    });
                    return None;
                }
                Some(input) = self.inputs.recv() => match input {
                    ChannelInput::Prompt(message) => self.queue_behind(message, None).await,
                    ChannelInput::Resumed { message, reaction } => {
                        self.queue_behind(message, reaction).await
                    }
                    ChannelInput::Rerun(message) => self.queue.push_back(Queued::rerun(message)),
                    ChannelInput::Report(reply) => {
                        let _ = reply.send(self.report(false, true));
                    }
                    ChannelInput::Command(Command::Stop(_), message) => {
                        tracing::info!(agent = %ctx.agent_id, room = %self.room, by = %message.sender, "a prompt waiting for a slot was given up");
                        self.notice(strings::gave_up_waiting(&ctx.display_name, &message.sender))
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

    /// Queues `message` behind the running (or waiting) turn, marked ⏳ (unless it is
    /// already: `reaction`, put on by the run before a restart).
    async fn queue_behind(&mut self, message: IncomingMessage, reaction: Option<String>) {
        let reaction = match reaction {
            Some(reaction) => Some(reaction),
            None => self.mark_queued(&message.event_id).await,
        };
        self.queue.push_back(Queued {
            reaction,
            ..Queued::new(message)
        });
    }

    /// Puts the ⏳ reaction on a waiting message and remembers it with the message, so it
    /// is taken back when its turn starts, even after a restart.
    async fn mark_queued(&self, event_id: &str) -> Option<String> {
        let reaction = match self
            .ctx
            .chat
            .react(&self.room, event_id, strings::QUEUED_REACTION)
            .await
        {
            Ok(id) => id,
            Err(e) => {
                tracing::warn!(room = %self.room, error = %e, "could not mark a message as queued");
                return None;
            }
        };
        let ctx = &self.ctx;
        if let Err(e) = ctx
            .store
            .set_queued_reaction(&ctx.agent_id, event_id, &reaction)
            .await
        {
            tracing::warn!(room = %self.room, error = %e, "could not record the queued mark");
        }
        Some(reaction)
    }

    /// Opens the channel's ACP session if none is open: gets the last one back when the
    /// agent can (`session/load` or `session/resume`: it remembers the conversation), else
    /// opens a new one (marked `fresh`: its first prompt carries the conversation).
    async fn ensure_session(&mut self) -> Result<(), AgentError> {
        if self.session.is_some() {
            return Ok(());
        }
        let ctx = self.ctx.clone();
        // Started first if it is not running: whether it can reopen sessions is known then.
        ctx.agent.ensure_running().await?;
        if let Some(how) = ctx.agent.reopen_support()
            && let Some(earlier) = self.saved_session().await
        {
            match ctx.agent.reopen_session(&earlier, &ctx.workspace).await {
                Ok(session) => {
                    tracing::info!(agent = %ctx.agent_id, room = %self.room, session = %session.id, how = how.continuity(), "session got back");
                    if let Err(e) = ctx
                        .store
                        .set_continuity(&self.room, &ctx.agent_id, how.continuity())
                        .await
                    {
                        tracing::error!(error = %e, "could not record how the session continued");
                    }
                    self.session = Some(Session {
                        id: session.id,
                        events: session.events,
                        settings: session.settings,
                        fresh: false,
                        first_prompt: None,
                    });
                    return Ok(());
                }
                Err(e) => {
                    tracing::warn!(agent = %ctx.agent_id, room = %self.room, session = %earlier, error = %e, "could not get the session back; opening a new one with the conversation re-injected");
                }
            }
        }
        let new = ctx.agent.new_session(&ctx.workspace).await?;
        if let Err(e) = ctx
            .store
            .save_session(&self.room, &ctx.agent_id, &new.id)
            .await
        {
            tracing::error!(error = %e, "could not save the session");
        }
        tracing::info!(agent = %ctx.agent_id, room = %self.room, session = %new.id, "session opened");
        self.session = Some(Session {
            id: new.id,
            events: new.events,
            settings: new.settings,
            fresh: true,
            first_prompt: None,
        });
        Ok(())
    }

    /// Makes sure a live session is open; says why in the room when none can be.
    async fn open_session(&mut self) -> bool {
        // A session whose process died (a crash during another room's turn, or stopped by
        // the pool) cannot answer: open a new one rather than lose a message to it.
        if let Some(session) = &self.session
            && !self.ctx.agent.session_alive(&session.id)
        {
            tracing::info!(agent = %self.ctx.agent_id, room = %self.room, session = %session.id, "the session's process has stopped; opening a session again");
            self.drop_session();
        }
        match self.ensure_session().await {
            Ok(_) => true,
            Err(e) => {
                tracing::warn!(agent = %self.ctx.agent_id, room = %self.room, error = %e, "no session");
                self.notice(strings::session_failed(
                    &self.ctx.display_name,
                    &e.to_string(),
                ))
                .await;
                self.show_stderr(false).await;
                false
            }
        }
    }

    /// After the agent failed, or when `asked` (`!logs`): what it last wrote to stderr,
    /// when everyone in the room may read it (allowed users and the gateway's agents), else
    /// where to find it.
    async fn show_stderr(&self, asked: bool) {
        let ctx = &self.ctx;
        let tail = ctx.agent.stderr_tail();
        if tail.trim().is_empty() {
            if asked {
                self.notice(strings::no_stderr(&ctx.display_name)).await;
            }
            return;
        }
        let private = match ctx.chat.joined_members(&self.room).await {
            Ok(members) => members
                .iter()
                .all(|m| ctx.allowed.allows(m) || ctx.agent_users.contains(m)),
            Err(e) => {
                tracing::warn!(room = %self.room, error = %e, "could not list the room's members; the agent's stderr stays in the log");
                false
            }
        };
        let message = match private {
            true => cards::stderr_tail(&ctx.display_name, &tail),
            false => OutMessage::notice(strings::stderr_in_log(&ctx.display_name)),
        };
        let txn = format!("stderr-{}", unique_suffix());
        if let Err(e) = ctx.chat.send(&self.room, &txn, &message).await {
            tracing::warn!(agent = %ctx.agent_id, room = %self.room, error = %e, "could not post the agent's stderr");
        }
    }

    /// The session this channel last used, as saved (none after a fresh start).
    async fn saved_session(&self) -> Option<String> {
        match self.ctx.store.session(&self.room, &self.ctx.agent_id).await {
            Ok(id) => id,
            Err(e) => {
                tracing::error!(error = %e, "could not read the saved session");
                None
            }
        }
    }

    /// The first ordinary prompt of a session just opened: `message` after the earlier
    /// conversation (since the last fresh start, before the session's first prompt
    /// `opened_at`), as much as the budget allows.
    async fn restore_conversation(&self, message: &IncomingMessage, opened_at: &str) -> String {
        let ctx = &self.ctx;
        let entries = match ctx.store.conversation(&self.room, &ctx.agent_id).await {
            Ok(entries) => entries,
            Err(e) => {
                tracing::error!(agent = %ctx.agent_id, room = %self.room, error = %e, "could not read the transcript; the conversation starts afresh");
                return message.body.clone();
            }
        };
        // The session already has what came since its first prompt (`opened_at`: usually
        // the message being answered, recorded just before; it goes last, as written).
        let before = entries
            .iter()
            .position(|e| e.event_id.as_deref() == Some(opened_at))
            .unwrap_or(entries.len());
        let Some(preamble) = continuity::preamble(
            &entries[..before],
            &ctx.display_name,
            ctx.reinject_max_chars,
        ) else {
            return message.body.clone();
        };
        tracing::info!(agent = %ctx.agent_id, room = %self.room, earlier_entries = before, chars = preamble.len(), "re-injecting the earlier conversation into the new session");
        if let Err(e) = ctx
            .store
            .set_continuity(&self.room, &ctx.agent_id, "reinjected")
            .await
        {
            tracing::error!(error = %e, "could not record how the session continued");
        }
        continuity::compose(&preamble, &message.body)
    }

    /// `!new`: the next message starts a new session without the conversation so far.
    async fn start_fresh(&mut self) {
        let ctx = self.ctx.clone();
        if let Err(e) = ctx
            .store
            .start_conversation(&self.room, &ctx.agent_id)
            .await
        {
            tracing::error!(error = %e, "could not record the fresh start");
            self.notice(strings::FRESH_START_FAILED).await;
            return;
        }
        self.drain_events(None).await;
        self.drop_session();
        tracing::info!(agent = %ctx.agent_id, room = %self.room, "fresh conversation requested");
        self.notice(strings::fresh_start(&ctx.display_name)).await;
    }

    /// Records one transcript line; a store failure is logged, never fatal to the turn.
    async fn record(&self, line: TranscriptLine<'_>) {
        let ctx = &self.ctx;
        if let Err(e) = ctx
            .store
            .append_transcript(&self.room, &ctx.agent_id, line)
            .await
        {
            tracing::error!(agent = %ctx.agent_id, room = %self.room, error = %e, "could not record the transcript");
        }
    }

    /// Runs one prompt to its end: streams the reply, honours stop requests, queues the
    /// prompts that arrive meanwhile and records the transcript (`rerun`: the prompt's
    /// first run was cut by a crash; it is recorded already).
    async fn run_turn(&mut self, message: IncomingMessage, rerun: bool) {
        // A slash command the agent does not offer is answered here instead of being sent;
        // the agent's list is known once its session is open.
        let slash = routing::slash_command(&message.body).filter(|_| !rerun);
        if let Some(command) = slash {
            if !self.open_session().await {
                return;
            }
            self.await_commands().await;
            if !self.commands.is_empty() && !self.commands.iter().any(|(c, _)| c == command) {
                tracing::info!(agent = %self.ctx.agent_id, room = %self.room, command, "a slash command the agent does not offer");
                let several = self.several_agents_here().await;
                self.notice(strings::unknown_slash(&self.agent_line(), command, several))
                    .await;
                return;
            }
        }
        if !rerun {
            self.record(TranscriptLine {
                role: Role::User,
                sender: &message.sender,
                event_id: Some(&message.event_id),
                body: &message.body,
                stop_reason: None,
            })
            .await;
        }
        if !self.open_session().await {
            return;
        }
        // A slash command must start the prompt for the agent to run it: the earlier
        // conversation goes with the next ordinary prompt instead.
        let mut opened_at = None;
        if let Some(session) = self.session.as_mut() {
            let first = session
                .first_prompt
                .get_or_insert_with(|| message.event_id.clone());
            if slash.is_none() && std::mem::replace(&mut session.fresh, false) {
                opened_at = Some(first.clone());
            }
        }
        let text = match opened_at {
            Some(opened_at) => self.restore_conversation(&message, &opened_at).await,
            None => message.body.clone(),
        };
        // Events that arrived between turns (e.g. the command list after `session/new`).
        self.drain_events(None).await;

        // Retries of a request reuse its transaction ID; a re-run is a new answer.
        let txn_prefix = match rerun {
            false => format!("sk-{}-{}", self.ctx.agent_id, message.event_id),
            true => format!("sk-{}-{}-rerun", self.ctx.agent_id, message.event_id),
        };
        let verbosity = self.verbosity().await;
        // A prompt is re-run after a crash at most once.
        let cut_footer = match self.ctx.rerun_interrupted && !rerun {
            true => strings::INTERRUPTED_RERUN,
            false => strings::INTERRUPTED,
        };
        // Each new message of the reply is journaled before it is sent.
        let replies = JournaledReplies::new(
            self.ctx.chat.clone(),
            self.ctx.store.clone(),
            self.ctx.agent_id.clone(),
            cut_footer,
        );
        let mut view = TurnView {
            stream: ReplyStream::new(
                Arc::new(replies),
                self.room.clone(),
                txn_prefix.clone(),
                self.ctx.stream.clone(),
            ),
            activity: Activity::new(
                self.ctx.chat.clone(),
                self.room.clone(),
                verbosity,
                txn_prefix,
                self.ctx.stream.clone(),
            ),
            prompter: message.sender.clone(),
            prompt_event: message.event_id.clone(),
            saved_reply: None,
            saved_text: 0,
            saved_cards: HashMap::new(),
            cut_footer,
        };
        if let Err(e) = self
            .ctx
            .store
            .begin_turn(&self.room, &self.ctx.agent_id, &message.event_id, rerun)
            .await
        {
            tracing::error!(error = %e, "could not record the turn; a crash would leave it unmarked");
        }
        self.approvals.new_turn();
        let mut control = TurnControl::default();
        self.ctx.chat.typing(&self.room, true).await;
        let result = self.drive(text, &mut view, &mut control).await;
        self.ctx.chat.typing(&self.room, false).await;
        self.finish_turn(result, view, control).await;
    }

    /// Sends the prompt and handles everything that happens until the agent answers it:
    /// updates, stop requests, new prompts, edit deadlines and the typing notice.
    async fn drive(
        &mut self,
        text: String,
        view: &mut TurnView,
        control: &mut TurnControl,
    ) -> Result<TurnEnd, AgentError> {
        let ctx = self.ctx.clone();
        let session_id = self
            .session
            .as_ref()
            .map(|s| s.id.clone())
            .unwrap_or_default();
        let mut typing = tokio::time::interval(TYPING_REFRESH);
        typing.reset();
        let prompt = ctx.agent.prompt(&session_id, text);
        tokio::pin!(prompt);
        // When the agent last showed something; a quiet turn gets one note per quiet spell.
        let mut last_activity = tokio::time::Instant::now();
        let mut quiet_noted = false;
        let result = loop {
            let flush_at = view.stream.next_flush_at();
            let activity_at = view.activity.next_flush_at();
            let poll_deadline = self.approvals.next_deadline();
            // While a poll waits, the agent waits for people: that is not quiet.
            if self.approvals.open_count() > 0 {
                last_activity = tokio::time::Instant::now();
            }
            let quiet_at = ctx
                .quiet_note
                .filter(|_| !quiet_noted)
                .map(|after| last_activity + after);
            let events = &mut self
                .session
                .as_mut()
                .expect("session opened before the turn")
                .events;
            tokio::select! {
                result = &mut prompt => break result,
                Some(event) = events.recv() => {
                    last_activity = tokio::time::Instant::now();
                    quiet_noted = false;
                    self.handle_event(event, Some(&mut *view)).await
                }
                Some(input) = self.inputs.recv() => self.handle_input_during_turn(input, &session_id, view, control).await,
                _ = sleep_until_opt(quiet_at) => {
                    quiet_noted = true;
                    let quiet = ctx.quiet_note.unwrap_or_default();
                    tracing::info!(agent = %ctx.agent_id, room = %self.room, quiet_secs = quiet.as_secs(), "the turn has been quiet; telling the room how to stop it");
                    self.notice(strings::quiet_turn(&ctx.display_name, quiet, &ctx.command_prefix)).await;
                }
                _ = sleep_until_opt(flush_at) => {
                    if let Err(e) = view.stream.flush().await {
                        tracing::debug!(room = %self.room, error = %e, "edit deferred");
                    }
                    self.journal_reply(view).await;
                }
                _ = sleep_until_opt(activity_at) => {
                    if let Err(e) = view.activity.flush().await {
                        tracing::debug!(room = %self.room, error = %e, "card update deferred");
                    }
                    self.journal_cards(view).await;
                }
                _ = sleep_until_opt(poll_deadline) => self.approvals.expire_due(&ctx, &self.room).await,
                _ = typing.tick() => ctx.chat.typing(&self.room, true).await,
                _ = self.shutdown.cancelled(), if control.shutdown_deadline.is_none() => {
                    tracing::info!(agent = %ctx.agent_id, room = %self.room, "shutting down: cancelling the turn");
                    control.shutdown_deadline = Some(tokio::time::Instant::now() + SHUTDOWN_CANCEL_GRACE);
                    if let Err(e) = ctx.agent.cancel(&session_id).await {
                        tracing::warn!(error = %e, "session/cancel failed");
                    }
                    self.approvals.cancel_all(&ctx, &self.room, |_| PollOutcome::TurnStopped).await;
                }
                // An agent that ignores the cancel does not hold the shutdown up.
                _ = sleep_until_opt(control.shutdown_deadline) => break Ok(StopReason::Cancelled.into()),
            }
        };
        // Every update sent before the response is already queued: take them in.
        self.drain_events(Some(view)).await;
        // A poll still open now belongs to a turn the agent has ended.
        self.approvals
            .cancel_all(&ctx, &self.room, |_| PollOutcome::TurnEnded)
            .await;
        result
    }

    /// Shows how the turn ended (final edit, footer or notice) and records the reply.
    async fn finish_turn(
        &mut self,
        result: Result<TurnEnd, AgentError>,
        view: TurnView,
        control: TurnControl,
    ) {
        let ctx = self.ctx.clone();
        let TurnView {
            mut stream,
            mut activity,
            ..
        } = view;
        let stopped_by = control.stopped_by.as_deref();
        if let Ok(TurnEnd {
            usage: Some(usage), ..
        }) = &result
        {
            self.usage.tokens = Some(*usage);
        }
        let result = result.map(|end| end.reason);
        let (stop_label, ending) = match &result {
            Ok(reason) if control.shutdown_deadline.is_some() => (
                stop_reason_label(reason),
                Some(strings::STOPPED_AT_SHUTDOWN.to_owned()),
            ),
            Ok(reason) => (
                stop_reason_label(reason),
                strings::stop_footer(reason, stopped_by),
            ),
            Err(e) => {
                tracing::warn!(agent = %ctx.agent_id, room = %self.room, error = %e, stderr = %ctx.agent.stderr_tail(), "turn failed");
                let text = match e {
                    AgentError::Exited { status } => {
                        strings::agent_stopped(&ctx.display_name, status)
                    }
                    AgentError::Broken(reason) => {
                        strings::agent_broke_protocol(&ctx.display_name, reason)
                    }
                    e => strings::turn_failed(&ctx.display_name, &e.to_string()),
                };
                ("error", Some(text))
            }
        };
        // A session dies with its process: the next message opens a new one (which starts
        // the agent again) and gets the conversation back.
        let died = matches!(
            result,
            Err(AgentError::Exited { .. } | AgentError::Broken(_))
        );
        if died {
            self.drop_session();
        }
        let cancelled = matches!(result, Ok(StopReason::Cancelled));
        if let Err(e) = activity.finish(cancelled).await {
            tracing::warn!(agent = %ctx.agent_id, room = %self.room, error = %e, "could not close the tool cards");
            if e.is_retryable() {
                self.to_outbox(activity.undelivered()).await;
            }
        }
        if stream.text().is_empty() {
            let text = match (&result, ending) {
                (Ok(reason), None) => strings::empty_reply(reason, stopped_by),
                (_, ending) => ending.unwrap_or_default(),
            };
            self.notice(text).await;
        } else {
            let usage = match self.verbosity().await {
                Verbosity::All => self.usage.line(),
                _ => None,
            };
            let footer: Vec<String> = ending.into_iter().chain(usage).collect();
            let footer = (!footer.is_empty()).then(|| footer.join("\n\n"));
            if let Err(e) = stream.finish(footer).await {
                tracing::error!(agent = %ctx.agent_id, room = %self.room, error = %e, "could not deliver the final reply");
                if e.is_retryable() {
                    self.to_outbox(stream.undelivered()).await;
                }
            }
        }
        tracing::info!(agent = %ctx.agent_id, room = %self.room, prompt = %view.prompt_event, stop = stop_label, stats = ?stream.stats(), "turn ended");
        // The turn is over and its reply recorded in one go: a crash now leaves no cut turn
        // to mark, and no reply missing from the conversation.
        let first_event = stream.event_ids().into_iter().next();
        let reply = TranscriptLine {
            role: Role::Agent,
            sender: &ctx.user_id,
            event_id: first_event.as_deref(),
            body: stream.text(),
            stop_reason: Some(stop_label),
        };
        if let Err(e) = ctx
            .store
            .end_turn(&self.room, &ctx.agent_id, Some(reply), None)
            .await
        {
            tracing::error!(error = %e, "could not record the end of the turn");
        }
        if died {
            self.show_stderr(false).await;
        }
        // A complete answer may address other agents of the room: the gateway decides.
        if let (Some(handoffs), Some(event_id), Ok(StopReason::EndTurn)) =
            (&ctx.handoffs, first_event, &result)
        {
            let _ = handoffs.send(Handoff {
                room_id: self.room.clone(),
                from_agent: ctx.agent_id.clone(),
                event_id,
                text: stream.text().to_owned(),
            });
        }
    }

    /// Hands what the homeserver could not take (it stayed away longer than a turn waits)
    /// to the outbox, which delivers it once the homeserver is back.
    async fn to_outbox(&self, undelivered: Vec<Undelivered>) {
        if undelivered.is_empty() {
            return;
        }
        let ctx = &self.ctx;
        let items = outbox_items(&self.room, undelivered);
        match ctx.store.outbox_add(&ctx.agent_id, &items).await {
            Ok(()) => {
                tracing::warn!(agent = %ctx.agent_id, room = %self.room, messages = items.len(), "the homeserver stayed away: the final content waits in the outbox")
            }
            Err(e) => {
                tracing::error!(agent = %ctx.agent_id, room = %self.room, error = %e, "could not keep the final content for later")
            }
        }
    }

    /// Records what the reply's last message should show if the gateway dies now (its text
    /// with an "interrupted" footer), for the next start to put on. Called after the reply
    /// was sent; writes only when the text shown changed.
    async fn journal_reply(&self, view: &mut TurnView) {
        let Some((id, shown)) = view.stream.last_shown() else {
            return;
        };
        let key = (id.to_owned(), shown.len());
        if view.saved_reply.as_ref() == Some(&key) {
            return;
        }
        let content = ReplyStream::cut_content(shown, view.cut_footer);
        let message = cut_message(id, "reply", content);
        view.saved_reply = Some(key);
        self.save_cut(&message).await;
        // Only what is new is written, however long the answer grows.
        let text = view.stream.text();
        if text.len() > view.saved_text {
            let ctx = &self.ctx;
            match ctx
                .store
                .append_reply_text(&self.room, &ctx.agent_id, &text[view.saved_text..])
                .await
            {
                Ok(()) => view.saved_text = text.len(),
                Err(e) => tracing::error!(error = %e, "could not record the turn's answer so far"),
            }
        }
    }

    /// Records what the turn's cards should show if the gateway dies now (open ones
    /// cancelled, thoughts folded). Called after cards were sent; writes only what changed.
    async fn journal_cards(&self, view: &mut TurnView) {
        for (id, content) in view.activity.cut_versions() {
            if view.saved_cards.get(&id) != Some(&content) {
                let message = cut_message(&id, "card", content.clone());
                view.saved_cards.insert(id, content);
                self.save_cut(&message).await;
            }
        }
    }

    async fn save_cut(&self, message: &CutMessage) {
        let ctx = &self.ctx;
        if let Err(e) = ctx
            .store
            .save_cut_message(&self.room, &ctx.agent_id, message)
            .await
        {
            tracing::error!(error = %e, "could not record the turn's progress");
        }
    }

    /// Takes in every update already queued for the session; `view` is the running turn's,
    /// if a turn runs.
    async fn drain_events(&mut self, mut view: Option<&mut TurnView>) {
        while let Some(event) = self.session.as_mut().and_then(|s| s.events.try_recv().ok()) {
            self.handle_event(event, view.as_deref_mut()).await;
        }
    }

    /// Handles one session update, inside a turn (`view` is its display) or between turns.
    async fn handle_event(&mut self, event: AgentEvent, view: Option<&mut TurnView>) {
        let ctx = self.ctx.clone();
        match (event, view) {
            (AgentEvent::MessageChunk(text), Some(view)) => view.stream.push(&text),
            (AgentEvent::ThoughtChunk(text), Some(view)) => view.activity.thought(&text),
            (AgentEvent::ToolCall(fields), Some(view)) => view.activity.tool(fields, true),
            (AgentEvent::ToolCallUpdate(fields), Some(view)) => view.activity.tool(fields, false),
            (AgentEvent::Plan(entries), Some(view)) => view.activity.plan(&entries),
            (AgentEvent::Permission(request), Some(view)) => {
                // Describe the call with everything known: what was announced, then what
                // the request itself says (it may come first, or name an unannounced call).
                let mut tool = view
                    .activity
                    .known_tool(&request.tool.id)
                    .cloned()
                    .unwrap_or_default();
                tool.id = request.tool.id.clone();
                tool.merge(request.tool.clone());
                view.activity.tool(request.tool.clone(), false);
                // The call's card, if due, goes up before the poll that asks about it.
                if let Err(e) = view.activity.flush().await {
                    tracing::debug!(room = %self.room, error = %e, "card update deferred");
                }
                self.journal_cards(view).await;
                self.approvals
                    .open(&ctx, &self.room, request, tool, &view.prompter)
                    .await;
            }
            (AgentEvent::Permission(request), None) => {
                let title = request
                    .tool
                    .title
                    .clone()
                    .unwrap_or_else(|| request.tool.id.clone());
                refuse_permission(request);
                self.notice(strings::permission_outside_turn(&title)).await;
            }
            (AgentEvent::Commands(list), _) => self.commands = list,
            (AgentEvent::ModeChanged(mode), _) => {
                if let Some(session) = self.session.as_mut() {
                    session.settings.current_mode = Some(mode);
                }
            }
            (AgentEvent::Options(options), _) => {
                if let Some(session) = self.session.as_mut() {
                    session.settings.options = options;
                }
            }
            (AgentEvent::Usage { used, size }, _) => self.usage.context = Some((used, size)),
            (AgentEvent::MessageChunk(text), None) => {
                tracing::warn!(agent = %ctx.agent_id, room = %self.room, %text, "answer text outside a turn; not shown")
            }
            (other, _) => {
                tracing::debug!(agent = %ctx.agent_id, event = ?other, "update not shown")
            }
        }
    }

    /// A typed answer to a poll: `target` is the poll replied to, if any.
    async fn answer_poll(&mut self, reply: &Reply, target: Option<&str>, by: &str) -> Picked {
        // A reply names its poll; one that is not open any more is never taken for another
        // (that could approve a tool nobody looked at). Without a reply, the only open poll.
        let target = match target {
            Some(t) if self.approvals.is_poll(t) => t.to_owned(),
            Some(_) => {
                self.notice(strings::POLL_NOT_OPEN).await;
                return Picked::NoPoll;
            }
            None => match self.approvals.only_poll() {
                Ok(Some(only)) => only.to_owned(),
                Ok(None) => {
                    self.notice(strings::NO_OPEN_POLL).await;
                    return Picked::NoPoll;
                }
                Err(count) => {
                    self.notice(strings::several_polls(count)).await;
                    return Picked::NoSuchChoice;
                }
            },
        };
        let ctx = self.ctx.clone();
        let picked = self
            .approvals
            .pick(&ctx, &self.room, &target, by, |c| poll::pick(c, reply))
            .await;
        match &picked {
            Picked::NotApprover => self.notice(strings::not_an_approver(by)).await,
            Picked::NoSuchChoice => self.notice(strings::NO_SUCH_CHOICE).await,
            Picked::NoPoll => self.notice(strings::NO_OPEN_POLL).await,
            Picked::Answered | Picked::Stop => {}
        }
        picked
    }

    /// Stops the running turn for `by`: `session/cancel`, and every open poll answered
    /// `cancelled` (`from_poll` is the poll whose Stop choice was used, if any).
    async fn stop_turn(
        &mut self,
        by: String,
        from_poll: Option<&str>,
        session_id: &str,
        control: &mut TurnControl,
    ) {
        if control.stopped_by.is_some() {
            return;
        }
        tracing::info!(agent = %self.ctx.agent_id, room = %self.room, by, "cancelling the turn");
        let ctx = self.ctx.clone();
        if let Err(e) = ctx.agent.cancel(session_id).await {
            tracing::warn!(error = %e, "session/cancel failed");
        }
        // ACP: after `session/cancel` the client answers its open permission requests
        // `cancelled`.
        self.approvals
            .cancel_all(&ctx, &self.room, |event| {
                if Some(event) == from_poll {
                    PollOutcome::Stopped { by: by.clone() }
                } else {
                    PollOutcome::TurnStopped
                }
            })
            .await;
        control.stopped_by = Some(by);
    }

    /// The poll answer a message holds: a bare number or emoji replying to an open poll.
    fn poll_reply(&self, message: &IncomingMessage) -> Option<Reply> {
        message
            .reply_to
            .as_deref()
            .filter(|t| self.approvals.is_poll(t))
            .and_then(|_| poll::parse_reply(&message.body))
    }

    /// A typed poll answer carried by `message`; the Stop choice stops the turn.
    async fn answer_typed(
        &mut self,
        reply: &Reply,
        message: IncomingMessage,
        session_id: &str,
        control: &mut TurnControl,
    ) {
        let target = message.reply_to.as_deref();
        if self.answer_poll(reply, target, &message.sender).await == Picked::Stop {
            self.stop_turn(message.sender, target, session_id, control)
                .await;
        }
    }

    async fn handle_input_during_turn(
        &mut self,
        input: ChannelInput,
        session_id: &str,
        view: &TurnView,
        control: &mut TurnControl,
    ) {
        match input {
            // Sent at start-up, before any turn; should one come later, it waits its turn.
            ChannelInput::Rerun(message) => self.queue.push_back(Queued::rerun(message)),
            ChannelInput::Resumed { message, reaction } => {
                self.queue_behind(message, reaction).await
            }
            ChannelInput::Prompt(message) => {
                // A bare number or emoji replying to a poll answers it.
                if let Some(reply) = self.poll_reply(&message) {
                    let event_id = message.event_id.clone();
                    self.answer_typed(&reply, message, session_id, control)
                        .await;
                    self.settle(&event_id).await;
                    return;
                }
                self.queue_behind(message, None).await;
            }
            ChannelInput::PollReply(message) => {
                if let Some(reply) = self.poll_reply(&message) {
                    self.answer_typed(&reply, message, session_id, control)
                        .await;
                }
            }
            ChannelInput::Report(reply) => {
                let _ = reply.send(self.report(true, false));
            }
            ChannelInput::Command(command, message) => {
                let event_id = message.event_id.clone();
                match command {
                    Command::Stop(_) => {
                        self.stop_turn(message.sender, None, session_id, control)
                            .await
                    }
                    Command::Answer(reply) => {
                        self.answer_typed(&reply, message, session_id, control)
                            .await
                    }
                    other => self.answer_command(&other, true).await,
                }
                self.settle(&event_id).await;
            }
            ChannelInput::Reaction { by, target, key } => {
                if poll::is_stop_key(&key)
                    && (view.stream.event_ids().contains(&target)
                        || self.approvals.is_stop_target(&target))
                {
                    let from_poll = self.approvals.is_poll(&target).then_some(target.as_str());
                    self.stop_turn(by.clone(), from_poll, session_id, control)
                        .await;
                } else if self.approvals.is_poll(&target) {
                    let ctx = self.ctx.clone();
                    let picked = self
                        .approvals
                        .pick(&ctx, &self.room, &target, &by, |c| {
                            poll::by_reaction(c, &key)
                        })
                        .await;
                    if picked == Picked::Stop {
                        self.stop_turn(by, Some(&target), session_id, control).await;
                    }
                }
            }
        }
    }
}

/// Answers a permission request that came outside any turn (nobody is there to approve it)
/// with the agent's own reject option: "reject always" first, so a small model does not
/// retry the same call in a loop.
fn refuse_permission(request: PermissionRequest) {
    let pick = |kind| {
        request
            .options
            .iter()
            .find(|o| o.kind == kind)
            .map(|o| o.id.clone())
    };
    let answer = pick(PermissionKind::RejectAlways)
        .or_else(|| pick(PermissionKind::RejectOnce))
        .map(PermissionAnswer::Selected)
        .unwrap_or(PermissionAnswer::Cancelled);
    let _ = request.reply.send(answer);
}

/// Tells the room that a turn must wait for a slot of the process pool.
async fn tell_waiting(ctx: &AgentContext, room: &str, waiting: Waiting) {
    let text = strings::waiting_for_slot(&ctx.display_name, waiting.max_running, &waiting.busy);
    post_notice(ctx, room, text).await;
}

/// Posts a one-off notice in `room` as the agent; a failure is logged, never fatal.
async fn post_notice(ctx: &AgentContext, room: &str, text: String) {
    let txn = format!("notice-{}", unique_suffix());
    if let Err(e) = ctx.chat.send(room, &txn, &OutMessage::notice(text)).await {
        tracing::warn!(agent = %ctx.agent_id, room = %room, error = %e, "could not post a notice");
    }
}

/// A config option's value as people read it.
fn option_value(option: &super::agent::ConfigOption) -> String {
    match &option.value {
        ConfigValue::Choice { current, choices } => choices
            .iter()
            .find(|(id, _)| id == current)
            .map(|(_, name)| name.clone())
            .unwrap_or_else(|| current.clone()),
        ConfigValue::Toggle(on) => on_off(*on),
    }
}

fn on_off(on: bool) -> String {
    match on {
        true => "on".to_owned(),
        false => "off".to_owned(),
    }
}

/// Outbox items for the `undelivered` messages of `room`.
fn outbox_items(room: &str, undelivered: Vec<Undelivered>) -> Vec<OutboxItem> {
    undelivered
        .into_iter()
        .map(|u| OutboxItem {
            id: 0,
            room_id: room.to_owned(),
            event_id: u.event_id,
            txn_id: u.txn,
            body: u.content.body,
            html: u.content.html,
            notice: u.content.notice,
        })
        .collect()
}

fn cut_message(event_id: &str, kind: &str, content: OutMessage) -> CutMessage {
    CutMessage {
        event_id: Some(event_id.to_owned()),
        txn_id: None,
        kind: kind.to_owned(),
        body: content.body,
        html: content.html,
        notice: content.notice,
    }
}

fn stop_reason_label(reason: &StopReason) -> &'static str {
    match reason {
        StopReason::EndTurn => "end_turn",
        StopReason::MaxTokens => "max_tokens",
        StopReason::MaxTurnRequests => "max_turn_requests",
        StopReason::Refusal => "refusal",
        StopReason::Cancelled => "cancelled",
    }
}

async fn sleep_until_opt(at: Option<tokio::time::Instant>) {
    match at {
        Some(at) => tokio::time::sleep_until(at).await,
        None => std::future::pending().await,
    }
}

/// A unique suffix for transaction IDs of one-off notices.
fn unique_suffix() -> String {
    use std::sync::atomic::{AtomicU64, Ordering};
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    format!(
        "{}-{}",
        crate::store::now_ms(),
        COUNTER.fetch_add(1, Ordering::Relaxed)
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::agent::Reopen;
    use crate::core::fakes::{FakeAgent, FakeChat, Script, Sent};
    use crate::core::poll::Reply;
    use crate::core::pool::PoolSettings;

    async fn channel(
        agent: Arc<FakeAgent>,
        chat: Arc<FakeChat>,
    ) -> (mpsc::UnboundedSender<ChannelInput>, Store) {
        channel_with_timeout(agent, chat, Duration::from_secs(60)).await
    }

    async fn channel_with_timeout(
        agent: Arc<FakeAgent>,
        chat: Arc<FakeChat>,
        timeout: Duration,
    ) -> (mpsc::UnboundedSender<ChannelInput>, Store) {
        channel_with(agent, chat, timeout, None).await
    }

    async fn channel_with(
        agent: Arc<FakeAgent>,
        chat: Arc<FakeChat>,
        timeout: Duration,
        quiet_note: Option<Duration>,
    ) -> (mpsc::UnboundedSender<ChannelInput>, Store) {
        let store = Store::in_memory().await.unwrap();
        let pool_port: Arc<dyn AgentPort> = agent.clone();
        let pool = Pool::new(
            PoolSettings::default(),
            vec![("demo".into(), "Demo".into(), pool_port)],
        );
        let ctx = AgentContext {
            permissions: PermissionSettings {
                timeout,
                propose_stop_after: 2,
            },
            quiet_note,
            ..context("demo", agent, chat, &store, pool)
        };
        let (tx, rx) = mpsc::unbounded_channel();
        let channel = Channel::new(Arc::new(ctx), "!room".into(), rx, CancellationToken::new());
        tokio::spawn(channel.run());
        (tx, store)
    }

    /// The context of agent `id` (`@id:x`, shown as `Demo` for `demo`, else the ID).
    fn context(
        id: &str,
        agent: Arc<FakeAgent>,
        chat: Arc<FakeChat>,
        store: &Store,
        pool: Arc<Pool>,
    ) -> AgentContext {
        AgentContext {
            agent_id: id.into(),
            display_name: match id {
                "demo" => "Demo".into(),
                other => other.into(),
            },
            user_id: format!("@{id}:x"),
            agent,
            chat,
            store: store.clone(),
            workspace: PathBuf::from("/tmp"),
            stream: StreamSettings {
                interval: Duration::from_millis(50),
                max_edits: 100,
                max_bytes: 10_000,
                max_reply_bytes: 1_000_000,
                patience: crate::render::live::MAX_OUTAGE,
            },
            command_prefix: "!".into(),
            allowed: AccessList::new(&["@alice:x"]),
            agent_users: vec!["@demo:x".into()],
            approvers: AccessList::new(&["@alice:x"]),
            permissions: PermissionSettings {
                timeout: Duration::from_secs(60),
                propose_stop_after: 2,
            },
            verbosity: Verbosity::All,
            reinject_max_chars: 10_000,
            quiet_note: None,
            rerun_interrupted: false,
            pool,
            handoffs: None,
        }
    }

    /// Puts Alice's prompt `id` in the room's transcript, as an earlier run recorded it.
    async fn earlier_prompt(store: &Store, id: &str, body: &str) {
        store
            .append_transcript(
                "!room",
                "demo",
                TranscriptLine {
                    role: Role::User,
                    sender: "@alice:x",
                    event_id: Some(id),
                    body,
                    stop_reason: None,
                },
            )
            .await
            .unwrap();
    }

    fn message(id: &str, body: &str) -> IncomingMessage {
        IncomingMessage {
            agent_id: "demo".into(),
            room_id: "!room".into(),
            event_id: id.into(),
            sender: "@alice:x".into(),
            body: body.into(),
            timestamp_ms: 0,
            reply_to: None,
            ..Default::default()
        }
    }

    /// Waits (real time: the store runs on its own thread) until `done` holds, or 10 s.
    async fn settle_until(done: impl Fn() -> bool) {
        let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
        while !done() && tokio::time::Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        // Let the turn finish its bookkeeping.
        tokio::time::sleep(Duration::from_millis(100)).await;
    }

    #[tokio::test]
    async fn at_shutdown_queued_prompts_stay_waiting_for_the_next_start() {
        let agent = FakeAgent::new(Script::UntilCancelled);
        let chat = FakeChat::new();
        let store = Store::in_memory().await.unwrap();
        let port: Arc<dyn AgentPort> = agent.clone();
        let pool = Pool::new(
            PoolSettings::default(),
            vec![("demo".into(), "Demo".into(), port)],
        );
        let ctx = Arc::new(context("demo", agent.clone(), chat.clone(), &store, pool));
        let (tx, rx) = mpsc::unbounded_channel();
        let shutdown = CancellationToken::new();
        let task = tokio::spawn(Channel::new(ctx, "!room".into(), rx, shutdown.clone()).run());
        for (id, body) in [("$1", "first"), ("$2", "second")] {
            let pending = crate::store::PendingInput {
                room_id: "!room".into(),
                agent_id: "demo".into(),
                event_id: id.into(),
                kind: crate::store::PendingKind::Prompt,
                sender: "@alice:x".into(),
                body: body.into(),
                reply_to: None,
                sent_at: 0,
                queued_reaction: None,
            };
            store
                .admit(id, "demo", "!room", Some(&pending))
                .await
                .unwrap();
            tx.send(ChannelInput::Prompt(message(id, body))).unwrap();
        }
        settle_until(|| chat.log().iter().any(|s| matches!(s, Sent::React { .. }))).await;
        shutdown.cancel();
        tokio::time::timeout(Duration::from_secs(10), task)
            .await
            .unwrap()
            .unwrap();
        let shown = chat.shown("!room");
        assert!(
            shown
                .iter()
                .any(|t| t.contains("1 queued message(s) will be answered when it is back")),
            "{shown:?}"
        );
        let waiting = store.pending_inputs("demo").await.unwrap();
        assert_eq!(waiting.len(), 1);
        assert_eq!(waiting[0].event_id, "$2");
        assert!(waiting[0].queued_reaction.is_some(), "its ⏳ is remembered");
        assert!(
            !chat.log().iter().any(|s| matches!(s, Sent::Redact { .. })),
            "the ⏳ stays: the message still waits"
        );
        assert_eq!(agent.prompt_texts(), vec!["first"]);
    }

    #[tokio::test]
    async fn a_resumed_prompt_keeps_its_mark_until_its_turn_and_a_command_is_settled() {
        let agent = FakeAgent::new(Script::Chunks(vec!["ok".into()], Duration::from_millis(50)));
        let chat = FakeChat::new();
        let (tx, store) = channel(agent.clone(), chat.clone()).await;
        let command = crate::store::PendingInput {
            room_id: "!room".into(),
            agent_id: "demo".into(),
            event_id: "$c".into(),
            kind: crate::store::PendingKind::Command,
            sender: "@alice:x".into(),
            body: "!logs".into(),
            reply_to: None,
            sent_at: 0,
            queued_reaction: None,
        };
        store
            .admit("$c", "demo", "!room", Some(&command))
            .await
            .unwrap();
        tx.send(ChannelInput::Resumed {
            message: message("$1", "first"),
            reaction: Some("$old-mark".into()),
        })
        .unwrap();
        tx.send(ChannelInput::Command(
            Command::Logs(Vec::new()),
            message("$c", "!logs"),
        ))
        .unwrap();
        settle_until(|| agent.prompts().len() == 1).await;
        settle_until(|| {
            chat.log()
                .iter()
                .any(|s| matches!(s, Sent::Redact { event_id, .. } if event_id == "$old-mark"))
        })
        .await;
        assert!(store.pending_inputs("demo").await.unwrap().is_empty());
    }

    #[tokio::test]
    async fn prompts_queue_behind_the_running_turn_and_run_in_order() {
        let agent = FakeAgent::new(Script::Chunks(
            vec!["a".into(), "b".into()],
            Duration::from_millis(100),
        ));
        let chat = FakeChat::new();
        let (tx, store) = channel(agent.clone(), chat.clone()).await;
        tx.send(ChannelInput::Prompt(message("$1", "first")))
            .unwrap();
        tx.send(ChannelInput::Prompt(message("$2", "second")))
            .unwrap();
        settle_until(|| chat.shown("!room") == vec!["ab", "ab"]).await;
        let prompts = agent.prompt_texts();
        assert_eq!(prompts, vec!["first", "second"]);
        assert_eq!(chat.shown("!room"), vec!["ab", "ab"]);
        // The second prompt was visibly queued, then the mark was removed.
        let log = chat.log();
        assert!(log.iter().any(
            |s| matches!(s, Sent::React { event_id, key, .. } if event_id == "$2" && key == "⏳")
        ));
        assert!(log.iter().any(|s| matches!(s, Sent::Redact { .. })));
        let t = store.transcript("!room", "demo").await.unwrap();
        let roles: Vec<&str> = t.iter().map(|e| e.role.as_str()).collect();
        assert_eq!(roles, vec!["user", "agent", "user", "agent"]);
    }

    #[tokio::test]
    async fn stop_cancels_the_turn_and_says_who_stopped_it() {
        let agent = FakeAgent::new(Script::UntilCancelled);
        let chat = FakeChat::new();
        let (tx, store) = channel(agent, chat.clone()).await;
        tx.send(ChannelInput::Prompt(message("$1", "go"))).unwrap();
        settle_until(|| !chat.shown("!room").is_empty()).await;
        tx.send(ChannelInput::Command(
            Command::Stop(vec![]),
            message("$2", "!stop"),
        ))
        .unwrap();
        settle_until(|| chat.shown("!room")[0].contains("Stopped")).await;
        assert_eq!(
            chat.shown("!room"),
            vec!["working\n\n⏹️ Stopped by @alice:x."]
        );
        let t = store.transcript("!room", "demo").await.unwrap();
        assert_eq!(t[1].stop_reason.as_deref(), Some("cancelled"));
    }

    #[tokio::test]
    async fn a_stop_reaction_on_the_reply_cancels_but_one_elsewhere_does_not() {
        let agent = FakeAgent::new(Script::UntilCancelled);
        let chat = FakeChat::new();
        let (tx, _) = channel(agent, chat.clone()).await;
        tx.send(ChannelInput::Prompt(message("$1", "go"))).unwrap();
        settle_until(|| !chat.shown("!room").is_empty()).await;
        tx.send(ChannelInput::Reaction {
            by: "@bob:x".into(),
            target: "$unrelated".into(),
            key: "🛑".into(),
        })
        .unwrap();
        tokio::time::sleep(Duration::from_millis(300)).await;
        assert_eq!(chat.shown("!room"), vec!["working"]);
        let reply = match &chat.log()[0] {
            Sent::Send { event_id, .. } => event_id.clone(),
            other => panic!("{other:?}"),
        };
        tx.send(ChannelInput::Reaction {
            by: "@bob:x".into(),
            target: reply,
            key: "🛑\u{fe0f}".into(),
        })
        .unwrap();
        settle_until(|| chat.shown("!room")[0].contains("Stopped")).await;
        assert_eq!(
            chat.shown("!room"),
            vec!["working\n\n⏹️ Stopped by @bob:x."]
        );
    }

    #[tokio::test]
    async fn an_agent_error_is_shown_as_a_notice() {
        let agent = FakeAgent::new(Script::Error(
            "exceeded maximum tool call iterations (40)".into(),
        ));
        let chat = FakeChat::new();
        let (tx, _) = channel(agent, chat.clone()).await;
        tx.send(ChannelInput::Prompt(message("$1", "go"))).unwrap();
        settle_until(|| !chat.shown("!room").is_empty()).await;
        let shown = chat.messages("!room");
        assert_eq!(shown.len(), 1);
        assert!(shown[0].notice);
        assert!(
            shown[0]
                .body
                .contains("exceeded maximum tool call iterations"),
            "{}",
            shown[0].body
        );
    }

    #[tokio::test]
    async fn stop_when_idle_says_nothing_runs() {
        let agent = FakeAgent::new(Script::UntilCancelled);
        let chat = FakeChat::new();
        let (tx, _) = channel(agent, chat.clone()).await;
        tx.send(ChannelInput::Command(
            Command::Stop(vec![]),
            message("$1", "!stop"),
        ))
        .unwrap();
        settle_until(|| !chat.shown("!room").is_empty()).await;
        assert_eq!(chat.shown("!room"), vec![strings::NOTHING_TO_STOP]);
    }

    /// The event ID and current body of the poll message in `room`.
    fn poll_of(chat: &FakeChat) -> Option<(String, String)> {
        let shown = chat.messages("!room");
        let ids: Vec<String> = chat
            .log()
            .into_iter()
            .filter_map(|s| match s {
                Sent::Send { event_id, .. } => Some(event_id),
                _ => None,
            })
            .collect();
        ids.into_iter()
            .zip(shown)
            .find(|(_, m)| m.body.starts_with("🔐"))
            .map(|(id, m)| (id, m.body))
    }

    async fn start_poll(
        timeout: Duration,
    ) -> (mpsc::UnboundedSender<ChannelInput>, Arc<FakeChat>, String) {
        start_polls(timeout, 1).await
    }

    async fn start_polls(
        timeout: Duration,
        times: u32,
    ) -> (mpsc::UnboundedSender<ChannelInput>, Arc<FakeChat>, String) {
        let agent = FakeAgent::new(Script::AskPermission(times));
        let chat = FakeChat::new();
        let (tx, _) = channel_with_timeout(agent, chat.clone(), timeout).await;
        tx.send(ChannelInput::Prompt(message("$1", "go"))).unwrap();
        settle_until(|| poll_of(&chat).is_some()).await;
        let (poll, _) = poll_of(&chat).expect("a poll was posted");
        (tx, chat, poll)
    }

    fn react(tx: &mpsc::UnboundedSender<ChannelInput>, by: &str, target: &str, key: &str) {
        tx.send(ChannelInput::Reaction {
            by: by.into(),
            target: target.into(),
            key: key.into(),
        })
        .unwrap();
    }

    fn reply_said(chat: &FakeChat) -> Vec<String> {
        chat.shown("!room")
            .into_iter()
            .filter(|b| b.starts_with("permission:"))
            .collect()
    }

    #[tokio::test]
    async fn a_poll_is_pre_reacted_and_answered_by_an_approvers_reaction_only() {
        let (tx, chat, poll) = start_poll(Duration::from_secs(60)).await;
        let keys: Vec<String> = chat
            .log()
            .into_iter()
            .filter_map(|s| match s {
                Sent::React { event_id, key, .. } if event_id == poll => Some(key),
                _ => None,
            })
            .collect();
        assert_eq!(keys, vec!["✅", "🔁", "✋", "❌", "🛑"]);
        let mentions = chat.log().into_iter().find_map(|s| match s {
            Sent::Send { event_id, msg, .. } if event_id == poll => Some(msg.mentions),
            _ => None,
        });
        assert_eq!(
            mentions,
            Some(vec!["@alice:x".to_string()]),
            "the prompter, an approver, is notified"
        );
        react(&tx, "@mallory:x", &poll, "✅");
        tokio::time::sleep(Duration::from_millis(200)).await;
        assert!(
            reply_said(&chat).is_empty(),
            "a non-approver changed nothing"
        );
        react(&tx, "@alice:x", &poll, "❌\u{fe0f}");
        settle_until(|| !reply_said(&chat).is_empty()).await;
        assert_eq!(reply_said(&chat), vec!["permission: never"]);
        let (_, body) = poll_of(&chat).unwrap();
        assert!(
            body.ends_with("❌ Refused by @alice:x: Never allow bash in this session"),
            "{body}"
        );
        // A later reaction on the settled poll changes nothing.
        react(&tx, "@alice:x", &poll, "✅");
        tokio::time::sleep(Duration::from_millis(200)).await;
        assert_eq!(reply_said(&chat), vec!["permission: never"]);
        // The tool card ended failed, not "in progress".
        assert!(
            chat.shown("!room")
                .iter()
                .any(|b| b.starts_with("❌ 💻 bash: ls · failed")),
            "{:?}",
            chat.shown("!room")
        );
    }

    #[tokio::test]
    async fn a_typed_reply_answers_the_poll_it_replies_to() {
        let (tx, chat, poll) = start_poll(Duration::from_secs(60)).await;
        let mut answer = message("$2", "2");
        answer.reply_to = Some(poll.clone());
        tx.send(ChannelInput::Prompt(answer)).unwrap();
        settle_until(|| !reply_said(&chat).is_empty()).await;
        assert_eq!(reply_said(&chat), vec!["permission: allow_always"]);
    }

    #[tokio::test]
    async fn a_poll_command_without_a_reply_answers_the_only_open_poll() {
        let (tx, chat, _) = start_poll(Duration::from_secs(60)).await;
        tx.send(ChannelInput::Command(
            Command::Answer(Reply::Allow),
            message("$2", "!allow"),
        ))
        .unwrap();
        settle_until(|| !reply_said(&chat).is_empty()).await;
        assert_eq!(reply_said(&chat), vec!["permission: allow"]);
        assert!(
            poll_of(&chat)
                .unwrap()
                .1
                .ends_with("✅ Allowed by @alice:x: Allow")
        );
    }

    #[tokio::test]
    async fn an_unanswered_poll_expires_into_the_reject_option() {
        let (_tx, chat, _) = start_poll(Duration::from_millis(300)).await;
        settle_until(|| !reply_said(&chat).is_empty()).await;
        assert_eq!(reply_said(&chat), vec!["permission: reject"]);
        assert!(
            poll_of(&chat)
                .unwrap()
                .1
                .contains("Nobody answered in time")
        );
    }

    #[tokio::test]
    async fn stop_on_a_poll_answers_it_cancelled_and_stops_the_turn() {
        let (tx, chat, poll) = start_poll(Duration::from_secs(60)).await;
        react(&tx, "@alice:x", &poll, "🛑");
        settle_until(|| chat.shown("!room").iter().any(|b| b.contains("Stopped by"))).await;
        assert!(
            chat.shown("!room")
                .contains(&"⏹️ Stopped by @alice:x.".to_string()),
            "{:?}",
            chat.shown("!room")
        );
        assert!(
            poll_of(&chat)
                .unwrap()
                .1
                .ends_with("🛑 @alice:x stopped the turn."),
            "{:?}",
            poll_of(&chat)
        );
        assert!(
            reply_said(&chat).is_empty(),
            "the agent stopped without going on"
        );
    }

    #[tokio::test]
    async fn refusals_in_one_turn_lead_to_a_stop_proposal() {
        // The test context proposes stopping after two refusals.
        let (tx, chat, first) = start_polls(Duration::from_secs(60), 2).await;
        react(&tx, "@alice:x", &first, "✋");
        settle_until(|| {
            chat.shown("!room")
                .iter()
                .filter(|b| b.starts_with("🔐"))
                .count()
                == 2
        })
        .await;
        let second = chat
            .log()
            .into_iter()
            .filter_map(|s| match s {
                Sent::Send { event_id, msg, .. } if msg.body.starts_with("🔐") => Some(event_id),
                _ => None,
            })
            .nth(1)
            .unwrap();
        react(&tx, "@alice:x", &second, "✋");
        settle_until(|| {
            chat.shown("!room")
                .iter()
                .any(|b| b.contains("were refused"))
        })
        .await;
        let proposal: Vec<String> = chat
            .shown("!room")
            .into_iter()
            .filter(|b| b.contains("were refused"))
            .collect();
        assert_eq!(proposal.len(), 1, "{:?}", chat.shown("!room"));
        assert!(proposal[0].starts_with("✋ 2 tool calls were refused"));
    }

    #[tokio::test]
    async fn a_typed_answer_replying_to_anything_but_an_open_poll_answers_nothing() {
        let (tx, chat, _) = start_poll(Duration::from_secs(60)).await;
        let mut answer = message("$2", "!allow");
        answer.reply_to = Some("$some-old-poll".into());
        tx.send(ChannelInput::Command(Command::Answer(Reply::Allow), answer))
            .unwrap();
        settle_until(|| {
            chat.shown("!room")
                .contains(&strings::POLL_NOT_OPEN.to_string())
        })
        .await;
        assert!(
            chat.shown("!room")
                .contains(&strings::POLL_NOT_OPEN.to_string())
        );
        assert!(reply_said(&chat).is_empty(), "the open poll is still open");
    }

    #[tokio::test]
    async fn a_slash_command_starts_its_prompt_and_the_conversation_waits_for_the_next() {
        let agent = FakeAgent::new(Script::Chunks(vec!["ok".into()], Duration::ZERO))
            .with_commands(&[("compact", "Compact the context")]);
        let chat = FakeChat::new();
        let (tx, store) = channel(agent.clone(), chat.clone()).await;
        earlier_prompt(&store, "$0", "earlier").await;
        tx.send(ChannelInput::Prompt(message("$1", "/compact now")))
            .unwrap();
        tx.send(ChannelInput::Prompt(message("$2", "next")))
            .unwrap();
        settle_until(|| agent.prompts().len() == 2).await;
        let prompts = agent.prompt_texts();
        assert_eq!(prompts[0], "/compact now");
        assert!(
            prompts[1].starts_with(continuity::PREAMBLE_HEADER) && prompts[1].contains("> earlier"),
            "{}",
            prompts[1]
        );
    }

    #[tokio::test]
    async fn a_new_session_gets_the_earlier_conversation_until_a_fresh_start() {
        let agent = FakeAgent::new(Script::Chunks(vec!["ok".into()], Duration::from_millis(10)));
        let chat = FakeChat::new();
        let (tx, store) = channel(agent.clone(), chat.clone()).await;
        // A transcript from before a restart: the new channel has no session yet.
        earlier_prompt(&store, "$0", "earlier question").await;
        store
            .append_transcript(
                "!room",
                "demo",
                TranscriptLine {
                    role: Role::Agent,
                    sender: "@demo:x",
                    event_id: None,
                    body: "earlier answer",
                    stop_reason: Some("end_turn"),
                },
            )
            .await
            .unwrap();
        tx.send(ChannelInput::Prompt(message("$1", "next")))
            .unwrap();
        settle_until(|| agent.prompts().len() == 1).await;
        let first = agent.prompts()[0].1.clone();
        assert!(first.starts_with(continuity::PREAMBLE_HEADER), "{first}");
        assert!(first.contains("> earlier question") && first.contains("> earlier answer"));
        assert!(first.ends_with("[New message]\nnext"), "{first}");
        assert_eq!(
            store.continuity("!room", "demo").await.unwrap().as_deref(),
            Some("reinjected")
        );
        // The same session goes on without a preamble.
        tx.send(ChannelInput::Prompt(message("$2", "again")))
            .unwrap();
        settle_until(|| agent.prompts().len() == 2).await;
        assert_eq!(agent.prompts()[1].1, "again");
        // A fresh start: a new session, and nothing earlier is given to it.
        tx.send(ChannelInput::Command(
            Command::NewConversation(vec![]),
            message("$3", "!new"),
        ))
        .unwrap();
        tx.send(ChannelInput::Prompt(message("$4", "hello again")))
            .unwrap();
        settle_until(|| agent.prompts().len() == 3).await;
        let third = &agent.prompts()[2];
        assert_eq!(third.1, "hello again");
        assert_ne!(third.0, agent.prompts()[1].0, "a new session");
        assert!(
            chat.shown("!room")
                .iter()
                .any(|b| b.starts_with("🆕 Fresh start"))
        );
    }

    #[tokio::test]
    async fn a_session_whose_process_died_is_replaced_before_the_next_prompt() {
        let agent = FakeAgent::new(Script::Chunks(vec!["ok".into()], Duration::from_millis(10)));
        let chat = FakeChat::new();
        let (tx, _) = channel(agent.clone(), chat.clone()).await;
        tx.send(ChannelInput::Prompt(message("$1", "first")))
            .unwrap();
        settle_until(|| chat.shown("!room").len() == 1).await;
        agent.kill_session(&agent.prompts()[0].0);
        tx.send(ChannelInput::Prompt(message("$2", "second")))
            .unwrap();
        settle_until(|| chat.shown("!room").len() == 2).await;
        let (session, text) = agent.prompts()[1].clone();
        assert_ne!(session, agent.prompts()[0].0, "a new session");
        assert!(text.starts_with(continuity::PREAMBLE_HEADER), "{text}");
        assert!(text.ends_with("[New message]\nsecond"), "{text}");
        assert_eq!(chat.shown("!room"), vec!["ok", "ok"], "nothing was lost");
    }

    #[tokio::test]
    async fn an_agent_that_can_load_gets_its_session_back_without_a_preamble() {
        let agent = FakeAgent::new(Script::Chunks(vec!["ok".into()], Duration::from_millis(10)))
            .with_reopen(Reopen::Load);
        let chat = FakeChat::new();
        let (tx, store) = channel(agent.clone(), chat.clone()).await;
        tx.send(ChannelInput::Prompt(message("$1", "first")))
            .unwrap();
        settle_until(|| chat.shown("!room").len() == 1).await;
        let first_session = agent.prompts()[0].0.clone();
        agent.kill_session(&first_session);
        tx.send(ChannelInput::Prompt(message("$2", "second")))
            .unwrap();
        settle_until(|| chat.shown("!room").len() == 2).await;
        assert_eq!(agent.reopened(), vec![first_session.clone()]);
        assert_eq!(
            agent.prompts()[1],
            (first_session.clone(), "second".to_owned()),
            "the same session, and no preamble: the agent remembers"
        );
        assert_eq!(
            store.continuity("!room", "demo").await.unwrap().as_deref(),
            Some("loaded")
        );
        // After a fresh start the old session is not loaded back.
        tx.send(ChannelInput::Command(
            Command::NewConversation(vec![]),
            message("$3", "!new"),
        ))
        .unwrap();
        tx.send(ChannelInput::Prompt(message("$4", "third")))
            .unwrap();
        settle_until(|| agent.prompts().len() == 3).await;
        assert_ne!(agent.prompts()[2].0, first_session, "a new session");
        assert_eq!(agent.prompts()[2].1, "third");
        assert_eq!(agent.reopened().len(), 1);
    }

    #[tokio::test]
    async fn a_session_the_agent_cannot_load_is_replaced_with_re_injection() {
        let agent = FakeAgent::new(Script::Chunks(vec!["ok".into()], Duration::from_millis(10)))
            .with_reopen(Reopen::Load);
        let chat = FakeChat::new();
        let (tx, store) = channel(agent.clone(), chat.clone()).await;
        // A session saved by an earlier run that this agent does not know.
        store.save_session("!room", "demo", "gone").await.unwrap();
        store
            .append_transcript(
                "!room",
                "demo",
                TranscriptLine {
                    role: Role::User,
                    sender: "@a:x",
                    event_id: None,
                    body: "before",
                    stop_reason: None,
                },
            )
            .await
            .unwrap();
        tx.send(ChannelInput::Prompt(message("$1", "after")))
            .unwrap();
        settle_until(|| chat.shown("!room").len() == 1).await;
        let (session, text) = agent.prompts()[0].clone();
        assert_ne!(session, "gone");
        assert!(text.starts_with(continuity::PREAMBLE_HEADER), "{text}");
        assert_eq!(
            store.continuity("!room", "demo").await.unwrap().as_deref(),
            Some("reinjected")
        );
    }

    #[tokio::test]
    async fn an_agent_crash_shows_its_stderr_only_where_everyone_is_allowed() {
        let agent = FakeAgent::new(Script::Exit("exit code 3".into()));
        agent.set_stderr("panicked at src/main.rs:7\nbacktrace <here>");
        let chat = FakeChat::new();
        chat.set_members(&["@alice:x", "@demo:x"]);
        let (tx, _) = channel(agent.clone(), chat.clone()).await;
        tx.send(ChannelInput::Prompt(message("$1", "go"))).unwrap();
        settle_until(|| chat.shown("!room").iter().any(|b| b.starts_with("🩺"))).await;
        let shown = chat.shown("!room");
        assert!(shown.iter().any(|b| b.contains("exit code 3")), "{shown:?}");
        let stderr = shown.iter().find(|b| b.starts_with("🩺")).unwrap();
        assert!(stderr.contains("(2 lines)\npanicked at src/main.rs:7\nbacktrace <here>"));
        let html = chat
            .messages("!room")
            .into_iter()
            .find(|m| m.body.starts_with("🩺"))
            .and_then(|m| m.html)
            .unwrap();
        assert!(
            html.contains("<details>") && html.contains("backtrace &lt;here&gt;"),
            "{html}"
        );

        // With someone in the room who may not prompt, only a pointer to the log.
        chat.set_members(&["@alice:x", "@demo:x", "@stranger:y"]);
        tx.send(ChannelInput::Prompt(message("$2", "again")))
            .unwrap();
        settle_until(|| {
            chat.shown("!room")
                .iter()
                .filter(|b| b.starts_with("🩺"))
                .count()
                == 2
        })
        .await;
        let last = chat
            .shown("!room")
            .into_iter()
            .rfind(|b| b.starts_with("🩺"))
            .unwrap();
        assert!(last.contains("is in the Sidekicks log"), "{last}");
        assert!(!last.contains("panicked"));
    }

    fn ask_code_and_model() -> SessionSettings {
        use crate::core::agent::ConfigOption;
        SessionSettings {
            modes: vec![("ask".into(), "Ask".into()), ("code".into(), "Code".into())],
            current_mode: Some("ask".into()),
            options: vec![ConfigOption {
                id: "model".into(),
                name: "Model".into(),
                category: Some("model".into()),
                value: ConfigValue::Choice {
                    current: "small".into(),
                    choices: vec![
                        ("small".into(), "Small".into()),
                        ("large".into(), "Large".into()),
                    ],
                },
            }],
        }
    }

    #[tokio::test]
    async fn mode_and_model_change_in_place_and_the_last_change_asked_wins() {
        let agent = FakeAgent::new(Script::Chunks(vec!["ok".into()], Duration::ZERO))
            .with_settings(ask_code_and_model());
        let chat = FakeChat::new();
        let (tx, _) = channel(agent.clone(), chat.clone()).await;
        for (id, body, command) in [
            ("$1", "!mode", Command::Mode(vec![])),
            ("$2", "!mode code", Command::Mode(vec!["code".into()])),
            ("$3", "!model large", Command::Model(vec!["large".into()])),
            ("$4", "!mode ask", Command::Mode(vec!["ask".into()])),
            ("$5", "!mode Code", Command::Mode(vec!["Code".into()])),
            ("$6", "!mode fly", Command::Mode(vec!["fly".into()])),
        ] {
            tx.send(ChannelInput::Command(command, message(id, body)))
                .unwrap();
        }
        settle_until(|| chat.shown("!room").len() >= 6).await;
        let changes: Vec<(String, String)> = agent
            .changes()
            .into_iter()
            .map(|(_, what, value)| (what, value))
            .collect();
        let pair = |a: &str, b: &str| (a.to_owned(), b.to_owned());
        assert_eq!(
            changes,
            vec![
                pair("mode", "code"),
                pair("model", "large"),
                pair("mode", "ask"),
                pair("mode", "code"),
            ]
        );
        let shown = chat.shown("!room");
        assert!(shown[0].contains("Ask (`ask`) ← current"), "{shown:?}");
        assert!(shown[2].contains("model is now Large"), "{shown:?}");
        assert!(shown[5].contains("not one of the choices"), "{shown:?}");
        assert_eq!(agent.prompts().len(), 0, "settings never prompt");
        // The session was opened for the commands and kept: one session, never replaced.
        assert!(changes.len() == 4 && agent.reopened().is_empty());
    }

    #[tokio::test]
    async fn a_mode_change_during_a_turn_is_made_and_the_answer_stays_whole() {
        let chunks = ["one ", "two ", "three"].map(String::from).to_vec();
        let agent = FakeAgent::new(Script::Chunks(chunks, Duration::from_millis(150)))
            .with_settings(ask_code_and_model());
        let chat = FakeChat::new();
        let (tx, _) = channel(agent.clone(), chat.clone()).await;
        tx.send(ChannelInput::Prompt(message("$1", "go"))).unwrap();
        settle_until(|| !agent.prompts().is_empty()).await;
        tx.send(ChannelInput::Command(
            Command::Mode(vec!["code".into()]),
            message("$2", "!mode code"),
        ))
        .unwrap();
        settle_until(|| chat.shown("!room").iter().any(|t| t == "one two three")).await;
        assert_eq!(agent.changes().len(), 1);
        let shown = chat.shown("!room");
        assert!(
            shown.iter().any(|t| t.contains("mode is now Code")),
            "{shown:?}"
        );
    }

    #[tokio::test]
    async fn a_change_the_agent_cannot_make_in_place_leaves_the_session_alone() {
        let agent = FakeAgent::new(Script::Chunks(vec!["ok".into()], Duration::ZERO));
        let chat = FakeChat::new();
        let (tx, _) = channel(agent.clone(), chat.clone()).await;
        tx.send(ChannelInput::Prompt(message("$1", "hello")))
            .unwrap();
        tx.send(ChannelInput::Command(
            Command::Model(vec!["large".into()]),
            message("$2", "!model large"),
        ))
        .unwrap();
        tx.send(ChannelInput::Prompt(message("$3", "again")))
            .unwrap();
        settle_until(|| agent.prompts().len() == 2).await;
        let shown = chat.shown("!room");
        assert!(
            shown
                .iter()
                .any(|t| t.contains("does not offer a model choice") && t.contains("!new demo")),
            "{shown:?}"
        );
        let sessions: Vec<String> = agent.prompts().into_iter().map(|(s, _)| s).collect();
        assert_eq!(sessions[0], sessions[1], "the same session carries on");
    }

    #[tokio::test]
    async fn a_slash_command_the_agent_does_not_offer_is_answered_not_sent() {
        let agent = FakeAgent::new(Script::Chunks(vec!["ok".into()], Duration::ZERO))
            .with_commands(&[("review", "Review the changes")]);
        let chat = FakeChat::new();
        let (tx, _) = channel(agent.clone(), chat.clone()).await;
        tx.send(ChannelInput::Prompt(message("$1", "/deploy now")))
            .unwrap();
        tx.send(ChannelInput::Prompt(message("$2", "/review src")))
            .unwrap();
        tx.send(ChannelInput::Prompt(message("$3", "/usr/bin is odd")))
            .unwrap();
        settle_until(|| agent.prompts().len() == 2).await;
        let prompts = agent.prompt_texts();
        assert_eq!(prompts, vec!["/review src", "/usr/bin is odd"]);
        let shown = chat.shown("!room");
        assert!(
            shown[0].contains("has no command /deploy")
                && shown[0].contains("/review: Review the changes"),
            "{shown:?}"
        );
    }

    #[tokio::test]
    async fn logs_show_the_agents_stderr_where_everyone_may_read_it() {
        let agent = FakeAgent::new(Script::Chunks(vec![], Duration::ZERO));
        let chat = FakeChat::new();
        chat.set_members(&["@alice:x", "@demo:x"]);
        let (tx, _) = channel(agent.clone(), chat.clone()).await;
        tx.send(ChannelInput::Command(
            Command::Logs(vec![]),
            message("$1", "!logs"),
        ))
        .unwrap();
        settle_until(|| chat.shown("!room").len() == 1).await;
        agent.set_stderr("loading model\nready");
        tx.send(ChannelInput::Command(
            Command::Logs(vec![]),
            message("$2", "!logs"),
        ))
        .unwrap();
        settle_until(|| chat.shown("!room").len() == 2).await;
        let shown = chat.shown("!room");
        assert!(shown[0].contains("written nothing"), "{shown:?}");
        assert!(shown[1].contains("loading model"), "{shown:?}");
    }

    #[tokio::test]
    async fn a_turn_waiting_for_a_slot_says_so_keeps_listening_and_can_be_given_up() {
        let store = Store::in_memory().await.unwrap();
        let busy = FakeAgent::new(Script::UntilCancelled);
        let waiting = FakeAgent::new(Script::Chunks(vec!["ok".into()], Duration::ZERO));
        waiting.set_running(false);
        let ports: Vec<(String, String, Arc<dyn AgentPort>)> = vec![
            ("busy".into(), "busy".into(), busy.clone()),
            ("waiting".into(), "waiting".into(), waiting.clone()),
        ];
        let settings = PoolSettings {
            max_running: Some(1),
            idle_stop: None,
        };
        let pool = Pool::new(settings, ports);
        let (busy_chat, chat) = (FakeChat::new(), FakeChat::new());
        let start = |id: &str, agent: &Arc<FakeAgent>, chat: &Arc<FakeChat>| {
            let ctx = context(id, agent.clone(), chat.clone(), &store, pool.clone());
            let (tx, rx) = mpsc::unbounded_channel();
            let channel = Channel::new(Arc::new(ctx), "!room".into(), rx, CancellationToken::new());
            tokio::spawn(channel.run());
            tx
        };
        let busy_tx = start("busy", &busy, &busy_chat);
        let tx = start("waiting", &waiting, &chat);
        busy_tx
            .send(ChannelInput::Prompt(message("$1", "work")))
            .unwrap();
        settle_until(|| busy.prompts().len() == 1).await;
        tx.send(ChannelInput::Prompt(message("$2", "first")))
            .unwrap();
        settle_until(|| !chat.shown("!room").is_empty()).await;
        assert!(
            chat.shown("!room")[0].contains(
                "waits for a free slot: at most 1 agent(s) run at once, and busy is busy"
            ),
            "{:?}",
            chat.shown("!room")
        );
        // Still listening: a second prompt queues (⏳), a report comes back.
        tx.send(ChannelInput::Prompt(message("$3", "second")))
            .unwrap();
        let (reply, report) = oneshot::channel();
        tx.send(ChannelInput::Report(reply)).unwrap();
        let report = tokio::time::timeout(Duration::from_secs(2), report)
            .await
            .expect("answered while waiting")
            .unwrap();
        assert_eq!(report.queued, 1);
        assert!(report.waiting && !report.running, "{report:?}");
        // `!stop` gives the waiting prompt up; the queued one waits on.
        tx.send(ChannelInput::Command(
            Command::Stop(vec![]),
            message("$4", "!stop"),
        ))
        .unwrap();
        settle_until(|| chat.shown("!room").len() >= 3).await;
        assert!(
            chat.shown("!room")
                .iter()
                .any(|t| t.contains("before it started")),
            "{:?}",
            chat.shown("!room")
        );
        assert!(
            waiting.prompts().is_empty(),
            "nothing ran while the slot was taken"
        );
        // Once the busy turn ends, the queued prompt runs.
        busy_tx
            .send(ChannelInput::Command(
                Command::Stop(vec![]),
                message("$5", "!stop"),
            ))
            .unwrap();
        settle_until(|| waiting.prompts().len() == 1).await;
        assert_eq!(waiting.prompts()[0].1, "second");
    }

    #[tokio::test]
    async fn a_quiet_turn_gets_one_note_saying_how_to_stop_it() {
        let agent = FakeAgent::new(Script::UntilCancelled);
        let chat = FakeChat::new();
        let (tx, _) = channel_with(
            agent.clone(),
            chat.clone(),
            Duration::from_secs(60),
            Some(Duration::from_millis(300)),
        )
        .await;
        tx.send(ChannelInput::Prompt(message("$1", "go"))).unwrap();
        settle_until(|| chat.shown("!room").iter().any(|b| b.starts_with("⏳"))).await;
        // One note per quiet spell, however long it lasts.
        tokio::time::sleep(Duration::from_millis(900)).await;
        let notes: Vec<String> = chat
            .shown("!room")
            .into_iter()
            .filter(|b| b.starts_with("⏳"))
            .collect();
        assert_eq!(notes.len(), 1, "{notes:?}");
        assert!(
            notes[0].contains("has shown nothing for 0 s"),
            "{}",
            notes[0]
        );
        assert!(notes[0].contains("!stop"), "{}", notes[0]);
        // The turn goes on: the note does not stop it.
        tx.send(ChannelInput::Command(
            Command::Stop(vec![]),
            message("$2", "!stop"),
        ))
        .unwrap();
        settle_until(|| chat.shown("!room").iter().any(|b| b.contains("Stopped by"))).await;
    }

    #[tokio::test]
    async fn a_rerun_prompt_is_answered_without_being_recorded_twice() {
        let agent = FakeAgent::new(Script::Chunks(vec!["ok".into()], Duration::from_millis(10)));
        let chat = FakeChat::new();
        let (tx, store) = channel(agent.clone(), chat.clone()).await;
        earlier_prompt(&store, "$1", "again").await;
        tx.send(ChannelInput::Rerun(message("$1", "again")))
            .unwrap();
        settle_until(|| chat.shown("!room") == vec!["ok"]).await;
        let prompts = agent.prompts();
        assert_eq!(prompts.len(), 1);
        assert_eq!(
            prompts[0].1, "again",
            "the prompt itself is not re-injected before it"
        );
        let users = store
            .transcript("!room", "demo")
            .await
            .unwrap()
            .into_iter()
            .filter(|e| e.role == "user")
            .count();
        assert_eq!(users, 1);
    }
}
