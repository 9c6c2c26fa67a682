//! The commands as a whole: every name one command's, the declarations parsed and listed
//! as they say, and `docs/commands.md` naming exactly them.

use super::*;
use crate::core::command::parse;
use crate::core::command::registry::Audience;
use crate::core::poll::Reply;
use crate::render::strings::{AgentLine, help, help_for};

/// The command named `name`, with `words` after it.
fn c(name: &str, words: &[&str]) -> Command {
    let spec = known().find(name).expect("a command of ours");
    Command::new(spec, words)
}

#[test]
fn every_name_is_one_commands() {
    let mut names = std::collections::HashSet::new();
    for spec in known().specs() {
        for name in std::iter::once(&spec.name).chain(spec.aliases) {
            assert!(names.insert(*name), "{name} twice");
            assert_eq!(known().find(name).map(|s| s.name), Some(spec.name));
        }
        assert!(
            !spec.help.is_empty() && !spec.details.is_empty(),
            "{}",
            spec.name
        );
    }
}

#[test]
fn each_command_is_declared_on_the_side_of_its_scope() {
    use crate::core::command::registry::Scope;
    for command in ALL {
        assert_eq!(command.spec.scope, Scope::Room, "{}", command.spec.name);
    }
    for command in agent_commands::ALL {
        assert_eq!(command.spec.scope, Scope::Agent, "{}", command.spec.name);
    }
}

#[test]
fn the_commands_doc_lists_exactly_the_registry() {
    let doc = include_str!("../../../../docs/commands.md");
    let mut documented = std::collections::BTreeSet::new();
    for row in doc.lines().filter(|l| l.starts_with("| `!")) {
        let first = row.split(" | ").next().unwrap_or("");
        for part in first.split('`').skip(1).step_by(2) {
            let word = part.trim_start_matches('!');
            let word = word.split([' ', '|', '[']).next().unwrap_or("");
            documented.insert(word.to_owned());
        }
    }
    let declared: std::collections::BTreeSet<String> = (known().specs().iter())
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

#[test]
fn stop_task_names_every_background_task_or_one_by_number() {
    let table: &[(Command, Option<Option<usize>>)] = &[
        (c("stop", &[]), None),
        (c("stop", &["task"]), Some(None)),
        (c("stop", &["TASK", "2"]), Some(Some(2))),
        (c("stop", &["task", "two"]), Some(Some(0))),
        (c("stop", &["tasks"]), None),
        (c("new", &["task"]), None),
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
        let command = parse("!", body, known()).expect(body);
        assert_eq!(command.runs_after_crash(), reruns, "{body}");
    }
}

#[test]
fn parse_table() {
    let table: &[(&str, &str, Option<Command>)] = &[
        ("!", "!stop", Some(c("stop", &[]))),
        ("!", "  !STOP  ", Some(c("stop", &[]))),
        ("!", "!cancel claude", Some(c("stop", &["claude"]))),
        ("!", "!help", Some(c("help", &[]))),
        ("!", "!help Mode", Some(c("help", &["Mode"]))),
        ("!", "!?", Some(c("help", &[]))),
        ("!", "!agents", Some(c("agents", &[]))),
        ("!", "!status", Some(c("status", &[]))),
        ("!", "!threads", Some(c("threads", &[]))),
        ("!", "!threads New", Some(c("threads", &["New"]))),
        ("!", "!allow", Some(c("allow", &[]))),
        ("!", "!Always", Some(c("always", &[]))),
        ("!", "!deny", Some(c("deny", &[]))),
        ("!", "!reject", Some(c("reject", &[]))),
        ("!", "!allow claude", Some(c("allow", &[]))),
        ("!", "!show", Some(c("show", &[]))),
        ("!", "!show Tools", Some(c("show", &["Tools"]))),
        ("!", "!new", Some(c("new", &[]))),
        ("!", "!reset codex", Some(c("new", &["codex"]))),
        ("!", "!default", Some(c("default", &[]))),
        ("!", "!default Codex", Some(c("default", &["Codex"]))),
        ("!", "!handoff ON", Some(c("handoff", &["ON"]))),
        ("!", "!logs", Some(c("logs", &[]))),
        ("!", "!stderr claude", Some(c("logs", &["claude"]))),
        ("!", "!commands", Some(c("commands", &[]))),
        ("!", "!mode plan", Some(c("mode", &["plan"]))),
        (
            "!",
            "!mode claude plan",
            Some(c("mode", &["claude", "plan"])),
        ),
        ("!", "!model Large", Some(c("model", &["Large"]))),
        ("!", "!set", Some(c("set", &[]))),
        ("!", "!set effort high", Some(c("set", &["effort", "high"]))),
        ("!", "!options", Some(c("set", &[]))),
        ("!", "!worktree", Some(c("worktree", &[]))),
        ("!", "!file src/main.rs", Some(c("file", &["src/main.rs"]))),
        ("!", "!FILE a b.txt", Some(c("file", &["a", "b.txt"]))),
        (
            "!",
            "!worktree claude remove",
            Some(c("worktree", &["claude", "remove"])),
        ),
        ("!", "stop", None),
        ("!", "please !stop", None),
        ("!", "! stop", None),
        ("!", "!", None),
        ("!", "", None),
        ("!", "/stop", None),
        ("sk:", "sk:stop", Some(c("stop", &[]))),
        ("sk:", "!stop", None),
    ];
    for (prefix, body, expected) in table {
        assert_eq!(
            &parse(prefix, body, known()),
            expected,
            "{prefix:?} {body:?}"
        );
    }
    let unknown = parse("!", "!Frobnicate x", known()).expect("a command, of no kind");
    assert_eq!((unknown.spec(), unknown.word()), (None, "frobnicate"));
    assert_eq!(
        parse("!", "!help Mode", known())
            .unwrap()
            .choice()
            .as_deref(),
        Some("mode")
    );
    let answers = |body: &str| {
        let command = parse("!", body, known()).unwrap();
        agent_commands::find(&command).and_then(|c| c.answers.clone())
    };
    assert_eq!(answers("!deny"), Some(Reply::Deny));
    assert_eq!(answers("!mode"), None);
}

#[test]
fn an_agent_name_is_taken_off_commands_for_agents_only() {
    let is_agent = |w: &str| (w == "claude").then(|| "claude".to_owned());
    let table: &[(Command, Option<&str>, Command)] = &[
        (
            c("mode", &["claude", "plan"]),
            Some("claude"),
            c("mode", &["plan"]),
        ),
        (c("mode", &["plan"]), None, c("mode", &["plan"])),
        (c("stop", &["claude"]), Some("claude"), c("stop", &[])),
        (c("stop", &[]), None, c("stop", &[])),
        (c("help", &[]), None, c("help", &[])),
        (c("default", &["claude"]), None, c("default", &["claude"])),
    ];
    for (command, agent, rest) in table {
        let mut taken = command.clone();
        assert_eq!(taken.take_agent(is_agent).as_deref(), *agent, "{command:?}");
        assert_eq!(&taken, rest, "{command:?}");
    }
    assert_eq!(c("stop", &["ghost"]).stray_word(), Some("ghost"));
    assert_eq!(c("stop", &["task"]).stray_word(), None, "background tasks");
    assert_eq!(c("stop", &["Task", "2"]).stray_word(), None);
    assert_eq!(
        c("mode", &["plan"]).stray_word(),
        None,
        "a mode, not a name"
    );
    assert_eq!(c("new", &[]).stray_word(), None);
    assert_eq!(c("default", &["ghost"]).stray_word(), None, "the room's");
    assert!(c("stop", &[]).is_for_agents());
    assert!(c("allow", &[]).is_for_agents());
    assert!(!c("status", &[]).is_for_agents());
    assert!(!c("default", &[]).is_for_agents());
    assert!(!parse("!", "!what", known()).unwrap().is_for_agents());
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
        let command = parse("!", body, known()).expect(body);
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
        let parsed = parse(&prefix, &body, known());
        if parsed.is_some() {
            proptest::prop_assert!(body.trim().starts_with(prefix.as_str()));
        }
    }
}

fn line(name: &str) -> AgentLine {
    AgentLine {
        name: format!("{name} agent"),
        id: name.into(),
        commands: vec![],
    }
}

#[test]
fn help_lists_what_applies_here_grouped() {
    let alone = help(
        "!",
        &[line("demo")],
        None,
        Audience::default(),
        known().specs(),
    );
    assert!(alone.contains("**Working with the agent**"), "{alone}");
    assert!(
        alone.contains("- `!stop`: stop the running turn"),
        "{alone}"
    );
    assert!(alone.contains("- `!mode [MODE]`: "), "{alone}");
    assert!(!alone.contains("`!login"), "admins only: {alone}");
    assert!(!alone.contains("`!worktree"), "no worktree here: {alone}");
    assert!(!alone.contains("`!default"), "one agent: {alone}");
    let admin = Audience {
        several_agents: true,
        worktrees: true,
        admin: true,
    };
    let all = help(
        "!",
        &[line("a"), line("b")],
        Some("a agent"),
        admin,
        known().specs(),
    );
    for spec in known().specs() {
        assert!(
            all.contains(&format!("`!{}", spec.name)),
            "{}: {all}",
            spec.name
        );
    }
    assert!(all.contains("e.g. `!new a`"), "{all}");
    let html = crate::render::markdown::to_html(&all, Default::default()).unwrap();
    assert!(
        html.contains("<strong>This room</strong>") && html.contains("<li>"),
        "{html}"
    );
}

#[test]
fn help_for_one_command() {
    let mode = help_for("!", "mode", known().specs());
    assert!(
        mode.starts_with("`!mode [MODE]`: Lists the session's modes"),
        "{mode}"
    );
    let stop = help_for("!", "cancel", known().specs());
    assert!(
        stop.starts_with("`!stop`: ") && stop.contains("Also written `!cancel`."),
        "{stop}"
    );
    assert!(
        help_for("!", "frobnicate", known().specs())
            .starts_with("There is no command `!frobnicate`")
    );
}
