#![recursion_limit = "256"]
//! Real agents whose approvals switch off by more than a mode, fenced by construction, as
//! users install them today (pinned, from npm) against the scripted model server: GitHub
//! Copilot's CLI (`@github/copilot`, `copilot --acp`), whose `allow_all` option and
//! `/allow-all` command approve everything with the mode unchanged, and Qwen Code 0.24
//! (`@qwen-code/qwen-code`), which starts in `auto` (a classifier approves) and offers
//! "always allow" answers saved to the project's or the user's settings. Alice is an admin;
//! Bob may prompt and approve, but is no admin.

mod support;

use support::model_server::ModelServer;
use support::real::{Real, agent_home, poll, run_allowed, start};
use support::{PATIENCE, wait_until};

/// A gateway running Copilot's CLI as agent `copilot`, offline, its model the scripted
/// server (an OpenAI-compatible provider over Chat Completions).
async fn copilot(model: &ModelServer) -> Real {
    let program = support::agents::copilot();
    let home = agent_home("copilot");
    let agent_toml = format!(
        "command = {program:?}\nargs = [\"--acp\"]\nhome = {home:?}\n\
         env = {{ COPILOT_OFFLINE = \"true\", COPILOT_AUTO_UPDATE = \"false\", \
         COPILOT_PROVIDER_BASE_URL = \"{url}/v1\", COPILOT_PROVIDER_TYPE = \"openai\", \
         COPILOT_PROVIDER_API_KEY = \"sk-script-model-key\", COPILOT_MODEL = \"gpt-5.4\", \
         COPILOT_PROVIDER_WIRE_API = \"completions\" }}",
        url = model.url,
    );
    start("copilot", agent_toml).await.with_home(home)
}

/// A gateway running Qwen Code as agent `qwen`, its model the scripted server.
async fn qwen(model: &ModelServer) -> Real {
    let (entry, node) = (support::agents::qwen(), support::agents::node());
    let path = support::agents::path_with_node();
    let home = agent_home("qwen");
    let agent_toml = format!(
        "command = {node:?}\nargs = [{entry:?}, \"--acp\"]\nhome = {home:?}\n\
         env = {{ PATH = {path:?}, QWEN_CODE_NO_RELAUNCH = \"true\", \
         OPENAI_API_KEY = \"sk-script-model-key\", OPENAI_BASE_URL = \"{url}/v1\", \
         OPENAI_MODEL = \"qwen3-coder\" }}",
        url = model.url,
    );
    start("qwen", agent_toml).await.with_home(home)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn copilots_commands_wait_for_a_poll_and_only_an_admin_turns_approvals_off() {
    let model = ModelServer::start().await;
    let env = copilot(&model).await;
    let (room, bobs_room) = env.room_with_bob().await;
    run_allowed(&env, &room, "copilot", 0).await;
    // Its approval switch is not a mode: Bob may neither set it nor send the command that
    // flips it; neither reaches the agent.
    env.bob.send(&bobs_room, "!set allow_all on").await;
    let refused = env.notice_containing(&room, "only admins may change").await;
    assert!(refused.body.contains("`allow_all`"), "{}", refused.body);
    env.bob.send(&bobs_room, "/allow-all on").await;
    env.notice_containing(&room, "only admins may send /allow-all")
        .await;
    // Its command still waits for a poll.
    let again = env.gw.workspace("copilot").join("again.txt");
    env.bob
        .send(&bobs_room, "RUN: echo again > again.txt")
        .await;
    let asked = poll(&env, &room, 1).await;
    assert!(!again.exists(), "the command ran before anyone answered");
    env.alice.react(&room, &asked, "✅").await;
    wait_until(PATIENCE, "the second command", || {
        again.exists().then_some(())
    })
    .await;
    // A refusal: the command never runs.
    let refused = env.gw.workspace("copilot").join("refused.txt");
    env.bob.send(&bobs_room, "RUN: echo no > refused.txt").await;
    let asked = poll(&env, &room, 2).await;
    env.alice.react(&room, &asked, "❌").await;
    env.reply_where(&room, "the refused call's card", |t| {
        t.contains("Deny, chosen by alice")
    })
    .await;
    assert!(!refused.exists(), "a refused command ran");
    let texts = env.texts_from(&room, &env.agent);
    assert!(
        !texts
            .iter()
            .any(|t| t.contains("All permissions are now enabled")),
        "/allow-all reached the agent: {texts:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn qwen_code_is_put_in_a_mode_that_asks_and_its_lasting_answers_are_for_admins() {
    let model = ModelServer::start().await;
    let env = qwen(&model).await;
    let (room, bobs_room) = env.room_with_bob().await;
    // It starts in `auto` (a classifier approves): its command still waits for a poll.
    let asked = run_allowed(&env, &room, "qwen", 0).await;
    let body = (env.alice.messages_from(&room, &env.agent).into_iter())
        .find(|m| m.event_id == asked)
        .map(|m| m.body)
        .unwrap();
    assert!(
        body.contains("(admins only: saved beyond this session)"),
        "{body}"
    );
    env.alice.send(&room, "!status").await;
    env.notice_containing(&room, "asks before acting").await;
    // Its modes that approve by themselves are for admins.
    env.bob.send(&bobs_room, "!mode yolo").await;
    env.notice_containing(&room, "only admins may switch").await;
    // Bob may approve, but not with an answer saved to the project's settings.
    let made = env.gw.workspace("qwen").join("again.txt");
    env.bob
        .send(&bobs_room, "RUN: echo again > again.txt")
        .await;
    let asked = poll(&env, &room, 1).await;
    env.bob.react(&bobs_room, &asked, "🔁").await;
    env.notice_containing(&room, "its answer is saved beyond this session")
        .await;
    assert!(!made.exists(), "the refused pick answered the agent");
    env.bob.react(&bobs_room, &asked, "✅").await;
    wait_until(PATIENCE, "the command allowed once", || {
        made.exists().then_some(())
    })
    .await;
}

#[test]
fn every_mode_and_approval_switch_of_copilot_and_qwen_code_is_known() {
    // What `scripts/check-agent-releases.sh` runs on the newest releases, here on the pinned
    // ones: `sidekicks check --strict-modes`, no model needed.
    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let work = dir.path().join("work");
    std::fs::create_dir_all(&work).unwrap();
    let (node, path) = (support::agents::node(), support::agents::path_with_node());
    let agent = |id: &str, command: String, args: String, env: &str| {
        let home = dir.path().join(format!("{id}-home"));
        std::fs::create_dir_all(&home).unwrap();
        format!(
            "[[agents]]\nid = \"{id}\"\ndisplay_name = \"{id}\"\ncommand = {command}\n\
             args = [{args}]\nworkspace = {work:?}\nhome = {home:?}\nenv = {{ {env} }}\n\
             [agents.matrix]\nuser_id = \"@{id}:localhost\"\npassword = \"unused\"\n",
        )
    };
    let config = format!(
        "state_dir = \"state\"\n[matrix]\nhomeserver = \"http://127.0.0.1:9\"\n[access]\n\
         allowed_users = [\"@nobody:localhost\"]\n{}{}",
        agent(
            "copilot",
            format!("{:?}", support::agents::copilot()),
            "\"--acp\"".into(),
            "COPILOT_OFFLINE = \"true\", COPILOT_AUTO_UPDATE = \"false\", \
             COPILOT_PROVIDER_BASE_URL = \"http://127.0.0.1:9/v1\", COPILOT_PROVIDER_TYPE = \
             \"openai\", COPILOT_PROVIDER_API_KEY = \"unused\", COPILOT_MODEL = \"gpt-5.4\""
        ),
        agent(
            "qwen",
            format!("{node:?}"),
            format!("{:?}, \"--acp\"", support::agents::qwen()),
            &format!(
                "PATH = {path:?}, QWEN_CODE_NO_RELAUNCH = \"true\", OPENAI_API_KEY = \
                 \"unused\", OPENAI_BASE_URL = \"http://127.0.0.1:9/v1\", OPENAI_MODEL = \"qwen3-coder\""
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
        "dialect: copilot",
        "sessions are put in: https://agentclientprotocol.com/protocol/session-modes#agent (Agent): asks before acting",
        "config options: mode (mode), allow_all (permissions)",
        "dialect: qwen",
        "starts in: auto (Auto): does not ask",
        "sessions are put in: default (Default): asks before acting (switched: ok)",
    ] {
        assert!(
            stdout.contains(expected),
            "missing {expected:?} in:\n{stdout}"
        );
    }
}
