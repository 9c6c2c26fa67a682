//! The gateway's running channels: one task per (room, agent), started at its first input,
//! with the input queue the gateway feeds it through. Owns their tasks, so shutdown can
//! wait for running turns to be marked.

use std::collections::HashMap;
use std::future::Future;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::mpsc::error::TrySendError;
use tokio::sync::{mpsc, oneshot};
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use crate::core::channel::{Channel, ChannelInput, ChannelReport};
use crate::core::context::AgentContext;
use crate::core::queues;
use crate::model::ids::{ConversationKey, EventId, RoomId, UserId};

/// How long `!status` and `!help` wait for a channel to say how it stands.
const REPORT_TIMEOUT: Duration = Duration::from_secs(3);

/// The running channels and the tasks the gateway started.
#[derive(Default)]
pub(super) struct Channels {
    /// The input queue of each running channel, by the conversation it holds.
    inputs: Mutex<HashMap<ConversationKey, mpsc::Sender<ChannelInput>>>,
    /// The channel tasks and the gateway's other tasks, so shutdown can wait for them.
    tasks: TaskTracker,
    /// Cancelled at shutdown; every channel watches it.
    shutdown: CancellationToken,
}

impl Channels {
    /// Hands `input` to the channel of conversation `key` (whose agent `ctx` is), starting
    /// it if it does not run (or if its task died, which only a panic does). `Err`: the
    /// channel's queue is full ([`queues::CHANNEL_INPUTS`]); the input is given back for the
    /// caller to refuse.
    pub(super) fn send(
        &self,
        ctx: &Arc<AgentContext>,
        key: &ConversationKey,
        input: ChannelInput,
    ) -> Result<(), Box<ChannelInput>> {
        let spawn = || {
            let (tx, rx) = mpsc::channel(queues::CHANNEL_INPUTS);
            self.tasks
                .spawn(Channel::new(ctx.clone(), key.clone(), rx, self.shutdown.clone()).run());
            tx
        };
        let mut inputs = self.inputs.lock().expect("channel map poisoned");
        let tx = inputs.entry(key.clone()).or_insert_with(spawn);
        match tx.try_send(input) {
            Ok(()) => Ok(()),
            Err(TrySendError::Full(input)) => Err(Box::new(input)),
            Err(TrySendError::Closed(input)) => {
                tracing::error!(conversation = %key, "channel task died; starting a new one");
                *tx = spawn();
                tx.try_send(input).map_err(|e| Box::new(e.into_inner()))
            }
        }
    }

    /// Hands an input made by `input` to every running channel of `key`'s agent in its room,
    /// whatever thread each holds (a reaction matters only to a channel with a turn or a
    /// poll, and only the one whose message it targets acts on it).
    pub(super) fn send_to_room_if_running(
        &self,
        key: &ConversationKey,
        input: impl Fn() -> ChannelInput,
    ) {
        let inputs = self.inputs.lock().expect("channel map poisoned");
        for (running, tx) in inputs.iter() {
            if running.room == key.room
                && running.agent == key.agent
                && let Err(TrySendError::Full(_)) = tx.try_send(input())
            {
                tracing::warn!(conversation = %running, "the channel's queue is full; a reaction or edit was dropped");
            }
        }
    }

    /// The conversations in threads of `room` whose channels run, in a stable order.
    pub(super) fn thread_conversations(&self, room: &RoomId) -> Vec<ConversationKey> {
        let inputs = self.inputs.lock().expect("channel map poisoned");
        let mut keys: Vec<ConversationKey> = inputs
            .keys()
            .filter(|k| k.room == *room && k.thread.is_some())
            .cloned()
            .collect();
        keys.sort();
        keys
    }

    /// Every conversation of `room` whose channel runs (the main timeline's, then the
    /// threads'), in a stable order.
    pub(super) fn room_conversations(&self, room: &RoomId) -> Vec<ConversationKey> {
        let inputs = self.inputs.lock().expect("channel map poisoned");
        let mut keys: Vec<ConversationKey> = (inputs.keys())
            .filter(|k| k.room == *room)
            .cloned()
            .collect();
        keys.sort();
        keys
    }

    /// Has the channel of `key` take the prompt of `target` out of its queue, for `by`;
    /// whether it was waiting there.
    pub(super) async fn withdraw(
        &self,
        key: &ConversationKey,
        target: EventId,
        by: UserId,
    ) -> bool {
        let (reply, answer) = oneshot::channel();
        let sent = (self.inputs.lock().expect("channel map poisoned").get(key)).is_some_and(|tx| {
            tx.try_send(ChannelInput::Withdraw { target, by, reply })
                .is_ok()
        });
        sent && tokio::time::timeout(REPORT_TIMEOUT, answer)
            .await
            .is_ok_and(|r| r.unwrap_or(false))
    }

    /// Asks the channel of `key`, if it runs, how it stands.
    pub(super) async fn report(&self, key: &ConversationKey) -> Option<ChannelReport> {
        let (reply, answer) = oneshot::channel();
        self.inputs
            .lock()
            .expect("channel map poisoned")
            .get(key)?
            .try_send(ChannelInput::Report(reply))
            .ok()?;
        tokio::time::timeout(REPORT_TIMEOUT, answer)
            .await
            .ok()?
            .ok()
    }

    /// Forgets the channel of `key`: the agent left the room. Its task ends once its queue
    /// is drained.
    pub(super) fn forget(&self, key: &ConversationKey) {
        self.inputs
            .lock()
            .expect("channel map poisoned")
            .remove(key);
    }

    /// Runs `task` as one of the gateway's, waited for at shutdown.
    pub(super) fn spawn(&self, task: impl Future<Output = ()> + Send + 'static) {
        self.tasks.spawn(task);
    }

    /// Resolves when the gateway shuts down.
    pub(super) async fn shutting_down(&self) {
        self.shutdown.cancelled().await
    }

    /// Stops every channel (their running turns are cancelled and marked) and waits for
    /// the tasks, at most `grace`.
    pub(super) async fn shutdown(&self, grace: Duration) {
        self.shutdown.cancel();
        self.tasks.close();
        if tokio::time::timeout(grace, self.tasks.wait())
            .await
            .is_err()
        {
            tracing::warn!("some channels did not finish in time");
        }
    }
}
