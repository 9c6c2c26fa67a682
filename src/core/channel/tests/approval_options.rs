//! Approval switches that are not modes: an option of category `permissions` (Copilot's
//! `allow_all`) and the slash commands that flip it.

use super::*;
use crate::core::fakes::{ASK_ASKS, ask_code_and_model};
use crate::model::agent::{
    ConfigOption, ConfigValue, PermissionKind, PermissionOption, SessionSettings,
};
use crate::model::modes::{ApprovalOption, KnownModes};

/// What the fake's "dialect" knows: `ask` asks, and `allow_all` asks while `off`.
const WITH_ALLOW_ALL: KnownModes = KnownModes {
    approval_options: &[ApprovalOption {
        id: "allow_all",
        asks: "off",
    }],
    approval_commands: &["allow-all"],
    ..ASK_ASKS
};

/// The fake's settings with `allow_all` at `value`.
fn with_allow_all(value: &str) -> SessionSettings {
    let mut settings = ask_code_and_model();
    settings.options.push(ConfigOption {
        id: "allow_all".into(),
        name: "Allow All".into(),
        category: Some("permissions".into()),
        value: ConfigValue::Choice {
            current: value.into(),
            choices: vec![("on".into(), "On".into()), ("off".into(), "Off".into())],
        },
    });
    settings
}

fn allow_all_changes(agent: &FakeAgent) -> Vec<String> {
    (agent.changes().into_iter())
        .filter(|(_, what, _)| what == "allow_all")
        .map(|(_, _, value)| value)
        .collect()
}

fn agent_with_allow_all(value: &str) -> Arc<FakeAgent> {
    FakeAgent::new(Script::Chunks(vec!["ok".into()], Duration::ZERO))
        .with_settings(with_allow_all(value))
        .with_known_modes(WITH_ALLOW_ALL)
}

#[tokio::test]
async fn a_session_that_opens_with_approvals_off_is_put_back_before_its_first_prompt() {
    let agent = agent_with_allow_all("on");
    let chat = FakeChat::new();
    let (tx, _) = channel(agent.clone(), chat.clone()).await;
    tx.try_send(ChannelInput::Prompt(message("$1", "hello")))
        .unwrap();
    settle_until(|| agent.prompts().len() == 1).await;
    assert_eq!(allow_all_changes(&agent), ["off"], "set before the prompt");
}

#[tokio::test]
async fn the_agents_own_switch_of_an_approval_option_is_put_back_and_the_room_told() {
    let agent = agent_with_allow_all("off");
    let chat = FakeChat::new();
    let (tx, _) = channel(agent.clone(), chat.clone()).await;
    tx.try_send(ChannelInput::Prompt(message("$1", "hello")))
        .unwrap();
    settle_until(|| agent.prompts().len() == 1).await;
    let session = agent.prompts()[0].0.clone();
    agent.report_options(&session, with_allow_all("on").options);
    settle_until(|| allow_all_changes(&agent) == ["off"]).await;
    settle_until(|| {
        (chat.shown("!room").iter()).any(|t| t.contains("turned its `allow_all` to `on`"))
    })
    .await;
}

#[tokio::test]
async fn a_command_that_switches_approvals_is_refused_to_non_admins_and_an_admins_holds() {
    let agent = agent_with_allow_all("off");
    let chat = FakeChat::new();
    let (tx, _) = channel_adjusted(agent.clone(), chat.clone(), |ctx| {
        ctx.allowed = AccessList::new(&["@alice:x", "@bob:x"]);
    })
    .await;
    let from_bob = IncomingMessage {
        sender: "@bob:x".into(),
        ..message("$1", "/allow-all on")
    };
    tx.try_send(ChannelInput::Prompt(from_bob)).unwrap();
    settle_until(|| {
        (chat.shown("!room").iter()).any(|t| t.contains("only admins may send /allow-all"))
    })
    .await;
    assert!(agent.prompts().is_empty(), "it never reached the agent");
    // Alice is an admin: hers goes, and the switch it makes is kept as hers.
    tx.try_send(ChannelInput::Prompt(message("$2", "/allow-all on")))
        .unwrap();
    settle_until(|| agent.prompts().len() == 1).await;
    let session = agent.prompts()[0].0.clone();
    agent.report_options(&session, with_allow_all("on").options);
    tx.try_send(ChannelInput::Prompt(message("$3", "after")))
        .unwrap();
    settle_until(|| agent.prompts().len() == 2).await;
    assert!(
        allow_all_changes(&agent).is_empty(),
        "{:?}",
        agent.changes()
    );
}

/// Options like Qwen Code's for a command: two "always" answers saved beyond the session.
fn lasting() -> Vec<PermissionOption> {
    let option = |id: &str, name: &str, kind| PermissionOption {
        id: id.into(),
        name: name.into(),
        kind,
    };
    vec![
        option(
            "proceed_always_project",
            "Always Allow in project: echo *",
            PermissionKind::AllowAlways,
        ),
        option("proceed_once", "Allow", PermissionKind::AllowOnce),
        option("cancel", "Reject", PermissionKind::RejectOnce),
    ]
}

#[tokio::test]
async fn an_answer_saved_beyond_the_session_is_for_admins_only() {
    let known = KnownModes {
        lasting_options: &["proceed_always_project"],
        ..ASK_ASKS
    };
    let agent = FakeAgent::new(Script::AskPermission(1))
        .with_settings(ask_code_and_model())
        .with_known_modes(known)
        .with_options(lasting());
    let chat = FakeChat::new();
    let (tx, _) = channel_adjusted(agent.clone(), chat.clone(), |ctx| {
        ctx.approvers = AccessList::new(&["@alice:x", "@bob:x"]);
    })
    .await;
    tx.try_send(ChannelInput::Prompt(message("$1", "go")))
        .unwrap();
    settle_until(|| poll_of(&chat).is_some()).await;
    let (poll, body) = poll_of(&chat).unwrap();
    assert!(
        body.contains("Always Allow in project: echo * (admins only: saved beyond this session)"),
        "{body}"
    );
    // Bob may approve, but is no admin: refused, the poll stays open; Alice's holds.
    react(&tx, "@bob:x", &poll, "🔁");
    settle_until(|| {
        (chat.shown("!room").iter()).any(|t| t.contains("its answer is saved beyond this session"))
    })
    .await;
    assert!(reply_said(&chat).is_empty());
    react(&tx, "@alice:x", &poll, "🔁");
    settle_until(|| reply_said(&chat) == ["permission: proceed_always_project"]).await;
}
