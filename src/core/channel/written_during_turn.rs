//! A message written while a turn runs, as the room's `!queue` setting (or `queue.mode`)
//! says: it waits its turn (⏳), joins the running turn where the agent offers steering
//! (↪️), or stops the turn and is answered at once, the agent told its answer was cut.
//!
//! Nothing is lost either way: a steered message's input stays waiting in the store until
//! the turn that answers it ends, so a crash before leaves it to be answered after the
//! restart; one the agent would not take (its turn ended meanwhile, an error) waits its
//! turn like any other. See `docs/turns.md`.

use super::Channel;
use super::queue::Queued;
use super::running_turn::RunningTurn;
use crate::core::inbound::IncomingMessage;
use crate::model::QueueMode;
use crate::model::agent::Steered;
use crate::model::media::PromptBlock;
use crate::render::strings;

impl Channel {
    /// What the room's queue setting makes of `message`, a prompt written while `turn`
    /// runs.
    pub(super) async fn written_during_turn(
        &mut self,
        message: IncomingMessage,
        turn: &mut RunningTurn,
    ) {
        match self.ctx.queue_mode_in(&self.key.room).await {
            QueueMode::Queue => self.queue_behind(message, None).await,
            QueueMode::Steer => self.steer_in(message, turn).await,
            QueueMode::Interrupt => self.interrupt_with(message, turn).await,
        }
    }

    /// Sends `message` into the running turn where the agent takes it; else it waits its
    /// turn. Files go with a prompt of their own, and a turn already stopping takes
    /// nothing more.
    async fn steer_in(&mut self, message: IncomingMessage, turn: &mut RunningTurn) {
        let ctx = self.ctx.clone();
        // A slash command is a prompt of its own (it must start the prompt, and one that
        // switches approvals is checked there), never steered into a turn.
        let steerable = ctx.agent.steers()
            && message.media.is_empty()
            && crate::core::routing::slash_command(&message.body).is_none()
            && !turn.is_stopped()
            && !turn.shutting_down();
        if !steerable {
            return self.queue_behind(message, None).await;
        }
        let text = self.framed(&message).await;
        let steered = match turn.session() {
            Some(session) => session.steer(vec![PromptBlock::Text(text)]).await,
            None => Ok(Steered::NoTurn),
        };
        match steered {
            Ok(Steered::Injected) => {
                tracing::info!(agent = %ctx.agent_id, room = %self.key.room, event = %message.event_id, "a message joined the running turn");
                self.record_prompt(&message).await;
                turn.steered_in(message.event_id.clone());
                // Off the answer's path: the mark is only for people.
                let (chat, room, event) =
                    (ctx.chat.clone(), self.key.room.clone(), message.event_id);
                tokio::spawn(async move {
                    if let Err(e) = chat.react(&room, &event, strings::STEERED_REACTION).await {
                        tracing::warn!(room = %room, error = %e, "could not mark a message as steered");
                    }
                });
            }
            Ok(Steered::NoTurn) => {
                tracing::debug!(agent = %ctx.agent_id, room = %self.key.room, "no turn to steer into any more; the message waits its turn");
                self.queue_behind(message, None).await
            }
            Ok(Steered::Failed) => {
                tracing::warn!(agent = %ctx.agent_id, room = %self.key.room, "the agent could not take a message into its turn; it waits its turn");
                self.queue_behind(message, None).await
            }
            Err(e) => {
                tracing::warn!(agent = %ctx.agent_id, room = %self.key.room, error = %e, "the agent did not take a message into its turn; it waits its turn");
                self.queue_behind(message, None).await
            }
        }
    }

    /// Stops the running turn for `message`, which runs next, first in line, the agent told
    /// its previous answer was cut. A turn already stopping lets it wait first in line.
    async fn interrupt_with(&mut self, message: IncomingMessage, turn: &mut RunningTurn) {
        let Some(message) = self.gather(message, false).await else {
            return;
        };
        let by = message.sender.clone();
        let name = (message.sender_name.clone()).unwrap_or_else(|| by.to_string());
        tracing::info!(agent = %self.ctx.agent_id, room = %self.key.room, by = %by, "a new message interrupts the running turn");
        self.queue.push_front(Queued {
            interrupting: !turn.is_stopped(),
            ..Queued::new(message)
        });
        if turn.is_stopped() {
            return;
        }
        self.cancel_prompt(turn, |_| crate::render::cards::PollOutcome::TurnStopped)
            .await;
        turn.cut_by(name);
    }
}
