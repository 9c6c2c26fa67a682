//! The agent's background tasks: a card each, edited as the task reports, stopped with
//! `!stop task [N]` or 🛑 on its card, between turns too.

use super::*;
use crate::model::agent::{TaskReport, TaskState};

/// A channel that answered one prompt, so its session is open; the session's ID.
async fn answered() -> (
    mpsc::Sender<ChannelInput>,
    Arc<FakeAgent>,
    Arc<FakeChat>,
    String,
) {
    let agent = FakeAgent::new(Script::Chunks(vec!["ok".into()], Duration::ZERO));
    let chat = FakeChat::new();
    let (tx, _) = channel(agent.clone(), chat.clone()).await;
    tx.try_send(ChannelInput::Prompt(message("$1", "build it")))
        .unwrap();
    settled(|| agent.prompts().len() == 1).await;
    let (session, _) = agent.prompts()[0].clone();
    (tx, agent, chat, session)
}

/// Waits until `done`, and fails the test if it never is.
async fn settled(done: impl Fn() -> bool) {
    settle_until(&done).await;
    assert!(done(), "never came to pass");
}

fn spawned(id: &str, name: &str, can_stop: bool) -> TaskReport {
    TaskReport {
        id: id.into(),
        name: Some(name.into()),
        description: Some(format!("runs {name}")),
        state: Some(TaskState::Running),
        can_stop: Some(can_stop),
        ..TaskReport::default()
    }
}

/// The event ID and body of the card of the task named `name`.
fn card(chat: &FakeChat, name: &str) -> Option<(String, String)> {
    let posted = chat.log().into_iter().filter_map(|s| match s {
        Sent::Send { event_id, msg, .. } if msg.body.contains(name) => Some(event_id),
        _ => None,
    });
    let id = posted.last()?;
    let shown = chat.messages("!room");
    let log = chat.log();
    let index = (log.iter())
        .filter(|s| matches!(s, Sent::Send { .. }))
        .position(|s| matches!(s, Sent::Send { event_id, .. } if *event_id == id))?;
    Some((id, shown[index].body.clone()))
}

fn stop(tx: &mpsc::Sender<ChannelInput>, id: &str, words: &[&str]) {
    let body = format!("!stop {}", words.join(" "));
    tx.try_send(ChannelInput::Command(
        agent_command("stop", words),
        message(id, &body),
    ))
    .unwrap();
}

#[tokio::test]
async fn a_background_task_gets_one_card_edited_as_it_reports() {
    let (_tx, agent, chat, session) = answered().await;
    agent.report_task(&session, spawned("t1", "npm test", true));
    settled(|| card(&chat, "npm test").is_some()).await;
    let (id, body) = card(&chat, "npm test").unwrap();
    assert!(
        body.starts_with("⚙️ Background task 1: npm test · running"),
        "{body}"
    );
    assert!(body.contains("!stop task 1"), "{body}");
    let done = TaskReport {
        id: "t1".into(),
        state: Some(TaskState::Completed),
        summary: Some("40 passed".into()),
        ..TaskReport::default()
    };
    agent.report_task(&session, done);
    settled(|| card(&chat, "npm test").is_some_and(|(_, b)| b.contains("completed"))).await;
    let (same, body) = card(&chat, "npm test").unwrap();
    assert_eq!(same, id, "the card is edited, not posted again");
    assert!(
        body.contains("40 passed") && !body.contains("!stop"),
        "{body}"
    );
    let posted = (chat.log().into_iter())
        .filter(|s| matches!(s, Sent::Send { msg, .. } if msg.body.contains("Background task")))
        .count();
    assert_eq!(posted, 1);
}

#[tokio::test]
async fn stop_task_stops_the_running_tasks_that_can_be_stopped_or_the_one_named() {
    let (tx, agent, chat, session) = answered().await;
    agent.report_task(&session, spawned("t1", "npm test", true));
    agent.report_task(&session, spawned("m2", "log monitor", false));
    agent.report_task(&session, spawned("t3", "cargo build", true));
    settled(|| card(&chat, "cargo build").is_some()).await;
    // Task 2 cannot be stopped: said so, nothing asked of the agent.
    stop(&tx, "$2", &["task", "2"]);
    settled(|| {
        chat.shown("!room")
            .iter()
            .any(|t| t.contains("no background task 2"))
    })
    .await;
    assert!(agent.stopped_tasks().is_empty());
    stop(&tx, "$3", &["task", "3"]);
    settled(|| agent.stopped_tasks().len() == 1).await;
    assert_eq!(agent.stopped_tasks(), [(session.clone(), "t3".to_string())]);
    // `!stop task` with no number: every one that runs and can be stopped (t3 still runs:
    // the agent has not reported it stopped).
    stop(&tx, "$4", &["task"]);
    settled(|| agent.stopped_tasks().len() == 3).await;
    let ids: Vec<String> = agent.stopped_tasks().into_iter().map(|(_, t)| t).collect();
    assert_eq!(ids, ["t3", "t1", "t3"]);
    // A plain `!stop` between turns stops no task.
    stop(&tx, "$5", &[]);
    settled(|| {
        chat.shown("!room")
            .iter()
            .any(|t| t == strings::NOTHING_TO_STOP)
    })
    .await;
    assert_eq!(agent.stopped_tasks().len(), 3);
}

#[tokio::test]
async fn a_stop_reaction_on_a_tasks_card_stops_that_task() {
    let (tx, agent, chat, session) = answered().await;
    agent.report_task(&session, spawned("t1", "npm test", true));
    agent.report_task(&session, spawned("t2", "cargo build", true));
    settled(|| card(&chat, "cargo build").is_some()).await;
    let (card2, _) = card(&chat, "cargo build").unwrap();
    let react = |key: &str| {
        tx.try_send(ChannelInput::Reaction {
            by: "@alice:x".into(),
            target: card2.as_str().into(),
            key: key.into(),
        })
        .unwrap()
    };
    react("👍");
    react("🛑");
    settled(|| !agent.stopped_tasks().is_empty()).await;
    assert_eq!(agent.stopped_tasks(), [(session, "t2".to_string())]);
}

#[tokio::test]
async fn with_no_task_running_stop_task_says_so() {
    let (tx, agent, chat, _) = answered().await;
    stop(&tx, "$2", &["task"]);
    settled(|| (chat.shown("!room").iter()).any(|t| t == &strings::no_task_to_stop("Demo"))).await;
    assert!(agent.stopped_tasks().is_empty());
}

#[tokio::test]
async fn stop_task_during_a_turn_stops_the_task_and_not_the_turn() {
    let agent = FakeAgent::new(Script::UntilCancelled);
    let chat = FakeChat::new();
    let (tx, _) = channel(agent.clone(), chat.clone()).await;
    tx.try_send(ChannelInput::Prompt(message("$1", "work")))
        .unwrap();
    settled(|| agent.prompts().len() == 1).await;
    let (session, _) = agent.prompts()[0].clone();
    agent.report_task(&session, spawned("t1", "npm test", true));
    settled(|| card(&chat, "npm test").is_some()).await;
    stop(&tx, "$2", &["task"]);
    settled(|| agent.stopped_tasks().len() == 1).await;
    let stopped = |chat: &FakeChat| (chat.shown("!room").iter()).any(|t| t.contains("Stopped"));
    assert!(!stopped(&chat), "{:?}", chat.shown("!room"));
    // The turn goes on until a plain `!stop`.
    stop(&tx, "$3", &[]);
    settled(|| stopped(&chat)).await;
}
