//! Keeping the conversation's session in a mode that asks before the agent acts, whatever
//! the agent's defaults: the session is put in its conversation's mode (or the initial one)
//! whenever it is opened, loaded, resumed or attached, checked again before every prompt,
//! and put back whenever the agent switches itself to a mode no admin chose. The rules are
//! pure (`core/settings_policy`); this is where the channel carries them out.

use super::Channel;
use crate::core::agent::AgentSession;
use crate::core::approvals::OptionSwitch;
use crate::core::settings_policy::{
    Asking, ModeRules, ModeVerdict, Unfenced, current_mode, mode_option, offered_modes,
};
use crate::model::agent::{
    AgentError, ConfigChoice, ConfigOption, ConfigValue, PermissionRequest, SessionSettings,
    ToolKind,
};
use crate::model::ids::UserId;
use crate::model::modes::KeptMode;
use crate::render::strings::{self, ModeNote};

/// The JSON-RPC error of a method the agent does not have.
const METHOD_NOT_FOUND: i64 = -32601;

impl Channel {
    /// The config's policy with what the agent's dialect knows of its modes.
    pub(super) fn mode_rules(&self) -> ModeRules {
        self.ctx.settings.rules(&self.ctx.agent.known_modes())
    }

    /// Puts the session just opened (new, loaded, resumed or attached) in the mode its
    /// conversation keeps, else the initial one, and its approval options in the values
    /// that ask (`approval_options.rs`). `Err`: it cannot be put where it asks, so it must
    /// not be used (the words say why, for the room).
    pub(super) async fn fence_session(&mut self) -> Result<(), AgentError> {
        self.fence_mode().await?;
        self.fence_approval_options().await
    }

    /// Puts the session just opened in the mode its conversation keeps, else the initial
    /// one ([`Channel::fence_session`]).
    async fn fence_mode(&mut self) -> Result<(), AgentError> {
        let rules = self.mode_rules();
        let kept = self.modes.load(&self.ctx.store, &self.key).await;
        let (Some(settings), Some(session)) = (self.slot.settings(), self.slot.session()) else {
            return Ok(());
        };
        // A session whose modes its agent left out of the answer (opened, or got back), where
        // modes decide asking: its mode is not known, so it is set, never assumed.
        if offered_modes(settings).is_empty() && rules.decides_asking() {
            let session = session.clone();
            return self.fence_unknown_mode(&rules, &session, kept).await;
        }
        let target = rules
            .target(settings, kept.as_ref())
            .map_err(|why| AgentError::Unfenced(unfenced_words(&why)))?;
        let Some(target) = target else {
            return Ok(());
        };
        let current = current_mode(settings);
        if !current
            .as_deref()
            .is_some_and(|c| c.eq_ignore_ascii_case(&target))
        {
            if let Err(e) = self.switch_mode(&target).await {
                return Err(AgentError::Unfenced(strings::initial_refused(
                    &target,
                    &e.to_string(),
                )));
            }
            tracing::info!(agent = %self.ctx.agent_id, room = %self.key.room, from = current.as_deref().unwrap_or("(none)"), to = %target, "session put in its conversation's mode");
        }
        let by_admin = kept.is_some_and(|k| k.by_admin && k.mode.eq_ignore_ascii_case(&target));
        self.keep_mode(target, by_admin).await;
        Ok(())
    }

    /// Puts a session whose modes are not known in the mode it must be in
    /// ([`ModeRules::target_unknown`]), and records that it is there. An agent that has no
    /// `session/set_mode` (JSON-RPC "method not found") has no modes: nothing to fence,
    /// unless the conversation kept one, which it then cannot be put back in. `Err`: the
    /// mode could not be set, so the session must not be used.
    async fn fence_unknown_mode(
        &mut self,
        rules: &ModeRules,
        session: &AgentSession,
        kept: Option<KeptMode>,
    ) -> Result<(), AgentError> {
        let Some(target) = rules.target_unknown(kept.as_ref()) else {
            // No mode is known to ask: an agent that never showed modes (none kept for the
            // conversation) has none to fence; one that did cannot be put in an asking one.
            let Some(kept) = kept else {
                self.slot.mark_modeless();
                return Ok(());
            };
            return Err(AgentError::Unfenced(strings::no_asking_mode(&[kept.mode])));
        };
        match session.set_mode(&target).await {
            Ok(()) => {
                tracing::info!(agent = %self.ctx.agent_id, room = %self.key.room, mode = %target, "a session that reported no modes was put in its conversation's mode");
                if let Some(settings) = self.slot.settings_mut() {
                    // A session that took a mode offers it, and is in it.
                    settings.modes = vec![(target.clone(), target.clone())];
                    settings.current_mode = Some(target.clone());
                }
                let by_admin = kept.is_some_and(|k| k.by_admin && k.mode == target);
                self.keep_mode(target, by_admin).await;
                Ok(())
            }
            Err(AgentError::Rpc {
                code: METHOD_NOT_FOUND,
                ..
            }) if kept.is_none() => {
                self.slot.mark_modeless();
                Ok(())
            }
            Err(e) => {
                tracing::warn!(agent = %self.ctx.agent_id, room = %self.key.room, mode = %target, error = %e, "a session that reported no modes could not be put in a mode that asks; it is not used");
                Err(AgentError::Unfenced(strings::initial_refused(
                    &target,
                    &e.to_string(),
                )))
            }
        }
    }

    /// Before a prompt goes out: the session must be in a mode that asks, or one an admin
    /// chose. `false`: it is not and could not be put back (the room was told, the session
    /// left); the prompt must not go. A session whose mode is not known is prompted only
    /// where modes do not decide asking or its agent has none.
    pub(super) async fn mode_allows_prompt(&mut self) -> bool {
        let Some(current) = self.slot.settings().and_then(current_mode) else {
            if !self.mode_rules().decides_asking() || self.slot.is_modeless() {
                return true;
            }
            tracing::error!(agent = %self.ctx.agent_id, room = %self.key.room, "the session's mode is not known, where modes decide whether it asks; leaving it");
            let name = self.ctx.display_name.clone();
            self.notice(strings::mode_unknown(&name)).await;
            self.leave_session().await;
            return false;
        };
        self.judge_mode(&current, false).await
    }

    /// The agent says its session is now in `mode` (`current_mode_update`, or a mode option
    /// changed): kept when it asks or an admin chose it, else put back. `running`: during a
    /// turn, which is stopped if the mode cannot be put back.
    pub(super) async fn on_mode_report(&mut self, mode: String, running: bool) {
        if let Some(settings) = self.slot.settings_mut() {
            record_mode(settings, &mode);
        }
        self.judge_mode(&mode, running).await;
    }

    /// The agent's config options changed: a changed mode option is a mode report.
    pub(super) async fn on_options(&mut self, options: Vec<ConfigOption>, running: bool) {
        let Some(settings) = self.slot.settings_mut() else {
            return;
        };
        let before = current_mode(settings);
        settings.options = options;
        let after = current_mode(settings);
        if settings.modes.is_empty()
            && let Some(mode) = after.filter(|a| Some(a) != before.as_ref())
        {
            self.judge_mode(&mode, running).await;
        }
        // An option that decides asking besides modes, changed by the agent.
        self.judge_approval_options(running).await;
    }

    /// A poll choice that switched the mode was picked (by an admin, when the mode does not
    /// ask): the session is in `mode` now, and the conversation keeps it.
    pub(super) async fn mode_chosen_in_poll(&mut self, mode: String, by: &UserId) {
        let by_admin = self.ctx.admins.allows(by);
        // Some agents switch without telling the client (Gemini CLI's auto-edit).
        if let Some(settings) = self.slot.settings_mut() {
            record_mode(settings, &mode);
        }
        tracing::info!(agent = %self.ctx.agent_id, room = %self.key.room, %mode, by = %by, by_admin, "a poll choice switched the mode");
        self.keep_mode(mode, by_admin).await;
    }

    /// The options of `request` (about a call of `kind`) that do more than answer (switch the
    /// session's mode, or outlast the session), and whether only an admin may choose each.
    pub(super) fn option_switches(
        &self,
        request: &PermissionRequest,
        kind: Option<ToolKind>,
    ) -> Vec<OptionSwitch> {
        let rules = self.mode_rules();
        let Some(settings) = self.slot.settings() else {
            return Vec::new();
        };
        // Mode switches matter where modes decide asking; a lasting answer anywhere.
        let fences = rules.fences(settings);
        (request.options.iter())
            .filter_map(|o| {
                let mode = (rules.implied_mode(o.id.as_str(), kind, settings)).filter(|_| fences);
                let lasting = rules.is_lasting(o.id.as_str());
                if mode.is_none() && !lasting {
                    return None;
                }
                let stops_asking = fences
                    && rules
                        .option_needs_admin(o.id.as_str(), kind, settings)
                        .is_some();
                Some(OptionSwitch {
                    option: o.id.clone(),
                    mode,
                    needs_admin: stops_asking || lasting,
                })
            })
            .collect()
    }

    /// `!mode` (or `!set` of the mode option) changed the mode to `mode`, for `by`.
    pub(super) async fn mode_chosen(&mut self, mode: String, by: &UserId) {
        let by_admin = self.ctx.admins.allows(by);
        self.keep_mode(mode, by_admin).await;
    }

    /// How `mode` reads for people in this session.
    pub(super) fn mode_note(&self, mode: &str) -> ModeNote {
        let rules = self.mode_rules();
        match rules.asking(mode) {
            Asking::Asks => ModeNote::Asks,
            Asking::NotByMode => ModeNote::NotByMode,
            Asking::DoesNotAsk => {
                let allowed = self.slot.settings().is_some_and(|s| {
                    rules.on_report(mode, self.modes.kept(), s) == ModeVerdict::Stays
                });
                match allowed {
                    true => ModeNote::ActsUnasked,
                    false => ModeNote::AdminsOnly,
                }
            }
        }
    }

    /// Keeps `mode` if it may stay, else puts the mode it must be in back; stops the turn
    /// and leaves the session when that fails. `true`: the session may be used.
    async fn judge_mode(&mut self, mode: &str, running: bool) -> bool {
        let rules = self.mode_rules();
        let Some(settings) = self.slot.settings() else {
            return true;
        };
        let verdict = rules.on_report(mode, self.modes.kept(), settings);
        let fences = rules.fences(settings);
        let name = &self.ctx.display_name.clone();
        let label = |s: &Self, m: &str| s.mode_label(m);
        match verdict {
            ModeVerdict::Stays => {
                if fences {
                    let by_admin = self.modes.chosen_by_admin(mode);
                    self.keep_mode(mode.to_owned(), by_admin).await;
                }
                true
            }
            ModeVerdict::PutBack(back) => {
                let left = label(self, mode);
                tracing::warn!(agent = %self.ctx.agent_id, room = %self.key.room, %mode, put_back = %back, "the agent switched to a mode that does not ask and no admin chose; putting the asking mode back");
                match self.switch_mode(&back).await {
                    Ok(()) => {
                        let back_label = label(self, &back);
                        self.notice(strings::mode_put_back(name, &left, &back_label))
                            .await;
                        true
                    }
                    Err(e) => {
                        self.unfenced(&left, &e.to_string(), running).await;
                        false
                    }
                }
            }
            ModeVerdict::Unfenced(why) => {
                let left = label(self, mode);
                self.unfenced(&left, &unfenced_words(&why), running).await;
                false
            }
        }
    }

    /// The session is in a mode that does not ask and cannot be put back: the room is told;
    /// the running turn (if any) is stopped by the turn's loop, and the session is left.
    pub(super) async fn unfenced(&mut self, left: &str, why: &str, running: bool) {
        tracing::error!(agent = %self.ctx.agent_id, room = %self.key.room, mode = %left, why, "the session is in a mode that does not ask and could not be put back; leaving it");
        let name = self.ctx.display_name.clone();
        self.notice(strings::mode_not_put_back(&name, left, why))
            .await;
        match running {
            // The turn's loop cancels the prompt, then leaves the session.
            true => self.modes.lose_turn(),
            false => self.leave_session().await,
        }
    }

    /// Switches the session to `mode`, the way the agent offers modes.
    async fn switch_mode(&mut self, mode: &str) -> Result<(), AgentError> {
        let Some(session) = self.slot.session().cloned() else {
            return Ok(());
        };
        let Some(settings) = self.slot.settings_mut() else {
            return Ok(());
        };
        if !settings.modes.is_empty() {
            session.set_mode(mode).await?;
            settings.current_mode = Some(mode.to_owned());
            set_mode_option(&mut settings.options, mode);
            return Ok(());
        }
        let Some(option) = mode_option(settings).map(|o| o.id.clone()) else {
            return Ok(());
        };
        let choice = ConfigChoice::Value(mode.to_owned());
        settings.options = session.set_option(&option, choice).await?;
        Ok(())
    }

    /// Records `mode` as the conversation's, in memory and in the store.
    async fn keep_mode(&mut self, mode: String, by_admin: bool) {
        (self.modes)
            .keep(&self.ctx.store, &self.key, mode, by_admin)
            .await;
    }

    /// A mode as people read it: its name, else its ID.
    pub(super) fn mode_label(&self, mode: &str) -> String {
        let named = self.slot.settings().and_then(|s| {
            (s.modes.iter())
                .find(|(id, _)| id.eq_ignore_ascii_case(mode))
                .map(|(_, name)| name.clone())
                .or_else(|| match mode_option(s).map(|o| &o.value) {
                    Some(ConfigValue::Choice { choices, .. }) => (choices.iter())
                        .find(|(id, _)| id.eq_ignore_ascii_case(mode))
                        .map(|(_, name)| name.clone()),
                    _ => None,
                })
        });
        named.unwrap_or_else(|| mode.to_owned())
    }
}

/// Records that the session is in `mode` now: its current mode, or its mode option's
/// value where it offers modes only as an option.
fn record_mode(settings: &mut SessionSettings, mode: &str) {
    if settings.modes.is_empty() {
        set_mode_option(&mut settings.options, mode);
    } else {
        settings.current_mode = Some(mode.to_owned());
    }
}

/// Sets the value of the mode option among `options` (a session that offers both modes and
/// a mode option keeps them in step).
fn set_mode_option(options: &mut [ConfigOption], mode: &str) {
    for option in options.iter_mut() {
        if option.category.as_deref() == Some("mode")
            && let ConfigValue::Choice { current, choices } = &mut option.value
            && choices.iter().any(|(id, _)| id.eq_ignore_ascii_case(mode))
        {
            *current = mode.to_owned();
        }
    }
}

/// Why no session can be used, in words for the room.
fn unfenced_words(why: &Unfenced) -> String {
    match why {
        Unfenced::NoAskingMode { offered } => strings::no_asking_mode(offered),
        Unfenced::InitialNotOffered { initial, offered } => {
            strings::initial_not_offered(initial, offered)
        }
    }
}
