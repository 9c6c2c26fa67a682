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
    // Claude's adapter names a background command by its description: said once.
    let description = view.description.filter(|d| *d != view.name);
    for line in [description, view.summary].into_iter().flatten() {
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

#[cfg(test)]
mod tests {
    use super::*;

    fn view<'a>(name: &'a str, description: Option<&'a str>, state: TaskState) -> TaskView<'a> {
        TaskView {
            number: 2,
            name,
            state,
            description,
            summary: None,
            can_stop: true,
            prefix: "!",
        }
    }

    #[test]
    fn a_running_task_says_what_it_does_once_and_how_to_stop_it() {
        let card = task(&view("Build", Some("cargo build"), TaskState::Running)).body;
        assert_eq!(
            card,
            "⚙️ Background task 2: Build · running\ncargo build\n\
             React 🛑 to this message or write !stop task 2 to stop it."
        );
        let same = task(&view("Run it", Some("Run it"), TaskState::Stopped)).body;
        assert_eq!(same, "🛑 Background task 2: Run it · stopped");
    }
}
