//! Chat commands typed by people (`!stop`, `!help`), parsed into an enum by one pure
//! function so the dispatch code never looks at raw text. See `docs/commands.md`.
//!
//! Commands that act on one agent take its name as an optional first word (`!new claude`);
//! the parser keeps every word, and the gateway, which knows the room's agents, takes the
//! name off ([`Command::take_agent`]).

/// The registry every command is declared in (pure data, in `model`, which `render` reads
/// too).
pub use crate::model::commands as registry;

use super::poll::Reply;
use registry::{DuringTurn, Kind, Scope, Spec, Who};

/// A chat command.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Command {
    /// Show what the gateway understands here, or more about one command (`!help mode`).
    Help(Option<String>),
    /// List the gateway's agents with their state, sessions and uptime.
    Agents,
    /// Show this room's agents, running turns, queued messages and usage.
    Status,
    /// Show or set what the room sees of the agents' work (`!show tools`).
    Show(Option<String>),
    /// Show, set or clear (`off`) the agent that unaddressed messages go to.
    Default(Option<String>),
    /// Show or set (`on`/`off`) whether agents may hand work to each other.
    Handoff(Option<String>),
    /// Show or set how the room's threads map onto conversations (`separate`, `new`, `one`).
    Threads(Option<String>),
    /// Stop the running turn (`session/cancel`).
    Stop(Vec<String>),
    /// Answer a permission poll (`!allow`, `!always`, `!deny`, `!reject`), best as a reply
    /// to the poll.
    Answer(Reply),
    /// Start a new conversation: a new session without the earlier transcript (`!new`).
    NewConversation(Vec<String>),
    /// Show the last lines the agent wrote to stderr (allowed users only).
    Logs(Vec<String>),
    /// List the agent's own slash commands.
    Commands(Vec<String>),
    /// Show the session's modes, or switch to one (`session/set_mode`).
    Mode(Vec<String>),
    /// Show the model choices, or pick one (the config option of category `model`).
    Model(Vec<String>),
    /// Show the session's config options, or set one (`session/set_config_option`).
    Set(Vec<String>),
    /// Show the conversation's git worktree, or remove it (`!worktree remove`).
    Worktree(Vec<String>),
    /// Post a file of the conversation's workspace (`!file PATH`).
    File(Vec<String>),
    /// List the agent's sessions of this conversation's folder (`session/list`).
    Sessions(Vec<String>),
    /// Continue one of the agent's sessions in this conversation (`!attach ID`).
    Attach(Vec<String>),
    /// Sign the agent in with one of the methods it offers (`!login ID`; admins only).
    Login(Vec<String>),
    /// A word after the prefix that is no command we know.
    Unknown(String),
}

impl Command {
    /// Its entry in the registry; `None` for a word that is no command.
    pub fn spec(&self) -> Option<&'static Spec> {
        let kind = match self {
            Command::Help(_) => Kind::Help,
            Command::Agents => Kind::Agents,
            Command::Status => Kind::Status,
            Command::Show(_) => Kind::Show,
            Command::Default(_) => Kind::Default,
            Command::Handoff(_) => Kind::Handoff,
            Command::Threads(_) => Kind::Threads,
            Command::Stop(_) => Kind::Stop,
            Command::Answer(Reply::Allow) => Kind::Allow,
            Command::Answer(Reply::Always) => Kind::Always,
            Command::Answer(Reply::Deny) => Kind::Deny,
            Command::Answer(Reply::Reject) => Kind::Reject,
            // Answers no typed command makes (a number, an emoji) follow the answers' rules.
            Command::Answer(Reply::Number(_) | Reply::Emoji(_)) => Kind::Allow,
            Command::NewConversation(_) => Kind::New,
            Command::Logs(_) => Kind::Logs,
            Command::Commands(_) => Kind::Commands,
            Command::Mode(_) => Kind::Mode,
            Command::Model(_) => Kind::Model,
            Command::Set(_) => Kind::Set,
            Command::Worktree(_) => Kind::Worktree,
            Command::File(_) => Kind::File,
            Command::Sessions(_) => Kind::Sessions,
            Command::Attach(_) => Kind::Attach,
            Command::Login(_) => Kind::Login,
            Command::Unknown(_) => return None,
        };
        Some(registry::spec(kind))
    }

    /// The words after the command of one that acts on an agent, to take its name from.
    fn words_mut(&mut self) -> Option<&mut Vec<String>> {
        match self {
            Command::Stop(w)
            | Command::NewConversation(w)
            | Command::Logs(w)
            | Command::Commands(w)
            | Command::Mode(w)
            | Command::Model(w)
            | Command::Set(w)
            | Command::Worktree(w)
            | Command::File(w)
            | Command::Sessions(w)
            | Command::Attach(w)
            | Command::Login(w) => Some(w),
            _ => None,
        }
    }

    /// Whether the command acts on agents (and so goes to their channels) rather than on
    /// the room (and so is answered once, for all of them).
    pub fn is_for_agents(&self) -> bool {
        self.spec().is_some_and(|s| s.scope == Scope::Agent)
    }

    /// Whether approvers who may not prompt may use it (as they may answer and stop with a
    /// reaction).
    pub fn for_approvers(&self) -> bool {
        self.spec().is_some_and(|s| s.who == Who::Approvers)
    }

    /// Whether the command is carried out at the next start when the gateway stopped
    /// before carrying it out (its registry entry's `AfterCrash::Rerun`), rather than
    /// reported as not carried out.
    pub fn runs_after_crash(&self) -> bool {
        self.spec()
            .is_some_and(|s| s.after_crash == registry::AfterCrash::Rerun)
    }

    /// Whether the command changes an agent's settings (`!mode code`, not `!mode`, which
    /// only shows them), or is for admins alone: admins may use it without being allowed
    /// to prompt. Read after [`Command::take_agent`].
    pub fn changes_settings(&self) -> bool {
        let has_words = self.clone().words_mut().is_some_and(|w| !w.is_empty());
        match self.spec().map(|s| s.who) {
            Some(Who::Admins) => true,
            Some(Who::SeeAllowedChangeAdmins) => has_words,
            _ => false,
        }
    }

    /// What it does while the conversation's turn runs.
    pub fn during_turn(&self) -> DuringTurn {
        self.spec().map_or(DuringTurn::AtOnce, |s| s.during_turn)
    }

    /// The word left after a command that takes none but an agent's name (`!new ghost`
    /// where no agent is called `ghost`), once [`Command::take_agent`] has run.
    pub fn stray_word(&self) -> Option<&str> {
        let takes_none = self.spec().is_some_and(|s| s.args.is_empty());
        match self {
            Command::Stop(w)
            | Command::NewConversation(w)
            | Command::Logs(w)
            | Command::Sessions(w)
            | Command::Commands(w)
                if takes_none =>
            {
                w.first().map(String::as_str)
            }
            _ => None,
        }
    }

    /// Takes the first word off when `is_agent` says it names an agent; returns it.
    pub fn take_agent<T>(&mut self, is_agent: impl Fn(&str) -> Option<T>) -> Option<T> {
        let words = self.words_mut()?;
        let agent = is_agent(words.first()?)?;
        words.remove(0);
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
    let words: Vec<String> = rest[word.len()..]
        .split_whitespace()
        .map(str::to_owned)
        .collect();
    let first = words.first().map(|w| w.to_lowercase());
    let word = word.to_lowercase();
    let Some(spec) = registry::find(&word) else {
        return Some(Command::Unknown(word));
    };
    Some(match spec.kind {
        Kind::Help => Command::Help(first),
        Kind::Agents => Command::Agents,
        Kind::Status => Command::Status,
        Kind::Show => Command::Show(first),
        Kind::Default => Command::Default(words.first().cloned()),
        Kind::Handoff => Command::Handoff(first),
        Kind::Threads => Command::Threads(first),
        Kind::Stop => Command::Stop(words),
        Kind::Allow => Command::Answer(Reply::Allow),
        Kind::Always => Command::Answer(Reply::Always),
        Kind::Deny => Command::Answer(Reply::Deny),
        Kind::Reject => Command::Answer(Reply::Reject),
        Kind::New => Command::NewConversation(words),
        Kind::Logs => Command::Logs(words),
        Kind::Commands => Command::Commands(words),
        Kind::Mode => Command::Mode(words),
        Kind::Model => Command::Model(words),
        Kind::Set => Command::Set(words),
        Kind::Worktree => Command::Worktree(words),
        Kind::File => Command::File(words),
        Kind::Sessions => Command::Sessions(words),
        Kind::Attach => Command::Attach(words),
        Kind::Login => Command::Login(words),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn w(words: &[&str]) -> Vec<String> {
        words.iter().map(|s| s.to_string()).collect()
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
            ("!", "!stop", Some(Command::Stop(vec![]))),
            ("!", "  !STOP  ", Some(Command::Stop(vec![]))),
            ("!", "!cancel claude", Some(Command::Stop(w(&["claude"])))),
            ("!", "!help", Some(Command::Help(None))),
            ("!", "!help Mode", Some(Command::Help(Some("mode".into())))),
            ("!", "!?", Some(Command::Help(None))),
            ("!", "!agents", Some(Command::Agents)),
            ("!", "!status", Some(Command::Status)),
            ("!", "!threads", Some(Command::Threads(None))),
            (
                "!",
                "!threads New",
                Some(Command::Threads(Some("new".into()))),
            ),
            ("!", "!allow", Some(Command::Answer(Reply::Allow))),
            ("!", "!Always", Some(Command::Answer(Reply::Always))),
            ("!", "!deny", Some(Command::Answer(Reply::Deny))),
            ("!", "!reject", Some(Command::Answer(Reply::Reject))),
            ("!", "!show", Some(Command::Show(None))),
            (
                "!",
                "!show Tools",
                Some(Command::Show(Some("tools".into()))),
            ),
            ("!", "!new", Some(Command::NewConversation(vec![]))),
            (
                "!",
                "!reset codex",
                Some(Command::NewConversation(w(&["codex"]))),
            ),
            ("!", "!default", Some(Command::Default(None))),
            (
                "!",
                "!default Codex",
                Some(Command::Default(Some("Codex".into()))),
            ),
            (
                "!",
                "!handoff ON",
                Some(Command::Handoff(Some("on".into()))),
            ),
            ("!", "!logs", Some(Command::Logs(vec![]))),
            ("!", "!stderr claude", Some(Command::Logs(w(&["claude"])))),
            ("!", "!commands", Some(Command::Commands(vec![]))),
            ("!", "!mode plan", Some(Command::Mode(w(&["plan"])))),
            (
                "!",
                "!mode claude plan",
                Some(Command::Mode(w(&["claude", "plan"]))),
            ),
            ("!", "!model Large", Some(Command::Model(w(&["Large"])))),
            ("!", "!set", Some(Command::Set(vec![]))),
            (
                "!",
                "!set effort high",
                Some(Command::Set(w(&["effort", "high"]))),
            ),
            ("!", "!options", Some(Command::Set(vec![]))),
            ("!", "!worktree", Some(Command::Worktree(vec![]))),
            (
                "!",
                "!file src/main.rs",
                Some(Command::File(w(&["src/main.rs"]))),
            ),
            (
                "!",
                "!FILE a b.txt",
                Some(Command::File(w(&["a", "b.txt"]))),
            ),
            (
                "!",
                "!worktree claude remove",
                Some(Command::Worktree(w(&["claude", "remove"]))),
            ),
            (
                "!",
                "!frobnicate x",
                Some(Command::Unknown("frobnicate".into())),
            ),
            ("!", "stop", None),
            ("!", "please !stop", None),
            ("!", "! stop", None),
            ("!", "!", None),
            ("!", "", None),
            ("!", "/stop", None),
            ("sk:", "sk:stop", Some(Command::Stop(vec![]))),
            ("sk:", "!stop", None),
        ];
        for (prefix, body, expected) in table {
            assert_eq!(&parse(prefix, body), expected, "{prefix:?} {body:?}");
        }
    }

    #[test]
    fn an_agent_name_is_taken_off_commands_for_agents_only() {
        let is_agent = |w: &str| (w == "claude").then(|| "claude".to_owned());
        let table: &[(Command, Option<&str>, Command)] = &[
            (
                Command::Mode(w(&["claude", "plan"])),
                Some("claude"),
                Command::Mode(w(&["plan"])),
            ),
            (
                Command::Mode(w(&["plan"])),
                None,
                Command::Mode(w(&["plan"])),
            ),
            (
                Command::Stop(w(&["claude"])),
                Some("claude"),
                Command::Stop(vec![]),
            ),
            (Command::Stop(vec![]), None, Command::Stop(vec![])),
            (Command::Help(None), None, Command::Help(None)),
            (
                Command::Default(Some("claude".into())),
                None,
                Command::Default(Some("claude".into())),
            ),
        ];
        for (command, agent, rest) in table {
            let mut c = command.clone();
            assert_eq!(c.take_agent(is_agent).as_deref(), *agent, "{command:?}");
            assert_eq!(&c, rest, "{command:?}");
        }
        assert_eq!(Command::Stop(w(&["ghost"])).stray_word(), Some("ghost"));
        assert_eq!(
            Command::Mode(w(&["plan"])).stray_word(),
            None,
            "a mode, not a name"
        );
        assert_eq!(Command::NewConversation(vec![]).stray_word(), None);
        assert!(Command::Stop(vec![]).is_for_agents());
        assert!(Command::Answer(Reply::Allow).is_for_agents());
        assert!(!Command::Status.is_for_agents());
        assert!(!Command::Default(None).is_for_agents());
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
