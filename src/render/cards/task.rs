//! A background task of the agent as the room sees it: one message per task, edited as it
//! goes, saying how to stop it while it runs.

use crate::model::OutMessage;
use crate::model::agent::TaskState;

/// How a background task's card is drawn.
pub struct TaskView<'a> {
    /// Its number in the conversation, from 1 (`!stop task N`).
    pub number: usize,
    /// Its name.
    pub name: &'a str,
    /// Where it stands.
    pub state: TaskState,
    /// What it does or how far it got.
    pub description: Option<&'a str>,
    /// How it ended, in the agent's words.
    pub summary: Option<&'a str>,
    /// Whether it can be stopped.
    pub can_stop: bool,
    /// The chat command prefix.
    pub prefix: &'a str,
}

/// A background task's card.
pub fn task(view: &TaskView<'_>) -> OutMessage {
    let (icon, word) = match view.state {
        TaskState::Running => ("⚙️", "running"),
        TaskState::Completed => ("✅", "completed"),
        TaskState::Failed => ("❌", "failed"),
        TaskState::Stopped => ("🛑", "stopped"),
    };
    let mut text = format!(
        "{icon} Background task {}: {} · {word}",
        view.number, view.name
    );
    for line in [view.description, view.summary].into_iter().flatten() {
        text.push('\n');
        text.push_str(line);
    }
    if view.state == TaskState::Running && view.can_stop {
        text.push_str(&format!(
            "\nReact 🛑 to this message or write {}stop task {} to stop it.",
            view.prefix, view.number
        ));
    }
    OutMessage::notice(text)
}
