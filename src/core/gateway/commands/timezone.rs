//! `!timezone [ZONE]`: the time zone of the times the room's schedules are written in.

use std::sync::Arc;

use super::{Call, RoomCommand, Running};
use crate::core::command::Command;
use crate::core::command::registry::{AfterCrash, Applies, DuringTurn, Group, Scope, Spec, Who};
use crate::core::gateway::Gateway;
use crate::core::inbound::IncomingMessage;
use crate::model::schedule;
use crate::render::strings;

pub(crate) static COMMAND: RoomCommand = RoomCommand {
    spec: Spec {
        name: "timezone",
        aliases: &[],
        args: "[ZONE]",
        scope: Scope::Room,
        who: Who::Allowed,
        during_turn: DuringTurn::AtOnce,
        after_crash: AfterCrash::Reported,
        applies: Applies::Always,
        group: Group::Schedules,
        help: "the time zone of the times written here (Europe/Paris, UTC…), or see it",
        details: "The zone `every` and `at` read times in from now on, here; a schedule keeps \
                      the zone it was set in. Without a zone, the current one (the room's, or \
                      the configured one).",
    },
    run,
};

fn run<'a>(gateway: &'a Arc<Gateway>, call: Call<'a>) -> Running<'a> {
    Box::pin(async move {
        let text = gateway.time_zone_command(call.command, call.message).await;
        gateway.answer(call.message, text).await
    })
}

impl Gateway {
    /// The time zone of the room's schedules: the one `!timezone` chose, else the config's.
    pub(super) async fn room_zone(&self, room: &crate::model::ids::RoomId) -> String {
        match self.store.room_time_zone(room).await {
            Ok(Some(zone)) => zone,
            Ok(None) => self.schedules.time_zone.clone(),
            Err(e) => {
                tracing::error!(error = %e, "could not read the room's time zone");
                self.schedules.time_zone.clone()
            }
        }
    }

    /// `!timezone [ZONE]`.
    async fn time_zone_command(&self, command: &Command, message: &IncomingMessage) -> String {
        let Some(word) = command.arg(0) else {
            let zone = self.room_zone(&message.room_id).await;
            return strings::time_zone_is(&self.prefix, &zone);
        };
        // The zone database's own spelling (`europe/paris` is `Europe/Paris`).
        let zone = match schedule::zone(word) {
            Ok(zone) => zone.iana_name().unwrap_or(word).to_owned(),
            Err(e) => return format!("⚠️ {e}."),
        };
        match self.store.set_room_time_zone(&message.room_id, &zone).await {
            Ok(()) => strings::time_zone_set(&zone),
            Err(e) => {
                tracing::error!(error = %e, "could not save the room's time zone");
                strings::SETTING_NOT_SAVED.to_owned()
            }
        }
    }
}
