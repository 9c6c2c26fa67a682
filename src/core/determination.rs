//! What a message asks of the agent whose user saw it, decided from the message and the
//! room alone: pure, so every agent's copy of a message decides alike, and table-tested.
//! `core::gateway::dispatch` carries the decision out (admission, then the channel or a
//! notice). See `docs/rooms.md` and `docs/commands.md`.

use super::command::{self, Command, CommandSet};
use super::routing::{self, Addressing, Member};
use crate::model::ids::AgentId;

/// What the agent that saw a message is to do with it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Determination {
    /// Nothing: it is for other agents, or another agent speaks for the room.
    NotMine,
    /// Answer it: a prompt for this agent.
    Prompt,
    /// A slash command naming no agent, where several are and none is the default: this
    /// agent, which speaks for the room, says how to name one.
    SlashNeedsAgent(String),
    /// A command about the room, answered once: by this agent, the room's responder.
    RoomCommand(Command),
    /// A command for this agent (its name taken off, if it was given as the first word).
    AgentCommand(Command),
    /// A command naming, as its word, no agent of the room: this agent says so.
    NoSuchAgent(String),
    /// A command for one agent that names none, where several are and none is the default:
    /// this agent, which speaks for the room, sorts it out.
    CommandForNobody(Command),
}

/// What `body` (addresses already taken off) asks of agent `me`, in a room whose agents are
/// `members` (sorted by ID), addressed as `addressing` says, with `default_agent`; the
/// commands there are, `known`.
pub fn determine(
    (prefix, known): (&str, &CommandSet),
    body: &str,
    me: &AgentId,
    members: &[Member],
    addressing: &Addressing,
    default_agent: Option<&AgentId>,
) -> Determination {
    // The first agent by ID answers for the room when a message names no agent.
    let speaks_for_room = members.first().is_some_and(|m| &m.agent_id == me);
    let Some(mut command) = command::parse(prefix, body, known) else {
        let targets = routing::targets(addressing, members, default_agent);
        if targets.is_empty() {
            return match routing::slash_command(body) {
                Some(slash) if speaks_for_room => Determination::SlashNeedsAgent(slash.to_owned()),
                _ => Determination::NotMine,
            };
        }
        return match targets.iter().any(|t| t == me) {
            true => Determination::Prompt,
            false => Determination::NotMine,
        };
    };
    if !command.is_for_agents() {
        // The agent named first answers, else the first by ID: never the default agent,
        // which the command itself may change before another copy is read.
        let responder = addressing
            .named
            .first()
            .or_else(|| members.first().map(|m| &m.agent_id));
        return match responder.is_some_and(|r| r == me) {
            true => Determination::RoomCommand(command),
            false => Determination::NotMine,
        };
    }
    let mut named = addressing.named.clone();
    let by_word = command.take_agent(|word| {
        members
            .iter()
            .find(|m| m.is_named(word))
            .map(|m| m.agent_id.clone())
    });
    if let Some(agent) = by_word
        && !named.contains(&agent)
    {
        named.push(agent);
    }
    // `!new ghost`: a name, but of no agent here. Said once, by the first agent.
    if let Some(word) = command.stray_word() {
        return match speaks_for_room {
            true => Determination::NoSuchAgent(word.to_owned()),
            false => Determination::NotMine,
        };
    }
    let targets = match named.is_empty() {
        false => named,
        true => routing::targets(&Addressing::default(), members, default_agent),
    };
    if targets.is_empty() {
        return match speaks_for_room {
            true => Determination::CommandForNobody(command),
            false => Determination::NotMine,
        };
    }
    match targets.iter().any(|t| t == me) {
        true => Determination::AgentCommand(command),
        false => Determination::NotMine,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::command::registry::{
        AfterCrash, Applies, DuringTurn, Group, Scope, Spec, Who,
    };
    use crate::model::ids::UserId;
    use Determination::*;

    fn members(ids: &[&str]) -> Vec<Member> {
        ids.iter()
            .map(|id| Member {
                agent_id: (*id).into(),
                user_id: UserId::new(format!("@{id}:x")),
                display_name: id.to_uppercase(),
            })
            .collect()
    }

    fn named(ids: &[&str]) -> Addressing {
        Addressing {
            named: ids.iter().map(|id| (*id).into()).collect(),
            text: String::new(),
        }
    }

    const STOP: Spec = Spec {
        name: "stop",
        aliases: &[],
        args: "",
        scope: Scope::Agent,
        who: Who::Approvers,
        during_turn: DuringTurn::StopsTheTurn,
        after_crash: AfterCrash::Reported,
        applies: Applies::Always,
        group: Group::Conversation,
        help: "stop",
        details: "Stops.",
    };
    const NEW: Spec = Spec {
        name: "new",
        during_turn: DuringTurn::Refused,
        ..STOP
    };
    const HELP: Spec = Spec {
        name: "help",
        args: "[COMMAND]",
        scope: Scope::Room,
        ..STOP
    };

    #[test]
    fn every_copy_of_a_message_decides_alike() {
        let known = CommandSet::new(vec![&STOP, &NEW, &HELP]);
        let two = members(&["claude", "codex"]);
        let one = members(&["claude"]);
        let nobody = named(&[]);
        // (body, agent that saw it, members, named, default agent, determination)
        type Case<'a> = (
            &'a str,
            &'a str,
            &'a [Member],
            Addressing,
            Option<&'a str>,
            Determination,
        );
        let table: Vec<Case> = vec![
            ("hello", "claude", &one, nobody.clone(), None, Prompt),
            ("hello", "claude", &two, nobody.clone(), None, NotMine),
            (
                "hello",
                "codex",
                &two,
                nobody.clone(),
                Some("codex"),
                Prompt,
            ),
            (
                "hello",
                "claude",
                &two,
                nobody.clone(),
                Some("codex"),
                NotMine,
            ),
            ("hello", "codex", &two, named(&["codex"]), None, Prompt),
            (
                "hello",
                "claude",
                &two,
                named(&["claude", "codex"]),
                None,
                Prompt,
            ),
            (
                "/review",
                "claude",
                &two,
                nobody.clone(),
                None,
                SlashNeedsAgent("review".into()),
            ),
            ("/review", "codex", &two, nobody.clone(), None, NotMine),
            (
                "!help",
                "claude",
                &two,
                nobody.clone(),
                None,
                RoomCommand(Command::new(&HELP, &[])),
            ),
            ("!help", "codex", &two, nobody.clone(), None, NotMine),
            (
                "!help",
                "codex",
                &two,
                named(&["codex"]),
                None,
                RoomCommand(Command::new(&HELP, &[])),
            ),
            (
                "!stop",
                "claude",
                &one,
                nobody.clone(),
                None,
                AgentCommand(Command::new(&STOP, &[])),
            ),
            (
                "!stop codex",
                "codex",
                &two,
                nobody.clone(),
                None,
                AgentCommand(Command::new(&STOP, &[])),
            ),
            ("!stop codex", "claude", &two, nobody.clone(), None, NotMine),
            (
                "!new ghost",
                "claude",
                &two,
                nobody.clone(),
                None,
                NoSuchAgent("ghost".into()),
            ),
            ("!new ghost", "codex", &two, nobody.clone(), None, NotMine),
            (
                "!stop",
                "claude",
                &two,
                nobody.clone(),
                None,
                CommandForNobody(Command::new(&STOP, &[])),
            ),
            ("!stop", "codex", &two, nobody.clone(), None, NotMine),
            (
                "!stop",
                "codex",
                &two,
                nobody.clone(),
                Some("codex"),
                AgentCommand(Command::new(&STOP, &[])),
            ),
        ];
        for (body, me, room, addressing, default, expected) in table {
            assert_eq!(
                determine(
                    ("!", &known),
                    body,
                    &AgentId::from(me),
                    room,
                    &addressing,
                    default.map(AgentId::from).as_ref()
                ),
                expected,
                "{body:?} seen by {me}"
            );
        }
    }
}
