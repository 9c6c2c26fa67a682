//! `!agents`: every agent of the gateway, its process and whether it is in this room.

use super::{Call, RoomCommand, Running};
use crate::core::command::registry::{AfterCrash, Applies, DuringTurn, Group, Scope, Spec, Who};
use crate::core::gateway::Gateway;
use std::sync::Arc;

use crate::core::routing::Member;
use crate::model::agent::ProcessState;
use crate::render::strings::{self, ProcessLine};

pub(crate) static COMMAND: RoomCommand = RoomCommand {
    spec: Spec {
        name: "agents",
        aliases: &[],
        args: "",
        scope: Scope::Room,
        who: Who::Allowed,
        during_turn: DuringTurn::AtOnce,
        after_crash: AfterCrash::Rerun,
        applies: Applies::Always,
        group: Group::Room,
        help: "every agent of this Sidekicks, running or not",
        details: "Every agent of this Sidekicks: working, idle, stopped or crashed, its \
                      sessions and uptime, and whether it is in this room.",
    },
    run,
};

fn run<'a>(gateway: &'a Arc<Gateway>, call: Call<'a>) -> Running<'a> {
    Box::pin(async move {
        let text = gateway.agent_list(call.members);
        gateway.answer(call.message, text).await
    })
}

impl Gateway {
    /// `!agents`: every agent of the gateway, its process and whether it is in this room.
    fn agent_list(&self, members: &[Member]) -> String {
        let states = self.pool.states();
        let mut lines = vec![strings::agents_heading(
            states.len(),
            self.pool.settings().max_running,
        )];
        for state in states {
            let Some(ctx) = self.agents.get(&state.agent_id) else {
                continue;
            };
            let (process, sessions, uptime) = match state.process {
                ProcessState::Running { uptime, sessions } => {
                    let line = match state.turns {
                        0 => ProcessLine::Idle,
                        n => ProcessLine::Working(n),
                    };
                    (line, sessions, Some(uptime))
                }
                ProcessState::Stopped => (ProcessLine::Stopped, 0, None),
                ProcessState::Crashed { status } => (ProcessLine::Crashed(status), 0, None),
            };
            let here = members.iter().any(|m| m.agent_id == state.agent_id);
            lines.push(strings::agent_line(
                &ctx.display_name,
                ctx.agent_id.as_str(),
                &process,
                sessions,
                uptime,
                here,
            ));
        }
        lines.join("\n")
    }
}
