//! `!default [NAME|off]`: the agent that answers messages addressed to nobody.

use super::{Call, RoomCommand, Running};
use crate::core::command::registry::{AfterCrash, Applies, DuringTurn, Group, Scope, Spec, Who};
use crate::core::gateway::Gateway;
use std::collections::HashMap;
use std::sync::Arc;

use super::{default_name, saved};
use crate::core::routing::Member;
use crate::model::ids::RoomId;
use crate::render::strings;

pub(crate) static COMMAND: RoomCommand = RoomCommand {
    spec: Spec {
        name: "default",
        aliases: &[],
        args: "[NAME|off]",
        scope: Scope::Room,
        who: Who::Allowed,
        during_turn: DuringTurn::AtOnce,
        after_crash: AfterCrash::Reported,
        applies: Applies::SeveralAgents,
        group: Group::Room,
        help: "where messages addressed to nobody go",
        details: "Shows, sets or clears (off) the agent that messages addressed to nobody go \
                      to.",
    },
    run,
};

fn run<'a>(gateway: &'a Arc<Gateway>, call: Call<'a>) -> Running<'a> {
    Box::pin(async move {
        let (room, members) = (&call.message.room_id, call.members);
        let text = match call.command.arg(0) {
            None => strings::default_is(&gateway.prefix, default_name(members, call.routing)),
            Some(word) => gateway.choose_default_agent(room, word, members).await,
        };
        gateway.answer(call.message, text).await
    })
}

impl Gateway {
    /// `!default WORD`: the room's default agent becomes the agent named `word` (`off`:
    /// none); the answer says so, or names the agents there are.
    async fn choose_default_agent(&self, room: &RoomId, word: &str, members: &[Member]) -> String {
        let off = matches!(word.to_lowercase().as_str(), "off" | "none" | "nobody");
        let chosen = members.iter().find(|m| m.is_named(word)).filter(|_| !off);
        if chosen.is_none() && !off {
            return strings::no_such_agent(word, &self.agent_lines(members, &HashMap::new()));
        }
        let id = chosen.map(|m| &m.agent_id);
        saved(
            self.store.set_default_agent(room, id).await,
            "the default agent",
            strings::default_set(chosen.map(|m| m.display_name.as_str())),
        )
    }
}
