//! Reloading the config on SIGHUP. What can change safely while the gateway runs changes at
//! once, for every agent and room: the access lists (`allowed_users`, `approvers`, `admins`,
//! `deny`), `[display]`, `[streaming]` and `[permissions]`. A turn or a poll already under
//! way keeps the settings it started with; the next one takes the new ones. Everything else
//! is compared with the running config and logged as needing a restart. A config that does
//! not load is refused with its problems, and the running settings stay.

use tokio::signal::unix::{Signal, SignalKind, signal};
use tokio_util::sync::CancellationToken;

use crate::config::Config;
use crate::core::gateway::AccessRules;
use crate::core::poll::PermissionSettings;
use crate::core::reloadable::Reloadable;
use crate::core::view::stream::StreamSettings;
use crate::model::Verbosity;

/// The display, streaming and permission settings every agent shares, each in a cell that
/// a reload changes.
#[derive(Clone)]
pub(super) struct LiveSettings {
    /// `[streaming]`.
    pub stream: Reloadable<StreamSettings>,
    /// `[permissions]`.
    pub permissions: Reloadable<PermissionSettings>,
    /// `[display] show`.
    pub verbosity: Reloadable<Verbosity>,
}

impl LiveSettings {
    /// The settings `config` gives.
    pub fn from_config(config: &Config) -> Self {
        Self {
            stream: Reloadable::new(config.stream_settings()),
            permissions: Reloadable::new(config.permissions.clone()),
            verbosity: Reloadable::new(config.display.show),
        }
    }

    /// Takes `config`'s settings in place; returns the sections that changed.
    fn apply(&self, config: &Config) -> Vec<&'static str> {
        let changed = [
            ("display", self.verbosity.set(config.display.show)),
            ("streaming", self.stream.set(config.stream_settings())),
            (
                "permissions",
                self.permissions.set(config.permissions.clone()),
            ),
        ];
        changed
            .into_iter()
            .filter(|(_, changed)| *changed)
            .map(|(name, _)| name)
            .collect()
    }
}

/// Takes SIGHUP from now on (its default is to end the process), for [`watch`].
pub(super) fn hangups() -> Option<Signal> {
    match signal(SignalKind::hangup()) {
        Ok(hangups) => Some(hangups),
        Err(e) => {
            tracing::warn!(error = %e, "cannot listen for SIGHUP; the config is not reloadable");
            None
        }
    }
}

/// Reloads the config from the file it was read from at every SIGHUP (`hangups`) until
/// `stop`; `running` is the config the gateway started with, `access` the lists it acts on
/// and `live` the other settings a reload changes. Nothing is reloaded when the config was
/// read from no file or SIGHUP could not be taken.
pub(super) fn watch(
    hangups: Option<Signal>,
    running: &Config,
    access: &AccessRules,
    live: LiveSettings,
    stop: CancellationToken,
) {
    let (Some(path), Some(mut hangups)) = (running.source.clone(), hangups) else {
        return;
    };
    let (mut running, access) = (running.clone(), access.clone());
    tokio::spawn(async move {
        loop {
            tokio::select! {
                _ = stop.cancelled() => return,
                got = hangups.recv() => if got.is_none() { return },
            }
            tracing::info!(config = %path.display(), "SIGHUP: reloading the config");
            match Config::load(&path) {
                Ok(new) => {
                    apply(&running, &new, &access, &live);
                    running = new;
                }
                Err(e) => {
                    tracing::error!(error = %e, "the config was not reloaded; the running settings stay");
                }
            }
        }
    });
}

/// Applies what can change of `new` to `access` and `live`, and logs what changed and what
/// waits for a restart.
fn apply(running: &Config, new: &Config, access: &AccessRules, live: &LiveSettings) {
    let new_lists = super::access_rules(&new.access);
    let lists = [
        ("allowed_users", &access.allowed, &new_lists.allowed),
        ("approvers", &access.approvers, &new_lists.approvers),
        ("admins", &access.admins, &new_lists.admins),
    ];
    let mut changed: Vec<&str> = lists
        .into_iter()
        .filter(|(_, list, new)| list.replace_with(new))
        .map(|(name, ..)| name)
        .collect();
    changed.extend(live.apply(new));
    match changed.is_empty() {
        true => tracing::info!("config reloaded: nothing that reloads changed"),
        false => {
            tracing::info!(changed = %changed.join(", "), "config reloaded: now in effect for the next turns and polls")
        }
    }
    let waiting = needs_restart(running, new);
    if !waiting.is_empty() {
        tracing::warn!(sections = %waiting.join(", "), "these changes take effect only after a restart");
    }
}

/// The parts of the config that differ between `old` and `new` and cannot change while the
/// gateway runs.
fn needs_restart(old: &Config, new: &Config) -> Vec<&'static str> {
    let same =
        |a: &dyn std::fmt::Debug, b: &dyn std::fmt::Debug| format!("{a:?}") == format!("{b:?}");
    let mut access = (old.access.clone(), new.access.clone());
    // The lists reload; the rest of [access] does not.
    for a in [&mut access.0, &mut access.1] {
        a.allowed_users.clear();
        a.approvers = None;
        a.admins = None;
        a.deny.clear();
    }
    let sections: [(&'static str, bool); 16] = [
        ("state_dir", same(&old.state_dir, &new.state_dir)),
        ("matrix", same(&old.matrix, &new.matrix)),
        ("access.approver_min_power", same(&access.0, &access.1)),
        ("commands", same(&old.commands, &new.commands)),
        ("continuity", same(&old.continuity, &new.continuity)),
        ("retention", same(&old.retention, &new.retention)),
        ("timeouts", same(&old.timeouts, &new.timeouts)),
        ("pool", same(&old.pool, &new.pool)),
        ("rooms", same(&old.rooms, &new.rooms)),
        ("media", same(&old.media, &new.media)),
        ("sandbox", same(&old.sandbox, &new.sandbox)),
        ("metrics", same(&old.metrics, &new.metrics)),
        ("schedules", same(&old.schedules, &new.schedules)),
        (
            "webhook_listener",
            same(&old.webhook_listener, &new.webhook_listener),
        ),
        ("webhooks", same(&old.webhooks, &new.webhooks)),
        ("agents", same(&old.agents, &new.agents)),
    ];
    sections
        .into_iter()
        .filter(|(_, same)| !same)
        .map(|(name, _)| name)
        .collect()
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::model::ids::UserId;

    fn config(extra: &str) -> Config {
        let dir = std::env::temp_dir();
        let text = format!(
            r#"state_dir = "state"
{extra}
[matrix]
homeserver = "http://127.0.0.1:9"
[access]
allowed_users = ["@alice:x"]
[[agents]]
id = "demo"
display_name = "Demo"
command = "/bin/true"
workspace = "{}"
[agents.matrix]
user_id = "@demo:x"
password = "p"
"#,
            dir.display()
        );
        Config::from_toml(&text, &dir.join("c.toml")).unwrap()
    }

    #[test]
    fn the_access_lists_reload_and_the_rest_is_named_as_waiting_for_a_restart() {
        let old = config("");
        let access = super::super::access_rules(&old.access);
        let live = LiveSettings::from_config(&old);
        let held = access.allowed.clone();
        let mut new = config("[pool]\nmax_running = 3");
        new.access.allowed_users.push("@bob:x".into());
        assert_eq!(needs_restart(&old, &new), ["pool"]);
        apply(&old, &new, &access, &live);
        assert!(
            held.allows(&UserId::from("@bob:x")),
            "every holder of the list sees Bob"
        );
        assert!(needs_restart(&old, &old.clone()).is_empty());
    }

    #[test]
    fn display_streaming_and_permissions_reload_for_every_holder() {
        let old = config("");
        let live = LiveSettings::from_config(&old);
        let held = live.clone();
        let new = config(
            "[display]\nshow = \"answer\"\n[streaming]\nedit_interval_ms = 900\n\
             [permissions]\ntimeout_secs = 5",
        );
        assert!(
            needs_restart(&old, &new).is_empty(),
            "none of them waits for a restart"
        );
        assert_eq!(live.apply(&new), ["display", "streaming", "permissions"]);
        assert_eq!(held.verbosity.get(), Verbosity::Answer);
        assert_eq!(held.stream.get().interval, Duration::from_millis(900));
        assert_eq!(held.permissions.get().timeout, Duration::from_secs(5));
        assert!(
            live.apply(&new).is_empty(),
            "the same config again changes nothing"
        );
    }
}
