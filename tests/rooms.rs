#![recursion_limit = "256"]
//! Who can bring an agent into a room and talk to it; encrypted rooms.

mod support;

use std::time::Duration;

use matrix_sdk::RoomMemberships;
use matrix_sdk::ruma::events::room::message::RoomMessageEventContent;
use support::person::CollectStrategy;
use support::{Env, PATIENCE, Person, SynapseOptions, wait_until};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_allowed_invite_is_accepted_and_a_stranger_is_declined_and_ignored() {
    let env = Env::start(SynapseOptions::default(), "").await;
    let mallory_id = env.hs.register("mallory", "pw-mallory").await;
    let mallory = Person::login(&env.hs.url, &mallory_id, "pw-mallory").await;

    // Mallory is not allowed: her invite is declined.
    let hers = mallory.create_room(false).await;
    mallory.invite(&hers, &env.agent).await;
    mallory
        .wait_membership(&hers, &env.agent, RoomMemberships::LEAVE)
        .await;
    assert!(
        !mallory
            .membership_is(&hers, &env.agent, RoomMemberships::JOIN)
            .await
    );

    // Alice is allowed: the agent joins her room. A message from before it arrived is
    // history, not a prompt.
    let room = env.alice.create_room(false).await;
    env.alice.send(&room, "%say answer to history").await;
    env.alice.invite(&room, &env.agent).await;
    env.alice
        .wait_membership(&room, &env.agent, RoomMemberships::JOIN)
        .await;

    // Mallory joins Alice's room (Alice invites her) and writes: she is ignored.
    env.alice.invite(&room, &mallory_id).await;
    wait_until(PATIENCE, "mallory to see the invite", || {
        mallory.client.get_room(room.room_id())
    })
    .await;
    mallory
        .client
        .join_room_by_id(room.room_id())
        .await
        .unwrap();
    mallory
        .send(
            &mallory.room(room.room_id().as_str()),
            "%say answer to mallory",
        )
        .await;
    // Notices are never prompts either.
    room.send(RoomMessageEventContent::notice_plain(
        "%say answer to a notice",
    ))
    .await
    .unwrap();

    env.prompt_and_wait(&room, "%say answer to alice", "answer to alice")
        .await;
    env.settled(&room).await;
    let bodies: Vec<String> = env
        .alice
        .messages_from(&room, &env.agent)
        .into_iter()
        .map(|m| m.body)
        .filter(|body| !support::is_marker(body))
        .collect();
    assert_eq!(
        bodies,
        vec!["answer to alice"],
        "only Alice's new message was a prompt"
    );
    assert!(
        env.gw
            .log()
            .contains("ignoring a message from a user who is not allowed")
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_denied_user_is_refused_though_a_pattern_allows_everyone_on_the_server() {
    let hs = support::Synapse::start(SynapseOptions::default()).await;
    let agent = hs.register("demo", "demo-password").await;
    let bob_id = hs.register("bob", "pw-bob").await;
    let bot_id = hs.register("buildbot", "pw-bot").await;
    let _gw = support::GatewayProcess::start(
        &hs.url,
        &["@*:localhost"],
        &[support::AgentSpec::demo(&agent)],
        "access.deny = [\"@*bot:localhost\"]",
    );
    let bob = Person::login(&hs.url, &bob_id, "pw-bob").await;
    let bot = Person::login(&hs.url, &bot_id, "pw-bot").await;
    // The bot matches the pattern, and the deny list: its invite is declined.
    let bots = bot.create_room(false).await;
    bot.invite(&bots, &agent).await;
    bot.wait_membership(&bots, &agent, RoomMemberships::LEAVE)
        .await;
    // Bob matches the pattern only: the agent joins his room and answers him, not the bot.
    let room = bob.create_room(false).await;
    bob.invite(&room, &agent).await;
    bob.wait_membership(&room, &agent, RoomMemberships::JOIN)
        .await;
    bob.invite(&room, &bot_id).await;
    let in_room = bot.join(room.room_id().as_str()).await;
    bot.send(&in_room, "%say answer to the bot").await;
    bob.send(&room, "%say answer to bob").await;
    wait_until(PATIENCE, "the answer to Bob", || {
        bob.messages_from(&room, &agent)
            .into_iter()
            .find(|m| m.body == "answer to bob")
    })
    .await;
    // Anything answered to the bot would come before the answer to a later message of Bob's.
    let marker = support::marker();
    bob.send(&room, &format!("%say {marker}")).await;
    wait_until(PATIENCE, "the answer to Bob's marker", || {
        (bob.messages_from(&room, &agent).into_iter()).find(|m| m.body == marker)
    })
    .await;
    let bodies: Vec<String> = bob
        .messages_from(&room, &agent)
        .into_iter()
        .map(|m| m.body)
        .filter(|body| !support::is_marker(body))
        .collect();
    assert_eq!(bodies, vec!["answer to bob"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_encrypted_room_gets_encrypted_streamed_replies() {
    let env = Env::start(
        SynapseOptions::default(),
        "[streaming]\nedit_interval_ms = 300",
    )
    .await;
    let room = env.room_with_agent(true).await;
    let text = "Secret answer, streamed in pieces. ".repeat(20);
    // Slow enough (about 3 s) that the reply is edited several times even when the first
    // encrypted post waits for keys to be shared on a loaded machine.
    let prompt = format!("%stream 100 25\n{text}");
    env.alice.send(&room, &prompt).await;
    let reply = wait_until(PATIENCE, "the encrypted reply to be complete", || {
        env.alice
            .messages_from(&room, &env.agent)
            .into_iter()
            .find(|m| env.alice.current_text(&m.event_id).as_deref() == Some(text.as_str()))
    })
    .await;
    assert!(reply.encrypted, "the reply was sent encrypted");
    let edits = env.alice.edits_of(&reply.event_id);
    assert!(edits.len() >= 2, "at least two edits, saw {}", edits.len());
    assert!(
        edits.iter().all(|e| e.encrypted),
        "every edit was encrypted"
    );
    let notices: Vec<String> = env
        .alice
        .messages_from(&room, &env.agent)
        .into_iter()
        .filter(|m| m.notice)
        .map(|m| m.body)
        .collect();
    assert!(
        notices.is_empty(),
        "no decryption complaint or other notice: {notices:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_agent_process_serves_one_session_per_room() {
    let env = Env::start(SynapseOptions::default(), "").await;
    let first = env.room_with_agent(false).await;
    let second = env.room_with_agent(false).await;
    env.prompt_and_wait(&first, "%say in the first room", "in the first room")
        .await;
    env.prompt_and_wait(&second, "%say in the second room", "in the second room")
        .await;
    env.prompt_and_wait(&first, "%say first again", "first again")
        .await;
    let log = env.gw.log();
    assert_eq!(log.matches("agent initialised").count(), 1, "one process");
    let sessions: std::collections::HashSet<&str> = log
        .lines()
        .filter(|l| l.contains("session opened"))
        .filter_map(|l| l.split("session=").nth(1))
        .collect();
    assert_eq!(sessions.len(), 2, "one session per room: {sessions:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_joined_room_is_read_while_quiet_so_the_first_answer_waits_for_no_read() {
    let env = Env::start(SynapseOptions::default(), "").await;
    let room = env.room_with_agent(false).await;
    // What the agent asks the homeserver about this room, by the homeserver's access log:
    // each request's line, in order.
    let requests = || -> Vec<String> {
        let log = env.hs.log();
        let (raw, encoded) = (
            room.room_id().as_str(),
            room.room_id().as_str().replace('!', "%21"),
        );
        (log.lines())
            .filter(|l| l.contains("Processed request"))
            .filter(|l| l.contains(raw) || l.contains(&encoded))
            .map(str::to_owned)
            .collect()
    };
    let reads = |lines: &[String]| -> Vec<String> {
        let agent = format!("{{{}}}", env.agent);
        (lines.iter())
            .filter(|l| l.contains(&agent))
            .filter(|l| l.contains("/members") || l.contains("/state/m.room.encryption"))
            .cloned()
            .collect()
    };
    // Once it has joined, the agent reads the members and the encryption state at once.
    wait_until(PATIENCE, "the agent reading the room after joining", || {
        let read = reads(&requests());
        let has = |what: &str| read.iter().any(|l| l.contains(what));
        (has("/members") && has("/state/m.room.encryption")).then_some(())
    })
    .await;
    let before = requests().len();
    env.prompt_and_wait(&room, "%say first answer", "first answer")
        .await;
    let since_prompt = requests().split_off(before);
    assert!(
        since_prompt
            .iter()
            .any(|l| l.contains("/send/m.room.message")),
        "the log shows the prompt and the answer: {since_prompt:#?}"
    );
    assert_eq!(
        reads(&since_prompt),
        Vec::<String>::new(),
        "nothing is read between the prompt and its answer"
    );
}

/// Waits for the demo agent's answer in `room` that holds `%pwd`'s report; returns it.
async fn report(env: &Env, room: &matrix_sdk::room::Room) -> String {
    wait_until(PATIENCE, "the agent's report", || {
        env.texts_from(room, &env.agent)
            .into_iter()
            .find(|t| t.contains("home:"))
    })
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_room_in_the_workspace_each_room_works_in_a_folder_of_its_own() {
    let env = Env::start_with_agent_toml(
        SynapseOptions::default(),
        "",
        "workspace = \"workspace-demo/room-{room}\"",
    )
    .await;
    let first = env.room_with_agent(false).await;
    let second = env.room_with_agent(false).await;
    env.alice
        .send(
            &first,
            "%write notes.txt from room A\n%read notes.txt\n%pwd",
        )
        .await;
    let in_first = report(&env, &first).await;
    assert!(in_first.contains("read notes.txt: 11 bytes"), "{in_first}");
    env.alice.send(&second, "%read notes.txt\n%pwd").await;
    let in_second = report(&env, &second).await;
    assert!(in_second.contains("cannot read notes.txt"), "{in_second}");
    let folder = |report: &str| {
        let line = report.lines().find(|l| l.starts_with("folder: ")).unwrap();
        std::path::PathBuf::from(line.trim_start_matches("folder: "))
    };
    let (a, b) = (folder(&in_first), folder(&in_second));
    assert_ne!(a, b);
    let root = env.gw.workspace("demo");
    for f in [&a, &b] {
        assert_eq!(
            f.parent(),
            Some(root.as_path()),
            "{f:?} is a folder of {root:?}"
        );
        assert!(
            f.file_name()
                .unwrap()
                .to_str()
                .unwrap()
                .starts_with("room-")
        );
    }
    assert_eq!(
        std::fs::read_to_string(a.join("notes.txt")).unwrap(),
        "from room A"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn after_a_restart_the_agent_keeps_its_device_and_still_talks_in_encrypted_rooms() {
    let mut env = Env::start(SynapseOptions::default(), "").await;
    let room = env.room_with_agent(true).await;
    env.prompt_and_wait(&room, "%say before the restart", "before the restart")
        .await;
    let ids_before = env.alice.device_ids(&env.agent).await;
    env.gw.restart();
    let reply = env
        .prompt_and_wait(&room, "%say after the restart", "after the restart")
        .await;
    let replies = env.alice.messages_from(&room, &env.agent);
    assert_eq!(replies.len(), 2, "nothing was answered twice: {replies:?}");
    assert!(replies.iter().all(|m| m.encrypted));
    assert_eq!(replies[1].event_id, reply);
    assert!(env.gw.log().contains("Matrix session restored"));
    let ids_after = env.alice.device_ids(&env.agent).await;
    assert_eq!(ids_before, ids_after, "the same single device");
    assert_eq!(ids_after.len(), 1);
}

/// Sends `%say {text}` in `room` until the agent answers `text`: while Alice's client does
/// not know the agent's (signed) device yet, sending fails or the agent cannot read it.
async fn say_until_answered(env: &Env, room: &matrix_sdk::room::Room, text: &str) {
    let deadline = tokio::time::Instant::now() + PATIENCE;
    let before = env.alice.messages_from(room, &env.agent).len();
    loop {
        // Sending fails while the agent's identity is not known yet; that is part of waiting.
        let _ = room
            .send(RoomMessageEventContent::text_plain(format!("%say {text}")))
            .await;
        let answered = async {
            for _ in 0..50 {
                if env
                    .alice
                    .messages_from(room, &env.agent)
                    .iter()
                    .skip(before)
                    .any(|m| m.body == text)
                {
                    return true;
                }
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
            false
        };
        if answered.await {
            return;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "never answered {text:?}\n{}",
            env.gw.log()
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn clients_that_share_keys_only_with_signed_devices_can_talk_to_the_agent() {
    let env = Env::start_sharing_keys(
        SynapseOptions::default(),
        "",
        CollectStrategy::IdentityBasedStrategy,
    )
    .await;
    let room = env.room_with_agent(true).await;
    say_until_answered(&env, &room, "signed device reached").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_a_recovery_key_a_lost_store_keeps_the_agents_identity_and_its_signed_device() {
    // Where an operator keeps it: outside the state folder.
    let outside = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let key_file = outside.path().join("demo.recovery-key");
    let mut env = Env::start_with(
        SynapseOptions::default(),
        "",
        CollectStrategy::IdentityBasedStrategy,
        &[],
        &format!("matrix.recovery_key_file = {key_file:?}"),
    )
    .await;
    wait_until(PATIENCE, "the recovery key written", || {
        std::fs::read_to_string(&key_file)
            .ok()
            .filter(|k| k.trim().len() > 40)
    })
    .await;
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(&key_file).unwrap().permissions().mode();
    assert_eq!(mode & 0o777, 0o600, "only the gateway's user may read it");
    let room = env.room_with_agent(true).await;
    say_until_answered(&env, &room, "before the loss").await;
    let agent_id = matrix_sdk::ruma::UserId::parse(env.agent.as_str()).unwrap();
    let master_key = async || {
        let identity = env
            .alice
            .client
            .encryption()
            .request_user_identity(&agent_id)
            .await
            .unwrap()
            .expect("the agent has a cross-signing identity");
        identity.master_key().get_first_key().unwrap().to_base64()
    };
    let identity_before = master_key().await;
    let devices_before = env.alice.device_ids(&env.agent).await;

    // The agent's device has put the message's room key in the key backup.
    let session = env.gw.dir.path().join("state/matrix/demo/session.json");
    let session: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(session).unwrap()).unwrap();
    let token = session["access_token"].as_str().unwrap().to_owned();
    let http = reqwest::Client::new();
    let deadline = tokio::time::Instant::now() + PATIENCE;
    loop {
        let info = http
            .get(format!(
                "{}/_matrix/client/v3/room_keys/version",
                env.hs.url
            ))
            .bearer_auth(&token)
            .send()
            .await
            .unwrap()
            .text()
            .await
            .unwrap();
        let info: serde_json::Value = serde_json::from_str(&info).unwrap();
        if info["count"].as_u64().unwrap_or(0) >= 1 {
            break;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "no key backed up: {info}"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }

    // The store is lost: the agent logs in again as a new device.
    env.gw.stop();
    std::fs::remove_dir_all(env.gw.dir.path().join("state/matrix/demo")).unwrap();
    // Old messages are not lost with it: a device of the agent's user that Alice never shared
    // the key with (and that no running device could forward it to) decrypts a message from
    // before with the recovery key alone.
    let before = env
        .alice
        .messages_from(&room, &env.alice.user_id)
        .into_iter()
        .find(|m| m.body == "%say before the loss")
        .unwrap();
    let reader = Person::login_unsigned(&env.hs.url, &env.agent, "demo-password").await;
    let key = std::fs::read_to_string(&key_file).unwrap();
    (reader.client.encryption().recovery())
        .recover(key.trim())
        .await
        .unwrap();
    let event_id = matrix_sdk::ruma::EventId::parse(before.event_id.as_str()).unwrap();
    let deadline = tokio::time::Instant::now() + PATIENCE;
    loop {
        let backups = reader.client.encryption().backups();
        let _ = backups.download_room_keys_for_room(room.room_id()).await;
        let read = match reader.client.get_room(room.room_id()) {
            Some(r) => r.event(&event_id, None).await.ok(),
            None => None,
        };
        if read.is_some_and(|e| e.raw().json().get().contains("before the loss")) {
            break;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "never in the backup"
        );
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    let reader_device = reader.client.device_id().unwrap().to_string();
    drop(reader);
    env.gw.start_again();
    wait_until(PATIENCE, "the identity recovered", || {
        env.gw
            .log()
            .contains("recovered the agent's identity")
            .then_some(())
    })
    .await;
    // Alice's client shares room keys only with devices their owner signed: the new one is.
    say_until_answered(&env, &room, "after the loss").await;
    assert_eq!(master_key().await, identity_before, "the same identity");
    let new_device = env
        .alice
        .device_ids(&env.agent)
        .await
        .into_iter()
        .find(|d| !devices_before.contains(d) && *d != reader_device)
        .expect("a new device");
    let device = env
        .alice
        .client
        .encryption()
        .get_device(&agent_id, new_device.as_str().into())
        .await
        .unwrap()
        .unwrap();
    assert!(device.is_cross_signed_by_owner());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_message_the_agent_cannot_decrypt_is_reported_to_the_person() {
    // A client that shares keys only with manually trusted devices never gives the agent
    // the room key.
    let env = Env::start_sharing_keys(
        SynapseOptions::default(),
        "",
        CollectStrategy::OnlyTrustedDevices,
    )
    .await;
    let room = env.room_with_agent(true).await;
    env.alice.send(&room, "%say you cannot read this").await;
    let notice = env.notice_containing(&room, "cannot decrypt").await;
    assert!(
        notice
            .body
            .contains("cannot decrypt a message from @alice:localhost yet"),
        "{}",
        notice.body
    );
    assert!(
        !env.gw.log().contains("session opened"),
        "nothing was prompted"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_message_agents_cannot_read_gets_a_clear_answer() {
    use matrix_sdk::ruma::events::room::message::{LocationMessageEventContent, MessageType};
    let env = Env::start(SynapseOptions::default(), "").await;
    let room = env.room_with_agent(false).await;
    let location = LocationMessageEventContent::new("the office".into(), "geo:51.5,-0.12".into());
    room.send(RoomMessageEventContent::new(MessageType::Location(
        location,
    )))
    .await
    .unwrap();
    let notice = env.notice_containing(&room, "I cannot read").await;
    assert!(notice.body.contains("location messages"), "{}", notice.body);
    // Text still works afterwards.
    env.prompt_and_wait(&room, "%say text is fine", "text is fine")
        .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_cross_signing_required_a_message_from_an_unsigned_device_is_refused_and_said() {
    let env = Env::start(
        SynapseOptions::default(),
        "matrix.require_cross_signed = true",
    )
    .await;
    let room = env.room_with_agent(true).await;
    // Alice's first session is cross-signed: she is answered.
    env.prompt_and_wait(&room, "%say from a signed device", "from a signed device")
        .await;
    // A second session of hers that she never verified: not acted on, and told why.
    let alice_id = env.alice.user_id.clone();
    let unsigned = Person::login_unsigned(&env.hs.url, &alice_id, "alice-password").await;
    let hers = wait_until(PATIENCE, "the room in the second session", || {
        unsigned.client.get_room(room.room_id())
    })
    .await;
    unsigned.send(&hers, "%say from an unsigned device").await;
    let notice = env
        .notice_from(&room, &env.agent, "I did not act on this message")
        .await;
    assert!(notice.contains(&alice_id), "{notice}");
    assert!(notice.contains("cross-signed devices"), "{notice}");
    assert!(
        !env.texts_when_settled(&room)
            .await
            .iter()
            .any(|t| t.contains("from an unsigned device")),
        "the unproven message was not a prompt"
    );
    assert!(
        env.gw
            .log()
            .contains("refusing an event whose sender is not proven")
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_agents_matrix_store_opens_only_with_its_passphrase() {
    let secrets = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let passphrase = secrets.path().join("store.passphrase");
    std::fs::write(&passphrase, "the first passphrase\n").unwrap();
    let mut env = Env::start(
        SynapseOptions::default(),
        &format!("matrix.store_passphrase_file = {passphrase:?}"),
    )
    .await;
    let room = env.room_with_agent(true).await;
    env.prompt_and_wait(&room, "%say keys at rest", "keys at rest")
        .await;
    env.gw.stop();
    // Another passphrase cannot open the store the first one encrypted: the agent's Matrix
    // user says so instead of starting over as a new device.
    std::fs::write(&passphrase, "another passphrase").unwrap();
    env.gw.start_again();
    wait_until(
        PATIENCE,
        "the log to say why the store did not open",
        || {
            env.gw
                .log()
                .contains("cannot open the store with the configured passphrase")
                .then_some(())
        },
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_message_whose_room_key_arrives_late_is_answered_once_it_does() {
    let hs = support::Synapse::start(SynapseOptions::default()).await;
    let alice_id = hs.register("alice", "alice-password").await;
    let agent = hs.register("demo", "demo-password").await;
    let gw = support::GatewayProcess::start(
        &hs.url,
        &[alice_id.as_str()],
        &[support::AgentSpec::demo(&agent)],
        "",
    );
    // Alice's client reaches the homeserver through a proxy that can hold her room keys back.
    let proxy = support::proxy::KeyProxy::start(&hs.url).await;
    let alice = Person::login(&proxy.url, &alice_id, "alice-password").await;
    let env = Env {
        hs,
        gw,
        alice,
        agents: vec![agent.clone()],
        agent,
    };
    let room = env.room_with_agent(true).await;
    proxy.hold();
    env.alice
        .send(&room, "%say answered once the key came")
        .await;
    assert!(proxy.held() > 0, "the room key was held back");
    // The key does not come: after a while the person is told, not asked to give up.
    let notice = env
        .notice_from(&room, &env.agent, "cannot decrypt a message")
        .await;
    assert!(notice.contains("as soon as the key arrives"), "{notice}");
    assert!(
        env.texts_from(&room, &env.agent)
            .iter()
            .all(|t| !t.contains("answered once the key came"))
    );
    // The key arrives: the message is answered.
    proxy.release().await;
    env.message_from(&room, &env.agent, "answered once the key came")
        .await;
    assert!(
        env.gw
            .log()
            .contains("a message decrypted once its room key arrived")
    );
}

/// Runs `git -C dir args…` for a test; its stdout.
fn git(dir: &std::path::Path, args: &[&str]) -> String {
    let out = std::process::Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(["-c", "user.name=T", "-c", "user.email=t@example.org"])
        .args(args)
        .output()
        .unwrap();
    assert!(out.status.success(), "git {args:?}: {out:?}");
    String::from_utf8(out.stdout).unwrap().trim().to_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn in_worktree_mode_each_room_works_on_a_branch_of_its_own_and_removing_keeps_it() {
    // Outside /tmp, as a real repository would be.
    let outside = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let repo = outside.path().join("repo");
    std::fs::create_dir(&repo).unwrap();
    git(&repo, &["init", "-q", "-b", "main"]);
    std::fs::write(repo.join("README"), "hello\n").unwrap();
    git(&repo, &["add", "README"]);
    git(&repo, &["commit", "-q", "-m", "first"]);
    let env = Env::start_with_agent_toml(
        SynapseOptions::default(),
        "",
        &format!(
            "workspace = \"workspace-demo/{{room}}\"\n[agents.worktree]\nrepository = {repo:?}"
        ),
    )
    .await;
    let first = env.room_with_agent(false).await;
    let second = env.room_with_agent(false).await;
    // The agent commits in a worktree: the repository's git folder is writable for it.
    let probe = repo.join(".git/sidekicks-probe");
    env.alice
        .send(
            &first,
            &format!(
                "%write notes.txt from room A\n%read README\n%write {} x\n%pwd",
                probe.display()
            ),
        )
        .await;
    let in_first = report(&env, &first).await;
    assert!(in_first.contains("read README: 6 bytes"), "{in_first}");
    assert!(probe.exists(), "{in_first}");
    env.alice.send(&second, "%read notes.txt\n%pwd").await;
    let in_second = report(&env, &second).await;
    assert!(in_second.contains("cannot read notes.txt"), "{in_second}");
    let folder = |report: &str| {
        let line = report.lines().find(|l| l.starts_with("folder: ")).unwrap();
        std::path::PathBuf::from(line.trim_start_matches("folder: "))
    };
    let (a, b) = (folder(&in_first), folder(&in_second));
    let (branch_a, branch_b) = (
        git(&a, &["rev-parse", "--abbrev-ref", "HEAD"]),
        git(&b, &["rev-parse", "--abbrev-ref", "HEAD"]),
    );
    assert!(branch_a.starts_with("sidekicks/demo/"), "{branch_a}");
    assert_ne!(branch_a, branch_b);

    env.alice.send(&first, "!worktree").await;
    let status = env.notice_containing(&first, "on branch").await.body;
    assert!(status.contains(&format!("`{branch_a}`")), "{status}");
    assert!(
        status.contains("1 file with uncommitted changes"),
        "{status}"
    );

    // Uncommitted work is never thrown away.
    env.alice.send(&first, "!worktree remove").await;
    let refused = env
        .notice_containing(&first, "worktree is unchanged")
        .await
        .body;
    assert!(refused.contains("untracked"), "{refused}");
    assert!(a.join("notes.txt").exists());

    git(&a, &["add", "notes.txt"]);
    git(&a, &["commit", "-q", "-m", "notes"]);
    env.alice.send(&first, "!worktree remove").await;
    env.notice_containing(&first, "The worktree is removed")
        .await;
    assert!(!a.exists(), "the folder is gone");
    git(&repo, &["rev-parse", "--verify", &branch_a]);

    // The next message checks the branch out again, the commit in it.
    env.alice.send(&first, "%read notes.txt\n%pwd").await;
    wait_until(PATIENCE, "the note read again", || {
        env.texts_from(&first, &env.agent)
            .into_iter()
            .find(|t| t.contains("read notes.txt: 11 bytes") && t.contains("home:"))
    })
    .await;
}
