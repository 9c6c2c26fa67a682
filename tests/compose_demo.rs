#![recursion_limit = "256"]
//! The compose demo (`deploy/container/compose.yaml`) without its images: no registry is
//! reachable from our machines, so Synapse's and Element's images cannot be pulled here, but
//! every file of ours the demo runs can be. Synapse from PyPI runs the demo's
//! `homeserver.yaml`, the demo's `register-accounts.sh` registers its accounts (twice, as a
//! second `up` does), and the gateway runs the demo's `sidekicks.toml`; then `me` talks to
//! the demo agent. Only what a container changes is rewritten: paths, the port, the
//! homeserver's address.

mod support;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use support::{GatewayProcess, PATIENCE, Person, Synapse, SynapseOptions, wait_until};

/// The demo's folder in the repository.
fn demo_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("deploy/container/demo")
}

/// `text` with `from` replaced by `to`; fails when `from` is not there, so that a change
/// to the demo's files that this test does not follow is seen here.
fn rewrite(text: &str, from: &str, to: &str) -> String {
    assert!(text.contains(from), "{from:?} is no longer in:\n{text}");
    text.replace(from, to)
}

/// The demo's Synapse config as it is, but for where its container's paths and port lie.
fn demo_homeserver(dir: &Path, port: u16) -> String {
    let config = std::fs::read_to_string(demo_dir().join("homeserver.yaml")).unwrap();
    let config = rewrite(&config, "/data/", &format!("{}/", dir.display()));
    let config = rewrite(
        &config,
        "/config/localhost.signing.key",
        &demo_dir()
            .join("localhost.signing.key")
            .display()
            .to_string(),
    );
    let config = rewrite(&config, "port: 8008", &format!("port: {port}"));
    rewrite(&config, "['0.0.0.0']", "['127.0.0.1']")
}

/// Runs the demo's account script against `config` and the homeserver at `url`, with
/// Synapse's `register_new_matrix_user` on the path as in Synapse's image.
fn register_accounts(config: &Path, url: &str) -> Output {
    let path = format!(
        "{}:{}",
        support::synapse::venv().join("bin").display(),
        std::env::var("PATH").unwrap_or_default()
    );
    Command::new("sh")
        .arg(demo_dir().join("register-accounts.sh"))
        .arg(config)
        .arg(url)
        .env("PATH", path)
        .output()
        .unwrap()
}

/// What a run that must succeed printed.
fn succeeded(run: Output) -> String {
    let out = String::from_utf8_lossy(&run.stdout).into_owned();
    let err = String::from_utf8_lossy(&run.stderr);
    assert!(run.status.success(), "{out}\n{err}");
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_demo_registers_its_accounts_and_me_talks_to_the_demo_agent() {
    let hs = Synapse::start(SynapseOptions {
        config_from: Some(demo_homeserver),
        ..SynapseOptions::default()
    })
    .await;
    let config = hs.dir.path().join("homeserver.yaml");

    let out = succeeded(register_accounts(&config, &hs.url));
    assert!(
        out.contains("registered @me") && out.contains("registered @demo"),
        "{out}"
    );

    // A later `up` runs the script again: the accounts exist, which is no failure.
    let out = succeeded(register_accounts(&config, &hs.url));
    assert!(
        out.contains("@me exists already") && out.contains("@demo exists already"),
        "{out}"
    );

    // Any other failure stops the demo there, with Synapse's answer, instead of leaving
    // the gateway to fail at its login.
    let wrong = hs.dir.path().join("wrong-secret.yaml");
    let with_wrong_secret = rewrite(
        &std::fs::read_to_string(&config).unwrap(),
        "sidekicks-demo-shared-secret",
        "not-the-secret",
    );
    std::fs::write(&wrong, with_wrong_secret).unwrap();
    let refused = register_accounts(&wrong, &hs.url);
    assert!(!refused.status.success());
    let err = String::from_utf8_lossy(&refused.stderr);
    assert!(err.contains("could not register @me"), "{err}");

    let demo = std::fs::read_to_string(demo_dir().join("sidekicks.toml")).unwrap();
    let gw = GatewayProcess::start_from_config(
        |dir| {
            let workspaces = dir.join("workspaces");
            std::fs::create_dir_all(&workspaces).unwrap();
            let toml = rewrite(
                &demo,
                "\"/var/lib/sidekicks\"",
                &format!("{:?}", dir.join("state")),
            );
            let toml = rewrite(&toml, "\"http://synapse:8008\"", &format!("{:?}", hs.url));
            let toml = rewrite(
                &toml,
                "\"/usr/local/bin/sidekicks\"",
                &format!("{:?}", support::gateway::binary()),
            );
            rewrite(&toml, "\"/workspaces\"", &format!("{workspaces:?}"))
        },
        &[("SIDEKICKS_DEMO_AGENT_PASSWORD", "demo-password-agent")],
    );

    // As the compose file's header tells people to do.
    let me = Person::login(&hs.url, "@me:localhost", "demo-password-me").await;
    let room = me.create_room(false).await;
    me.invite(&room, "@demo:localhost").await;
    me.wait_membership(&room, "@demo:localhost", matrix_sdk::RoomMemberships::JOIN)
        .await;
    me.send(&room, "%say hello from the demo").await;
    wait_until(PATIENCE, "the demo agent's answer", || {
        me.messages_from(&room, "@demo:localhost")
            .into_iter()
            .find(|m| me.current_text(&m.event_id).as_deref() == Some("hello from the demo"))
    })
    .await;
    drop(gw);
}

#[test]
fn every_file_the_compose_file_names_exists() {
    let container = demo_dir().parent().unwrap().to_owned();
    let compose = std::fs::read_to_string(container.join("compose.yaml")).unwrap();
    let mounted: Vec<&str> = compose
        .lines()
        .filter_map(|l| l.trim().strip_prefix("- ./"))
        .map(|l| l.split(':').next().unwrap())
        .collect();
    assert!(mounted.len() >= 5, "the mounts: {mounted:?}");
    for file in &mounted {
        assert!(
            container.join(file).is_file(),
            "{file} is mounted but missing"
        );
    }
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    assert!(compose.contains("context: ../..") && root.join("Cargo.toml").is_file());
    assert!(compose.contains("dockerfile: deploy/container/Containerfile"));
    assert!(root.join("deploy/container/Containerfile").is_file());

    // Element finds the homeserver where the compose file publishes it.
    assert!(compose.contains("\"127.0.0.1:8008:8008\""));
    let element: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(demo_dir().join("element-config.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(
        element["default_server_config"]["m.homeserver"]["base_url"],
        "http://localhost:8008"
    );
}
