//! Tests of loading and checking the config.

use std::time::Duration;

use super::*;

fn write_config(dir: &Path, body: &str) -> PathBuf {
    let path = dir.join("sidekicks.toml");
    std::fs::write(&path, body).unwrap();
    path
}

fn valid(ws: &Path) -> String {
    format!(
        r#"
state_dir = "state"
[matrix]
homeserver = "http://127.0.0.1:8008"
[access]
allowed_users = ["@alice:example.org", "@*:team.example.org"]
[[agents]]
id = "demo"
display_name = "Demo"
command = "sidekicks"
args = ["demo-agent"]
workspace = "{}"
[agents.matrix]
user_id = "@demo:example.org"
password = "secret"
"#,
        ws.display()
    )
}

/// A temporary folder, removed when the returned guard is dropped.
fn tmp() -> tempfile::TempDir {
    tempfile::Builder::new()
        .prefix("sidekicks-config-test-")
        .tempdir()
        .unwrap()
}

#[test]
fn a_valid_file_loads_with_defaults_and_resolved_paths() {
    let tmp = tmp();
    let dir = tmp.path();
    let cfg = Config::load(&write_config(dir, &valid(dir))).unwrap();
    assert_eq!(cfg.state_dir, dir.join("state"));
    assert_eq!(cfg.streaming.interval, Duration::from_millis(1000));
    assert_eq!(cfg.commands.prefix, "!");
    assert_eq!(cfg.pool.max_running, 0, "no limit unless configured");
    assert!(!cfg.rooms.handoff);
    assert_eq!(cfg.agents[0].matrix.password().unwrap().expose(), "secret");
    // Handled markers outlive the catch-up window by a day; transcripts stay.
    assert_eq!(
        cfg.retention.handled(cfg.continuity.catch_up_max_hours),
        Duration::from_secs(48 * 3600)
    );
    assert_eq!(cfg.retention.transcript(), None);
}

#[test]
fn secrets_do_not_show_in_debug_output() {
    let tmp = tmp();
    let dir = tmp.path();
    let text = valid(dir).replace(
        "workspace =",
        "env = { API_KEY = \"sk-hunter2\" }\nworkspace =",
    );
    let cfg = Config::from_toml(&text, &dir.join("c.toml")).unwrap();
    let shown = format!("{cfg:?}");
    assert!(!shown.contains("hunter2"), "{shown}");
    assert!(!shown.contains("\"secret\""), "{shown}");
    assert_eq!(cfg.agents[0].env["API_KEY"].expose(), "sk-hunter2");
}

#[test]
fn problems_name_their_keys() {
    let tmp = tmp();
    let dir = tmp.path();
    let cases: &[(&str, &str, &str)] = &[
        ("http://127.0.0.1:8008", "ftp://x", "matrix.homeserver"),
        (
            "\"@alice:example.org\"",
            "\"alice\"",
            "access.allowed_users[0]",
        ),
        (
            "user_id = \"@demo:example.org\"",
            "user_id = \"demo\"",
            "agents[0].matrix.user_id",
        ),
        (
            "password = \"secret\"",
            "password_env = \"SIDEKICKS_SURELY_UNSET_VAR\"",
            "agents[0].matrix",
        ),
        (
            "password = \"secret\"",
            "access_token_file = \"no-such.token\"\ndevice_id = \"D\"",
            "agents[0].matrix",
        ),
        (
            "password = \"secret\"",
            "password = \"secret\"\ndevice_id = \"D\"",
            "agents[0].matrix.device_id",
        ),
        ("id = \"demo\"", "id = \"de mo\"", "agents[0].id"),
        (
            "workspace =",
            "inherit_env = [\"PGPASS*\"]\nworkspace =",
            "agents[0].env",
        ),
        (
            "workspace =",
            "env = { \"A\\nB\" = \"1\" }\nworkspace =",
            "agents[0].env",
        ),
        (
            "id = \"demo\"",
            "id = \"demo\"\ndialect = \"klingon\"",
            "agents[0].dialect",
        ),
        (
            "[matrix]",
            "[timeouts]\ninitialize_secs = 0\n[matrix]",
            "timeouts.initialize_secs",
        ),
        (
            "[matrix]",
            "[rooms]\nhandoff_max_hops = 0\n[matrix]",
            "rooms.handoff_max_hops",
        ),
        (
            "[matrix]",
            "[schedules]\ntime_zone = \"Mars/Olympus\"\n[matrix]",
            "schedules.time_zone",
        ),
        (
            "[matrix]",
            "[schedules]\nshortest_interval_secs = 0\n[matrix]",
            "schedules.shortest_interval_secs",
        ),
        (
            "[matrix]",
            "[continuity]\nsync_timeline_limit = 0\n[matrix]",
            "continuity.sync_timeline_limit",
        ),
        (
            "[matrix]",
            "[continuity]\ncatch_up_max_hours = 0\n[matrix]",
            "continuity.catch_up_max_hours",
        ),
        (
            "[matrix]",
            "[continuity]\ncatch_up_max_hours = 48\n[retention]\nhandled_days = 2\n[matrix]",
            "retention.handled_days",
        ),
        (
            "[matrix]",
            "[streaming]\nmax_reply_bytes = 500\n[matrix]",
            "streaming.max_reply_bytes",
        ),
        (
            "[matrix]",
            "[voice]\ntranscribe_url = \"whisper.local\"\n[matrix]",
            "voice.transcribe_url",
        ),
        (
            "[matrix]",
            "[voice]\nkey_env = \"SIDEKICKS_SURELY_UNSET_VAR\"\n[matrix]",
            "voice.key_file",
        ),
        (
            "[matrix]",
            "[voice]\nlanguage = \"English\"\n[matrix]",
            "voice.language",
        ),
        (
            "[matrix]",
            "[budgets]\nroom_per_day = \"5 dollars\"\n[matrix]",
            "budgets.room_per_day",
        ),
        (
            "[matrix]",
            "[budgets]\nperson_per_month = [\"5 USD\", \"6 usd\"]\n[matrix]",
            "budgets.person_per_month",
        ),
    ];
    for (from, to, key) in cases {
        let text = valid(dir).replacen(from, to, 1);
        let err = Config::from_toml(&text, &dir.join("c.toml")).unwrap_err();
        match err {
            ConfigError::Invalid { problems, .. } => {
                assert!(
                    problems.iter().any(|p| p.key == *key),
                    "expected a problem at {key}, got {problems:?}"
                );
            }
            other => panic!("expected Invalid for {key}, got {other}"),
        }
    }
}

/// A webhook table, before `[matrix]`, with `field` changed to `value` (TOML).
fn with_webhook(base: &str, field: &str, value: &str) -> String {
    let mut fields = vec![
        ("name", "\"ci\""),
        ("room", "\"!room:example.org\""),
        ("agent", "\"demo\""),
        ("run_as", "\"@alice:example.org\""),
        ("signature", "\"github\""),
        ("secret_env", "\"PATH\""),
        ("prompt", "\"CI failed on {{ref}}\""),
    ];
    fields.retain(|(k, _)| *k != field);
    if !value.is_empty() {
        fields.push((field, value));
    }
    let table: String = fields.iter().map(|(k, v)| format!("{k} = {v}\n")).collect();
    let listener = "[webhook_listener]\nlisten = \"127.0.0.1:0\"\n";
    let listener = if field == "listen" { "" } else { listener };
    base.replacen(
        "[matrix]",
        &format!("{listener}[[webhooks]]\n{table}[matrix]"),
        1,
    )
}

#[test]
fn a_webhook_is_checked_field_by_field() {
    let tmp = tmp();
    let dir = tmp.path();
    let ok = with_webhook(&valid(dir), "", "");
    let config = Config::from_toml(&ok, &dir.join("c.toml")).unwrap();
    assert_eq!(config.webhooks[0].name, "ci");
    let cases = [
        ("name", "\"c i\"", "webhooks[0].name"),
        ("agent", "\"nobody\"", "webhooks[0].agent"),
        ("room", "\"#alias:example.org\"", "webhooks[0].room"),
        ("run_as", "\"alice\"", "webhooks[0].run_as"),
        (
            "secret_env",
            "\"SIDEKICKS_SURELY_UNSET_VAR\"",
            "webhooks[0].secret_file",
        ),
        ("secret_env", "", "webhooks[0].secret_file"),
        ("prompt", "\"{{ unclosed\"", "webhooks[0].prompt"),
        ("listen", "", "webhook_listener.listen"),
    ];
    for (field, value, key) in cases {
        let text = with_webhook(&valid(dir), field, value);
        match Config::from_toml(&text, &dir.join("c.toml")) {
            Err(ConfigError::Invalid { problems, .. }) => assert!(
                problems.iter().any(|p| p.key == key),
                "expected a problem at {key}, got {problems:?}"
            ),
            other => panic!("expected Invalid for {key}, got {other:?}"),
        }
    }
    let text = with_webhook(&valid(dir), "signature", "\"carrier-pigeon\"");
    assert!(Config::from_toml(&text, &dir.join("c.toml")).is_err());
}

#[test]
fn a_missing_workspace_is_reported() {
    let tmp = tmp();
    let dir = tmp.path();
    let text = valid(&dir.join("nope"));
    let err = Config::from_toml(&text, &dir.join("c.toml")).unwrap_err();
    assert!(err.to_string().contains("agents[0].workspace"), "{err}");
}

#[test]
fn unknown_keys_and_wrong_types_are_parse_errors() {
    let tmp = tmp();
    let dir = tmp.path();
    let text = valid(dir).replace("[access]", "[access]\nallowed_userz = []");
    let err = Config::from_toml(&text, &dir.join("c.toml")).unwrap_err();
    assert!(err.to_string().contains("allowed_userz"), "{err}");
    let text = valid(dir).replace("args = [\"demo-agent\"]", "args = 3");
    assert!(matches!(
        Config::from_toml(&text, &dir.join("c.toml")),
        Err(ConfigError::Parse { .. })
    ));
}

#[test]
fn duplicate_agent_ids_are_refused() {
    let tmp = tmp();
    let dir = tmp.path();
    let one = valid(dir);
    let agent = &one[one.find("[[agents]]").unwrap()..];
    let text = format!("{one}\n{}", agent.replace("@demo:", "@demo2:"));
    let err = Config::from_toml(&text, &dir.join("c.toml")).unwrap_err();
    assert!(
        err.to_string().contains("agents[1].id: `demo` is used"),
        "{err}"
    );
}

#[test]
fn a_workspace_per_room_is_checked_by_its_root_and_its_placeholders() {
    let tmp = tmp();
    let dir = tmp.path();
    let with = |ws: &str| valid(Path::new(ws));
    // `{agent}` is the agent's ID; the folder before `{room}` must exist, the room folders
    // are made on first use.
    std::fs::create_dir_all(dir.join("work/demo")).unwrap();
    let cfg = Config::from_toml(&with("work/{agent}/{room}"), &dir.join("c.toml")).unwrap();
    assert_eq!(cfg.agents[0].workspace, dir.join("work/demo/{room}"));
    assert_eq!(cfg.agents[0].workspace_root(), dir.join("work/demo"));
    let problems = |ws: &str| match Config::from_toml(&with(ws), &dir.join("c.toml")) {
        Err(ConfigError::Invalid { problems, .. }) => problems,
        other => panic!("{ws}: {other:?}"),
    };
    let missing = problems("nowhere/{room}");
    assert!(
        missing[0].problem.contains("is not an existing folder"),
        "{missing:?}"
    );
    let typo = problems("work/{rooms}");
    assert_eq!(typo[0].key, "agents[0].workspace");
    assert!(
        typo[0].problem.contains("`{rooms}` is not a placeholder"),
        "{typo:?}"
    );
    let escape = problems("work/../work/{room}");
    assert!(
        escape[0].problem.contains("must not contain `..`"),
        "{escape:?}"
    );
}

#[test]
fn the_sandbox_is_on_where_it_works_unless_the_config_says_otherwise() {
    let tmp = tmp();
    let dir = tmp.path();
    let cfg = Config::from_toml(&valid(dir), &dir.join("c.toml")).unwrap();
    assert_eq!(cfg.sandbox.mode, SandboxMode::Auto);
    assert_eq!(cfg.agents[0].sandbox_mode(&cfg.sandbox), SandboxMode::Auto);
    assert_eq!(cfg.source.as_deref(), Some(dir.join("c.toml").as_path()));
    let text = valid(dir).replace(
        "[agents.matrix]",
        "home = \"homes/demo\"\n[agents.sandbox]\nmode = \"off\"\nread_only = [\"ro\"]\n[agents.matrix]",
    );
    let text = format!("{text}[sandbox]\nmode = \"bubblewrap\"\nhide = [\"secrets\"]\n");
    let cfg = Config::from_toml(&text, &dir.join("c.toml")).unwrap();
    assert_eq!(cfg.sandbox.mode, SandboxMode::Bubblewrap);
    assert_eq!(cfg.sandbox.hide, vec![dir.join("secrets")]);
    let agent = &cfg.agents[0];
    assert_eq!(agent.sandbox_mode(&cfg.sandbox), SandboxMode::Off);
    assert_eq!(agent.sandbox.read_only, vec![dir.join("ro")]);
    assert_eq!(
        agent.home.as_deref(),
        Some(dir.join("homes/demo").as_path())
    );
}

#[test]
fn an_agent_without_network_needs_the_sandbox() {
    let tmp = tmp();
    let dir = tmp.path();
    let with = |sandbox: &str| {
        valid(dir).replace(
            "[agents.matrix]",
            &format!("[agents.sandbox]\n{sandbox}\n[agents.matrix]"),
        )
    };
    let plain = Config::from_toml(&valid(dir), &dir.join("c.toml")).unwrap();
    assert_eq!(plain.agents[0].sandbox.network, crate::acp::Network::Host);
    let none = Config::from_toml(&with("network = \"none\""), &dir.join("c.toml")).unwrap();
    assert_eq!(none.agents[0].sandbox.network, crate::acp::Network::None);
    match Config::from_toml(
        &with("network = \"none\"\nmode = \"off\""),
        &dir.join("c.toml"),
    ) {
        Err(ConfigError::Invalid { problems, .. }) => {
            assert!(
                problems.iter().any(|p| p.key == "agents[0].sandbox.network"
                    && p.problem.contains("needs the sandbox")),
                "{problems:?}"
            )
        }
        other => panic!("a network that only a sandbox takes away, without one: {other:?}"),
    }
    assert!(Config::from_toml(&with("network = \"lan\""), &dir.join("c.toml")).is_err());
}

#[test]
fn the_room_tools_come_through_a_socket_to_an_agent_without_network_or_on_another_host() {
    let tmp = tmp();
    let dir = tmp.path();
    let agent = Config::from_toml(&valid(dir), &dir.join("c.toml"))
        .unwrap()
        .agents[0]
        .clone();
    let ssh: SshRunnerConfig =
        toml::from_str("hosts = [\"build1\"]\nknown_hosts = \"/k\"\nidentity = \"/i\"").unwrap();
    let cases = [
        (
            false,
            crate::acp::Network::None,
            RunnerConfig::Ssh(ssh.clone()),
            false,
        ),
        (true, crate::acp::Network::Host, RunnerConfig::Local, false),
        (true, crate::acp::Network::None, RunnerConfig::Local, true),
        (
            true,
            crate::acp::Network::Host,
            RunnerConfig::Ssh(ssh),
            true,
        ),
    ];
    for (room_tools, network, runner, by_socket) in cases {
        let mut a = agent.clone();
        a.room_tools = room_tools;
        a.sandbox.network = network;
        a.runner = runner.clone();
        assert_eq!(
            a.room_tools_by_socket(),
            by_socket,
            "{room_tools} {network:?} {runner:?}"
        );
    }
}

#[test]
fn the_store_passphrase_comes_from_one_place_that_holds_one() {
    let tmp = tmp();
    let dir = tmp.path();
    let with = |lines: &str| {
        valid(dir).replace(
            "homeserver = \"http://127.0.0.1:8008\"",
            &format!("homeserver = \"http://127.0.0.1:8008\"\n{lines}"),
        )
    };
    let problems = |text: String| match Config::from_toml(&text, &dir.join("c.toml")) {
        Err(ConfigError::Invalid { problems, .. }) => problems,
        other => panic!("{other:?}"),
    };
    std::fs::write(dir.join("pass"), "  correct horse  \n").unwrap();
    let cfg = Config::from_toml(
        &with("store_passphrase_file = \"pass\""),
        &dir.join("c.toml"),
    )
    .unwrap();
    assert_eq!(
        cfg.matrix.store_passphrase().unwrap().unwrap().expose(),
        "correct horse"
    );
    assert!(!cfg.matrix.require_cross_signed, "off unless asked");
    assert!(!cfg.matrix.require_verified_identity, "off unless asked");
    let strict = Config::from_toml(
        &with("require_verified_identity = true"),
        &dir.join("c.toml"),
    )
    .unwrap();
    assert!(strict.matrix.require_verified_identity);
    let both = problems(with(
        "store_passphrase_file = \"pass\"\nstore_passphrase_env = \"SIDEKICKS_NO_SUCH_VAR\"",
    ));
    assert!(both[0].problem.contains("at most one"), "{both:?}");
    let unset = problems(with("store_passphrase_env = \"SIDEKICKS_NO_SUCH_VAR\""));
    assert_eq!(unset[0].key, "matrix.store_passphrase");
    std::fs::write(dir.join("empty"), "\n").unwrap();
    let empty = problems(with("store_passphrase_file = \"empty\""));
    assert!(empty[0].problem.contains("is empty"), "{empty:?}");
}

#[test]
fn an_agents_settings_policy_is_read() {
    let tmp = tmp();
    let dir = tmp.path();
    let text = valid(dir).replace(
        "[agents.matrix]",
        "[agents.settings]\ninitial_mode = \"plan\"\nasking_modes = [\"default\", \"plan\", \"review\"]\n\
         modes = [\"default\", \"plan\"]\noptions = { model = [\"small\"] }\n[agents.matrix]",
    );
    let cfg = Config::from_toml(&text, &dir.join("c.toml")).unwrap();
    let settings = &cfg.agents[0].settings;
    assert_eq!(settings.initial_mode.as_deref(), Some("plan"));
    assert_eq!(
        settings.asking_modes.as_deref(),
        Some(&["default".to_owned(), "plan".to_owned(), "review".to_owned()][..])
    );
    assert_eq!(
        settings.modes.as_deref(),
        Some(&["default".to_owned(), "plan".to_owned()][..])
    );
    assert_eq!(settings.options["model"], vec!["small".to_owned()]);
    assert!(cfg.settings_warnings().is_empty());
    let plain = Config::from_toml(&valid(dir), &dir.join("c.toml")).unwrap();
    let plain = &plain.agents[0].settings;
    assert!(
        plain.initial_mode.is_none() && plain.asking_modes.is_none(),
        "the dialect's"
    );
}

#[test]
fn the_old_admin_only_list_is_ignored_with_a_warning_and_empty_modes_are_refused() {
    let tmp = tmp();
    let dir = tmp.path();
    let with = |settings: &str| {
        valid(dir).replace(
            "[agents.matrix]",
            &format!("[agents.settings]\n{settings}\n[agents.matrix]"),
        )
    };
    let problems = |text: String| match Config::from_toml(&text, &dir.join("c.toml")) {
        Err(ConfigError::Invalid { problems, .. }) => problems,
        other => panic!("{other:?}"),
    };
    // It could only ever open modes to everyone: ignoring it keeps them closed.
    let old = Config::from_toml(&with("admin_only_modes = []"), &dir.join("c.toml")).unwrap();
    let warned = old.warnings();
    assert!(
        warned.iter().any(
            |w| w.contains("agents[0].settings.admin_only_modes is ignored")
                && w.contains("asking_modes")
        ),
        "{warned:?}"
    );
    let empty = problems(with("initial_mode = \" \""));
    assert!(
        empty
            .iter()
            .any(|p| p.key == "agents[0].settings.initial_mode"),
        "{empty:?}"
    );
    let blank = problems(with("asking_modes = [\"\"]"));
    assert!(
        blank.iter().any(|p| p.problem.contains("empty mode ID")),
        "{blank:?}"
    );
}

#[test]
fn worktree_mode_needs_a_room_folder_and_a_repository() {
    let tmp = tmp();
    let dir = tmp.path();
    std::fs::create_dir_all(dir.join("work/demo")).unwrap();
    std::fs::create_dir_all(dir.join("repo/.git")).unwrap();
    let with = |ws: &str, worktree: &str| {
        valid(Path::new(ws)).replace(
            "[agents.matrix]",
            &format!("[agents.worktree]\n{worktree}\n[agents.matrix]"),
        )
    };
    let ok = Config::from_toml(
        &with("work/{agent}/{room}", "repository = \"repo\""),
        &dir.join("c.toml"),
    )
    .unwrap();
    let worktrees = ok.agents[0].worktrees().unwrap();
    assert_eq!(worktrees.repository, dir.join("repo"));
    assert_eq!(worktrees.branch_prefix, "sidekicks/demo/");
    assert!(ok.agents[0].workspace().worktrees().is_some());
    let problems = |text: String| match Config::from_toml(&text, &dir.join("c.toml")) {
        Err(ConfigError::Invalid { problems, .. }) => problems,
        other => panic!("{other:?}"),
    };
    let shared = problems(with("work/demo", "repository = \"repo\""));
    assert_eq!(shared[0].key, "agents[0].worktree");
    assert!(shared[0].problem.contains("{room}"), "{shared:?}");
    let no_repo = problems(with("work/{agent}/{room}", "repository = \"work\""));
    assert_eq!(no_repo[0].key, "agents[0].worktree.repository");
    let prefix = problems(with(
        "work/{agent}/{room}",
        "repository = \"repo\"\nbranch_prefix = \"a..b/\"",
    ));
    assert_eq!(prefix[0].key, "agents[0].worktree.branch_prefix");
}

#[test]
fn the_rooms_thread_mode_is_read() {
    let tmp = tmp();
    let dir = tmp.path();
    let cfg = Config::from_toml(&valid(dir), &dir.join("c.toml")).unwrap();
    assert_eq!(cfg.rooms.threads, crate::model::ThreadMode::Separate);
    let text = format!("{}[rooms]\nthreads = \"new\"\n", valid(dir));
    let cfg = Config::from_toml(&text, &dir.join("c.toml")).unwrap();
    assert_eq!(cfg.rooms.threads, crate::model::ThreadMode::New);
    let bad = format!("{}[rooms]\nthreads = \"sometimes\"\n", valid(dir));
    assert!(Config::from_toml(&bad, &dir.join("c.toml")).is_err());
}

#[test]
fn mcp_servers_are_read_and_checked() {
    let tmp = tmp();
    let dir = tmp.path();
    let with = |servers: &str| {
        let text = valid(dir).replace("[agents.matrix]", &format!("{servers}\n[agents.matrix]"));
        Config::from_toml(&text, &dir.join("c.toml"))
    };
    let cfg = with(
        r#"mcp_servers = [{ name = "tools", command = "/bin/tools", args = ["-v"], env = { K = "v" } }, { name = "docs", url = "https://docs.example/mcp", headers = { Authorization = "Bearer x" } }]"#,
    )
    .unwrap();
    let specs: Vec<_> = cfg.agents[0]
        .mcp_servers
        .iter()
        .filter_map(|m| m.spec())
        .collect();
    assert_eq!(specs.len(), 2);
    assert_eq!((specs[0].name(), specs[1].name()), ("tools", "docs"));
    let refused = [
        (
            r#"mcp_servers = [{ name = "x", command = "/a", url = "http://b" }]"#,
            "not both",
        ),
        (r#"mcp_servers = [{ name = "x" }]"#, "needs either"),
        (
            r#"mcp_servers = [{ name = "x", url = "ftp://b" }]"#,
            "no http(s) URL",
        ),
        (
            r#"mcp_servers = [{ name = "x", command = "/a", headers = { A = "b" } }]"#,
            "only for an HTTP",
        ),
        (
            r#"mcp_servers = [{ name = "x", command = "/a" }, { name = "x", command = "/b" }]"#,
            "used twice",
        ),
        (
            r#"mcp_servers = [{ name = "", command = "/a" }]"#,
            "mcp_servers[0].name: is empty",
        ),
        (
            r#"mcp_servers = [{ name = "sidekicks", command = "/a" }]"#,
            "is the name of the room tools",
        ),
    ];
    for (servers, expected) in refused {
        let err = with(servers).unwrap_err().to_string();
        assert!(
            err.contains("agents[0].mcp_servers[") && err.contains(expected),
            "{servers}: {err}"
        );
    } // Without room tools, the name is free.
    let free = r#"room_tools = false
mcp_servers = [{ name = "sidekicks", command = "/a" }]"#;
    assert!(with(free).is_ok());
}

#[test]
fn the_example_config_has_only_known_keys() {
    // Its folders and secrets are the reader's to make; its keys must all be real.
    let example = include_str!("../../deploy/sidekicks.example.toml");
    let parsed: Result<Config, _> = toml::from_str(example);
    assert!(parsed.is_ok(), "{:?}", parsed.err());
}

#[test]
fn a_path_to_hide_that_does_not_exist_is_warned_about() {
    let tmp = tmp();
    let dir = tmp.path();
    std::fs::write(dir.join("there"), "x").unwrap();
    let text = valid(dir).replacen(
        "[[agents]]",
        "[sandbox]\nhide = [\"there\", \"not-yet\"]\n[[agents]]",
        1,
    );
    let cfg = Config::from_toml(&text, &dir.join("c.toml")).unwrap();
    let warned = cfg.hide_warnings();
    assert_eq!(warned.len(), 1, "{warned:?}");
    assert!(
        warned[0].starts_with("sandbox.hide[1]:") && warned[0].contains("not-yet"),
        "{warned:?}"
    );
}

#[test]
fn the_store_is_the_sqlite_file_unless_a_database_url_is_given() {
    let tmp = tmp();
    let dir = tmp.path();
    let with =
        |store: &str| valid(dir).replacen("state_dir", &format!("store = {store:?}\nstate_dir"), 1);
    let load = |text: &str| Config::from_toml(text, &dir.join("c.toml"));
    let plain = load(&valid(dir)).unwrap();
    assert_eq!(
        plain.store_url(),
        crate::store::sqlite_url(&dir.join("state/sidekicks.db"))
    );
    assert!(plain.store_warnings().is_empty());
    let postgres = load(&with("postgres://gw@db.example.org/sidekicks")).unwrap();
    assert_eq!(
        postgres.store_url(),
        "postgres://gw@db.example.org/sidekicks"
    );
    assert!(postgres.store_warnings().is_empty());
    // A password in the URL works, is warned about, and never shown.
    let inline = load(&with("postgres://gw:hunter2@db.example.org/sidekicks")).unwrap();
    let warned = inline.store_warnings();
    assert!(
        warned.len() == 1 && warned[0].contains("pgpass"),
        "{warned:?}"
    );
    assert!(!warned[0].contains("hunter2"));
    // In the query, as libpq and sqlx also read it: warned about too, and never shown.
    let queried = load(&with(
        "postgres://gw@db.example.org/sidekicks?sslmode=require&password=hunter3",
    ))
    .unwrap();
    let warned = queried.store_warnings();
    assert!(
        warned.len() == 1 && warned[0].contains("pgpass"),
        "{warned:?}"
    );
    let shown = crate::store::redact_url(&queried.store_url());
    assert!(
        !shown.contains("hunter3") && shown.contains("sslmode=require"),
        "{shown}"
    );
    // Anything else is refused, by key, without the password.
    let Err(ConfigError::Invalid { problems, .. }) = load(&with("mysql://gw:hunter2@db/x")) else {
        panic!("a mysql:// store was taken");
    };
    let shown = format!("{problems:?}");
    assert!(shown.contains("key: \"store\""), "{shown}");
    assert!(!shown.contains("hunter2"), "{shown}");
}

mod runners;
