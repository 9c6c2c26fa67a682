//! The mode the conversation keeps, a part of its own: as last read from or written to the
//! store, and whether the running turn's session left the asking modes for good. What to
//! do about a mode is the channel's (`modes.rs`, on the pure rules of
//! `core::settings_policy`).

use crate::model::ids::ConversationKey;
use crate::model::modes::KeptMode;
use crate::store::{LogFailure, Store};

/// The conversation's kept mode.
#[derive(Default)]
pub(super) struct ModeKeeper {
    /// The mode, as last read from or written to the store.
    kept: Option<KeptMode>,
    /// Set during a turn when the session went to a mode that does not ask and could not
    /// be put back: the turn is stopped and the session left.
    lost: bool,
    /// The values the conversation keeps for the agent's approval options (those that
    /// decide whether it asks besides modes): option ID → (value, whether an admin chose
    /// it). Kept while the gateway runs: after a restart the asking values come back.
    options: std::collections::HashMap<String, (String, bool)>,
    /// An admin sent a slash command that switches approvals: the next change the agent
    /// reports of an approval option is theirs.
    admin_switch: bool,
}

impl ModeKeeper {
    /// Reads the conversation's mode from the store (none on a failure, logged).
    pub(super) async fn load(&mut self, store: &Store, key: &ConversationKey) -> Option<KeptMode> {
        self.kept = (store.kept_mode(key).await)
            .or_log("could not read the conversation's mode")
            .flatten();
        self.kept.clone()
    }

    /// The mode the conversation keeps.
    pub(super) fn kept(&self) -> Option<&KeptMode> {
        self.kept.as_ref()
    }

    /// Whether an admin chose `mode` for the conversation.
    pub(super) fn chosen_by_admin(&self, mode: &str) -> bool {
        (self.kept.as_ref()).is_some_and(|k| k.by_admin && k.mode.eq_ignore_ascii_case(mode))
    }

    /// Records `mode` as the conversation's, in memory and in the store (written only when
    /// it changed).
    pub(super) async fn keep(
        &mut self,
        store: &Store,
        key: &ConversationKey,
        mode: String,
        by_admin: bool,
    ) {
        let kept = KeptMode { mode, by_admin };
        if self.kept.as_ref() == Some(&kept) {
            return;
        }
        (store.keep_mode(key, &kept).await).or_log("could not record the conversation's mode");
        self.kept = Some(kept);
    }

    /// The value the conversation keeps for approval option `option`, and whether an admin
    /// chose it.
    pub(super) fn kept_option(&self, option: &str) -> Option<(&str, bool)> {
        (self.options.get(option)).map(|(value, by_admin)| (value.as_str(), *by_admin))
    }

    /// Keeps `value` for approval option `option` (`by_admin`: an admin chose it).
    pub(super) fn keep_option(&mut self, option: &str, value: String, by_admin: bool) {
        self.options.insert(option.to_owned(), (value, by_admin));
    }

    /// Notes that an admin sent a slash command that switches approvals.
    pub(super) fn admin_switched(&mut self) {
        self.admin_switch = true;
    }

    /// Whether an admin's approval switch waits to be reported; forgets it.
    pub(super) fn take_admin_switch(&mut self) -> bool {
        std::mem::take(&mut self.admin_switch)
    }

    /// The running turn's session is in a mode that does not ask and could not be put
    /// back: the turn must stop, and the session be left.
    pub(super) fn lose_turn(&mut self) {
        self.lost = true;
    }

    /// Whether the running turn's session was lost to a mode that does not ask.
    pub(super) fn turn_lost(&self) -> bool {
        self.lost
    }

    /// Whether the turn that just ended lost its session so; forgets it.
    pub(super) fn take_lost(&mut self) -> bool {
        std::mem::take(&mut self.lost)
    }
}
