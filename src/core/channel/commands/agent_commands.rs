//! `!commands`: the agent's own slash commands.

use super::{AgentCommand, Call, Running};
use crate::core::channel::Channel;
use crate::core::command::registry::{AfterCrash, Applies, DuringTurn, Group, Scope, Spec, Who};
use crate::render::strings;

pub(crate) static COMMAND: AgentCommand = AgentCommand {
    spec: Spec {
        name: "commands",
        aliases: &[],
        args: "",
        scope: Scope::Agent,
        who: Who::Allowed,
        during_turn: DuringTurn::AtOnce,
        after_crash: AfterCrash::Rerun,
        applies: Applies::Always,
        group: Group::Session,
        help: "the agent's own slash commands",
        details: "Lists the slash commands the agent offers; write them as a message.",
    },
    run,
    answers: None,
};

fn run<'a>(channel: &'a mut Channel, call: Call<'a>) -> Running<'a> {
    Box::pin(async move {
        let Some(_lease) = channel.session_for_command().await else {
            return;
        };
        // During a turn the session's updates are the turn's: never drained here.
        if !call.running {
            channel.await_commands().await;
        }
        let several = channel.several_agents_here().await;
        let text = strings::agent_commands(&channel.agent_line(), several);
        channel.notice(text).await
    })
}
