//! Per-agent compatibility ("dialects"). Agents deviate from canonical ACP in small, known
//! ways; each deviation is normalised by one optional, pure function here, chosen by agent.
//! Canonical ACP is the empty dialect: no functions. Hooks never talk to the agent, hold
//! state or send events: the connection (shared code) owns transport, lifecycle and the
//! per-session facts a hook is given, and applies what the hook returns.

pub mod modes;

use crate::model::agent::{AgentEvent, ToolCallFields, ToolContent, ToolStatus};
use crate::model::ids::ToolCallId;
use crate::model::modes::KnownModes;

/// What the connection knows about a turn that the agent ended as `cancelled`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CancelledTurn {
    /// Whether Sidekicks sent `session/cancel` during the turn.
    pub cancel_requested: bool,
    /// Whether a permission request of the turn was answered with a reject option.
    pub refused: bool,
}

/// The compatibility functions of one agent. Every field is optional; `None` is canonical
/// ACP behaviour.
#[derive(Debug, Clone, Copy)]
pub struct Dialect {
    /// The dialect's name, for logs and `sidekicks check` (`acp` for the empty dialect).
    pub name: &'static str,
    /// Updates that are noise to drop (empty message chunks).
    pub skip_update: Option<fn(&AgentEvent) -> bool>,
    /// A tool call's fields as the room should see them (in announcements, updates and
    /// permission requests), when the agent puts something else there.
    pub tool_fields: Option<fn(ToolCallFields) -> ToolCallFields>,
    /// After a cancelled turn: the update that closes a tool call the agent left open
    /// (later updates for it are then dropped).
    pub close_after_cancel: Option<fn(&ToolCallId) -> ToolCallFields>,
    /// A JSON-RPC error that ended a prompt, in words for the room; `None` keeps the
    /// generic report.
    pub prompt_error: Option<fn(i64, &str) -> Option<String>>,
    /// Whether `fs/read_text_file` of a file that does not exist answers empty text
    /// instead of an error (an agent that reads a file before creating it fails otherwise).
    pub missing_file_reads_empty: bool,
    /// What its modes mean for approvals: which ask, the one sessions are put in, the
    /// permission options that switch the mode (`modes.rs`).
    pub modes: KnownModes,
    /// Whether it is offered JetBrains AIR's `asyncTasks` at `initialize`, so that it reports
    /// its background tasks (`acp/tasks.rs`). An adapter that reads the offer treats
    /// Sidekicks as an AIR client and may change more than tasks (Codex's then moves a
    /// command's output out of the standard fields): it is offered only where what changes
    /// is known to keep what Sidekicks reads.
    pub background_tasks: bool,
}

impl Default for Dialect {
    fn default() -> Self {
        ACP
    }
}

/// Canonical ACP.
pub const ACP: Dialect = Dialect {
    name: "acp",
    skip_update: None,
    tool_fields: None,
    close_after_cancel: None,
    prompt_error: None,
    missing_file_reads_empty: false,
    modes: KnownModes::UNKNOWN,
    background_tasks: false,
};

/// mm: ends a turn whose model keeps calling tools with a JSON-RPC error
/// (`-32603`, "exceeded maximum tool call iterations (40)") instead of a stop reason.
pub const MM: Dialect = Dialect {
    name: "mm",
    prompt_error: Some(tool_loop_error),
    ..ACP
};

/// Claude Code (through its ACP adapter): tool calls are left open when a turn is
/// cancelled; it reports background tasks only to a client that offers AIR's `asyncTasks`.
pub const CLAUDE_CODE: Dialect = Dialect {
    name: "claude-code",
    close_after_cancel: Some(cancelled_call),
    modes: modes::CLAUDE_CODE,
    background_tasks: true,
    ..ACP
};

/// Codex (through its ACP adapter): puts its approval prompt ("Proposed Amendment: …
/// Available Decisions: Approved ApprovedExecpolicyAmendment Abort") in the tool call's
/// content, where it reads as the command's output; and reports a command's output only as
/// a raw JSON record of the run (`call_id`, `process_id`, …, `formatted_output`).
pub const CODEX: Dialect = Dialect {
    name: "codex",
    tool_fields: Some(codex_tool_fields),
    modes: modes::CODEX,
    ..ACP
};

/// Gemini CLI: sends empty message and thought chunks; reads a file through the client
/// before writing it, and fails the write when a missing file is answered with an error.
pub const GEMINI: Dialect = Dialect {
    name: "gemini",
    skip_update: Some(empty_chunk),
    missing_file_reads_empty: true,
    modes: modes::GEMINI,
    ..ACP
};

/// Qwen Code: its modes are Gemini CLI's under other names.
pub const QWEN: Dialect = Dialect {
    name: "qwen",
    modes: modes::QWEN,
    ..ACP
};

/// GitHub Copilot's CLI (`copilot --acp`): its modes are URIs, and a config option
/// (`allow_all`) and slash commands switch its approvals off besides its modes.
pub const COPILOT: Dialect = Dialect {
    name: "copilot",
    modes: modes::COPILOT,
    ..ACP
};

/// Notifications some agents send instead of `current_mode_update` to say their session is
/// now in another mode (`params`: `sessionId`, `currentModeId`): Qwen Code 0.24's. Read as
/// a mode report wherever they come from, so the mode fence sees the switch.
pub const MODE_NOTIFICATIONS: &[&str] = &["qwen/notify/session/mode-update"];

/// The session and mode a notification of [`MODE_NOTIFICATIONS`] reports, if `method` is
/// one and its `params` say them.
pub fn mode_notification(method: &str, params: &serde_json::Value) -> Option<(String, String)> {
    if !MODE_NOTIFICATIONS.contains(&method) {
        return None;
    }
    let text = |key: &str| params.get(key)?.as_str().map(str::to_owned);
    Some((text("sessionId")?, text("currentModeId")?))
}

/// Mistral Vibe: its modes are its agent profiles, and it starts in one that edits files
/// without asking.
pub const VIBE: Dialect = Dialect {
    name: "vibe",
    modes: modes::VIBE,
    ..ACP
};

/// OpenCode, and Kilo CLI (a fork of it): its modes are its agents (`build`, `plan`, …);
/// whether it asks is set by its permission config (`docs/agents.md`), not by the mode.
pub const OPENCODE: Dialect = Dialect {
    name: "opencode",
    modes: KnownModes::UNRELATED,
    ..ACP
};

/// pi (through `pi-acp`): its modes are thinking levels; it asks only through an extension
/// (`docs/agents.md`).
pub const PI: Dialect = Dialect {
    name: "pi",
    modes: KnownModes::UNRELATED,
    ..ACP
};

/// fast-agent: its modes are the agents of its card; it asks when the client offers
/// terminals or files, whatever the mode.
pub const FAST_AGENT: Dialect = Dialect {
    name: "fast-agent",
    modes: KnownModes::UNRELATED,
    ..ACP
};

/// The demo agent (`sidekicks demo-agent`): with `--settings`, `ask` asks and `code` does
/// not; it runs background tasks (`%background`) as Claude Code's adapter reports them.
pub const DEMO: Dialect = Dialect {
    name: "demo",
    modes: modes::DEMO,
    background_tasks: true,
    ..ACP
};

/// Every dialect, by the name used in the config (`dialect = "…"`).
pub const ALL: [Dialect; 12] = [
    ACP,
    MM,
    CLAUDE_CODE,
    CODEX,
    GEMINI,
    QWEN,
    VIBE,
    COPILOT,
    OPENCODE,
    PI,
    FAST_AGENT,
    DEMO,
];

/// The dialect named `name` in the config, if there is one.
pub fn named(name: &str) -> Option<Dialect> {
    ALL.into_iter().find(|d| d.name == name)
}

/// The dialect for an agent: the configured one, else one recognised from the agent's
/// configured ID or the name it gives at `initialize`, else canonical ACP.
pub fn for_agent(configured: Option<&str>, agent_id: &str, agent_name: Option<&str>) -> Dialect {
    match configured.and_then(named) {
        Some(dialect) => dialect,
        None => recognised(&[Some(agent_id), agent_name]),
    }
}

/// The dialect an agent is expected to speak before it has given its name, for what
/// `initialize` offers it: the configured one, else one recognised from its configured ID or
/// its command line (each word; the program's file name, alone and joined to the first
/// argument, so that `sidekicks demo-agent` is the demo).
pub fn expected(
    configured: Option<&str>,
    agent_id: &str,
    program: &str,
    args: &[String],
) -> Dialect {
    if let Some(dialect) = configured.and_then(named) {
        return dialect;
    }
    let file = program.rsplit('/').next().unwrap_or(program);
    let joined = args.first().map(|first| format!("{file}-{first}"));
    let mut names = vec![Some(agent_id), Some(program), Some(file), joined.as_deref()];
    names.extend(args.iter().map(|a| Some(a.as_str())));
    recognised(&names)
}

/// The dialect one of `names` is recognised as, else canonical ACP.
fn recognised(names: &[Option<&str>]) -> Dialect {
    let known = |test: fn(&str) -> bool| {
        names
            .iter()
            .flatten()
            .any(|n| test(&n.to_ascii_lowercase()))
    };
    if known(|n| n == "mm" || n.starts_with("mm-")) {
        MM
    } else if known(|n| n.contains("claude")) {
        CLAUDE_CODE
    } else if known(|n| n.contains("codex")) {
        CODEX
    } else if known(|n| n.contains("gemini")) {
        GEMINI
    } else if known(|n| n.contains("qwen")) {
        QWEN
    } else if known(|n| n.contains("vibe")) {
        VIBE
    } else if known(|n| n.contains("copilot")) {
        COPILOT
    } else if known(|n| n.contains("opencode") || n.contains("kilo")) {
        OPENCODE
    } else if known(|n| n == "pi" || n.starts_with("pi-") || n.contains("pi-coding-agent")) {
        PI
    } else if known(|n| n.contains("fast-agent")) {
        FAST_AGENT
    } else if known(|n| n == "sidekicks-demo-agent") {
        DEMO
    } else {
        ACP
    }
}

fn tool_loop_error(code: i64, message: &str) -> Option<String> {
    if code != -32603 || !message.contains("maximum tool call iterations") {
        return None;
    }
    let limit = message
        .rsplit_once('(')
        .and_then(|(_, rest)| rest.trim_end_matches(')').parse::<u32>().ok());
    let tries = match limit {
        Some(n) => format!("{n} tool calls"),
        None => "its limit of tool calls".to_owned(),
    };
    Some(format!(
        "it gave up after {tries} in one turn without finishing (often a tool refused again \
         and again). Allow the tool, or say what to do differently."
    ))
}

fn cancelled_call(id: &ToolCallId) -> ToolCallFields {
    ToolCallFields::status_only(id, ToolStatus::Cancelled)
}

/// The marker of Codex's approval prompt, which lists the decisions its options stand for.
const APPROVAL_PROMPT: &str = "Available Decisions:";

fn codex_tool_fields(mut tool: ToolCallFields) -> ToolCallFields {
    if let Some(content) = &mut tool.content {
        content.retain(|c| !matches!(c, ToolContent::Text(t) if t.contains(APPROVAL_PROMPT)));
    }
    // The record of a run: what the command printed is its output.
    if let Some(record) = tool.raw_output.as_ref().and_then(|o| o.as_object()) {
        let printed = ["formatted_output", "aggregated_output"]
            .iter()
            .find_map(|k| record.get(*k).and_then(|v| v.as_str()));
        if let Some(printed) = printed {
            tool.raw_output = Some(serde_json::Value::String(printed.to_owned()));
        }
    }
    tool
}

fn empty_chunk(event: &AgentEvent) -> bool {
    matches!(event, AgentEvent::MessageChunk(t) | AgentEvent::ThoughtChunk(t) if t.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_vendors_mode_notification_reads_as_a_mode_report() {
        let params = serde_json::json!({"v": 1, "sessionId": "s1", "currentModeId": "yolo"});
        assert_eq!(
            mode_notification("qwen/notify/session/mode-update", &params),
            Some(("s1".into(), "yolo".into()))
        );
        assert_eq!(mode_notification("qwen/notify/other", &params), None);
        let partial = serde_json::json!({"sessionId": "s1"});
        assert_eq!(
            mode_notification("qwen/notify/session/mode-update", &partial),
            None
        );
    }

    #[test]
    fn the_dialect_is_the_configured_one_else_recognised_else_canonical() {
        let table = [
            (Some("gemini"), "claude", None, "gemini"),
            (Some("acp"), "claude", None, "acp"),
            (None, "claude", None, "claude-code"),
            (None, "helper", Some("claude-code-acp"), "claude-code"),
            (None, "riker", Some("mm"), "mm"),
            (None, "Codex", None, "codex"),
            (None, "helper", Some("gemini-cli"), "gemini"),
            (None, "mmx", Some("sidekicks-demo-agent"), "demo"),
            (None, "qwen", Some("qwen-code"), "qwen"),
            (None, "helper", Some("@mistralai/mistral-vibe"), "vibe"),
            (None, "opencode", Some("OpenCode"), "opencode"),
            (None, "kilo", Some("Kilo"), "opencode"),
            (None, "pi", Some("pi-acp"), "pi"),
            (None, "helper", Some("pi-acp"), "pi"),
            (None, "pipeline", Some("pipeline-agent"), "acp"),
            (None, "fast", Some("fast-agent-mcp"), "fast-agent"),
            (None, "helper", Some("some-agent"), "acp"),
        ];
        for (configured, id, name, expected) in table {
            assert_eq!(
                for_agent(configured, id, name).name,
                expected,
                "{configured:?} {id} {name:?}"
            );
        }
        assert!(named("klingon").is_none());
    }

    #[test]
    fn before_initialize_the_dialect_comes_from_the_config_the_id_or_the_command_line() {
        let words = |w: &[&str]| w.iter().map(|a| a.to_string()).collect::<Vec<_>>();
        let claude = words(&["/opt/agents/@agentclientprotocol/claude-agent-acp/dist/index.js"]);
        let table = [
            (
                None,
                "helper",
                "/usr/bin/node",
                claude.clone(),
                "claude-code",
            ),
            (None, "helper", "/usr/local/bin/codex-acp", vec![], "codex"),
            (
                None,
                "helper",
                "/usr/bin/sidekicks",
                words(&["demo-agent"]),
                "demo",
            ),
            (None, "claude", "/usr/bin/node", vec![], "claude-code"),
            (Some("acp"), "helper", "/usr/bin/node", claude, "acp"),
            (
                None,
                "helper",
                "/usr/bin/sidekicks",
                words(&["serve"]),
                "acp",
            ),
            (None, "helper", "my-agent", vec![], "acp"),
        ];
        for (configured, id, program, args, dialect) in table {
            let got = expected(configured, id, program, &args);
            assert_eq!(got.name, dialect, "{configured:?} {id} {program} {args:?}");
        }
    }

    #[test]
    fn background_tasks_are_offered_only_where_the_adapter_keeps_what_we_read() {
        let offered: Vec<&str> = (ALL.iter())
            .filter(|d| d.background_tasks)
            .map(|d| d.name)
            .collect();
        assert_eq!(offered, ["claude-code", "demo"]);
    }

    #[test]
    fn canonical_acp_has_no_hooks() {
        let d = ACP;
        assert!(d.skip_update.is_none() && d.tool_fields.is_none());
        assert!(d.close_after_cancel.is_none());
        assert!(d.prompt_error.is_none());
    }

    #[test]
    fn mm_tool_loop_errors_become_a_clear_failure_message() {
        let hook = MM.prompt_error.unwrap();
        let text = hook(-32603, "exceeded maximum tool call iterations (40)").unwrap();
        assert!(
            text.starts_with("it gave up after 40 tool calls in one turn"),
            "{text}"
        );
        assert!(text.contains("Allow the tool"));
        assert_eq!(hook(-32603, "model unavailable"), None);
        assert_eq!(
            hook(-32000, "exceeded maximum tool call iterations (40)"),
            None
        );
    }

    #[test]
    fn codex_approval_prompt_is_not_shown_as_output() {
        let hook = CODEX.tool_fields.unwrap();
        let prompt = "Proposed Amendment: [\"ls\"]\nAvailable Decisions: Approved ApprovedExecpolicyAmendment Abort";
        let tool = ToolCallFields {
            id: "call-1".into(),
            content: Some(vec![
                ToolContent::Text(prompt.into()),
                ToolContent::Text("real output".into()),
            ]),
            ..ToolCallFields::default()
        };
        let shown = hook(tool);
        assert_eq!(
            shown.content,
            Some(vec![ToolContent::Text("real output".into())])
        );
        let run = ToolCallFields {
            raw_output: Some(serde_json::json!({"call_id": "c", "process_id": "9",
                "aggregated_output": "done\n", "formatted_output": "done\n", "exit_code": 0})),
            ..ToolCallFields::default()
        };
        assert_eq!(hook(run).raw_output, Some(serde_json::json!("done\n")));
        assert!(ACP.tool_fields.is_none(), "other agents' content is theirs");
    }

    #[test]
    fn tool_calls_left_open_after_a_cancel_are_closed_as_cancelled() {
        let hook = CLAUDE_CODE.close_after_cancel.unwrap();
        let update = hook(&"call-7".into());
        assert_eq!(update.id, "call-7");
        assert_eq!(update.status, Some(ToolStatus::Cancelled));
        assert_eq!(update.title, None, "only the status changes");
    }

    #[test]
    fn empty_chunks_are_skipped() {
        let hook = GEMINI.skip_update.unwrap();
        assert!(hook(&AgentEvent::MessageChunk(String::new())));
        assert!(hook(&AgentEvent::ThoughtChunk(String::new())));
        assert!(!hook(&AgentEvent::MessageChunk(" ".into())));
        assert!(!hook(&AgentEvent::Plan(vec![])));
    }
}
