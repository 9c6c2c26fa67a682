//! What `!stop task` says about the agent's background tasks.

/// `!stop task` where no background task of the conversation runs that can be stopped.
pub fn no_task_to_stop(agent: &str) -> String {
    format!("{agent} has no background task running here that can be stopped.")
}

/// `!stop task N` where the conversation has no such task running.
pub fn no_such_task(agent: &str, number: usize) -> String {
    format!("{agent} has no background task {number} running here that can be stopped.")
}

/// The agent did not stop task `name` (it had just ended, or refused).
pub fn task_not_stopped(agent: &str, name: &str) -> String {
    format!("{agent} did not stop “{name}”: it may have ended already.")
}

/// Asking the agent to stop task `name` failed (`why`).
pub fn task_stop_failed(agent: &str, name: &str, why: &str) -> String {
    format!("⚠️ Could not ask {agent} to stop “{name}”: {why}")
}
