//! One (room, agent) pair: its ACP session, its queue of prompts and the turn that runs.
//!
//! Each pair has one task ([`Channel::run`]) fed by an unbounded queue of [`ChannelInput`]s,
//! so prompts are answered strictly in order and a stop request reaches the running turn
//! without waiting behind it. See `docs/turns.md`.

use std::collections::VecDeque;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::agent::{
    AgentError, AgentEvent, AgentPort, PermissionAnswer, PermissionKind, PermissionRequest,
    StopReason,
};
use super::chat::{ChatPort, OutMessage};
use super::command::Command;
use super::inbound::IncomingMessage;
use crate::render::stream::{ReplyStream, StreamSettings};
use crate::render::strings;
use crate::store::{Role, Store};

/// How long a turn may take to end after `session/cancel` at shutdown.
const SHUTDOWN_CANCEL_GRACE: Duration = Duration::from_secs(3);

/// How often the typing notice is renewed while the agent works.
const TYPING_REFRESH: Duration = Duration::from_secs(3);

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
}

/// Something for a channel to do.
#[derive(Debug)]
pub enum ChannelInput {
    /// A message to answer.
    Prompt(IncomingMessage),
    /// A chat command, with the message that carried it.
    Command(Command, IncomingMessage),
    /// Someone reacted with the stop emoji to `target`.
    StopReaction {
        /// Who reacted.
        by: String,
        /// The event reacted to.
        target: String,
    },
}

/// The open ACP session of this channel.
struct Session {
    /// The agent's session ID.
    id: String,
    /// The session's updates, in the order the agent sent them.
    events: mpsc::UnboundedReceiver<AgentEvent>,
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
    /// Prompts waiting behind the running turn, with the "queued" reaction put on each.
    queue: VecDeque<(IncomingMessage, Option<String>)>,
    /// The agent's slash commands, as last advertised (listed by `!help`).
    commands: Vec<(String, String)>,
    /// Fires when the gateway shuts down: the running turn is stopped and marked.
    shutdown: CancellationToken,
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
            commands: Vec::new(),
            shutdown,
        }
    }

    /// Runs until the input queue is closed or the gateway shuts down.
    pub async fn run(mut self) {
        loop {
            if self.shutdown.is_cancelled() {
                self.abandon_queue().await;
                return;
            }
            if let Some((message, queued_reaction)) = self.queue.pop_front() {
                if let Some(reaction) = queued_reaction {
                    let _ = self.ctx.chat.redact(&self.room, &reaction).await;
                }
                self.run_turn(message).await;
                continue;
            }
            let input = tokio::select! {
                _ = self.shutdown.cancelled() => continue,
                input = self.inputs.recv() => match input {
                    Some(input) => input,
                    None => return,
                },
            };
            match input {
                ChannelInput::Prompt(message) => self.queue.push_back((message, None)),
                ChannelInput::Command(command, _) => {
                    self.drain_events(None).await;
                    self.answer_command(&command, false).await
                }
                ChannelInput::StopReaction { .. } => {}
            }
        }
    }

    /// At shutdown: tells the room which queued messages were not answered, so nothing is
    /// silently dropped.
    async fn abandon_queue(&mut self) {
        if self.queue.is_empty() {
            return;
        }
        let count = self.queue.len();
        for (_, reaction) in std::mem::take(&mut self.queue) {
            if let Some(reaction) = reaction {
                let _ = self.ctx.chat.redact(&self.room, &reaction).await;
            }
        }
        self.notice(strings::queue_dropped_at_shutdown(count)).await;
    }

    async fn notice(&self, text: impl Into<String>) {
        let text = text.into();
        let txn = format!("notice-{}", unique_suffix());
        if let Err(e) = self
            .ctx
            .chat
            .send(&self.room, &txn, &OutMessage::notice(text))
            .await
        {
            tracing::warn!(agent = %self.ctx.agent_id, room = %self.room, error = %e, "could not post a notice");
        }
    }

    async fn answer_command(&self, command: &Command, running: bool) {
        let prefix = &self.ctx.command_prefix;
        let text = match command {
            Command::Help => strings::help(prefix, &self.ctx.display_name, &self.commands),
            Command::Status => strings::status(
                &self.ctx.display_name,
                running,
                self.queue.len(),
                self.session.is_some(),
            ),
            Command::Stop => strings::NOTHING_TO_STOP.to_owned(),
            Command::Unknown(word) => strings::unknown_command(prefix, word),
        };
        self.notice(text).await;
    }

    async fn ensure_session(&mut self) -> Result<(), AgentError> {
        if self.session.is_some() {
            return Ok(());
        }
        let new = self.ctx.agent.new_session(&self.ctx.workspace).await?;
        if let Err(e) = self
            .ctx
            .store
            .save_session(&self.room, &self.ctx.agent_id, &new.id)
            .await
        {
            tracing::error!(error = %e, "could not save the session");
        }
        tracing::info!(agent = %self.ctx.agent_id, room = %self.room, session = %new.id, "session opened");
        self.session = Some(Session {
            id: new.id,
            events: new.events,
        });
        Ok(())
    }

    /// Records one transcript line; a store failure is logged, never fatal to the turn.
    async fn record(
        &self,
        role: Role,
        sender: &str,
        event_id: Option<&str>,
        body: &str,
        stop: Option<&str>,
    ) {
        let ctx = &self.ctx;
        if let Err(e) = ctx
            .store
            .append_transcript(
                &self.room,
                &ctx.agent_id,
                role,
                sender,
                event_id,
                body,
                stop,
            )
            .await
        {
            tracing::error!(agent = %ctx.agent_id, room = %self.room, error = %e, "could not record the transcript");
        }
    }

    /// Runs one prompt to its end: streams the reply, honours stop requests, queues the
    /// prompts that arrive meanwhile and records the transcript.
    async fn run_turn(&mut self, message: IncomingMessage) {
        self.record(
            Role::User,
            &message.sender,
            Some(&message.event_id),
            &message.body,
            None,
        )
        .await;
        if let Err(e) = self.ensure_session().await {
            tracing::warn!(agent = %self.ctx.agent_id, room = %self.room, error = %e, "no session");
            self.notice(strings::session_failed(
                &self.ctx.display_name,
                &e.to_string(),
            ))
            .await;
            return;
        }
        // Events that arrived between turns (e.g. the command list after `session/new`).
        self.drain_events(None).await;

        let mut stream = ReplyStream::new(
            self.ctx.chat.clone(),
            self.room.clone(),
            format!("sk-{}-{}", self.ctx.agent_id, message.event_id),
            self.ctx.stream.clone(),
        );
        let mut control = TurnControl::default();
        self.ctx.chat.typing(&self.room, true).await;
        let result = self.drive(message.body, &mut stream, &mut control).await;
        self.ctx.chat.typing(&self.room, false).await;
        self.finish_turn(result, stream, control).await;
    }

    /// Sends the prompt and handles everything that happens until the agent answers it:
    /// updates, stop requests, new prompts, edit deadlines and the typing notice.
    async fn drive(
        &mut self,
        text: String,
        stream: &mut ReplyStream,
        control: &mut TurnControl,
    ) -> Result<StopReason, AgentError> {
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
        let result = loop {
            let flush_at = stream.next_flush_at();
            let events = &mut self
                .session
                .as_mut()
                .expect("session opened before the turn")
                .events;
            tokio::select! {
                result = &mut prompt => break result,
                Some(event) = events.recv() => self.handle_event(event, Some(&mut *stream)).await,
                Some(input) = self.inputs.recv() => self.handle_input_during_turn(input, &session_id, stream, control).await,
                _ = sleep_until_opt(flush_at) => {
                    if let Err(e) = stream.flush().await {
                        tracing::debug!(room = %self.room, error = %e, "edit deferred");
                    }
                }
                _ = typing.tick() => ctx.chat.typing(&self.room, true).await,
                _ = self.shutdown.cancelled(), if control.shutdown_deadline.is_none() => {
                    tracing::info!(agent = %ctx.agent_id, room = %self.room, "shutting down: cancelling the turn");
                    control.shutdown_deadline = Some(tokio::time::Instant::now() + SHUTDOWN_CANCEL_GRACE);
                    if let Err(e) = ctx.agent.cancel(&session_id).await {
                        tracing::warn!(error = %e, "session/cancel failed");
                    }
                }
                // An agent that ignores the cancel does not hold the shutdown up.
                _ = sleep_until_opt(control.shutdown_deadline) => break Ok(StopReason::Cancelled),
            }
        };
        // Every update sent before the response is already queued: take them in.
        self.drain_events(Some(stream)).await;
        result
    }

    /// Shows how the turn ended (final edit, footer or notice) and records the reply.
    async fn finish_turn(
        &mut self,
        result: Result<StopReason, AgentError>,
        mut stream: ReplyStream,
        control: TurnControl,
    ) {
        let ctx = self.ctx.clone();
        let stopped_by = control.stopped_by.as_deref();
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
                (
                    "error",
                    Some(strings::turn_failed(&ctx.display_name, &e.to_string())),
                )
            }
        };
        if stream.text().is_empty() {
            let text = match (&result, ending) {
                (Ok(reason), None) => strings::empty_reply(reason, stopped_by),
                (_, ending) => ending.unwrap_or_default(),
            };
            self.notice(text).await;
        } else if let Err(e) = stream.finish(ending).await {
            tracing::error!(agent = %ctx.agent_id, room = %self.room, error = %e, "could not deliver the final reply");
        }
        tracing::info!(agent = %ctx.agent_id, room = %self.room, stop = stop_label, stats = ?stream.stats(), "turn ended");
        let first_event = stream.event_ids().into_iter().next();
        self.record(
            Role::Agent,
            &ctx.user_id,
            first_event.as_deref(),
            stream.text(),
            Some(stop_label),
        )
        .await;
    }

    /// Takes in every update already queued for the session; `stream` is the running
    /// turn's reply, if a turn runs.
    async fn drain_events(&mut self, mut stream: Option<&mut ReplyStream>) {
        while let Some(event) = self.session.as_mut().and_then(|s| s.events.try_recv().ok()) {
            self.handle_event(event, stream.as_deref_mut()).await;
        }
    }

    /// Handles one session update, inside a turn (`stream` is its reply) or between turns.
    async fn handle_event(&mut self, event: AgentEvent, stream: Option<&mut ReplyStream>) {
        match event {
            AgentEvent::MessageChunk(text) => match stream {
                Some(stream) => stream.push(&text),
                None => {
                    tracing::warn!(agent = %self.ctx.agent_id, room = %self.room, %text, "answer text outside a turn; not shown")
                }
            },
            AgentEvent::Commands(list) => self.commands = list,
            AgentEvent::Permission(request) => {
                let title = request
                    .title
                    .clone()
                    .unwrap_or_else(|| request.tool_call_id.clone());
                refuse_permission(request);
                self.notice(strings::permission_refused(&title)).await;
            }
            AgentEvent::ThoughtChunk(_) => {}
            other => {
                tracing::debug!(agent = %self.ctx.agent_id, event = ?other, "update not shown")
            }
        }
    }

    async fn handle_input_during_turn(
        &mut self,
        input: ChannelInput,
        session_id: &str,
        stream: &ReplyStream,
        control: &mut TurnControl,
    ) {
        let stop = |by: String, control: &mut TurnControl| {
            let first = control.stopped_by.is_none();
            control.stopped_by.get_or_insert(by);
            first
        };
        let wants_stop = match input {
            ChannelInput::Prompt(message) => {
                let reaction = match self
                    .ctx
                    .chat
                    .react(&self.room, &message.event_id, strings::QUEUED_REACTION)
                    .await
                {
                    Ok(id) => Some(id),
                    Err(e) => {
                        tracing::warn!(room = %self.room, error = %e, "could not mark a message as queued");
                        None
                    }
                };
                self.queue.push_back((message, reaction));
                false
            }
            ChannelInput::Command(Command::Stop, message) => stop(message.sender, control),
            ChannelInput::Command(other, _) => {
                self.answer_command(&other, true).await;
                false
            }
            ChannelInput::StopReaction { by, target } => {
                stream.event_ids().contains(&target) && stop(by, control)
            }
        };
        if wants_stop {
            tracing::info!(agent = %self.ctx.agent_id, room = %self.room, "cancelling the turn");
            if let Err(e) = self.ctx.agent.cancel(session_id).await {
                tracing::warn!(error = %e, "session/cancel failed");
            }
        }
    }
}

/// Answers a permission request with the agent's own reject option. Tool approval from the
/// chat is not built yet, and a refusal is the only safe answer meanwhile: "reject always"
/// first, so a small model does not retry the same call in a loop.
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
    use crate::core::fakes::{FakeAgent, FakeChat, Script, Sent};

    async fn channel(
        agent: Arc<FakeAgent>,
        chat: Arc<FakeChat>,
    ) -> (mpsc::UnboundedSender<ChannelInput>, Store) {
        let store = Store::in_memory().await.unwrap();
        let ctx = Arc::new(AgentContext {
            agent_id: "demo".into(),
            display_name: "Demo".into(),
            user_id: "@demo:x".into(),
            agent,
            chat,
            store: store.clone(),
            workspace: PathBuf::from("/tmp"),
            stream: StreamSettings {
                interval: Duration::from_millis(50),
                max_edits: 100,
                max_bytes: 10_000,
            },
            command_prefix: "!".into(),
        });
        let (tx, rx) = mpsc::unbounded_channel();
        tokio::spawn(Channel::new(ctx, "!room".into(), rx, CancellationToken::new()).run());
        (tx, store)
    }

    fn message(id: &str, body: &str) -> IncomingMessage {
        IncomingMessage {
            agent_id: "demo".into(),
            room_id: "!room".into(),
            event_id: id.into(),
            sender: "@alice:x".into(),
            body: body.into(),
            timestamp_ms: 0,
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
        let prompts: Vec<String> = agent.prompts().into_iter().map(|p| p.1).collect();
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
        tx.send(ChannelInput::Command(Command::Stop, message("$2", "!stop")))
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
        tx.send(ChannelInput::StopReaction {
            by: "@bob:x".into(),
            target: "$unrelated".into(),
        })
        .unwrap();
        tokio::time::sleep(Duration::from_millis(300)).await;
        assert_eq!(chat.shown("!room"), vec!["working"]);
        let reply = match &chat.log()[0] {
            Sent::Send { event_id, .. } => event_id.clone(),
            other => panic!("{other:?}"),
        };
        tx.send(ChannelInput::StopReaction {
            by: "@bob:x".into(),
            target: reply,
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
        tx.send(ChannelInput::Command(Command::Stop, message("$1", "!stop")))
            .unwrap();
        settle_until(|| !chat.shown("!room").is_empty()).await;
        assert_eq!(chat.shown("!room"), vec![strings::NOTHING_TO_STOP]);
    }
}
