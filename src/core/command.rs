//! Chat commands typed by people (`!stop`, `!help`), parsed by one pure function so the
//! dispatch code never looks at raw text. See `docs/commands.md`.
//!
//! A command is its declaration (a [`Spec`], in the command's own file) and the words typed
//! after it: nothing about one command is written here. Commands that act on one agent take
//! its name as an optional first word (`!new claude`); the parser keeps every word, and the
//! gateway, which knows the room's agents, takes the name off ([`Command::take_agent`]).

pub use crate::model::commands as registry;

use registry::{AfterCrash, DuringTurn, Scope, Spec, Who};

/// Every command the gateway knows, as parsing and `!help` read them: built once from each
/// command's declaration (`core::gateway::commands::known`).
#[derive(Debug)]
pub struct CommandSet {
    specs: Vec<&'static Spec>,
}

impl CommandSet {
    /// The set of `specs`, in the order `!help` lists them within their groups.
    pub fn new(specs: Vec<&'static Spec>) -> Self {
        Self { specs }
    }

    /// The command `word` (lower case, without the prefix) names, by name or alias.
    pub fn find(&self, word: &str) -> Option<&'static Spec> {
        (self.specs.iter().copied()).find(|s| s.name == word || s.aliases.contains(&word))
    }

    /// Every declaration.
    pub fn specs(&self) -> &[&'static Spec] {
        &self.specs
    }
}

/// A chat command as typed: a word after the prefix, and the words after it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Command {
    /// Its declaration; `None` for a word that is no command we know (answered with a
    /// pointer to `!help`).
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
    /// The command `spec` declares with `words` after it, as if typed by its name.
    pub fn new(spec: &'static Spec, words: &[&str]) -> Self {
        Self {
            spec: Some(spec),
            word: spec.name.to_owned(),
            words: words.iter().map(|w| w.to_string()).collect(),
        }
    }

    /// Its declaration; `None` for a word that is no command.
    pub fn spec(&self) -> Option<&'static Spec> {
        self.spec
    }

    /// Whether it is the command `spec` declares (names are unique: tested).
    pub fn is(&self, spec: &Spec) -> bool {
        self.spec.is_some_and(|s| s.name == spec.name)
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

    /// What a command that stops the turn stops instead when `task` follows it
    /// (`!stop task [N]`): `Some(None)` every background task of the agent here,
    /// `Some(Some(n))` task `n`; `None` for any other command. A word after `task` that is
    /// no number stops none (`Some(Some(0))`: no task has that number).
    pub fn stopped_tasks(&self) -> Option<Option<usize>> {
        let stops = self.spec?.during_turn == DuringTurn::StopsTheTurn;
        if !stops || !self.arg(0)?.eq_ignore_ascii_case(TASK_WORD) {
            return None;
        }
        Some(self.arg(1).map(|n| n.parse().unwrap_or(0)))
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
    /// before carrying it out (its declaration's `AfterCrash::Rerun`), rather than
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
/// messages, which become prompts. The words it knows are those of `known`.
pub fn parse(prefix: &str, body: &str, known: &CommandSet) -> Option<Command> {
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
    let spec = known.find(&word);
    let word = spec.map_or(word, |s| s.name.to_owned());
    // An answer (`!allow`) takes no words: it answers the poll it replies to, or the
    // only one open.
    if spec.is_some_and(|s| s.during_turn == DuringTurn::AnswersThePoll) {
        words.clear();
    }
    Some(Command { spec, word, words })
}
