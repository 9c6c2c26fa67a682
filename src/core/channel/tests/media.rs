//! Files that come with prompts: fetched at the prompt's turn, saved in the inbox, given to
//! the agent the way it takes them; a picture without a question waits for one.

use super::*;
use crate::core::hearing::{self, HearingError, Transcriber, fake::Ears};
use crate::core::media::INBOX;
use crate::model::media::{IncomingMedia, MediaKind, PromptBlock, PromptSupport};

fn picture(id: &str, source: &str, size: Option<u64>) -> IncomingMedia {
    IncomingMedia {
        kind: MediaKind::Image,
        name: "shot.png".into(),
        mimetype: Some("image/png".into()),
        size,
        source: source.into(),
        event_id: id.into(),
        voice: false,
    }
}

fn with_media(id: &str, body: &str, media: IncomingMedia) -> IncomingMessage {
    IncomingMessage {
        media: vec![media],
        ..message(id, body)
    }
}

/// A channel whose workspace is `dir`, with `adjust` applied.
async fn channel_in(
    agent: Arc<FakeAgent>,
    chat: Arc<FakeChat>,
    dir: &std::path::Path,
    adjust: impl FnOnce(&mut AgentContext),
) -> mpsc::Sender<ChannelInput> {
    let dir = dir.to_owned();
    let (tx, _) = channel_adjusted(agent, chat, move |ctx| {
        ctx.workspace = crate::workspace::Workspace::new(dir);
        adjust(ctx);
    })
    .await;
    tx
}

fn ok() -> Script {
    Script::Chunks(vec!["ok".into()], Duration::ZERO)
}

#[tokio::test]
async fn a_picture_with_a_caption_reaches_an_agent_that_takes_images_as_an_image() {
    let dir = tempfile::tempdir().unwrap();
    let agent = FakeAgent::new(ok()).with_prompt_support(PromptSupport {
        image: true,
        ..Default::default()
    });
    let chat = FakeChat::new();
    chat.add_media("mxc-1", b"PNGDATA");
    let tx = channel_in(agent.clone(), chat.clone(), dir.path(), |_| {}).await;
    let m = with_media("$1", "what is wrong here?", picture("$1", "mxc-1", Some(7)));
    tx.try_send(ChannelInput::Prompt(m)).unwrap();
    settle_until(|| !agent.prompt_blocks().is_empty()).await;
    let blocks = &agent.prompt_blocks()[0];
    let PromptBlock::Text(text) = &blocks[0] else {
        panic!("{blocks:?}")
    };
    assert!(text.starts_with("what is wrong here?\n"), "{text}");
    assert!(
        text.contains(&format!("saved as {INBOX}/shot.png")),
        "{text}"
    );
    assert_eq!(
        blocks[1],
        PromptBlock::Image {
            mime: "image/png".into(),
            data: b"PNGDATA".to_vec()
        }
    );
    let saved = dir.path().join(INBOX).join("shot.png");
    assert_eq!(std::fs::read(saved).unwrap(), b"PNGDATA");
}

#[tokio::test]
async fn a_picture_without_a_question_waits_for_its_senders_next_message() {
    let dir = tempfile::tempdir().unwrap();
    let agent = FakeAgent::new(ok());
    let chat = FakeChat::new();
    chat.add_media("mxc-1", b"PNG");
    let tx = channel_in(agent.clone(), chat.clone(), dir.path(), |_| {}).await;
    tx.try_send(ChannelInput::Prompt(with_media(
        "$pic",
        "",
        picture("$pic", "mxc-1", None),
    )))
    .unwrap();
    settle_until(|| !chat.shown("!room").is_empty()).await;
    let shown = chat.messages("!room");
    assert!(
        shown[0].body.contains("What should I do with it?"),
        "{shown:?}"
    );
    assert_eq!(
        shown[0].reply_to.as_ref().map(|id| id.as_str()),
        Some("$pic")
    );
    assert!(agent.prompts().is_empty(), "not a prompt by itself");
    assert!(chat.downloads().is_empty(), "not fetched before its turn");
    // Someone else's message does not take it.
    let bob = IncomingMessage {
        sender: "@bob:x".into(),
        ..message("$bob", "hello")
    };
    tx.try_send(ChannelInput::Prompt(bob)).unwrap();
    settle_until(|| agent.prompts().len() == 1).await;
    assert!(
        !agent.prompts()[0].1.contains("Attached"),
        "{:?}",
        agent.prompts()
    );
    // Its sender's next message does: without an image-taking agent, as a link.
    tx.try_send(ChannelInput::Prompt(message("$q", "is this right?")))
        .unwrap();
    settle_until(|| agent.prompts().len() == 2).await;
    let blocks = &agent.prompt_blocks()[1];
    assert!(
        matches!(&blocks[0], PromptBlock::Text(t) if t.starts_with("is this right?\n[Attached picture")),
        "{blocks:?}"
    );
    assert!(
        matches!(&blocks[1], PromptBlock::Link { uri, .. } if uri.ends_with("/shot.png")),
        "{blocks:?}"
    );
    assert_eq!(chat.downloads(), ["mxc-1"]);
}

#[tokio::test]
async fn set_not_to_wait_a_picture_is_a_prompt_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let agent = FakeAgent::new(ok());
    let chat = FakeChat::new();
    chat.add_media("mxc-1", b"PNG");
    let tx = channel_in(agent.clone(), chat.clone(), dir.path(), |ctx| {
        ctx.media.wait_for_question = false
    })
    .await;
    tx.try_send(ChannelInput::Prompt(with_media(
        "$pic",
        "",
        picture("$pic", "mxc-1", None),
    )))
    .unwrap();
    settle_until(|| !agent.prompts().is_empty()).await;
    assert!(agent.prompts()[0].1.starts_with("[Attached picture"));
}

#[tokio::test]
async fn a_file_too_large_is_never_fetched_and_the_room_is_told() {
    let dir = tempfile::tempdir().unwrap();
    let agent = FakeAgent::new(ok());
    let chat = FakeChat::new();
    chat.add_media("mxc-big", &[0u8; 2048]);
    chat.add_media("mxc-lies", &[0u8; 2048]);
    let tx = channel_in(agent.clone(), chat.clone(), dir.path(), |ctx| {
        ctx.media.max_bytes = 1024
    })
    .await;
    // Said to be too large: not even fetched.
    let big = with_media("$big", "look", picture("$big", "mxc-big", Some(4096)));
    tx.try_send(ChannelInput::Prompt(big)).unwrap();
    settle_until(|| !agent.prompts().is_empty()).await;
    assert!(chat.downloads().is_empty());
    let notice = chat
        .messages("!room")
        .into_iter()
        .find(|m| m.body.contains("more than"));
    let notice = notice.expect("a notice");
    assert_eq!(notice.reply_to.as_ref().map(|id| id.as_str()), Some("$big"));
    // The text still runs, without the file.
    assert_eq!(agent.prompts()[0].1, "look");
    // Said to be small but larger once fetched: not saved, not given.
    let lies = with_media("$lies", "", picture("$lies", "mxc-lies", Some(10)));
    let lies = IncomingMessage {
        body: String::new(),
        ..lies
    };
    tx.try_send(ChannelInput::Prompt(lies)).unwrap();
    tx.try_send(ChannelInput::Prompt(message("$q", "and this?")))
        .unwrap();
    settle_until(|| agent.prompts().len() == 2).await;
    assert_eq!(agent.prompts()[1].1, "and this?");
    assert!(!dir.path().join(INBOX).join("shot.png").exists());
}

#[tokio::test]
async fn a_file_that_cannot_be_fetched_gets_a_notice_and_no_empty_prompt() {
    let dir = tempfile::tempdir().unwrap();
    let agent = FakeAgent::new(ok());
    let chat = FakeChat::new();
    let tx = channel_in(agent.clone(), chat.clone(), dir.path(), |ctx| {
        ctx.media.wait_for_question = false
    })
    .await;
    let gone = with_media("$gone", "", picture("$gone", "mxc-missing", None));
    tx.try_send(ChannelInput::Prompt(gone)).unwrap();
    settle_until(|| {
        chat.shown("!room")
            .iter()
            .any(|b| b.contains("could not fetch"))
    })
    .await;
    let shown = chat.shown("!room");
    assert!(
        shown
            .iter()
            .any(|b| b.contains("could not fetch \"shot.png\"")),
        "{shown:?}"
    );
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert!(agent.prompts().is_empty(), "nothing to ask");
}

fn voice_note(id: &str, source: &str) -> IncomingMedia {
    IncomingMedia {
        kind: MediaKind::Audio,
        name: "Voice message.ogg".into(),
        mimetype: Some("audio/ogg".into()),
        size: Some(5),
        source: source.into(),
        event_id: id.into(),
        voice: true,
    }
}

/// Ears that answer `answers` in order.
fn ears(answers: Vec<Result<String, HearingError>>) -> Arc<Ears> {
    Arc::new(Ears {
        answers: std::sync::Mutex::new(answers),
        ..Default::default()
    })
}

#[tokio::test]
async fn a_voice_note_is_heard_its_transcript_is_the_prompt_and_the_speaker_sees_it() {
    let dir = tempfile::tempdir().unwrap();
    let agent = FakeAgent::new(ok());
    let chat = FakeChat::new();
    chat.add_media("mxc-v", b"OGGS!");
    let heard = ears(vec![Ok("please run the tests".into())]);
    let service: Arc<dyn Transcriber> = heard.clone();
    let tx = channel_in(agent.clone(), chat.clone(), dir.path(), |ctx| {
        ctx.hearing = Some(service)
    })
    .await;
    // No caption: a voice note is its own question, it does not wait for one.
    let note = with_media("$v", "", voice_note("$v", "mxc-v"));
    tx.try_send(ChannelInput::Prompt(note)).unwrap();
    settle_until(|| !agent.prompt_blocks().is_empty()).await;
    let blocks = &agent.prompt_blocks()[0];
    assert_eq!(
        blocks,
        &vec![PromptBlock::Text(format!(
            "{}\nplease run the tests",
            hearing::VOICE_LINE
        ))],
        "an agent that takes no audio gets the words only"
    );
    assert_eq!(*heard.heard.lock().unwrap(), ["Voice message.ogg"]);
    let shown = chat.messages("!room");
    let reply = shown.iter().find(|m| m.body.contains("heard:")).unwrap();
    assert_eq!(reply.body, "🎙️ heard: please run the tests");
    assert_eq!(reply.reply_to.as_ref().map(|id| id.as_str()), Some("$v"));
    assert!(!shown.iter().any(|m| m.body.contains("What should I do")));
}

#[tokio::test]
async fn an_agent_that_takes_audio_gets_the_note_beside_its_transcript() {
    let dir = tempfile::tempdir().unwrap();
    let agent = FakeAgent::new(ok()).with_prompt_support(PromptSupport {
        audio: true,
        ..Default::default()
    });
    let chat = FakeChat::new();
    chat.add_media("mxc-v", b"OGGS!");
    let service: Arc<dyn Transcriber> = ears(vec![Ok("hello".into())]);
    let tx = channel_in(agent.clone(), chat.clone(), dir.path(), |ctx| {
        ctx.hearing = Some(service)
    })
    .await;
    let note = with_media("$v", "and this file", voice_note("$v", "mxc-v"));
    tx.try_send(ChannelInput::Prompt(note)).unwrap();
    settle_until(|| !agent.prompt_blocks().is_empty()).await;
    let blocks = &agent.prompt_blocks()[0];
    let PromptBlock::Text(text) = &blocks[0] else {
        panic!("{blocks:?}")
    };
    let words = format!(
        "{}\nhello\nand this file\n[Attached audio",
        hearing::VOICE_LINE
    );
    assert!(text.starts_with(&words), "{text}");
    assert_eq!(
        blocks[1],
        PromptBlock::Audio {
            mime: "audio/ogg".into(),
            data: b"OGGS!".to_vec()
        }
    );
}

#[tokio::test]
async fn a_note_that_cannot_be_heard_goes_as_a_file_and_the_room_is_told_why() {
    let dir = tempfile::tempdir().unwrap();
    let agent = FakeAgent::new(ok());
    let chat = FakeChat::new();
    chat.add_media("mxc-v", b"OGGS!");
    let service: Arc<dyn Transcriber> = ears(vec![Err(HearingError::TimedOut(60))]);
    let tx = channel_in(agent.clone(), chat.clone(), dir.path(), |ctx| {
        ctx.hearing = Some(service)
    })
    .await;
    tx.try_send(ChannelInput::Prompt(with_media(
        "$v",
        "",
        voice_note("$v", "mxc-v"),
    )))
    .unwrap();
    settle_until(|| !agent.prompt_blocks().is_empty()).await;
    let blocks = &agent.prompt_blocks()[0];
    assert!(
        matches!(&blocks[1], PromptBlock::Link { uri, .. } if uri.ends_with("/Voice%20message.ogg")),
        "{blocks:?}"
    );
    let shown = chat.messages("!room");
    let notice = shown
        .iter()
        .find(|m| m.body.contains("could not hear"))
        .unwrap();
    assert!(
        notice.body.contains("did not answer within 60 s"),
        "{}",
        notice.body
    );
    assert_eq!(notice.reply_to.as_ref().map(|id| id.as_str()), Some("$v"));
}

#[tokio::test]
async fn without_a_service_a_voice_note_is_a_file_that_waits_for_its_question() {
    let dir = tempfile::tempdir().unwrap();
    let agent = FakeAgent::new(ok());
    let chat = FakeChat::new();
    let tx = channel_in(agent.clone(), chat.clone(), dir.path(), |_| {}).await;
    tx.try_send(ChannelInput::Prompt(with_media(
        "$v",
        "",
        voice_note("$v", "mxc-v"),
    )))
    .unwrap();
    settle_until(|| !chat.shown("!room").is_empty()).await;
    assert!(
        chat.messages("!room")[0]
            .body
            .contains("What should I do with it?")
    );
    assert!(agent.prompts().is_empty());
}
