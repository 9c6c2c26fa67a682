//! `!at WHEN PROMPT`: a prompt that runs once, by itself, at a time (set as `!every` sets
//! its runs: `every.rs`).

use std::sync::Arc;

use super::{Call, RoomCommand, Running};
use crate::core::command::registry::{AfterCrash, Applies, DuringTurn, Group, Scope, Spec, Who};
use crate::core::gateway::Gateway;

pub(crate) static COMMAND: RoomCommand = RoomCommand {
    spec: Spec {
        name: "at",
        aliases: &[],
        args: "[here] WHEN PROMPT",
        scope: Scope::Room,
        who: Who::Allowed,
        during_turn: DuringTurn::AtOnce,
        after_crash: AfterCrash::Reported,
        applies: Applies::Always,
        group: Group::Schedules,
        help: "ask an agent PROMPT once, later: WHEN is 17:30, tomorrow 08:00, \
                   2026-12-24 08:00 or in 10m",
        details: "Like `every`, once: the run is a prompt of yours, in a thread of its own \
                      (`here`: in the room's conversation).",
    },
    run,
};

fn run<'a>(gateway: &'a Arc<Gateway>, call: Call<'a>) -> Running<'a> {
    Box::pin(async move {
        let text = (gateway.set_schedule(true, call.message, call.members, call.routing)).await;
        gateway.answer(call.message, text).await
    })
}
