//! Edits and redactions of the messages a channel holds: a queued prompt takes its new
//! text or leaves the queue; the prompt being answered is stopped when it is redacted and,
//! when edited, the room is told the answer is to the text as it was (or, with
//! `continuity.rerun_edited`, the answer stops and the new text runs).

use super::Channel;
use super::queue::{Edit, Queued};
use super::running_turn::RunningTurn;
use crate::core::inbound::IncomingChange;
use crate::core::inbound::{Change, IncomingMessage};
use crate::core::voice::fresh_txn;
use crate::model::OutMessage;
use crate::model::ids::{EventId, UserId};
use crate::render::strings;
use crate::store::LogFailure;
use crate::store::PendingKind;

impl Channel {
    /// An edit or a redaction of a prompt waiting in this channel's queue: an edit by its
    /// author replaces its text (kept for a restart too); a redaction takes it out of the
    /// queue, its ⏳ taken back. Returns whether the message was queued here.
    pub(super) async fn change_queued(&mut self, change: &IncomingChange) -> bool {
        if !self.queue.holds(&change.target) {
            return false;
        }
        let ctx = self.ctx.clone();
        match &change.change {
            // Only the author may change what they asked (Matrix ignores other edits too).
            Change::Edited(text) => {
                if self.queue.edit(&change.target, &change.sender, text) != Edit::Done {
                    return true;
                }
                (ctx.store
                    .update_pending_body(&ctx.agent_id, &change.target, text)
                    .await)
                    .or_log("could not record the edited prompt");
                tracing::info!(agent = %ctx.agent_id, room = %self.key.room, event = %change.target, "a queued prompt was edited; it runs with its new text");
            }
            Change::Redacted => {
                self.leave_queue(&change.target).await;
                tracing::info!(agent = %ctx.agent_id, room = %self.key.room, event = %change.target, "a queued prompt was redacted; it will not run");
            }
        }
        true
    }

    /// `!queue drop` or `!queue clear` by `by` (the gateway checked they may): the prompt
    /// of `target` leaves the queue as a redacted one does. Returns whether it waited here.
    pub(super) async fn withdraw(&mut self, target: &EventId, by: &UserId) -> bool {
        if !self.queue.holds(target) {
            return false;
        }
        self.leave_queue(target).await;
        tracing::info!(agent = %self.ctx.agent_id, room = %self.key.room, event = %target, %by, "a queued prompt was taken out of the queue; it will not run");
        true
    }

    /// The prompt of `target`, waiting here, leaves the queue for good: its ⏳ is taken
    /// back and the store no longer keeps it for a restart.
    async fn leave_queue(&mut self, target: &EventId) {
        let gone = self
            .queue
            .take(target)
            .expect("it waits, seen by the caller");
        if let Some(reaction) = &gone.reaction {
            let _ = self.ctx.chat.redact(&self.key.room, reaction).await;
        }
        self.queue.count();
        self.settle(target).await;
    }

    /// During a turn: a change of a queued prompt as [`Channel::change_queued`]; a
    /// redaction of the prompt being answered stops the turn; an edit of it is answered
    /// with a notice (the answer is to the text as it was).
    pub(super) async fn change_during_turn(
        &mut self,
        change: IncomingChange,
        turn: &mut RunningTurn,
    ) {
        if self.change_queued(&change).await || &change.target != turn.prompt_event() {
            return;
        }
        match change.change {
            Change::Redacted => {
                tracing::info!(agent = %self.ctx.agent_id, room = %self.key.room, event = %change.target, "the prompt being answered was redacted; stopping the turn");
                self.stop_turn(change.sender, None, turn).await;
            }
            // Where edits re-run: the answer stops and the new text runs next.
            Change::Edited(text) if &change.sender == turn.prompter() && self.ctx.rerun_edited => {
                tracing::info!(agent = %self.ctx.agent_id, room = %self.key.room, event = %change.target, "the prompt being answered was edited; stopping the turn to run the new text");
                let again = IncomingMessage {
                    body: text,
                    ..turn.prompt().clone()
                };
                // Kept for a restart like any waiting prompt.
                let ctx = &self.ctx;
                let pending = again.pending_input(PendingKind::Prompt);
                (ctx.store.requeue(&pending).await)
                    .or_log("could not keep the edited prompt for a restart");
                self.stop_turn(change.sender, None, turn).await;
                self.queue.push_front(Queued {
                    edited: true,
                    ..Queued::new(again)
                });
                let notice =
                    OutMessage::notice(strings::EDITED_RERUN).replying_to(change.target.clone());
                self.voice().say(&fresh_txn("edited"), &notice).await;
            }
            Change::Edited(_) if &change.sender == turn.prompter() => {
                let notice = OutMessage::notice(strings::EDITED_WHILE_RUNNING)
                    .replying_to(change.target.clone());
                self.voice().say(&fresh_txn("edited"), &notice).await;
            }
            Change::Edited(_) => {}
        }
    }
}
