//! What `sidekicks check` says of an agent's modes: which ask before acting, the mode the
//! agent starts a session in, the one Sidekicks puts every session in (and whether the agent
//! took it), and the modes its dialect does not know yet. An agent that cannot be put in a
//! mode that asks fails the check: the gateway would refuse its sessions.

use std::fmt::Write;

use crate::acp::AcpAgent;
use crate::core::agent::AgentPort;
use crate::core::agent::NewSession;
use crate::core::settings_policy::{
    Asking, ModeRules, SettingsPolicy, Unfenced, current_mode, mode_option, offered_modes,
};
use crate::model::agent::{AgentError, ConfigChoice, SessionSettings};
use crate::render::strings;

/// What the check found about one session's modes.
pub struct ModeReport {
    /// The lines to print.
    pub text: String,
    /// Why the gateway would not use the agent, if it would not.
    pub unfenced: Option<String>,
    /// Modes (IDs) the dialect knows neither as asking nor as not asking, the agent's
    /// starting mode among them if it is one.
    pub new_modes: Vec<String>,
}

/// How the check names an agent's modes: by ID and name, and whether each asks.
struct Naming<'a> {
    rules: &'a ModeRules,
    settings: &'a SessionSettings,
}

impl Naming<'_> {
    /// `ID (Name)`, or the ID when the agent gives no name.
    fn label(&self, mode: &str) -> String {
        let named = (self.settings.modes.iter())
            .find(|(id, _)| id == mode)
            .map(|(_, name)| name.clone());
        match named {
            Some(name) => format!("{mode} ({name})"),
            None => mode.to_owned(),
        }
    }

    fn asks(&self, mode: &str) -> &'static str {
        match self.rules.asking(mode) {
            Asking::Asks => "asks before acting",
            _ => "does not ask",
        }
    }

    /// Every offered mode, those that ask marked.
    fn listed(&self, offered: &[String]) -> String {
        let listed: Vec<String> = (offered.iter())
            .map(|mode| match self.rules.asking(mode) {
                Asking::Asks => format!("{} asks", self.label(mode)),
                Asking::DoesNotAsk | Asking::NotByMode => self.label(mode),
            })
            .collect();
        listed.join(", ")
    }
}

/// Reports on the modes of `session`, a fresh session of `process`, and tries putting it in
/// the mode every session would be put in.
pub async fn report(
    process: &AcpAgent,
    policy: &SettingsPolicy,
    session: &NewSession,
) -> Result<ModeReport, std::fmt::Error> {
    let known = process.known_modes();
    let rules = policy.rules(&known);
    let settings = &session.settings;
    let naming = Naming {
        rules: &rules,
        settings,
    };
    let offered = offered_modes(settings);
    let mut report = ModeReport {
        text: String::new(),
        unfenced: None,
        new_modes: (offered.iter())
            .filter(|m| known.decide_asking && !known.knows(m))
            .cloned()
            .collect(),
    };
    let text = &mut report.text;
    if offered.is_empty() {
        writeln!(
            text,
            "  approvals: the agent has no modes; it asks as it is configured to"
        )?;
        return Ok(report);
    }
    let source = match settings.modes.is_empty() {
        true => "mode option",
        false => "modes",
    };
    writeln!(text, "  {source}: {}", naming.listed(&offered))?;
    let starts = current_mode(settings).unwrap_or_default();
    if !rules.fences(settings) {
        writeln!(
            text,
            "  approvals: its modes do not decide whether it asks (its own permission settings \
             do); it starts in {}",
            naming.label(&starts)
        )?;
        return Ok(report);
    }
    writeln!(
        text,
        "  starts in: {}: {}",
        naming.label(&starts),
        naming.asks(&starts)
    )?;
    let target = match rules.target(settings, None) {
        Ok(Some(target)) => target,
        Ok(None) => return Ok(report),
        Err(why) => {
            let why = unfenced_sentence(why);
            writeln!(text, "  sessions are put in: none: {why}")?;
            report.unfenced = Some(why);
            return Ok(report);
        }
    };
    let switched = match starts == target {
        true => Ok(()),
        false => switch(session, &target).await,
    };
    let (label, asks) = (naming.label(&target), naming.asks(&target));
    let outcome = outcome(&switched, starts == target);
    writeln!(text, "  sessions are put in: {label}: {asks} ({outcome})")?;
    if !report.new_modes.is_empty() {
        writeln!(
            text,
            "  modes the dialect does not know (treated as not asking; review them): {}",
            report.new_modes.join(", ")
        )?;
    }
    report.unfenced = (switched.err()).map(|e| strings::initial_refused(&target, &e.to_string()));
    Ok(report)
}

/// What became of putting the session in its mode.
fn outcome(switched: &Result<(), AgentError>, already: bool) -> String {
    match (switched, already) {
        (Ok(()), true) => "already in it".to_owned(),
        (Ok(()), false) => "switched: ok".to_owned(),
        (Err(e), _) => format!("switching FAILED: {e}"),
    }
}

/// Why the gateway could not put the agent's sessions in a mode that asks, as the room
/// would read it.
fn unfenced_sentence(why: Unfenced) -> String {
    match why {
        Unfenced::NoAskingMode { offered } => strings::no_asking_mode(&offered),
        Unfenced::InitialNotOffered { initial, offered } => {
            strings::initial_not_offered(&initial, &offered)
        }
    }
}

/// Puts `session` in `target`, as a mode or through the option that holds the mode.
async fn switch(session: &NewSession, target: &str) -> Result<(), AgentError> {
    if !session.settings.modes.is_empty() {
        return session.session.set_mode(target).await;
    }
    match mode_option(&session.settings) {
        Some(option) => {
            let choice = ConfigChoice::Value(target.to_owned());
            (session.session.set_option(&option.id, choice).await).map(|_| ())
        }
        None => Ok(()),
    }
}

/// What `sidekicks check` says of the agent's approval switches that are not modes (config
/// options that decide whether it asks: its dialect's, or of category `permissions`): each
/// with the value in which it asks and its value now; and those the dialect does not know
/// (the `--strict-modes` check fails on them).
pub fn approval_options(
    policy: &SettingsPolicy,
    known: &crate::model::modes::KnownModes,
    settings: &SessionSettings,
) -> Result<(String, Vec<String>), std::fmt::Error> {
    let rules = policy.rules(known);
    let mut text = String::new();
    let mut unknown = Vec::new();
    let mut listed = Vec::new();
    for option in (settings.options.iter()).filter(|o| rules.decides_approvals(&o.id, settings)) {
        let now = match &option.value {
            crate::model::agent::ConfigValue::Choice { current, .. } => current.clone(),
            crate::model::agent::ConfigValue::Toggle(on) => (if *on { "on" } else { "off" }).into(),
        };
        match rules.asking_value(&option.id) {
            Some(asks) => listed.push(format!("{} (asks when {asks}; now {now})", option.id)),
            None => {
                listed.push(format!(
                    "{} (not known to its dialect; now {now})",
                    option.id
                ));
                unknown.push(option.id.clone());
            }
        }
    }
    if !listed.is_empty() {
        writeln!(
            text,
            "  approval switches besides modes (admins only; put back when the agent turns one): {}",
            listed.join(", ")
        )?;
    }
    Ok((text, unknown))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::agent::{ConfigOption, ConfigValue, SessionSettings};
    use crate::model::modes::{ApprovalOption, KnownModes};

    fn settings() -> SessionSettings {
        let choice = |id: &str, category: &str, current: &str| ConfigOption {
            id: id.into(),
            name: id.into(),
            category: Some(category.into()),
            value: ConfigValue::Choice {
                current: current.into(),
                choices: vec![("on".into(), "On".into()), ("off".into(), "Off".into())],
            },
        };
        SessionSettings {
            modes: vec![],
            current_mode: None,
            options: vec![
                choice("allow_all", "permissions", "off"),
                choice("sandbox", "permissions", "on"),
                choice("model", "model", "on"),
            ],
        }
    }

    #[test]
    fn an_approval_option_its_dialect_does_not_know_is_named_for_the_strict_check() {
        let known = KnownModes {
            approval_options: &[ApprovalOption {
                id: "allow_all",
                asks: "off",
            }],
            ..KnownModes::UNKNOWN
        };
        let (text, unknown) =
            approval_options(&SettingsPolicy::default(), &known, &settings()).unwrap();
        assert_eq!(unknown, ["sandbox"]);
        assert!(
            text.contains("allow_all (asks when off; now off)"),
            "{text}"
        );
        assert!(
            text.contains("sandbox (not known to its dialect; now on)"),
            "{text}"
        );
        assert!(!text.contains("model"), "{text}");
    }
}
