//! The demo agent's background tasks (`%background SECONDS NAME`), reported as Claude's
//! adapter reports them (JetBrains AIR's `asyncTasks`): only to a client that offered them
//! in `initialize`, as `session/update` kinds of their own (`async_task_spawned`, one
//! `async_task_progress` a second, `async_task_state_update`), and stopped with
//! `_session/async_task/stop`. A task outlives the turn that started it.

use std::collections::HashMap;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

use agent_client_protocol::v1::ConnectionTo;
use agent_client_protocol::v1::schema::InitializeRequest;
use agent_client_protocol::{Client, UntypedMessage};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use super::turn::Turn;

/// The agent's background tasks, in every session.
#[derive(Default)]
pub(super) struct Background {
    /// Whether the client offered to be told of them (`asyncTasks` in `initialize`).
    offered: AtomicBool,
    /// Numbers them.
    next: AtomicU64,
    /// The running ones, by ID: what stops each.
    running: Mutex<HashMap<String, CancellationToken>>,
}

impl Background {
    /// Notes whether the client of `req` takes background tasks
    /// (`_meta.jetbrains.air.capabilities` names `asyncTasks`).
    pub(super) fn note_client(&self, req: &InitializeRequest) {
        let capabilities = (req.client_capabilities.meta.as_ref())
            .and_then(|meta| meta.get("jetbrains"))
            .and_then(|v| v.pointer("/air/capabilities"))
            .and_then(Value::as_array);
        let offered = capabilities.is_some_and(|c| c.iter().any(|c| c == "asyncTasks"));
        self.offered.store(offered, Ordering::SeqCst);
    }

    /// `_session/async_task/stop`: `{stopped: true}` when the task ran and is now stopped.
    pub(super) fn stop(&self, params: &Value) -> Value {
        let id = params.get("asyncTaskId").and_then(Value::as_str);
        let token = id.and_then(|id| self.running.lock().unwrap().remove(id));
        if let Some(token) = &token {
            token.cancel();
        }
        json!({"stopped": token.is_some()})
    }
}

impl Turn {
    /// `%background SECONDS NAME`: starts a task that reports each second and completes
    /// after SECONDS unless stopped; says its ID, or that the client does not take them.
    pub(super) fn background(&self, arg: &str) -> Result<(), agent_client_protocol::Error> {
        let (seconds, name) = arg.split_once(' ').unwrap_or((arg, "background work"));
        let seconds: u64 = seconds.parse().unwrap_or(1);
        let tasks = &self.state.background;
        if !tasks.offered.load(Ordering::SeqCst) {
            return self.say("The client takes no background tasks; none started.\n");
        }
        let id = format!("task-{}", tasks.next.fetch_add(1, Ordering::Relaxed) + 1);
        let token = CancellationToken::new();
        (tasks.running.lock().unwrap()).insert(id.clone(), token.clone());
        let report = Reporter {
            cx: self.cx.clone(),
            session: self.session.clone(),
            id: id.clone(),
        };
        report.send(json!({"sessionUpdate": "async_task_spawned", "name": name,
            "taskType": "bash", "description": format!("Runs for {seconds} s"),
            "showInTranscript": true, "canStop": true}))?;
        self.say(&format!("Started background task {id}: {name}\n"))?;
        let (state, name) = (self.state.clone(), name.to_owned());
        tokio::spawn(async move {
            for second in 1..=seconds {
                tokio::select! {
                    _ = token.cancelled() => return report.ended("stopped", "Stopped"),
                    _ = tokio::time::sleep(Duration::from_secs(1)) => {}
                }
                let done = format!("{second} of {seconds} s");
                let _ = report
                    .send(json!({"sessionUpdate": "async_task_progress", "description": done}));
            }
            // Stopped at the last moment: the stop took it out of the running ones.
            match state.background.running.lock().unwrap().remove(&report.id) {
                Some(_) => report.ended("completed", &format!("{name} finished after {seconds} s")),
                None => report.ended("stopped", "Stopped"),
            }
        });
        Ok(())
    }
}

/// Sends one task's updates to the client.
struct Reporter {
    /// The connection to the client.
    cx: ConnectionTo<Client>,
    /// The session that owns the task.
    session: String,
    /// The task's ID.
    id: String,
}

impl Reporter {
    /// Sends `update` about the task (its `asyncTaskId` added).
    fn send(&self, mut update: Value) -> Result<(), agent_client_protocol::Error> {
        update["asyncTaskId"] = json!(self.id);
        let params = json!({"sessionId": self.session, "update": update});
        (self.cx).send_notification(UntypedMessage::new("session/update", params)?)
    }

    /// Reports that the task ended in `state` (`completed`, `stopped`) with `summary`.
    fn ended(&self, state: &str, summary: &str) {
        let update =
            json!({"sessionUpdate": "async_task_state_update", "state": state, "summary": summary});
        let _ = self.send(update);
    }
}
