//! `!reactions [on|off]`: whether agents mark people's messages with status reactions.

use super::{Call, RoomCommand, Running};
use crate::core::command::registry::{AfterCrash, Applies, DuringTurn, Group, Scope, Spec, Who};
use crate::core::gateway::Gateway;
use std::sync::Arc;

use super::saved;
use crate::model::ids::RoomId;
use crate::render::strings;

pub(crate) static COMMAND: RoomCommand = RoomCommand {
    spec: Spec {
        name: "reactions",
        aliases: &[],
        args: "[on|off]",
        scope: Scope::Room,
        who: Who::Allowed,
        during_turn: DuringTurn::AtOnce,
        after_crash: AfterCrash::Reported,
        applies: Applies::Always,
        group: Group::Room,
        help: "whether agents mark your messages as they take and answer them",
        details: "on: 👀 when a message is taken, then ✅ answered, ❌ failed or 🛑 stopped, \
                      each replacing the last; off: only ⏳ while a message waits.",
    },
    run,
};

fn run<'a>(gateway: &'a Arc<Gateway>, call: Call<'a>) -> Running<'a> {
    Box::pin(async move {
        let (prefix, room) = (&gateway.prefix, &call.message.room_id);
        let text = match call.command.choice().as_deref() {
            None => {
                strings::status_reactions_are(prefix, gateway.room_status_reactions(room).await)
            }
            Some(word @ ("on" | "off")) => {
                let on = word == "on";
                saved(
                    gateway.store.set_room_status_reactions(room, on).await,
                    "the room's reactions setting",
                    strings::status_reactions_set(on),
                )
            }
            Some(_) => strings::status_reactions_usage(prefix),
        };
        gateway.answer(call.message, text).await
    })
}

impl Gateway {
    /// Whether agents mark people's messages in the room (the same for every agent).
    async fn room_status_reactions(&self, room_id: &RoomId) -> bool {
        match self.agents.values().next() {
            Some(ctx) => ctx.status_reactions_in(room_id).await,
            None => false,
        }
    }
}
