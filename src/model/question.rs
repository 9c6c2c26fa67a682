//! A question an agent asks the people in a room (ACP `elicitation/create`), as data: what
//! it asks, the fields of the answer it wants, and how the answer goes back. The core asks it
//! with a poll (`core::question`, `core::approvals`); `crate::acp` translates the protocol.

use tokio::sync::oneshot;

/// What one field of the answer may hold.
#[derive(Debug, Clone, PartialEq)]
pub enum FieldKind {
    /// Any text.
    Text,
    /// A whole number, within bounds when given.
    Integer {
        /// The least allowed.
        min: Option<i64>,
        /// The most allowed.
        max: Option<i64>,
    },
    /// A number.
    Number,
    /// Yes or no.
    Boolean,
    /// One of these (value, label).
    Choice(Vec<(String, String)>),
    /// Any of these (value, label), several at once.
    Choices(Vec<(String, String)>),
}

/// One field of the answer the agent wants.
#[derive(Debug, Clone, PartialEq)]
pub struct Field {
    /// Its key in the answer.
    pub name: String,
    /// What it is called for people, when the agent says.
    pub title: Option<String>,
    /// What it may hold.
    pub kind: FieldKind,
    /// Whether the answer must have it.
    pub required: bool,
}

/// A value of one field of an answer.
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    /// Text, or the value of a choice.
    Text(String),
    /// A whole number.
    Integer(i64),
    /// A number.
    Number(f64),
    /// Yes or no.
    Boolean(bool),
    /// Values of several choices.
    List(Vec<String>),
}

/// What the agent asks.
#[derive(Debug, Clone, PartialEq)]
pub struct Question {
    /// Its words.
    pub text: String,
    /// The fields of the answer (a form); empty for a link to open.
    pub fields: Vec<Field>,
    /// A link the agent asks someone to open (and say when done), instead of fields.
    pub url: Option<String>,
}

/// How a question was answered.
#[derive(Debug, Clone, PartialEq)]
pub enum QuestionAnswer {
    /// Answered: each field's value (none for a link opened).
    Accepted(Vec<(String, Value)>),
    /// Someone declined to answer (or nobody answered in time).
    Declined,
    /// The turn was stopped or ended while it was open.
    Cancelled,
}

/// A question from the agent, with the channel to answer it on.
#[derive(Debug)]
pub struct QuestionRequest {
    /// What it asks.
    pub question: Question,
    /// Where the answer goes; dropping it answers `cancelled`.
    pub reply: oneshot::Sender<QuestionAnswer>,
}
