//! Unit tests of the gateway, with fake agents and a fake chat.

use super::*;
use crate::model::ids::{AgentId, ConversationKey, UserId};
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::mpsc;

use crate::core::access::AccessList;
use crate::core::agent::AgentPort;
use crate::core::context::AgentContext;
use crate::core::context::Handoff;
use crate::core::fakes::{FakeAgent, FakeChat, Script, wait_for};
use crate::core::inbound::{Inbound, IncomingMessage, Unreadable};
use crate::core::pool::Pool;
use crate::core::pool::PoolSettings;
use crate::core::reloadable::Reloadable;
use crate::core::view::stream::StreamSettings;
use crate::render::strings;
use crate::store::{PendingInput, PendingKind, Store, now_ms};
use crate::store::{Role, TranscriptLine};

mod admission;
mod recovery;
mod schedules;
mod several_agents;

async fn gateway() -> (Arc<Gateway>, Arc<FakeAgent>, Arc<FakeChat>) {
    let (gw, agent, chat, _) = gateway_with(false).await;
    (gw, agent, chat)
}

async fn gateway_with(
    rerun_interrupted: bool,
) -> (Arc<Gateway>, Arc<FakeAgent>, Arc<FakeChat>, Store) {
    let script = Script::Chunks(vec!["ok".into()], Duration::from_millis(10));
    let (gw, mut agents, store, _) =
        gateway_of(&[("demo", script)], rerun_interrupted, RoomRules::default()).await;
    let (agent, chat) = agents.remove(0);
    (gw, agent, chat, store)
}

/// A test gateway, its fake agents with their chats, its store, and where its agents'
/// finished answers go for hand-off.
type TestGateway = (
    Arc<Gateway>,
    Vec<(Arc<FakeAgent>, Arc<FakeChat>)>,
    Store,
    mpsc::Receiver<Handoff>,
);

/// A gateway with one fake agent per (ID, script); agent `x` is `@x:x`, shown as `X…`.
/// Hand-offs go to the returned receiver.
async fn gateway_of(
    agents: &[(&str, Script)],
    rerun_interrupted: bool,
    rules: RoomRules,
) -> TestGateway {
    let store = Store::in_memory().await.unwrap();
    let fakes: Vec<(Arc<FakeAgent>, Arc<FakeChat>)> = agents
        .iter()
        .map(|(_, script)| (FakeAgent::new(script.clone()), FakeChat::new()))
        .collect();
    let name = |id: &str| {
        let mut chars = id.chars();
        chars
            .next()
            .map(|c| c.to_uppercase().chain(chars).collect())
            .unwrap_or_default()
    };
    let pool = Pool::new(
        PoolSettings::default(),
        agents
            .iter()
            .zip(&fakes)
            .map(|((id, _), (agent, _))| {
                let port: Arc<dyn AgentPort> = agent.clone();
                (AgentId::from(*id), name(id), port)
            })
            .collect(),
    );
    let users: Vec<UserId> = agents
        .iter()
        .map(|(id, _)| UserId::new(format!("@{id}:x")))
        .collect();
    let (handoffs, handed) = mpsc::channel(1_024);
    let contexts = agents
        .iter()
        .zip(&fakes)
        .map(|((id, _), (agent, chat))| {
            Arc::new(AgentContext {
                display_name: name(id),
                stream: Reloadable::new(StreamSettings {
                    interval: Duration::from_millis(100),
                    max_edits: 10,
                    max_bytes: 10_000,
                    patience: crate::core::view::live::MAX_OUTAGE,
                    ..Default::default()
                }),
                approvers: AccessList::new(&["@alice:x", "@boss:x"]),
                // `code` acts without asking (the fake agent's modes); only `small` is a
                // model people may choose.
                settings: crate::core::settings_policy::SettingsPolicy {
                    choosable_values: [("model".to_owned(), vec!["small".to_owned()])].into(),
                    ..Default::default()
                },
                agent_users: users.clone(),
                rerun_interrupted,
                handoffs: Some(handoffs.clone()),
                ..AgentContext::for_tests(id, agent.clone(), chat.clone(), &store, pool.clone())
            })
        })
        .collect();
    let gw = Arc::new(Gateway::new(
        contexts,
        AccessRules {
            allowed: AccessList::new(&["@alice:x", "@carol:x"]),
            approvers: AccessList::new(&["@alice:x", "@boss:x"]),
            admins: AccessList::new(&["@alice:x"]),
        },
        store.clone(),
        pool,
        GatewaySettings {
            rules,
            ..GatewaySettings::default()
        },
    ));
    (gw, fakes, store, handed)
}

fn msg(id: &str, sender: &str, ts: u64) -> Inbound {
    Inbound::Message(IncomingMessage {
        agent_id: "demo".into(),
        room_id: "!r".into(),
        event_id: id.into(),
        sender: sender.into(),
        body: format!("hello {id}"),
        timestamp_ms: ts,
        reply_to: None,
        ..Default::default()
    })
}

#[tokio::test]
async fn an_undecryptable_message_is_reported_once_and_never_prompted() {
    let (gw, agent, chat) = gateway().await;
    assert!(
        gw.accept_invite(&"demo".into(), &"!r".into(), &"@alice:x".into())
            .await
    );
    let Inbound::Message(m) = msg("$utd", "@alice:x", now_ms() as u64 + 1) else {
        unreachable!()
    };
    gw.handle(Inbound::Unreadable(m.clone(), Unreadable::Undecryptable))
        .await;
    gw.handle(Inbound::Unreadable(m.clone(), Unreadable::Undecryptable))
        .await;
    // Another event that cannot be decrypted is reported: the first, brought twice, was
    // reported once before it.
    let other = IncomingMessage {
        event_id: "$utd2".into(),
        ..m
    };
    gw.handle(Inbound::Unreadable(other, Unreadable::Undecryptable))
        .await;
    until(|| chat.shown("!r").len() >= 2).await;
    let shown = chat.shown("!r");
    assert_eq!(shown.len(), 2, "once each: {shown:?}");
    assert!(shown[0].contains("cannot decrypt"), "{shown:?}");
    assert!(agent.prompts().is_empty());
}

#[tokio::test]
async fn invites_from_strangers_are_declined() {
    let (gw, _, _) = gateway().await;
    assert!(
        !gw.accept_invite(&"demo".into(), &"!r".into(), &"@mallory:x".into())
            .await
    );
    assert!(
        gw.accept_invite(&"demo".into(), &"!r".into(), &"@alice:x".into())
            .await
    );
}

#[tokio::test]
async fn an_approver_who_may_not_prompt_can_only_answer_polls() {
    let (gw, agent, chat) = gateway().await;
    assert!(
        gw.accept_invite(&"demo".into(), &"!r".into(), &"@alice:x".into())
            .await
    );
    let now = now_ms() as u64 + 1;
    gw.handle(msg("$prompt", "@boss:x", now)).await;
    let Inbound::Message(mut answer) = msg("$answer", "@boss:x", now) else {
        unreachable!()
    };
    answer.body = "!allow".into();
    gw.handle(Inbound::Message(answer)).await;
    until(|| !chat.shown("!r").is_empty()).await;
    assert!(agent.prompts().is_empty(), "not a prompt");
    // The poll command reached the channel, which says nothing waits for approval.
    assert_eq!(chat.shown("!r"), vec![strings::NO_OPEN_POLL]);
}

#[tokio::test]
async fn an_approver_who_may_not_prompt_can_stop_a_turn() {
    let (gw, mut fakes, _, _) = gateway_of(
        &[("demo", Script::UntilCancelled)],
        false,
        RoomRules::default(),
    )
    .await;
    let (agent, chat) = fakes.remove(0);
    assert!(
        gw.accept_invite(&"demo".into(), &"!r".into(), &"@alice:x".into())
            .await
    );
    let now = now_ms() as u64 + 1;
    gw.handle(msg("$prompt", "@alice:x", now)).await;
    until(|| !agent.prompts().is_empty()).await;
    assert_eq!(agent.prompts().len(), 1);
    let Inbound::Message(mut stop) = msg("$stop", "@boss:x", now + 1) else {
        unreachable!()
    };
    stop.body = "!stop".into();
    gw.handle(Inbound::Message(stop)).await;
    until(|| chat.shown("!r").iter().any(|t| t.contains("Stopped by"))).await;
    let shown = chat.shown("!r");
    assert!(
        shown.iter().any(|t| t.contains("Stopped by @boss:x")),
        "{shown:?}"
    );
}

#[tokio::test]
async fn people_choose_settings_within_the_policy_and_admins_choose_anything() {
    let (gw, agent, chat) = gateway().await;
    let agent = agent.with_settings(crate::core::fakes::ask_code_and_model());
    assert!(
        gw.accept_invite(&"demo".into(), &"!r".into(), &"@alice:x".into())
            .await
    );
    let now = now_ms() as u64 + 1;
    let command = |id: &str, sender: &str, body: &str| {
        let Inbound::Message(mut m) = msg(id, sender, now) else {
            unreachable!()
        };
        m.body = body.into();
        Inbound::Message(m)
    };
    // Carol may prompt but is no admin: the mode that acts without asking and a model the
    // policy does not list are refused; looking is not changing.
    for (i, body) in ["!mode code", "!model large", "!set model large", "!mode"]
        .iter()
        .enumerate()
    {
        // Each is answered with one notice.
        let before = chat.shown("!r").len();
        gw.handle(command(&format!("$c{i}"), "@carol:x", body))
            .await;
        until(|| chat.shown("!r").len() > before).await;
    }
    let shown = chat.shown("!r");
    let count = |text: &str| shown.iter().filter(|t| t.contains(text)).count();
    assert_eq!(count("only admins may switch"), 1, "{shown:?}");
    assert_eq!(count("`large` is not among the model"), 2, "{shown:?}");
    assert!(agent.changes().is_empty(), "{:?}", agent.changes());
    // What the policy leaves free, she may change.
    gw.handle(command("$c9", "@carol:x", "!mode ask")).await;
    until(|| !agent.changes().is_empty()).await;
    assert_eq!(agent.changes().len(), 1, "{:?}", agent.changes());
    // Alice is an admin: she may choose anything.
    gw.handle(command("$a", "@alice:x", "!mode code")).await;
    until(|| agent.changes().len() >= 2).await;
    gw.handle(command("$b", "@alice:x", "!model large")).await;
    until(|| {
        agent.changes().len() >= 3
            && (chat.shown("!r").iter()).any(|t| t.contains("mode is now Code"))
    })
    .await;
    assert_eq!(agent.changes().len(), 3, "{:?}", agent.changes());
    let shown = chat.shown("!r");
    assert!(
        shown.iter().any(|t| t.contains("mode is now Code")),
        "{shown:?}"
    );
    assert!(agent.prompts().is_empty());
}

#[tokio::test]
async fn a_prompt_cut_by_a_crash_is_rerun_once_when_configured() {
    for (setting, already_rerun, expected_prompts) in
        [(true, false, 1), (true, true, 0), (false, false, 0)]
    {
        let (gw, agent, chat, store) = gateway_with(setting).await;
        store
            .append_transcript(
                &ConversationKey::new("!r", "demo"),
                TranscriptLine {
                    role: Role::User,
                    sender: &"@alice:x".into(),
                    event_id: Some(&"$p".into()),
                    body: "build it",
                    stop_reason: None,
                },
            )
            .await
            .unwrap();
        store
            .begin_turn(
                &ConversationKey::new("!r", "demo"),
                &EventId::from("$p"),
                already_rerun,
            )
            .await
            .unwrap();
        gw.clean_up_previous_run().await;
        // A new prompt after the start: once it is sent, what the start queued before it
        // has been.
        gw.handle(msg("$next", "@alice:x", after_arrival())).await;
        let next = "hello $next";
        // (It may carry the earlier conversation, the cut prompt among it.)
        until(|| agent.prompt_texts().iter().any(|t| t.ends_with(next))).await;
        let prompts: Vec<String> = (agent.prompt_texts().into_iter())
            .filter(|t| !t.ends_with(next))
            .collect();
        let case = format!("setting {setting}, already re-run {already_rerun}");
        assert_eq!(prompts.len(), expected_prompts, "{case}: {prompts:?}");
        if expected_prompts == 1 {
            assert_eq!(prompts[0], "build it", "{case}");
        }
        let notice = chat.shown("!r").into_iter().next().unwrap_or_default();
        let promised = notice.contains("runs it again");
        assert_eq!(promised, expected_prompts == 1, "{case}: {notice}");
    }
}

/// An input as the previous run left it waiting.
fn waiting(id: &str, kind: PendingKind, body: &str, reply_to: Option<&str>) -> PendingInput {
    PendingInput {
        room_id: "!r".into(),
        thread: None,
        agent_id: "demo".into(),
        event_id: id.into(),
        kind,
        sender: "@alice:x".into(),
        body: body.into(),
        reply_to: reply_to.map(EventId::from),
        sent_at: now_ms(),
        queued_reaction: None,
        media: Vec::new(),
    }
}

#[tokio::test]
async fn inputs_the_previous_run_left_waiting_are_taken_up_in_order() {
    let (gw, agent, chat, store) = gateway_with(false).await;
    let poll = crate::store::StoredPoll {
        event_id: "$poll".into(),
        room_id: "!r".into(),
        body: "expired".into(),
        html: None,
        native: false,
    };
    store
        .save_poll(&AgentId::from("demo"), &poll)
        .await
        .unwrap();
    for input in [
        waiting("$1", PendingKind::Prompt, "first", None),
        waiting("$2", PendingKind::Command, "!mode code", None),
        waiting("$3", PendingKind::Prompt, "1", Some("$poll")),
        waiting("$4", PendingKind::Prompt, "second", None),
        waiting("$5", PendingKind::Command, "!agents", None),
    ] {
        let id = input.event_id.clone();
        assert!(
            store
                .admit(&id, &ConversationKey::new("!r", "demo"), Some(&input))
                .await
                .unwrap()
        );
    }
    gw.clean_up_previous_run().await;
    let answered = || {
        chat.messages("!r")
            .iter()
            .any(|m| m.body.contains("1 agent:"))
    };
    // `!agents` came last, and is carried out after the prompts before it.
    until(|| agent.prompts().len() >= 2 && answered()).await;
    // Prompts run in their order; the answer to the dead poll is not a prompt.
    assert_eq!(agent.prompt_texts(), vec!["first", "second"]);
    let said = chat.messages("!r");
    let report = said
        .iter()
        .find(|m| m.body.contains("before it carried out “!mode code”"))
        .expect("the command is reported");
    assert_eq!(report.reply_to.as_ref().map(|id| id.as_str()), Some("$2"));
    // A command that only reads and answers is carried out late instead (`AfterCrash`).
    assert!(
        !said.iter().any(|m| m.body.contains("“!agents”")),
        "{said:?}"
    );
    assert!(answered(), "!agents is answered late");
    assert!(
        store
            .pending_inputs(&AgentId::from("demo"))
            .await
            .unwrap()
            .is_empty()
    );
    // Taken up once: a second start (once the turns are over) finds nothing left.
    until(|| {
        chat.shown("!r")
            .iter()
            .filter(|t| t.as_str() == "ok")
            .count()
            >= 2
    })
    .await;
    gw.clean_up_previous_run().await;
    gw.handle(msg("$next", "@alice:x", after_arrival())).await;
    until(|| agent.prompts().len() >= 3).await;
    assert_eq!(agent.prompt_texts(), vec!["first", "second", "hello $next"]);
}

#[tokio::test]
async fn a_prompt_is_waiting_in_the_store_until_its_turn_begins() {
    let script = Script::Chunks(vec!["ok".into()], Duration::from_millis(300));
    let (gw, mut agents, store, _) =
        gateway_of(&[("demo", script)], false, RoomRules::default()).await;
    let (agent, _) = agents.remove(0);
    assert!(
        gw.accept_invite(&"demo".into(), &"!r".into(), &"@alice:x".into())
            .await
    );
    let now = now_ms() as u64 + 1;
    gw.handle(msg("$1", "@alice:x", now)).await;
    gw.handle(msg("$2", "@alice:x", now)).await;
    wait_for(Duration::from_secs(2), || !agent.prompts().is_empty()).await;
    // The first began (no longer waiting); the second waits behind it, in the store.
    let waiting: Vec<EventId> = store
        .pending_inputs(&AgentId::from("demo"))
        .await
        .unwrap()
        .into_iter()
        .map(|p| p.event_id)
        .collect();
    assert_eq!(waiting, ["$2"]);
    assert_eq!(
        store.unfinished_turns(&"demo".into()).await.unwrap().len(),
        1
    );
}

#[tokio::test]
async fn the_outbox_delivers_in_order_once_the_homeserver_answers() {
    let (gw, _, chat, store) = gateway_with(false).await;
    let item = |room: &str, txn: &str, body: &str| crate::store::OutboxItem {
        id: 0,
        room_id: room.into(),
        thread: None,
        event_id: None,
        txn_id: txn.into(),
        body: body.into(),
        html: None,
        notice: false,
    };
    store
        .outbox_add(
            &AgentId::from("demo"),
            &[
                item("!a", "t1", "a1"),
                item("!a", "t2", "a2"),
                item("!b", "t3", "b1"),
            ],
        )
        .await
        .unwrap();
    // The first try fails in room !a: its later item waits, room !b goes on.
    chat.fail_calls(&[1]);
    gw.deliver_outbox().await;
    assert!(chat.shown("!a").is_empty());
    assert_eq!(chat.shown("!b"), vec!["b1"]);
    gw.deliver_outbox().await;
    assert_eq!(chat.shown("!a"), vec!["a1", "a2"]);
    assert!(
        store
            .outbox(&AgentId::from("demo"))
            .await
            .unwrap()
            .is_empty()
    );
}

#[tokio::test]
async fn messages_past_the_catch_up_bound_are_reported_once_and_never_answered() {
    let (gw, agent, chat) = gateway().await;
    assert!(
        gw.accept_invite(&"demo".into(), &"!r".into(), &"@alice:x".into())
            .await
    );
    let now = now_ms() as u64 + 1;
    let missed: Vec<Inbound> = ["$1", "$2"]
        .iter()
        .map(|id| msg(id, "@alice:x", now))
        .chain([msg("$3", "@mallory:x", now)])
        .collect();
    gw.report_missed(&"demo".into(), &"!r".into(), missed.clone(), false)
        .await;
    gw.report_missed(&"demo".into(), &"!r".into(), missed.clone(), false)
        .await;
    let shown = chat.shown("!r");
    assert_eq!(shown.len(), 1, "reported once: {shown:?}");
    assert!(
        shown[0].contains("2 messages from while I was away"),
        "{shown:?}"
    );
    // Brought again (a stale sync response): not answered.
    for inbound in missed {
        gw.handle(inbound).await;
    }
    // A new message is: the ones brought again before it were not.
    gw.handle(msg("$new", "@alice:x", now + 1)).await;
    until(|| !agent.prompts().is_empty()).await;
    assert_eq!(agent.prompt_texts(), vec!["hello $new"]);
}

#[tokio::test]
async fn messages_without_text_are_not_prompted() {
    let (gw, agent, _) = gateway().await;
    assert!(
        gw.accept_invite(&"demo".into(), &"!r".into(), &"@alice:x".into())
            .await
    );
    for (id, body) in [("$1", ""), ("$2", "  \n\t "), ("$3", "real")] {
        let Inbound::Message(mut m) = msg(id, "@alice:x", now_ms() as u64 + 1) else {
            unreachable!()
        };
        m.body = body.into();
        gw.handle(Inbound::Message(m)).await;
    }
    // The one with text came last: once it is prompted, those before it were not.
    until(|| !agent.prompts().is_empty()).await;
    let prompts = agent.prompt_texts();
    assert_eq!(prompts, vec!["real"]);
}

/// [`gateway_of`], with every agent invited into room `!r` by Alice.
async fn gateway_in_room(
    agents: &[(&str, Script)],
    rerun_interrupted: bool,
    rules: RoomRules,
) -> TestGateway {
    let built = gateway_of(agents, rerun_interrupted, rules).await;
    for (id, _) in agents {
        assert!(
            built
                .0
                .accept_invite(&(*id).into(), &"!r".into(), &"@alice:x".into())
                .await
        );
    }
    built
}

/// The copy of a message that agent `agent` sees (every agent of the room sees one).
fn copy_for(agent: &str, id: &str, body: &str) -> IncomingMessage {
    IncomingMessage {
        agent_id: agent.into(),
        room_id: "!r".into(),
        event_id: id.into(),
        sender: "@alice:x".into(),
        body: body.into(),
        timestamp_ms: now_ms() as u64 + 1,
        ..Default::default()
    }
}

/// Hands every agent of `agents` its copy of the message `edit` makes of a plain one.
async fn to_all(gw: &Arc<Gateway>, agents: &[&str], id: &str, edit: impl Fn(&mut IncomingMessage)) {
    for agent in agents {
        let mut m = copy_for(agent, id, "");
        edit(&mut m);
        gw.handle(Inbound::Message(m)).await;
    }
}

/// A homeserver timestamp after the agent's arrival in the room, which the recovery of a
/// cut turn may set at this very millisecond.
fn after_arrival() -> u64 {
    now_ms() as u64 + 1_000
}

/// Waits until `done` holds, which it must within 10 s (real time: the store runs on its
/// own thread); fails the test, saying where, when it does not.
#[track_caller]
fn until(done: impl Fn() -> bool) -> impl std::future::Future<Output = ()> {
    let at = std::panic::Location::caller();
    async move {
        wait_for(Duration::from_secs(10), &done).await;
        assert!(done(), "what the test waited for at {at} did not happen");
    }
}

fn two_agents() -> [(&'static str, Script); 2] {
    let ok = || Script::Chunks(vec!["ok".into()], Duration::from_millis(5));
    [("claude", ok()), ("codex", ok())]
}
