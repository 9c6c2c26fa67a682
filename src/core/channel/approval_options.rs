//! Keeping the agent's approval switches that are not modes where they ask: config options
//! that decide whether it asks (Copilot's `allow_all`; any option of category
//! `permissions`), and the slash commands that flip them when sent as a prompt (`/allow-all`).
//! An option is put in the value its dialect records as asking when a session opens (or,
//! unknown, kept as it opened), its change by the agent however it came about (a command in
//! a prompt, the agent itself) is put back unless an admin chose it, and a command that
//! switches approvals is refused to people who are not admins before it reaches the agent.
//! The rules are pure (`core/settings_policy`); this is where the channel carries them out.

use super::Channel;
use crate::model::agent::{AgentError, ConfigChoice, ConfigOption, ConfigValue};
use crate::model::ids::UserId;
use crate::render::strings;

impl Channel {
    /// Puts each approval option of the session just opened in the value its conversation
    /// keeps (an admin's choice), else its asking value, else keeps the value it opened
    /// with. `Err`: the agent refuses, so the session must not be used.
    pub(super) async fn fence_approval_options(&mut self) -> Result<(), AgentError> {
        let rules = self.mode_rules();
        for (option, current) in self.approval_values() {
            let (target, by_admin) = match self.modes.kept_option(&option) {
                Some((value, true)) => (value.to_owned(), true),
                _ => (
                    rules.asking_value(&option).unwrap_or(&current).to_owned(),
                    false,
                ),
            };
            if current != target {
                self.set_approval_option(&option, &target)
                    .await
                    .map_err(|e| {
                        AgentError::Unfenced(strings::initial_refused(
                            &format!("{option} {target}"),
                            &e.to_string(),
                        ))
                    })?;
                tracing::info!(agent = %self.ctx.agent_id, room = %self.key.room, %option, from = %current, to = %target, "approval option put in its asking value");
            }
            self.modes.keep_option(&option, target, by_admin);
        }
        Ok(())
    }

    /// The agent reported its options: an approval option no longer at the value the
    /// conversation keeps is put back (the room told), unless an admin's switch is what
    /// changed it; one that cannot be put back stops the turn (`running`) and leaves the
    /// session, as a mode that cannot be is.
    pub(super) async fn judge_approval_options(&mut self, running: bool) {
        let admin_switch = self.modes.take_admin_switch();
        for (option, current) in self.approval_values() {
            let kept = self
                .modes
                .kept_option(&option)
                .map(|(v, a)| (v.to_owned(), a));
            let Some((kept, by_admin)) = kept else {
                self.modes.keep_option(&option, current, false);
                continue;
            };
            if current == kept {
                continue;
            }
            if admin_switch {
                tracing::info!(agent = %self.ctx.agent_id, room = %self.key.room, %option, value = %current, "an admin's command switched an approval option");
                self.modes.keep_option(&option, current, true);
                continue;
            }
            tracing::warn!(agent = %self.ctx.agent_id, room = %self.key.room, %option, value = %current, back = %kept, by_admin, "the agent switched an approval option no admin chose; putting it back");
            let name = self.ctx.display_name.clone();
            match self.set_approval_option(&option, &kept).await {
                Ok(()) => {
                    let told = strings::option_put_back(&name, &option, &current, &kept);
                    self.notice(told).await;
                }
                Err(e) => {
                    let left = format!("`{option}` {current}");
                    self.unfenced(&left, &e.to_string(), running).await;
                    return;
                }
            }
        }
    }

    /// `!set` changed an option for someone (`admin`: an admin): the approval options' values
    /// now are the conversation's, an admin's choice when an admin made it (the policy lets
    /// no one else change them).
    pub(super) fn approval_options_chosen(&mut self, admin: bool) {
        for (option, current) in self.approval_values() {
            let unchanged = (self.modes.kept_option(&option)).is_some_and(|(v, _)| v == current);
            if !unchanged {
                self.modes.keep_option(&option, current, admin);
            }
        }
    }

    /// Whether slash command `command` (from `by`) may go to the agent: one that switches
    /// approvals only from an admin (whose switch the next report is then); from anyone else
    /// it is refused here, the room told.
    pub(super) async fn approval_command_allowed(&mut self, command: &str, by: &UserId) -> bool {
        let text = format!("/{command}");
        let Some(name) = self.mode_rules().approval_command(&text) else {
            return true;
        };
        if self.ctx.admins.allows(by) {
            tracing::info!(agent = %self.ctx.agent_id, room = %self.key.room, command = %name, by = %by, "an admin sends a command that switches approvals");
            self.modes.admin_switched();
            return true;
        }
        tracing::info!(agent = %self.ctx.agent_id, room = %self.key.room, command = %name, by = %by, "refusing a command that switches approvals from someone who is no admin");
        let who = self.ctx.name_in(&self.key.room, by).await;
        let agent = self.ctx.display_name.clone();
        self.notice(strings::approval_command_for_admins(&who, &agent, &name))
            .await;
        false
    }

    /// The session's approval options and their values, as text.
    fn approval_values(&self) -> Vec<(String, String)> {
        let rules = self.mode_rules();
        let Some(settings) = self.slot.settings() else {
            return Vec::new();
        };
        (settings.options.iter())
            .filter(|o| rules.decides_approvals(&o.id, settings))
            .map(|o| (o.id.clone(), value_text(o)))
            .collect()
    }

    /// Sets approval option `option` to `value` (text, as [`value_text`] gives it).
    async fn set_approval_option(&mut self, option: &str, value: &str) -> Result<(), AgentError> {
        let Some(session) = self.slot.session().cloned() else {
            return Ok(());
        };
        let toggle = (self.slot.settings())
            .and_then(|s| s.options.iter().find(|o| o.id == option))
            .is_some_and(|o| matches!(o.value, ConfigValue::Toggle(_)));
        let choice = match toggle {
            true => ConfigChoice::Toggle(value == "on"),
            false => ConfigChoice::Value(value.to_owned()),
        };
        let options = session.set_option(option, choice).await?;
        if let Some(settings) = self.slot.settings_mut() {
            settings.options = options;
        }
        Ok(())
    }
}

/// An option's value as text: a choice's ID, or `on`/`off`.
fn value_text(option: &ConfigOption) -> String {
    match &option.value {
        ConfigValue::Choice { current, .. } => current.clone(),
        ConfigValue::Toggle(true) => "on".into(),
        ConfigValue::Toggle(false) => "off".into(),
    }
}
