//! Sessions opened, got back, replaced; the earlier conversation; stderr after a crash.

use super::*;
use crate::model::ids::{ConversationKey, SessionId};

#[tokio::test]
async fn a_slash_command_starts_its_prompt_and_the_conversation_waits_for_the_next() {
    let agent = FakeAgent::new(Script::Chunks(vec!["ok".into()], Duration::ZERO))
        .with_commands(&[("compact", "Compact the context")]);
    let chat = FakeChat::new();
    let (tx, store) = channel(agent.clone(), chat.clone()).await;
    earlier_prompt(&store, "$0", "earlier").await;
    tx.try_send(ChannelInput::Prompt(message("$1", "/compact now")))
        .unwrap();
    tx.try_send(ChannelInput::Prompt(message("$2", "next")))
        .unwrap();
    settle_until(|| agent.prompts().len() == 2).await;
    let prompts = agent.prompt_texts();
    assert_eq!(prompts[0], "/compact now");
    assert!(
        prompts[1].starts_with(continuity::PREAMBLE_HEADER) && prompts[1].contains("> earlier"),
        "{}",
        prompts[1]
    );
}

#[tokio::test]
async fn a_new_session_gets_the_earlier_conversation_until_a_fresh_start() {
    let agent = FakeAgent::new(Script::Chunks(vec!["ok".into()], Duration::from_millis(10)));
    let chat = FakeChat::new();
    let (tx, store) = channel(agent.clone(), chat.clone()).await;
    // A transcript from before a restart: the new channel has no session yet.
    earlier_prompt(&store, "$0", "earlier question").await;
    store
        .append_transcript(
            &ConversationKey::new("!room", "demo"),
            TranscriptLine {
                role: Role::Agent,
                sender: &"@demo:x".into(),
                event_id: None,
                body: "earlier answer",
                stop_reason: Some("end_turn"),
            },
        )
        .await
        .unwrap();
    tx.try_send(ChannelInput::Prompt(message("$1", "next")))
        .unwrap();
    settle_until(|| agent.prompts().len() == 1).await;
    let first = agent.prompts()[0].1.clone();
    assert!(first.starts_with(continuity::PREAMBLE_HEADER), "{first}");
    assert!(first.contains("> earlier question") && first.contains("> earlier answer"));
    assert!(first.ends_with("[New message]\nnext"), "{first}");
    assert_eq!(
        store
            .continuity(&ConversationKey::new("!room", "demo"))
            .await
            .unwrap()
            .as_deref(),
        Some("reinjected")
    );
    // The same session goes on without a preamble.
    tx.try_send(ChannelInput::Prompt(message("$2", "again")))
        .unwrap();
    settle_until(|| agent.prompts().len() == 2).await;
    assert_eq!(agent.prompts()[1].1, "again");
    // A fresh start: a new session, and nothing earlier is given to it.
    tx.try_send(ChannelInput::Command(
        agent_command("new", &[]),
        message("$3", "!new"),
    ))
    .unwrap();
    tx.try_send(ChannelInput::Prompt(message("$4", "hello again")))
        .unwrap();
    settle_until(|| agent.prompts().len() == 3).await;
    let third = &agent.prompts()[2];
    assert_eq!(third.1, "hello again");
    assert_ne!(third.0, agent.prompts()[1].0, "a new session");
    assert!(
        chat.shown("!room")
            .iter()
            .any(|b| b.starts_with("🆕 Fresh start"))
    );
}

#[tokio::test]
async fn a_session_whose_process_died_is_replaced_before_the_next_prompt() {
    let agent = FakeAgent::new(Script::Chunks(vec!["ok".into()], Duration::from_millis(10)));
    let chat = FakeChat::new();
    let (tx, _) = channel(agent.clone(), chat.clone()).await;
    tx.try_send(ChannelInput::Prompt(message("$1", "first")))
        .unwrap();
    settle_until(|| chat.shown("!room").len() == 1).await;
    agent.kill_session(&agent.prompts()[0].0);
    tx.try_send(ChannelInput::Prompt(message("$2", "second")))
        .unwrap();
    settle_until(|| chat.shown("!room").len() == 2).await;
    let (session, text) = agent.prompts()[1].clone();
    assert_ne!(session, agent.prompts()[0].0, "a new session");
    assert!(text.starts_with(continuity::PREAMBLE_HEADER), "{text}");
    assert!(text.ends_with("[New message]\nsecond"), "{text}");
    assert_eq!(chat.shown("!room"), vec!["ok", "ok"], "nothing was lost");
}

#[tokio::test]
async fn an_agent_that_can_load_gets_its_session_back_without_a_preamble() {
    let agent = FakeAgent::new(Script::Chunks(vec!["ok".into()], Duration::from_millis(10)))
        .with_reopen(Reopen::Load);
    let chat = FakeChat::new();
    let (tx, store) = channel(agent.clone(), chat.clone()).await;
    tx.try_send(ChannelInput::Prompt(message("$1", "first")))
        .unwrap();
    settle_until(|| chat.shown("!room").len() == 1).await;
    let first_session = agent.prompts()[0].0.clone();
    agent.kill_session(&first_session);
    tx.try_send(ChannelInput::Prompt(message("$2", "second")))
        .unwrap();
    settle_until(|| chat.shown("!room").len() == 2).await;
    assert_eq!(agent.reopened(), vec![first_session.clone()]);
    assert_eq!(
        agent.prompts()[1],
        (first_session.clone(), "second".to_owned()),
        "the same session, and no preamble: the agent remembers"
    );
    assert_eq!(
        store
            .continuity(&ConversationKey::new("!room", "demo"))
            .await
            .unwrap()
            .as_deref(),
        Some("loaded")
    );
    // After a fresh start the old session is not loaded back.
    tx.try_send(ChannelInput::Command(
        agent_command("new", &[]),
        message("$3", "!new"),
    ))
    .unwrap();
    tx.try_send(ChannelInput::Prompt(message("$4", "third")))
        .unwrap();
    settle_until(|| agent.prompts().len() == 3).await;
    assert_ne!(agent.prompts()[2].0, first_session, "a new session");
    assert_eq!(agent.prompts()[2].1, "third");
    assert_eq!(agent.reopened().len(), 1);
}

#[tokio::test]
async fn a_session_the_agent_cannot_load_is_replaced_with_re_injection() {
    let agent = FakeAgent::new(Script::Chunks(vec!["ok".into()], Duration::from_millis(10)))
        .with_reopen(Reopen::Load);
    let chat = FakeChat::new();
    let (tx, store) = channel(agent.clone(), chat.clone()).await;
    // A session saved by an earlier run that this agent does not know.
    store
        .save_session(
            &ConversationKey::new("!room", "demo"),
            &SessionId::new("gone"),
        )
        .await
        .unwrap();
    store
        .append_transcript(
            &ConversationKey::new("!room", "demo"),
            TranscriptLine {
                role: Role::User,
                sender: &"@a:x".into(),
                event_id: None,
                body: "before",
                stop_reason: None,
            },
        )
        .await
        .unwrap();
    tx.try_send(ChannelInput::Prompt(message("$1", "after")))
        .unwrap();
    settle_until(|| chat.shown("!room").len() == 1).await;
    let (session, text) = agent.prompts()[0].clone();
    assert_ne!(session, "gone");
    assert!(text.starts_with(continuity::PREAMBLE_HEADER), "{text}");
    assert_eq!(
        store
            .continuity(&ConversationKey::new("!room", "demo"))
            .await
            .unwrap()
            .as_deref(),
        Some("reinjected")
    );
}

#[tokio::test]
async fn an_agent_crash_shows_its_stderr_only_where_everyone_is_allowed() {
    let agent = FakeAgent::new(Script::Exit("exit code 3".into()));
    agent.set_stderr("panicked at src/main.rs:7\nbacktrace <here>");
    let chat = FakeChat::new();
    chat.set_members(&["@alice:x", "@demo:x"]);
    let (tx, _) = channel(agent.clone(), chat.clone()).await;
    tx.try_send(ChannelInput::Prompt(message("$1", "go")))
        .unwrap();
    settle_until(|| chat.shown("!room").iter().any(|b| b.starts_with("🩺"))).await;
    let shown = chat.shown("!room");
    assert!(shown.iter().any(|b| b.contains("exit code 3")), "{shown:?}");
    let stderr = shown.iter().find(|b| b.starts_with("🩺")).unwrap();
    assert!(stderr.contains("(2 lines)\npanicked at src/main.rs:7\nbacktrace <here>"));
    let html = chat
        .messages("!room")
        .into_iter()
        .find(|m| m.body.starts_with("🩺"))
        .and_then(|m| m.html)
        .unwrap();
    assert!(
        html.contains("<details>") && html.contains("backtrace &lt;here&gt;"),
        "{html}"
    );

    // With someone in the room who may not prompt, only a pointer to the log.
    chat.set_members(&["@alice:x", "@demo:x", "@stranger:y"]);
    tx.try_send(ChannelInput::Prompt(message("$2", "again")))
        .unwrap();
    settle_until(|| {
        chat.shown("!room")
            .iter()
            .filter(|b| b.starts_with("🩺"))
            .count()
            == 2
    })
    .await;
    let last = chat
        .shown("!room")
        .into_iter()
        .rfind(|b| b.starts_with("🩺"))
        .unwrap();
    assert!(last.contains("is in the Sidekicks log"), "{last}");
    assert!(!last.contains("panicked"));
}
