//! `!threads [separate|new|one]`: how the room's threads map onto conversations.

use super::{Call, RoomCommand, Running};
use crate::core::command::registry::{AfterCrash, Applies, DuringTurn, Group, Scope, Spec, Who};
use crate::core::gateway::Gateway;
use std::sync::Arc;

use super::saved;
use crate::model::ThreadMode;
use crate::render::strings;

pub(crate) static COMMAND: RoomCommand = RoomCommand {
    spec: Spec {
        name: "threads",
        aliases: &[],
        args: "[separate|new|one]",
        scope: Scope::Room,
        who: Who::Allowed,
        during_turn: DuringTurn::AtOnce,
        after_crash: AfterCrash::Reported,
        applies: Applies::Always,
        group: Group::Room,
        help: "whether a thread is a conversation of its own",
        details: "separate: each thread is a conversation of its own; new: each message of \
                      the main timeline opens one; one: threads are part of the room's \
                      conversation.",
    },
    run,
};

fn run<'a>(gateway: &'a Arc<Gateway>, call: Call<'a>) -> Running<'a> {
    Box::pin(async move {
        let (prefix, room) = (&gateway.prefix, &call.message.room_id);
        let text = match call.command.choice() {
            None => strings::threads_are(prefix, gateway.thread_mode(call.routing).as_str()),
            Some(word) => match ThreadMode::parse(&word) {
                Some(mode) => saved(
                    gateway.store.set_room_threads(room, mode.as_str()).await,
                    "the room's thread setting",
                    strings::threads_set(mode.as_str()),
                ),
                None => strings::threads_usage(prefix, &word),
            },
        };
        gateway.answer(call.message, text).await
    })
}
