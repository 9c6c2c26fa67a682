//! The ⏳ on prompts waiting behind a running turn: put on once the turn ahead has lasted a
//! moment ([`MARK_AFTER`](super::queue::MARK_AFTER)), remembered in the store so a restart
//! takes it back, and taken back when the prompt's turn starts (see `docs/turns.md`,
//! "Ordering").

use super::Channel;
use super::queue::Queued;
use crate::core::inbound::IncomingMessage;
use crate::model::ids::EventId;
use crate::render::strings;

impl Channel {
    /// Queues `message` behind the running turn: marked ⏳ now if that turn has lasted (or
    /// already: `reaction`), else once it has; past `queue.max_waiting` it is refused with
    /// a notice and settled instead.
    pub(super) async fn mark_and_queue(
        &mut self,
        message: IncomingMessage,
        reaction: Option<EventId>,
    ) {
        if self.queue.is_full() {
            tracing::warn!(agent = %self.ctx.agent_id, room = %self.key.room, event = %message.event_id, waiting = self.queue.len(), "too many messages wait; one was refused");
            if let Some(reaction) = &reaction {
                let _ = self.ctx.chat.redact(&self.key.room, reaction).await;
            }
            let text = strings::too_many_waiting(&self.ctx.display_name, Some(self.queue.len()));
            self.notice(text).await;
            self.settle(&message.event_id).await;
            return;
        }
        let queued = match reaction {
            Some(reaction) => Queued::marked(message, Some(reaction)),
            None if self.queue.marks_now() => {
                let reaction = self.mark_queued(&message.event_id).await;
                Queued::marked(message, reaction)
            }
            None => Queued::to_mark(message),
        };
        self.queue.push_back(queued);
    }

    /// Marks ⏳ the waiting prompts that were left unmarked while the turn ahead was young:
    /// it has lasted now.
    pub(super) async fn mark_waiting(&mut self) {
        for event in self.queue.take_to_mark() {
            if let Some(reaction) = self.mark_queued(&event).await {
                self.queue.marked(&event, reaction);
            }
        }
    }

    /// Puts the ⏳ reaction on a waiting message and remembers it with the message, so it
    /// is taken back when its turn starts, even after a restart.
    async fn mark_queued(&self, event_id: &EventId) -> Option<EventId> {
        let reaction = match self
            .ctx
            .chat
            .react(&self.key.room, event_id, strings::QUEUED_REACTION)
            .await
        {
            Ok(id) => id,
            Err(e) => {
                tracing::warn!(room = %self.key.room, error = %e, "could not mark a message as queued");
                return None;
            }
        };
        let ctx = &self.ctx;
        if let Err(e) = ctx
            .store
            .set_queued_reaction(&ctx.agent_id, event_id, &reaction)
            .await
        {
            tracing::warn!(room = %self.key.room, error = %e, "could not record the queued mark");
        }
        Some(reaction)
    }
}
