//! Who the gateway listens to, and for what: its agents' own Matrix users (never heard),
//! the people allowed to prompt, those who may answer polls, and admins. Every check of
//! a sender goes through here, so one rule has one home.

use std::collections::HashSet;

use crate::core::access::AccessList;
use crate::model::ids::UserId;

/// The gateway's view of who may do what.
pub(super) struct People {
    /// The Matrix users of all agents: their messages are never prompts, their reactions
    /// (the choices pre-put on polls) never answers.
    agents: HashSet<UserId>,
    /// Who may invite, prompt and stop.
    allowed: AccessList,
    /// Who may answer permission polls (and so also stop a turn from one).
    approvers: AccessList,
    /// Who may change an agent's mode, model and options.
    admins: AccessList,
}

impl People {
    /// The rules for a gateway whose agents' users are `agents`.
    pub(super) fn new(
        agents: HashSet<UserId>,
        allowed: AccessList,
        approvers: AccessList,
        admins: AccessList,
    ) -> Self {
        Self {
            agents,
            allowed,
            approvers,
            admins,
        }
    }

    /// Whether `user` is one of the gateway's agents.
    pub(super) fn is_agent(&self, user: &UserId) -> bool {
        self.agents.contains(user)
    }

    /// Whether `user` may invite an agent, prompt it and stop its turns.
    pub(super) fn may_prompt(&self, user: &UserId) -> bool {
        self.allowed.allows(user)
    }

    /// Whether `user` may answer permission polls.
    pub(super) fn may_approve(&self, user: &UserId) -> bool {
        self.approvers.allows(user)
    }

    /// Whether `user` may change an agent's mode, model and options.
    pub(super) fn is_admin(&self, user: &UserId) -> bool {
        self.admins.allows(user)
    }

    /// Whether `user` may stop a turn: whoever may prompt, and approvers (a poll's Stop).
    pub(super) fn may_stop(&self, user: &UserId) -> bool {
        self.may_prompt(user) || self.may_approve(user)
    }

    /// Whether anything `user` writes can matter: they may prompt or approve, and are no
    /// agent of ours.
    pub(super) fn listens_to(&self, user: &UserId) -> bool {
        !self.is_agent(user) && self.may_stop(user)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn who_is_heard_for_what() {
        let people = People::new(
            [UserId::from("@claude:x")].into(),
            AccessList::new(&["@alice:x", "@*:x"]).denying(&["@mallory:x"]),
            AccessList::new(&["@alice:x", "@boss:y", "@claude:x"]),
            AccessList::new(&["@boss:y"]),
        );
        // who: agent, may prompt, may approve, admin, may stop, listened to
        let table = [
            ("@alice:x", false, true, true, false, true, true),
            ("@bob:x", false, true, false, false, true, true),
            ("@boss:y", false, false, true, true, true, true),
            ("@mallory:x", false, false, false, false, false, false),
            ("@eve:z", false, false, false, false, false, false),
            // An agent is never heard, whatever lists name it.
            ("@claude:x", true, true, true, false, true, false),
        ];
        for (user, agent, prompt, approve, admin, stop, heard) in table {
            let user = UserId::from(user);
            assert_eq!(people.is_agent(&user), agent, "{user}");
            assert_eq!(people.may_prompt(&user), prompt, "{user}");
            assert_eq!(people.may_approve(&user), approve, "{user}");
            assert_eq!(people.is_admin(&user), admin, "{user}");
            assert_eq!(people.may_stop(&user), stop, "{user}");
            assert_eq!(people.listens_to(&user), heard, "{user}");
        }
    }
}
