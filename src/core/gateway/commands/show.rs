//! `!show [all|tools|answer]`: what the room shows of the agents' work.

use super::{Call, RoomCommand, Running};
use crate::core::command::registry::{AfterCrash, Applies, DuringTurn, Group, Scope, Spec, Who};
use crate::core::gateway::Gateway;
use std::sync::Arc;

use super::saved;
use crate::model::Verbosity;
use crate::model::ids::RoomId;
use crate::render::strings;

pub(crate) static COMMAND: RoomCommand = RoomCommand {
    spec: Spec {
        name: "show",
        aliases: &[],
        args: "[all|tools|answer]",
        scope: Scope::Room,
        who: Who::Allowed,
        during_turn: DuringTurn::AtOnce,
        after_crash: AfterCrash::Reported,
        applies: Applies::Always,
        group: Group::Room,
        help: "how much of the agents' work this room sees",
        details: "all: tool cards, plan, thinking and usage; tools: tool cards and plan; \
                      answer: answers only. Polls and errors are always shown.",
    },
    run,
};

fn run<'a>(gateway: &'a Arc<Gateway>, call: Call<'a>) -> Running<'a> {
    Box::pin(async move {
        let (prefix, room) = (&gateway.prefix, &call.message.room_id);
        let text = match call.command.choice() {
            None => {
                let current = gateway.room_verbosity(room).await;
                strings::verbosity_is(prefix, current.as_str())
            }
            Some(word) => match Verbosity::parse(&word) {
                Some(v) => saved(
                    gateway.store.set_room_verbosity(room, v.as_str()).await,
                    "the room's verbosity",
                    strings::verbosity_set(v.as_str()),
                ),
                None => strings::unknown_verbosity(prefix, &word),
            },
        };
        gateway.answer(call.message, text).await
    })
}

impl Gateway {
    /// What the room shows, as chosen with `!show` or configured.
    pub(in crate::core::gateway) async fn room_verbosity(&self, room_id: &RoomId) -> Verbosity {
        let configured = self
            .agents
            .values()
            .next()
            .map(|ctx| ctx.verbosity.get())
            .unwrap_or_default();
        match self.store.room_verbosity(room_id).await {
            Ok(word) => word
                .as_deref()
                .and_then(Verbosity::parse)
                .unwrap_or(configured),
            Err(e) => {
                tracing::error!(error = %e, "could not read the room's settings");
                configured
            }
        }
    }
}
