//! Start-up recovery: what the previous run left unfinished is marked or carried out,
//! before the first sync. In order: turns a crash cut are marked (and, when configured,
//! their prompts queued to run again), then the inputs admitted but never settled are
//! taken up again (prompts run in their order, commands are reported), then polls of the
//! previous run are marked expired. See `docs/continuity.md`.

use crate::model::ids::{ConversationKey, EventId};
use std::collections::HashSet;
use std::sync::Arc;

use super::Gateway;
use crate::core::approvals;
use crate::core::channel::ChannelInput;
use crate::core::command::{Command, parse};
use crate::core::context::AgentContext;
use crate::core::inbound::IncomingMessage;
use crate::core::poll;
use crate::core::voice::{RoomVoice, txn, with_retry};
use crate::model::OutMessage;
use crate::render::strings;
use crate::store::LogFailure;
use crate::store::{PendingInput, PendingKind, Role, TranscriptLine, UnfinishedTurn};

impl Gateway {
    /// Marks what a previous run left unfinished (it crashed or was killed) and takes up
    /// what it had admitted but not settled. Run once at start-up, before syncing.
    pub async fn clean_up_previous_run(self: &Arc<Self>) {
        // The polls still open are read before they are expired: a typed answer to one of
        // them, left waiting, is not a prompt.
        let mut open_polls = HashSet::new();
        for ctx in self.agents.values() {
            match self.store.open_polls(&ctx.agent_id).await {
                Ok(polls) => open_polls.extend(polls.into_iter().map(|p| p.event_id)),
                Err(e) => {
                    tracing::error!(agent = %ctx.agent_id, error = %e, "could not read the open polls")
                }
            }
        }
        self.mark_cut_turns().await;
        self.resume_pending(&open_polls).await;
        self.expire_stale_polls().await;
    }

    /// Edits the messages of turns the previous run did not finish to say so; a turn cut
    /// before any answer gets a notice instead.
    async fn mark_cut_turns(&self) {
        for ctx in self.agents.values() {
            let turns = match self.store.unfinished_turns(&ctx.agent_id).await {
                Ok(turns) => turns,
                Err(e) => {
                    tracing::error!(agent = %ctx.agent_id, error = %e, "could not read the unfinished turns");
                    continue;
                }
            };
            for turn in turns {
                self.mark_cut_turn(ctx, turn).await;
            }
        }
    }

    async fn mark_cut_turn(&self, ctx: &AgentContext, turn: UnfinishedTurn) {
        tracing::info!(agent = %ctx.agent_id, room = %turn.room_id, prompt = %turn.prompt_event_id, "marking a turn the previous run did not finish");
        for m in &turn.messages {
            let content = OutMessage {
                body: m.body.clone(),
                html: m.html.clone(),
                notice: m.notice,
                mentions: Vec::new(),
                reply_to: None,
                thread: turn.thread.clone(),
                attachment: None,
                live: false,
            };
            let event_id = match (&m.event_id, &m.txn_id) {
                (Some(id), _) => id.clone(),
                // Sent, but the run stopped before the homeserver's answer: sending again
                // under the same transaction ID gets the event it has (or posts it now).
                (None, Some(txn)) => {
                    match with_retry(|| ctx.chat.send(&turn.room_id, txn, &content)).await {
                        Ok(id) => id,
                        Err(e) => {
                            tracing::warn!(agent = %ctx.agent_id, room = %turn.room_id, error = %e, "could not find a message of the cut turn");
                            continue;
                        }
                    }
                }
                (None, None) => continue,
            };
            RoomVoice::new(&*ctx.chat, &ctx.agent_id, &turn.room_id)
                .edit(&event_id, &content)
                .await;
        }
        // A prompt is run again at most once: a second crash may be its doing.
        let rerun = ctx.rerun_interrupted && !turn.rerun;
        if !turn.messages.iter().any(|m| m.kind == "reply") {
            let txn = txn("interrupted", &[turn.prompt_event_id.as_str()]);
            let notice = OutMessage::notice(match rerun {
                true => strings::INTERRUPTED_BEFORE_ANSWER_RERUN,
                false => strings::INTERRUPTED_BEFORE_ANSWER,
            })
            .replying_to(turn.prompt_event_id.clone())
            .in_thread(turn.thread.clone());
            if let Err(e) = with_retry(|| ctx.chat.send(&turn.room_id, &txn, &notice)).await {
                tracing::warn!(error = %e, "could not report the interrupted turn");
            }
        }
        // What the agent had said stays in the conversation, marked as cut.
        let said = (!turn.reply_text.is_empty()).then(|| TranscriptLine {
            role: Role::Agent,
            sender: &ctx.user_id,
            event_id: None,
            body: &turn.reply_text,
            stop_reason: Some("interrupted"),
        });
        let again = match rerun {
            true => self.rerun_of(ctx, &turn).await,
            false => None,
        };
        if turn.rerun {
            tracing::warn!(agent = %ctx.agent_id, room = %turn.room_id, prompt = %turn.prompt_event_id, "a re-run prompt was cut again; not running it a third time");
        }
        // Marked, recorded and (when configured) queued again in one go: the next step
        // takes the queued prompt up with everything else that waits.
        self.store
            .end_turn(&turn_key(ctx, &turn), said, again.as_ref(), &[])
            .await
            .or_log("could not forget the unfinished turn");
    }

    /// The prompt of the cut `turn`, as the transcript holds it, to run again.
    async fn rerun_of(&self, ctx: &AgentContext, turn: &UnfinishedTurn) -> Option<PendingInput> {
        let (room_id, event_id) = (&turn.room_id, &turn.prompt_event_id);
        match self.store.prompt(&turn_key(ctx, turn), event_id).await {
            Ok(Some((sender, body))) => {
                tracing::info!(agent = %ctx.agent_id, room = %room_id, prompt = %event_id, "running the interrupted prompt again");
                Some(PendingInput {
                    room_id: room_id.clone(),
                    thread: turn.thread.clone(),
                    agent_id: ctx.agent_id.clone(),
                    event_id: event_id.clone(),
                    kind: PendingKind::Rerun,
                    sender,
                    body,
                    reply_to: None,
                    sent_at: 0,
                    queued_reaction: None,
                    media: Vec::new(),
                })
            }
            Ok(None) => {
                tracing::warn!(agent = %ctx.agent_id, room = %room_id, prompt = %event_id, "the interrupted prompt is not in the transcript; not running it again");
                None
            }
            Err(e) => {
                tracing::error!(agent = %ctx.agent_id, error = %e, "could not read the interrupted prompt");
                None
            }
        }
    }

    /// Takes up the inputs the previous run admitted but never settled, re-runs first,
    /// then in the order they were admitted: a prompt goes back to its channel's queue (it
    /// never began, so it had no effect yet), a typed answer to a poll of the previous run
    /// is dropped (the poll is marked expired), and a command is reported as not carried
    /// out.
    async fn resume_pending(self: &Arc<Self>, open_polls: &HashSet<EventId>) {
        for ctx in self.agents.values() {
            let pending = match self.store.pending_inputs(&ctx.agent_id).await {
                Ok(pending) => pending,
                Err(e) => {
                    tracing::error!(agent = %ctx.agent_id, error = %e, "could not read the inputs left waiting; they stay for the next start");
                    continue;
                }
            };
            if !pending.is_empty() {
                tracing::info!(agent = %ctx.agent_id, count = pending.len(), "taking up inputs the previous run had admitted");
            }
            for input in pending {
                self.resume(ctx, input, open_polls).await;
            }
        }
    }

    async fn resume(
        self: &Arc<Self>,
        ctx: &AgentContext,
        input: PendingInput,
        open_polls: &HashSet<EventId>,
    ) {
        let message = IncomingMessage {
            agent_id: input.agent_id.clone(),
            room_id: input.room_id.clone(),
            event_id: input.event_id.clone(),
            sender: input.sender.clone(),
            body: input.body.clone(),
            timestamp_ms: input.sent_at.max(0) as u64,
            reply_to: input.reply_to.clone(),
            thread: input.thread.clone(),
            media: input.media.clone(),
            ..Default::default()
        };
        let conversation = message.conversation();
        let answers_old_poll = input
            .reply_to
            .as_ref()
            .is_some_and(|target| open_polls.contains(target))
            && poll::parse_reply(&input.body).is_some();
        match input.kind {
            PendingKind::Rerun => {
                self.send_to_channel(&message.conversation(), ChannelInput::Rerun(message))
                    .await;
            }
            PendingKind::Prompt if !answers_old_poll => {
                tracing::info!(agent = %ctx.agent_id, room = %input.room_id, event = %input.event_id, "a prompt admitted before the restart runs now");
                let resumed = ChannelInput::Resumed {
                    message,
                    reaction: input.queued_reaction,
                };
                self.send_to_channel(&conversation, resumed).await;
            }
            PendingKind::Prompt => {
                tracing::info!(agent = %ctx.agent_id, room = %input.room_id, event = %input.event_id, "an answer to a poll of the previous run is dropped with its poll");
                self.settle(&ctx.agent_id, &input.event_id).await;
            }
            // The registry says which commands run late (`AfterCrash`).
            PendingKind::Command => {
                match parse(&self.prefix, &input.body, super::commands::known())
                    .filter(Command::runs_after_crash)
                {
                    Some(command) => {
                        tracing::info!(agent = %ctx.agent_id, room = %input.room_id, event = %input.event_id, "a command admitted before the restart is carried out now");
                        self.rerun_command(command, message).await;
                    }
                    None => self.report_not_carried_out(ctx, &input).await,
                }
            }
        }
    }

    /// Tells the room that the command of `input`, admitted by the previous run, was never
    /// carried out, and settles it.
    async fn report_not_carried_out(&self, ctx: &AgentContext, input: &PendingInput) {
        tracing::info!(agent = %ctx.agent_id, room = %input.room_id, event = %input.event_id, "a command admitted before the restart was never carried out");
        let text = strings::command_not_carried_out(&input.body);
        let notice = OutMessage::notice(text)
            .replying_to(input.event_id.clone())
            .in_thread(input.thread.clone());
        let txn = txn(
            "not-carried-out",
            &[ctx.agent_id.as_str(), input.event_id.as_str()],
        );
        if let Err(e) = with_retry(|| ctx.chat.send(&input.room_id, &txn, &notice)).await {
            tracing::warn!(agent = %ctx.agent_id, room = %input.room_id, error = %e, "could not report the command that was not carried out");
        }
        self.settle(&ctx.agent_id, &input.event_id).await;
    }

    /// Marks the polls left open by a previous run as expired: their turns died with it,
    /// so no answer can reach the agent any more.
    async fn expire_stale_polls(&self) {
        for ctx in self.agents.values() {
            let polls = match self.store.open_polls(&ctx.agent_id).await {
                Ok(polls) => polls,
                Err(e) => {
                    tracing::error!(agent = %ctx.agent_id, error = %e, "could not read the open polls");
                    continue;
                }
            };
            for poll in polls {
                tracing::info!(agent = %ctx.agent_id, room = %poll.room_id, poll = %poll.event_id, "marking a poll of the previous run as expired");
                let content = OutMessage {
                    body: poll.body,
                    html: poll.html,
                    notice: poll.native,
                    mentions: Vec::new(),
                    reply_to: None,
                    thread: None,
                    attachment: None,
                    live: false,
                };
                match poll.native {
                    true => approvals::end_poll(ctx, &poll.room_id, &poll.event_id, &content).await,
                    false => {
                        RoomVoice::new(&*ctx.chat, &ctx.agent_id, &poll.room_id)
                            .edit(&poll.event_id, &content)
                            .await
                    }
                }
                self.store
                    .forget_poll(&poll.event_id)
                    .await
                    .or_log("could not forget an expired poll");
            }
        }
    }
}

/// The conversation a cut turn belonged to.
fn turn_key(ctx: &AgentContext, turn: &UnfinishedTurn) -> ConversationKey {
    ConversationKey::new(turn.room_id.clone(), ctx.agent_id.clone()).in_thread(turn.thread.clone())
}
