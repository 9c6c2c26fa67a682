//! Unit tests of the channel, with a fake agent and a fake chat.

mod approval_options;
mod during_turn;
mod media;
mod modes;
mod native_polls;
mod polls;
mod queue;
mod sessions;
mod settings;
mod tasks;

use super::*;
use crate::core::fakes::ask_code_and_model;
use crate::model::ids::ConversationKey;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::{mpsc, oneshot};
use tokio_util::sync::CancellationToken;

use crate::core::access::AccessList;
use crate::core::agent::AgentPort;
use crate::core::command::Command;
use crate::core::continuity;
use crate::core::fakes::{FakeAgent, FakeChat, Script, Sent};
use crate::core::inbound::IncomingMessage;
use crate::core::poll::PermissionSettings;
use crate::core::pool::Pool;
use crate::core::pool::PoolSettings;
use crate::core::reloadable::Reloadable;
use crate::model::agent::Reopen;
use crate::render::strings;
use crate::store::{Role, Store, TranscriptLine};

/// The command for one agent named `name`, with `words` after it.
fn agent_command(name: &str, words: &[&str]) -> Command {
    let entry = (super::commands::ALL.iter())
        .find(|c| c.spec.name == name)
        .expect("a command for one agent");
    Command::new(&entry.spec, words)
}

async fn channel(
    agent: Arc<FakeAgent>,
    chat: Arc<FakeChat>,
) -> (mpsc::Sender<ChannelInput>, Store) {
    channel_with_timeout(agent, chat, Duration::from_secs(60)).await
}

async fn channel_with_timeout(
    agent: Arc<FakeAgent>,
    chat: Arc<FakeChat>,
    timeout: Duration,
) -> (mpsc::Sender<ChannelInput>, Store) {
    channel_with(agent, chat, timeout, None).await
}

async fn channel_with(
    agent: Arc<FakeAgent>,
    chat: Arc<FakeChat>,
    timeout: Duration,
    quiet_note: Option<Duration>,
) -> (mpsc::Sender<ChannelInput>, Store) {
    channel_adjusted(agent, chat, |ctx| {
        ctx.permissions = Reloadable::new(PermissionSettings {
            timeout,
            propose_stop_after: 2,
            ..PermissionSettings::default()
        });
        ctx.quiet_note = quiet_note;
    })
    .await
}

/// A running channel of the demo agent in `!room`, its context changed by `adjust`.
async fn channel_adjusted(
    agent: Arc<FakeAgent>,
    chat: Arc<FakeChat>,
    adjust: impl FnOnce(&mut AgentContext),
) -> (mpsc::Sender<ChannelInput>, Store) {
    let store = Store::in_memory().await.unwrap();
    let pool_port: Arc<dyn AgentPort> = agent.clone();
    let pool = Pool::new(
        PoolSettings::default(),
        vec![("demo".into(), "Demo".into(), pool_port)],
    );
    let mut ctx = context("demo", agent, chat, &store, pool);
    adjust(&mut ctx);
    let (tx, rx) = mpsc::channel(1_024);
    let channel = Channel::new(
        Arc::new(ctx),
        ConversationKey::new("!room", "demo"),
        rx,
        CancellationToken::new(),
    );
    tokio::spawn(channel.run());
    (tx, store)
}

/// The context of agent `id` (`@id:x`, shown as `Demo` for `demo`, else the ID).
fn context(
    id: &str,
    agent: Arc<FakeAgent>,
    chat: Arc<FakeChat>,
    store: &Store,
    pool: Arc<Pool>,
) -> AgentContext {
    AgentContext {
        agent_users: vec!["@demo:x".into()],
        permissions: Reloadable::new(PermissionSettings {
            timeout: Duration::from_secs(60),
            propose_stop_after: 2,
            ..PermissionSettings::default()
        }),
        ..AgentContext::for_tests(id, agent, chat, store, pool)
    }
}

/// What the channel tells `!status` now (answered within 2 s, even while a turn waits).
async fn report(tx: &mpsc::Sender<ChannelInput>) -> ChannelReport {
    let (reply, report) = oneshot::channel();
    tx.try_send(ChannelInput::Report(reply)).unwrap();
    tokio::time::timeout(Duration::from_secs(2), report)
        .await
        .expect("answered while waiting")
        .unwrap()
}

/// Puts Alice's prompt `id` in the room's transcript, as an earlier run recorded it.
async fn earlier_prompt(store: &Store, id: &str, body: &str) {
    store
        .append_transcript(
            &ConversationKey::new("!room", "demo"),
            TranscriptLine {
                role: Role::User,
                sender: &"@alice:x".into(),
                event_id: Some(&EventId::from(id)),
                body,
                stop_reason: None,
            },
        )
        .await
        .unwrap();
}

fn message(id: &str, body: &str) -> IncomingMessage {
    IncomingMessage {
        agent_id: "demo".into(),
        room_id: "!room".into(),
        event_id: id.into(),
        sender: "@alice:x".into(),
        body: body.into(),
        timestamp_ms: crate::store::now_ms() as u64,
        reply_to: None,
        ..Default::default()
    }
}

/// Prompt `id` (`body`, by Alice) as the store keeps it while it waits.
pub(super) fn pending(id: &str, body: &str) -> crate::store::PendingInput {
    crate::store::PendingInput {
        room_id: "!room".into(),
        thread: None,
        agent_id: "demo".into(),
        event_id: id.into(),
        kind: crate::store::PendingKind::Prompt,
        sender: "@alice:x".into(),
        body: body.into(),
        reply_to: None,
        sent_at: 0,
        queued_reaction: None,
        media: Vec::new(),
    }
}

/// Waits until `done` holds, or 10 s.
async fn settle_until(done: impl Fn() -> bool) {
    crate::core::fakes::wait_for(Duration::from_secs(10), done).await;
    // Let the turn finish its bookkeeping.
    tokio::time::sleep(Duration::from_millis(100)).await;
}

/// The event ID and current body of the poll message in `room`.
fn poll_of(chat: &FakeChat) -> Option<(String, String)> {
    let shown = chat.messages("!room");
    let log = chat.log();
    // The poll is found by what it was posted as: once settled, it may have become its
    // call's card.
    let poll = log.iter().find_map(|s| match s {
        Sent::Send { event_id, msg, .. } if msg.body.starts_with("🔐") => Some(event_id.clone()),
        _ => None,
    })?;
    let ids = log.into_iter().filter_map(|s| match s {
        Sent::Send { event_id, .. } => Some(event_id),
        _ => None,
    });
    ids.zip(shown)
        .find(|(id, _)| *id == poll)
        .map(|(id, m)| (id, m.body))
}

async fn start_poll(timeout: Duration) -> (mpsc::Sender<ChannelInput>, Arc<FakeChat>, String) {
    start_polls(timeout, 1).await
}

async fn start_polls(
    timeout: Duration,
    times: u32,
) -> (mpsc::Sender<ChannelInput>, Arc<FakeChat>, String) {
    let agent = FakeAgent::new(Script::AskPermission(times));
    let chat = FakeChat::new();
    let (tx, _) = channel_with_timeout(agent, chat.clone(), timeout).await;
    tx.try_send(ChannelInput::Prompt(message("$1", "go")))
        .unwrap();
    settle_until(|| poll_of(&chat).is_some()).await;
    let (poll, _) = poll_of(&chat).expect("a poll was posted");
    (tx, chat, poll)
}

fn react(tx: &mpsc::Sender<ChannelInput>, by: &str, target: &str, key: &str) {
    tx.try_send(ChannelInput::Reaction {
        by: by.into(),
        target: target.into(),
        key: key.into(),
    })
    .unwrap();
}

/// Waits until the channel has handled every input sent to it so far. It takes an input
/// in only once it has handled the one before, so once a harmless one sent after them (a
/// stranger's reaction to no event) has been taken in, the queue is empty and they are
/// all handled: what they changed, they have changed.
async fn handled(tx: &mpsc::Sender<ChannelInput>) {
    react(tx, "@nobody:x", "$no-such-event", "👀");
    crate::core::fakes::wait_for(Duration::from_secs(10), || {
        tx.capacity() == tx.max_capacity()
    })
    .await;
    assert_eq!(
        tx.capacity(),
        tx.max_capacity(),
        "the channel took its inputs in"
    );
}

fn reply_said(chat: &FakeChat) -> Vec<String> {
    chat.shown("!room")
        .into_iter()
        .filter(|b| b.starts_with("permission:"))
        .collect()
}

/// How many of the agent's own reactions on `poll` were withdrawn.
fn withdrawn(chat: &FakeChat, poll: &str) -> usize {
    let reaction = format!("$react-{poll}");
    (chat.log().into_iter())
        .filter(|s| matches!(s, Sent::Redact { event_id, .. } if *event_id == reaction))
        .count()
}
