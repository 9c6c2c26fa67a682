//! Checking a parsed config: every problem named by the key that holds it.

use std::path::Path;
use std::time::Duration;

use super::{Config, Problem, SandboxMode};

impl Config {
    /// Every problem in the config; empty when it is usable.
    pub fn problems(&self) -> Vec<Problem> {
        let mut out = Vec::new();
        let mut secrets = Vec::new();
        let mut bad = |key: String, problem: String| {
            out.push(Problem {
                key,
                problem,
                matrix_secret: false,
            })
        };

        let hs = self.matrix.homeserver.trim();
        if !(hs.starts_with("http://") || hs.starts_with("https://")) {
            bad(
                "matrix.homeserver".into(),
                format!("`{hs}` is not an http:// or https:// URL"),
            );
        }
        if self.matrix.store_passphrase_env.is_some() && self.matrix.store_passphrase_file.is_some()
        {
            bad(
                "matrix".into(),
                "give at most one of store_passphrase_env, store_passphrase_file".into(),
            );
        } else if let Err(e) = self.matrix.store_passphrase() {
            secrets.push(("matrix.store_passphrase".to_owned(), e));
        }
        if let Some(store) = &self.store
            && crate::store::Backend::of_url(store).is_none()
        {
            bad(
                "store".into(),
                format!(
                    "`{}` is neither sqlite://PATH nor postgres://USER@HOST/DATABASE",
                    crate::store::redact_url(store)
                ),
            );
        }
        if let Some(listen) = &self.metrics.listen
            && listen.parse::<std::net::SocketAddr>().is_err()
        {
            bad(
                "metrics.listen".into(),
                format!("`{listen}` is not an address and port, such as 127.0.0.1:9464"),
            );
        }
        if self.access.allowed_users.is_empty() {
            bad(
                "access.allowed_users".into(),
                "is empty: nobody could use the agents".into(),
            );
        }
        for (i, pattern) in self.access.allowed_users.iter().enumerate() {
            if !pattern.starts_with('@') || !pattern.contains(':') {
                bad(
                    format!("access.allowed_users[{i}]"),
                    format!("`{pattern}` is not a user ID or pattern like `@*:example.org`"),
                );
            }
        }
        let optional = [
            ("approvers", &self.access.approvers),
            ("admins", &self.access.admins),
            ("deny", &Some(self.access.deny.clone())),
        ];
        for (list, patterns) in optional {
            for (i, pattern) in patterns.iter().flatten().enumerate() {
                if !pattern.starts_with('@') || !pattern.contains(':') {
                    bad(
                        format!("access.{list}[{i}]"),
                        format!("`{pattern}` is not a user ID or pattern like `@*:example.org`"),
                    );
                }
            }
        }
        if self.permissions.timeout < Duration::from_secs(5) {
            bad(
                "permissions.timeout_secs".into(),
                "must be at least 5 (people need time to answer)".into(),
            );
        }
        for (key, value) in [
            ("timeouts.initialize_secs", self.timeouts.initialize_secs),
            ("timeouts.new_session_secs", self.timeouts.new_session_secs),
        ] {
            if value == 0 {
                bad(key.into(), "must be at least 1".into());
            }
        }
        if self.media.max_file_mb == 0 {
            bad(
                "media.max_file_mb".into(),
                "must be at least 1 (files are never fetched beyond it)".into(),
            );
        }
        if self.rooms.handoff_max_hops == 0 {
            bad(
                "rooms.handoff_max_hops".into(),
                "must be at least 1 (turn hand-offs off with `handoff = false`)".into(),
            );
        }
        if self.queue.max_waiting == 0 {
            bad(
                "queue.max_waiting".into(),
                "must be at least 1 (0 would refuse every message sent during a turn)".into(),
            );
        }
        if let Err(e) = crate::model::schedule::zone(&self.schedules.time_zone) {
            bad("schedules.time_zone".into(), e.to_string());
        }
        if self.schedules.shortest_interval.is_zero() {
            bad(
                "schedules.shortest_interval_secs".into(),
                "must be at least 1".into(),
            );
        }
        self.webhook_problems(&mut bad);
        if self.permissions.propose_stop_after == 0 {
            bad(
                "permissions.propose_stop_after".into(),
                "must be at least 1".into(),
            );
        }
        if self.streaming.interval < Duration::from_millis(100) {
            bad(
                "streaming.edit_interval_ms".into(),
                "must be at least 100".into(),
            );
        }
        if self.streaming.max_edits == 0 {
            bad(
                "streaming.max_edits_per_message".into(),
                "must be at least 1".into(),
            );
        }
        if !(1_000..=30_000).contains(&self.streaming.max_bytes) {
            bad(
                "streaming.max_message_bytes".into(),
                "must be between 1000 and 30000 (a Matrix event holds at most 64 KiB)".into(),
            );
        }
        if self.streaming.max_reply_bytes < self.streaming.max_bytes {
            bad(
                "streaming.max_reply_bytes".into(),
                "must be at least streaming.max_message_bytes".into(),
            );
        }
        if self.streaming.patience.is_zero() {
            bad(
                "streaming.outage_patience_secs".into(),
                "must be at least 1".into(),
            );
        }
        if !(1..=1_000).contains(&self.continuity.sync_timeline_limit) {
            bad(
                "continuity.sync_timeline_limit".into(),
                "must be between 1 and 1000".into(),
            );
        }
        if self.continuity.catch_up_max_events == 0 {
            bad(
                "continuity.catch_up_max_events".into(),
                "must be at least 1".into(),
            );
        }
        if self.continuity.catch_up_max_hours == 0 {
            bad(
                "continuity.catch_up_max_hours".into(),
                "must be at least 1".into(),
            );
        }
        let days = self.retention.handled_days;
        if days > 0 && days * 24 <= self.continuity.catch_up_max_hours {
            bad(
                "retention.handled_days".into(),
                format!(
                    "must be longer than the catch-up window ({} hours), or a message could be \
                     answered twice",
                    self.continuity.catch_up_max_hours
                ),
            );
        }
        if self.commands.prefix.trim().is_empty() || self.commands.prefix.contains(' ') {
            bad(
                "commands.prefix".into(),
                "must be non-empty and without spaces".into(),
            );
        }
        if self.agents.is_empty() {
            bad("agents".into(), "no agent is configured".into());
        }
        let mut ids = std::collections::HashSet::new();
        let mut users = std::collections::HashSet::new();
        for (i, a) in self.agents.iter().enumerate() {
            let k = |field: &str| format!("agents[{i}].{field}");
            if crate::model::ids::AgentId::parse(&a.id).is_err() {
                bad(
                    k("id"),
                    format!("`{}` must be letters, digits, - or _", a.id),
                );
            } else if !ids.insert(a.id.clone()) {
                bad(k("id"), format!("`{}` is used by another agent", a.id));
            }
            if a.display_name.trim().is_empty() {
                bad(k("display_name"), "is empty".into());
            }
            let mut names = std::collections::HashSet::new();
            for (j, m) in a.mcp_servers.iter().enumerate() {
                let key = k(&format!("mcp_servers[{j}]"));
                if m.name.trim().is_empty() {
                    bad(format!("{key}.name"), "is empty".into());
                } else if !names.insert(m.name.clone()) {
                    bad(format!("{key}.name"), format!("`{}` is used twice", m.name));
                } else if a.room_tools && m.name == crate::mcp::SERVER_NAME {
                    bad(
                        format!("{key}.name"),
                        format!(
                            "`{}` is the name of the room tools (room_tools = true)",
                            m.name
                        ),
                    );
                }
                match (&m.command, &m.url) {
                    (Some(_), Some(_)) | (None, None) => bad(
                        key.clone(),
                        "needs either `command` (stdio) or `url` (HTTP), not both".into(),
                    ),
                    (Some(_), None) if !m.headers.is_empty() => bad(
                        format!("{key}.headers"),
                        "only for an HTTP server (`url`)".into(),
                    ),
                    (None, Some(url)) => {
                        if !(url.starts_with("http://") || url.starts_with("https://")) {
                            bad(format!("{key}.url"), format!("`{url}` is no http(s) URL"));
                        }
                        if !m.args.is_empty() || !m.env.is_empty() {
                            bad(
                                key.clone(),
                                "`args` and `env` are only for a stdio server".into(),
                            );
                        }
                    }
                    _ => {}
                }
            }
            if a.command.trim().is_empty() {
                bad(k("command"), "is empty".into());
            }
            let root = a.workspace_root();
            if let Some(unknown) = crate::workspace::unknown_placeholder(&a.workspace) {
                bad(
                    k("workspace"),
                    format!("`{unknown}` is not a placeholder (use {{room}} or {{agent}})"),
                );
            } else if crate::workspace::Workspace::new(&a.workspace).per_room()
                && !crate::workspace::is_plain(&a.workspace)
            {
                bad(
                    k("workspace"),
                    format!("{} must not contain `..`", a.workspace.display()),
                );
            } else if !root.is_dir() && !matches!(a.runner, super::RunnerConfig::Ssh(_)) {
                bad(
                    k("workspace"),
                    format!("{} is not an existing folder", root.display()),
                );
            }
            if let Some(w) = &a.worktree {
                if !crate::workspace::Workspace::new(&a.workspace).per_room() {
                    bad(
                        k("worktree"),
                        "needs {room} in workspace: each room's worktree is a folder of its own"
                            .into(),
                    );
                }
                if matches!(a.runner, super::RunnerConfig::Ssh(_)) {
                    // On the agent's hosts: git there says when it is no repository.
                } else if !w.repository.join(".git").exists()
                    && !w.repository.join("HEAD").is_file()
                {
                    bad(
                        k("worktree.repository"),
                        format!("{} is not a git repository", w.repository.display()),
                    );
                }
                if let Some(prefix) = &w.branch_prefix
                    && (prefix.is_empty() || prefix.contains("..") || prefix.contains(' '))
                {
                    bad(
                        k("worktree.branch_prefix"),
                        format!("`{prefix}` cannot start a git branch name"),
                    );
                }
            }
            if let Some(name) = &a.dialect
                && crate::acp::dialect::named(name).is_none()
            {
                let known: Vec<&str> = crate::acp::dialect::ALL.iter().map(|d| d.name).collect();
                bad(
                    k("dialect"),
                    format!("`{name}` is not a known dialect ({})", known.join(", ")),
                );
            }
            if let super::RunnerConfig::Container(c) = &a.runner {
                for (key, why) in container_problems(c) {
                    bad(k(key), why);
                }
                if c.per_room && !crate::workspace::Workspace::new(&a.workspace).per_room() {
                    bad(
                        k("runner.per_room"),
                        "needs {room} in workspace: each room's container mounts its own folder"
                            .into(),
                    );
                }
                // Every room's worktree shares the repository's git folder: a container per
                // room would let one room's agent plant what runs in another's (a hook,
                // `core.fsmonitor`) and read its work.
                if c.per_room && a.worktree.is_some() {
                    bad(
                        k("runner.per_room"),
                        "cannot keep rooms apart in worktree mode: every room's worktree \
                         shares the repository's git folder, which each room's container \
                         would mount; use {room} folders without worktree, or one container \
                         for the agent"
                            .into(),
                    );
                }
                if c.max_rooms > 0 && !c.per_room {
                    bad(
                        k("runner.max_rooms"),
                        "bounds the containers of per_room = true, which is not set".into(),
                    );
                }
            }
            if let super::RunnerConfig::Ssh(ssh) = &a.runner {
                for (key, why) in ssh_problems(a, ssh) {
                    bad(k(key), why);
                }
                // The helper there sandboxes every command wherever the host can: a client
                // cannot ask it off.
                if a.sandbox_mode(&self.sandbox) == SandboxMode::Off {
                    bad(
                        k("sandbox.mode"),
                        "an agent on other hosts runs in the sandbox of its host wherever the \
                         host has bubblewrap; \"off\" cannot be asked of it (use \"auto\", or \
                         \"bubblewrap\" to require it)"
                            .into(),
                    );
                }
            }
            if a.sandbox.network == crate::acp::Network::None
                && a.runner == super::RunnerConfig::Local
                && a.sandbox_mode(&self.sandbox) == SandboxMode::Off
            {
                bad(
                    k("sandbox.network"),
                    "`none` needs the sandbox, which is off for this agent".into(),
                );
            }
            if a.settings
                .initial_mode
                .as_deref()
                .is_some_and(|m| m.trim().is_empty())
            {
                bad(
                    k("settings.initial_mode"),
                    "is empty; name one of the agent's modes (`sidekicks check` lists them)".into(),
                );
            }
            let listed = [&a.settings.asking_modes, &a.settings.modes];
            if listed
                .iter()
                .copied()
                .flatten()
                .flatten()
                .any(|m| m.trim().is_empty())
            {
                bad(k("settings"), "a mode list holds an empty mode ID".into());
            }
            for name in a.env.keys().chain(a.inherit_env.iter()) {
                if let Err(why) = crate::model::variable::check_name(name) {
                    bad(k("env"), why);
                }
            }
            let uid = &a.matrix.user_id;
            if crate::model::ids::UserId::parse(uid).is_err() {
                bad(
                    k("matrix.user_id"),
                    format!("`{uid}` is not a Matrix user ID like `@name:example.org`"),
                );
            } else if !users.insert(uid.clone()) {
                bad(
                    k("matrix.user_id"),
                    format!("`{uid}` is used by another agent"),
                );
            }
            let sources = [
                a.matrix.password.is_some(),
                a.matrix.password_env.is_some(),
                a.matrix.password_file.is_some(),
            ]
            .iter()
            .filter(|s| **s)
            .count();
            if sources != 1 {
                bad(
                    k("matrix"),
                    "give exactly one of password, password_env, password_file".into(),
                );
            } else if let Err(e) = a.matrix.password() {
                secrets.push((k("matrix"), e));
            }
            if let Some(file) = &a.matrix.recovery_key_file
                && !file.parent().is_some_and(Path::is_dir)
            {
                bad(
                    k("matrix.recovery_key_file"),
                    format!("{} is not in an existing folder", file.display()),
                );
            }
        }
        out.extend(secrets.into_iter().map(|(key, problem)| Problem {
            key,
            problem,
            matrix_secret: true,
        }));
        out
    }
}

impl Config {
    /// The problems of the `[[webhooks]]` tables.
    fn webhook_problems(&self, bad: &mut impl FnMut(String, String)) {
        let mut names = std::collections::HashSet::new();
        for (i, hook) in self.webhooks.iter().enumerate() {
            let key = |field: &str| format!("webhooks[{i}].{field}");
            let name_ok = !hook.name.is_empty()
                && (hook.name.chars()).all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_');
            if !name_ok {
                bad(
                    key("name"),
                    "use letters, digits, - and _ (it is the path /hooks/NAME)".into(),
                );
            }
            if !names.insert(hook.name.as_str()) {
                bad(
                    key("name"),
                    format!("`{}` is the name of another webhook", hook.name),
                );
            }
            if !self.agents.iter().any(|a| a.id == hook.agent) {
                bad(
                    key("agent"),
                    format!("no agent has the id `{}`", hook.agent),
                );
            }
            if !hook.room.starts_with('!') {
                bad(
                    key("room"),
                    format!("`{}` is not a room ID (`!…`)", hook.room),
                );
            }
            if !hook.run_as.starts_with('@') || !hook.run_as.contains(':') {
                bad(key("run_as"), format!("`{}` is not a user ID", hook.run_as));
            }
            if hook.secret_file.is_some() == hook.secret_env.is_some() {
                bad(
                    key("secret_file"),
                    "give exactly one of secret_file, secret_env".into(),
                );
            } else if let Err(e) = hook.secret() {
                bad(key("secret_file"), e);
            }
            if let Err(e) = crate::core::webhooks::template::check(&hook.prompt) {
                bad(key("prompt"), format!("not a template: {e}"));
            }
            if hook.max_body_kb == 0 || hook.per_minute == 0 {
                bad(
                    key("max_body_kb"),
                    "max_body_kb and per_minute must be at least 1".into(),
                );
            }
        }
        if !self.webhooks.is_empty() && self.webhook_listener.listen.is_none() {
            bad(
                "webhook_listener.listen".into(),
                "webhooks are configured but not served: set an address".into(),
            );
        }
    }
}

/// What is wrong with a container runner's settings: (key under the agent's table, why).
fn container_problems(c: &super::ContainerRunnerConfig) -> Vec<(&'static str, String)> {
    let mut out = Vec::new();
    if c.image.trim().is_empty()
        || c.image.starts_with('-')
        || c.image.contains(char::is_whitespace)
    {
        out.push((
            "runner.image",
            format!(
                "`{}` is not an image name (such as `registry.example/agent:1`)",
                c.image
            ),
        ));
    }
    if c.cpus.is_some_and(|n| !(n.is_finite() && n > 0.0)) {
        out.push((
            "runner.cpus",
            "must be a number of CPUs above 0, such as 1.5".into(),
        ));
    }
    let memory_ok = |m: &str| {
        let digits = m.trim_end_matches(['b', 'k', 'm', 'g', 'B', 'K', 'M', 'G']);
        !digits.is_empty()
            && digits.chars().all(|c| c.is_ascii_digit())
            && m.len() - digits.len() <= 1
    };
    if let Some(m) = c.memory.as_deref().filter(|m| !memory_ok(m)) {
        out.push((
            "runner.memory",
            format!("`{m}` is not an amount of memory (such as `512m` or `2g`)"),
        ));
    }
    if c.pids_limit == 0 {
        out.push(("runner.pids_limit", "must be at least 1".into()));
    }
    out
}

/// What is wrong with an SSH runner's settings, and what an agent on another host cannot
/// have: (key under the agent's table, why).
fn ssh_problems(
    a: &super::AgentConfig,
    ssh: &super::SshRunnerConfig,
) -> Vec<(&'static str, String)> {
    let mut out = Vec::new();
    if ssh.hosts.is_empty() {
        out.push(("runner.hosts", "names no host".into()));
    }
    for host in &ssh.hosts {
        if host.is_empty() || host.starts_with('-') || host.contains(char::is_whitespace) {
            out.push((
                "runner.hosts",
                format!("`{host}` is not an ssh destination (such as `agent@build1`)"),
            ));
        }
    }
    for (key, file) in [
        ("runner.known_hosts", &ssh.known_hosts),
        ("runner.identity", &ssh.identity),
    ] {
        if !file.is_file() {
            out.push((key, format!("{} is not a file", file.display())));
        }
    }
    if ssh.program.trim().is_empty() || ssh.connect_timeout_secs == 0 {
        out.push((
            "runner.program",
            "program must name sidekicks on the hosts, and connect_timeout_secs be at least 1"
                .into(),
        ));
    }
    if !a.workspace.is_absolute() {
        out.push((
            "workspace",
            format!(
                "{} must be an absolute path on the agent's hosts",
                a.workspace.display()
            ),
        ));
    }
    let home = a.home.as_deref().map(|h| h.to_string_lossy().into_owned());
    if home.is_some_and(|h| !(h.starts_with('/') || h.starts_with("~/"))) {
        out.push((
            "home",
            "must be an absolute path on the agent's hosts, or start with `~/`".into(),
        ));
    }
    if a.worktree
        .as_ref()
        .is_some_and(|w| !w.repository.is_absolute())
    {
        out.push((
            "worktree.repository",
            "must be an absolute path on the agent's hosts".into(),
        ));
    }
    out
}
