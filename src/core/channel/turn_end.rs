//! How a turn ends: the reply's last edit, footer or notice, the transcript line, the
//! metrics, a hand-off to another agent, and what the homeserver did not take kept in the
//! outbox. See `docs/turns.md`.

use super::Channel;
use super::budget::TurnSpend;
use super::running_turn::{Ended, RunningTurn};
use crate::core::chat::Undelivered;
use crate::core::context::Handoff;
use crate::core::view::stream::ReplyStream;
use crate::model::Verbosity;
use crate::model::agent::{AgentError, StopReason, TurnEnd};
use crate::model::ids::{ConversationKey, EventId};
use crate::render::strings;
use crate::store::LogFailure;
use crate::store::{OutboxItem, Role, TranscriptLine};
use std::time::Duration;

impl Channel {
    /// Shows how the turn ended (final edit, footer or notice) and records the reply.
    pub(super) async fn finish_turn(
        &mut self,
        result: Result<TurnEnd, AgentError>,
        turn: RunningTurn,
    ) {
        let ctx = self.ctx.clone();
        let usage = result.as_ref().ok().and_then(|end| end.usage);
        if let Some(usage) = usage {
            self.reported.tokens(usage);
        }
        let result = result.map(|end| end.reason);
        let mut ended = turn.end();
        let spent = TurnSpend::of(&mut ended, usage);
        let (stop_label, ending) = self.ending(&result, &ended);
        let Ended {
            prompt,
            mut stream,
            typing,
            mut activity,
            stopped_by,
            steered,
            refused,
            ..
        } = ended;
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
            tracing::warn!(agent = %ctx.agent_id, room = %self.key.room, error = %e, "could not close the tool cards");
            if e.is_retryable() {
                self.to_outbox(activity.undelivered()).await;
            }
        }
        let stopped_by = stopped_by.as_deref();
        let showed_work = activity.showed_work();
        self.end_reply(&mut stream, &result, ending, stopped_by, showed_work)
            .await;
        typing.done().await;
        self.count_turn(&stream, &prompt.event_id, prompt.timestamp_ms, stop_label);
        // The turn is over and its reply recorded in one go: a crash now leaves no cut turn
        // to mark, and no reply missing from the conversation.
        let first_event = stream.event_ids().into_iter().next();
        let reply = TranscriptLine {
            role: Role::Agent,
            sender: &ctx.user_id,
            event_id: first_event.as_ref(),
            body: stream.text(),
            stop_reason: Some(stop_label),
        };
        if refused > 0 {
            (ctx.store.note_refusals(&self.key, refused).await)
                .or_log("could not note the turn's refused calls");
        }
        ctx.store
            .end_turn(&self.key, Some(reply), None, &steered)
            .await
            .or_log("could not record the end of the turn");
        self.count_spend(&prompt, spent).await;
        if died {
            self.show_stderr(false).await;
        }
        // A complete answer may address other agents of the room: the gateway decides.
        if let (Some(event_id), Ok(StopReason::EndTurn)) = (first_event, &result) {
            self.hand_on(event_id, stream.text()).await;
        }
    }

    /// Ends the reply with `ending` (and the usage line, where the room shows everything),
    /// or, when the agent said nothing, says how the turn ended in a notice of its own (none
    /// for a turn that ended normally after showing its work: its cards are its answer).
    async fn end_reply(
        &mut self,
        stream: &mut ReplyStream,
        result: &Result<StopReason, AgentError>,
        ending: Option<String>,
        stopped_by: Option<&str>,
        showed_work: bool,
    ) {
        let ctx = self.ctx.clone();
        if stream.text().is_empty() {
            let text = match (result, ending) {
                (Ok(reason), None) => {
                    strings::empty_reply(&ctx.display_name, reason, stopped_by, showed_work)
                }
                (_, ending) => ending,
            };
            if let Some(text) = text {
                self.notice(text).await;
            }
            return;
        }
        let usage = match self.verbosity().await {
            Verbosity::All => self.reported.usage_line(),
            _ => None,
        };
        let footer: Vec<String> = ending.into_iter().chain(usage).collect();
        let footer = (!footer.is_empty()).then(|| footer.join("\n\n"));
        if let Err(e) = stream.finish(footer).await {
            tracing::error!(agent = %ctx.agent_id, room = %self.key.room, error = %e, "could not deliver the final reply");
            if e.is_retryable() {
                self.to_outbox(stream.undelivered()).await;
            }
        }
    }

    /// How the turn ended, for the log and the metrics, and the line the room is told (if
    /// any): a stop, a shutdown, or the agent's failure in its words.
    fn ending(
        &self,
        result: &Result<StopReason, AgentError>,
        ended: &Ended,
    ) -> (&'static str, Option<String>) {
        let ctx = &self.ctx;
        let stopped_by = ended.stopped_by.as_deref();
        match result {
            Ok(reason) if ended.at_shutdown => (
                stop_reason_label(reason),
                Some(strings::STOPPED_AT_SHUTDOWN.to_owned()),
            ),
            Ok(reason @ StopReason::Cancelled) if let Some(name) = &ended.cut => (
                stop_reason_label(reason),
                Some(strings::cut_by_message(name)),
            ),
            Ok(reason) => (
                stop_reason_label(reason),
                strings::stop_footer(&ctx.display_name, reason, stopped_by),
            ),
            Err(e) => {
                tracing::warn!(agent = %ctx.agent_id, room = %self.key.room, error = %e, stderr = %ctx.agent.stderr_tail(), "turn failed");
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
        }
    }

    /// The ended turn in the log and the metrics: how it ended, how its answer was
    /// posted, and how long after the prompt `prompt` was sent (`sent_ms`, the
    /// homeserver's clock) its first post came.
    fn count_turn(&self, stream: &ReplyStream, prompt: &EventId, sent_ms: u64, stop_label: &str) {
        let (ctx, stats) = (&self.ctx, stream.stats());
        let sent = std::time::UNIX_EPOCH + Duration::from_millis(sent_ms);
        let first_answer = stats.first_post.and_then(|at| at.duration_since(sent).ok());
        // Each figure a field of its own, as people and log collectors read them.
        let first_answer_ms = first_answer.map_or(-1, |d| d.as_millis() as i64);
        tracing::info!(
            agent = %ctx.agent_id,
            room = %self.key.room,
            prompt = %prompt,
            stop = stop_label,
            sends = stats.sends,
            edits = stats.edits,
            rate_limited = stats.rate_limited,
            failures = stats.failures,
            first_answer_ms,
            "turn ended"
        );
        let metrics = crate::core::metrics::metrics();
        let agent = &ctx.agent_id;
        metrics.turn_ended(
            agent,
            stop_label,
            stats.sends,
            stats.edits,
            stats.rate_limited,
        );
        if let Some(after) = first_answer {
            metrics.first_answer(agent, after);
        }
    }

    /// Hands the complete answer `text` (first posted as `event_id`) to the gateway, which
    /// decides whether it addresses another agent of the room.
    async fn hand_on(&self, event_id: EventId, text: &str) {
        let Some(handoffs) = &self.ctx.handoffs else {
            return;
        };
        let handoff = Handoff {
            room_id: self.key.room.clone(),
            thread: self.key.thread.clone(),
            from_agent: self.ctx.agent_id.clone(),
            event_id,
            text: text.to_owned(),
        };
        // Waits while the gateway's hand-off queue is full (`core::queues::HANDOFFS`).
        let _ = handoffs.send(handoff).await;
    }

    /// Hands what the homeserver could not take (it stayed away longer than a turn waits)
    /// to the outbox, which delivers it once the homeserver is back.
    pub(super) async fn to_outbox(&self, undelivered: Vec<Undelivered>) {
        if undelivered.is_empty() {
            return;
        }
        let ctx = &self.ctx;
        let items = outbox_items(&self.key, undelivered);
        match ctx.store.outbox_add(&ctx.agent_id, &items).await {
            Ok(()) => {
                tracing::warn!(agent = %ctx.agent_id, room = %self.key.room, messages = items.len(), "the homeserver stayed away: the final content waits in the outbox")
            }
            Err(e) => {
                tracing::error!(agent = %ctx.agent_id, room = %self.key.room, error = %e, "could not keep the final content for later")
            }
        }
    }
}

/// Outbox items for the `undelivered` messages of conversation `key`.
fn outbox_items(key: &ConversationKey, undelivered: Vec<Undelivered>) -> Vec<OutboxItem> {
    undelivered
        .into_iter()
        .map(|u| OutboxItem {
            id: 0,
            room_id: key.room.clone(),
            thread: key.thread.clone(),
            event_id: u.event_id,
            txn_id: u.txn,
            body: u.content.body,
            html: u.content.html,
            notice: u.content.notice,
        })
        .collect()
}

fn stop_reason_label(reason: &StopReason) -> &'static str {
    match reason {
        StopReason::EndTurn => "end_turn",
        StopReason::MaxTokens => "max_tokens",
        StopReason::MaxTurnRequests => "max_turn_requests",
        StopReason::Refusal => "refusal",
        StopReason::Cancelled => "cancelled",
        StopReason::EndedAfterRefusal => "ended_after_refusal",
    }
}
