//! What Sidekicks says about an agent's modes: whether the session asks before acting, what
//! only admins may choose, and what happened when the agent left a mode that asks.

/// How a mode reads for people, next to its name: whether approvers stay in the loop.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ModeNote {
    /// It asks before the agent edits files or runs commands.
    Asks,
    /// It acts without asking; an admin chose it (or the config names it).
    ActsUnasked,
    /// Not known to ask: only admins may choose it.
    AdminsOnly,
    /// The agent's modes do not decide whether it asks.
    NotByMode,
}

impl ModeNote {
    /// The words after the mode's name.
    pub fn words(self) -> &'static str {
        match self {
            ModeNote::Asks => "asks before acting",
            ModeNote::ActsUnasked => "acts without asking",
            ModeNote::AdminsOnly => "acts without asking: admins only",
            ModeNote::NotByMode => "asking is set by the agent's own permissions",
        }
    }
}

/// A mode, as `!status` shows it: `Manual, asks before acting`.
pub fn mode_status(name: &str, note: ModeNote) -> String {
    format!("{name}, {}", note.words())
}

/// Said to someone who is not an admin, asking for a mode that is not known to ask.
pub fn mode_for_admins(sender: &str, agent: &str, mode: &str) -> String {
    format!(
        "🔒 {sender}, only admins may switch {agent} to `{mode}`: it is not a mode known to ask \
         before acting, so the agent could act without asking permission. Ask one of them."
    )
}

/// Said to someone who is not an admin, changing an option that decides whether the agent
/// asks (an approval or sandbox policy).
pub fn option_for_admins(sender: &str, agent: &str, option: &str) -> String {
    format!(
        "🔒 {sender}, only admins may change {agent}'s `{option}`: it decides whether the \
         agent asks before acting. Ask one of them."
    )
}

/// Said to someone who is not an admin, asking to change an option nobody listed as one
/// people may choose.
pub fn unlisted_option(sender: &str, agent: &str, option: &str) -> String {
    format!(
        "🔒 {sender}, only admins may change {agent}'s `{option}`: it is not one the \
         configuration lets people choose ([agents.settings] options), and it may decide \
         whether the agent asks before acting. Ask one of them."
    )
}

/// Said when the agent turned an approval option (`option`, now `value`) away from the value
/// no admin changed, and Sidekicks put it back to `back`.
pub fn option_put_back(agent: &str, option: &str, value: &str, back: &str) -> String {
    format!(
        "🔒 {agent} turned its `{option}` to `{value}`, which decides whether it asks before \
         acting; only an admin may choose that, so it is back to `{back}`."
    )
}

/// Said to someone who is not an admin sending slash `command`, which switches the agent's
/// approvals: it is not sent.
pub fn approval_command_for_admins(sender: &str, agent: &str, command: &str) -> String {
    format!(
        "🔒 {sender}, only admins may send /{command} to {agent}: it switches whether the \
         agent asks before acting. It was not sent."
    )
}

/// Said when the agent switched its session to a mode that does not ask, and Sidekicks put
/// the asking one back.
pub fn mode_put_back(agent: &str, left: &str, back: &str) -> String {
    format!(
        "🔒 {agent} switched itself to {left}, which does not ask before acting; only an admin \
         may choose that, so it is back in {back}."
    )
}

/// Said when the agent is in a mode that does not ask and could not be put back: the turn
/// (if any) is stopped and the session left.
pub fn mode_not_put_back(agent: &str, left: &str, why: &str) -> String {
    format!(
        "🛑 {agent} is in {left}, which does not ask before acting, and could not be put back \
         in a mode that asks ({why}). Its turn is stopped and its session left; the next \
         message opens a new one."
    )
}

/// Said when a session's mode is not known (its agent no longer reports one) where its
/// modes decide whether it asks: it is not prompted blind.
pub fn mode_unknown(agent: &str) -> String {
    format!(
        "🛑 {agent} no longer says which mode its session is in, so Sidekicks cannot tell \
         whether it asks before acting. This message was not sent to it; the next message \
         opens a new session, put in a mode that asks."
    )
}

/// Said to an approver who is not an admin, picking a poll choice that also switches the
/// agent to a mode that does not ask.
pub fn choice_for_admins(sender: &str, label: &str, mode: Option<&str>) -> String {
    let why = match mode {
        Some(mode) => {
            format!("it also switches the agent to `{mode}`, which does not ask before acting")
        }
        None => "its answer is saved beyond this session (a rule in the project's or the \
                 user's settings), so the agent would stop asking for the like"
            .to_owned(),
    };
    format!(
        "🔒 {sender}, only an admin may pick “{label}”: {why}. Pick another choice, or ask an admin."
    )
}

/// The mark on a poll choice only admins may pick because it stops the agent asking.
pub const ADMINS_ONLY_CHOICE: &str = "admins only: stops asking";

/// The mark on a poll choice only admins may pick because its answer outlasts the session.
pub const ADMINS_ONLY_LASTING: &str = "admins only: saved beyond this session";

/// Why no conversation opens: none of the agent's modes is known to ask before acting.
pub fn no_asking_mode(offered: &[String]) -> String {
    let listed: Vec<String> = offered.iter().map(|m| format!("`{m}`")).collect();
    format!(
        "none of its modes ({}) is known to ask before acting, so Sidekicks does not use it \
         (a tool could run without anyone's approval). An admin can name the modes that ask \
         in the config: `[agents.settings] asking_modes`, or choose one with `initial_mode`",
        listed.join(", ")
    )
}

/// Why no conversation opens: the configured initial mode is not one the agent offers.
pub fn initial_not_offered(initial: &str, offered: &[String]) -> String {
    let listed: Vec<String> = offered.iter().map(|m| format!("`{m}`")).collect();
    format!(
        "its configured `initial_mode` `{initial}` is not one of its modes ({}), so Sidekicks \
         does not use it; fix `[agents.settings] initial_mode`",
        listed.join(", ")
    )
}

/// Why no conversation opens: the agent would not go into the mode that asks.
pub fn initial_refused(mode: &str, why: &str) -> String {
    format!(
        "it would not switch to `{mode}`, the mode that asks before acting ({why}), so \
         Sidekicks does not use it"
    )
}

/// The session's modes with the current one and whether each asks (`!mode`).
pub fn mode_choices(
    agent: &str,
    current: Option<&str>,
    modes: &[(String, String, ModeNote)],
    how: &str,
) -> String {
    let listed: Vec<String> = modes
        .iter()
        .map(|(id, name, note)| {
            let here = match Some(id.as_str()) == current {
                true => " ← current",
                false => "",
            };
            format!("• {name} (`{id}`){here}: {}", note.words())
        })
        .collect();
    format!(
        "{agent}'s modes:\n{}\nChange it with {how}.",
        listed.join("\n")
    )
}

/// Answer to a mode change the agent made: the mode and whether it asks.
pub fn mode_changed(agent: &str, label: &str, note: ModeNote) -> String {
    format!("✅ {agent}'s mode is now {label} ({}).", note.words())
}
