//! `!logs`: what the agent last wrote to stderr, where everyone in the room may read it.

use super::{AgentCommand, Call, Running};
use crate::core::channel::Channel;
use crate::core::command::registry::{AfterCrash, Applies, DuringTurn, Group, Scope, Spec, Who};

pub(crate) static COMMAND: AgentCommand = AgentCommand {
    spec: Spec {
        name: "logs",
        aliases: &["stderr"],
        args: "",
        scope: Scope::Agent,
        who: Who::Allowed,
        during_turn: DuringTurn::AtOnce,
        after_crash: AfterCrash::Rerun,
        applies: Applies::Always,
        group: Group::Session,
        help: "what the agent last wrote to stderr",
        details: "The last lines the agent wrote to stderr, in rooms whose members are all \
                      allowed users; elsewhere, where to find them.",
    },
    run,
    answers: None,
};

fn run<'a>(channel: &'a mut Channel, call: Call<'a>) -> Running<'a> {
    Box::pin(async move {
        let _ = call;
        channel.show_stderr(true).await
    })
}
