//! Status reactions on the message a turn answers, where the room has them on
//! (`!reactions`, `display.status_reactions`): 👀 when the turn starts, then ✅ answered,
//! ❌ failed or 🛑 stopped, each replacing the last. Every reaction is sent in a task of its
//! own, off the answer's path: a slow or refused reaction never holds the turn up, and only
//! shows in the log.

use std::sync::Arc;

use tokio::task::JoinHandle;

use super::Channel;
use crate::core::chat::ChatPort;
use crate::model::agent::{AgentError, StopReason, TurnEnd};
use crate::model::ids::{EventId, RoomId};
use crate::render::strings;

impl Channel {
    /// Marks `prompt` 👀 where the room has status reactions on (as chosen with
    /// `!reactions`, read at each turn, or configured); `None` where it has them off.
    pub(super) async fn mark_taken(&self, prompt: &EventId) -> Option<StatusMarks> {
        let ctx = &self.ctx;
        let on = ctx.status_reactions_in(&self.key.room).await;
        on.then(|| StatusMarks::taken(ctx.chat.clone(), self.key.room.clone(), prompt.clone()))
    }
}

/// The status reactions of one turn's prompt.
pub(super) struct StatusMarks {
    /// Who reacts.
    chat: Arc<dyn ChatPort>,
    /// The room.
    room: RoomId,
    /// The prompt.
    prompt: EventId,
    /// The 👀 reaction being put on, to take back when the turn ends.
    taken: JoinHandle<Option<EventId>>,
}

/// How a turn ended, as its prompt's reaction says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Outcome {
    /// Answered (whatever the stop reason the agent gave).
    Answered,
    /// The turn failed (the agent errored or died).
    Failed,
    /// Someone (or the gateway's shutdown) stopped it.
    Stopped,
}

impl Outcome {
    /// How a turn that ended with `result` ended, for its prompt's mark.
    pub(super) fn of(result: &Result<TurnEnd, AgentError>) -> Self {
        match result {
            Ok(end) if end.reason == StopReason::Cancelled => Outcome::Stopped,
            Ok(_) => Outcome::Answered,
            Err(_) => Outcome::Failed,
        }
    }
}

impl StatusMarks {
    /// Marks `prompt` 👀: its turn has started.
    pub(super) fn taken(chat: Arc<dyn ChatPort>, room: RoomId, prompt: EventId) -> Self {
        let (c, r, p) = (chat.clone(), room.clone(), prompt.clone());
        let taken = tokio::spawn(async move { react(&*c, &r, &p, strings::TAKEN_REACTION).await });
        Self {
            chat,
            room,
            prompt,
            taken,
        }
    }

    /// Marks the prompt with how its turn ended, then takes the 👀 back (in that order, so
    /// the message is never without a mark).
    pub(super) fn ended(self, outcome: Outcome) {
        let key = match outcome {
            Outcome::Answered => strings::ANSWERED_REACTION,
            Outcome::Failed => strings::FAILED_REACTION,
            Outcome::Stopped => strings::STOPPED_REACTION,
        };
        tokio::spawn(async move {
            react(&*self.chat, &self.room, &self.prompt, key).await;
            if let Ok(Some(taken)) = self.taken.await
                && let Err(e) = self.chat.redact(&self.room, &taken).await
            {
                tracing::warn!(room = %self.room, error = %e, "could not take a status reaction back");
            }
        });
    }
}

/// Puts `key` on `event`; its event ID, or `None` (logged) when it could not.
async fn react(chat: &dyn ChatPort, room: &RoomId, event: &EventId, key: &str) -> Option<EventId> {
    match chat.react(room, event, key).await {
        Ok(id) => Some(id),
        Err(e) => {
            tracing::warn!(room = %room, error = %e, key, "could not put a status reaction on a message");
            None
        }
    }
}
