//! `[access]`: who may invite and prompt the agents, answer their polls and change their
//! modes (what the patterns let in is warned about in `access_warnings.rs`).

use serde::Deserialize;

use super::problems::Problems;

/// The allow-list.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AccessConfig {
    /// Matrix user IDs or glob patterns (`@*:example.org`) allowed to invite and prompt agents.
    pub allowed_users: Vec<String>,
    /// Who may answer permission polls (approve or refuse a tool call). Defaults to
    /// `allowed_users`; the agents' own users never count.
    #[serde(default)]
    pub approvers: Option<Vec<String>>,
    /// Who may choose any mode, model or option value (`!mode`, `!model`, `!set`), the modes
    /// that turn permission prompts off included; the others choose within each agent's
    /// `settings`. Defaults to the approvers.
    #[serde(default)]
    pub admins: Option<Vec<String>>,
    /// The power level an approver must also have in a room to answer its polls (e.g. 50,
    /// a moderator); unset: being an approver is enough.
    #[serde(default)]
    pub approver_min_power: Option<i64>,
    /// Users refused every role whatever the lists above say, as IDs or patterns: the
    /// bridge puppets, guests and bots a broad pattern would let in.
    #[serde(default)]
    pub deny: Vec<String>,
}

impl AccessConfig {
    /// The approvers, falling back to the allowed users.
    pub fn approvers(&self) -> &[String] {
        self.approvers.as_deref().unwrap_or(&self.allowed_users)
    }

    /// The admins, falling back to the approvers.
    pub fn admins(&self) -> &[String] {
        self.admins.as_deref().unwrap_or(self.approvers())
    }
}

impl AccessConfig {
    /// Checks `[access]`: every entry a user ID or a pattern of them, and someone allowed.
    pub(super) fn check(&self, problems: &mut Problems) {
        if self.allowed_users.is_empty() {
            problems.bad("allowed_users", "is empty: nobody could use the agents");
        }
        let lists = [
            ("allowed_users", Some(&self.allowed_users)),
            ("approvers", self.approvers.as_ref()),
            ("admins", self.admins.as_ref()),
            ("deny", Some(&self.deny)),
        ];
        for (list, patterns) in lists {
            for (i, pattern) in patterns.into_iter().flatten().enumerate() {
                if !pattern.starts_with('@') || !pattern.contains(':') {
                    problems.bad(
                        &format!("{list}[{i}]"),
                        format!("`{pattern}` is not a user ID or pattern like `@*:example.org`"),
                    );
                }
            }
        }
    }
}
