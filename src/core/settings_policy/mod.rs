//! Who may choose which mode and option value of an agent, and which modes keep the
//! approvers in the loop. Sidekicks' promise is that a tool runs only when an approver says
//! so, unless an admin chose a mode that acts without asking; so which modes ask is an
//! allowlist (the agent's dialect, or the config), never a list of the modes known not to:
//! a mode an agent adds or renames is treated as one that acts without asking until someone
//! records otherwise. Every decision here is pure; the channel carries them out
//! (`core/channel/modes.rs`).

use std::collections::BTreeMap;

use crate::core::session_settings::SettingPlan;
use crate::model::agent::{ConfigChoice, ConfigValue, SessionSettings, ToolKind};
use crate::model::modes::{KeptMode, KnownModes, OptionMode};

/// What the config says about one agent's modes and options (`[agents.settings]`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SettingsPolicy {
    /// The mode sessions are put in; `None`: the dialect's.
    pub initial_mode: Option<String>,
    /// The modes that ask before acting; `None`: the dialect's.
    pub asking_modes: Option<Vec<String>>,
    /// Of the asking modes, those people who are not admins may choose; `None`: all.
    pub choosable_modes: Option<Vec<String>>,
    /// For each option ID listed, the values they may choose; options not listed are free.
    pub choosable_values: BTreeMap<String, Vec<String>>,
}

/// Why a change is refused to someone who is not an admin.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PolicyRefusal {
    /// The mode is not known to ask before acting: admins only.
    AdminOnly(String),
    /// The option decides whether the agent asks (an approval or sandbox policy): admins
    /// only.
    AdminOnlyOption(String),
    /// Nobody listed the option as one people may change (it may decide approvals the
    /// agent does not say): admins only.
    Unlisted(String),
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

/// Why no session of an agent can be put in a mode that asks before acting.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Unfenced {
    /// The agent has modes, but none is known to ask and the config names none.
    NoAskingMode {
        /// The modes it offers (IDs).
        offered: Vec<String>,
    },
    /// The config's `initial_mode` is not one the agent offers.
    InitialNotOffered {
        /// The configured mode.
        initial: String,
        /// The modes it offers (IDs).
        offered: Vec<String>,
    },
}

/// What to do about the mode an agent reports its session is in.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ModeVerdict {
    /// It may stay: it asks, or an admin chose it (or modes do not decide asking here).
    Stays,
    /// It acts without asking and no admin chose it: put this mode back.
    PutBack(String),
    /// It acts without asking, and there is no mode that asks to put back.
    Unfenced(Unfenced),
}

/// How a mode reads for people: whether it keeps the approvers in the loop.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Asking {
    /// It asks before the agent edits files or runs commands.
    Asks,
    /// It acts without asking (or is not known to ask).
    DoesNotAsk,
    /// The agent's modes do not decide it (its own permission settings do).
    NotByMode,
}

/// The config's policy and the dialect's knowledge of one agent's modes, together.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ModeRules {
    /// Whether the agent's modes decide whether it asks.
    decide_asking: bool,
    /// The modes that ask.
    asking: Vec<String>,
    /// The mode sessions are put in, if one is named (by the config or the dialect).
    initial: Option<String>,
    /// Whether `initial` comes from the config (then it must be offered).
    initial_configured: bool,
    /// Permission options that switch the mode as a side effect.
    option_modes: Vec<OptionMode>,
    /// Config options that decide asking besides modes, with the value that asks.
    approval_options: Vec<(String, String)>,
    /// Slash commands that switch approvals (names, without `/`).
    approval_commands: Vec<String>,
    /// Permission options whose answer outlasts the session.
    lasting_options: Vec<String>,
    /// Of the asking modes, those non-admins may choose (`None`: all).
    choosable_modes: Option<Vec<String>>,
    /// Option values non-admins may choose.
    choosable_values: BTreeMap<String, Vec<String>>,
}

impl SettingsPolicy {
    /// The rules for an agent whose dialect knows `known` of its modes.
    pub fn rules(&self, known: &KnownModes) -> ModeRules {
        let owned = |list: &[&str]| list.iter().map(|m| m.to_string()).collect::<Vec<_>>();
        ModeRules {
            decide_asking: known.decide_asking || self.asking_modes.is_some(),
            asking: (self.asking_modes.clone()).unwrap_or_else(|| owned(known.asking)),
            initial: (self.initial_mode.clone()).or_else(|| known.initial.map(str::to_owned)),
            initial_configured: self.initial_mode.is_some(),
            option_modes: known.option_modes.to_vec(),
            approval_options: (known.approval_options.iter())
                .map(|o| (o.id.to_owned(), o.asks.to_owned()))
                .collect(),
            approval_commands: owned(known.approval_commands),
            lasting_options: owned(known.lasting_options),
            choosable_modes: self.choosable_modes.clone(),
            choosable_values: self.choosable_values.clone(),
        }
    }
}

impl ModeRules {
    /// Whether `mode` asks before the agent acts.
    pub fn asking(&self, mode: &str) -> Asking {
        match (self.decide_asking, contains(&self.asking, mode)) {
            (false, _) => Asking::NotByMode,
            (true, true) => Asking::Asks,
            (true, false) => Asking::DoesNotAsk,
        }
    }

    /// Whether `mode` may stay without an admin having chosen it.
    fn asks(&self, mode: &str) -> bool {
        self.asking(mode) != Asking::DoesNotAsk
    }

    /// Whether sessions of this agent are kept in asking modes at all: the agent has modes
    /// (or a mode option) and they decide whether it asks.
    pub fn fences(&self, settings: &SessionSettings) -> bool {
        self.decide_asking && !offered_modes(settings).is_empty()
    }

    /// The mode a session with `settings` must be in: the one kept for its conversation
    /// (`kept`) while it still may be (offered, and asking or chosen by an admin), else
    /// the initial mode. `Ok(None)`: nothing to fence.
    pub fn target(
        &self,
        settings: &SessionSettings,
        kept: Option<&KeptMode>,
    ) -> Result<Option<String>, Unfenced> {
        if !self.fences(settings) {
            return Ok(None);
        }
        let offered = offered_modes(settings);
        let offers = |mode: &str| offered.iter().find(|m| m.eq_ignore_ascii_case(mode));
        if let Some(kept) = kept
            && let Some(mode) = offers(&kept.mode)
            && (self.asks(mode) || kept.by_admin)
        {
            return Ok(Some(mode.clone()));
        }
        if let Some(initial) = &self.initial {
            match offers(initial) {
                Some(mode) => return Ok(Some(mode.clone())),
                None if self.initial_configured => {
                    return Err(Unfenced::InitialNotOffered {
                        initial: initial.clone(),
                        offered,
                    });
                }
                None => {}
            }
        }
        // The dialect's initial mode is gone (renamed?): any mode it knows to ask will do.
        match offered.iter().find(|m| self.asks(m)) {
            Some(mode) => Ok(Some(mode.clone())),
            None => Err(Unfenced::NoAskingMode { offered }),
        }
    }

    /// Whether the agent's modes decide whether it asks (its dialect's, or the config's
    /// `asking_modes`).
    pub fn decides_asking(&self) -> bool {
        self.decide_asking
    }

    /// The mode a session whose modes are not known (its agent left them out of its
    /// answer) must be put in, where modes decide asking: the one kept for its
    /// conversation while it asks or an admin chose it, else the initial mode, else the
    /// first mode known to ask. `None`: modes do not decide asking here, or none is known
    /// to ask (nothing to put it in).
    pub fn target_unknown(&self, kept: Option<&KeptMode>) -> Option<String> {
        if !self.decide_asking {
            return None;
        }
        if let Some(kept) = kept
            && (self.asks(&kept.mode) || kept.by_admin)
        {
            return Some(kept.mode.clone());
        }
        (self.initial.clone()).or_else(|| self.asking.first().cloned())
    }

    /// What to do when the agent says its session (with `settings`) is now in `reported`,
    /// `kept` being the mode its conversation keeps (the last one accepted).
    pub fn on_report(
        &self,
        reported: &str,
        kept: Option<&KeptMode>,
        settings: &SessionSettings,
    ) -> ModeVerdict {
        if !self.fences(settings) || self.asks(reported) {
            return ModeVerdict::Stays;
        }
        match self.target(settings, kept) {
            // The mode it must be in acts without asking: an admin chose it.
            Ok(Some(target)) if target.eq_ignore_ascii_case(reported) => ModeVerdict::Stays,
            Ok(Some(target)) => ModeVerdict::PutBack(target),
            Ok(None) => ModeVerdict::Stays,
            Err(why) => ModeVerdict::Unfenced(why),
        }
    }

    /// The mode that choosing permission option `option_id` on a call of `kind` switches
    /// the session to, if it does: the dialect's own switches, else an option whose ID is
    /// one of the session's modes.
    pub fn implied_mode(
        &self,
        option_id: &str,
        kind: Option<ToolKind>,
        settings: &SessionSettings,
    ) -> Option<String> {
        if let Some(switch) = self
            .option_modes
            .iter()
            .find(|s| s.matches(option_id, kind))
        {
            return Some(switch.mode.to_owned());
        }
        offered_modes(settings)
            .into_iter()
            .find(|m| m.eq_ignore_ascii_case(option_id))
    }

    /// Whether choosing permission option `option_id` takes an admin: it switches the
    /// session to a mode that does not ask. The mode, if so.
    pub fn option_needs_admin(
        &self,
        option_id: &str,
        kind: Option<ToolKind>,
        settings: &SessionSettings,
    ) -> Option<String> {
        self.implied_mode(option_id, kind, settings)
            .filter(|mode| self.asking(mode) == Asking::DoesNotAsk)
    }

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
                if is_mode_option(settings, option) {
                    return self.check_mode(&value);
                }
                if self.decides_approvals(option, settings) {
                    return Err(PolicyRefusal::AdminOnlyOption(option.clone()));
                }
                // What people may choose is an allowlist: the config's values, else an
                // option of a kind that cannot decide approvals (the model, its effort).
                match self.choosable_values.get(option) {
                    Some(choosable) if !contains(choosable, &value) => {
                        Err(PolicyRefusal::NotChoosable {
                            what: option.clone(),
                            value,
                            choosable: choosable.clone(),
                        })
                    }
                    Some(_) => Ok(()),
                    None if freely_choosable(settings, option) => Ok(()),
                    None => Err(PolicyRefusal::Unlisted(option.clone())),
                }
            }
            SettingPlan::Show(_) | SettingPlan::Refuse(_) => Ok(()),
        }
    }

    /// Whether config option `option` decides whether the agent asks: its dialect says so,
    /// or the agent files it under `permissions` (as Copilot's `allow_all`).
    pub fn decides_approvals(&self, option: &str, settings: &SessionSettings) -> bool {
        self.asking_value(option).is_some()
            || category_of(settings, option).is_some_and(|c| c == PERMISSIONS_CATEGORY)
    }

    /// The value of approval option `option` in which the agent asks, as its dialect
    /// records it (`None`: not recorded; the value the session opened with is kept then).
    pub fn asking_value(&self, option: &str) -> Option<&str> {
        (self.approval_options.iter())
            .find(|(id, _)| id == option)
            .map(|(_, asks)| asks.as_str())
    }

    /// The slash command `text` starts with, if it is one that switches approvals (only
    /// admins send it): its name.
    pub fn approval_command(&self, text: &str) -> Option<String> {
        let word = text
            .trim_start()
            .strip_prefix('/')?
            .split_whitespace()
            .next()?;
        contains(&self.approval_commands, word).then(|| word.to_owned())
    }

    /// Whether permission option `option_id` writes a rule that outlasts the session (only
    /// admins pick it).
    pub fn is_lasting(&self, option_id: &str) -> bool {
        contains(&self.lasting_options, option_id)
    }

    fn check_mode(&self, mode: &str) -> Result<(), PolicyRefusal> {
        if !self.asks(mode) {
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

/// The session's current mode: its session mode, else the value of its mode option.
pub fn current_mode(settings: &SessionSettings) -> Option<String> {
    if !settings.modes.is_empty() {
        return settings.current_mode.clone();
    }
    mode_option(settings).and_then(|o| match &o.value {
        ConfigValue::Choice { current, .. } => Some(current.clone()),
        ConfigValue::Toggle(_) => None,
    })
}

/// The config option category under which agents file what decides approvals (Copilot's
/// `allow_all`).
pub const PERMISSIONS_CATEGORY: &str = "permissions";

/// The config option categories anyone who may prompt may change without the config listing
/// their values: the model, its settings (a fast mode) and its thinking effort, which decide
/// nothing about approvals.
const FREE_CATEGORIES: &[&str] = &["model", "model_config", "thought_level"];

/// The category of `option` among the session's options, if it has one.
fn category_of<'a>(settings: &'a SessionSettings, option: &str) -> Option<&'a str> {
    (settings.options.iter())
        .find(|o| o.id == option)
        .and_then(|o| o.category.as_deref())
}

/// Whether `option` is of a category anyone may change ([`FREE_CATEGORIES`]).
fn freely_choosable(settings: &SessionSettings, option: &str) -> bool {
    category_of(settings, option).is_some_and(|c| FREE_CATEGORIES.contains(&c))
}

/// The modes a session offers: its session modes, else the values of its mode option.
pub fn offered_modes(settings: &SessionSettings) -> Vec<String> {
    if !settings.modes.is_empty() {
        return settings.modes.iter().map(|(id, _)| id.clone()).collect();
    }
    match mode_option(settings).map(|o| &o.value) {
        Some(ConfigValue::Choice { choices, .. }) => {
            choices.iter().map(|(id, _)| id.clone()).collect()
        }
        _ => Vec::new(),
    }
}

/// The config option that holds the session's mode (category `mode`), if any.
pub fn mode_option(settings: &SessionSettings) -> Option<&crate::model::agent::ConfigOption> {
    settings
        .options
        .iter()
        .find(|o| o.category.as_deref() == Some("mode"))
}

/// Whether `option` (an ID) is the session's mode option.
fn is_mode_option(settings: &SessionSettings, option: &str) -> bool {
    settings
        .options
        .iter()
        .any(|o| o.id == option && o.category.as_deref() == Some("mode"))
}

/// Whether `list` names `value` (IDs compare without regard to case).
fn contains(list: &[String], value: &str) -> bool {
    list.iter().any(|v| v.eq_ignore_ascii_case(value))
}

#[cfg(test)]
mod tests;
