//! Collecting a config's problems, each named by the dotted key that holds it. A table's
//! check says only what is wrong and which key inside the table; where the table sits
//! (`agents[2].runner`) is added by whoever checks the table, so a check is written once,
//! beside the table's definition, and reads the same wherever the table is used.

use super::Problem;

/// The problems found so far, and the table being checked.
#[derive(Debug, Default)]
pub(crate) struct Problems {
    found: Vec<Problem>,
    /// Matrix secrets that cannot be read: reported after the others, and set aside by
    /// `sidekicks check` (which does not sign in).
    secrets: Vec<Problem>,
    /// The keys of the tables the current check is inside (`["agents[2]", "runner"]`).
    table: Vec<String>,
}

impl Problems {
    /// The full key of `key` in the current table; an empty `key` names the table itself.
    fn key(&self, key: &str) -> String {
        let mut parts: Vec<&str> = self.table.iter().map(String::as_str).collect();
        if !key.is_empty() {
            parts.push(key);
        }
        parts.join(".")
    }

    /// `key` (in the current table; empty for the table itself) is wrong, and why.
    pub fn bad(&mut self, key: &str, problem: impl Into<String>) {
        let key = self.key(key);
        self.found.push(Problem {
            key,
            problem: problem.into(),
            matrix_secret: false,
        });
    }

    /// A Matrix secret under `key` cannot be read: running needs it, `sidekicks check`
    /// does not.
    pub fn unreadable_secret(&mut self, key: &str, problem: String) {
        let key = self.key(key);
        self.secrets.push(Problem {
            key,
            problem,
            matrix_secret: true,
        });
    }

    /// A count or size that must be at least `least`.
    pub fn at_least(&mut self, key: &str, value: u64, least: u64) {
        if value < least {
            self.bad(key, format!("must be at least {least}"));
        }
    }

    /// The problems a table's own check found, as (key in the table, why).
    pub fn extend(&mut self, problems: Vec<(&'static str, String)>) {
        for (key, problem) in problems {
            self.bad(key, problem);
        }
    }

    /// Runs `check` with keys inside the table `table` (`"streaming"`, `"agents[2]"`).
    pub fn within(&mut self, table: impl Into<String>, check: impl FnOnce(&mut Self)) {
        self.table.push(table.into());
        check(self);
        self.table.pop();
    }

    /// Every problem found, the unreadable secrets last.
    pub fn all(mut self) -> Vec<Problem> {
        self.found.append(&mut self.secrets);
        self.found
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_problem_is_named_by_its_full_key_and_secrets_come_last() {
        let mut problems = Problems::default();
        problems.within("agents[1]", |p| {
            p.unreadable_secret("matrix", "environment variable X is not set".into());
            p.within("runner", |p| p.bad("image", "is empty"));
            p.bad("", "the whole table");
        });
        problems.at_least("queue.max_waiting", 0, 1);
        problems.at_least("queue.max_waiting", 1, 1);
        let keys: Vec<(String, bool)> = problems
            .all()
            .into_iter()
            .map(|p| (p.key, p.matrix_secret))
            .collect();
        assert_eq!(
            keys,
            vec![
                ("agents[1].runner.image".to_string(), false),
                ("agents[1]".to_string(), false),
                ("queue.max_waiting".to_string(), false),
                ("agents[1].matrix".to_string(), true),
            ]
        );
    }
}
