//! `!handoff [on|off]`: whether an agent's answer that addresses another agent of the room
//! is handed to it.

use super::{Call, RoomCommand, Running};
use crate::core::command::registry::{AfterCrash, Applies, DuringTurn, Group, Scope, Spec, Who};
use crate::core::gateway::Gateway;
use std::sync::Arc;

use super::saved;
use crate::render::strings;

pub(crate) static COMMAND: RoomCommand = RoomCommand {
    spec: Spec {
        name: "handoff",
        aliases: &[],
        args: "[on|off]",
        scope: Scope::Room,
        who: Who::Allowed,
        during_turn: DuringTurn::AtOnce,
        after_crash: AfterCrash::Reported,
        applies: Applies::SeveralAgents,
        group: Group::Room,
        help: "whether an agent may hand work to another one here",
        details: "Whether an agent's answer addressing another agent of the room is handed \
                      to it.",
    },
    run,
};

fn run<'a>(gateway: &'a Arc<Gateway>, call: Call<'a>) -> Running<'a> {
    Box::pin(async move {
        let (prefix, room) = (&gateway.prefix, &call.message.room_id);
        let text = match call.command.choice().as_deref() {
            None => strings::handoff_is(
                prefix,
                gateway.handoff_on(call.routing),
                gateway.rules.handoff_max_hops,
            ),
            Some(word @ ("on" | "off")) => {
                let on = word == "on";
                saved(
                    gateway.store.set_handoff(room, on).await,
                    "the hand-off setting",
                    strings::handoff_set(on),
                )
            }
            Some(_) => strings::handoff_usage(prefix),
        };
        gateway.answer(call.message, text).await
    })
}
