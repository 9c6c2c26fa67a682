//! The fake chat side: records what the core asked of the homeserver and refuses chosen
//! calls.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use tokio::time::Instant;

use crate::core::chat::{ChatError, ChatPort, RoomMember};
use crate::core::inbound::IncomingMessage;
use crate::model::OutMessage;
use crate::model::ids::{EventId, RoomId, UserId};
use crate::model::poll::PollAnswer;

/// One request the fake chat received and accepted.
#[derive(Debug, Clone)]
pub enum Sent {
    /// A new message.
    Send {
        /// Room.
        room: String,
        /// Event ID given to it.
        event_id: String,
        /// Content.
        msg: OutMessage,
    },
    /// An edit.
    Edit {
        /// Room.
        room: String,
        /// Edited event.
        event_id: String,
        /// New content.
        msg: OutMessage,
    },
    /// A reaction.
    React {
        /// Room.
        room: String,
        /// Target.
        event_id: String,
        /// Key.
        key: String,
    },
    /// A redaction.
    Redact {
        /// Room.
        room: String,
        /// Redacted event.
        event_id: String,
    },
    /// A native poll.
    Poll {
        /// Room.
        room: String,
        /// Event ID given to it.
        event_id: String,
        /// Its question (the body) and how it is posted.
        msg: OutMessage,
        /// Its answers.
        answers: Vec<PollAnswer>,
    },
    /// The end of a native poll.
    EndPoll {
        /// Room.
        room: String,
        /// The poll ended.
        poll: String,
        /// What its end says.
        msg: OutMessage,
    },
    /// A read receipt.
    Read {
        /// Room.
        room: String,
        /// The event marked read.
        event_id: String,
        /// The thread it was read in, if any.
        thread: Option<String>,
    },
}

#[derive(Default)]
struct ChatState {
    log: Vec<(Instant, Sent)>,
    attempts: Vec<Instant>,
    calls: u32,
    rate_limited: HashSet<u32>,
    failing: HashSet<u32>,
    retry_after: Duration,
    txns: HashMap<String, EventId>,
    members: Vec<String>,
    power: HashMap<String, i64>,
    /// Files people "sent", by source.
    media: HashMap<String, Vec<u8>>,
    /// Every download asked for, by source.
    downloads: Vec<String>,
    /// What the rooms said, oldest first (the room tools read it).
    history: Vec<IncomingMessage>,
    /// How long a typing notice takes to be sent.
    typing_delay: Duration,
    /// How long a new message takes to be sent.
    send_delay: Duration,
    /// Typing notices sent, in the order they were done: (room, on).
    typing: Vec<(String, bool)>,
}

/// A chat side that records what it was asked to do and can refuse chosen calls.
#[derive(Default, Clone)]
pub struct FakeChat {
    state: Arc<Mutex<ChatState>>,
}

impl FakeChat {
    /// A fake that accepts everything.
    pub fn new() -> Arc<Self> {
        Arc::new(Self::default())
    }

    /// Gives `user` power level `level` in every room (everyone else has 0).
    pub fn set_power(&self, user: &str, level: i64) {
        self.state
            .lock()
            .unwrap()
            .power
            .insert(user.to_owned(), level);
    }

    /// Makes every typing notice take `delay` (a slow homeserver).
    pub fn set_typing_delay(&self, delay: Duration) {
        self.state.lock().unwrap().typing_delay = delay;
    }

    /// Makes every new message take `delay` to be sent (a saturated homeserver).
    pub fn set_send_delay(&self, delay: Duration) {
        self.state.lock().unwrap().send_delay = delay;
    }

    /// The typing notices done so far, in order: (room, on).
    pub fn typing_notices(&self) -> Vec<(String, bool)> {
        self.state.lock().unwrap().typing.clone()
    }

    /// Sets who has joined every room.
    pub fn set_members(&self, members: &[&str]) {
        self.state.lock().unwrap().members = members.iter().map(|m| m.to_string()).collect();
    }

    /// Adds `message` to its room's history, as the newest message.
    pub fn add_history(&self, message: IncomingMessage) {
        self.state.lock().unwrap().history.push(message);
    }

    /// Makes `data` the file found at `source`.
    pub fn add_media(&self, source: &str, data: &[u8]) {
        let mut s = self.state.lock().unwrap();
        s.media.insert(source.to_owned(), data.to_vec());
    }

    /// The sources of every download asked for, in order.
    pub fn downloads(&self) -> Vec<String> {
        self.state.lock().unwrap().downloads.clone()
    }

    /// Refuses the given calls (1-based, counting sends and edits) with `M_LIMIT_EXCEEDED`.
    pub fn rate_limit_calls(&self, calls: &[u32], retry_after: Duration) {
        let mut s = self.state.lock().unwrap();
        s.rate_limited.extend(calls);
        s.retry_after = retry_after;
    }

    /// Fails the given calls (1-based) with a transient error.
    pub fn fail_calls(&self, calls: &[u32]) {
        self.state.lock().unwrap().failing.extend(calls);
    }

    /// Every accepted request.
    pub fn log(&self) -> Vec<Sent> {
        self.state
            .lock()
            .unwrap()
            .log
            .iter()
            .map(|(_, s)| s.clone())
            .collect()
    }

    /// When each accepted send or edit happened.
    pub fn times(&self) -> Vec<Instant> {
        let s = self.state.lock().unwrap();
        s.log
            .iter()
            .filter(|(_, e)| matches!(e, Sent::Send { .. } | Sent::Edit { .. }))
            .map(|(t, _)| *t)
            .collect()
    }

    /// When each send or edit was attempted, accepted or not.
    pub fn attempt_times(&self) -> Vec<Instant> {
        self.state.lock().unwrap().attempts.clone()
    }

    /// The current body of every message in `room`, edits applied, in posting order.
    pub fn shown(&self, room: &str) -> Vec<String> {
        self.messages(room).into_iter().map(|m| m.body).collect()
    }

    /// The current content of every message in `room`, edits applied, in posting order.
    pub fn messages(&self, room: &str) -> Vec<OutMessage> {
        let s = self.state.lock().unwrap();
        let mut order: Vec<String> = Vec::new();
        let mut content: HashMap<String, OutMessage> = HashMap::new();
        for (_, e) in &s.log {
            match e {
                Sent::Send {
                    room: r,
                    event_id,
                    msg,
                } if r == room => {
                    order.push(event_id.clone());
                    content.insert(event_id.clone(), msg.clone());
                }
                Sent::Edit {
                    room: r,
                    event_id,
                    msg,
                } if r == room => {
                    content.insert(event_id.clone(), msg.clone());
                }
                _ => {}
            }
        }
        order
            .into_iter()
            .map(|id| content.remove(&id).unwrap())
            .collect()
    }

    fn attempt(&self) -> Result<(), ChatError> {
        let mut s = self.state.lock().unwrap();
        s.calls += 1;
        let n = s.calls;
        s.attempts.push(Instant::now());
        if s.rate_limited.contains(&n) {
            return Err(ChatError::RateLimited {
                retry_after: s.retry_after,
            });
        }
        if s.failing.contains(&n) {
            return Err(ChatError::Transient("connection reset".into()));
        }
        Ok(())
    }

    fn record(&self, sent: Sent) {
        self.state.lock().unwrap().log.push((Instant::now(), sent));
    }
}

#[async_trait]
impl ChatPort for FakeChat {
    async fn send(&self, room: &RoomId, txn: &str, msg: &OutMessage) -> Result<EventId, ChatError> {
        let delay = self.state.lock().unwrap().send_delay;
        tokio::time::sleep(delay).await;
        self.attempt()?;
        let mut s = self.state.lock().unwrap();
        if let Some(id) = s.txns.get(txn) {
            return Ok(id.clone());
        }
        let event_id = EventId::new(format!("$ev{}", s.log.len()));
        s.txns.insert(txn.to_owned(), event_id.clone());
        s.log.push((
            Instant::now(),
            Sent::Send {
                room: room.to_string(),
                event_id: event_id.to_string(),
                msg: msg.clone(),
            },
        ));
        Ok(event_id)
    }

    async fn download(&self, source: &str) -> Result<Vec<u8>, ChatError> {
        let mut s = self.state.lock().unwrap();
        s.downloads.push(source.to_owned());
        (s.media.get(source).cloned())
            .ok_or_else(|| ChatError::Permanent(format!("M_NOT_FOUND: no file at {source}").into()))
    }

    async fn edit(
        &self,
        room: &RoomId,
        event_id: &EventId,
        msg: &OutMessage,
    ) -> Result<(), ChatError> {
        self.attempt()?;
        self.record(Sent::Edit {
            room: room.to_string(),
            event_id: event_id.to_string(),
            msg: msg.clone(),
        });
        Ok(())
    }

    async fn react(
        &self,
        room: &RoomId,
        event_id: &EventId,
        key: &str,
    ) -> Result<EventId, ChatError> {
        self.record(Sent::React {
            room: room.to_string(),
            event_id: event_id.to_string(),
            key: key.into(),
        });
        Ok(EventId::new(format!("$react-{event_id}")))
    }

    async fn redact(&self, room: &RoomId, event_id: &EventId) -> Result<(), ChatError> {
        self.record(Sent::Redact {
            room: room.to_string(),
            event_id: event_id.to_string(),
        });
        Ok(())
    }

    async fn send_poll(
        &self,
        room: &RoomId,
        txn: &str,
        msg: &OutMessage,
        answers: &[PollAnswer],
    ) -> Result<EventId, ChatError> {
        self.attempt()?;
        let mut s = self.state.lock().unwrap();
        if let Some(id) = s.txns.get(txn) {
            return Ok(id.clone());
        }
        let event_id = EventId::new(format!("$poll{}", s.log.len()));
        s.txns.insert(txn.to_owned(), event_id.clone());
        s.log.push((
            Instant::now(),
            Sent::Poll {
                room: room.to_string(),
                event_id: event_id.to_string(),
                msg: msg.clone(),
                answers: answers.to_vec(),
            },
        ));
        Ok(event_id)
    }

    async fn end_poll(
        &self,
        room: &RoomId,
        poll: &EventId,
        msg: &OutMessage,
    ) -> Result<(), ChatError> {
        self.attempt()?;
        self.record(Sent::EndPoll {
            room: room.to_string(),
            poll: poll.to_string(),
            msg: msg.clone(),
        });
        Ok(())
    }

    async fn typing(&self, room: &RoomId, on: bool) {
        let delay = self.state.lock().unwrap().typing_delay;
        tokio::time::sleep(delay).await;
        self.state
            .lock()
            .unwrap()
            .typing
            .push((room.to_string(), on));
    }

    async fn mark_read(&self, room: &RoomId, event_id: &EventId, thread: Option<&EventId>) {
        self.record(Sent::Read {
            room: room.to_string(),
            event_id: event_id.to_string(),
            thread: thread.map(EventId::to_string),
        });
    }

    async fn readers(&self, _room: &RoomId) -> Result<Option<Vec<UserId>>, ChatError> {
        let state = self.state.lock().unwrap();
        Ok(Some(state.members.iter().map(UserId::new).collect()))
    }

    async fn power_level(&self, _room: &RoomId, user: &UserId) -> Result<i64, ChatError> {
        let state = self.state.lock().unwrap();
        Ok(state.power.get(user.as_str()).copied().unwrap_or(0))
    }

    async fn history(
        &self,
        room: &RoomId,
        limit: usize,
    ) -> Result<Vec<IncomingMessage>, ChatError> {
        let state = self.state.lock().unwrap();
        let in_room: Vec<_> = (state.history.iter())
            .filter(|m| &m.room_id == room)
            .cloned()
            .collect();
        Ok(in_room[in_room.len().saturating_sub(limit)..].to_vec())
    }

    async fn message(
        &self,
        room: &RoomId,
        event_id: &EventId,
    ) -> Result<Option<IncomingMessage>, ChatError> {
        let state = self.state.lock().unwrap();
        Ok((state.history.iter())
            .find(|m| &m.room_id == room && &m.event_id == event_id)
            .cloned())
    }

    async fn members(&self, _room: &RoomId) -> Result<Vec<RoomMember>, ChatError> {
        let state = self.state.lock().unwrap();
        Ok((state.members.iter())
            .map(|m| RoomMember {
                user_id: UserId::new(m),
                display_name: None,
                joined: true,
            })
            .collect())
    }
}
