//! The agent's own reactions on a poll (a choice's emoji each, so a person can answer
//! with one tap): put on in a task of their own, off the answer's path, and withdrawn once
//! the poll is settled, including any still being posted then.

use std::sync::{Arc, Mutex};

use crate::core::chat::ChatPort;
use crate::core::context::AgentContext;
use crate::core::voice::with_retry;
use crate::model::ids::{EventId, RoomId};

/// The agent's own reactions on a poll, as they are posted: withdrawn (redacted) once the
/// poll is settled, including any still being posted then.
#[derive(Clone, Default)]
pub(super) struct OwnReactions(Arc<Mutex<Reactions>>);

/// The state behind [`OwnReactions`].
#[derive(Default)]
struct Reactions {
    /// The reactions posted and not withdrawn.
    posted: Vec<EventId>,
    /// Whether they were withdrawn: one posted after that is withdrawn at once.
    withdrawn: bool,
}

impl OwnReactions {
    /// Notes reaction `id`, just posted; `false` when the poll is settled already and it
    /// must go at once.
    fn posted(&self, id: EventId) -> bool {
        let mut reactions = self.0.lock().expect("reactions poisoned");
        if !reactions.withdrawn {
            reactions.posted.push(id);
        }
        !reactions.withdrawn
    }

    /// Withdraws every reaction posted so far, and any posted later, in a task of its own
    /// (one request each, off the answer's path).
    pub(super) fn withdraw(&self, ctx: &AgentContext, room: &RoomId) {
        let ids = {
            let mut reactions = self.0.lock().expect("reactions poisoned");
            reactions.withdrawn = true;
            std::mem::take(&mut reactions.posted)
        };
        let (chat, room) = (ctx.chat.clone(), room.clone());
        tokio::spawn(async move {
            for id in ids {
                redact_reaction(&*chat, &room, &id).await;
            }
        });
    }
}

/// Takes back one of the agent's reactions.
async fn redact_reaction(chat: &dyn ChatPort, room: &RoomId, id: &EventId) {
    if let Err(e) = with_retry(|| chat.redact(room, id)).await {
        tracing::warn!(room = %room, error = %e, "could not withdraw a reaction from a settled poll");
    }
}

/// Puts the agent's own reactions on `event_id`, in order, in a task of their own; returns
/// them as they are posted.
pub(super) fn spawn_reactions(
    ctx: &AgentContext,
    room: &RoomId,
    event_id: EventId,
    keys: Vec<String>,
) -> OwnReactions {
    let (chat, room) = (ctx.chat.clone(), room.clone());
    let reactions = OwnReactions::default();
    let noted = reactions.clone();
    tokio::spawn(async move {
        for key in keys {
            match with_retry(|| chat.react(&room, &event_id, &key)).await {
                Ok(id) if !noted.posted(id.clone()) => redact_reaction(&*chat, &room, &id).await,
                Ok(_) => {}
                Err(e) => {
                    tracing::warn!(room = %room, error = %e, key, "could not put a reaction on a poll")
                }
            }
        }
    });
    reactions
}
