//! Reloading the config on SIGHUP. What can change safely while the gateway runs changes at
//! once: the access lists (`allowed_users`, `approvers`, `admins`, `deny`), shared by every
//! agent and room. Everything else is compared with the running config and logged as
//! needing a restart. A config that does not load is refused with its problems, and the
//! running settings stay.

use std::path::PathBuf;

use tokio::signal::unix::{Signal, SignalKind, signal};
use tokio_util::sync::CancellationToken;

use crate::config::Config;
use crate::core::gateway::AccessRules;

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

/// Reloads the config from `path` at every SIGHUP (`hangups`) until `stop`; `running` is
/// the config the gateway started with, `access` the lists it acts on.
pub(super) fn watch(
    mut hangups: Signal,
    path: PathBuf,
    running: Config,
    access: AccessRules,
    stop: CancellationToken,
) {
    tokio::spawn(async move {
        let mut running = running;
        loop {
            tokio::select! {
                _ = stop.cancelled() => return,
                got = hangups.recv() => if got.is_none() { return },
            }
            tracing::info!(config = %path.display(), "SIGHUP: reloading the config");
            match Config::load(&path) {
                Ok(new) => {
                    apply(&running, &new, &access);
                    running = new;
                }
                Err(e) => {
                    tracing::error!(error = %e, "the config was not reloaded; the running settings stay");
                }
            }
        }
    });
}

/// Applies what can change of `new` to `access`, and logs what changed and what waits for a
/// restart.
fn apply(running: &Config, new: &Config, access: &AccessRules) {
    let new_lists = super::access_rules(&new.access);
    let lists = [
        ("allowed_users", &access.allowed, &new_lists.allowed),
        ("approvers", &access.approvers, &new_lists.approvers),
        ("admins", &access.admins, &new_lists.admins),
    ];
    let changed: Vec<&str> = lists
        .into_iter()
        .filter(|(_, list, new)| list.replace_with(new))
        .map(|(name, ..)| name)
        .collect();
    match changed.is_empty() {
        true => tracing::info!("config reloaded: the access lists are unchanged"),
        false => {
            tracing::info!(changed = %changed.join(", "), "config reloaded: access lists now in effect")
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
        ("streaming", same(&old.streaming, &new.streaming)),
        ("commands", same(&old.commands, &new.commands)),
        ("permissions", same(&old.permissions, &new.permissions)),
        ("display", same(&old.display, &new.display)),
        ("continuity", same(&old.continuity, &new.continuity)),
        ("retention", same(&old.retention, &new.retention)),
        ("timeouts", same(&old.timeouts, &new.timeouts)),
        ("pool", same(&old.pool, &new.pool)),
        ("rooms", same(&old.rooms, &new.rooms)),
        ("media", same(&old.media, &new.media)),
        ("sandbox", same(&old.sandbox, &new.sandbox)),
        ("metrics", same(&old.metrics, &new.metrics)),
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
    use super::*;

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
        let held = access.allowed.clone();
        let mut new = config("[streaming]\nedit_interval_ms = 900");
        new.access.allowed_users.push("@bob:x".into());
        assert_eq!(needs_restart(&old, &new), ["streaming"]);
        apply(&old, &new, &access);
        assert!(held.allows("@bob:x"), "every holder of the list sees Bob");
        assert!(needs_restart(&old, &old.clone()).is_empty());
    }
}
