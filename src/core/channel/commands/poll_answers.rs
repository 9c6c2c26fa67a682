//! `!allow`, `!always`, `!deny` and `!reject`: typed answers to the agent's permission
//! poll. During a turn the turn takes them (`turn_input.rs`, by their `answers`); outside
//! one there is no poll to answer.

use super::{AgentCommand, Call, Running};
use crate::core::channel::Channel;
use crate::core::command::registry::{AfterCrash, Applies, DuringTurn, Group, Scope, Spec, Who};
use crate::core::poll::Reply;
use crate::render::strings;

pub(crate) static ALLOW: AgentCommand = AgentCommand {
    spec: Spec {
        name: "allow",
        aliases: &["approve", "yes"],
        args: "",
        scope: Scope::Agent,
        who: Who::Approvers,
        during_turn: DuringTurn::AnswersThePoll,
        after_crash: AfterCrash::Reported,
        applies: Applies::Always,
        group: Group::Approvals,
        help: "allow what a permission request asks, once (reply to it)",
        details: "Answers a permission poll with its allow-once option, best as a reply to \
                      the poll. Approvers only.",
    },
    run: no_open_poll,
    answers: Some(Reply::Allow),
};

pub(crate) static ALWAYS: AgentCommand = AgentCommand {
    spec: Spec {
        name: "always",
        aliases: &[],
        args: "",
        scope: Scope::Agent,
        who: Who::Approvers,
        during_turn: DuringTurn::AnswersThePoll,
        after_crash: AfterCrash::Reported,
        applies: Applies::Always,
        group: Group::Approvals,
        help: "allow it from now on",
        details: "Answers a permission poll with its allow-always option. Approvers only.",
    },
    run: no_open_poll,
    answers: Some(Reply::Always),
};

pub(crate) static DENY: AgentCommand = AgentCommand {
    spec: Spec {
        name: "deny",
        aliases: &["never", "no"],
        args: "",
        scope: Scope::Agent,
        who: Who::Approvers,
        during_turn: DuringTurn::AnswersThePoll,
        after_crash: AfterCrash::Reported,
        applies: Applies::Always,
        group: Group::Approvals,
        help: "refuse it from now on (❌), or once where that is all the agent offers",
        details: "Answers a permission poll with its main refusal (❌): reject-always (\"never \
                      in this session\") where the agent offers it, else reject-once. \
                      Approvers only.",
    },
    run: no_open_poll,
    answers: Some(Reply::Deny),
};

pub(crate) static REJECT: AgentCommand = AgentCommand {
    spec: Spec {
        name: "reject",
        aliases: &[],
        args: "",
        scope: Scope::Agent,
        who: Who::Approvers,
        during_turn: DuringTurn::AnswersThePoll,
        after_crash: AfterCrash::Reported,
        applies: Applies::Always,
        group: Group::Approvals,
        help: "refuse this call only, once (✋)",
        details: "Answers a permission poll with its reject-once option (✋); where the agent \
                      offers no other refusal, that is the main one (❌). Approvers only.",
    },
    run: no_open_poll,
    answers: Some(Reply::Reject),
};

/// Outside a turn no poll is open.
fn no_open_poll<'a>(channel: &'a mut Channel, _call: Call<'a>) -> Running<'a> {
    Box::pin(async move { channel.notice(strings::NO_OPEN_POLL).await })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::poll::{choices, pick};
    use crate::model::agent::{PermissionKind, PermissionOption};
    use crate::model::poll::Decision;

    /// Each typed answer's help says what it picks when the agent offers all four kinds:
    /// "once" for a one-call option, "from now on" for a lasting one (`!help` once said
    /// the opposite of `!deny` and `!reject`).
    #[test]
    fn each_typed_answers_help_says_what_it_picks() {
        let option = |id: &str, kind| PermissionOption {
            id: id.into(),
            name: id.into(),
            kind,
        };
        let all = choices(
            &[
                option("allow", PermissionKind::AllowOnce),
                option("always", PermissionKind::AllowAlways),
                option("reject", PermissionKind::RejectOnce),
                option("never", PermissionKind::RejectAlways),
            ],
            "Stop",
        );
        for command in [&ALLOW, &ALWAYS, &DENY, &REJECT] {
            let reply = command.answers.as_ref().unwrap();
            let Decision::Select(picked) = &pick(&all, reply).unwrap().decision else {
                panic!("{} stops the turn", command.spec.name);
            };
            let (verb, span) = match picked.kind {
                PermissionKind::AllowOnce => ("allow", "once"),
                PermissionKind::AllowAlways => ("allow", "from now on"),
                PermissionKind::RejectOnce => ("refuse", "once"),
                PermissionKind::RejectAlways => ("refuse", "from now on"),
            };
            let help = command.spec.help;
            // Whichever of the two spans the help names first is what it says it picks.
            let said = (["once", "from now on"].into_iter())
                .filter_map(|s| help.find(s).map(|at| (at, s)))
                .min()
                .map(|(_, s)| s);
            assert!(
                help.starts_with(verb) && said == Some(span),
                "!{}: {help:?} picks {:?}",
                command.spec.name,
                picked.kind
            );
        }
    }
}
