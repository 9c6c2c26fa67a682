//! Every chat command, declared once: its name and aliases, whether it is about the room or
//! one agent, who may use it, what it does during a turn, whether it runs after a crash,
//! where it applies, and its help. Parsing (`core::command::parse`), the permission checks
//! (`core::gateway::dispatch`), what a running turn does with it
//! (`core::channel::turn_input`), what the next start does with it after a crash
//! (`core::gateway::recovery`), `!help` (`render::strings`)
//! and `docs/commands.md` (a test checks it) all read this table. A new command is an entry
//! here (its `Kind` and its `Spec`) and its handler, which the compiler asks for: the
//! channel's `answer_command` (one agent) or the gateway's `room_command` (the room) match
//! on every kind.

/// Which command an entry declares.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Kind {
    /// `!help [COMMAND]`.
    Help,
    /// `!agents`.
    Agents,
    /// `!status`.
    Status,
    /// `!show [all|tools|answer]`.
    Show,
    /// `!default [NAME|off]`.
    Default,
    /// `!handoff [on|off]`.
    Handoff,
    /// `!threads [separate|new|one]`.
    Threads,
    /// `!queue [queue|steer|interrupt]`.
    Queue,
    /// `!reactions [on|off]`.
    Reactions,
    /// `!fork [NAME]`.
    Fork,
    /// `!stop`.
    Stop,
    /// `!allow`.
    Allow,
    /// `!always`.
    Always,
    /// `!deny`.
    Deny,
    /// `!reject`.
    Reject,
    /// `!new`.
    New,
    /// `!logs`.
    Logs,
    /// `!commands`.
    Commands,
    /// `!mode [MODE]`.
    Mode,
    /// `!model [MODEL]`.
    Model,
    /// `!set [OPTION [VALUE]]`.
    Set,
    /// `!worktree [remove]`.
    Worktree,
    /// `!file PATH`.
    File,
    /// `!sessions`.
    Sessions,
    /// `!attach ID`.
    Attach,
    /// `!login [ID]`.
    Login,
    /// `!every WHEN PROMPT`.
    Every,
    /// `!at WHEN PROMPT`.
    At,
    /// `!schedules`.
    Schedules,
    /// `!unschedule ID`.
    Unschedule,
    /// `!timezone [ZONE]`.
    TimeZone,
}

/// What a command is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scope {
    /// The room: answered once, by the agent that speaks for the room.
    Room,
    /// One agent (named first where several are): it goes to that agent's conversation.
    Agent,
}

/// Who may use a command.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Who {
    /// People who may prompt.
    Allowed,
    /// Those, and approvers who may not prompt (as they may answer with a reaction).
    Approvers,
    /// Anyone who may prompt may see; changing (any word after it) is for them within the
    /// agent's settings policy, and for admins who may not prompt.
    SeeAllowedChangeAdmins,
    /// Admins only.
    Admins,
}

/// What a command does while the conversation's turn runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DuringTurn {
    /// Stops the turn.
    StopsTheTurn,
    /// Answers the turn's open poll.
    AnswersThePoll,
    /// Answered at once, beside the turn.
    AtOnce,
    /// Refused with a notice: it is for once the turn has ended.
    Refused,
}

/// What becomes of a command the gateway took in but had not carried out when it stopped
/// (a crash, a kill -9): the next start finds it waiting in the store.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AfterCrash {
    /// Carried out then: it only reads and answers, so running it late does nothing the
    /// person did not ask for, and its answer is the one they wait for.
    Rerun,
    /// Not run; the room is told it was not carried out and to send it again if it still
    /// matters: it changes something, or what it acted on (a turn, a poll) died with the
    /// gateway.
    Reported,
}

/// When a command applies, so that `!help` shows it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Applies {
    /// Everywhere.
    Always,
    /// Where several agents are in the room.
    SeveralAgents,
    /// Where an agent of the room works in git worktrees.
    Worktrees,
}

/// The group a command is listed in by `!help`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Group {
    /// Working with the agent.
    Conversation,
    /// The agent's session: modes, model, options.
    Session,
    /// Answering the agent's permission requests.
    Approvals,
    /// The room.
    Room,
    /// Prompts that run by themselves.
    Schedules,
}

impl Group {
    /// Every group, in the order `!help` lists them.
    pub const ALL: [Group; 5] = [
        Group::Conversation,
        Group::Session,
        Group::Approvals,
        Group::Room,
        Group::Schedules,
    ];
}

/// One chat command.
#[derive(Debug, PartialEq, Eq)]
pub struct Spec {
    /// Which one.
    pub kind: Kind,
    /// Its name, after the prefix.
    pub name: &'static str,
    /// Other names it answers to.
    pub aliases: &'static [&'static str],
    /// What may follow it, as `!help` writes it (empty: nothing but an agent's name).
    pub args: &'static str,
    /// What it is about.
    pub scope: Scope,
    /// Who may use it.
    pub who: Who,
    /// What it does during a turn.
    pub during_turn: DuringTurn,
    /// What becomes of it when the gateway stopped before carrying it out.
    pub after_crash: AfterCrash,
    /// Where it applies.
    pub applies: Applies,
    /// Its group in `!help`.
    pub group: Group,
    /// One short line for `!help`.
    pub help: &'static str,
    /// More, for `!help NAME`.
    pub details: &'static str,
}

/// Every command, in the order `!help` lists them within their groups.
pub const COMMANDS: &[Spec] = &[
    Spec {
        kind: Kind::Stop,
        name: "stop",
        aliases: &["cancel"],
        args: "",
        scope: Scope::Agent,
        who: Who::Approvers,
        during_turn: DuringTurn::StopsTheTurn,
        after_crash: AfterCrash::Reported,
        applies: Applies::Always,
        group: Group::Conversation,
        help: "stop the running turn (or react 🛑 to the answer); `task [N]`: its background tasks",
        details: "Stops the agent's running turn (session/cancel) and the commands it runs. \
                  `!stop task` stops the agent's background tasks here instead (`!stop task N` \
                  one of them; or react 🛑 to a task's card), and leaves the turn alone. \
                  Approvers who may not prompt may use it too.",
    },
    Spec {
        kind: Kind::New,
        name: "new",
        aliases: &["reset"],
        args: "",
        scope: Scope::Agent,
        who: Who::Allowed,
        during_turn: DuringTurn::Refused,
        after_crash: AfterCrash::Reported,
        applies: Applies::Always,
        group: Group::Conversation,
        help: "start a fresh conversation (the agent forgets what was said before)",
        details: "The next message opens a new session without the earlier transcript; the \
                  conversation's mode is forgotten too.",
    },
    Spec {
        kind: Kind::Fork,
        name: "fork",
        aliases: &[],
        args: "[NAME]",
        scope: Scope::Room,
        who: Who::Allowed,
        during_turn: DuringTurn::AtOnce,
        after_crash: AfterCrash::Reported,
        applies: Applies::Always,
        group: Group::Conversation,
        help: "try another approach from here, in a thread that starts as a copy of this \
               conversation",
        details: "A new thread, named NAME if given, whose conversation with each agent of the \
                  room starts as a copy of this one; the original goes on untouched.",
    },
    Spec {
        kind: Kind::Status,
        name: "status",
        aliases: &[],
        args: "",
        scope: Scope::Room,
        who: Who::Allowed,
        during_turn: DuringTurn::AtOnce,
        after_crash: AfterCrash::Rerun,
        applies: Applies::Always,
        group: Group::Conversation,
        help: "what the agents here are doing, and the context they use",
        details: "Each agent of the room: working or idle, queued messages, open polls, its \
                  session, mode and usage.",
    },
    Spec {
        kind: Kind::File,
        name: "file",
        aliases: &[],
        args: "PATH",
        scope: Scope::Agent,
        who: Who::Allowed,
        during_turn: DuringTurn::AtOnce,
        after_crash: AfterCrash::Reported,
        applies: Applies::Always,
        group: Group::Conversation,
        help: "post a file of the agent's workspace here",
        details: "Posts the file at PATH (relative to the conversation's folder) as a picture \
                  or a file; folders, missing files, files outside the folder and files over \
                  the size limit are refused.",
    },
    Spec {
        kind: Kind::Sessions,
        name: "sessions",
        aliases: &[],
        args: "",
        scope: Scope::Agent,
        who: Who::Allowed,
        during_turn: DuringTurn::AtOnce,
        after_crash: AfterCrash::Rerun,
        applies: Applies::Always,
        group: Group::Conversation,
        help: "the agent's sessions in this conversation's folder",
        details: "Lists the agent's sessions whose folder is this conversation's (where the \
                  agent offers session/list); those of other rooms' conversations are not \
                  shown.",
    },
    Spec {
        kind: Kind::Attach,
        name: "attach",
        aliases: &[],
        args: "ID",
        scope: Scope::Agent,
        who: Who::Allowed,
        during_turn: DuringTurn::Refused,
        after_crash: AfterCrash::Reported,
        applies: Applies::Always,
        group: Group::Conversation,
        help: "continue one of those sessions here (started in an editor or a terminal)",
        details: "This conversation continues session ID (session/load or session/resume); \
                  another conversation's session is refused.",
    },
    Spec {
        kind: Kind::Worktree,
        name: "worktree",
        aliases: &[],
        args: "[remove]",
        scope: Scope::Agent,
        who: Who::Allowed,
        during_turn: DuringTurn::AtOnce,
        after_crash: AfterCrash::Reported,
        applies: Applies::Worktrees,
        group: Group::Conversation,
        help: "the agent's git worktree, its branch and changes (remove: take it away)",
        details: "In worktree mode: the conversation's worktree, its branch, uncommitted \
                  changes and commits; `remove` takes the worktree away and keeps its branch.",
    },
    Spec {
        kind: Kind::Mode,
        name: "mode",
        aliases: &[],
        args: "[MODE]",
        scope: Scope::Agent,
        who: Who::SeeAllowedChangeAdmins,
        during_turn: DuringTurn::AtOnce,
        after_crash: AfterCrash::Reported,
        applies: Applies::Always,
        group: Group::Session,
        help: "the session's modes, or switch to one",
        details: "Lists the session's modes, each marked as asking before acting or not, or \
                  switches to MODE; modes that act without asking are for admins.",
    },
    Spec {
        kind: Kind::Model,
        name: "model",
        aliases: &[],
        args: "[MODEL]",
        scope: Scope::Agent,
        who: Who::SeeAllowedChangeAdmins,
        during_turn: DuringTurn::AtOnce,
        after_crash: AfterCrash::Reported,
        applies: Applies::Always,
        group: Group::Session,
        help: "the model choices, or pick one",
        details: "Shows the agent's model choice (its config option of category model), or \
                  picks MODEL.",
    },
    Spec {
        kind: Kind::Set,
        name: "set",
        aliases: &["options"],
        args: "[OPTION [VALUE]]",
        scope: Scope::Agent,
        who: Who::SeeAllowedChangeAdmins,
        during_turn: DuringTurn::AtOnce,
        after_crash: AfterCrash::Reported,
        applies: Applies::Always,
        group: Group::Session,
        help: "the session's options, or set one",
        details: "Every config option with its value, one option's values, or sets OPTION to \
                  VALUE (toggles take on/off).",
    },
    Spec {
        kind: Kind::Commands,
        name: "commands",
        aliases: &[],
        args: "",
        scope: Scope::Agent,
        who: Who::Allowed,
        during_turn: DuringTurn::AtOnce,
        after_crash: AfterCrash::Rerun,
        applies: Applies::Always,
        group: Group::Session,
        help: "the agent's own slash commands",
        details: "Lists the slash commands the agent offers; write them as a message.",
    },
    Spec {
        kind: Kind::Logs,
        name: "logs",
        aliases: &["stderr"],
        args: "",
        scope: Scope::Agent,
        who: Who::Allowed,
        during_turn: DuringTurn::AtOnce,
        after_crash: AfterCrash::Rerun,
        applies: Applies::Always,
        group: Group::Session,
        help: "what the agent last wrote to stderr",
        details: "The last lines the agent wrote to stderr, in rooms whose members are all \
                  allowed users; elsewhere, where to find them.",
    },
    Spec {
        kind: Kind::Login,
        name: "login",
        aliases: &[],
        args: "[ID]",
        scope: Scope::Agent,
        who: Who::Admins,
        during_turn: DuringTurn::AtOnce,
        after_crash: AfterCrash::Reported,
        applies: Applies::Always,
        group: Group::Session,
        help: "sign the agent in",
        details: "Signs the agent in with one of the methods it offers; without an ID, lists \
                  them. Admins only.",
    },
    Spec {
        kind: Kind::Allow,
        name: "allow",
        aliases: &["approve", "yes"],
        args: "",
        scope: Scope::Agent,
        who: Who::Approvers,
        during_turn: DuringTurn::AnswersThePoll,
        after_crash: AfterCrash::Reported,
        applies: Applies::Always,
        group: Group::Approvals,
        help: "allow what a permission request asks, once (reply to it)",
        details: "Answers a permission poll with its allow-once option, best as a reply to \
                  the poll. Approvers only.",
    },
    Spec {
        kind: Kind::Always,
        name: "always",
        aliases: &[],
        args: "",
        scope: Scope::Agent,
        who: Who::Approvers,
        during_turn: DuringTurn::AnswersThePoll,
        after_crash: AfterCrash::Reported,
        applies: Applies::Always,
        group: Group::Approvals,
        help: "allow it from now on",
        details: "Answers a permission poll with its allow-always option. Approvers only.",
    },
    Spec {
        kind: Kind::Deny,
        name: "deny",
        aliases: &["never", "no"],
        args: "",
        scope: Scope::Agent,
        who: Who::Approvers,
        during_turn: DuringTurn::AnswersThePoll,
        after_crash: AfterCrash::Reported,
        applies: Applies::Always,
        group: Group::Approvals,
        help: "refuse it, once",
        details: "Answers a permission poll with its reject-once option. Approvers only.",
    },
    Spec {
        kind: Kind::Reject,
        name: "reject",
        aliases: &[],
        args: "",
        scope: Scope::Agent,
        who: Who::Approvers,
        during_turn: DuringTurn::AnswersThePoll,
        after_crash: AfterCrash::Reported,
        applies: Applies::Always,
        group: Group::Approvals,
        help: "refuse it from now on",
        details: "Answers a permission poll with its reject-always option. Approvers only.",
    },
    Spec {
        kind: Kind::Show,
        name: "show",
        aliases: &[],
        args: "[all|tools|answer]",
        scope: Scope::Room,
        who: Who::Allowed,
        during_turn: DuringTurn::AtOnce,
        after_crash: AfterCrash::Reported,
        applies: Applies::Always,
        group: Group::Room,
        help: "how much of the agents' work this room sees",
        details: "all: tool cards, plan, thinking and usage; tools: tool cards and plan; \
                  answer: answers only. Polls and errors are always shown.",
    },
    Spec {
        kind: Kind::Default,
        name: "default",
        aliases: &[],
        args: "[NAME|off]",
        scope: Scope::Room,
        who: Who::Allowed,
        during_turn: DuringTurn::AtOnce,
        after_crash: AfterCrash::Reported,
        applies: Applies::SeveralAgents,
        group: Group::Room,
        help: "where messages addressed to nobody go",
        details: "Shows, sets or clears (off) the agent that messages addressed to nobody go \
                  to.",
    },
    Spec {
        kind: Kind::Handoff,
        name: "handoff",
        aliases: &[],
        args: "[on|off]",
        scope: Scope::Room,
        who: Who::Allowed,
        during_turn: DuringTurn::AtOnce,
        after_crash: AfterCrash::Reported,
        applies: Applies::SeveralAgents,
        group: Group::Room,
        help: "whether an agent may hand work to another one here",
        details: "Whether an agent's answer addressing another agent of the room is handed \
                  to it.",
    },
    Spec {
        kind: Kind::Threads,
        name: "threads",
        aliases: &[],
        args: "[separate|new|one]",
        scope: Scope::Room,
        who: Who::Allowed,
        during_turn: DuringTurn::AtOnce,
        after_crash: AfterCrash::Reported,
        applies: Applies::Always,
        group: Group::Room,
        help: "whether a thread is a conversation of its own",
        details: "separate: each thread is a conversation of its own; new: each message of \
                  the main timeline opens one; one: threads are part of the room's \
                  conversation.",
    },
    Spec {
        kind: Kind::Queue,
        name: "queue",
        aliases: &[],
        args: "[queue|steer|interrupt]",
        scope: Scope::Room,
        who: Who::Allowed,
        during_turn: DuringTurn::AtOnce,
        after_crash: AfterCrash::Reported,
        applies: Applies::Always,
        group: Group::Room,
        help: "what a message written while the agent works does",
        details: "queue: it waits its turn (⏳); steer: it joins the running turn (↪️) where \
                  the agent offers that, else it waits; interrupt: it stops the running turn \
                  and is answered at once.",
    },
    Spec {
        kind: Kind::Reactions,
        name: "reactions",
        aliases: &[],
        args: "[on|off]",
        scope: Scope::Room,
        who: Who::Allowed,
        during_turn: DuringTurn::AtOnce,
        after_crash: AfterCrash::Reported,
        applies: Applies::Always,
        group: Group::Room,
        help: "whether agents mark your messages as they take and answer them",
        details: "on: 👀 when a message is taken, then ✅ answered, ❌ failed or 🛑 stopped, \
                  each replacing the last; off: only ⏳ while a message waits.",
    },
    Spec {
        kind: Kind::Every,
        name: "every",
        aliases: &[],
        args: "[here] [skip-missed] WHEN PROMPT",
        scope: Scope::Room,
        who: Who::Allowed,
        during_turn: DuringTurn::AtOnce,
        after_crash: AfterCrash::Reported,
        applies: Applies::Always,
        group: Group::Schedules,
        help: "ask an agent PROMPT again and again: WHEN is 2h, daily 09:00, weekdays 09:00, \
               mondays 08:00 or cron 0 9 * * 1-5",
        details: "Each run is a prompt of yours, posted in the room: it answers in a thread of \
                  its own (`here`: in the room's conversation), with the usual cards and \
                  polls, and ends with a summary line. Times are in the configured time zone. \
                  A run due while Sidekicks was down runs once when it is back \
                  (`skip-missed`: it is skipped); a run is not started while the last one is \
                  still going. It stops when you may no longer prompt. Name the agent first \
                  in a room with several.",
    },
    Spec {
        kind: Kind::At,
        name: "at",
        aliases: &[],
        args: "[here] WHEN PROMPT",
        scope: Scope::Room,
        who: Who::Allowed,
        during_turn: DuringTurn::AtOnce,
        after_crash: AfterCrash::Reported,
        applies: Applies::Always,
        group: Group::Schedules,
        help: "ask an agent PROMPT once, later: WHEN is 17:30, tomorrow 08:00, \
               2026-12-24 08:00 or in 10m",
        details: "Like `every`, once: the run is a prompt of yours, in a thread of its own \
                  (`here`: in the room's conversation).",
    },
    Spec {
        kind: Kind::Schedules,
        name: "schedules",
        aliases: &[],
        args: "",
        scope: Scope::Room,
        who: Who::Allowed,
        during_turn: DuringTurn::AtOnce,
        after_crash: AfterCrash::Rerun,
        applies: Applies::Always,
        group: Group::Schedules,
        help: "what is scheduled here: when, by whom, the next run, the last outcome",
        details: "Every schedule of the room with its ID, when it runs and in which time zone, \
                  the agent, who set it, its next run, how many runs it had and how the last \
                  one ended, or why it stopped.",
    },
    Spec {
        kind: Kind::Unschedule,
        name: "unschedule",
        aliases: &[],
        args: "ID",
        scope: Scope::Room,
        who: Who::Allowed,
        during_turn: DuringTurn::AtOnce,
        after_crash: AfterCrash::Reported,
        applies: Applies::Always,
        group: Group::Schedules,
        help: "remove schedule ID (`schedules` lists them)",
        details: "The schedule runs no more; a run already going goes on.",
    },
    Spec {
        kind: Kind::TimeZone,
        name: "timezone",
        aliases: &[],
        args: "[ZONE]",
        scope: Scope::Room,
        who: Who::Allowed,
        during_turn: DuringTurn::AtOnce,
        after_crash: AfterCrash::Reported,
        applies: Applies::Always,
        group: Group::Schedules,
        help: "the time zone of the times written here (Europe/Paris, UTC…), or see it",
        details: "The zone `every` and `at` read times in from now on, here; a schedule keeps \
                  the zone it was set in. Without a zone, the current one (the room's, or \
                  the configured one).",
    },
    Spec {
        kind: Kind::Agents,
        name: "agents",
        aliases: &[],
        args: "",
        scope: Scope::Room,
        who: Who::Allowed,
        during_turn: DuringTurn::AtOnce,
        after_crash: AfterCrash::Rerun,
        applies: Applies::Always,
        group: Group::Room,
        help: "every agent of this Sidekicks, running or not",
        details: "Every agent of this Sidekicks: working, idle, stopped or crashed, its \
                  sessions and uptime, and whether it is in this room.",
    },
    Spec {
        kind: Kind::Help,
        name: "help",
        aliases: &["h", "?"],
        args: "[COMMAND]",
        scope: Scope::Room,
        who: Who::Allowed,
        during_turn: DuringTurn::AtOnce,
        after_crash: AfterCrash::Rerun,
        applies: Applies::Always,
        group: Group::Room,
        help: "this text, or more about one command",
        details: "Who is here and how to address them, the commands that apply here, and \
                  each agent's own slash commands; with a command's name, more about it.",
    },
];

/// The command `word` (lower case, without the prefix) names, by name or alias.
pub fn find(word: &str) -> Option<&'static Spec> {
    COMMANDS
        .iter()
        .find(|s| s.name == word || s.aliases.contains(&word))
}

/// The entry of `kind`.
pub fn spec(kind: Kind) -> &'static Spec {
    COMMANDS
        .iter()
        .find(|s| s.kind == kind)
        .expect("every kind has its entry (tested)")
}

/// What `!help` knows of the room and of the person asking, to show what applies.
#[derive(Debug, Clone, Copy, Default)]
pub struct Audience {
    /// Several agents are in the room.
    pub several_agents: bool,
    /// An agent of the room works in git worktrees.
    pub worktrees: bool,
    /// The person is an admin.
    pub admin: bool,
}

impl Spec {
    /// Whether `!help` shows it to `audience`.
    pub fn shown_to(&self, audience: Audience) -> bool {
        let applies = match self.applies {
            Applies::Always => true,
            Applies::SeveralAgents => audience.several_agents,
            Applies::Worktrees => audience.worktrees,
        };
        applies && (self.who != Who::Admins || audience.admin)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_name_is_one_commands_and_every_kind_has_one_entry() {
        let mut names = std::collections::HashSet::new();
        for spec in COMMANDS {
            for name in std::iter::once(&spec.name).chain(spec.aliases) {
                assert!(names.insert(*name), "{name} twice");
                assert_eq!(find(name).map(|s| s.kind), Some(spec.kind));
            }
            assert_eq!(super::spec(spec.kind).name, spec.name);
            assert!(
                !spec.help.is_empty() && !spec.details.is_empty(),
                "{}",
                spec.name
            );
        }
        let kinds: std::collections::HashSet<Kind> = COMMANDS.iter().map(|s| s.kind).collect();
        assert_eq!(kinds.len(), COMMANDS.len(), "one entry per kind");
    }

    #[test]
    fn help_shows_what_applies_to_whom() {
        let one = Audience::default();
        let shown = |a: Audience| -> Vec<&str> {
            COMMANDS
                .iter()
                .filter(|s| s.shown_to(a))
                .map(|s| s.name)
                .collect()
        };
        assert!(!shown(one).contains(&"login"), "admins only");
        assert!(!shown(one).contains(&"worktree"), "no worktrees here");
        assert!(!shown(one).contains(&"default"), "one agent");
        let all = Audience {
            several_agents: true,
            worktrees: true,
            admin: true,
        };
        assert_eq!(shown(all).len(), COMMANDS.len());
    }

    #[test]
    fn the_commands_doc_lists_exactly_the_registry() {
        let doc = include_str!("../../docs/commands.md");
        let mut documented = std::collections::BTreeSet::new();
        for row in doc.lines().filter(|l| l.starts_with("| `!")) {
            let first = row.split(" | ").next().unwrap_or("");
            for part in first.split('`').skip(1).step_by(2) {
                let word = part.trim_start_matches('!');
                let word = word.split([' ', '|', '[']).next().unwrap_or("");
                documented.insert(word.to_owned());
            }
        }
        let declared: std::collections::BTreeSet<String> = COMMANDS
            .iter()
            .flat_map(|s| std::iter::once(&s.name).chain(s.aliases))
            .map(|n| n.to_string())
            .collect();
        let missing: Vec<_> = declared.difference(&documented).collect();
        let stray: Vec<_> = documented.difference(&declared).collect();
        assert!(missing.is_empty(), "not in docs/commands.md: {missing:?}");
        assert!(
            stray.is_empty(),
            "docs/commands.md names no such command: {stray:?}"
        );
    }
}
