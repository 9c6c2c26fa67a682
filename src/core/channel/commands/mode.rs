//! `!mode [MODE]`: the session's modes, or a switch to one (`setting_change.rs`).

use super::{AgentCommand, Call, Running};
use crate::core::channel::Channel;
use crate::core::command::registry::{AfterCrash, Applies, DuringTurn, Group, Scope, Spec, Who};
use crate::core::session_settings::SettingRequest;

pub(crate) static COMMAND: AgentCommand = AgentCommand {
    spec: Spec {
        name: "mode",
        aliases: &[],
        args: "[MODE]",
        scope: Scope::Agent,
        who: Who::SeeAllowedChangeAdmins,
        during_turn: DuringTurn::AtOnce,
        after_crash: AfterCrash::Reported,
        applies: Applies::Always,
        group: Group::Session,
        help: "the session's modes, or switch to one",
        details: "Lists the session's modes, each marked as asking before acting or not, or \
                      switches to MODE; modes that act without asking are for admins.",
    },
    run,
    answers: None,
};

fn run<'a>(channel: &'a mut Channel, call: Call<'a>) -> Running<'a> {
    Box::pin(async move {
        let request = SettingRequest::Mode(call.command.arg(0).map(str::to_owned));
        (channel.change_setting(request, call.by, call.running)).await
    })
}
