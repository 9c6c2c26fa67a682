//! `!mode`, `!model` and `!set`: showing or changing the session's settings, within what the
//! agent's settings policy lets the person asking choose. The three commands
//! (`commands/mode.rs`, `model.rs`, `set.rs`) each hand their request here.

use super::Channel;
use crate::core::session_settings::{self, Refusal, SettingPlan, SettingRequest, Shown};
use crate::core::settings_policy::{PolicyRefusal, mode_option};
use crate::model::agent::{ConfigChoice, ConfigOption, ConfigValue, SessionSettings};
use crate::model::ids::UserId;
use crate::render::strings;
use crate::render::strings::ModeNote;

impl Channel {
    /// `!mode`, `!model`, `!set`: shows or changes the session's settings, in place only.
    /// Requests are handled one at a time in the order they came, so the last one asked
    /// for is what the session ends up with. During a turn (`running`) the change is made
    /// all the same (ACP allows it), and the turn's updates are left to the turn.
    /// Someone who is not an admin changes only what the agent's settings policy lets them.
    pub(super) async fn change_setting(
        &mut self,
        request: SettingRequest,
        by: &UserId,
        running: bool,
    ) {
        // During a turn the turn's session is the one to change: it is never replaced here,
        // even if its process just died (the turn ends with that error by itself).
        let session_gone = (self.slot.session()).is_none_or(|session| !session.alive());
        if running && session_gone {
            self.notice(strings::settings_session_gone(&self.ctx.display_name))
                .await;
            return;
        }
        let Some(_lease) = self.session_for_command().await else {
            return;
        };
        if !running {
            // Updates since the last turn may have changed the settings.
            self.drain_events(None).await;
        }
        let Some(settings) = self.slot.settings().cloned() else {
            return;
        };
        let plan = session_settings::plan(&settings, &request);
        let admin = self.ctx.admins.allows(by);
        if let Err(refusal) = self.mode_rules().check(&plan, &settings, admin) {
            return self.refuse_setting(refusal, by).await;
        }
        let (ctx, who) = (self.ctx.clone(), (by, admin));
        let (name, prefix) = (&ctx.display_name, &ctx.command_prefix);
        let text = match plan {
            SettingPlan::Show(shown) => self.shown_settings(shown, &request),
            SettingPlan::SetMode(mode) => self.set_mode_for(mode, who).await,
            SettingPlan::SetOption(option, value) => {
                let is_mode_option = mode_option(&settings).is_some_and(|o| o.id == option);
                match self
                    .set_option_for(option, value, is_mode_option, who)
                    .await
                {
                    Some(text) => text,
                    None => return,
                }
            }
            SettingPlan::Refuse(Refusal::NotOffered(what)) => {
                strings::setting_not_offered(name, what, prefix, ctx.agent_id.as_str())
            }
            SettingPlan::Refuse(Refusal::Unknown { asked, choices }) => {
                strings::no_such_choice(&asked, &choices)
            }
        };
        self.notice(text).await;
    }

    /// Tells `by` why the settings policy refuses them the change they asked for.
    async fn refuse_setting(&self, refusal: PolicyRefusal, by: &UserId) {
        let name = &self.ctx.display_name;
        tracing::info!(agent = %self.ctx.agent_id, room = %self.key.room, sender = %by, ?refusal, "refusing a settings change its sender may not make");
        // Who asked, as the room shows them.
        let who = self.ctx.name_in(&self.key.room, by).await;
        let text = match refusal {
            PolicyRefusal::AdminOnly(m) => strings::mode_for_admins(&who, name, &m),
            PolicyRefusal::AdminOnlyOption(option) => {
                strings::option_for_admins(&who, name, &option)
            }
            PolicyRefusal::Unlisted(option) => strings::unlisted_option(&who, name, &option),
            PolicyRefusal::NotChoosable {
                what,
                value,
                choosable,
            } => strings::not_choosable(&who, &what, &value, &choosable),
        };
        self.notice(text).await;
    }

    /// What `!mode`, `!model` or `!set` without a value shows: the choices there are, and
    /// how to make one (`request` is what was asked).
    fn shown_settings(&self, shown: Shown, request: &SettingRequest) -> String {
        let (name, prefix) = (&self.ctx.display_name, &self.ctx.command_prefix);
        match shown {
            Shown::Modes(modes, current) => {
                let noted: Vec<(String, String, ModeNote)> = (modes.into_iter())
                    .map(|(id, label)| {
                        let note = self.mode_note(&id);
                        (id, label, note)
                    })
                    .collect();
                let how = format!("{prefix}mode NAME");
                strings::mode_choices(name, current.as_deref(), &noted, &how)
            }
            Shown::Option(option) => {
                let how = match request {
                    SettingRequest::Model(_) => format!("{prefix}model NAME"),
                    SettingRequest::Mode(_) => format!("{prefix}mode NAME"),
                    SettingRequest::Option(..) => format!("{prefix}set {} VALUE", option.id),
                };
                match &option.value {
                    ConfigValue::Choice { current, choices } => strings::choices(
                        name,
                        &option.name.to_lowercase(),
                        Some(current),
                        choices,
                        &how,
                    ),
                    ConfigValue::Toggle(on) => strings::options(
                        name,
                        &[(option.id.clone(), option.name.clone(), on_off(*on))],
                        prefix,
                    ),
                }
            }
            Shown::Options(options) => {
                let lines: Vec<(String, String, String)> = (options.iter())
                    .map(|o| (o.id.clone(), o.name.clone(), option_value(o)))
                    .collect();
                strings::options(name, &lines, prefix)
            }
        }
    }

    /// Switches the session to `mode` for `by` (`admin`: whether they are one); the
    /// answer says what became of it.
    async fn set_mode_for(&mut self, mode: String, (by, admin): (&UserId, bool)) -> String {
        let ctx = self.ctx.clone();
        let name = &ctx.display_name;
        let Some(session) = self.slot.session().cloned() else {
            return strings::settings_session_gone(name);
        };
        match session.set_mode(&mode).await {
            Ok(()) => {
                tracing::info!(agent = %ctx.agent_id, room = %self.key.room, %mode, by = %by, admin, "mode switched");
                if let Some(settings) = self.slot.settings_mut() {
                    settings.current_mode = Some(mode.clone());
                }
                self.mode_chosen(mode.clone(), by).await;
                strings::mode_changed(name, &self.mode_label(&mode), self.mode_note(&mode))
            }
            Err(e) => strings::setting_failed(name, &e.to_string()),
        }
    }

    /// Sets config option `option` to `value` for `by` (`admin`: whether they are one); a
    /// change of the mode option (`is_mode_option`) is a mode the conversation keeps. The
    /// answer says what became of it (`None`: the session is gone, nothing to say).
    async fn set_option_for(
        &mut self,
        option: String,
        value: ConfigChoice,
        is_mode_option: bool,
        (by, admin): (&UserId, bool),
    ) -> Option<String> {
        let ctx = self.ctx.clone();
        let name = &ctx.display_name;
        let picked_mode = match (&value, is_mode_option) {
            (ConfigChoice::Value(mode), true) => Some(mode.clone()),
            _ => None,
        };
        let session = self.slot.session().cloned()?;
        let options = match session.set_option(&option, value).await {
            Ok(options) => options,
            Err(e) => return Some(strings::setting_failed(name, &e.to_string())),
        };
        tracing::info!(agent = %ctx.agent_id, room = %self.key.room, %option, by = %by, admin, "config option changed");
        self.slot.settings_mut()?.options = options;
        if let Some(mode) = picked_mode {
            self.mode_chosen(mode, by).await;
        }
        self.approval_options_chosen(admin);
        let settings: &SessionSettings = self.slot.settings()?;
        Some(match settings.options.iter().find(|o| o.id == option) {
            Some(o) => strings::setting_changed(name, &o.name.to_lowercase(), &option_value(o)),
            None => strings::setting_changed(name, &option, "changed"),
        })
    }
}

/// A config option's value as people read it.
fn option_value(option: &ConfigOption) -> String {
    match &option.value {
        ConfigValue::Choice { current, choices } => choices
            .iter()
            .find(|(id, _)| id == current)
            .map(|(_, name)| name.clone())
            .unwrap_or_else(|| current.clone()),
        ConfigValue::Toggle(on) => on_off(*on),
    }
}

/// A toggle as people read it.
fn on_off(on: bool) -> String {
    match on {
        true => "on".to_owned(),
        false => "off".to_owned(),
    }
}
