//! Checking a parsed config: every problem named by the key that holds it. Each table checks
//! itself beside its definition; this file runs them in the file's order and checks what
//! spans tables (an agent ID or user used twice, a webhook no listener serves).

use std::collections::HashSet;

use super::problems::Problems;
use super::{Config, Problem};

impl Config {
    /// Every problem in the config; empty when it is usable.
    pub fn problems(&self) -> Vec<Problem> {
        let mut problems = Problems::default();
        problems.within("matrix", |p| self.matrix.check(p));
        if let Some(store) = &self.store
            && crate::store::Backend::of_url(store).is_none()
        {
            problems.bad(
                "store",
                format!(
                    "`{}` is neither sqlite://PATH nor postgres://USER@HOST/DATABASE",
                    crate::store::redact_url(store)
                ),
            );
        }
        problems.within("metrics", |p| self.metrics.check(p));
        problems.within("access", |p| self.access.check(p));
        problems.within("permissions", |p| p.extend(self.permissions.problems()));
        problems.within("timeouts", |p| self.timeouts.check(p));
        problems.within("media", |p| self.media.check(p));
        problems.within("voice", |p| self.voice.check(p));
        problems.within("budgets", |p| self.budgets.check(p));
        problems.within("rooms", |p| self.rooms.check(p));
        problems.within("queue", |p| self.queue.check(p));
        problems.within("schedules", |p| p.extend(self.schedules.problems()));
        self.check_webhooks(&mut problems);
        problems.within("streaming", |p| p.extend(self.streaming.problems()));
        problems.within("continuity", |p| self.continuity.check(p));
        problems.within("retention", |p| self.retention.check(&self.continuity, p));
        problems.within("commands", |p| self.commands.check(p));
        self.check_agents(&mut problems);
        problems.all()
    }

    /// Each agent's table, and that no two share an ID or a Matrix user.
    fn check_agents(&self, problems: &mut Problems) {
        if self.agents.is_empty() {
            problems.bad("agents", "no agent is configured");
        }
        let mut ids = HashSet::new();
        let mut users = HashSet::new();
        for (i, agent) in self.agents.iter().enumerate() {
            problems.within(format!("agents[{i}]"), |p| {
                agent.check(&self.sandbox, p);
                if !ids.insert(agent.id.as_str()) {
                    p.bad("id", format!("`{}` is used by another agent", agent.id));
                }
                let user = agent.matrix.user_id.as_str();
                if !users.insert(user) {
                    p.bad(
                        "matrix.user_id",
                        format!("`{user}` is used by another agent"),
                    );
                }
            });
        }
    }

    /// Each webhook's table, no two with one name, and a listener to serve them.
    fn check_webhooks(&self, problems: &mut Problems) {
        let agents: Vec<&str> = self.agents.iter().map(|a| a.id.as_str()).collect();
        let mut names = HashSet::new();
        for (i, hook) in self.webhooks.iter().enumerate() {
            problems.within(format!("webhooks[{i}]"), |p| {
                hook.check(&agents, p);
                if !names.insert(hook.name.as_str()) {
                    p.bad(
                        "name",
                        format!("`{}` is the name of another webhook", hook.name),
                    );
                }
            });
        }
        if !self.webhooks.is_empty() && self.webhook_listener.listen.is_none() {
            problems.bad(
                "webhook_listener.listen",
                "webhooks are configured but not served: set an address",
            );
        }
    }
}
