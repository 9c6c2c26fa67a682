//! Chat commands a channel carries out itself: `!commands`, `!mode`, `!model`, `!set`, `!logs`.

use super::*;
use std::time::Duration;

use crate::core::command::Command;
use crate::core::command::registry::Kind;
use crate::core::pool::Lease;
use crate::core::session_settings::{self, Refusal, SettingPlan, SettingRequest, Shown};
use crate::core::settings_policy::{PolicyRefusal, mode_option};
use crate::model::agent::{ConfigChoice, ConfigValue};
use crate::model::ids::UserId;
use crate::render::strings;
use crate::render::strings::ModeNote;

/// How long a new session's command list may take to arrive after `session/new` (agents
/// send it right after their answer).
const COMMANDS_GRACE: Duration = Duration::from_secs(1);

impl Channel {
    /// Answers a command for this agent that does not act on the running turn (those are
    /// handled in [`Channel::handle_input_during_turn`]); room commands are the gateway's.
    pub(super) async fn answer_command(&mut self, command: &Command, by: &UserId, running: bool) {
        let (first, second) = (command.arg(0), command.arg(1));
        let text = match command.kind() {
            Some(Kind::Stop) => strings::NOTHING_TO_STOP.to_owned(),
            Some(Kind::Allow | Kind::Always | Kind::Deny | Kind::Reject) => {
                strings::NO_OPEN_POLL.to_owned()
            }
            // Only reaches here during a turn: a session cannot change under it.
            Some(Kind::New) => strings::FRESH_START_WHILE_RUNNING.to_owned(),
            Some(Kind::Logs) => return self.show_stderr(true).await,
            Some(Kind::Commands) => {
                let Some(_lease) = self.session_for_command().await else {
                    return;
                };
                // During a turn the session's updates are the turn's: never drained here.
                if !running {
                    self.await_commands().await;
                }
                strings::agent_commands(&self.agent_line(), self.several_agents_here().await)
            }
            Some(Kind::Mode) => {
                let request = SettingRequest::Mode(first.map(str::to_owned));
                return self.change_setting(request, by, running).await;
            }
            Some(Kind::Model) => {
                let request = SettingRequest::Model(first.map(str::to_owned));
                return self.change_setting(request, by, running).await;
            }
            Some(Kind::Set) => {
                let (option, value) = (first.map(str::to_owned), second.map(str::to_owned));
                let request = SettingRequest::Option(option, value);
                return self.change_setting(request, by, running).await;
            }
            Some(Kind::File) => return self.file_command(&command.words().join(" ")).await,
            Some(Kind::Sessions) => return self.sessions_command().await,
            Some(Kind::Login) => return self.login_command(first, by).await,
            Some(Kind::Attach) => return self.attach_command(first, running).await,
            Some(Kind::Worktree) => return self.worktree_command(first, running).await,
            // The room's commands are the gateway's (`Gateway::room_command`).
            None
            | Some(
                Kind::Help
                | Kind::Agents
                | Kind::Status
                | Kind::Show
                | Kind::Default
                | Kind::Handoff
                | Kind::Threads,
            ) => {
                tracing::warn!(agent = %self.ctx.agent_id, ?command, "a room command reached a channel; the gateway answers those");
                return;
            }
        };
        self.notice(text).await;
    }

    /// Opens the session a command needs, with a pool lease to hold while the command
    /// works on it (so the pool does not stop the agent meanwhile); says why in the room
    /// when it cannot. During a turn the agent already has a lease, so this one comes at
    /// once.
    pub(super) async fn session_for_command(&mut self) -> Option<Lease> {
        let lease = self.lease().await;
        self.open_session().await.then_some(lease)
    }

    /// The agent's command list arrives just after `session/new`: waits a moment for it
    /// when the session is new and the list is still empty.
    pub(super) async fn await_commands(&mut self) {
        let fresh = self.session.as_ref().is_some_and(|s| s.fresh);
        self.drain_events(None).await;
        if !fresh || !self.commands.is_empty() {
            return;
        }
        let deadline = tokio::time::Instant::now() + COMMANDS_GRACE;
        while self.commands.is_empty() {
            let Some(session) = self.session.as_mut() else {
                return;
            };
            match tokio::time::timeout_at(deadline, session.events.recv()).await {
                Ok(Some(event)) => self.handle_event(event, None).await,
                Ok(None) | Err(_) => return,
            }
        }
    }

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
        let session_gone = self
            .session
            .as_ref()
            .is_none_or(|s| !self.ctx.agent.session_alive(&s.id));
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
        let ctx = self.ctx.clone();
        let prefix = &ctx.command_prefix;
        let name = &ctx.display_name;
        let rules = self.mode_rules();
        let Some(session) = self.session.as_ref() else {
            return;
        };
        let plan = session_settings::plan(&session.settings, &request);
        let admin = ctx.admins.allows(by);
        if let Err(refusal) = rules.check(&plan, &session.settings, admin) {
            tracing::info!(agent = %ctx.agent_id, room = %self.key.room, sender = %by, ?refusal, "refusing a settings change its sender may not make");
            let text = match refusal {
                PolicyRefusal::AdminOnly(m) => strings::mode_for_admins(by.as_str(), name, &m),
                PolicyRefusal::AdminOnlyOption(option) => {
                    strings::option_for_admins(by.as_str(), name, &option)
                }
                PolicyRefusal::NotChoosable {
                    what,
                    value,
                    choosable,
                } => strings::not_choosable(by.as_str(), &what, &value, &choosable),
            };
            return self.notice(text).await;
        }
        let is_mode_option =
            |option: &str| mode_option(&session.settings).is_some_and(|o| o.id == option);
        let text = match plan {
            SettingPlan::Show(Shown::Modes(modes, current)) => {
                let noted: Vec<(String, String, ModeNote)> = modes
                    .into_iter()
                    .map(|(id, label)| {
                        let note = self.mode_note(&id);
                        (id, label, note)
                    })
                    .collect();
                strings::mode_choices(
                    name,
                    current.as_deref(),
                    &noted,
                    &format!("{prefix}mode NAME"),
                )
            }
            SettingPlan::Show(Shown::Option(option)) => {
                let how = match &request {
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
            SettingPlan::Show(Shown::Options(options)) => {
                let lines: Vec<(String, String, String)> = options
                    .iter()
                    .map(|o| (o.id.clone(), o.name.clone(), option_value(o)))
                    .collect();
                strings::options(name, &lines, prefix)
            }
            SettingPlan::SetMode(mode) => match ctx.agent.set_mode(&session.id, &mode).await {
                Ok(()) => {
                    tracing::info!(agent = %ctx.agent_id, room = %self.key.room, %mode, by = %by, admin, "mode switched");
                    if let Some(session) = self.session.as_mut() {
                        session.settings.current_mode = Some(mode.clone());
                    }
                    self.mode_chosen(mode.clone(), by).await;
                    strings::mode_changed(name, &self.mode_label(&mode), self.mode_note(&mode))
                }
                Err(e) => strings::setting_failed(name, &e.to_string()),
            },
            SettingPlan::SetOption(option, value) => {
                let picked_mode = match (&value, is_mode_option(&option)) {
                    (ConfigChoice::Value(mode), true) => Some(mode.clone()),
                    _ => None,
                };
                match ctx.agent.set_option(&session.id, &option, value).await {
                    Ok(options) => {
                        tracing::info!(agent = %ctx.agent_id, room = %self.key.room, %option, by = %by, admin, "config option changed");
                        let Some(session) = self.session.as_mut() else {
                            return;
                        };
                        session.settings.options = options;
                        if let Some(mode) = picked_mode {
                            self.mode_chosen(mode, by).await;
                        }
                        let Some(session) = self.session.as_ref() else {
                            return;
                        };
                        match session.settings.options.iter().find(|o| o.id == option) {
                            Some(o) => strings::setting_changed(
                                name,
                                &o.name.to_lowercase(),
                                &option_value(o),
                            ),
                            None => strings::setting_changed(name, &option, "changed"),
                        }
                    }
                    Err(e) => strings::setting_failed(name, &e.to_string()),
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
}

/// A config option's value as people read it.
fn option_value(option: &crate::model::agent::ConfigOption) -> String {
    match &option.value {
        ConfigValue::Choice { current, choices } => choices
            .iter()
            .find(|(id, _)| id == current)
            .map(|(_, name)| name.clone())
            .unwrap_or_else(|| current.clone()),
        ConfigValue::Toggle(on) => on_off(*on),
    }
}

fn on_off(on: bool) -> String {
    match on {
        true => "on".to_owned(),
        false => "off".to_owned(),
    }
}
