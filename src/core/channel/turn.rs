//! One turn: the prompt sent and the agent's updates shown as they come; how it ends is
//! `turn_end.rs`. See `docs/turns.md`.

use super::Channel;
use super::journal::TurnJournal;
use super::queue::Queued;
use super::running_turn::RunningTurn;
use super::status_marks::Outcome;
use super::typing::{TYPING_AFTER, Typing};
use crate::core::voice::{fresh_txn, txn};
use std::time::Duration;

use tokio::time::Instant;

use crate::core::chat::ChatError;
use crate::core::crash_journal::JournaledReplies;
use crate::core::framing::{self, Frame};
use crate::core::inbound::IncomingMessage;
use crate::core::media;
use crate::core::routing;
use crate::core::view::activity::Activity;
use crate::core::view::stream::ReplyStream;
use crate::model::agent::{
    AgentError, AgentEvent, PermissionAnswer, PermissionKind, PermissionRequest, StopReason,
    TurnEnd,
};
use crate::model::ids::{EventId, UserId};
use crate::model::media::PromptBlock;
use crate::render::cards::PollOutcome;
use crate::render::strings;
use crate::store::LogFailure;
use crate::store::{Role, TranscriptLine};

/// How long a turn may take to end after `session/cancel` at shutdown.
const SHUTDOWN_CANCEL_GRACE: Duration = Duration::from_secs(3);

/// How long a request showing the reply waits for the turn's answer, which often comes
/// right behind the text (the agent's last update, then its response): a reply that ends
/// meanwhile is shown once, finished, instead of live and then edited again to end it. A
/// person does not see the wait; the room is spared an event.
const ANSWER_GRACE: Duration = Duration::from_millis(20);

/// How a prompt comes to run: for the first time, or again (and why).
#[derive(Debug, Clone, Copy)]
struct Runs {
    /// A crash cut its first run (or `!retry` sends it again): it is recorded already.
    rerun: bool,
    /// Its author edited it while it was answered.
    edited: bool,
    /// `!retry` sends it again.
    retried: bool,
}

impl Runs {
    /// How `queued` comes to run.
    fn of(queued: &Queued) -> Self {
        Self {
            rerun: queued.rerun,
            edited: queued.edited,
            retried: queued.retried,
        }
    }
}

impl Channel {
    /// The prefix of the transaction IDs of the answer to `message`: retries of a request
    /// reuse its transaction ID; a re-run (`rerun`), an edited prompt's answer (`edited`)
    /// and each `!retry` (`retried`) are new answers.
    fn reply_txn_prefix(&self, message: &IncomingMessage, runs: Runs) -> String {
        let (agent, event) = (self.ctx.agent_id.as_str(), message.event_id.as_str());
        match runs {
            Runs { retried: true, .. } => txn("sk", &[agent, event, &fresh_txn("retry")]),
            Runs { rerun: true, .. } => txn("sk", &[agent, event, "rerun"]),
            Runs { edited: true, .. } => txn("sk", &[agent, event, &edition_tag(&message.body)]),
            _ => txn("sk", &[agent, event]),
        }
    }

    /// Records one transcript line; a store failure is logged, never fatal to the turn.
    pub(super) async fn record(&self, line: TranscriptLine<'_>) {
        let ctx = &self.ctx;
        if let Err(e) = ctx.store.append_transcript(&self.key, line).await {
            tracing::error!(agent = %ctx.agent_id, room = %self.key.room, error = %e, "could not record the transcript");
        }
    }

    /// Runs one prompt to its end: streams the reply, honours stop requests, queues the
    /// prompts that arrive meanwhile and records the transcript (`rerun`: the prompt's
    /// first run was cut by a crash; it is recorded already; `edited`: it runs again with
    /// the text its author edited it to while it was answered; `interrupting`: it cut the
    /// turn before it, and the agent is told so).
    pub(super) async fn run_turn(&mut self, queued: Queued) {
        let (runs, rerun) = (Runs::of(&queued), queued.rerun);
        let (message, interrupting) = (queued.message, queued.interrupting);
        // A slash command the agent does not offer is answered here instead of being sent;
        // the agent's list is known once its session is open.
        let slash = (routing::slash_command(&message.body).filter(|_| !rerun)).map(str::to_owned);
        if let Some(command) = slash.as_deref()
            && !(self
                .approval_command_allowed(command, &message.sender)
                .await
                && self.agent_offers(command).await)
        {
            return;
        }
        // Nothing runs past a budget (an admin's prompt excepted).
        if !self.within_budget(&message).await {
            return;
        }
        // Its files, fetched and saved, its voice notes heard; when none could be taken
        // and there is no text, there is nothing to ask (the room was told why).
        let mut files = self.take_in(&message.media).await;
        let message = self.hear(message, &mut files).await;
        if files.is_empty() && !message.media.is_empty() && message.body.trim().is_empty() {
            return;
        }
        if !rerun {
            self.record_prompt(&message).await;
        }
        if !self.open_session().await {
            return;
        }
        // A slash command must start the prompt for the agent to run it: the earlier
        // conversation goes with the next ordinary prompt instead.
        let opened_at = self.slot.begin_prompt(&message.event_id, slash.is_none());
        // A slash command must stay first: it is sent as written.
        let framed = match slash {
            Some(_) => message.clone(),
            None => {
                let body = self.framed(&message).await;
                IncomingMessage {
                    body: match interrupting {
                        true => format!("{}\n\n{body}", strings::INTERRUPTED_BY_NEXT),
                        false => body,
                    },
                    ..message.clone()
                }
            }
        };
        let text = match opened_at {
            Some(opened_at) => self.restore_conversation(&framed, &opened_at).await,
            None => framed.body,
        };
        let prompt = self.prompt_blocks(text, &files);
        // Events that arrived between turns (e.g. the command list after `session/new`).
        self.drain_events(None).await;
        // No prompt goes to a session in a mode that acts without asking, unless an admin
        // chose it.
        if !self.mode_allows_prompt().await {
            return;
        }

        let mut turn = self.begin_turn(&message, runs).await;
        self.ctx
            .store
            .begin_turn(&self.key, &message.event_id, rerun)
            .await
            .or_log("could not record the turn; a crash would leave it unmarked");
        let marks = self.mark_taken(&message.event_id).await;
        let result = self.drive(prompt, &mut turn).await;
        let outcome = Outcome::of(&result);
        self.finish_turn(result, turn).await;
        if let Some(marks) = marks {
            marks.ended(outcome);
        }
        // A session that left the asking modes for good is not used again.
        if self.modes.take_lost() {
            self.leave_session().await;
        }
    }

    /// Whether the agent offers slash `command` (a session opened for it to say); one it
    /// does not is answered here instead of being sent.
    async fn agent_offers(&mut self, command: &str) -> bool {
        if !self.open_session().await {
            return false;
        }
        self.await_commands().await;
        if self.reported.may_offer(command) {
            return true;
        }
        tracing::info!(agent = %self.ctx.agent_id, room = %self.key.room, command, "a slash command the agent does not offer");
        let several = self.several_agents_here().await;
        self.notice(strings::unknown_slash(&self.agent_line(), command, several))
            .await;
        false
    }

    /// Records `message` in the transcript, naming the files that came with it: a
    /// conversation re-injected later still knows they were sent.
    pub(super) async fn record_prompt(&self, message: &IncomingMessage) {
        let mut body = message.body.clone();
        for file in &message.media {
            if !body.is_empty() {
                body.push('\n');
            }
            body.push_str(&media::transcript_note(file));
        }
        self.record(TranscriptLine {
            role: Role::User,
            sender: &message.sender,
            event_id: Some(&message.event_id),
            body: &body,
            stop_reason: None,
        })
        .await;
    }

    /// The turn answering `message` in the open session: what it shows and records (its
    /// reply, its cards and plan, and its crash journal), its polls none yet.
    async fn begin_turn(&self, message: &IncomingMessage, runs: Runs) -> RunningTurn {
        let txn_prefix = self.reply_txn_prefix(message, runs);
        let rerun = runs.rerun;
        let verbosity = self.verbosity().await;
        // A prompt is re-run after a crash at most once.
        let cut_footer = match self.ctx.rerun_interrupted && !rerun {
            true => strings::INTERRUPTED_RERUN,
            false => strings::INTERRUPTED,
        };
        // Each new message of the reply is journaled before it is sent.
        let replies = JournaledReplies::wrap(
            self.ctx.chat.clone(),
            self.ctx.store.clone(),
            self.key.clone(),
            cut_footer,
        );
        let stream = ReplyStream::new(
            replies,
            self.key.room.clone(),
            txn_prefix.clone(),
            self.ctx.stream.get(),
        );
        let activity = Activity::new(
            self.ctx.chat.clone(),
            self.key.room.clone(),
            verbosity,
            txn_prefix,
            self.ctx.stream.get(),
        );
        let journal = TurnJournal::new(self.ctx.store.clone(), self.key.clone(), cut_footer);
        // No session (the agent's update just left it): the prompt goes nowhere, and the
        // turn ends with an error.
        let session = self.slot.session().cloned();
        let typing = Typing::after(TYPING_AFTER, self.ctx.chat.clone(), self.key.room.clone());
        RunningTurn::new(session, message.clone(), stream, typing, activity, journal)
    }

    /// Sends the prompt and handles everything that happens until the agent answers it:
    /// updates, stop requests, new prompts and edit deadlines.
    pub(super) async fn drive(
        &mut self,
        prompt: Vec<PromptBlock>,
        turn: &mut RunningTurn,
    ) -> Result<TurnEnd, AgentError> {
        let ctx = self.ctx.clone();
        let session = turn.session().cloned();
        let prompt = async move {
            match session {
                Some(session) => session.prompt(prompt).await,
                None => Err(AgentError::Failed("the session was left".into())),
            }
        };
        tokio::pin!(prompt);
        let result = loop {
            let (reply_due, cards_due) = (turn.reply_due(), turn.cards_due());
            let poll_deadline = turn.approvals().next_deadline();
            let quiet_at = turn.quiet_at(ctx.quiet_note);
            if !self.slot.is_open() {
                // Only a command could take the session away; the prompt still answers.
                break prompt.await;
            }
            tokio::select! {
                result = &mut prompt => break result,
                Some(event) = self.slot.next_update() => {
                    if let Some((note, quiet)) = turn.spoke_again() {
                        self.quiet_turn_over(&note, quiet).await;
                    }
                    self.handle_event(event, Some(&mut *turn)).await;
                    if self.modes.turn_lost() && turn.stop_for_mode() {
                        self.stop_lost_turn(turn).await;
                    }
                }
                Some(input) = self.inputs.recv() => {
                    self.handle_input_during_turn(input, turn).await;
                    self.queue.count();
                }
                _ = sleep_until_opt(self.queue.next_mark_at()) => self.mark_waiting().await,
                _ = sleep_until_opt(quiet_at) => {
                    let note = self.note_quiet_turn().await;
                    turn.went_quiet(note);
                }
                _ = sleep_until_opt(reply_due) => {
                    // The answer often comes right behind its last text: taken first, the
                    // reply is posted once, finished, instead of live and then edited.
                    if let Ok(result) = tokio::time::timeout(ANSWER_GRACE, &mut prompt).await {
                        break result;
                    }
                    log_deferred(&self.key.room, "edit", turn.flush_reply().await);
                }
                _ = sleep_until_opt(cards_due) => {
                    log_deferred(&self.key.room, "card update", turn.flush_cards().await);
                }
                _ = sleep_until_opt(poll_deadline) => {
                    turn.approvals_mut().expire_due(&ctx, &self.key.room).await
                }
                _ = self.shutdown.cancelled(), if !turn.shutting_down() => {
                    self.cancel_at_shutdown(turn).await;
                }
                // An agent that ignores the cancel does not hold the shutdown up.
                _ = sleep_until_opt(turn.shutdown_deadline()) => break Ok(StopReason::Cancelled.into()),
            }
        };
        // Every update sent before the response is already queued: take them in.
        self.drain_events(Some(turn)).await;
        // A poll still open now belongs to a turn the agent has ended.
        (turn.approvals_mut())
            .cancel_all(&ctx, &self.key.room, |_| PollOutcome::TurnEnded)
            .await;
        result
    }

    /// Tells the room that the turn has been quiet for a while, and how to stop it;
    /// returns the note's event (a 🛑 on it stops the turn).
    async fn note_quiet_turn(&self) -> Option<EventId> {
        let ctx = &self.ctx;
        let quiet = ctx.quiet_note.unwrap_or_default();
        tracing::info!(agent = %ctx.agent_id, room = %self.key.room, quiet_secs = quiet.as_secs(), "the turn has been quiet; telling the room how to stop it");
        crate::core::metrics::metrics().quiet_turn(&ctx.agent_id);
        let text = strings::quiet_turn(&ctx.display_name, quiet, &ctx.command_prefix);
        self.voice().notice(text).await
    }

    /// The agent went on after the quiet spell its `note` told of, `quiet` long: the note
    /// says so, so nobody stops a turn that is working again.
    async fn quiet_turn_over(&self, note: &EventId, quiet: Duration) {
        let ctx = &self.ctx;
        tracing::info!(agent = %ctx.agent_id, room = %self.key.room, quiet_secs = quiet.as_secs(), "the quiet turn goes on");
        let text = strings::quiet_turn_over(&ctx.display_name, quiet);
        (self
            .voice()
            .edit(note, &crate::model::OutMessage::notice(text)))
        .await;
    }

    /// The gateway shuts down during the turn: `session/cancel`, every open poll withdrawn,
    /// and the turn given [`SHUTDOWN_CANCEL_GRACE`] to end.
    async fn cancel_at_shutdown(&mut self, turn: &mut RunningTurn) {
        let ctx = &self.ctx;
        tracing::info!(agent = %ctx.agent_id, room = %self.key.room, "shutting down: cancelling the turn");
        turn.shut_down(SHUTDOWN_CANCEL_GRACE);
        self.cancel_prompt(turn, |_| PollOutcome::TurnStopped).await;
    }

    /// `message`'s text as the agent gets it: who wrote it where several people may prompt,
    /// and a quote of the message it replies to (`core::framing`).
    pub(super) async fn framed(&self, message: &IncomingMessage) -> String {
        let several = self.several_people_here().await;
        let frame = Frame {
            author: several.then_some((message.sender_name.as_deref(), message.sender.as_str())),
            replying_to: (message.reply_to_sender.as_ref().map(UserId::as_str))
                .zip(message.reply_to_body.as_deref()),
        };
        framing::frame(&frame, &message.body)
    }

    /// Whether more than one person who may prompt can read this room (joined or
    /// invited); when anyone can, or the members cannot be listed, the agent is told who
    /// wrote each message all the same.
    async fn several_people_here(&self) -> bool {
        let ctx = &self.ctx;
        match ctx.chat.readers(&self.key.room).await {
            Ok(Some(readers)) => {
                let people = readers
                    .iter()
                    .filter(|m| ctx.allowed.allows(m) && !ctx.agent_users.contains(m));
                people.count() > 1
            }
            Ok(None) => true,
            Err(e) => {
                tracing::debug!(room = %self.key.room, error = %e, "could not list the room's members; the agent is told who wrote the message");
                true
            }
        }
    }

    /// Takes in every update already queued for the session; `view` is the running turn's,
    /// if a turn runs.
    pub(super) async fn drain_events(&mut self, mut turn: Option<&mut RunningTurn>) {
        while let Some(event) = self.slot.queued_update() {
            self.handle_event(event, turn.as_deref_mut()).await;
        }
    }

    /// Stops the turn whose session went to a mode that does not ask and could not be put
    /// back: `session/cancel`, every open poll withdrawn (the room was told why).
    async fn stop_lost_turn(&mut self, turn: &mut RunningTurn) {
        self.cancel_prompt(turn, |_| PollOutcome::TurnStopped).await;
    }

    /// Cancels the turn's prompt (`session/cancel`) and then, as ACP asks, answers each of
    /// its open polls `cancelled`, closing each with what `outcome` says of it.
    pub(super) async fn cancel_prompt(
        &self,
        turn: &mut RunningTurn,
        outcome: impl Fn(&EventId) -> PollOutcome,
    ) {
        let ctx = &self.ctx;
        if let Some(session) = turn.session()
            && let Err(e) = session.cancel().await
        {
            tracing::warn!(error = %e, "session/cancel failed");
        }
        (turn.approvals_mut())
            .cancel_all(ctx, &self.key.room, outcome)
            .await;
    }

    /// Opens the poll for a permission request of the running turn, after the card of the
    /// call it concerns.
    async fn open_poll(&mut self, request: PermissionRequest, turn: &mut RunningTurn) {
        // Describe the call with everything known: what was announced, then what
        // the request itself says (it may come first, or name an unannounced call).
        let mut tool = (turn.known_tool(&request.tool.id).cloned()).unwrap_or_default();
        tool.id = request.tool.id.clone();
        tool.merge(request.tool.clone());
        turn.tool(request.tool.clone(), false);
        if request.resumes_when_allowed {
            turn.waits_for_answer(&tool.id);
        }
        // What the agent said so far goes up first: often why it asks.
        if let Err(e) = turn.flush_reply().await {
            tracing::debug!(room = %self.key.room, error = %e, "reply update deferred");
        }
        // The poll stands in for the call's card unless that is posted already; then the
        // card, if due, goes up before the poll that asks about it.
        if !turn.poll_opened(&tool.id)
            && let Err(e) = turn.flush_cards().await
        {
            tracing::debug!(room = %self.key.room, error = %e, "card update deferred");
        }
        let switches = self.option_switches(&request, tool.kind);
        let prompter = turn.prompter().clone();
        (turn.approvals_mut())
            .open(
                &self.ctx,
                &self.key.room,
                request,
                tool,
                &prompter,
                switches,
            )
            .await;
    }

    /// Handles one session update, inside a turn (`turn` is the running one) or between
    /// turns.
    pub(super) async fn handle_event(&mut self, event: AgentEvent, turn: Option<&mut RunningTurn>) {
        let ctx = self.ctx.clone();
        match (event, turn) {
            (AgentEvent::MessageChunk(text), Some(turn)) => turn.push_text(&text),
            (AgentEvent::File(file), Some(turn)) => self.post_answer_file(file, turn).await,
            (AgentEvent::ThoughtChunk(text), Some(turn)) => turn.thought(&text),
            (AgentEvent::ToolCall(fields), Some(turn)) => turn.tool(fields, true),
            (AgentEvent::ToolCallUpdate(fields), Some(turn)) => turn.tool(fields, false),
            (AgentEvent::Plan(entries), Some(turn)) => turn.plan(&entries),
            (AgentEvent::Permission(request), Some(turn)) => self.open_poll(request, turn).await,
            (AgentEvent::Permission(request), None) => {
                let title = request
                    .tool
                    .title
                    .clone()
                    .unwrap_or_else(|| request.tool.id.to_string());
                refuse_permission(request);
                self.notice(strings::permission_outside_turn(&title)).await;
            }
            (AgentEvent::Commands(list), _) => self.reported.set_commands(list),
            (AgentEvent::ModeChanged(mode), turn) => {
                self.on_mode_report(mode, turn.is_some()).await
            }
            (AgentEvent::Options(options), turn) => self.on_options(options, turn.is_some()).await,
            (AgentEvent::Usage { used, size, cost }, turn) => {
                if let (Some(turn), Some(cost)) = (turn, &cost) {
                    turn.cost_reported(cost.clone());
                }
                self.reported.context(used, size, cost);
                self.usage_after_compaction(used).await;
            }
            (AgentEvent::Compaction(report), _) => self.on_compaction(report).await,
            (AgentEvent::Question(request), Some(turn)) => {
                // What the agent said so far, then the card of the call it concerns, if
                // any, go up first.
                if let Err(e) = turn.flush_reply().await {
                    tracing::debug!(room = %self.key.room, error = %e, "reply update deferred");
                }
                if let Err(e) = turn.flush_cards().await {
                    tracing::debug!(room = %self.key.room, error = %e, "card update deferred");
                }
                let prompter = turn.prompter().clone();
                turn.asked();
                (turn.approvals_mut())
                    .ask(&ctx, &self.key.room, request, &prompter)
                    .await;
            }
            // Nobody is there to answer: the agent hears the question was cancelled.
            (AgentEvent::Question(request), None) => {
                tracing::info!(agent = %ctx.agent_id, room = %self.key.room, "a question outside any turn; cancelled");
                drop(request);
            }
            (AgentEvent::Title(title), _) => self.reported.set_title(title),
            (AgentEvent::Task(report), _) => self.on_task(report).await,
            (AgentEvent::MessageChunk(text), None) => {
                tracing::warn!(agent = %ctx.agent_id, room = %self.key.room, %text, "answer text outside a turn; not shown")
            }
            // What shows only in a turn's view, reported when no turn runs.
            (
                event @ (AgentEvent::File(_)
                | AgentEvent::ThoughtChunk(_)
                | AgentEvent::ToolCall(_)
                | AgentEvent::ToolCallUpdate(_)
                | AgentEvent::Plan(_)),
                None,
            ) => {
                tracing::debug!(agent = %ctx.agent_id, room = %self.key.room, ?event, "update outside a turn; not shown")
            }
            // A reopened session retelling a prompt the room showed already.
            (AgentEvent::UserMessageChunk(_), _) => {}
            (AgentEvent::Dropped { count }, _) => {
                tracing::warn!(agent = %ctx.agent_id, room = %self.key.room, count, "updates dropped: the agent sent them faster than the room took them");
                self.notice(strings::updates_dropped(&ctx.display_name, count))
                    .await;
            }
            (AgentEvent::Unused { kind }, _) => {
                tracing::debug!(agent = %ctx.agent_id, kind, "update not used")
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

/// A tag of an edited prompt's text, so the answer to each edition has transaction IDs of
/// its own.
fn edition_tag(body: &str) -> String {
    use std::hash::{Hash, Hasher};
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    body.hash(&mut hasher);
    format!("edit{:x}", hasher.finish())
}

/// Logs a request the homeserver did not take: the next one carries its content.
fn log_deferred(room: &crate::model::ids::RoomId, what: &str, result: Result<(), ChatError>) {
    if let Err(e) = result {
        tracing::debug!(room = %room, error = %e, "{what} deferred");
    }
}

/// Sleeps until `at`; forever when there is nothing to wait for.
pub(super) async fn sleep_until_opt(at: Option<Instant>) {
    match at {
        Some(at) => tokio::time::sleep_until(at).await,
        None => std::future::pending().await,
    }
}
