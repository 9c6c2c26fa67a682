//! `!fork [NAME]`: "try another approach from here". A new thread, rooted at a message that
//! says what it is, whose conversation starts, for every agent of the room, as a copy of the
//! conversation `!fork` was written in; the original goes on untouched. The copy is the
//! transcript, and the session it had: the thread's first message forks that session
//! (`session/fork`) where the agent offers it and the original has not gone on since, else
//! opens a new session that gets the transcript back the way a session lost to a restart
//! does (`docs/conversations.md`, "Forks").

use std::sync::Arc;

use super::{Call, RoomCommand, Running};
use crate::core::command::Command;
use crate::core::command::registry::{AfterCrash, Applies, DuringTurn, Group, Scope, Spec, Who};
use crate::core::gateway::Gateway;
use crate::core::inbound::IncomingMessage;
use crate::core::routing::Member;
use crate::core::voice::{RoomVoice, txn};
use crate::model::OutMessage;
use crate::model::ThreadMode;
use crate::model::ids::ConversationKey;
use crate::render::strings;
use crate::store::{LogFailure, RoomRouting};

pub(crate) static COMMAND: RoomCommand = RoomCommand {
    spec: Spec {
        name: "fork",
        aliases: &[],
        args: "[NAME]",
        scope: Scope::Room,
        who: Who::Allowed,
        during_turn: DuringTurn::AtOnce,
        after_crash: AfterCrash::Reported,
        applies: Applies::Always,
        group: Group::Conversation,
        help: "try another approach from here, in a thread that starts as a copy of this \
                   conversation",
        details: "A new thread, named NAME if given, whose conversation with each agent of the \
                      room starts as a copy of this one; the original goes on untouched.",
    },
    run,
};

fn run<'a>(gateway: &'a Arc<Gateway>, call: Call<'a>) -> Running<'a> {
    Box::pin(async move {
        let (command, message) = (call.command, call.message);
        match gateway
            .fork(command, message, call.members, call.routing)
            .await
        {
            Some(text) => gateway.answer(message, text).await,
            None => gateway.settle(&message.agent_id, &message.event_id).await,
        }
    })
}

impl Gateway {
    /// Forks the conversation `message` was written in into a new thread, for each agent of
    /// the room (`members`). Returns what to answer where `!fork` was written: `None` when
    /// the fork's own messages say it all.
    async fn fork(
        &self,
        command: &Command,
        message: &IncomingMessage,
        members: &[Member],
        routing: &RoomRouting,
    ) -> Option<String> {
        if self.thread_mode(routing) == ThreadMode::One {
            return Some(strings::fork_needs_threads(&self.prefix));
        }
        let ctx = self.agents.get(&message.agent_id)?;
        let name = command.words().join(" ");
        let voice = RoomVoice::new(&*ctx.chat, &message.agent_id, &message.room_id);
        let by = (message.sender_name.as_deref()).unwrap_or(message.sender.as_str());
        let root =
            OutMessage::notice(strings::fork_root(&name, by)).replying_to(message.event_id.clone());
        let key = [message.agent_id.as_str(), message.event_id.as_str()];
        let Some(root) = voice.say(&txn("fork", &key), &root).await else {
            return Some(strings::FORK_FAILED.to_owned());
        };
        let mut copied = 0;
        for member in members {
            let conversation =
                ConversationKey::new(message.room_id.clone(), member.agent_id.clone());
            let from = conversation.clone().in_thread(message.thread.clone());
            let to = conversation.in_thread(Some(root.clone()));
            copied += (self.store.copy_conversation(&from, &to).await)
                .or_log("could not copy a conversation into its fork")
                .unwrap_or(0);
            // Where the agent forks sessions, the fork's first message may fork this one.
            let session = (self.store.session(&from).await)
                .or_log("could not read the session of the conversation forked")
                .flatten();
            if let Some(session) = session {
                (self.store.note_fork_source(&from, &to, &session).await)
                    .or_log("could not note the session a fork may copy");
            }
        }
        tracing::info!(room = %message.room_id, root = %root, by = %message.sender, copied, "a conversation was forked into a thread");
        let started = OutMessage::notice(strings::fork_started(copied)).in_thread(Some(root));
        voice.say(&txn("fork-started", &key), &started).await;
        None
    }
}
