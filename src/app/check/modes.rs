//! What `sidekicks check` says of an agent's modes: which ask before acting, the mode the
//! agent starts a session in, the one Sidekicks puts every session in (and whether the agent
//! took it), and the modes its dialect does not know yet. An agent that cannot be put in a
//! mode that asks fails the check: the gateway would refuse its sessions.

use std::fmt::Write;

use crate::acp::AcpAgent;
use crate::core::agent::AgentPort;
use crate::core::settings_policy::{
    Asking, SettingsPolicy, Unfenced, current_mode, mode_option, offered_modes,
};
use crate::model::agent::{ConfigChoice, NewSession};

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

/// Reports on the modes of `session`, a fresh session of `process`, and tries putting it in
/// the mode every session would be put in.
pub async fn report(
    process: &AcpAgent,
    policy: &SettingsPolicy,
    session: &NewSession,
) -> Result<ModeReport, std::fmt::Error> {
    let mut text = String::new();
    let known = process.known_modes();
    let rules = policy.rules(&known);
    let settings = &session.settings;
    let offered = offered_modes(settings);
    let word = |mode: &str| match rules.asking(mode) {
        Asking::Asks => " asks",
        Asking::DoesNotAsk | Asking::NotByMode => "",
    };
    let label = |mode: &str| -> String {
        let named = (settings.modes.iter())
            .find(|(id, _)| id == mode)
            .map(|(_, name)| name.clone());
        match named {
            Some(name) => format!("{mode} ({name})"),
            None => mode.to_owned(),
        }
    };
    let new_modes: Vec<String> = (offered.iter())
        .filter(|m| known.decide_asking && !known.knows(m))
        .cloned()
        .collect();
    if offered.is_empty() {
        writeln!(
            text,
            "  approvals: the agent has no modes; it asks as it is configured to"
        )?;
        return Ok(ModeReport {
            text,
            unfenced: None,
            new_modes,
        });
    }
    let listed: Vec<String> = (offered.iter())
        .map(|m| format!("{}{}", label(m), word(m)))
        .collect();
    let source = match settings.modes.is_empty() {
        true => "mode option",
        false => "modes",
    };
    writeln!(text, "  {source}: {}", listed.join(", "))?;
    let starts = current_mode(settings).unwrap_or_default();
    if !rules.fences(settings) {
        writeln!(
            text,
            "  approvals: its modes do not decide whether it asks (its own permission settings \
             do); it starts in {}",
            label(&starts)
        )?;
        return Ok(ModeReport {
            text,
            unfenced: None,
            new_modes,
        });
    }
    let asks = |m: &str| match rules.asking(m) {
        Asking::Asks => "asks before acting",
        _ => "does not ask",
    };
    writeln!(text, "  starts in: {}: {}", label(&starts), asks(&starts))?;
    let target = match rules.target(settings, None) {
        Ok(Some(target)) => target,
        Ok(None) => {
            return Ok(ModeReport {
                text,
                unfenced: None,
                new_modes,
            });
        }
        Err(why) => {
            let why = match why {
                Unfenced::NoAskingMode { offered } => {
                    crate::render::strings::no_asking_mode(&offered)
                }
                Unfenced::InitialNotOffered { initial, offered } => {
                    crate::render::strings::initial_not_offered(&initial, &offered)
                }
            };
            writeln!(text, "  sessions are put in: none: {why}")?;
            return Ok(ModeReport {
                text,
                unfenced: Some(why),
                new_modes,
            });
        }
    };
    let switched = match (starts == target, settings.modes.is_empty()) {
        (true, _) => Ok(()),
        (false, false) => process.set_mode(&session.id, &target).await,
        (false, true) => match mode_option(settings) {
            Some(option) => {
                (process.set_option(&session.id, &option.id, ConfigChoice::Value(target.clone())))
                    .await
                    .map(|_| ())
            }
            None => Ok(()),
        },
    };
    let unfenced = match &switched {
        Ok(()) => None,
        Err(e) => Some(crate::render::strings::initial_refused(
            &target,
            &e.to_string(),
        )),
    };
    let outcome = match (&switched, starts == target) {
        (Ok(()), true) => "already in it".to_owned(),
        (Ok(()), false) => "switched: ok".to_owned(),
        (Err(e), _) => format!("switching FAILED: {e}"),
    };
    writeln!(
        text,
        "  sessions are put in: {}: {} ({outcome})",
        label(&target),
        asks(&target)
    )?;
    if !new_modes.is_empty() {
        writeln!(
            text,
            "  modes the dialect does not know (treated as not asking; review them): {}",
            new_modes.join(", ")
        )?;
    }
    Ok(ModeReport {
        text,
        unfenced,
        new_modes,
    })
}

/// What `sidekicks check` says of the agent's approval switches that are not modes (config
/// options that decide whether it asks: its dialect's, or of category `permissions`): each
/// with the value in which it asks and its value now; and those the dialect does not know
/// (the `--strict-modes` check fails on them).
pub fn approval_options(
    policy: &SettingsPolicy,
    known: &crate::model::modes::KnownModes,
    settings: &crate::model::agent::SessionSettings,
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
