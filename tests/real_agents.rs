#![recursion_limit = "256"]
//! Real third-party agents through the gateway, as users install them today: Claude Code
//! (`@agentclientprotocol/claude-agent-acp`) and Codex (`@agentclientprotocol/codex-acp`),
//! from npm, pinned, on Node 22, against a scripted model server, driven from Matrix like any
//! agent, with the default config. Both adapters start their sessions in a mode that runs
//! tools unasked; every tool here still waits for a poll. Alice is an admin; Bob may prompt
//! and approve, but is no admin.

mod support;

use std::time::Duration;

use support::model_server::ModelServer;
use support::real::{Real, agent_home, poll, run_allowed, start};
use support::{PATIENCE, wait_until};

/// A gateway running Claude Code as agent `claude`, its model the scripted server.
async fn claude(model: &ModelServer) -> Real {
    let entry = support::agents::claude();
    let node = support::agents::node();
    let path = support::agents::path_with_node();
    let home = agent_home("claude");
    let agent_toml = format!(
        "command = {node:?}\nargs = [{entry:?}]\nhome = {home:?}\n\
         env = {{ PATH = {path:?}, ANTHROPIC_BASE_URL = \"{url}\", ANTHROPIC_API_KEY = \"sk-script-model-key\", IS_SANDBOX = \"1\", \
         CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC = \"1\", DISABLE_TELEMETRY = \"1\", DISABLE_AUTOUPDATER = \"1\" }}",
        url = model.url,
    );
    start("claude", agent_toml).await.with_home(home)
}

/// A gateway running Codex as agent `codex`, its model the scripted server. Its config
/// names no approval policy (Codex 0.166 refuses `untrusted`): that it asks is Sidekicks'
/// doing, which puts every session in `read-only`.
async fn codex(model: &ModelServer) -> Real {
    let home = agent_home("codex");
    let codex_home = home.join(".codex");
    std::fs::create_dir_all(&codex_home).unwrap();
    std::fs::write(
        codex_home.join("config.toml"),
        format!(
            "model = \"gpt-5.6-luna\"\nmodel_provider = \"script\"\n\
             [model_providers.script]\nname = \"script\"\n\
             base_url = \"{}/v1\"\nenv_key = \"SCRIPT_API_KEY\"\nwire_api = \"responses\"\n",
            model.url
        ),
    )
    .unwrap();
    start(
        "codex",
        codex_toml(&home, "SCRIPT_API_KEY = \"sk-script-model-key\""),
    )
    .await
    .with_home(home)
}

/// Codex's `[[agents]]` lines, with its home `home` and the variables `env` (TOML, may be
/// empty) besides `PATH` and `CODEX_HOME`.
fn codex_toml(home: &std::path::Path, env: &str) -> String {
    let (entry, node) = (support::agents::codex(), support::agents::node());
    let path = support::agents::path_with_node();
    let codex_home = home.join(".codex");
    let env = [
        format!("PATH = {path:?}, CODEX_HOME = {codex_home:?}"),
        env.to_owned(),
    ];
    let env = env
        .iter()
        .filter(|e| !e.is_empty())
        .cloned()
        .collect::<Vec<_>>();
    format!(
        "command = {node:?}\nargs = [{entry:?}]\nhome = {home:?}\nenv = {{ {} }}",
        env.join(", ")
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn claude_code_answers_in_the_room_with_the_scripted_model() {
    let model = ModelServer::start().await;
    let env = claude(&model).await;
    let room = env.room_with_agent(false).await;
    env.alice.send(&room, "Say hello").await;
    let said = env
        .reply_where(&room, "Claude's answer", |t| {
            t.contains("Hello from the script model.")
        })
        .await;
    assert!(said.starts_with("Hello from the script model."), "{said}");
    assert!(!model.requests().is_empty());
    // The turn's cost, as Claude reported it (`usage_update` with `cost`), is counted.
    env.alice.send(&room, "!usage").await;
    let usage = env
        .reply_where(&room, "the usage", |t| t.contains("Today"))
        .await;
    let line = (usage.lines())
        .find(|l| l.starts_with("- @alice:"))
        .unwrap_or_else(|| panic!("{usage}"));
    assert!(
        line.contains(" USD") && line.ends_with("(1 turn)"),
        "{usage}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn claude_codes_shell_command_waits_for_a_poll_and_runs_only_when_allowed() {
    // The adapter starts every session in `auto`, where this command runs unasked.
    let model = ModelServer::start().await;
    let env = claude(&model).await;
    let room = env.room_with_agent(false).await;
    let workspace = env.gw.workspace("claude");

    let asked = run_allowed(&env, &room, "claude", 0).await;
    let text = env.alice.current_text(&asked).unwrap();
    assert!(text.contains("echo made-by-claude"), "{text}");

    env.alice.send(&room, "Now RUN: touch never.txt").await;
    let asked = poll(&env, &room, 1).await;
    env.alice.react(&room, &asked, "❌").await;
    env.reply_where(&room, "the refusal's answer", |t| {
        t.contains("The tool was refused.")
    })
    .await;
    assert!(!workspace.join("never.txt").exists());
    // Claude marks the refused call failed itself and carries on: no stop is shown.
    let texts = env.texts_from(&room, &env.agent);
    assert!(
        !texts
            .iter()
            .any(|t| t.contains("Stopped") || t.contains("ended its turn")),
        "{texts:?}"
    );
    env.alice.send(&room, "!status").await;
    env.notice_containing(&room, "(mode: Manual, asks before acting)")
        .await;
    assert!(
        env.gw
            .log()
            .contains("session put in its conversation's mode agent=claude"),
        "the session was switched out of the adapter's own default"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn claude_codes_background_command_gets_a_card_and_stops_with_stop_task() {
    // Claude's adapter reports a command run in the background as a task only to a client
    // that offers AIR's `asyncTasks`; the task can be stopped.
    let model = ModelServer::start().await;
    let env = claude(&model).await;
    let room = env.room_with_agent(false).await;
    let ticks = env.gw.workspace("claude").join("ticks.txt");
    let command = "while true; do echo tick >> ticks.txt; sleep 0.2; done";
    env.alice
        .send(&room, &format!("Please BACKGROUND: {command}"))
        .await;
    let asked = poll(&env, &room, 0).await;
    env.alice.react(&room, &asked, "✅").await;
    env.reply_where(&room, "the answer to starting it", |t| {
        t.contains("The command ran:")
    })
    .await;
    let running = wait_until(PATIENCE, "the task's card", || {
        (env.texts_from(&room, &env.agent).into_iter())
            .find(|t| t.starts_with("⚙️ Background task 1:") && t.contains("· running"))
    })
    .await;
    // The adapter names it by the command's description.
    assert!(
        running.contains("Run it in the background · running"),
        "{running}"
    );
    assert!(running.contains("!stop task 1"), "{running}");
    wait_until(PATIENCE, "the command to run", || {
        ticks.exists().then_some(())
    })
    .await;

    env.alice.send(&room, "!stop task").await;
    let stopped = wait_until(PATIENCE, "the card to say it stopped", || {
        (env.texts_from(&room, &env.agent).into_iter())
            .find(|t| t.starts_with("🛑 Background task 1:"))
    })
    .await;
    assert!(stopped.contains("stopped"), "{stopped}");
    // Stopped for real: the file stops growing.
    let size = || std::fs::metadata(&ticks).map(|m| m.len()).unwrap_or(0);
    tokio::time::sleep(Duration::from_secs(1)).await;
    let after_stop = size();
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert_eq!(size(), after_stop, "the command still runs");
    env.alice.send(&room, "!stop task").await;
    env.notice_containing(&room, "has no background task running here")
        .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn claude_code_leaving_plan_mode_for_one_that_does_not_ask_takes_an_admin() {
    let model = ModelServer::start().await;
    let real = claude(&model).await;
    let (room, bobs_room) = real.room_with_bob().await;
    let bob = &real.bob;
    // Bob may choose a mode that asks, not one that does not.
    bob.send(&bobs_room, "!mode bypassPermissions").await;
    real.notice_containing(&room, "only admins may switch")
        .await;
    bob.send(&bobs_room, "!mode plan").await;
    real.notice_containing(&room, "mode is now Plan (asks before acting)")
        .await;
    // Claude offers to leave plan mode: two of its choices would stop asking.
    bob.send(&bobs_room, "PLAN: write made.txt").await;
    let asked = poll(&real, &room, 0).await;
    let shown = real.alice.current_text(&asked).unwrap_or_default();
    assert!(
        shown.contains("Yes, and use auto mode (admins only: stops asking)")
            && shown.contains("Yes, and bypass permissions (admins only: stops asking)"),
        "{shown}"
    );
    bob.react(&bobs_room, &asked, "🔁").await;
    let refused = real
        .notice_containing(&room, "only an admin may pick")
        .await;
    assert!(refused.body.contains("`auto`"), "{}", refused.body);
    // Approving the plan and going on asking is his to choose.
    bob.react(&bobs_room, &asked, "✅").await;
    real.reply_where(&room, "the plan's approval", |t| {
        t.contains("chosen by") && t.contains("manually approve edits")
    })
    .await;
    bob.send(&bobs_room, "!status").await;
    real.notice_containing(&room, "(mode: Manual, asks before acting)")
        .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn claude_code_is_stopped_and_after_a_restart_loads_its_session() {
    let model = ModelServer::start().await;
    let mut real = claude(&model).await;
    let room = real.room_with_agent(false).await;
    real.alice.send(&room, "NOTE: the sky is green\nSLOW").await;
    real.reply_where(&room, "the slow answer", |t| t.contains("tick 2"))
        .await;
    real.alice.send(&room, "!stop").await;
    real.reply_where(&room, "the stopped answer", |t| t.contains("Stopped"))
        .await;

    real.env.gw.restart();
    real.alice.send(&room, "RECALL").await;
    let said = real
        .reply_where(&room, "what Claude remembers", |t| t.contains("I remember"))
        .await;
    assert!(said.contains("I remember: the sky is green"), "{said}");
    // Loaded (`session/load`): the agent had the conversation, nothing was re-injected.
    let log = real.gw.log();
    assert!(
        !log.contains("re-injecting"),
        "the session was loaded, not re-injected"
    );
    assert!(!log.contains("could not get the session back"));
    // And it asks as it did before the restart.
    real.alice
        .send(&room, "Please RUN: touch after-restart.txt")
        .await;
    let asked = poll(&real, &room, 0).await;
    assert!(
        !real
            .gw
            .workspace("claude")
            .join("after-restart.txt")
            .exists()
    );
    real.alice.react(&room, &asked, "❌").await;
    real.reply_where(&room, "the refusal's answer", |t| {
        t.contains("The tool was refused.")
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn codex_answers_and_runs_a_command_allowed_from_a_poll() {
    // The adapter starts every session in `agent` ("Auto review"), where this command runs
    // unasked.
    let model = ModelServer::start().await;
    let env = codex(&model).await;
    let room = env.room_with_agent(false).await;
    env.alice.send(&room, "Say hello").await;
    env.reply_where(&room, "Codex's answer", |t| {
        t.contains("Hello from the script model.")
    })
    .await;

    run_allowed(&env, &room, "codex", 0).await;
    // The card shows what the command printed, not Codex's record of the run, nor its
    // approval prompt (the `codex` dialect).
    // The card's last edit may land after the answer.
    let card = wait_until(PATIENCE, "the command's card", || {
        (env.texts_from(&room, &env.agent).into_iter())
            .find(|t| t.starts_with("✅ 💻 echo made-by-codex"))
    })
    .await;
    let texts = env.texts_from(&room, &env.agent);
    // A card that became the call's poll ends with the answer ("✅ Yes, proceed, chosen by
    // alice"); the command's output is the line after the command either way.
    let printed = card.lines().skip_while(|l| !l.starts_with("$ ")).nth(1);
    assert_eq!(printed, Some("done"), "{card}");
    let leaked = |t: &&String| t.contains("\"call_id\"") || t.contains("Available Decisions");
    assert!(!texts.iter().any(|t| leaked(&t)), "{texts:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn only_an_admin_switches_codex_to_a_mode_that_does_not_ask() {
    let model = ModelServer::start().await;
    let real = codex(&model).await;
    let (room, bobs_room) = real.room_with_bob().await;
    let workspace = real.gw.workspace("codex");
    // Codex 2.x's full access, and its own default: both act without asking.
    for mode in ["agent-full-access", "agent"] {
        real.bob.send(&bobs_room, &format!("!mode {mode}")).await;
        let refused = real.notice_containing(&room, &format!("to `{mode}`")).await;
        assert!(
            refused.body.contains("only admins may switch"),
            "{}",
            refused.body
        );
    }
    real.bob.send(&bobs_room, "!mode").await;
    let listed = real.notice_containing(&room, "modes:").await;
    assert!(
        listed
            .body
            .contains("Read-only (`read-only`) ← current: asks before acting")
            && listed
                .body
                .contains("Full access (`agent-full-access`): acts without asking: admins only"),
        "{}",
        listed.body
    );
    // Bob's command still waits for a poll.
    real.bob.send(&bobs_room, "RUN: touch by-bob.txt").await;
    let asked = poll(&real, &room, 0).await;
    assert!(!workspace.join("by-bob.txt").exists());
    real.bob.react(&bobs_room, &asked, "❌").await;
    real.notice_containing(&room, "ended its turn after the tool was refused")
        .await;
    assert!(!workspace.join("by-bob.txt").exists());

    // Alice is an admin: her choice is made, and then Codex acts without asking.
    real.alice.send(&room, "!mode agent-full-access").await;
    real.notice_containing(&room, "mode is now Full access (acts without asking)")
        .await;
    real.alice
        .send(&room, "RUN: touch by-alice.txt && echo done")
        .await;
    real.reply_where(&room, "the command's result", |t| {
        t.contains("The command ran: done")
    })
    .await;
    assert!(workspace.join("by-alice.txt").exists());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn codex_refused_ends_its_turn_and_remembers_after_a_restart() {
    let model = ModelServer::start().await;
    let mut real = codex(&model).await;
    let room = real.room_with_agent(false).await;
    let workspace = real.gw.workspace("codex");
    real.alice
        .send(&room, "NOTE: the sea is red\nRUN: touch never.txt")
        .await;
    let asked = poll(&real, &room, 0).await;
    // ❌ is Codex's "No, and tell Codex what to do differently": it ends the whole turn
    // `cancelled`, though nobody stopped it.
    real.alice.react(&room, &asked, "❌").await;
    let said = real
        .notice_containing(&room, "ended its turn after the tool was refused")
        .await;
    assert!(
        said.body.contains("codex agent ended its turn"),
        "{}",
        said.body
    );
    assert!(!workspace.join("never.txt").exists());

    real.env.gw.restart();
    real.alice.send(&room, "RECALL").await;
    let said = real
        .reply_where(&room, "what Codex remembers", |t| t.contains("I remember"))
        .await;
    assert!(said.contains("I remember: the sea is red"), "{said}");
    real.alice.send(&room, "!status").await;
    real.notice_containing(&room, "(mode: Read-only, asks before acting)")
        .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_earlier_claude_code_session_is_listed_and_attached_again() {
    let model = ModelServer::start().await;
    let env = claude(&model).await;
    let room = env.room_with_agent(false).await;
    env.alice
        .send(&room, "NOTE: the moon is blue\nSay hello")
        .await;
    env.reply_where(&room, "the first answer", |t| t.contains("Hello from"))
        .await;
    // A fresh conversation: the earlier session is left for `!attach`.
    env.alice.send(&room, "!new").await;
    env.alice.send(&room, "Say hello again").await;
    wait_until(PATIENCE, "the second answer", || {
        (env.texts_from(&room, &env.agent)
            .iter()
            .filter(|t| t.contains("Hello from"))
            .count()
            == 2)
            .then_some(())
    })
    .await;
    env.alice.send(&room, "!sessions").await;
    let listed = env
        .notice_containing(&room, "sessions in this workspace")
        .await;
    let earlier = listed
        .body
        .lines()
        .filter_map(|l| l.strip_prefix("• "))
        .find(|l| !l.contains("(this conversation)"))
        .and_then(|l| l.split_whitespace().next())
        .unwrap_or_else(|| panic!("the earlier session among {}", listed.body))
        .to_owned();
    env.alice.send(&room, &format!("!attach {earlier}")).await;
    let attached = env
        .notice_containing(&room, "This conversation now continues session")
        .await;
    assert!(attached.body.contains(&earlier), "{}", attached.body);
    env.alice.send(&room, "RECALL").await;
    let said = env
        .reply_where(&room, "what Claude remembers", |t| t.contains("I remember"))
        .await;
    assert!(said.contains("I remember: the moon is blue"), "{said}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn codex_without_a_key_tells_the_room_how_to_sign_it_in() {
    // No model provider and no key: Codex refuses `session/new` with `auth_required`.
    let home = agent_home("codex");
    std::fs::create_dir_all(home.join(".codex")).unwrap();
    let env = start("codex", codex_toml(&home, "")).await.with_home(home);
    let room = env.room_with_agent(false).await;
    env.alice.send(&room, "Say hello").await;
    let told = env
        .notice_containing(&room, "needs to be signed in before it can answer")
        .await;
    for expected in [
        "API Key (id api-key): Use an API key to authenticate",
        "ChatGPT (id chat-gpt)",
        "!login",
    ] {
        assert!(
            told.body.contains(expected),
            "{expected:?} in {}",
            told.body
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn claude_code_reads_the_room_through_the_room_tools() {
    let model = ModelServer::start().await;
    let env = claude(&model).await;
    let room = env.room_with_agent(false).await;
    env.alice.send(&room, "The launch moved to Friday").await;
    env.reply_where(&room, "Claude's first answer", |t| {
        t.contains("Hello from the script model.")
    })
    .await;
    env.alice
        .send(&room, r#"MCP: search_messages {"query": "launch moved"}"#)
        .await;
    // Claude Code asks before it calls a tool of an MCP server.
    let asked = poll(&env, &room, 0).await;
    env.alice.react(&room, &asked, "✅").await;
    let said = env
        .reply_where(&room, "the tool's result", |t| {
            t.contains("The command ran")
        })
        .await;
    assert!(
        said.contains(&format!("({}) [$", env.alice.user_id))
            && said.contains(": The launch moved to Friday"),
        "Claude read Alice's message through the room tools: {said}"
    );
    let log = env.gw.log();
    let given = log
        .lines()
        .find(|l| l.contains("the session gets the room tools"));
    assert!(
        given.is_some_and(|l| l.contains("over=\"http\"")),
        "claude-agent-acp takes HTTP MCP servers: {given:?}"
    );
    assert!(
        !support::has_token(&log),
        "the session's token reached the log"
    );
}

#[test]
fn every_mode_of_the_pinned_agents_is_known_and_their_sessions_are_put_in_one_that_asks() {
    // What `scripts/check-agent-releases.sh` runs on the newest releases before a release,
    // here on the pinned ones: `sidekicks check --strict-modes`, no model needed.
    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let (claude_home, codex_home) = (agent_home("claude"), agent_home("codex"));
    std::fs::create_dir_all(codex_home.join(".codex")).unwrap();
    std::fs::write(
        codex_home.join(".codex/config.toml"),
        "model = \"gpt-5.6-luna\"\nmodel_provider = \"none\"\n[model_providers.none]\n\
         name = \"none\"\nbase_url = \"http://127.0.0.1:9/v1\"\nenv_key = \"NO_MODEL_KEY\"\n\
         wire_api = \"responses\"\n",
    )
    .unwrap();
    let (node, path) = (support::agents::node(), support::agents::path_with_node());
    let claude = support::agents::claude();
    let work = dir.path().join("work");
    std::fs::create_dir_all(&work).unwrap();
    let agent = |id: &str, args: String, home: &std::path::Path, env: String| {
        format!(
            "[[agents]]\nid = \"{id}\"\ndisplay_name = \"{id}\"\ncommand = {node:?}\n\
             args = [{args}]\nworkspace = {work:?}\nhome = {home:?}\nenv = {{ PATH = {path:?}, {env} }}\n\
             [agents.matrix]\nuser_id = \"@{id}:localhost\"\npassword = \"unused\"\n"
        )
    };
    let config = format!(
        "state_dir = \"state\"\n[matrix]\nhomeserver = \"http://127.0.0.1:9\"\n[access]\n\
         allowed_users = [\"@nobody:localhost\"]\n{}{}",
        agent(
            "claude",
            format!("{claude:?}"),
            &claude_home,
            "ANTHROPIC_BASE_URL = \"http://127.0.0.1:9\", ANTHROPIC_API_KEY = \"unused\", \
             IS_SANDBOX = \"1\", DISABLE_AUTOUPDATER = \"1\""
                .into()
        ),
        agent(
            "codex",
            format!("{:?}", support::agents::codex()),
            &codex_home,
            format!(
                "CODEX_HOME = {:?}, NO_MODEL_KEY = \"unused\"",
                codex_home.join(".codex")
            )
        ),
    );
    let file = dir.path().join("sidekicks.toml");
    std::fs::write(&file, config).unwrap();
    let out = std::process::Command::new(support::gateway::binary())
        .args(["check", "--strict-modes", "--config"])
        .arg(&file)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    for expected in [
        "starts in: auto (Auto): does not ask",
        "sessions are put in: default (Manual): asks before acting (switched: ok)",
        "starts in: agent (Auto review): does not ask",
        "sessions are put in: read-only (Read-only): asks before acting (switched: ok)",
    ] {
        assert!(
            stdout.contains(expected),
            "missing {expected:?} in:\n{stdout}"
        );
    }
}

/// `!queue steer` with Claude's adapter, which advertises steering: a message written while
/// Claude works is taken into the running turn (↪️), the model gets it in that turn, and
/// its answer comes in the same reply.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn claude_code_takes_a_steered_message_into_its_running_turn() {
    let model = ModelServer::start().await;
    let env = claude(&model).await;
    let room = env.room_with_agent(false).await;
    env.alice.send(&room, "!queue steer").await;
    env.notice_containing(&room, "join the running turn").await;
    env.alice.send(&room, "SLOW").await;
    env.reply_where(&room, "the slow answer", |t| t.contains("tick 3"))
        .await;
    let added = env.alice.send(&room, "Say hello too").await;
    wait_until(PATIENCE, "the steered mark", || {
        (env.alice.reactions_on(&added).into_iter()).find(|r| r.key == "↪️")
    })
    .await;
    let reply = env
        .reply_where(&room, "the steered message answered", |t| {
            t.contains("Hello from the script model.")
        })
        .await;
    assert!(
        reply.starts_with("tick 1"),
        "one reply for the turn: {reply}"
    );
    let steered = (model.requests().iter()).any(|r| r.to_string().contains("Say hello too"));
    assert!(steered, "the model got the steered message");
}

/// `!fork` with Claude Code: the fork's thread starts with the conversation so far; what is
/// said in the fork stays out of the original.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn claude_code_forks_its_session_the_fork_knows_the_past_the_original_not_the_fork() {
    let model = ModelServer::start().await;
    let env = claude(&model).await;
    let room = env.room_with_agent(false).await;
    env.alice.send(&room, "NOTE: the sky is green").await;
    // The turn is over (its reply no longer live) before the fork: a turn still finishing
    // would be the original going on past the fork point, and the fork is then re-injected.
    wait_until(PATIENCE, "the first answer, complete", || {
        (env.alice.messages_from(&room, &env.agent).into_iter()).find(|m| {
            (env.alice.current_text(&m.event_id))
                .is_some_and(|t| t.contains("Hello from the script model."))
                && !env.alice.is_live(&m.event_id)
        })
    })
    .await;
    env.alice.send(&room, "!fork").await;
    let root = wait_until(PATIENCE, "the fork's root", || {
        (env.alice.messages_from(&room, &env.agent).into_iter())
            .find(|m| m.body.starts_with("🍴 Fork"))
    })
    .await;
    env.alice
        .send_in_thread(&room, &root.event_id, "NOTE: the grass is blue\nRECALL")
        .await;
    // What Claude remembers, in the fork's thread (`Some`) or the main timeline (`None`).
    let remembered = |thread: Option<&str>| {
        (env.alice.messages_from(&room, &env.agent).into_iter())
            .filter(|m| m.thread.as_deref() == thread)
            .filter_map(|m| env.alice.current_text(&m.event_id))
            .find(|t| t.contains("I remember"))
    };
    let forked = wait_until(PATIENCE, "what Claude remembers in the fork", || {
        remembered(Some(&root.event_id))
    })
    .await;
    assert!(forked.contains("the sky is green"), "{forked}");
    // The adapter advertises `sessionCapabilities.fork`: the fork is Claude's own copy of
    // the session, not the conversation re-injected.
    assert!(env.gw.log().contains("session forked"), "{}", env.gw.log());
    env.alice.send(&room, "RECALL").await;
    let original = wait_until(PATIENCE, "what Claude remembers in the original", || {
        remembered(None)
    })
    .await;
    assert!(original.contains("the sky is green"), "{original}");
    assert!(!original.contains("the grass is blue"), "{original}");
}
