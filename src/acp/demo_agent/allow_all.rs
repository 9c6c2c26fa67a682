//! The demo agent's approval switch that is not a mode (`--allow-all`), as GitHub Copilot's
//! CLI has it: a config option `allow_all` of category `permissions`, `off` by default; when
//! `on`, its tools run unasked whatever the mode. The slash command `/allow-all on|off`
//! sent as a prompt, and `%allow-all on|off` in a scripted turn (the agent flipping it by
//! itself), turn it on or off and report it (`config_option_update`).

use agent_client_protocol::v1::schema::{
    ConfigOptionUpdate, SessionConfigOption, SessionConfigOptionCategory,
    SessionConfigSelectOption, SessionUpdate,
};

use super::State;
use super::turn::Turn;

impl State {
    /// Whether `allow_all` is on in `session`.
    pub(super) fn allows_all(&self, session: &str) -> bool {
        (self.allow_all.as_ref()).is_some_and(|on| on.lock().unwrap().contains(session))
    }

    /// Turns `allow_all` on or off in `session`.
    pub(super) fn set_allow_all(&self, session: &str, on: bool) {
        if let Some(sessions) = &self.allow_all {
            let mut sessions = sessions.lock().unwrap();
            match on {
                true => sessions.insert(session.to_owned()),
                false => sessions.remove(session),
            };
        }
    }

    /// The `allow_all` option of `session`, with `--allow-all`.
    pub(super) fn allow_all_option(&self, session: &str) -> Option<SessionConfigOption> {
        self.allow_all.as_ref()?;
        let current = match self.allows_all(session) {
            true => "on",
            false => "off",
        };
        let choices = vec![
            SessionConfigSelectOption::new("on", "On"),
            SessionConfigSelectOption::new("off", "Off"),
        ];
        Some(
            SessionConfigOption::select("allow_all", "Allow All", current, choices)
                .category(SessionConfigOptionCategory::Other("permissions".into())),
        )
    }
}

impl Turn {
    /// `/allow-all on|off` or `%allow-all on|off` (`words`, after the name for the
    /// command): turns it on or off, reports the options, and says `allow-all: on|off`.
    pub(super) fn allow_all(&self, words: &str) -> Result<(), agent_client_protocol::Error> {
        let on = words.split_whitespace().any(|w| w == "on");
        self.state.set_allow_all(&self.session, on);
        self.update(SessionUpdate::ConfigOptionUpdate(ConfigOptionUpdate::new(
            self.state.config_options(&self.session),
        )))?;
        self.say(&format!("allow-all: {}\n", if on { "on" } else { "off" }))
    }
}
