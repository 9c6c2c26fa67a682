//! What `!mode`, `!model` and `!set` ask of a session, decided by one pure function from
//! what the agent advertised. A change is always made in place (`session/set_mode`,
//! `session/set_config_option`); when the agent offers no way to make it, the person is told
//! so and how to start a fresh session instead: replacing the session silently would throw
//! the agent's context away.

use crate::model::agent::{ConfigChoice, ConfigOption, ConfigValue, SessionSettings};

/// A request from the chat.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SettingRequest {
    /// `!mode [MODE]`.
    Mode(Option<String>),
    /// `!model [MODEL]`.
    Model(Option<String>),
    /// `!set [OPTION [VALUE]]`.
    Option(Option<String>, Option<String>),
}

/// What to do about a request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SettingPlan {
    /// Nothing to change: show this (the current value and the choices).
    Show(Shown),
    /// `session/set_mode` to this mode ID.
    SetMode(String),
    /// `session/set_config_option` of this option ID to this value.
    SetOption(String, ConfigChoice),
    /// It cannot be done in place; say why.
    Refuse(Refusal),
}

/// What a request without a value shows.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Shown {
    /// The modes, with the current one.
    Modes(Vec<(String, String)>, Option<String>),
    /// One config option with its values.
    Option(ConfigOption),
    /// Every config option.
    Options(Vec<ConfigOption>),
}

/// Why a request cannot be carried out.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refusal {
    /// The agent offers no such setting in this session (`what`: `modes`, `a model choice`,
    /// `config options`).
    NotOffered(&'static str),
    /// No mode, option or value by that name; the choices are listed.
    Unknown {
        /// What was asked for.
        asked: String,
        /// What exists, as (identifier, label).
        choices: Vec<(String, String)>,
    },
}

/// Decides what `request` means for a session with `settings`.
pub fn plan(settings: &SessionSettings, request: &SettingRequest) -> SettingPlan {
    match request {
        SettingRequest::Mode(wanted) => {
            // Modes come as session modes, or as a config option of category `mode`.
            if settings.modes.is_empty() {
                return match option_of(settings, "mode") {
                    Some(option) => choose(option, wanted.as_deref()),
                    None => SettingPlan::Refuse(Refusal::NotOffered("modes")),
                };
            }
            let Some(wanted) = wanted else {
                return SettingPlan::Show(Shown::Modes(
                    settings.modes.clone(),
                    settings.current_mode.clone(),
                ));
            };
            match find(&settings.modes, wanted) {
                Some(id) => SettingPlan::SetMode(id),
                None => SettingPlan::Refuse(Refusal::Unknown {
                    asked: wanted.clone(),
                    choices: settings.modes.clone(),
                }),
            }
        }
        SettingRequest::Model(wanted) => match option_of(settings, "model") {
            Some(option) => choose(option, wanted.as_deref()),
            None => SettingPlan::Refuse(Refusal::NotOffered("a model choice")),
        },
        SettingRequest::Option(None, _) => match settings.options.is_empty() {
            true => SettingPlan::Refuse(Refusal::NotOffered("config options")),
            false => SettingPlan::Show(Shown::Options(settings.options.clone())),
        },
        SettingRequest::Option(Some(name), value) => {
            let found = settings
                .options
                .iter()
                .find(|o| same(&o.id, name) || same(&o.name, name));
            match found {
                Some(option) => choose(option, value.as_deref()),
                None if settings.options.is_empty() => {
                    SettingPlan::Refuse(Refusal::NotOffered("config options"))
                }
                None => SettingPlan::Refuse(Refusal::Unknown {
                    asked: name.clone(),
                    choices: settings
                        .options
                        .iter()
                        .map(|o| (o.id.clone(), o.name.clone()))
                        .collect(),
                }),
            }
        }
    }
}

/// The config option of `category` (or with that ID).
fn option_of<'s>(settings: &'s SessionSettings, category: &str) -> Option<&'s ConfigOption> {
    settings
        .options
        .iter()
        .find(|o| o.category.as_deref() == Some(category))
        .or_else(|| settings.options.iter().find(|o| same(&o.id, category)))
}

/// Sets `option` to `wanted`, or shows it when nothing is wanted.
fn choose(option: &ConfigOption, wanted: Option<&str>) -> SettingPlan {
    let Some(wanted) = wanted else {
        return SettingPlan::Show(Shown::Option(option.clone()));
    };
    let choice = match &option.value {
        ConfigValue::Choice { choices, .. } => find(choices, wanted)
            .map(ConfigChoice::Value)
            .ok_or_else(|| choices.clone()),
        ConfigValue::Toggle(_) => match wanted.to_lowercase().as_str() {
            "on" | "true" | "yes" | "1" => Ok(ConfigChoice::Toggle(true)),
            "off" | "false" | "no" | "0" => Ok(ConfigChoice::Toggle(false)),
            _ => Err(vec![
                ("on".to_owned(), "on".to_owned()),
                ("off".to_owned(), "off".to_owned()),
            ]),
        },
    };
    match choice {
        Ok(choice) => SettingPlan::SetOption(option.id.clone(), choice),
        Err(choices) => SettingPlan::Refuse(Refusal::Unknown {
            asked: wanted.to_owned(),
            choices,
        }),
    }
}

/// The identifier of the choice named `wanted` (by identifier or label, any case).
fn find(choices: &[(String, String)], wanted: &str) -> Option<String> {
    choices
        .iter()
        .find(|(id, _)| same(id, wanted))
        .or_else(|| choices.iter().find(|(_, name)| same(name, wanted)))
        .map(|(id, _)| id.clone())
}

fn same(a: &str, b: &str) -> bool {
    a.to_lowercase() == b.to_lowercase()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pair(id: &str, name: &str) -> (String, String) {
        (id.into(), name.into())
    }

    fn model() -> ConfigOption {
        ConfigOption {
            id: "llm".into(),
            name: "Model".into(),
            category: Some("model".into()),
            value: ConfigValue::Choice {
                current: "small".into(),
                choices: vec![pair("small", "Small"), pair("large", "Large Model")],
            },
        }
    }

    fn verbose() -> ConfigOption {
        ConfigOption {
            id: "verbose".into(),
            name: "Verbose output".into(),
            category: None,
            value: ConfigValue::Toggle(false),
        }
    }

    fn full() -> SessionSettings {
        SessionSettings {
            modes: vec![pair("ask", "Ask"), pair("code", "Code")],
            current_mode: Some("ask".into()),
            options: vec![model(), verbose()],
        }
    }

    #[test]
    fn plan_table() {
        let none = SessionSettings::default();
        let full = full();
        let s = |v: &str| Some(v.to_owned());
        let mode_as_option = SessionSettings {
            options: vec![ConfigOption {
                id: "mode".into(),
                name: "Mode".into(),
                category: Some("mode".into()),
                value: ConfigValue::Choice {
                    current: "a".into(),
                    choices: vec![pair("a", "Agent"), pair("p", "Plan")],
                },
            }],
            ..Default::default()
        };
        let table: Vec<(&SessionSettings, SettingRequest, SettingPlan)> = vec![
            (
                &full,
                SettingRequest::Mode(None),
                SettingPlan::Show(Shown::Modes(
                    vec![pair("ask", "Ask"), pair("code", "Code")],
                    s("ask"),
                )),
            ),
            (
                &full,
                SettingRequest::Mode(s("CODE")),
                SettingPlan::SetMode("code".into()),
            ),
            (
                &full,
                SettingRequest::Mode(s("fly")),
                SettingPlan::Refuse(Refusal::Unknown {
                    asked: "fly".into(),
                    choices: vec![pair("ask", "Ask"), pair("code", "Code")],
                }),
            ),
            (
                &none,
                SettingRequest::Mode(s("code")),
                SettingPlan::Refuse(Refusal::NotOffered("modes")),
            ),
            (
                &mode_as_option,
                SettingRequest::Mode(s("plan")),
                SettingPlan::SetOption("mode".into(), ConfigChoice::Value("p".into())),
            ),
            (
                &full,
                SettingRequest::Model(None),
                SettingPlan::Show(Shown::Option(model())),
            ),
            (
                &full,
                SettingRequest::Model(s("large model")),
                SettingPlan::SetOption("llm".into(), ConfigChoice::Value("large".into())),
            ),
            (
                &none,
                SettingRequest::Model(s("large")),
                SettingPlan::Refuse(Refusal::NotOffered("a model choice")),
            ),
            (
                &full,
                SettingRequest::Option(None, None),
                SettingPlan::Show(Shown::Options(vec![model(), verbose()])),
            ),
            (
                &full,
                SettingRequest::Option(s("verbose"), s("on")),
                SettingPlan::SetOption("verbose".into(), ConfigChoice::Toggle(true)),
            ),
            (
                &full,
                SettingRequest::Option(s("Verbose output"), s("maybe")),
                SettingPlan::Refuse(Refusal::Unknown {
                    asked: "maybe".into(),
                    choices: vec![pair("on", "on"), pair("off", "off")],
                }),
            ),
            (
                &full,
                SettingRequest::Option(s("llm"), s("small")),
                SettingPlan::SetOption("llm".into(), ConfigChoice::Value("small".into())),
            ),
            (
                &full,
                SettingRequest::Option(s("colour"), s("red")),
                SettingPlan::Refuse(Refusal::Unknown {
                    asked: "colour".into(),
                    choices: vec![pair("llm", "Model"), pair("verbose", "Verbose output")],
                }),
            ),
            (
                &none,
                SettingRequest::Option(None, None),
                SettingPlan::Refuse(Refusal::NotOffered("config options")),
            ),
        ];
        for (settings, request, expected) in table {
            assert_eq!(plan(settings, &request), expected, "{request:?}");
        }
    }
}
