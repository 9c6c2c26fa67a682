//! What `sidekicks check` (and the log at start) warns about in `[access]`: patterns that
//! let in more people than an operator likely means. Not errors: a team may trust every
//! user of its server, but should know that bridges, guests and bots are users too.

use wildmatch::WildMatch;

use super::AccessConfig;

/// Localparts that bridges, guest accounts and bots use on a server; a pattern that admits
/// one of them admits people from other networks.
const LOOKALIKES: [(&str, &str); 8] = [
    ("telegram_123456", "a Telegram user bridged in"),
    ("_discord_123456", "a Discord user bridged in"),
    ("irc_nick", "an IRC user bridged in"),
    ("whatsapp_4912345", "a WhatsApp user bridged in"),
    ("signal_abcdef", "a Signal user bridged in"),
    ("slack_U123", "a Slack user bridged in"),
    ("123456", "a guest account"),
    ("somebot", "a bot"),
];

impl AccessConfig {
    /// Warnings about these access lists, each naming its key; empty when all is exact.
    pub fn warnings(&self) -> Vec<String> {
        let mut warnings = Vec::new();
        let lists = [
            ("access.allowed_users", Some(&self.allowed_users)),
            ("access.approvers", self.approvers.as_ref()),
            ("access.admins", self.admins.as_ref()),
        ];
        for (key, patterns) in lists {
            for pattern in patterns.into_iter().flatten() {
                if let Some(lookalike) = admits_lookalike(pattern, &self.deny) {
                    warnings.push(format!(
                        "{key}: `{pattern}` also admits {lookalike}; list people by exact ID \
                         where you can, or refuse such users with access.deny"
                    ));
                }
            }
        }
        // Approving runs tools; admins can turn approval off. Patterns there are riskier,
        // and both default to the list before them.
        let wild = |list: &[String]| list.iter().any(|p| p.contains(['*', '?']));
        if wild(self.approvers()) {
            let key = match self.approvers {
                Some(_) => "access.approvers",
                None => "access.approvers (defaults to access.allowed_users)",
            };
            warnings.push(format!(
                "{key}: a pattern lets anyone it matches approve tool calls; name approvers \
                 by exact ID"
            ));
        }
        if wild(self.admins()) {
            let key = match self.admins {
                Some(_) => "access.admins",
                None => "access.admins (defaults to access.approvers)",
            };
            warnings.push(format!(
                "{key}: a pattern lets anyone it matches switch an agent to a mode that never \
                 asks permission; name admins by exact ID"
            ));
        }
        warnings
    }
}

/// What kind of unexpected user `pattern` admits, if any, that `deny` does not refuse: it is
/// tried on bridge, guest and bot user IDs of the server it names.
fn admits_lookalike(pattern: &str, deny: &[String]) -> Option<&'static str> {
    if !pattern.contains(['*', '?']) {
        return None;
    }
    let server = pattern
        .split_once(':')
        .map_or("example.org", |(_, s)| s)
        .replace(['*', '?'], "x");
    let matcher = WildMatch::new(pattern);
    let denied: Vec<WildMatch> = deny.iter().map(|p| WildMatch::new(p)).collect();
    LOOKALIKES
        .iter()
        .find(|(localpart, _)| {
            let user = format!("@{localpart}:{server}");
            matcher.matches(&user) && !denied.iter().any(|d| d.matches(&user))
        })
        .map(|(_, what)| *what)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn access(
        allowed: &[&str],
        approvers: Option<&[&str]>,
        admins: Option<&[&str]>,
    ) -> AccessConfig {
        let owned = |l: &[&str]| l.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        AccessConfig {
            allowed_users: owned(allowed),
            approvers: approvers.map(owned),
            admins: admins.map(owned),
            deny: Vec::new(),
            approver_min_power: None,
        }
    }

    #[test]
    fn exact_ids_raise_nothing_and_patterns_are_named_by_key() {
        assert!(
            access(&["@alice:team.org"], None, None)
                .warnings()
                .is_empty()
        );
        let narrow = access(&["@dev-*:team.org"], Some(&["@alice:team.org"]), None);
        assert!(narrow.warnings().is_empty(), "{:?}", narrow.warnings());
        let broad = access(&["@*:team.org"], None, None).warnings();
        assert!(
            broad[0].starts_with("access.allowed_users: `@*:team.org` also admits a Telegram"),
            "{broad:?}"
        );
        assert!(
            broad
                .iter()
                .any(|w| w.starts_with("access.approvers (defaults to")),
            "{broad:?}"
        );
        assert!(
            broad
                .iter()
                .any(|w| w.starts_with("access.admins (defaults to")),
            "{broad:?}"
        );
        let admins = access(
            &["@alice:team.org"],
            Some(&["@alice:team.org"]),
            Some(&["@ops?:team.org"]),
        );
        let warnings = admins.warnings();
        assert_eq!(warnings.len(), 1, "{warnings:?}");
        assert!(
            warnings[0].starts_with("access.admins: a pattern"),
            "{warnings:?}"
        );
    }

    #[test]
    fn patterns_that_admit_bridged_users_are_named() {
        let table = [
            ("@*:team.org", Some("a Telegram user bridged in")),
            ("@*_*:team.org", Some("a Telegram user bridged in")),
            ("@_*:team.org", Some("a Discord user bridged in")),
            ("@*bot:team.org", Some("a bot")),
            ("@dev-*:team.org", None),
            ("@alice:team.org", None),
        ];
        for (pattern, expected) in table {
            assert_eq!(admits_lookalike(pattern, &[]), expected, "{pattern}");
        }
    }

    #[test]
    fn lookalikes_the_config_denies_raise_no_warning() {
        let mut broad = access(&["@*:team.org"], Some(&["@alice:team.org"]), None);
        broad.deny = vec!["@telegram_*:team.org".into()];
        let warnings = broad.warnings();
        assert!(
            warnings[0].contains("also admits a Discord user bridged in"),
            "the next kind is named: {warnings:?}"
        );
        // Guests have numeric localparts; `@1*` stands in for the ten patterns that deny them.
        broad.deny = [
            "@telegram_*",
            "@_discord_*",
            "@*bot",
            "@irc_*",
            "@whatsapp_*",
            "@signal_*",
            "@slack_*",
            "@1*",
        ]
        .iter()
        .map(|p| format!("{p}:team.org"))
        .collect();
        let warnings = broad.warnings();
        assert!(
            !warnings
                .iter()
                .any(|w| w.starts_with("access.allowed_users")),
            "{warnings:?}"
        );
    }
}
