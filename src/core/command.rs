//! Chat commands typed by people (`!stop`, `!help`), parsed by one pure function so the
//! dispatch code never looks at raw text. See `docs/commands.md`.
//!
//! A command is its registry entry and the words typed after it: nothing about one command
//! is written here, so a new command is its entry in the registry and its handler.
//! Commands that act on one agent take its name as an optional first word (`!new claude`);
//! the parser keeps every word, and the gateway, which knows the room's agents, takes the
//! name off ([`Command::take_agent`]).

/// The registry every command is declared in (pure data, in `model`, which `render` reads
/// too).
pub use crate::model::commands as registry;

use super::poll::Reply;
use registry::{AfterCrash, DuringTurn, Kind, Scope, Spec, Who};

/// A chat command as typed: a word after the prefix, and the words after it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Command {
    /// Its registry entry; `None` for a word that is no command we know (answered with
    /// a pointer to `!help`).
    spec: Option<&'static Spec>,
    /// Its name (an alias typed stands for it), or the word typed, lowercased, that is no
    /// command.
    word: String,
    /// The words after it, as typed (an agent's name first, until
    /// [`Command::take_agent`] takes it off).
    words: Vec<String>,
}

/// The word after `!stop` that names the agent's background tasks (`!stop task [N]`).
pub const TASK_WORD: &str = "task";

impl Command {
    /// `kind` with `words` after it, as if typed by its name.
    pub fn new(kind: Kind, words: &[&str]) -> Self {
        let spec = registry::spec(kind);
        Self {
            spec: Some(spec),
            word: spec.name.to_owned(),
            words: words.iter().map(|w| w.to_string()).collect(),
        }
    }

    /// Its entry in the registry; `None` for a word that is no command.
    pub fn spec(&self) -> Option<&'static Spec> {
        self.spec
    }

    /// Which command it is; `None` for a word that is no command.
    pub fn kind(&self) -> Option<Kind> {
        self.spec.map(|s| s.kind)
    }

    /// Its name, or the word typed (lowercased) that is no command.
    pub fn word(&self) -> &str {
        &self.word
    }

    /// The words after the command, as typed.
    pub fn words(&self) -> &[String] {
        &self.words
    }

    /// The `n`th word after the command, as typed.
    pub fn arg(&self, n: usize) -> Option<&str> {
        self.words.get(n).map(String::as_str)
    }

    /// The first word after the command, lowercased (a setting's value: `!show Tools`).
    pub fn choice(&self) -> Option<String> {
        self.arg(0).map(str::to_lowercase)
    }

    /// What `!stop task [N]` stops: `Some(None)` every background task of the agent here,
    /// `Some(Some(n))` task `n`; `None` for any other command. A word after `task` that is
    /// no number stops none (`Some(Some(0))`: no task has that number).
    pub fn stopped_tasks(&self) -> Option<Option<usize>> {
        if self.kind()? != Kind::Stop || !self.arg(0)?.eq_ignore_ascii_case(TASK_WORD) {
            return None;
        }
        Some(self.arg(1).map(|n| n.parse().unwrap_or(0)))
    }

    /// The poll answer a command such as `!allow` gives.
    pub fn reply(&self) -> Option<Reply> {
        match self.kind()? {
            Kind::Allow => Some(Reply::Allow),
            Kind::Always => Some(Reply::Always),
            Kind::Deny => Some(Reply::Deny),
            Kind::Reject => Some(Reply::Reject),
            _ => None,
        }
    }

    /// Whether the command acts on agents (and so goes to their channels) rather than on
    /// the room (and so is answered once, for all of them).
    pub fn is_for_agents(&self) -> bool {
        self.spec.is_some_and(|s| s.scope == Scope::Agent)
    }

    /// Whether approvers who may not prompt may use it (as they may answer and stop with a
    /// reaction).
    pub fn for_approvers(&self) -> bool {
        self.spec.is_some_and(|s| s.who == Who::Approvers)
    }

    /// Whether the command is carried out at the next start when the gateway stopped
    /// before carrying it out (its registry entry's `AfterCrash::Rerun`), rather than
    /// reported as not carried out.
    pub fn runs_after_crash(&self) -> bool {
        self.spec
            .is_some_and(|s| s.after_crash == AfterCrash::Rerun)
    }

    /// Whether the command changes an agent's settings (`!mode code`, not `!mode`, which
    /// only shows them), or is for admins alone: admins may use it without being allowed
    /// to prompt. Read after [`Command::take_agent`].
    pub fn changes_settings(&self) -> bool {
        match self.spec.map(|s| s.who) {
            Some(Who::Admins) => true,
            Some(Who::SeeAllowedChangeAdmins) => self.is_for_agents() && !self.words.is_empty(),
            _ => false,
        }
    }

    /// What it does while the conversation's turn runs.
    pub fn during_turn(&self) -> DuringTurn {
        self.spec.map_or(DuringTurn::AtOnce, |s| s.during_turn)
    }

    /// The word left after a command for an agent that takes none but the agent's name
    /// (`!new ghost` where no agent is called `ghost`), once [`Command::take_agent`] has
    /// run.
    pub fn stray_word(&self) -> Option<&str> {
        let takes_none = self.is_for_agents()
            && self.spec.is_some_and(|s| s.args.is_empty())
            && self.stopped_tasks().is_none();
        self.words
            .first()
            .map(String::as_str)
            .filter(|_| takes_none)
    }

    /// Takes the first word off a command for an agent when `is_agent` says it names one;
    /// returns it.
    pub fn take_agent<T>(&mut self, is_agent: impl Fn(&str) -> Option<T>) -> Option<T> {
        if !self.is_for_agents() {
            return None;
        }
        let agent = is_agent(self.words.first()?)?;
        self.words.remove(0);
        Some(agent)
    }
}

/// Parses `body` as a chat command starting with `prefix`. Returns `None` for ordinary
/// messages, which become prompts. The words it knows are the registry's.
pub fn parse(prefix: &str, body: &str) -> Option<Command> {
    let rest = body.trim().strip_prefix(prefix)?;
    let word = rest.split_whitespace().next().unwrap_or("");
    if word.is_empty() || rest.starts_with(char::is_whitespace) {
        return None;
    }
    let mut words: Vec<String> = rest[word.len()..]
        .split_whitespace()
        .map(str::to_owned)
        .collect();
    let word = word.to_lowercase();
    let spec = registry::find(&word);
    let word = spec.map_or(word, |s| s.name.to_owned());
    // An answer (`!allow`) takes no words: it answers the poll it replies to, or the
    // only one open.
    if spec.is_some_and(|s| s.during_turn == DuringTurn::AnswersThePoll) {
        words.clear();
    }
    Some(Command { spec, word, words })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn c(kind: Kind, words: &[&str]) -> Command {
        Command::new(kind, words)
    }

    #[test]
    fn stop_task_names_every_background_task_or_one_by_number() {
        let table: &[(Command, Option<Option<usize>>)] = &[
            (c(Kind::Stop, &[]), None),
            (c(Kind::Stop, &["task"]), Some(None)),
            (c(Kind::Stop, &["TASK", "2"]), Some(Some(2))),
            (c(Kind::Stop, &["task", "two"]), Some(Some(0))),
            (c(Kind::Stop, &["tasks"]), None),
            (c(Kind::New, &["task"]), None),
        ];
        for (command, stops) in table {
            assert_eq!(command.stopped_tasks(), *stops, "{command:?}");
        }
    }

    #[test]
    fn only_commands_that_read_and_answer_run_after_a_crash() {
        let table = [
            ("!status", true),
            ("!help mode", true),
            ("!agents", true),
            ("!sessions", true),
            ("!commands codex", true),
            ("!logs", true),
            ("!mode code", false),
            ("!new", false),
            ("!stop", false),
            ("!allow", false),
            ("!show tools", false),
            ("!attach s1", false),
        ];
        for (body, reruns) in table {
            let command = parse("!", body).expect(body);
            assert_eq!(command.runs_after_crash(), reruns, "{body}");
        }
    }

    #[test]
    fn parse_table() {
        let table: &[(&str, &str, Option<Command>)] = &[
            ("!", "!stop", Some(c(Kind::Stop, &[]))),
            ("!", "  !STOP  ", Some(c(Kind::Stop, &[]))),
            ("!", "!cancel claude", Some(c(Kind::Stop, &["claude"]))),
            ("!", "!help", Some(c(Kind::Help, &[]))),
            ("!", "!help Mode", Some(c(Kind::Help, &["Mode"]))),
            ("!", "!?", Some(c(Kind::Help, &[]))),
            ("!", "!agents", Some(c(Kind::Agents, &[]))),
            ("!", "!status", Some(c(Kind::Status, &[]))),
            ("!", "!threads", Some(c(Kind::Threads, &[]))),
            ("!", "!threads New", Some(c(Kind::Threads, &["New"]))),
            ("!", "!allow", Some(c(Kind::Allow, &[]))),
            ("!", "!Always", Some(c(Kind::Always, &[]))),
            ("!", "!deny", Some(c(Kind::Deny, &[]))),
            ("!", "!reject", Some(c(Kind::Reject, &[]))),
            ("!", "!allow claude", Some(c(Kind::Allow, &[]))),
            ("!", "!show", Some(c(Kind::Show, &[]))),
            ("!", "!show Tools", Some(c(Kind::Show, &["Tools"]))),
            ("!", "!new", Some(c(Kind::New, &[]))),
            ("!", "!reset codex", Some(c(Kind::New, &["codex"]))),
            ("!", "!default", Some(c(Kind::Default, &[]))),
            ("!", "!default Codex", Some(c(Kind::Default, &["Codex"]))),
            ("!", "!handoff ON", Some(c(Kind::Handoff, &["ON"]))),
            ("!", "!logs", Some(c(Kind::Logs, &[]))),
            ("!", "!stderr claude", Some(c(Kind::Logs, &["claude"]))),
            ("!", "!commands", Some(c(Kind::Commands, &[]))),
            ("!", "!mode plan", Some(c(Kind::Mode, &["plan"]))),
            (
                "!",
                "!mode claude plan",
                Some(c(Kind::Mode, &["claude", "plan"])),
            ),
            ("!", "!model Large", Some(c(Kind::Model, &["Large"]))),
            ("!", "!set", Some(c(Kind::Set, &[]))),
            (
                "!",
                "!set effort high",
                Some(c(Kind::Set, &["effort", "high"])),
            ),
            ("!", "!options", Some(c(Kind::Set, &[]))),
            ("!", "!worktree", Some(c(Kind::Worktree, &[]))),
            (
                "!",
                "!file src/main.rs",
                Some(c(Kind::File, &["src/main.rs"])),
            ),
            ("!", "!FILE a b.txt", Some(c(Kind::File, &["a", "b.txt"]))),
            (
                "!",
                "!worktree claude remove",
                Some(c(Kind::Worktree, &["claude", "remove"])),
            ),
            ("!", "stop", None),
            ("!", "please !stop", None),
            ("!", "! stop", None),
            ("!", "!", None),
            ("!", "", None),
            ("!", "/stop", None),
            ("sk:", "sk:stop", Some(c(Kind::Stop, &[]))),
            ("sk:", "!stop", None),
        ];
        for (prefix, body, expected) in table {
            assert_eq!(&parse(prefix, body), expected, "{prefix:?} {body:?}");
        }
        let unknown = parse("!", "!Frobnicate x").expect("a command, of no kind");
        assert_eq!((unknown.kind(), unknown.word()), (None, "frobnicate"));
        assert_eq!(
            parse("!", "!help Mode").unwrap().choice().as_deref(),
            Some("mode")
        );
        assert_eq!(parse("!", "!deny").unwrap().reply(), Some(Reply::Deny));
        assert_eq!(parse("!", "!mode").unwrap().reply(), None);
    }

    #[test]
    fn an_agent_name_is_taken_off_commands_for_agents_only() {
        let is_agent = |w: &str| (w == "claude").then(|| "claude".to_owned());
        let table: &[(Command, Option<&str>, Command)] = &[
            (
                c(Kind::Mode, &["claude", "plan"]),
                Some("claude"),
                c(Kind::Mode, &["plan"]),
            ),
            (c(Kind::Mode, &["plan"]), None, c(Kind::Mode, &["plan"])),
            (
                c(Kind::Stop, &["claude"]),
                Some("claude"),
                c(Kind::Stop, &[]),
            ),
            (c(Kind::Stop, &[]), None, c(Kind::Stop, &[])),
            (c(Kind::Help, &[]), None, c(Kind::Help, &[])),
            (
                c(Kind::Default, &["claude"]),
                None,
                c(Kind::Default, &["claude"]),
            ),
        ];
        for (command, agent, rest) in table {
            let mut taken = command.clone();
            assert_eq!(taken.take_agent(is_agent).as_deref(), *agent, "{command:?}");
            assert_eq!(&taken, rest, "{command:?}");
        }
        assert_eq!(c(Kind::Stop, &["ghost"]).stray_word(), Some("ghost"));
        assert_eq!(
            c(Kind::Stop, &["task"]).stray_word(),
            None,
            "background tasks"
        );
        assert_eq!(c(Kind::Stop, &["Task", "2"]).stray_word(), None);
        assert_eq!(
            c(Kind::Mode, &["plan"]).stray_word(),
            None,
            "a mode, not a name"
        );
        assert_eq!(c(Kind::New, &[]).stray_word(), None);
        assert_eq!(
            c(Kind::Default, &["ghost"]).stray_word(),
            None,
            "the room's"
        );
        assert!(c(Kind::Stop, &[]).is_for_agents());
        assert!(c(Kind::Allow, &[]).is_for_agents());
        assert!(!c(Kind::Status, &[]).is_for_agents());
        assert!(!c(Kind::Default, &[]).is_for_agents());
        assert!(!parse("!", "!what").unwrap().is_for_agents());
    }

    #[test]
    fn what_changes_settings() {
        let table = [
            ("!mode", false),
            ("!mode plan", true),
            ("!set effort high", true),
            ("!model", false),
            ("!login", true),
            ("!show tools", false),
            ("!stop", false),
        ];
        for (body, changes) in table {
            let command = parse("!", body).expect(body);
            assert_eq!(command.changes_settings(), changes, "{body}");
        }
    }

    proptest::proptest! {
        /// Any message parses without panicking, and only one that starts with the prefix
        /// is a command.
        #[test]
        fn any_message_parses_and_only_prefixed_ones_are_commands(
            prefix in "[!/.]|sk:",
            body in "\\PC*",
        ) {
            let parsed = parse(&prefix, &body);
            if parsed.is_some() {
                proptest::prop_assert!(body.trim().starts_with(prefix.as_str()));
            }
        }
    }
}
