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
