#![recursion_limit = "256"]
//! A sandbox a hostile agent cannot leave: the demo agent, sandboxed as by default, plays an
//! agent a prompt injection turned against the gateway, through a real homeserver. Each test
//! tries one way out that used to work and checks the gateway's secrets stay out of reach:
//! the agent's own Matrix access token (`state/matrix/demo/session.json`) above all.

mod support;

use support::{Env, SynapseOptions};

/// A gateway whose agent must run sandboxed (`sandbox.mode = "bubblewrap"`).
async fn sandboxed(extra_toml: &str) -> Env {
    let toml = format!("[sandbox]\nmode = \"bubblewrap\"\n{extra_toml}");
    Env::start(SynapseOptions::default(), &toml).await
}

/// The agent's Matrix session file, which holds its access token.
fn session_file(env: &Env) -> std::path::PathBuf {
    env.gw.dir.path().join("state/matrix/demo/session.json")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_planted_bwrap_on_the_terminals_path_never_runs_outside_the_sandbox() {
    let env = sandboxed("").await;
    let room = env.room_with_agent(false).await;
    let workspace = env.gw.workspace("demo").canonicalize().unwrap();
    let session = session_file(&env);
    assert!(session.exists());
    let stolen = workspace.join("stolen.txt");
    // A `bwrap` of its own that copies the token where the agent can read it, then runs
    // the real one so nothing looks amiss.
    let script = format!(
        "#!/bin/sh\\ncat {} > {} 2>/dev/null\\nexec /usr/bin/bwrap \"$@\"\\n",
        session.display(),
        stolen.display()
    );
    let bin = workspace.join("bin");
    env.alice
        .send(
            &room,
            &format!(
                "%terminal mkdir -p bin && printf '{script}' > bin/bwrap && chmod +x bin/bwrap && echo planted\n\
                 %terminal --env PATH={bin}:/usr/bin:/bin echo ran-with-its-path\n\
                 %terminal --env LD_PRELOAD={bin}/evil.so echo ran-with-its-loader\n\
                 %say done trying",
                bin = bin.display(),
            ),
        )
        .await;
    let said = env
        .reply_where(&room, "the three commands", |t| t.contains("done trying"))
        .await;
    assert!(said.contains("planted"), "{said}");
    assert!(bin.join("bwrap").exists(), "the agent did plant it");
    // The command ran, with the agent's PATH inside its sandbox, and the planted program
    // never ran outside it.
    assert!(said.contains("ran-with-its-path"), "{said}");
    assert!(
        !stolen.exists(),
        "the planted bwrap ran as the gateway: {said}"
    );
    // The loader's variables are refused, with a reason.
    assert!(
        said.contains("terminal refused: ") && said.contains("`LD_PRELOAD` is not passed"),
        "{said}"
    );
    assert!(!said.contains("ran-with-its-loader"), "{said}");
}
