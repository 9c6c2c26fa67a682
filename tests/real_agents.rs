#![recursion_limit = "256"]
//! Real third-party agents through the gateway: Claude Code (`claude-agent-acp`, from npm,
//! pinned) against a scripted model server, driven from Matrix like any agent.

mod support;

use matrix_sdk::room::Room;
use support::model_server::ModelServer;
use support::{
    AgentSpec, Env, GatewayProcess, PATIENCE, Person, Synapse, SynapseOptions, wait_until,
};

/// A home of the agent's own, outside /tmp (which the sandbox replaces).
fn agent_home(agent: &str) -> std::path::PathBuf {
    tempfile::Builder::new()
        .prefix(&format!("sidekicks-{agent}-home-"))
        .tempdir_in(env!("CARGO_TARGET_TMPDIR"))
        .unwrap()
        .keep()
}

/// A gateway running the real agent `id` (its `[[agents]]` lines in `agent_toml`), with
/// Alice allowed.
async fn start(id: &str, agent_toml: String) -> Env {
    let hs = Synapse::start(SynapseOptions::default()).await;
    let alice_id = hs.register("alice", "alice-password").await;
    let password = format!("{id}-password");
    let agent = hs.register(id, &password).await;
    let gw = GatewayProcess::start(
        &hs.url,
        &[alice_id.as_str()],
        &[AgentSpec {
            id: id.into(),
            user_id: agent.clone(),
            password,
            demo_args: vec![],
            agent_toml,
        }],
        "[timeouts]\nnew_session_secs = 120",
    );
    let alice = Person::login(&hs.url, &alice_id, "alice-password").await;
    Env {
        hs,
        gw,
        alice,
        agents: vec![agent.clone()],
        agent,
    }
}

/// A gateway running Claude Code as agent `claude`, its model the scripted server.
async fn claude(model: &ModelServer) -> Env {
    let entry = support::agents::claude();
    let home = agent_home("claude");
    let agent_toml = format!(
        "command = \"node\"\nargs = [{entry:?}]\nhome = {home:?}\n\
         env = {{ ANTHROPIC_BASE_URL = \"{url}\", ANTHROPIC_API_KEY = \"sk-script-model-key\", IS_SANDBOX = \"1\", \
         CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC = \"1\", DISABLE_TELEMETRY = \"1\", DISABLE_AUTOUPDATER = \"1\" }}",
        url = model.url,
    );
    start("claude", agent_toml).await
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
}

/// Waits for the agent's `n`-th permission poll (from 0), with its choices pre-reacted.
async fn poll(env: &Env, room: &Room, n: usize) -> String {
    // Both agents offer three options; the poll adds Stop.
    env.open_poll(room, "🔐", n, 4).await
}

/// Asks agent `name` to run a command writing `made.txt`, allows it from the poll, and
/// checks the command ran; returns the poll.
async fn run_allowed(env: &Env, room: &Room, name: &str) -> String {
    let command = format!("echo made-by-{name} > made.txt && echo done");
    env.alice
        .send(room, &format!("Please RUN: {command}"))
        .await;
    let asked = poll(env, room, 0).await;
    env.alice.react(room, &asked, "✅").await;
    let said = env
        .reply_where(room, "the command's result", |t| {
            t.contains("The command ran")
        })
        .await;
    assert!(said.contains("The command ran: done"), "{said}");
    let made = std::fs::read_to_string(env.gw.workspace(name).join("made.txt")).unwrap();
    assert_eq!(made, format!("made-by-{name}\n"));
    asked
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn claude_codes_shell_command_is_allowed_or_refused_from_a_poll() {
    let model = ModelServer::start().await;
    let env = claude(&model).await;
    let room = env.room_with_agent(false).await;
    let workspace = env.gw.workspace("claude");

    let asked = run_allowed(&env, &room, "claude").await;
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
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn claude_code_is_stopped_and_after_a_restart_loads_its_session() {
    let model = ModelServer::start().await;
    let mut env = claude(&model).await;
    let room = env.room_with_agent(false).await;
    env.alice.send(&room, "NOTE: the sky is green\nSLOW").await;
    env.reply_where(&room, "the slow answer", |t| t.contains("tick 2"))
        .await;
    env.alice.send(&room, "!stop").await;
    env.reply_where(&room, "the stopped answer", |t| t.contains("Stopped"))
        .await;

    env.gw.restart();
    env.alice.send(&room, "RECALL").await;
    let said = env
        .reply_where(&room, "what Claude remembers", |t| t.contains("I remember"))
        .await;
    assert!(said.contains("I remember: the sky is green"), "{said}");
    // Loaded (`session/load`): the agent had the conversation, nothing was re-injected.
    let log = env.gw.log();
    assert!(
        !log.contains("re-injecting"),
        "the session was loaded, not re-injected"
    );
    assert!(!log.contains("could not get the session back"));
}

/// A gateway running Codex as agent `codex`, its model the scripted server.
async fn codex(model: &ModelServer) -> Env {
    let program = support::agents::codex();
    let home = agent_home("codex");
    let codex_home = home.join(".codex");
    std::fs::create_dir_all(&codex_home).unwrap();
    // Commands need approval (`untrusted`); Sidekicks' sandbox stands in for Codex's own.
    std::fs::write(
        codex_home.join("config.toml"),
        format!(
            "model = \"gpt-5.4\"\nmodel_provider = \"script\"\napproval_policy = \"untrusted\"\n\
             sandbox_mode = \"danger-full-access\"\n[model_providers.script]\nname = \"script\"\n\
             base_url = \"{}/v1\"\nenv_key = \"SCRIPT_API_KEY\"\nwire_api = \"responses\"\n",
            model.url
        ),
    )
    .unwrap();
    let agent_toml = format!(
        "command = {program:?}\nargs = []\nhome = {home:?}\n\
         env = {{ CODEX_HOME = {codex_home:?}, SCRIPT_API_KEY = \"sk-script-model-key\" }}",
    );
    start("codex", agent_toml).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn codex_answers_and_runs_a_command_allowed_from_a_poll() {
    let model = ModelServer::start().await;
    let env = codex(&model).await;
    let room = env.room_with_agent(false).await;
    env.alice.send(&room, "Say hello").await;
    env.reply_where(&room, "Codex's answer", |t| {
        t.contains("Hello from the script model.")
    })
    .await;

    run_allowed(&env, &room, "codex").await;
    // The card shows what the command printed, not Codex's record of the run, nor its
    // approval prompt (the `codex` dialect).
    // The card's last edit may land after the answer.
    let card = wait_until(PATIENCE, "the command's card", || {
        (env.texts_from(&room, &env.agent).into_iter())
            .find(|t| t.starts_with("✅ 💻 echo made-by-codex"))
    })
    .await;
    let texts = env.texts_from(&room, &env.agent);
    assert_eq!(card.lines().last(), Some("done"), "{card}");
    let leaked = |t: &&String| t.contains("\"call_id\"") || t.contains("Available Decisions");
    assert!(!texts.iter().any(|t| leaked(&t)), "{texts:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn codex_refused_ends_its_turn_and_remembers_after_a_restart() {
    let model = ModelServer::start().await;
    let mut env = codex(&model).await;
    let room = env.room_with_agent(false).await;
    let workspace = env.gw.workspace("codex");
    env.alice
        .send(&room, "NOTE: the sea is red\nRUN: touch never.txt")
        .await;
    let asked = poll(&env, &room, 0).await;
    // ❌ is Codex's `abort`: it ends the whole turn `cancelled`, though nobody stopped it.
    env.alice.react(&room, &asked, "❌").await;
    let said = env
        .notice_containing(&room, "ended its turn after the tool was refused")
        .await;
    assert!(
        said.body.contains("codex agent ended its turn"),
        "{}",
        said.body
    );
    assert!(!workspace.join("never.txt").exists());

    env.gw.restart();
    env.alice.send(&room, "RECALL").await;
    let said = env
        .reply_where(&room, "what Codex remembers", |t| t.contains("I remember"))
        .await;
    assert!(said.contains("I remember: the sea is red"), "{said}");
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
    let program = support::agents::codex();
    let home = agent_home("codex");
    let codex_home = home.join(".codex");
    std::fs::create_dir_all(&codex_home).unwrap();
    let agent_toml = format!(
        "command = {program:?}\nargs = []\nhome = {home:?}\nenv = {{ CODEX_HOME = {codex_home:?} }}",
    );
    let env = start("codex", agent_toml).await;
    let room = env.room_with_agent(false).await;
    env.alice.send(&room, "Say hello").await;
    let told = env
        .notice_containing(&room, "needs to be signed in before it can answer")
        .await;
    assert!(told.body.contains("codex-api-key"), "{}", told.body);
    assert!(
        told.body
            .contains("Requires setting the `CODEX_API_KEY` environment variable"),
        "{}",
        told.body
    );
    assert!(
        told.body.contains("in the agent's env in the config"),
        "{}",
        told.body
    );
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
