//! `!model [MODEL]`: the agent's model choice, or a pick (`setting_change.rs`).

use super::{AgentCommand, Call, Running};
use crate::core::channel::Channel;
use crate::core::command::registry::{AfterCrash, Applies, DuringTurn, Group, Scope, Spec, Who};
use crate::core::session_settings::SettingRequest;

pub(crate) static COMMAND: AgentCommand = AgentCommand {
    spec: Spec {
        name: "model",
        aliases: &[],
        args: "[MODEL]",
        scope: Scope::Agent,
        who: Who::SeeAllowedChangeAdmins,
        during_turn: DuringTurn::AtOnce,
        after_crash: AfterCrash::Reported,
        applies: Applies::Always,
        group: Group::Session,
        help: "the model choices, or pick one",
        details: "Shows the agent's model choice (its config option of category model), or \
                      picks MODEL.",
    },
    run,
    answers: None,
};

fn run<'a>(channel: &'a mut Channel, call: Call<'a>) -> Running<'a> {
    Box::pin(async move {
        let request = SettingRequest::Model(call.command.arg(0).map(str::to_owned));
        (channel.change_setting(request, call.by, call.running)).await
    })
}
