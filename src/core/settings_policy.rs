//! Who may choose which mode and option value of an agent. Anyone who may prompt may change
//! the settings, within what the config lets people choose; modes that let the agent act
//! without asking permission are for admins only, since they take the approvers out of the
//! loop. Admins may choose anything the agent offers.

use std::collections::BTreeMap;

use crate::core::session_settings::SettingPlan;
use crate::model::agent::{ConfigChoice, SessionSettings};

/// Modes, by ID, that real agents offer to act without asking permission: Claude Code's
/// `bypassPermissions`, `acceptEdits` and `dontAsk`, Codex's `full-access` and `auto`, Gemini
/// CLI's `yolo` and `autoEdit`. Admin-only unless the config names its own list.
pub const UNATTENDED_MODES: &[&str] = &[
    "bypassPermissions",
    "acceptEdits",
    "dontAsk",
    "full-access",
    "auto",
    "yolo",
    "autoEdit",
    "auto_edit",
];

/// What people who are not admins may choose for one agent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SettingsPolicy {
    /// The modes they may choose; `None`: any that is not admin-only.
    pub choosable_modes: Option<Vec<String>>,
    /// For each option ID listed, the values they may choose; options not listed are free.
    pub choosable_values: BTreeMap<String, Vec<String>>,
    /// Modes only admins may choose.
    pub admin_only_modes: Vec<String>,
}

impl Default for SettingsPolicy {
    fn default() -> Self {
        Self {
            choosable_modes: None,
            choosable_values: BTreeMap::new(),
            admin_only_modes: UNATTENDED_MODES.iter().map(|m| m.to_string()).collect(),
        }
    }
}

/// Why a change is refused to someone who is not an admin.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PolicyRefusal {
    /// The mode lets the agent act without asking: admins only.
    AdminOnly(String),
    /// The config does not let people choose this value: what it is about, the value,
    /// and what they may choose.
    NotChoosable {
        /// `mode`, or the option's ID.
        what: String,
        /// The value asked for.
        value: String,
        /// The values they may choose.
        choosable: Vec<String>,
    },
}

impl SettingsPolicy {
    /// Whether `plan` (a change of `settings`) may be made by someone who is (`admin`) or
    /// is not an admin. Showing the settings is always allowed.
    pub fn check(
        &self,
        plan: &SettingPlan,
        settings: &SessionSettings,
        admin: bool,
    ) -> Result<(), PolicyRefusal> {
        if admin {
            return Ok(());
        }
        match plan {
            SettingPlan::SetMode(mode) => self.check_mode(mode),
            SettingPlan::SetOption(option, choice) => {
                let value = match choice {
                    ConfigChoice::Value(value) => value.clone(),
                    ConfigChoice::Toggle(true) => "on".to_owned(),
                    ConfigChoice::Toggle(false) => "off".to_owned(),
                };
                // Agents that offer their modes as a config option.
                let is_mode = settings
                    .options
                    .iter()
                    .any(|o| o.id == *option && o.category.as_deref() == Some("mode"));
                if is_mode {
                    return self.check_mode(&value);
                }
                match self.choosable_values.get(option) {
                    Some(choosable) if !contains(choosable, &value) => {
                        Err(PolicyRefusal::NotChoosable {
                            what: option.clone(),
                            value,
                            choosable: choosable.clone(),
                        })
                    }
                    _ => Ok(()),
                }
            }
            SettingPlan::Show(_) | SettingPlan::Refuse(_) => Ok(()),
        }
    }

    fn check_mode(&self, mode: &str) -> Result<(), PolicyRefusal> {
        if contains(&self.admin_only_modes, mode) {
            return Err(PolicyRefusal::AdminOnly(mode.to_owned()));
        }
        match &self.choosable_modes {
            Some(choosable) if !contains(choosable, mode) => Err(PolicyRefusal::NotChoosable {
                what: "mode".into(),
                value: mode.to_owned(),
                choosable: choosable.clone(),
            }),
            _ => Ok(()),
        }
    }
}

/// Whether `list` names `value` (IDs compare without regard to case).
fn contains(list: &[String], value: &str) -> bool {
    list.iter().any(|v| v.eq_ignore_ascii_case(value))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::agent::{ConfigOption, ConfigValue};

    fn settings() -> SessionSettings {
        let choice = |id: &str, category: &str, values: &[&str]| ConfigOption {
            id: id.into(),
            name: id.into(),
            category: Some(category.into()),
            value: ConfigValue::Choice {
                current: values[0].into(),
                choices: values
                    .iter()
                    .map(|v| (v.to_string(), v.to_string()))
                    .collect(),
            },
        };
        SessionSettings {
            modes: vec![],
            current_mode: None,
            options: vec![
                choice("model", "model", &["small", "large"]),
                choice("approval", "mode", &["ask", "yolo"]),
            ],
        }
    }

    #[test]
    fn people_choose_within_the_config_and_admins_choose_anything() {
        let policy = SettingsPolicy {
            choosable_modes: Some(vec!["default".into(), "plan".into(), "yolo".into()]),
            choosable_values: BTreeMap::from([("model".into(), vec!["small".into()])]),
            ..SettingsPolicy::default()
        };
        let s = settings();
        let mode = |m: &str| SettingPlan::SetMode(m.into());
        let set =
            |o: &str, v: &str| SettingPlan::SetOption(o.into(), ConfigChoice::Value(v.into()));
        let admin_only = |m: &str| Err(PolicyRefusal::AdminOnly(m.into()));
        let table = [
            (mode("plan"), Ok(())),
            (mode("PLAN"), Ok(())),
            (mode("bypassPermissions"), admin_only("bypassPermissions")),
            // Listed as choosable, still admin-only: it acts without asking.
            (mode("yolo"), admin_only("yolo")),
            (
                mode("review"),
                Err(PolicyRefusal::NotChoosable {
                    what: "mode".into(),
                    value: "review".into(),
                    choosable: vec!["default".into(), "plan".into(), "yolo".into()],
                }),
            ),
            (set("model", "small"), Ok(())),
            (
                set("model", "large"),
                Err(PolicyRefusal::NotChoosable {
                    what: "model".into(),
                    value: "large".into(),
                    choosable: vec!["small".into()],
                }),
            ),
            (set("verbose", "on"), Ok(())),
            // A mode offered as a config option follows the rules of modes.
            (set("approval", "yolo"), admin_only("yolo")),
        ];
        for (plan, expected) in table {
            assert_eq!(policy.check(&plan, &s, false), expected, "{plan:?}");
            assert_eq!(policy.check(&plan, &s, true), Ok(()), "admin: {plan:?}");
        }
    }

    #[test]
    fn without_config_only_modes_that_skip_asking_are_kept_from_people() {
        let policy = SettingsPolicy::default();
        let s = settings();
        for mode in ["bypassPermissions", "acceptEdits", "full-access", "yolo"] {
            assert!(
                policy
                    .check(&SettingPlan::SetMode(mode.into()), &s, false)
                    .is_err()
            );
        }
        for mode in ["default", "plan", "read-only", "ask", "code"] {
            assert!(
                policy
                    .check(&SettingPlan::SetMode(mode.into()), &s, false)
                    .is_ok()
            );
        }
        let none = SettingsPolicy {
            admin_only_modes: vec![],
            ..SettingsPolicy::default()
        };
        assert!(
            none.check(&SettingPlan::SetMode("yolo".into()), &s, false)
                .is_ok(),
            "the config can say otherwise"
        );
    }
}
