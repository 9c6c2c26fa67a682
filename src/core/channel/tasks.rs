//! The agent's background tasks in this conversation (Claude's adapter's async tasks): one
//! card each, posted when a task is announced and edited as it reports, in a turn or
//! between turns (a task outlives the turn that started it); stopped with `!stop task [N]`
//! or 🛑 on its card. See `docs/turns.md`, "Background tasks".

use super::Channel;
use crate::core::poll;
use crate::core::voice::txn;
use crate::model::agent::{TaskReport, TaskState};
use crate::model::ids::{EventId, UserId};
use crate::render::cards::{self, TaskView};
use crate::render::strings;

/// One background task, as the room is shown it.
struct Task {
    /// The agent's ID for it.
    id: String,
    /// Its number in the conversation, from 1.
    number: usize,
    /// Its name.
    name: String,
    /// What it does or how far it got.
    description: Option<String>,
    /// Where it stands.
    state: TaskState,
    /// How it ended.
    summary: Option<String>,
    /// Whether it can be stopped.
    can_stop: bool,
    /// Its card, once posted.
    card: Option<EventId>,
}

/// The conversation's background tasks, oldest first (a conversation starts with none).
#[derive(Default)]
pub(super) struct BackgroundTasks {
    /// Every task reported, ended ones included (their cards stay).
    tasks: Vec<Task>,
}

impl BackgroundTasks {
    /// Takes in `report`; returns the index of the task it is about.
    fn apply(&mut self, report: TaskReport) -> usize {
        let i = match self.tasks.iter().position(|t| t.id == report.id) {
            Some(i) => i,
            None => {
                let number = self.tasks.len() + 1;
                self.tasks.push(Task {
                    name: report.id.clone(),
                    id: report.id.clone(),
                    number,
                    description: None,
                    state: TaskState::Running,
                    summary: None,
                    can_stop: false,
                    card: None,
                });
                self.tasks.len() - 1
            }
        };
        let task = &mut self.tasks[i];
        // An ended task stays ended: a late progress report does not bring it back.
        if let Some(state) = report.state.filter(|_| !task.state.is_over()) {
            task.state = state;
        }
        if let Some(name) = report.name {
            task.name = name;
        }
        task.description = report.description.or(task.description.take());
        task.summary = report.summary.or(task.summary.take());
        task.can_stop = report.can_stop.unwrap_or(task.can_stop);
        i
    }

    /// The running tasks that can be stopped: all, or the one numbered `number`.
    fn stoppable(&self, number: Option<usize>) -> Vec<(String, String)> {
        (self.tasks.iter())
            .filter(|t| t.can_stop && t.state == TaskState::Running)
            .filter(|t| number.is_none_or(|n| t.number == n))
            .map(|t| (t.id.clone(), t.name.clone()))
            .collect()
    }

    /// The number of the task whose card is `event`, if one is.
    fn by_card(&self, event: &EventId) -> Option<usize> {
        (self.tasks.iter())
            .find(|t| t.card.as_ref() == Some(event))
            .map(|t| t.number)
    }
}

impl Channel {
    /// The agent reported on a background task: its card is posted or edited.
    pub(super) async fn on_task(&mut self, report: TaskReport) {
        let i = self.tasks.apply(report);
        let task = &self.tasks.tasks[i];
        let content = cards::task(&TaskView {
            number: task.number,
            name: &task.name,
            state: task.state,
            description: task.description.as_deref(),
            summary: task.summary.as_deref(),
            can_stop: task.can_stop,
            prefix: &self.ctx.command_prefix,
        });
        let voice = self.voice();
        match &task.card {
            Some(card) => voice.edit(card, &content).await,
            None => {
                let key = [self.ctx.agent_id.as_str(), task.id.as_str()];
                let card = voice.say(&txn("task", &key), &content).await;
                self.tasks.tasks[i].card = card;
            }
        }
    }

    /// `!stop task [N]` from `by`: asks the agent to stop its running background tasks
    /// here, or task `number`; what did not work is said in the room.
    pub(super) async fn stop_tasks(&mut self, number: Option<usize>, by: &UserId) {
        let name = self.ctx.display_name.clone();
        let stoppable = self.tasks.stoppable(number);
        let session = self.slot.session().cloned();
        let (Some(session), false) = (session, stoppable.is_empty()) else {
            let text = match number {
                Some(n) => strings::no_such_task(&name, n),
                None => strings::no_task_to_stop(&name),
            };
            self.notice(text).await;
            return;
        };
        for (id, task) in stoppable {
            tracing::info!(agent = %self.ctx.agent_id, room = %self.key.room, by = %by, task = %id, "stopping a background task");
            match session.stop_task(&id).await {
                Ok(true) => {}
                Ok(false) => self.notice(strings::task_not_stopped(&name, &task)).await,
                Err(e) => {
                    let why = e.to_string();
                    self.notice(strings::task_stop_failed(&name, &task, &why))
                        .await
                }
            }
        }
    }

    /// A reaction `key` by `by` on `target`: 🛑 on a task's card stops that task. `true`
    /// when it was one.
    pub(super) async fn task_reaction(&mut self, by: &UserId, target: &EventId, key: &str) -> bool {
        let Some(number) = self.tasks.by_card(target) else {
            return false;
        };
        if poll::is_stop_key(key) {
            self.stop_tasks(Some(number), by).await;
        }
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn report(id: &str) -> TaskReport {
        TaskReport {
            id: id.into(),
            ..TaskReport::default()
        }
    }

    #[test]
    fn tasks_are_numbered_in_order_and_keep_what_each_report_does_not_change() {
        let mut tasks = BackgroundTasks::default();
        let spawned = TaskReport {
            name: Some("npm test".into()),
            description: Some("runs the tests".into()),
            state: Some(TaskState::Running),
            can_stop: Some(true),
            ..report("t1")
        };
        assert_eq!(tasks.apply(spawned), 0);
        let monitor = TaskReport {
            name: Some("watch".into()),
            state: Some(TaskState::Running),
            can_stop: Some(false),
            ..report("m")
        };
        assert_eq!(tasks.apply(monitor), 1);
        let progress = TaskReport {
            description: Some("12 of 40".into()),
            ..report("t1")
        };
        tasks.apply(progress);
        let t1 = &tasks.tasks[0];
        assert_eq!((t1.number, t1.name.as_str()), (1, "npm test"));
        assert_eq!(t1.description.as_deref(), Some("12 of 40"));
        assert!(t1.can_stop);
        // Only running tasks that can be stopped are stopped; by number, only that one.
        assert_eq!(
            tasks.stoppable(None),
            [("t1".to_string(), "npm test".to_string())]
        );
        assert!(tasks.stoppable(Some(2)).is_empty());
        let ended = TaskReport {
            state: Some(TaskState::Completed),
            summary: Some("all passed".into()),
            ..report("t1")
        };
        tasks.apply(ended);
        assert!(tasks.stoppable(None).is_empty());
        // A late report does not bring an ended task back.
        let late = TaskReport {
            state: Some(TaskState::Running),
            ..report("t1")
        };
        tasks.apply(late);
        assert_eq!(tasks.tasks[0].state, TaskState::Completed);
        assert_eq!(tasks.tasks[0].summary.as_deref(), Some("all passed"));
    }
}
