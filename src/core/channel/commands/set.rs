//! `!set [OPTION [VALUE]]`: the session's config options, or a change to one
//! (`setting_change.rs`).

use super::{AgentCommand, Call, Running};
use crate::core::channel::Channel;
use crate::core::command::registry::{AfterCrash, Applies, DuringTurn, Group, Scope, Spec, Who};
use crate::core::session_settings::SettingRequest;

pub(crate) static COMMAND: AgentCommand = AgentCommand {
    spec: Spec {
        name: "set",
        aliases: &["options"],
        args: "[OPTION [VALUE]]",
        scope: Scope::Agent,
        who: Who::SeeAllowedChangeAdmins,
        during_turn: DuringTurn::AtOnce,
        after_crash: AfterCrash::Reported,
        applies: Applies::Always,
        group: Group::Session,
        help: "the session's options, or set one",
        details: "Every config option with its value, one option's values, or sets OPTION to \
                      VALUE (toggles take on/off).",
    },
    run,
    answers: None,
};

fn run<'a>(channel: &'a mut Channel, call: Call<'a>) -> Running<'a> {
    Box::pin(async move {
        let word = |n: usize| call.command.arg(n).map(str::to_owned);
        let request = SettingRequest::Option(word(0), word(1));
        (channel.change_setting(request, call.by, call.running)).await
    })
}
