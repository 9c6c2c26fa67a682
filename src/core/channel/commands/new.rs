//! `!new`: the next message opens a fresh session, without the earlier transcript.

use super::{AgentCommand, Call, Running};
use crate::core::channel::Channel;
use crate::core::command::registry::{AfterCrash, Applies, DuringTurn, Group, Scope, Spec, Who};
use crate::render::strings;

pub(crate) static COMMAND: AgentCommand = AgentCommand {
    spec: Spec {
        name: "new",
        aliases: &["reset"],
        args: "",
        scope: Scope::Agent,
        who: Who::Allowed,
        during_turn: DuringTurn::Refused,
        after_crash: AfterCrash::Reported,
        applies: Applies::Always,
        group: Group::Conversation,
        help: "start a fresh conversation (the agent forgets what was said before)",
        details: "The next message opens a new session without the earlier transcript; the \
                      conversation's mode is forgotten too.",
    },
    run,
    answers: None,
};

fn run<'a>(channel: &'a mut Channel, call: Call<'a>) -> Running<'a> {
    Box::pin(async move {
        match call.running {
            // A session cannot change under a turn.
            true => channel.notice(strings::FRESH_START_WHILE_RUNNING).await,
            false => channel.start_fresh().await,
        }
    })
}
