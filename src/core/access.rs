//! The allow-lists: which Matrix users may invite agents and prompt them, answer polls, or
//! change settings, each less the users the config denies. A list is shared by everything
//! that holds a clone of it, so a config reload (SIGHUP) changes it everywhere at once.

use wildmatch::WildMatch;

use crate::core::reloadable::Reloadable;
use crate::model::ids::UserId;

/// Allowed users, as exact IDs or glob patterns (`*` and `?`), e.g. `@*:example.org`.
#[derive(Debug, Clone)]
pub struct AccessList {
    /// The rules, shared by every clone.
    rules: Reloadable<Rules>,
}

/// What an access list admits, compiled once (a list is checked for every event).
#[derive(Debug, Clone, PartialEq)]
struct Rules {
    /// The patterns; an exact ID is a pattern without wildcards.
    patterns: Vec<WildMatch>,
    /// Users refused whatever the patterns say (`access.deny`): the bridge puppets and bots
    /// a broad pattern would let in.
    deny: Vec<WildMatch>,
}

impl AccessList {
    /// Builds the list from the configured patterns.
    pub fn new<S: AsRef<str>>(patterns: &[S]) -> Self {
        let rules = Rules {
            patterns: patterns
                .iter()
                .map(|p| WildMatch::new(p.as_ref()))
                .collect(),
            deny: Vec::new(),
        };
        Self {
            rules: Reloadable::new(rules),
        }
    }

    /// A list of the same patterns (not shared with this one), refusing every user `deny`
    /// matches.
    pub fn denying<S: AsRef<str>>(self, deny: &[S]) -> Self {
        let patterns = self.rules.read(|rules| rules.patterns.clone());
        let rules = Rules {
            patterns,
            deny: deny.iter().map(|p| WildMatch::new(p.as_ref())).collect(),
        };
        Self {
            rules: Reloadable::new(rules),
        }
    }

    /// Whether the list admits `user_id`.
    pub fn allows(&self, user_id: &UserId) -> bool {
        let matches = |p: &WildMatch| p.matches(user_id.as_str());
        self.rules
            .read(|rules| rules.patterns.iter().any(matches) && !rules.deny.iter().any(matches))
    }

    /// Takes `other`'s rules in place, for every clone of this list; returns whether they
    /// changed.
    pub fn replace_with(&self, other: &AccessList) -> bool {
        self.rules.set(other.rules.get())
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
            assert_eq!(list.allows(&UserId::from(user)), expected, "{user}");
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
            assert_eq!(list.allows(&UserId::from(user)), expected, "{user}");
        }
    }

    #[test]
    fn a_replaced_list_changes_for_every_clone() {
        let list = AccessList::new(&["@alice:x"]);
        let held = list.clone();
        assert!(!held.allows(&UserId::from("@bob:x")));
        assert!(list.replace_with(&AccessList::new(&["@alice:x", "@bob:x"])));
        assert!(
            held.allows(&UserId::from("@bob:x")),
            "a clone sees the new rules"
        );
        let same = AccessList::new(&["@alice:x", "@bob:x"]);
        assert!(!list.replace_with(&same), "nothing changed");
        assert!(list.replace_with(&same.clone().denying(&["@bob:x"])));
        assert!(!held.allows(&UserId::from("@bob:x")));
    }
}
