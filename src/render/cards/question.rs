//! A question from the agent as the room sees it: what it asks, how to answer (a pick, or a
//! typed reply), and, once settled, how it was answered.

use std::time::Duration;

use super::{Both, PollOutcome, poll_outcome};
use crate::model::OutMessage;
use crate::model::poll::Choice;
use crate::model::question::Question;
use crate::render::strings;

/// How an open question is drawn.
pub struct QuestionView<'a> {
    /// The agent's display name.
    pub agent: &'a str,
    /// What it asks.
    pub question: &'a Question,
    /// The poll's choices, in order.
    pub choices: &'a [Choice],
    /// For a typed question: what to type.
    pub typed: Option<&'a str>,
    /// How long before it is declined for want of an answer.
    pub timeout: Duration,
}

fn head(out: &mut Both, agent: &str, question: &Question, open: bool) {
    let verb = if open { "asks" } else { "asked" };
    out.line(&format!("❓ {agent} {verb}: {}", question.text), true);
    if let Some(url) = &question.url {
        out.line(&format!("🔗 {url}"), false);
    }
}

/// An open question.
pub fn question(view: &QuestionView<'_>) -> OutMessage {
    let mut out = Both::revealing();
    head(&mut out, view.agent, view.question, true);
    if let Some(hint) = view.typed {
        out.line(&format!("Reply to this message with {hint}."), false);
    } else if view.question.url.is_some() {
        out.line("Open the link, then react ✅ when you are done.", false);
    } else {
        out.line("React to answer; the first approver decides:", false);
    }
    for c in view.choices {
        out.line(&format!("{}. {} {}", c.number, c.emoji, c.label), false);
    }
    out.line(
        &format!(
            "No reactions in your client? Reply with a choice's number. Unanswered, it is \
             declined after {}.",
            strings::duration(view.timeout)
        ),
        false,
    );
    out.into_message(false)
}

/// A settled question: what was asked and how it was answered.
pub fn question_settled(agent: &str, question: &Question, outcome: &PollOutcome) -> OutMessage {
    let mut out = Both::revealing();
    head(&mut out, agent, question, false);
    let line = match outcome {
        PollOutcome::Chosen {
            by, refusal: true, ..
        } => format!("❌ Declined by {by}."),
        PollOutcome::Chosen {
            by, emoji, label, ..
        } => format!("{emoji} Answered by {by}: {label}"),
        PollOutcome::Answered { by, text } => format!("✍️ Answered by {by}: {text}"),
        PollOutcome::Expired { .. } => "⌛ Nobody answered in time, so it was declined.".into(),
        other => poll_outcome(other),
    };
    out.line(&line, true);
    out.into_message(false)
}
