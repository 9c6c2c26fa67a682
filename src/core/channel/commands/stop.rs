//! `!stop`: stops the agent's running turn (handled by the turn: `turn_input.rs`), or,
//! as `!stop task [N]`, its background tasks here.

use super::{AgentCommand, Call, Running};
use crate::core::channel::Channel;
use crate::core::command::registry::{AfterCrash, Applies, DuringTurn, Group, Scope, Spec, Who};
use crate::render::strings;

pub(crate) static COMMAND: AgentCommand = AgentCommand {
    spec: Spec {
        name: "stop",
        aliases: &["cancel"],
        args: "",
        scope: Scope::Agent,
        who: Who::Approvers,
        during_turn: DuringTurn::StopsTheTurn,
        after_crash: AfterCrash::Reported,
        applies: Applies::Always,
        group: Group::Conversation,
        help: "stop the running turn (or react 🛑 to the answer); `task [N]`: its background tasks",
        details: "Stops the agent's running turn (session/cancel) and the commands it runs. \
                      `!stop task` stops the agent's background tasks here instead (`!stop task N` \
                      one of them; or react 🛑 to a task's card), and leaves the turn alone. \
                      Approvers who may not prompt may use it too.",
    },
    run,
    answers: None,
};

fn run<'a>(channel: &'a mut Channel, call: Call<'a>) -> Running<'a> {
    Box::pin(async move {
        match call.command.stopped_tasks() {
            Some(number) => channel.stop_tasks(number, call.by).await,
            None => channel.notice(strings::NOTHING_TO_STOP).await,
        }
    })
}
