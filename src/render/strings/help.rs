//! `!help`: who is here, how messages find them, the commands that apply in this room to
//! the person asking (from the command registry), and each agent's own slash commands; and
//! `!help COMMAND`. Markdown: it is posted with its HTML.

use super::{AgentLine, QUEUED_REACTION, agent_commands};
use crate::model::commands::{Audience, Group, Spec};

/// What `!help` lists a group's commands under.
fn group_title(group: Group) -> &'static str {
    match group {
        Group::Conversation => "Working with the agent",
        Group::Session => "The agent's session",
        Group::Approvals => "Answering a permission request (as a reply to it)",
        Group::Room => "This room",
        Group::Schedules => "Prompts that run by themselves",
    }
}

/// `!name args`, as help writes a command.
fn usage(prefix: &str, spec: &Spec) -> String {
    match spec.args {
        "" => format!("`{prefix}{}`", spec.name),
        args => format!("`{prefix}{} {args}`", spec.name),
    }
}

/// Answer to `!help`: who is here, how messages find them, the commands (of `commands`)
/// shown to `audience`, and each agent's own slash commands.
pub fn help(
    prefix: &str,
    agents: &[AgentLine],
    default: Option<&str>,
    audience: Audience,
    commands: &[&Spec],
) -> String {
    let several = agents.len() > 1;
    let names: Vec<String> = agents
        .iter()
        .map(|a| format!("{} (`{}`)", a.name, a.id))
        .collect();
    let mut text = format!(
        "Sidekicks brings coding agents into this room. Here: {}.\n",
        names.join(", ")
    );
    if several {
        text.push_str(
            "Write to one by starting with its name (`name: …` or `@name …`), by mentioning \
             it, or by replying to one of its messages; a message can address several. ",
        );
        text.push_str(&match default {
            Some(d) => format!("Messages addressed to nobody go to {d} (the default).\n"),
            None => format!(
                "Messages addressed to nobody go to nobody (choose a default agent with \
                 `{prefix}default NAME`).\n"
            ),
        });
    } else if let Some(only) = agents.first() {
        text.push_str(&format!("Every message here goes to {}.\n", only.name));
    }
    text.push_str(&format!(
        "Messages sent while an agent works are queued ({QUEUED_REACTION}) and answered in order.\n"
    ));
    for group in Group::ALL {
        let shown: Vec<&Spec> = (commands.iter().copied())
            .filter(|s| s.group == group && s.shown_to(audience))
            .collect();
        if shown.is_empty() {
            continue;
        }
        text.push_str(&format!("\n**{}**\n", group_title(group)));
        for spec in shown {
            text.push_str(&format!("- {}: {}\n", usage(prefix, spec), spec.help));
        }
    }
    text.push_str(&format!("\n`{prefix}help COMMAND` tells more about one."));
    if several {
        let first = agents.first().map(|a| a.id.as_str()).unwrap_or("NAME");
        text.push_str(&format!(
            " Name the agent after a command for one agent, e.g. `{prefix}new {first}`."
        ));
    }
    for agent in agents.iter().filter(|a| !a.commands.is_empty()) {
        text.push_str("\n\n");
        text.push_str(&agent_commands(agent, several));
    }
    text
}

/// Answer to `!help WORD`: that command's usage, names and details (of those in
/// `commands`); or that there is none.
pub fn help_for(prefix: &str, word: &str, commands: &[&Spec]) -> String {
    let word = word.trim_start_matches(prefix);
    let found = (commands.iter()).find(|s| s.name == word || s.aliases.contains(&word));
    let Some(spec) = found else {
        return format!("There is no command `{prefix}{word}`: `{prefix}help` lists them.");
    };
    let mut text = format!("{}: {}", usage(prefix, spec), spec.details);
    if !spec.aliases.is_empty() {
        let aliases: Vec<String> = (spec.aliases.iter())
            .map(|a| format!("`{prefix}{a}`"))
            .collect();
        text.push_str(&format!("\nAlso written {}.", aliases.join(", ")));
    }
    text
}
