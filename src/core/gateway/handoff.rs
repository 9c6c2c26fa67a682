//! Hand-offs between the agents of a room: an answer that addresses another agent of the
//! room becomes that agent's prompt, when the room allows it (`!handoff on`), at most
//! `rooms.handoff_max_hops` times per message from a person so two agents cannot keep
//! answering each other.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use crate::model::ids::{AgentId, EventId, RoomId};

use tokio::sync::mpsc;

use super::Gateway;
use crate::core::channel::ChannelInput;
use crate::core::context::Handoff;
use crate::core::inbound::IncomingMessage;
use crate::core::routing::{self, Addressed};
use crate::render::strings;
use crate::store::{PendingKind, now_ms};

/// The hand-offs each room has had since a person last wrote in it, a part of the gateway
/// of its own: the limit on agents answering each other.
pub(super) struct Hops {
    /// How many hand-offs a message from a person allows (`rooms.handoff_max_hops`).
    max: u32,
    /// Hand-offs since the last message from a person, by room.
    counts: Mutex<HashMap<RoomId, u32>>,
}

/// Whether one more hand-off may go ahead in a room.
#[derive(Debug, PartialEq, Eq)]
enum Hop {
    /// It may: it is the room's `n`th since a person wrote.
    Allowed(u32),
    /// The limit is reached; `first` is whether this is the first refused hand-off since a
    /// person wrote, the one the room is told about.
    Refused { first: bool },
}

impl Hops {
    /// No hand-off counted yet, at most `max` per message from a person.
    pub(super) fn new(max: u32) -> Self {
        Self {
            max,
            counts: Mutex::default(),
        }
    }

    /// A person wrote in `room`: agents may hand work to each other again.
    pub(super) fn person_wrote(&self, room: &RoomId) {
        self.counts.lock().expect("hops poisoned").remove(room);
    }

    /// Counts one more hand-off in `room` and says whether it may go ahead.
    fn take(&self, room: &RoomId) -> Hop {
        let mut counts = self.counts.lock().expect("hops poisoned");
        let count = counts.entry(room.clone()).or_default();
        *count += 1;
        match *count {
            n if n <= self.max => Hop::Allowed(n),
            n => Hop::Refused {
                first: n == self.max + 1,
            },
        }
    }
}

impl Gateway {
    /// Takes in the agents' finished answers until shutdown.
    pub async fn run_handoffs(self: Arc<Self>, mut answers: mpsc::Receiver<Handoff>) {
        loop {
            let answer = tokio::select! {
                _ = self.channels.shutting_down() => return,
                answer = answers.recv() => match answer {
                    Some(answer) => answer,
                    None => return,
                },
            };
            self.hand_off(answer).await;
        }
    }

    /// Hands `answer` to the other agents of its room that it addresses, if allowed.
    async fn hand_off(&self, answer: Handoff) {
        let room = &answer.room_id;
        let routing = self.room_routing(room).await;
        if !self.handoff_on(&routing) {
            return;
        }
        let members = self.members(room, &answer.from_agent).await;
        let addressing = routing::addressing(
            Addressed {
                body: &answer.text,
                mentions: &[],
                reply_to_sender: None,
            },
            &members,
        );
        let targets: Vec<AgentId> = addressing
            .named
            .into_iter()
            .filter(|agent| *agent != answer.from_agent)
            .collect();
        let Some(from) = self.agents.get(&answer.from_agent) else {
            return;
        };
        if targets.is_empty() {
            return;
        }
        let hop = match self.hops.take(room) {
            Hop::Allowed(hop) => hop,
            Hop::Refused { first } => {
                // Said once per message from a person; later attempts are only logged.
                let max = self.rules.handoff_max_hops;
                tracing::info!(agent = %answer.from_agent, room = %room, max, "hand-off limit reached; not handing the answer on");
                if first {
                    let message = IncomingMessage {
                        agent_id: answer.from_agent.clone(),
                        room_id: room.clone(),
                        thread: answer.thread.clone(),
                        event_id: EventId::new(format!("{}-handoff-limit", answer.event_id)),
                        ..Default::default()
                    };
                    self.notice(&message, strings::handoff_limit(max)).await;
                }
                return;
            }
        };
        let text = strings::handed_off(&from.display_name, &addressing.text);
        for target in targets {
            tracing::info!(from = %answer.from_agent, to = %target, room = %room, hop, "handing an answer to another agent");
            let prompt = IncomingMessage {
                agent_id: target.clone(),
                room_id: room.clone(),
                thread: answer.thread.clone(),
                event_id: answer.event_id.clone(),
                sender: from.user_id.clone(),
                body: text.clone(),
                timestamp_ms: now_ms() as u64,
                ..Default::default()
            };
            self.hand_to(prompt).await;
        }
    }

    /// Admits `prompt`, an answer handed to another agent, like a person's prompt (once,
    /// and durably until its turn begins), and gives it to that agent's conversation.
    async fn hand_to(&self, prompt: IncomingMessage) {
        let key = prompt.conversation();
        let pending = prompt.pending_input(PendingKind::Prompt);
        match self
            .store
            .admit(&prompt.event_id, &key, Some(&pending))
            .await
        {
            Ok(true) => {
                self.send_to_channel(&key, ChannelInput::Prompt(prompt))
                    .await
            }
            Ok(false) => {
                tracing::debug!(to = %prompt.agent_id, event = %prompt.event_id, "answer handed on already")
            }
            Err(e) => {
                tracing::error!(to = %prompt.agent_id, error = %e, "store unavailable; answer not handed on")
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{Hop, Hops};
    use crate::model::ids::RoomId;

    #[test]
    fn hand_offs_are_counted_per_room_until_a_person_writes() {
        let hops = Hops::new(2);
        let room = RoomId::parse("!a:localhost").unwrap();
        let other = RoomId::parse("!b:localhost").unwrap();
        assert_eq!(hops.take(&room), Hop::Allowed(1));
        assert_eq!(hops.take(&room), Hop::Allowed(2));
        assert_eq!(hops.take(&room), Hop::Refused { first: true });
        assert_eq!(hops.take(&room), Hop::Refused { first: false });
        assert_eq!(hops.take(&other), Hop::Allowed(1), "rooms count apart");
        hops.person_wrote(&room);
        assert_eq!(hops.take(&room), Hop::Allowed(1));
    }
}
