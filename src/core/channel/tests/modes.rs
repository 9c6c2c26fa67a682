//! Sessions kept in a mode that asks before acting, whatever the agent's defaults.

use super::*;
use crate::core::fakes::{ASK_ASKS, usual_options};
use crate::model::agent::{PermissionKind, PermissionOption, SessionSettings};
use crate::model::modes::KnownModes;

/// The fake's modes, starting in `current`.
fn starting_in(current: &str) -> SessionSettings {
    SessionSettings {
        current_mode: Some(current.into()),
        ..ask_code_and_model()
    }
}

fn mode_changes(agent: &FakeAgent) -> Vec<String> {
    (agent.changes().into_iter())
        .filter(|(_, what, _)| what == "mode")
        .map(|(_, _, value)| value)
        .collect()
}

#[tokio::test]
async fn a_session_that_starts_in_a_mode_that_does_not_ask_is_switched_before_its_first_prompt() {
    let agent = FakeAgent::new(Script::Chunks(vec!["ok".into()], Duration::ZERO))
        .with_settings(starting_in("code"));
    let chat = FakeChat::new();
    let (tx, store) = channel(agent.clone(), chat.clone()).await;
    tx.try_send(ChannelInput::Prompt(message("$1", "hello")))
        .unwrap();
    settle_until(|| agent.prompts().len() == 1).await;
    assert_eq!(mode_changes(&agent), ["ask"], "switched before the prompt");
    let kept = store
        .kept_mode(&ConversationKey::new("!room", "demo"))
        .await
        .unwrap();
    assert_eq!(kept.map(|k| k.mode).as_deref(), Some("ask"));
    // `!status`: the mode says it asks.
    let report = report(&tx).await;
    assert_eq!(report.mode.as_deref(), Some("Ask, asks before acting"));
}

#[tokio::test]
async fn an_agent_with_no_mode_known_to_ask_is_not_used_and_the_room_is_told() {
    let agent = FakeAgent::new(Script::Chunks(vec!["ok".into()], Duration::ZERO))
        .with_settings(starting_in("code"))
        .with_known_modes(KnownModes::UNKNOWN);
    let chat = FakeChat::new();
    let (tx, _) = channel(agent.clone(), chat.clone()).await;
    tx.try_send(ChannelInput::Prompt(message("$1", "hello")))
        .unwrap();
    settle_until(|| !chat.shown("!room").is_empty()).await;
    assert!(agent.prompts().is_empty(), "no prompt reached the agent");
    assert!(mode_changes(&agent).is_empty());
    let shown = chat.shown("!room");
    assert!(
        shown[0].contains("could not start a conversation")
            && shown[0].contains("none of its modes (`ask`, `code`) is known to ask")
            && shown[0].contains("asking_modes"),
        "{shown:?}"
    );
}

#[tokio::test]
async fn modes_that_do_not_decide_asking_are_left_as_the_agent_has_them() {
    let agent = FakeAgent::new(Script::Chunks(vec!["ok".into()], Duration::ZERO))
        .with_settings(starting_in("code"))
        .with_known_modes(KnownModes::UNRELATED);
    let chat = FakeChat::new();
    let (tx, _) = channel(agent.clone(), chat.clone()).await;
    tx.try_send(ChannelInput::Prompt(message("$1", "hello")))
        .unwrap();
    settle_until(|| agent.prompts().len() == 1).await;
    assert!(mode_changes(&agent).is_empty());
}

#[tokio::test]
async fn the_agents_own_switch_to_a_mode_that_does_not_ask_is_put_back_and_the_room_told() {
    let agent = FakeAgent::new(Script::UntilCancelled).with_settings(ask_code_and_model());
    let chat = FakeChat::new();
    let (tx, _) = channel(agent.clone(), chat.clone()).await;
    tx.try_send(ChannelInput::Prompt(message("$1", "go")))
        .unwrap();
    settle_until(|| agent.prompts().len() == 1).await;
    let (session, _) = agent.prompts()[0].clone();
    // During the turn.
    agent.report_mode(&session, "code");
    settle_until(|| mode_changes(&agent).len() == 1).await;
    assert_eq!(mode_changes(&agent), ["ask"]);
    let shown = chat.shown("!room");
    assert!(
        shown
            .iter()
            .any(|t| t.contains("switched itself to Code") && t.contains("back in Ask")),
        "{shown:?}"
    );
    // A switch to a mode that asks stays.
    agent.report_mode(&session, "ask");
    tx.try_send(ChannelInput::Command(
        agent_command("stop", &[]),
        message("$2", "!stop"),
    ))
    .unwrap();
    settle_until(|| chat.shown("!room").iter().any(|t| t.contains("Stopped"))).await;
    // Between turns: put back before the next prompt goes out.
    agent.report_mode(&session, "code");
    tx.try_send(ChannelInput::Prompt(message("$3", "again")))
        .unwrap();
    settle_until(|| agent.prompts().len() == 2).await;
    assert_eq!(mode_changes(&agent), ["ask", "ask"]);
}

#[tokio::test]
async fn a_mode_an_admin_chose_stays_when_the_agent_confirms_it() {
    let agent = FakeAgent::new(Script::Chunks(vec!["ok".into()], Duration::ZERO))
        .with_settings(ask_code_and_model());
    let chat = FakeChat::new();
    let (tx, store) = channel(agent.clone(), chat.clone()).await;
    // Alice is an admin.
    tx.try_send(ChannelInput::Command(
        agent_command("mode", &["code"]),
        message("$1", "!mode code"),
    ))
    .unwrap();
    settle_until(|| mode_changes(&agent) == ["code"]).await;
    let (session, _, _) = agent.changes()[0].clone();
    agent.report_mode(&session, "code");
    tx.try_send(ChannelInput::Prompt(message("$2", "hello")))
        .unwrap();
    settle_until(|| agent.prompts().len() == 1).await;
    assert_eq!(mode_changes(&agent), ["code"], "never put back");
    let kept = store
        .kept_mode(&ConversationKey::new("!room", "demo"))
        .await
        .unwrap()
        .unwrap();
    assert!(kept.by_admin && kept.mode == "code", "{kept:?}");
    let shown = chat.shown("!room");
    assert!(
        shown[0].contains("mode is now Code (acts without asking)"),
        "{shown:?}"
    );
}

#[tokio::test]
async fn the_conversations_mode_is_put_back_when_its_session_is_got_back_or_opened_again() {
    // `plan` asks too; the agent itself always starts in `code`.
    let known = KnownModes {
        asking: &["ask", "plan"],
        ..ASK_ASKS
    };
    let mut settings = starting_in("code");
    settings.modes.push(("plan".into(), "Plan".into()));
    let agent = FakeAgent::new(Script::Chunks(vec!["ok".into()], Duration::ZERO))
        .with_settings(settings)
        .with_known_modes(known);
    let chat = FakeChat::new();
    let (tx, store) = channel(agent.clone(), chat.clone()).await;
    tx.try_send(ChannelInput::Command(
        agent_command("mode", &["plan"]),
        message("$1", "!mode plan"),
    ))
    .unwrap();
    settle_until(|| mode_changes(&agent).len() == 2).await;
    assert_eq!(mode_changes(&agent), ["ask", "plan"]);
    drop(tx);
    // A restart: a new channel on the same store, a new session.
    let chat = FakeChat::new();
    let pool_port: Arc<dyn AgentPort> = agent.clone();
    let pool = Pool::new(
        PoolSettings::default(),
        vec![("demo".into(), "Demo".into(), pool_port)],
    );
    let ctx = context("demo", agent.clone(), chat.clone(), &store, pool);
    let (tx, rx) = mpsc::channel(1_024);
    let channel = Channel::new(
        Arc::new(ctx),
        ConversationKey::new("!room", "demo"),
        rx,
        CancellationToken::new(),
    );
    tokio::spawn(channel.run());
    tx.try_send(ChannelInput::Prompt(message("$2", "hello")))
        .unwrap();
    settle_until(|| agent.prompts().len() == 1).await;
    assert_eq!(mode_changes(&agent), ["ask", "plan", "plan"]);
}

/// Options like Claude Code's when it leaves plan mode: one also switches to `code`.
fn leaving_plan() -> Vec<PermissionOption> {
    let mut options = usual_options();
    options.insert(
        0,
        PermissionOption {
            id: "code".into(),
            name: "Yes, and stop asking".into(),
            kind: PermissionKind::AllowAlways,
        },
    );
    options
}

#[tokio::test]
async fn a_poll_choice_that_stops_asking_is_for_admins_only() {
    let agent = FakeAgent::new(Script::AskPermission(1))
        .with_settings(ask_code_and_model())
        .with_options(leaving_plan());
    let chat = FakeChat::new();
    let (tx, store) = channel_adjusted(agent.clone(), chat.clone(), |ctx| {
        ctx.approvers = AccessList::new(&["@alice:x", "@bob:x"]);
    })
    .await;
    tx.try_send(ChannelInput::Prompt(message("$1", "go")))
        .unwrap();
    settle_until(|| poll_of(&chat).is_some()).await;
    let (poll, body) = poll_of(&chat).unwrap();
    assert!(
        body.contains("Yes, and stop asking (admins only: stops asking)"),
        "{body}"
    );
    // Bob may approve, but is no admin: his pick is refused and the poll stays open.
    react(&tx, "@bob:x", &poll, "🔁");
    settle_until(|| {
        chat.shown("!room")
            .iter()
            .any(|t| t.contains("only an admin may pick “Yes, and stop asking”"))
    })
    .await;
    assert!(reply_said(&chat).is_empty(), "the agent got no answer");
    // Alice is: the agent gets the option, and the conversation keeps the mode.
    react(&tx, "@alice:x", &poll, "🔁");
    settle_until(|| reply_said(&chat) == ["permission: code"]).await;
    let kept = store
        .kept_mode(&ConversationKey::new("!room", "demo"))
        .await
        .unwrap()
        .unwrap();
    assert!(kept.by_admin && kept.mode == "code", "{kept:?}");
}

#[tokio::test]
async fn a_session_that_reports_no_modes_is_put_in_the_asking_mode_before_its_prompt() {
    // The agent has modes and starts in `code`, but leaves them out of its answer: the mode
    // is not known, so it is set, not assumed.
    let agent = FakeAgent::new(Script::Chunks(vec!["ok".into()], Duration::ZERO))
        .with_settings(starting_in("code"))
        .hiding_modes();
    let chat = FakeChat::new();
    let (tx, store) = channel(agent.clone(), chat.clone()).await;
    tx.try_send(ChannelInput::Prompt(message("$1", "hello")))
        .unwrap();
    settle_until(|| agent.prompts().len() == 1).await;
    assert_eq!(mode_changes(&agent), ["ask"], "set before the prompt");
    let kept = (store
        .kept_mode(&ConversationKey::new("!room", "demo"))
        .await)
        .unwrap();
    assert_eq!(kept.map(|k| k.mode).as_deref(), Some("ask"));
}

#[tokio::test]
async fn a_session_whose_mode_is_unknown_and_cannot_be_set_is_never_prompted() {
    let agent = FakeAgent::new(Script::Chunks(vec!["ok".into()], Duration::ZERO))
        .with_settings(starting_in("code"))
        .hiding_modes()
        .refusing_mode("ask");
    let chat = FakeChat::new();
    let (tx, _) = channel(agent.clone(), chat.clone()).await;
    tx.try_send(ChannelInput::Prompt(message("$1", "hello")))
        .unwrap();
    settle_until(|| !chat.shown("!room").is_empty()).await;
    assert!(agent.prompts().is_empty(), "no prompt reached the agent");
    let shown = chat.shown("!room");
    assert!(
        shown[0].contains("could not start a conversation") && shown[0].contains("`ask`"),
        "{shown:?}"
    );
}

#[tokio::test]
async fn a_session_got_back_without_its_modes_whose_mode_cannot_be_put_back_is_never_prompted() {
    let agent = FakeAgent::new(Script::Chunks(vec!["ok".into()], Duration::ZERO))
        .with_settings(starting_in("code"))
        .with_reopen(Reopen::Load);
    let chat = FakeChat::new();
    let (tx, _) = channel(agent.clone(), chat.clone()).await;
    tx.try_send(ChannelInput::Prompt(message("$1", "first")))
        .unwrap();
    settle_until(|| agent.prompts().len() == 1).await;
    // Its process goes; the session comes back without its modes, in the agent's own
    // default, and the asking mode cannot be put back.
    let session = agent.prompts()[0].0.clone();
    agent.kill_session(&session);
    let agent = agent.hiding_modes().refusing_mode("ask");
    tx.try_send(ChannelInput::Prompt(message("$2", "second")))
        .unwrap();
    settle_until(|| chat.shown("!room").len() >= 2).await;
    assert_eq!(agent.reopened(), vec![session]);
    assert_eq!(
        agent.prompts().len(),
        1,
        "the second prompt never reached it"
    );
    let shown = chat.shown("!room");
    assert!(shown[1].contains("`ask`"), "{shown:?}");
}

#[tokio::test]
async fn an_agent_without_modes_is_prompted_as_it_is() {
    // No modes at all (no `session/set_mode` either): nothing to fence.
    let agent = FakeAgent::new(Script::Chunks(vec!["ok".into()], Duration::ZERO));
    let chat = FakeChat::new();
    let (tx, _) = channel(agent.clone(), chat.clone()).await;
    tx.try_send(ChannelInput::Prompt(message("$1", "hello")))
        .unwrap();
    settle_until(|| agent.prompts().len() == 1).await;
    assert!(mode_changes(&agent).is_empty());
}

#[tokio::test]
async fn an_agent_whose_dialect_knows_no_mode_and_that_shows_none_is_prompted_as_it_is() {
    // A dialect that knows nothing of the agent's modes (canonical ACP), and an agent that
    // shows none: not a mode nobody knows, but no modes at all.
    let agent = FakeAgent::new(Script::Chunks(vec!["ok".into()], Duration::ZERO))
        .with_known_modes(KnownModes::UNKNOWN);
    let chat = FakeChat::new();
    let (tx, _) = channel(agent.clone(), chat.clone()).await;
    tx.try_send(ChannelInput::Prompt(message("$1", "hello")))
        .unwrap();
    settle_until(|| agent.prompts().len() == 1).await;
    assert!(mode_changes(&agent).is_empty());
}
