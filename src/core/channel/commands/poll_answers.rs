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
        help: "refuse it, once",
        details: "Answers a permission poll with its reject-once option. Approvers only.",
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
        help: "refuse it from now on",
        details: "Answers a permission poll with its reject-always option. Approvers only.",
    },
    run: no_open_poll,
    answers: Some(Reply::Reject),
};

/// Outside a turn no poll is open.
fn no_open_poll<'a>(channel: &'a mut Channel, _call: Call<'a>) -> Running<'a> {
    Box::pin(async move { channel.notice(strings::NO_OPEN_POLL).await })
}
