//! `!queue [queue|steer|interrupt]`: what a message written while an agent works does
//! in the room.

use super::{Call, RoomCommand, Running};
use crate::core::command::registry::{AfterCrash, Applies, DuringTurn, Group, Scope, Spec, Who};
use crate::core::gateway::Gateway;
use std::sync::Arc;

use super::saved;
use crate::model::QueueMode;
use crate::model::ids::RoomId;
use crate::render::strings;

pub(crate) static COMMAND: RoomCommand = RoomCommand {
    spec: Spec {
        name: "queue",
        aliases: &[],
        args: "[queue|steer|interrupt]",
        scope: Scope::Room,
        who: Who::Allowed,
        during_turn: DuringTurn::AtOnce,
        after_crash: AfterCrash::Reported,
        applies: Applies::Always,
        group: Group::Room,
        help: "what a message written while the agent works does",
        details: "queue: it waits its turn (⏳); steer: it joins the running turn (↪️) where \
                      the agent offers that, else it waits; interrupt: it stops the running turn \
                      and is answered at once.",
    },
    run,
};

fn run<'a>(gateway: &'a Arc<Gateway>, call: Call<'a>) -> Running<'a> {
    Box::pin(async move {
        let (prefix, room) = (&gateway.prefix, &call.message.room_id);
        let text = match call.command.choice() {
            None => strings::queue_mode_is(prefix, gateway.room_queue_mode(room).await.as_str()),
            Some(word) => match QueueMode::parse(&word) {
                Some(mode) => saved(
                    gateway.store.set_room_queue_mode(room, mode.as_str()).await,
                    "the room's queue setting",
                    strings::queue_mode_set(mode),
                ),
                None => strings::queue_mode_usage(prefix, &word),
            },
        };
        gateway.answer(call.message, text).await
    })
}

impl Gateway {
    /// What a message written during a turn does in the room (the setting and its default
    /// are the same for every agent: any one answers).
    async fn room_queue_mode(&self, room_id: &RoomId) -> QueueMode {
        match self.agents.values().next() {
            Some(ctx) => ctx.queue_mode_in(room_id).await,
            None => QueueMode::default(),
        }
    }
}
