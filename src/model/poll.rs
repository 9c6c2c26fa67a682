//! One line of a permission poll, as the core builds it and `crate::render` words it.

use super::agent::PermissionOption;

/// What choosing one line of a poll does.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    /// Answers the request with this option of the agent's.
    Select(PermissionOption),
    /// Stops the whole turn (`session/cancel`); the request is answered `cancelled`.
    Stop,
}

/// One line of a poll: an emoji, a label and what it does.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Choice {
    /// Its number in the poll, from 1: a reply with this number picks it.
    pub number: usize,
    /// The reaction key that picks it.
    pub emoji: String,
    /// What the poll says next to the emoji: the option's own name.
    pub label: String,
    /// What picking it does.
    pub decision: Decision,
}

/// One answer of a native poll (MSC3381): what a client shows as a button, and the ID its
/// `poll.response` names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PollAnswer {
    /// The answer's ID, opaque to clients: a response names it.
    pub id: String,
    /// What the button says.
    pub text: String,
}
