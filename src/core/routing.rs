//! Which agents of a room a message is for. A pure function of the message and the room's
//! agents, so every agent's Matrix user, seeing the same message, decides the same way.
//! See `docs/rooms.md`.

use crate::model::ids::{AgentId, UserId};

/// One of the gateway's agents that is in the room.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Member {
    /// The agent's configured ID (`claude`).
    pub agent_id: AgentId,
    /// Its Matrix user ID (`@claude:example.org`).
    pub user_id: UserId,
    /// Its display name (`Claude`), the text a mention pill shows.
    pub display_name: String,
}

impl Member {
    /// The names people may address the agent by, longest first so `demo agent:` is not
    /// taken for `demo` followed by `agent:`.
    fn names(&self) -> Vec<&str> {
        let localpart = self
            .user_id
            .as_str()
            .strip_prefix('@')
            .and_then(|u| u.split(':').next())
            .unwrap_or("");
        let mut names = vec![
            self.user_id.as_str(),
            self.display_name.as_str(),
            self.agent_id.as_str(),
            localpart,
        ];
        names.retain(|n| !n.is_empty());
        names.sort_by_key(|n| std::cmp::Reverse(n.len()));
        names.dedup();
        names
    }

    /// Whether `name` is one of the names of this agent (any case).
    pub fn is_named(&self, name: &str) -> bool {
        let name = name.strip_prefix('@').unwrap_or(name);
        self.names()
            .iter()
            .any(|n| n.strip_prefix('@').unwrap_or(n).to_lowercase() == name.to_lowercase())
    }
}

/// What the message says about who it is for.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Addressing {
    /// Agents the message names (mention, user ID, `name:` prefix, `/name:cmd`, or a reply
    /// to one of their messages), by agent ID, in the order first named.
    pub named: Vec<AgentId>,
    /// The text for the agent: leading addresses removed, `/name:cmd` turned into `/cmd`.
    pub text: String,
}

/// The part of a message that decides who it is for.
#[derive(Debug, Clone, Copy)]
pub struct Addressed<'a> {
    /// The plain text.
    pub body: &'a str,
    /// Users it mentions (Matrix intentional mentions and pills).
    pub mentions: &'a [UserId],
    /// The author of the message it replies to, if it is a reply.
    pub reply_to_sender: Option<&'a UserId>,
}

/// Reads who `message` addresses among `members`.
pub fn addressing(message: Addressed<'_>, members: &[Member]) -> Addressing {
    let mut named: Vec<AgentId> = Vec::new();
    let mut name = |m: &Member| {
        if !named.contains(&m.agent_id) {
            named.push(m.agent_id.clone());
        }
    };
    for m in members {
        if message.mentions.contains(&m.user_id) || message.reply_to_sender == Some(&m.user_id) {
            name(m);
        }
    }
    // Leading addresses: `@name`, `name:`, `name,` (a pill's plain text is the display
    // name, usually followed by a colon), as many as there are.
    let mut text = message.body.trim_start();
    'leading: loop {
        for m in members {
            for n in m.names() {
                if let Some(rest) = strip_address(text, n) {
                    name(m);
                    text = rest.trim_start();
                    continue 'leading;
                }
            }
        }
        break;
    }
    // A full user ID anywhere in the text names the agent too.
    for m in members {
        if message.body.contains(m.user_id.as_str()) {
            name(m);
        }
    }
    // `/name:cmd args` is the command `cmd` of agent `name`.
    let mut text = text.to_owned();
    if let Some(rest) = text.strip_prefix('/')
        && let Some((agent, command)) = rest.split_once(':')
        && !agent.contains(char::is_whitespace)
        && let Some(m) = members.iter().find(|m| m.is_named(agent))
    {
        name(m);
        text = format!("/{command}");
    }
    Addressing { named, text }
}

/// `text` after a leading address of `name`: `@name` followed by a separator or the end,
/// or `name` followed by `:` or `,`. The separator is consumed.
fn strip_address<'t>(text: &'t str, name: &str) -> Option<&'t str> {
    let bare = name.strip_prefix('@').unwrap_or(name);
    let (at, rest) = match text.strip_prefix('@') {
        Some(rest) => (true, rest),
        None => (false, text),
    };
    let rest = strip_prefix_ignoring_case(rest, bare)?;
    if let Some(after) = rest.strip_prefix([':', ',']) {
        return Some(after);
    }
    (at && (rest.is_empty() || rest.starts_with(char::is_whitespace))).then_some(rest)
}

fn strip_prefix_ignoring_case<'t>(text: &'t str, prefix: &str) -> Option<&'t str> {
    let head = text.get(..prefix.len())?;
    (head.to_lowercase() == prefix.to_lowercase()).then(|| &text[prefix.len()..])
}

/// The agents a message goes to: those it names; in a room with one agent, that agent;
/// else the room's default agent (if it is in the room); else none.
pub fn targets(
    addressing: &Addressing,
    members: &[Member],
    default: Option<&AgentId>,
) -> Vec<AgentId> {
    if !addressing.named.is_empty() {
        return addressing.named.clone();
    }
    if let [only] = members {
        return vec![only.agent_id.clone()];
    }
    default
        .filter(|d| members.iter().any(|m| &m.agent_id == *d))
        .map(|d| vec![d.clone()])
        .unwrap_or_default()
}

/// The slash command a prompt starts with (`/review src` → `review`): a word of letters,
/// digits, `-`, `_` or `.` right after the slash. A path (`/usr/bin`) is not one.
pub fn slash_command(text: &str) -> Option<&str> {
    let word = text
        .trim_start()
        .strip_prefix('/')?
        .split_whitespace()
        .next()?;
    (!word.is_empty()
        && word
            .chars()
            .all(|c| c.is_alphanumeric() || matches!(c, '-' | '_' | '.')))
    .then_some(word)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn members() -> Vec<Member> {
        vec![
            Member {
                agent_id: "claude".into(),
                user_id: "@claude:hs".into(),
                display_name: "Claude".into(),
            },
            Member {
                agent_id: "codex".into(),
                user_id: "@sk-codex:hs".into(),
                display_name: "Codex Agent".into(),
            },
        ]
    }

    #[test]
    fn addressing_table() {
        let none: &[UserId] = &[];
        let pill = [UserId::from("@sk-codex:hs")];
        /// (body, mentions, author replied to, agents named, text for them)
        type Case<'a> = (
            &'a str,
            &'a [UserId],
            Option<&'a str>,
            &'a [&'a str],
            &'a str,
        );
        let table: &[Case] = &[
            ("hello", none, None, &[], "hello"),
            ("claude: fix it", none, None, &["claude"], "fix it"),
            ("Claude, fix it", none, None, &["claude"], "fix it"),
            ("@claude fix it", none, None, &["claude"], "fix it"),
            ("@claude:hs fix it", none, None, &["claude"], "fix it"),
            ("@claude:hs: fix it", none, None, &["claude"], "fix it"),
            ("codex agent: review", none, None, &["codex"], "review"),
            ("sk-codex: review", none, None, &["codex"], "review"),
            (
                "@claude @codex compare",
                none,
                None,
                &["claude", "codex"],
                "compare",
            ),
            (
                "claude, codex: both",
                none,
                None,
                &["claude", "codex"],
                "both",
            ),
            // A pill: the plain text shows the display name; m.mentions names the user.
            ("Codex Agent: look", &pill, None, &["codex"], "look"),
            ("look at this", &pill, None, &["codex"], "look at this"),
            // A reply to an agent's message goes to that agent.
            (
                "and then?",
                none,
                Some("@claude:hs"),
                &["claude"],
                "and then?",
            ),
            ("and then?", none, Some("@bob:hs"), &[], "and then?"),
            // The user ID anywhere in the text.
            (
                "ask @claude:hs about it",
                none,
                None,
                &["claude"],
                "ask @claude:hs about it",
            ),
            // A name without `@` or punctuation is just a word.
            ("claude is great", none, None, &[], "claude is great"),
            ("claudette: hi", none, None, &[], "claudette: hi"),
            ("@claudette hi", none, None, &[], "@claudette hi"),
            // Slash commands of one agent.
            ("/codex:review src", none, None, &["codex"], "/review src"),
            ("/Claude:compact", none, None, &["claude"], "/compact"),
            ("/review src", none, None, &[], "/review src"),
            ("/usr:bin thing", none, None, &[], "/usr:bin thing"),
            (
                "claude: /codex:review",
                none,
                None,
                &["claude", "codex"],
                "/review",
            ),
        ];
        for (body, mentions, reply_to, named, text) in table {
            let got = addressing(
                Addressed {
                    body,
                    mentions,
                    reply_to_sender: reply_to.map(UserId::from).as_ref(),
                },
                &members(),
            );
            let expected: Vec<AgentId> = named.iter().map(|s| AgentId::from(*s)).collect();
            assert_eq!(got.named, expected, "{body:?}");
            assert_eq!(got.text, *text, "{body:?}");
        }
    }

    #[test]
    fn targets_table() {
        let all = members();
        let one = &all[..1];
        let named = |ids: &[&str]| Addressing {
            named: ids.iter().map(|s| AgentId::from(*s)).collect(),
            text: String::new(),
        };
        /// (room's agents, addressing, default agent, targets)
        type Case<'a> = (&'a [Member], Addressing, Option<&'a str>, &'a [&'a str]);
        let table: &[Case] = &[
            (&all, named(&["codex"]), None, &["codex"]),
            (&all, named(&["codex"]), Some("claude"), &["codex"]),
            (&all, named(&[]), None, &[]),
            (&all, named(&[]), Some("claude"), &["claude"]),
            (&all, named(&[]), Some("gone"), &[]),
            (one, named(&[]), None, &["claude"]),
            (&[], named(&[]), None, &[]),
        ];
        for (members, addressing, default, expected) in table {
            assert_eq!(
                targets(addressing, members, default.map(AgentId::from).as_ref()),
                expected
                    .iter()
                    .map(|s| AgentId::from(*s))
                    .collect::<Vec<_>>(),
                "{addressing:?} {default:?}"
            );
        }
    }

    #[test]
    fn slash_commands_are_words_not_paths() {
        assert_eq!(slash_command("/review src"), Some("review"));
        assert_eq!(slash_command("/compact"), Some("compact"));
        assert_eq!(slash_command("/usr/bin/env is odd"), None);
        assert_eq!(slash_command("/"), None);
        assert_eq!(slash_command("no"), None);
    }
}
