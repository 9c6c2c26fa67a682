#![recursion_limit = "256"]
//! How an agent's Matrix user signs in: with an access token its homeserver issued (as a
//! Matrix Authentication Service's compatibility token is), no password in the config. A
//! token the homeserver no longer takes is named clearly, in the log and by `sidekicks
//! check`.

mod support;

use std::time::Duration;

use support::gateway::{binary, check_config};
use support::{Env, GatewayProcess, Person, Synapse, SynapseOptions};

/// An access token for `user`'s device `device`, as the homeserver issues one.
async fn issued_token(hs: &Synapse, user: &str, password: &str, device: &str) -> String {
    let body = serde_json::json!({
        "type": "m.login.password",
        "identifier": {"type": "m.id.user", "user": user},
        "password": password,
        "device_id": device,
    });
    let answer = reqwest::Client::new()
        .post(format!("{}/_matrix/client/v3/login", hs.url))
        .header("content-type", "application/json")
        .body(body.to_string())
        .send()
        .await
        .unwrap();
    let answer: serde_json::Value = serde_json::from_str(&answer.text().await.unwrap()).unwrap();
    answer["access_token"].as_str().unwrap().to_owned()
}

/// `sidekicks check` on the gateway's config: (success, what it printed).
fn check(gw: &GatewayProcess) -> (bool, String) {
    check_config(&gw.config)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_agent_signs_in_with_an_issued_token_and_a_revoked_one_is_named_clearly() {
    let hs = Synapse::start(SynapseOptions::default()).await;
    let alice_id = hs.register("alice", "alice-password").await;
    let agent = hs.register("demo", "demo-password").await;
    let token = issued_token(&hs, "demo", "demo-password", "SKTOKEN").await;
    let gw = GatewayProcess::start_from_config(
        |dir| {
            std::fs::create_dir_all(dir.join("ws")).unwrap();
            std::fs::write(dir.join("demo.token"), format!("{token}\n")).unwrap();
            format!(
                "state_dir = \"state\"\n[matrix]\nhomeserver = \"{url}\"\n\
                 [access]\nallowed_users = [\"{alice_id}\"]\n\
                 [[agents]]\nid = \"demo\"\ndisplay_name = \"demo agent\"\n\
                 command = {bin:?}\nargs = [\"demo-agent\"]\nworkspace = \"ws\"\n\
                 [agents.matrix]\nuser_id = \"{agent}\"\n\
                 access_token_file = \"demo.token\"\ndevice_id = \"SKTOKEN\"\n",
                url = hs.url,
                bin = binary(),
            )
        },
        &[],
    );
    let alice = Person::login(&hs.url, &alice_id, "alice-password").await;
    let mut env = Env {
        hs,
        gw,
        alice,
        agents: vec![agent.clone()],
        agent,
    };
    // No password anywhere: it signs in with the token, joins and answers.
    let room = env.room_with_agent(false).await;
    env.ask(&room, "%say signed in by token", "the answer", |t| {
        t == "signed in by token"
    })
    .await;
    let (ok, said) = check(&env.gw);
    assert!(ok, "{said}");
    assert!(
        said.contains("matrix sign-in: access token from")
            && said.contains("access token: accepted (device SKTOKEN)"),
        "{said}"
    );

    // The token is revoked (its device signed out): the check and the next start say so,
    // and what to do.
    let revoked = reqwest::Client::new()
        .post(format!("{}/_matrix/client/v3/logout", env.hs.url))
        .bearer_auth(&token)
        .header("content-type", "application/json")
        .body("{}")
        .send()
        .await
        .unwrap();
    assert!(revoked.status().is_success());
    let (ok, said) = check(&env.gw);
    assert!(!ok, "{said}");
    assert!(said.contains("refused the access token in"), "{said}");
    assert!(said.contains("demo.token"), "{said}");
    env.gw.restart();
    let exited = env.gw.wait_exit(Duration::from_secs(60));
    assert!(exited.is_some_and(|s| !s.success()), "{exited:?}");
    let log = env.gw.log();
    assert!(log.contains("refused the access token in"), "{log}");
    assert!(!log.contains(&token), "the token is never logged");
    assert!(!said.contains(&token), "nor printed");
}
