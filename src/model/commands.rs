//! What a chat command declares of itself (`Spec`): its name and aliases, whether it is about
//! the room or one agent, who may use it, what it does during a turn, whether it runs after
//! a crash, where it applies, and its help. Each command declares its `Spec` in its own file,
//! beside its handler (`core/channel/commands/` for one agent's, `core/gateway/commands/`
//! for the room's). Parsing (`core::command::parse`), the permission checks
//! (`core::gateway::dispatch`), what a running turn does with it
//! (`core::channel::turn_input`), what the next start does with it after a crash
//! (`core::gateway::recovery`), `!help` (`render::strings`) and `docs/commands.md` (a test
//! checks it) all read these declarations.

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

    const EXAMPLE: Spec = Spec {
        name: "login",
        aliases: &[],
        args: "[ID]",
        scope: Scope::Agent,
        who: Who::Admins,
        during_turn: DuringTurn::Refused,
        after_crash: AfterCrash::Reported,
        applies: Applies::Always,
        group: Group::Session,
        help: "sign the agent in",
        details: "Signs the agent in.",
    };

    #[test]
    fn help_shows_what_applies_to_whom() {
        let worktree = Spec {
            applies: Applies::Worktrees,
            who: Who::Allowed,
            ..EXAMPLE
        };
        let several = Spec {
            applies: Applies::SeveralAgents,
            who: Who::Allowed,
            ..EXAMPLE
        };
        let one = Audience::default();
        assert!(!EXAMPLE.shown_to(one), "admins only");
        assert!(!worktree.shown_to(one), "no worktrees here");
        assert!(!several.shown_to(one), "one agent");
        let all = Audience {
            several_agents: true,
            worktrees: true,
            admin: true,
        };
        assert!(EXAMPLE.shown_to(all) && worktree.shown_to(all) && several.shown_to(all));
    }
}
