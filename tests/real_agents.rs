#![recursion_limit = "256"]
//! Real third-party agents through the gateway: Claude Code (`claude-agent-acp`, from npm,
//! pinned) against a scripted model server, driven from Matrix like any agent.

mod support;

use matrix_sdk::room::Room;
use support::model_server::ModelServer;
use support::{AgentSpec, Env, GatewayProcess, PATIENCE, Person, Synapse, SynapseOptions, wait_until};

/// A gateway running Claude Code as agent `claude`, its model the scripted server.
async fn claude(model: &ModelServer) -> Env {
    let entry = support::agents::claude();
    let hs = Synapse::start(SynapseOptions::default()).await;
    let alice_id = hs.register("alice", "alice-password").await;
    let agent = hs.register("claude", "claude-password").await;
    // Its home is outside /tmp (which the sandbox replaces) and its own.
    let home = tempfile::Builder::new()
        .prefix("sidekicks-claude-home-")
        .tempdir_in(env!("CARGO_TARGET_TMPDIR"))
        .unwrap()
        .keep();
    let agent_toml = format!(
        "command = \"node\"\nargs = [{entry:?}]\nhome = {home:?}\n\
         env = {{ ANTHROPIC_BASE_URL = \"{url}\", ANTHROPIC_API_KEY = \"sk-script-model-key\", IS_SANDBOX = \"1\", \
         CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC = \"1\", DISABLE_TELEMETRY = \"1\", DISABLE_AUTOUPDATER = \"1\" }}",
        url = model.url,
    );
    let gw = GatewayProcess::start(
        &hs.url,
        &[alice_id.as_str()],
        &[AgentSpec {
            id: "claude".into(),
            user_id: agent.clone(),
            password: "claude-password".into(),
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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn claude_code_answers_in_the_room_with_the_scripted_model() {
    let model = ModelServer::start().await;
    let env = claude(&model).await;
    let room = env.room_with_agent(false).await;
    env.alice.send(&room, "Say hello").await;
    let said = env
        .reply_where(&room, "Claude's answer", |t| t.contains("Hello from the script model."))
        .await;
    assert!(said.starts_with("Hello from the script model."), "{said}");
    assert!(!model.requests().is_empty());
}
