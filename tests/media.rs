#![recursion_limit = "256"]
//! Pictures, files and audio, in and out: what people send reaches the agent the way it can
//! take it; what the agent shows comes back as pictures and files.

mod support;

use support::person::Seen;
use support::speech_server::{Hears, SpeechServer};
use support::{Env, PATIENCE, Person, SynapseOptions, wait_until};

/// The workspace folder where people's files are saved.
const INBOX: &str = "sidekicks-inbox";

/// Waits for a picture or file the agent posted in `room` named `name`.
async fn agent_file(env: &Env, room: &matrix_sdk::room::Room, name: &str) -> Seen {
    wait_until(PATIENCE, &format!("the agent's file {name}"), || {
        env.alice
            .messages_from(room, &env.agent)
            .into_iter()
            .find(|m| m.media.as_ref().is_some_and(|(_, n, _)| n == name))
    })
    .await
}

/// Some bytes that are a picture's as far as anyone checks (a PNG header and filler).
fn picture(len: usize) -> Vec<u8> {
    let mut data = b"\x89PNG\r\n\x1a\n".to_vec();
    data.resize(len, 7);
    data
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pictures_reach_an_agent_that_takes_images_as_images_in_plain_and_encrypted_rooms() {
    let env = Env::start_with_demo_args(
        SynapseOptions::default(),
        "",
        &["--prompt-capabilities", "image"],
    )
    .await;
    for encrypted in [false, true] {
        let room = env.room_with_agent(encrypted).await;
        // A picture with a caption is a prompt by itself.
        env.alice
            .send_file(
                &room,
                "shot.png",
                "image/png",
                picture(300),
                Some("%blocks"),
            )
            .await;
        let said = env
            .reply_where(&room, "the blocks of the captioned picture", |t| {
                t.contains("block: image")
            })
            .await;
        assert!(said.contains("block: image image/png 300 bytes"), "{said}");
        assert!(said.contains("block: text"), "{said}");
    }
    // Saved in the workspace's inbox too, once per picture.
    let inbox = env.gw.workspace("demo").join(INBOX);
    assert_eq!(std::fs::read(inbox.join("shot.png")).unwrap(), picture(300));
    assert_eq!(
        std::fs::read(inbox.join("shot (2).png")).unwrap(),
        picture(300)
    );

    // A picture without a question waits for its sender's next message; both arrive
    // together.
    let room = env.room_with_agent(true).await;
    let sent = env
        .alice
        .send_file(&room, "error.png", "image/png", picture(512), None)
        .await;
    let waiting = env
        .notice_containing(&room, "What should I do with it?")
        .await;
    assert_eq!(waiting.in_reply_to.as_deref(), Some(sent.as_str()));
    env.alice.send(&room, "%blocks").await;
    let said = env
        .reply_where(&room, "the picture with its question", |t| {
            t.contains("block: image")
        })
        .await;
    assert!(said.contains("block: image image/png 512 bytes"), "{said}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn files_are_saved_in_the_inbox_linked_or_embedded_and_never_outside_it() {
    // Takes embedded context but no images; fetches at most 1 MB.
    let env = Env::start_with_demo_args(
        SynapseOptions::default(),
        "media = { max_file_mb = 1 }",
        &["--prompt-capabilities", "embedded"],
    )
    .await;
    let room = env.room_with_agent(false).await;
    let inbox = env.gw.workspace("demo").join(INBOX);
    // A picture for an agent without image support: a saved file and a link to it.
    env.alice
        .send_file(
            &room,
            "shot.png",
            "image/png",
            picture(300),
            Some("%blocks"),
        )
        .await;
    let said = env
        .reply_where(&room, "the picture as a link", |t| {
            t.contains("block: link")
        })
        .await;
    let link = format!(
        "block: link shot.png file://{}/shot.png image/png 300 bytes",
        inbox.display()
    );
    assert!(said.contains(&link), "{said}");

    // A small text file goes embedded.
    env.alice
        .send_file(
            &room,
            "notes.txt",
            "text/plain",
            b"hello notes\nline two".to_vec(),
            Some("%blocks"),
        )
        .await;
    let said = env
        .reply_where(&room, "the text file embedded", |t| {
            t.contains("block: embedded")
        })
        .await;
    assert!(said.contains("text/plain 20 chars: hello notes"), "{said}");

    // A file named to climb out of the inbox is saved inside it under a safe name.
    env.alice
        .send_file(
            &room,
            "../../etc/passwd",
            "text/plain",
            b"not yours".to_vec(),
            Some("%say saved?"),
        )
        .await;
    env.reply_where(&room, "the answer to the strangely named file", |t| {
        t == "saved?"
    })
    .await;
    assert_eq!(std::fs::read(inbox.join("passwd")).unwrap(), b"not yours");
    let workspace = env.gw.workspace("demo");
    assert!(!workspace.join("passwd").exists());
    assert!(!workspace.parent().unwrap().join("etc").exists());

    // A file over the limit gets a notice and is never saved; its caption still runs.
    let big = vec![b'x'; 1_500_000];
    let sent = env
        .alice
        .send_file(
            &room,
            "huge.log",
            "text/plain",
            big,
            Some("%say without it"),
        )
        .await;
    let notice = env.notice_containing(&room, "more than the 1.0 MB").await;
    assert_eq!(notice.in_reply_to.as_deref(), Some(sent.as_str()));
    env.reply_where(&room, "the caption's answer", |t| t == "without it")
        .await;
    assert!(!inbox.join("huge.log").exists());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_agents_pictures_and_files_come_back_as_pictures_and_files() {
    let env = Env::start(SynapseOptions::default(), "").await;
    let room = env.room_with_agent(true).await;
    // A picture in the answer is an `m.image`, encrypted in an encrypted room.
    env.alice.send(&room, "%say here it is\n%image").await;
    let image = agent_file(&env, &room, "image.png").await;
    let (kind, _, source) = image.media.clone().unwrap();
    assert_eq!(kind, "m.image");
    assert!(image.encrypted);
    assert!(matches!(
        source,
        matrix_sdk::ruma::events::room::MediaSource::Encrypted(_)
    ));
    let bytes = env.alice.download(&source).await;
    assert!(bytes.starts_with(b"\x89PNG"), "{bytes:?}");
    env.reply_where(&room, "the text before the picture", |t| t == "here it is")
        .await;

    // A link to a file of the workspace is the file.
    env.alice
        .send(&room, "%write report.txt all good\n%link report.txt")
        .await;
    let file = agent_file(&env, &room, "report.txt").await;
    let (kind, _, source) = file.media.clone().unwrap();
    assert_eq!(kind, "m.file");
    assert_eq!(env.alice.download(&source).await, b"all good");

    // `!file` posts a file of the workspace, and nothing outside it.
    std::fs::write(env.gw.workspace("demo").join("notes.md"), "# notes").unwrap();
    env.alice.send(&room, "!file notes.md").await;
    let file = agent_file(&env, &room, "notes.md").await;
    let (_, _, source) = file.media.clone().unwrap();
    assert_eq!(env.alice.download(&source).await, b"# notes");
    env.alice.send(&room, "!file ../gateway.toml").await;
    env.notice_containing(&room, "outside the workspace").await;

    // In a thread, the picture goes into the thread.
    let root = env.alice.send(&room, "%say topic").await;
    env.alice.send_in_thread(&room, &root, "%image").await;
    let in_thread = wait_until(PATIENCE, "the picture in the thread", || {
        env.alice
            .messages_from(&room, &env.agent)
            .into_iter()
            .find(|m| m.media.is_some() && m.thread.is_some())
    })
    .await;
    assert_eq!(in_thread.thread.as_deref(), Some(root.as_str()));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn files_from_people_who_may_not_prompt_are_never_fetched() {
    let env = Env::start(SynapseOptions::default(), "").await;
    let room = env.room_with_agent(false).await;
    let bob_id = env.hs.register("bob", "pw-bob").await;
    let bob = Person::login(&env.hs.url, &bob_id, "pw-bob").await;
    env.alice.invite(&room, &bob_id).await;
    let bobs_room = bob.join(room.room_id().as_str()).await;
    bob.send_file(
        &bobs_room,
        "bob.png",
        "image/png",
        picture(64),
        Some("%say bob's"),
    )
    .await;
    // Alice's picture after Bob's: once it is answered, Bob's had its chance.
    env.alice
        .send_file(
            &room,
            "alice.png",
            "image/png",
            picture(64),
            Some("%say alice's"),
        )
        .await;
    env.reply_where(&room, "the answer to Alice's picture", |t| t == "alice's")
        .await;
    let inbox = env.gw.workspace("demo").join(INBOX);
    assert!(inbox.join("alice.png").exists());
    assert!(!inbox.join("bob.png").exists(), "Bob's picture was fetched");
    let log = env.gw.log();
    assert_eq!(
        log.matches("saved a file for the agent").count(),
        1,
        "{log}"
    );
    assert!(
        env.texts_from(&room, &env.agent)
            .iter()
            .all(|t| t != "bob's"),
        "Bob's caption was answered"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tool_card_that_cuts_its_output_has_the_whole_output_attached() {
    let env = Env::start(SynapseOptions::default(), "").await;
    let room = env.room_with_agent(false).await;
    env.alice.send(&room, "%tool-long 120\n%say done").await;
    let file = agent_file(&env, &room, "long-output-output.txt").await;
    let (kind, _, source) = file.media.clone().unwrap();
    assert_eq!(kind, "m.file");
    let text = String::from_utf8(env.alice.download(&source).await).unwrap();
    assert_eq!(text.lines().count(), 120);
    assert!(
        text.starts_with("line 1\n") && text.ends_with("line 120\n"),
        "{text}"
    );
    let card = env
        .alice
        .messages_from(&room, &env.agent)
        .into_iter()
        .find(|m| m.replaces.is_none() && m.body.contains("long output"))
        .expect("the card");
    assert_eq!(file.in_reply_to.as_deref(), Some(card.event_id.as_str()));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_picture_to_nobody_in_particular_goes_with_its_senders_next_question_to_an_agent() {
    let env =
        Env::start_with_agents(SynapseOptions::default(), "", &[("one", &[]), ("two", &[])]).await;
    let room = env.room_with_agents().await;
    // Pasted without a word, in a room of two agents: it may be for people; nobody says
    // anything about it.
    env.alice
        .send_file(&room, "shot.png", "image/png", picture(128), None)
        .await;
    env.alice.send(&room, "two: %blocks").await;
    let answer = wait_until(PATIENCE, "two's answer", || {
        env.alice
            .messages_from(&room, &env.agents[1])
            .into_iter()
            .filter(|m| m.replaces.is_none())
            .find_map(|m| {
                let text = env.alice.current_text(&m.event_id)?;
                text.contains("block:").then_some(text)
            })
    })
    .await;
    assert!(answer.contains("block: link shot.png"), "{answer}");
    for agent in &env.agents {
        let notices: Vec<String> = env
            .alice
            .messages_from(&room, agent)
            .into_iter()
            .filter(|m| m.notice)
            .map(|m| m.body)
            .collect();
        assert!(notices.is_empty(), "{agent}: {notices:?}");
    }
    assert!(
        env.texts_from(&room, &env.agents[0]).is_empty(),
        "the other agent said nothing"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_voice_note_is_heard_its_words_are_the_prompt_and_a_failing_service_leaves_the_file() {
    let speech = SpeechServer::start(Hears::Text("%say I heard you".into())).await;
    let keys = tempfile::tempdir().unwrap();
    let key_file = keys.path().join("speech.key");
    std::fs::write(&key_file, "sk-voice-canary-7q\n").unwrap();
    let voice = format!(
        "voice = {{ transcribe_url = \"{}\", key_file = \"{}\", language = \"en\" }}",
        speech.url,
        key_file.display()
    );
    let env = Env::start(SynapseOptions::default(), &voice).await;
    for encrypted in [false, true] {
        let room = env.room_with_agent(encrypted).await;
        let sent = env
            .alice
            .send_voice(&room, b"OggS spoken words".to_vec())
            .await;
        // The speaker sees what was understood, in reply to the note; the words are the
        // prompt (the demo agent runs the `%say` it was told).
        let heard = env.notice_containing(&room, "heard:").await;
        assert_eq!(heard.body, "🎙️ heard: %say I heard you");
        assert_eq!(heard.in_reply_to.as_deref(), Some(sent.as_str()));
        env.reply_where(&room, "the answer to the words", |t| t == "I heard you")
            .await;
    }
    let received = speech.received();
    assert_eq!(received.len(), 2, "each note heard once");
    for request in &received {
        assert!(
            request.carries(b"OggS spoken words"),
            "the note's bytes are sent"
        );
        assert!(request.carries(b"whisper-1") && request.carries(b"name=\"language\""));
        assert_eq!(
            request.authorization.as_deref(),
            Some("Bearer sk-voice-canary-7q")
        );
    }

    // A service that fails: the room is told why, and the note goes to the agent as the
    // file it is (saved in the inbox; the demo agent answers a file with its usual poll).
    speech.answer(Hears::Fails("model not loaded".into()));
    let room = env.room_with_agent(false).await;
    let sent = env.alice.send_voice(&room, b"OggS unheard".to_vec()).await;
    let notice = env.notice_containing(&room, "could not hear").await;
    assert!(
        notice.body.contains("refused it (500): model not loaded"),
        "{}",
        notice.body
    );
    assert_eq!(notice.in_reply_to.as_deref(), Some(sent.as_str()));
    env.reply_where(&room, "the agent's turn on the file", |t| {
        t.contains("Before I answer")
    })
    .await;
    let inbox = env.gw.workspace("demo").join(INBOX);
    let saved: Vec<Vec<u8>> = (std::fs::read_dir(&inbox).unwrap())
        .filter_map(|e| std::fs::read(e.unwrap().path()).ok())
        .collect();
    assert!(
        saved.contains(&b"OggS unheard".to_vec()),
        "saved for the agent"
    );
    assert!(
        !env.gw.log().contains("sk-voice-canary"),
        "the service's key is never logged"
    );
}
