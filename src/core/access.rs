//! The allow-list: which Matrix users may invite agents and prompt them.

use wildmatch::WildMatch;

/// Allowed users, as exact IDs or glob patterns (`*` and `?`), e.g. `@*:example.org`.
#[derive(Debug, Clone)]
pub struct AccessList {
    /// Compiled patterns; an exact ID is a pattern without wildcards.
    patterns: Vec<WildMatch>,
}

impl AccessList {
    /// Builds the list from the configured patterns.
    pub fn new<S: AsRef<str>>(patterns: &[S]) -> Self {
        Self {
            patterns: patterns
                .iter()
                .map(|p| WildMatch::new(p.as_ref()))
                .collect(),
        }
    }

    /// Whether `user_id` may invite and prompt agents.
    pub fn allows(&self, user_id: &str) -> bool {
        self.patterns.iter().any(|p| p.matches(user_id))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exact_ids_and_patterns() {
        let list = AccessList::new(&["@alice:example.org", "@*:team.org", "@bot?:x.org"]);
        let table = [
            ("@alice:example.org", true),
            ("@alice:example.org.evil", false),
            ("@mallory:example.org", false),
            ("@bob:team.org", true),
            ("@bob:team.org:1", false),
            ("@bob:evilteam.org", false),
            ("@bot1:x.org", true),
            ("@bot12:x.org", false),
        ];
        for (user, expected) in table {
            assert_eq!(list.allows(user), expected, "{user}");
        }
    }
}
