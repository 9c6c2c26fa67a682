//! The checks every event passes before an agent acts on it, and the events that are no
//! prompt: messages the agent cannot read, reactions.

use super::Gateway;
use crate::core::channel::ChannelInput;
use crate::core::inbound::{
    IncomingChange, IncomingMessage, IncomingPollResponse, IncomingReaction, Unreadable,
};
use crate::core::poll;
use crate::core::routing;
use crate::core::voice::{RoomVoice, txn};
use crate::model::OutMessage;
use crate::model::ids::UserId;
use crate::render::strings;
use crate::store::{PendingKind, now_ms, until_answered};

/// How long after a message is taken its read receipt goes out. A receipt that reaches
/// the homeserver just before an answer that comes at once costs the person's client an
/// extra sync (it wakes for the receipt, then syncs again for the answer); half a second
/// later, such an answer is already there.
const RECEIPT_AFTER: std::time::Duration = std::time::Duration::from_millis(500);

impl Gateway {
    /// The checks every message passes before an agent acts on it: not from an agent, from
    /// a user `trusted` to send it, newer than the agent's arrival, and not handled before.
    /// This last check records it as handled and, when `pending` names what it carries, in
    /// the same transaction as waiting to be settled: from then on it survives a crash.
    /// Whether anything `sender` writes can matter: they may prompt or approve, and are no
    /// agent of ours. The chat side asks before it spends a request on their message (such
    /// as fetching the message it replies to).
    pub fn listens_to(&self, sender: &UserId) -> bool {
        self.people.listens_to(sender)
    }

    pub(super) async fn admit(
        &self,
        message: &IncomingMessage,
        trusted: impl Fn(&UserId) -> bool,
        pending: Option<PendingKind>,
    ) -> bool {
        let IncomingMessage {
            agent_id,
            room_id,
            event_id,
            sender,
            ..
        } = message;
        if self.people.is_agent(sender) {
            return false;
        }
        if !trusted(sender) {
            tracing::info!(agent = %agent_id, room = %room_id, %sender, "ignoring a message from a user who is not allowed");
            return false;
        }
        let conversation = message.conversation();
        // The database unreachable for a while (restarting): the message waits for it,
        // since the chat side does not offer it again.
        let arrived = now_ms();
        let since = until_answered("admitting a message", || {
            self.store.member_since(&conversation, arrived)
        });
        let since = match since.await {
            Ok(since) => since,
            Err(e) => {
                tracing::error!(error = %e, "store unavailable; message not handled");
                return false;
            }
        };
        if (message.timestamp_ms as i64) < since {
            tracing::debug!(%event_id, "message from before the agent arrived; not a prompt");
            return false;
        }
        let pending = pending.map(|kind| message.pending_input(kind));
        let admitted = until_answered("admitting a message", || {
            self.store.admit(event_id, &conversation, pending.as_ref())
        });
        match admitted.await {
            Ok(true) => {
                tracing::debug!(agent = %agent_id, room = %room_id, event = %event_id, "admitted");
                // Taken: the person sees it read, beside (not before) everything else, and
                // a moment later (see [`RECEIPT_AFTER`]). A message that opens its own
                // thread is read where it is: in the main timeline.
                // Of several taken within that moment, only the newest gets one: it covers
                // the others.
                if let Some(ctx) = self.agents.get(agent_id) {
                    let (chat, room, event) = (ctx.chat.clone(), room_id.clone(), event_id.clone());
                    let thread = (message.thread.clone()).filter(|root| root != event_id);
                    let key = (agent_id.clone(), room.clone(), thread.clone());
                    self.receipts.taken(key.clone(), event.clone());
                    let receipts = self.receipts.clone();
                    self.channels.spawn(async move {
                        tokio::time::sleep(RECEIPT_AFTER).await;
                        if receipts.due(&key, &event) {
                            chat.mark_read(&room, &event, thread.as_ref()).await
                        }
                    });
                }
                true
            }
            Ok(false) => {
                tracing::debug!(%event_id, "already handled");
                false
            }
            Err(e) => {
                tracing::error!(error = %e, "store unavailable; message not handled");
                false
            }
        }
    }

    /// A message the agent cannot read (undecryptable, or media): the person is told, so
    /// nothing is silently lost. Media is answered by the agents it is for, like a prompt;
    /// a message an agent could not decrypt is reported by that agent, whoever it was for.
    pub(super) async fn handle_unreadable(&self, message: IncomingMessage, why: Unreadable) {
        // Media and messages that could not be parsed are for the agents they address, like
        // a prompt; one an agent could not decrypt, it reports whoever it was for.
        if let Unreadable::Unsupported(_) | Unreadable::Malformed(_) = why {
            let (members, routing, addressing) = self.address(&message).await;
            let targets = routing::targets(&addressing, &members, routing.default_agent.as_ref());
            if !targets.contains(&message.agent_id) {
                return;
            }
        }
        if !self
            .admit(&message, |sender| self.people.may_prompt(sender), None)
            .await
        {
            return;
        }
        tracing::warn!(agent = %message.agent_id, room = %message.room_id, event = %message.event_id, sender = %message.sender, reason = %why, "a message the agent cannot read");
        let Some(ctx) = self.agents.get(&message.agent_id) else {
            return;
        };
        let text = match &why {
            Unreadable::Undecryptable => strings::undecryptable(message.sender.as_str()),
            Unreadable::Unsupported(kind) => strings::unsupported_message(kind),
            Unreadable::Malformed(what) => strings::unreadable_message(what),
            Unreadable::Unproven(why) => strings::unproven_sender(message.sender.as_str(), why),
        };
        let notice = OutMessage::notice(text)
            .replying_to(message.event_id.clone())
            .in_thread(message.thread.clone());
        RoomVoice::new(&*ctx.chat, &message.agent_id, &message.room_id)
            .say(&txn("unreadable", &[message.event_id.as_str()]), &notice)
            .await;
    }

    /// An edit or a redaction goes to the agent's channels of the room (any thread), which
    /// know whether it concerns a message of theirs: queued, or being answered. Only from
    /// people the gateway listens to.
    pub(super) fn handle_change(&self, change: IncomingChange) {
        if !self.people.listens_to(&change.sender) {
            return;
        }
        let conversation = change.conversation();
        self.channels
            .send_to_room_if_running(&conversation, || ChannelInput::Changed(change.clone()));
    }

    /// A reaction goes to its channel, which knows whether it targets a reply or a poll.
    /// The agents' own reactions (the choices pre-put on polls) never count, and a 🛑 only
    /// from someone who may stop turns; who may answer a poll is checked by the channel.
    pub(super) fn handle_reaction(&self, reaction: IncomingReaction) {
        if self.people.is_agent(&reaction.sender) {
            return;
        }
        if poll::is_stop_key(&reaction.key) && !self.people.may_stop(&reaction.sender) {
            tracing::info!(agent = %reaction.agent_id, room = %reaction.room_id, sender = %reaction.sender, "ignoring a stop reaction from a user who is not allowed");
            return;
        }
        // A reaction only matters to a channel that runs (it has a turn or a poll), in the
        // room's main timeline or in any of its threads.
        let conversation = reaction.conversation();
        let input = || ChannelInput::Reaction {
            by: reaction.sender.clone(),
            target: reaction.target_event_id.clone(),
            key: reaction.key.clone(),
        };
        self.channels.send_to_room_if_running(&conversation, input);
    }

    /// An answer to a native poll goes to its channel, like a reaction: never an agent's
    /// or a stranger's, Stop only from someone who may stop turns. A response naming no answer, or several
    /// (the polls ask for one), changes nothing: the first answer decided.
    pub(super) fn handle_poll_response(&self, response: IncomingPollResponse) {
        // Someone who may neither prompt nor approve costs nothing but a log line: their
        // answers are never said in the room, however many they send.
        if !self.people.listens_to(&response.sender) {
            tracing::info!(agent = %response.agent_id, room = %response.room_id, sender = %response.sender, "ignoring a poll response from a user who may neither prompt nor approve");
            return;
        }
        let [answer] = response.answers.as_slice() else {
            tracing::info!(agent = %response.agent_id, room = %response.room_id, sender = %response.sender, poll = %response.poll, answers = response.answers.len(), "ignoring a poll response that does not name one answer");
            return;
        };
        if answer == poll::STOP_ANSWER && !self.people.may_stop(&response.sender) {
            tracing::info!(agent = %response.agent_id, room = %response.room_id, sender = %response.sender, "ignoring a poll's Stop from a user who is not allowed to stop turns");
            return;
        }
        let input = || ChannelInput::PollAnswer {
            by: response.sender.clone(),
            target: response.poll.clone(),
            answer: answer.clone(),
        };
        self.channels
            .send_to_room_if_running(&response.conversation(), input);
    }
}
