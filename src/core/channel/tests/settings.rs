//! `!mode`, `!model`, `!set`, unknown slash commands and `!logs`.

use super::*;

#[tokio::test]
async fn mode_and_model_change_in_place_and_the_last_change_asked_wins() {
    let agent = FakeAgent::new(Script::Chunks(vec!["ok".into()], Duration::ZERO))
        .with_settings(ask_code_and_model());
    let chat = FakeChat::new();
    let (tx, _) = channel(agent.clone(), chat.clone()).await;
    for (id, body, command) in [
        ("$1", "!mode", agent_command("mode", &[])),
        ("$2", "!mode code", agent_command("mode", &["code"])),
        ("$3", "!model large", agent_command("model", &["large"])),
        ("$4", "!mode ask", agent_command("mode", &["ask"])),
        ("$5", "!mode Code", agent_command("mode", &["Code"])),
        ("$6", "!mode fly", agent_command("mode", &["fly"])),
    ] {
        tx.try_send(ChannelInput::Command(command, message(id, body)))
            .unwrap();
    }
    settle_until(|| chat.shown("!room").len() >= 6).await;
    let changes: Vec<(String, String)> = agent
        .changes()
        .into_iter()
        .map(|(_, what, value)| (what, value))
        .collect();
    let pair = |a: &str, b: &str| (a.to_owned(), b.to_owned());
    assert_eq!(
        changes,
        vec![
            pair("mode", "code"),
            pair("model", "large"),
            pair("mode", "ask"),
            pair("mode", "code"),
        ]
    );
    let shown = chat.shown("!room");
    assert!(shown[0].contains("Ask (`ask`) ← current"), "{shown:?}");
    assert!(shown[2].contains("model is now Large"), "{shown:?}");
    assert!(shown[5].contains("not one of the choices"), "{shown:?}");
    assert_eq!(agent.prompts().len(), 0, "settings never prompt");
    // The session was opened for the commands and kept: one session, never replaced.
    assert!(changes.len() == 4 && agent.reopened().is_empty());
}

#[tokio::test]
async fn a_mode_change_during_a_turn_is_made_and_the_answer_stays_whole() {
    let chunks = ["one ", "two ", "three"].map(String::from).to_vec();
    let agent = FakeAgent::new(Script::Chunks(chunks, Duration::from_millis(150)))
        .with_settings(ask_code_and_model());
    let chat = FakeChat::new();
    let (tx, _) = channel(agent.clone(), chat.clone()).await;
    tx.try_send(ChannelInput::Prompt(message("$1", "go")))
        .unwrap();
    settle_until(|| !agent.prompts().is_empty()).await;
    tx.try_send(ChannelInput::Command(
        agent_command("mode", &["code"]),
        message("$2", "!mode code"),
    ))
    .unwrap();
    settle_until(|| chat.shown("!room").iter().any(|t| t == "one two three")).await;
    assert_eq!(agent.changes().len(), 1);
    let shown = chat.shown("!room");
    assert!(
        shown.iter().any(|t| t.contains("mode is now Code")),
        "{shown:?}"
    );
}

#[tokio::test]
async fn a_mode_change_during_a_turn_whose_process_died_is_refused_not_a_panic() {
    let agent = FakeAgent::new(Script::UntilCancelled).with_settings(ask_code_and_model());
    let chat = FakeChat::new();
    let (tx, _) = channel(agent.clone(), chat.clone()).await;
    tx.try_send(ChannelInput::Prompt(message("$1", "go")))
        .unwrap();
    settle_until(|| !agent.prompts().is_empty()).await;
    let (session, _) = agent.prompts()[0].clone();
    agent.kill_session(&session);
    tx.try_send(ChannelInput::Command(
        agent_command("mode", &["code"]),
        message("$2", "!mode code"),
    ))
    .unwrap();
    settle_until(|| {
        chat.shown("!room")
            .iter()
            .any(|t| t.contains("cannot be changed now"))
    })
    .await;
    assert!(
        agent.changes().is_empty(),
        "no session was opened to change"
    );
    // The channel still runs: the turn can be stopped and the next prompt is taken.
    tx.try_send(ChannelInput::Command(
        agent_command("stop", &[]),
        message("$3", "!stop"),
    ))
    .unwrap();
    tx.try_send(ChannelInput::Prompt(message("$4", "again")))
        .unwrap();
    settle_until(|| agent.prompts().len() == 2).await;
}

#[tokio::test]
async fn a_change_the_agent_cannot_make_in_place_leaves_the_session_alone() {
    let agent = FakeAgent::new(Script::Chunks(vec!["ok".into()], Duration::ZERO));
    let chat = FakeChat::new();
    let (tx, _) = channel(agent.clone(), chat.clone()).await;
    tx.try_send(ChannelInput::Prompt(message("$1", "hello")))
        .unwrap();
    tx.try_send(ChannelInput::Command(
        agent_command("model", &["large"]),
        message("$2", "!model large"),
    ))
    .unwrap();
    tx.try_send(ChannelInput::Prompt(message("$3", "again")))
        .unwrap();
    settle_until(|| agent.prompts().len() == 2).await;
    let shown = chat.shown("!room");
    assert!(
        shown
            .iter()
            .any(|t| t.contains("does not offer a model choice") && t.contains("!new demo")),
        "{shown:?}"
    );
    let sessions: Vec<String> = agent.prompts().into_iter().map(|(s, _)| s).collect();
    assert_eq!(sessions[0], sessions[1], "the same session carries on");
}

#[tokio::test]
async fn a_slash_command_the_agent_does_not_offer_is_answered_not_sent() {
    let agent = FakeAgent::new(Script::Chunks(vec!["ok".into()], Duration::ZERO))
        .with_commands(&[("review", "Review the changes")]);
    let chat = FakeChat::new();
    let (tx, _) = channel(agent.clone(), chat.clone()).await;
    tx.try_send(ChannelInput::Prompt(message("$1", "/deploy now")))
        .unwrap();
    tx.try_send(ChannelInput::Prompt(message("$2", "/review src")))
        .unwrap();
    tx.try_send(ChannelInput::Prompt(message("$3", "/usr/bin is odd")))
        .unwrap();
    settle_until(|| agent.prompts().len() == 2).await;
    let prompts = agent.prompt_texts();
    assert_eq!(prompts, vec!["/review src", "/usr/bin is odd"]);
    let shown = chat.shown("!room");
    assert!(
        shown[0].contains("has no command /deploy")
            && shown[0].contains("/review: Review the changes"),
        "{shown:?}"
    );
}

#[tokio::test]
async fn logs_show_the_agents_stderr_where_everyone_may_read_it() {
    let agent = FakeAgent::new(Script::Chunks(vec![], Duration::ZERO));
    let chat = FakeChat::new();
    chat.set_members(&["@alice:x", "@demo:x"]);
    let (tx, _) = channel(agent.clone(), chat.clone()).await;
    tx.try_send(ChannelInput::Command(
        agent_command("logs", &[]),
        message("$1", "!logs"),
    ))
    .unwrap();
    settle_until(|| chat.shown("!room").len() == 1).await;
    agent.set_stderr("loading model\nready");
    tx.try_send(ChannelInput::Command(
        agent_command("logs", &[]),
        message("$2", "!logs"),
    ))
    .unwrap();
    settle_until(|| chat.shown("!room").len() == 2).await;
    let shown = chat.shown("!room");
    assert!(shown[0].contains("written nothing"), "{shown:?}");
    assert!(shown[1].contains("loading model"), "{shown:?}");
}
