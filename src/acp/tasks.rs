//! Background tasks as Claude's adapter reports them (JetBrains AIR's `asyncTasks`
//! extension): offered in `initialize`, reported as `session/update` kinds the SDK does not
//! know (`async_task_spawned`, `async_task_progress`, `async_task_state_update`), and
//! stopped with `_session/async_task/stop`. Read from the adapter's `dist/async-tasks.js`.

use serde_json::Value;

use crate::model::agent::{TaskReport, TaskState};

/// The method that stops one background task.
pub(super) const STOP_METHOD: &str = "_session/async_task/stop";

/// What `initialize` adds to the client's capabilities' `_meta`, so the agent reports its
/// background tasks.
pub(super) fn capability_meta() -> serde_json::Map<String, Value> {
    let air = serde_json::json!({"air": {"version": 1, "capabilities": ["asyncTasks"]}});
    let mut meta = serde_json::Map::new();
    meta.insert("jetbrains".into(), air);
    meta
}

/// The task report `update` (a `session/update`'s `update`) carries, if it is one.
pub(super) fn report(update: &Value) -> Option<TaskReport> {
    let kind = update.get("sessionUpdate")?.as_str()?;
    let text = |key: &str| {
        (update.get(key).and_then(Value::as_str))
            .map(str::trim)
            .filter(|t| !t.is_empty())
            .map(str::to_owned)
    };
    let id = text("asyncTaskId")?;
    let base = TaskReport {
        id,
        description: text("description"),
        ..TaskReport::default()
    };
    Some(match kind {
        "async_task_spawned" => TaskReport {
            name: text("name"),
            state: Some(TaskState::Running),
            can_stop: Some(update.get("canStop").and_then(Value::as_bool) == Some(true)),
            ..base
        },
        "async_task_progress" => base,
        "async_task_state_update" => TaskReport {
            state: Some(TaskState::from_name(&text("state")?)?),
            summary: text("summary"),
            ..base
        },
        _ => return None,
    })
}

/// The session and task report of a `session/update` notification's `params`, if it
/// carries one.
pub(super) fn notification(params: &Value) -> Option<(&str, TaskReport)> {
    let session = params.get("sessionId")?.as_str()?;
    Some((session, report(params.get("update")?)?))
}

/// The params of `_session/async_task/stop` for `task` of `session`.
pub(super) fn stop_params(session: &str, task: &str) -> Value {
    serde_json::json!({"sessionId": session, "asyncTaskId": task})
}

/// Whether the answer to `_session/async_task/stop` says the task was stopped.
pub(super) fn stopped(answer: &Value) -> bool {
    answer.get("stopped").and_then(Value::as_bool) == Some(true)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_three_task_updates_are_read_and_others_are_not() {
        let spawned = json!({"sessionUpdate": "async_task_spawned", "asyncTaskId": "t1",
            "name": "npm test", "taskType": "bash", "description": "Runs the tests",
            "showInTranscript": true, "canStop": true, "toolCallId": "call-1"});
        assert_eq!(
            report(&spawned),
            Some(TaskReport {
                id: "t1".into(),
                name: Some("npm test".into()),
                description: Some("Runs the tests".into()),
                state: Some(TaskState::Running),
                summary: None,
                can_stop: Some(true),
            })
        );
        let progress = json!({"sessionUpdate": "async_task_progress", "asyncTaskId": "t1",
            "description": "12 of 40 suites"});
        assert_eq!(
            report(&progress),
            Some(TaskReport {
                id: "t1".into(),
                description: Some("12 of 40 suites".into()),
                ..TaskReport::default()
            })
        );
        let ended = json!({"sessionUpdate": "async_task_state_update", "asyncTaskId": "t1",
            "state": "failed", "summary": "3 failures"});
        let ended = report(&ended).unwrap();
        assert_eq!(ended.state, Some(TaskState::Failed));
        assert_eq!(ended.summary.as_deref(), Some("3 failures"));
        // A monitor cannot be stopped; a state of no known name, a task without an ID and
        // other updates are not reports.
        let monitor = json!({"sessionUpdate": "async_task_spawned", "asyncTaskId": "m",
            "name": "watch", "canStop": false});
        assert_eq!(report(&monitor).unwrap().can_stop, Some(false));
        for other in [
            json!({"sessionUpdate": "async_task_state_update", "asyncTaskId": "t", "state": "odd"}),
            json!({"sessionUpdate": "async_task_progress"}),
            json!({"sessionUpdate": "agent_message_chunk", "asyncTaskId": "t"}),
        ] {
            assert_eq!(report(&other), None, "{other}");
        }
    }

    #[test]
    fn the_capability_and_the_stop_request_are_what_the_adapter_reads() {
        let meta = Value::Object(capability_meta());
        assert_eq!(meta["jetbrains"]["air"]["version"], 1);
        assert_eq!(
            meta["jetbrains"]["air"]["capabilities"],
            json!(["asyncTasks"])
        );
        assert_eq!(
            stop_params("s", "t"),
            json!({"sessionId": "s", "asyncTaskId": "t"})
        );
        assert!(stopped(&json!({"stopped": true})));
        assert!(!stopped(&json!({"stopped": false})));
        assert!(!stopped(&json!({})));
    }
}
