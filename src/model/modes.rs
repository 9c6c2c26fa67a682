//! What is known of an agent's modes: which of them ask an approver before the agent edits
//! files or runs commands. Sidekicks' promise (a tool runs only when an approver says so,
//! unless an admin chose otherwise) rests on this being an allowlist: a mode counts as
//! asking only when its agent's dialect (or the config) says so, and every other mode,
//! known or new, is treated as one that acts without asking.

use super::agent::ToolKind;

/// A permission option that, once chosen, also switches the session to another mode
/// (Claude Code's "Yes, and use auto mode" when leaving plan mode; Gemini CLI's and Qwen
/// Code's "Allow for this session" on an edit, which turns on their auto-edit mode).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OptionMode {
    /// The option's ID, or the start of it (`proceed_always` also stands for
    /// `proceed_always_project`).
    pub option: &'static str,
    /// Only for tool calls of this kind (`None`: any).
    pub kind: Option<ToolKind>,
    /// The mode the session is in once the option is chosen.
    pub mode: &'static str,
}

impl OptionMode {
    /// Whether choosing `option_id` on a call of `kind` switches the mode this way.
    pub fn matches(&self, option_id: &str, kind: Option<ToolKind>) -> bool {
        option_id.starts_with(self.option) && self.kind.is_none_or(|k| kind == Some(k))
    }
}

/// What an agent's dialect records about its modes. Plain data, so the core can decide with
/// it without knowing which agent it talks to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KnownModes {
    /// Whether the agent's modes decide whether it asks before acting. `false` for agents
    /// whose modes are personas or thinking levels (pi, fast-agent, OpenCode's and Kilo's
    /// agents): their own permission settings decide, and any mode may be chosen.
    pub decide_asking: bool,
    /// The modes (IDs) that ask an approver before the agent edits files or runs commands.
    pub asking: &'static [&'static str],
    /// The modes known to act without asking (for `sidekicks check`, the release check and
    /// the docs: a mode in neither list is new and is treated as one that does not ask).
    pub not_asking: &'static [&'static str],
    /// The asking mode sessions are put in ("Manual", "Read-only").
    pub initial: Option<&'static str>,
    /// Permission options that switch the mode besides answering, as the agent's code does.
    /// An option whose ID is one of the session's modes switches to that mode too, for
    /// every agent.
    pub option_modes: &'static [OptionMode],
    /// Config options that decide whether the agent asks, besides modes (approval or
    /// sandbox policies), with the value in which it asks: only admins change them, and the
    /// agent's own change to another value is put back.
    pub approval_options: &'static [ApprovalOption],
    /// Slash commands (names, without `/`) that switch approvals, sent as a prompt (Copilot's
    /// `/allow-all`): only admins send them.
    pub approval_commands: &'static [&'static str],
    /// Permission options whose answer outlasts the session, written to settings of the
    /// project or the user (Qwen Code's "Always allow in project"): only admins pick them.
    pub lasting_options: &'static [&'static str],
}

/// A config option that decides whether the agent asks, and its value that keeps asking.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ApprovalOption {
    /// The option's ID.
    pub id: &'static str,
    /// The value in which the agent asks (`off` for Copilot's `allow_all`).
    pub asks: &'static str,
}

impl KnownModes {
    /// Nothing known: no mode counts as asking unless the config says so.
    pub const UNKNOWN: KnownModes = KnownModes {
        decide_asking: true,
        asking: &[],
        not_asking: &[],
        initial: None,
        option_modes: &[],
        approval_options: &[],
        approval_commands: &[],
        lasting_options: &[],
    };

    /// The agent's modes do not decide whether it asks.
    pub const UNRELATED: KnownModes = KnownModes {
        decide_asking: false,
        ..KnownModes::UNKNOWN
    };

    /// Whether `mode` is one this table names, asking or not (IDs compare without regard
    /// to case, as people type them).
    pub fn knows(&self, mode: &str) -> bool {
        (self.asking.iter().chain(self.not_asking)).any(|m| m.eq_ignore_ascii_case(mode))
    }
}

/// The mode a conversation keeps across its sessions (and restarts): the last one accepted,
/// and whether an admin chose it, which a mode that acts without asking needs to stay.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeptMode {
    /// The mode's ID.
    pub mode: String,
    /// Whether an admin chose it (with `!mode`, or by picking a poll option that switches
    /// to it).
    pub by_admin: bool,
}

impl Default for KnownModes {
    fn default() -> Self {
        Self::UNKNOWN
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_option_mode_matches_its_prefix_and_its_kind() {
        let always_edit = OptionMode {
            option: "proceed_always",
            kind: Some(ToolKind::Edit),
            mode: "auto-edit",
        };
        assert!(always_edit.matches("proceed_always", Some(ToolKind::Edit)));
        assert!(always_edit.matches("proceed_always_project", Some(ToolKind::Edit)));
        assert!(!always_edit.matches("proceed_always", Some(ToolKind::Execute)));
        assert!(!always_edit.matches("proceed_always", None));
        assert!(!always_edit.matches("proceed_once", Some(ToolKind::Edit)));
        let any = OptionMode {
            kind: None,
            ..always_edit
        };
        assert!(any.matches("proceed_always", None));
    }

    #[test]
    fn a_table_knows_its_modes_in_any_case() {
        let table = KnownModes {
            asking: &["default"],
            not_asking: &["bypassPermissions"],
            ..KnownModes::UNKNOWN
        };
        assert!(table.knows("Default") && table.knows("bypasspermissions"));
        assert!(!table.knows("auto"));
        assert!(!KnownModes::UNKNOWN.knows("default"));
    }
}
