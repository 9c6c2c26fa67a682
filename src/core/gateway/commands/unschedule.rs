//! `!unschedule ID`: removes one of the room's schedules.

use std::sync::Arc;

use super::{Call, RoomCommand, Running};
use crate::core::command::Command;
use crate::core::command::registry::{AfterCrash, Applies, DuringTurn, Group, Scope, Spec, Who};
use crate::core::gateway::Gateway;
use crate::core::inbound::IncomingMessage;
use crate::render::strings;

pub(crate) static COMMAND: RoomCommand = RoomCommand {
    spec: Spec {
        name: "unschedule",
        aliases: &[],
        args: "ID",
        scope: Scope::Room,
        who: Who::Allowed,
        during_turn: DuringTurn::AtOnce,
        after_crash: AfterCrash::Reported,
        applies: Applies::Always,
        group: Group::Schedules,
        help: "remove schedule ID (`schedules` lists them)",
        details: "The schedule runs no more; a run already going goes on.",
    },
    run,
};

fn run<'a>(gateway: &'a Arc<Gateway>, call: Call<'a>) -> Running<'a> {
    Box::pin(async move {
        let text = gateway.unschedule(call.command, call.message).await;
        gateway.answer(call.message, text).await
    })
}

impl Gateway {
    /// `!unschedule ID`.
    async fn unschedule(&self, command: &Command, message: &IncomingMessage) -> String {
        let word = command.arg(0).unwrap_or("").trim_start_matches('#');
        let Ok(id) = word.parse::<i64>() else {
            return strings::no_such_schedule(&self.prefix, word);
        };
        match self.store.remove_schedule(&message.room_id, id).await {
            Ok(true) => {
                tracing::info!(schedule = id, by = %message.sender, "schedule removed");
                strings::unscheduled(id)
            }
            Ok(false) => strings::no_such_schedule(&self.prefix, word),
            Err(e) => {
                tracing::error!(error = %e, "could not remove a schedule");
                strings::store_failed("the schedule")
            }
        }
    }
}
