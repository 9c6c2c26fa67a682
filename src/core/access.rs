//! The allow-lists: which Matrix users may invite agents and prompt them, answer polls, or
//! change settings, each less the users the config denies.

use wildmatch::WildMatch;

/// Allowed users, as exact IDs or glob patterns (`*` and `?`), e.g. `@*:example.org`.
#[derive(Debug, Clone)]
pub struct AccessList {
    /// Compiled patterns; an exact ID is a pattern without wildcards.
    patterns: Vec<WildMatch>,
    /// Users refused whatever the patterns say (`access.deny`): the bridge puppets and bots
    /// a broad pattern would let in.
    deny: Vec<WildMatch>,
}

impl AccessList {
    /// Builds the list from the configured patterns.
    pub fn new<S: AsRef<str>>(patterns: &[S]) -> Self {
        Self {
            patterns: patterns
                .iter()
                .map(|p| WildMatch::new(p.as_ref()))
                .collect(),
            deny: Vec::new(),
        }
    }

    /// The same list, refusing every user `deny` matches.
    pub fn denying<S: AsRef<str>>(mut self, deny: &[S]) -> Self {
        self.deny = deny.iter().map(|p| WildMatch::new(p.as_ref())).collect();
        self
    }

    /// Whether the list admits `user_id`.
    pub fn allows(&self, user_id: &str) -> bool {
        self.patterns.iter().any(|p| p.matches(user_id))
            && !self.deny.iter().any(|p| p.matches(user_id))
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

    #[test]
    fn denied_users_are_refused_whatever_the_patterns_say() {
        let list = AccessList::new(&["@*:team.org", "@alice:team.org"]).denying(&[
            "@telegram_*:team.org",
            "@*bot:team.org",
            "@alice:team.org",
        ]);
        let table = [
            ("@bob:team.org", true),
            ("@telegram_12345:team.org", false),
            ("@buildbot:team.org", false),
            ("@alice:team.org", false),
            ("@bottle:team.org", true),
        ];
        for (user, expected) in table {
            assert_eq!(list.allows(user), expected, "{user}");
        }
    }
}
