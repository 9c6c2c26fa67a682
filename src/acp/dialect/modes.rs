//! What each known agent's modes mean for approvals: which ask before the agent edits files
//! or runs commands, the one sessions are put in, and the permission options that switch
//! the mode as a side effect. Read from the adapters' own code (versions in
//! `docs/agents.md`); a mode not listed here as asking is treated as one that does not ask.

use crate::model::agent::ToolKind;
use crate::model::modes::{ApprovalOption, KnownModes, OptionMode};

/// Claude Code (`@agentclientprotocol/claude-agent-acp` 0.101; the `@zed-industries`
/// adapter before it): `default` ("Manual: always ask before making changes") and `plan`
/// (read-only planning) ask; `acceptEdits`, `auto` (the adapter's own default since 0.100:
/// "Claude handles permission decisions"), `bypassPermissions` and `dontAsk` do not.
/// Leaving plan mode is a permission request whose options switch the mode
/// (`permissions/options/tools.js`).
pub const CLAUDE_CODE: KnownModes = KnownModes {
    decide_asking: true,
    asking: &["default", "plan"],
    not_asking: &["acceptEdits", "auto", "bypassPermissions", "dontAsk"],
    initial: Some("default"),
    option_modes: &[
        option_mode("exit-plan-bypass", "bypassPermissions"),
        option_mode("exit-plan-clear-bypass", "bypassPermissions"),
        option_mode("exit-plan-auto", "auto"),
        option_mode("exit-plan-clear-auto", "auto"),
        option_mode("exit-plan-accept-edits", "acceptEdits"),
        option_mode("exit-plan-clear-accept-edits", "acceptEdits"),
        option_mode("exit-plan-default", "default"),
    ],
    ..KnownModes::UNKNOWN
};

/// Codex (`@agentclientprotocol/codex-acp` 2.x, `src/AgentMode.ts`): only `read-only`
/// ("Requires approval to edit files and access the internet") asks before a command writes;
/// `workspace-write` edits and runs commands in the workspace unasked, `agent` (its default:
/// "Auto review") asks only for what it judges unsafe, `agent-full-access` never asks.
/// `auto` and `full-access` are the names of `@zed-industries/codex-acp` 0.16; permission
/// profiles (`permission-profile:…`) are the operator's own, so unknown here.
pub const CODEX: KnownModes = KnownModes {
    decide_asking: true,
    asking: &["read-only"],
    not_asking: &[
        "workspace-write",
        "agent",
        "agent-full-access",
        "auto",
        "full-access",
    ],
    initial: Some("read-only"),
    option_modes: &[],
    ..KnownModes::UNKNOWN
};

/// Gemini CLI (0.61, `buildAvailableModes`): `default` ("Prompts for approval") and `plan`
/// ("Read-only mode") ask; `autoEdit` and `yolo` do not. "Allow for this session" on an edit
/// turns `autoEdit` on for the whole session (`isAutoEditTransition`).
pub const GEMINI: KnownModes = KnownModes {
    decide_asking: true,
    asking: &["default", "plan"],
    not_asking: &["autoEdit", "yolo"],
    initial: Some("default"),
    option_modes: &[OptionMode {
        option: "proceed_always",
        kind: Some(ToolKind::Edit),
        mode: "autoEdit",
    }],
    ..KnownModes::UNKNOWN
};

/// Qwen Code (0.24, a fork of Gemini CLI; 0.15 before it): `default` ("Require approval for
/// file edits or shell commands") and `plan` (analyse only) ask; `auto-edit`, `auto` ("LLM
/// classifier auto-approves safe actions", where 0.24 starts) and `yolo` do not. Any
/// "always" answer on an edit turns `auto-edit` on, without telling the client; in `auto`,
/// "proceed once and switch to default" puts it back in `default`. Its "always allow" for a
/// command (`proceed_always_project`, `proceed_always_user`) writes a rule ("echo *") into
/// the project's or the user's settings, which outlasts the session: admins only. It
/// reports its own switches as `qwen/notify/session/mode-update`
/// ([`super::MODE_NOTIFICATIONS`]).
pub const QWEN: KnownModes = KnownModes {
    decide_asking: true,
    asking: &["default", "plan"],
    not_asking: &["auto-edit", "auto", "yolo"],
    initial: Some("default"),
    option_modes: &[
        OptionMode {
            option: "proceed_always",
            kind: Some(ToolKind::Edit),
            mode: "auto-edit",
        },
        OptionMode {
            option: "proceed_once_and_switch_to_default",
            kind: None,
            mode: "default",
        },
    ],
    lasting_options: &["proceed_always_project", "proceed_always_user"],
    ..KnownModes::UNKNOWN
};

/// The mode IDs GitHub Copilot's CLI gives, URIs on the protocol's site. The protocol does
/// not define standard modes (its session-modes page has no such anchors): these are
/// Copilot's own IDs, read like any agent's.
const COPILOT_AGENT: &str = "https://agentclientprotocol.com/protocol/session-modes#agent";
const COPILOT_PLAN: &str = "https://agentclientprotocol.com/protocol/session-modes#plan";
const COPILOT_AUTOPILOT: &str = "https://agentclientprotocol.com/protocol/session-modes#autopilot";

/// GitHub Copilot's CLI (`@github/copilot` 1.0.102, `copilot --acp`): `…#agent` asks before
/// a tool, path or URL request; `…#plan` blocks changes until the plan is approved;
/// `…#autopilot` turns allow-all on. Besides modes, the config option `allow_all` (category
/// `permissions`, `off` by default) approves every request when `on`, and the slash
/// commands `/allow-all`, `/permissions` and `/autopilot`, sent as a prompt, turn that on
/// with the mode unchanged (it is reported as a `config_option_update` at the next turn).
pub const COPILOT: KnownModes = KnownModes {
    decide_asking: true,
    asking: &[COPILOT_AGENT, COPILOT_PLAN],
    not_asking: &[COPILOT_AUTOPILOT],
    initial: Some(COPILOT_AGENT),
    approval_options: &[ApprovalOption {
        id: "allow_all",
        asks: "off",
    }],
    approval_commands: &["allow-all", "yolo", "autopilot", "permissions"],
    ..KnownModes::UNKNOWN
};

/// Mistral Vibe (3.0, `vibe/core/agents/models.py`): its modes are its agent profiles; only
/// `ask` ("Requires approval for tool executions") asks. It starts in `accept-edits`.
pub const VIBE: KnownModes = KnownModes {
    decide_asking: true,
    asking: &["ask"],
    not_asking: &["accept-edits", "smart-approve", "auto-approve"],
    initial: Some("ask"),
    option_modes: &[],
    ..KnownModes::UNKNOWN
};

/// The demo agent with `--settings`: `ask` asks before every tool, `code` acts without
/// asking (as a real agent's auto mode does), so the tests can play both; with
/// `--allow-all`, an approval switch that is not a mode, as Copilot's.
pub const DEMO: KnownModes = KnownModes {
    decide_asking: true,
    asking: &["ask"],
    not_asking: &["code"],
    initial: Some("ask"),
    option_modes: &[],
    // With `--allow-all`: Copilot's approval switch, played.
    approval_options: &[ApprovalOption {
        id: "allow_all",
        asks: "off",
    }],
    approval_commands: &["allow-all"],
    ..KnownModes::UNKNOWN
};

const fn option_mode(option: &'static str, mode: &'static str) -> OptionMode {
    OptionMode {
        option,
        kind: None,
        mode,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every table names its initial mode among the asking ones, and no mode twice.
    #[test]
    fn each_table_starts_sessions_in_a_mode_it_knows_to_ask() {
        for table in [CLAUDE_CODE, CODEX, GEMINI, QWEN, VIBE, COPILOT, DEMO] {
            let initial = table.initial.expect("an initial mode");
            assert!(table.asking.contains(&initial), "{table:?}");
            for mode in table.asking {
                assert!(!table.not_asking.contains(mode), "{mode} in both lists");
            }
            for switch in table.option_modes {
                assert!(table.knows(switch.mode), "{switch:?} names a known mode");
            }
        }
    }

    /// The modes the issue measured on today's adapters read as they must.
    #[test]
    fn todays_default_modes_are_known_not_to_ask() {
        for (table, default) in [
            (CLAUDE_CODE, "auto"),
            (CODEX, "agent"),
            (VIBE, "accept-edits"),
            (QWEN, "auto"),
        ] {
            assert!(table.knows(default) && !table.asking.contains(&default));
        }
        assert!(CODEX.not_asking.contains(&"agent-full-access"));
    }
}
