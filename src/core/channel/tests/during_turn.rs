//! Messages written while a turn runs, as the room's `!queue` setting says: steered into
//! the turn, or cutting it.

use super::*;
use crate::model::agent::Steered;
use crate::model::ids::{AgentId, ConversationKey, EventId, RoomId};

/// Admits `id` as a waiting prompt (as the gateway does) and hands it to the channel.
async fn send(store: &Store, tx: &mpsc::Sender<ChannelInput>, id: &str, body: &str) {
    let pending = pending(id, body);
    let key = ConversationKey::new("!room", "demo");
    (store.admit(&EventId::from(id), &key, Some(&pending)).await).unwrap();
    tx.try_send(ChannelInput::Prompt(message(id, body)))
        .unwrap();
}

/// The event IDs of the inputs still waiting in the store.
async fn waiting(store: &Store) -> Vec<String> {
    let pending = store.pending_inputs(&AgentId::from("demo")).await.unwrap();
    pending
        .into_iter()
        .map(|p| p.event_id.to_string())
        .collect()
}

#[tokio::test]
async fn a_steered_message_joins_the_turn_and_is_settled_only_when_the_turn_ends() {
    let agent = FakeAgent::new(Script::AskPermission(1)).with_steering();
    let chat = FakeChat::new();
    let (tx, store) = channel(agent.clone(), chat.clone()).await;
    (store
        .set_room_queue_mode(&RoomId::from("!room"), "steer")
        .await)
        .unwrap();
    send(&store, &tx, "$1", "go").await;
    settle_until(|| poll_of(&chat).is_some()).await;
    send(&store, &tx, "$2", "and the tests").await;
    settle_until(|| !agent.steered().is_empty()).await;
    assert_eq!(agent.steered()[0].1, "and the tests");
    settle_until(|| {
        (chat.log().iter()).any(
            |s| matches!(s, Sent::React { event_id, key, .. } if event_id == "$2" && key == "↪️"),
        )
    })
    .await;
    assert!(
        !(chat.log().iter()).any(|s| matches!(s, Sent::React { key, .. } if key == "⏳")),
        "it never waited"
    );
    // Until the turn that answers it ends, its input waits: a crash now would answer it
    // after the restart.
    assert_eq!(waiting(&store).await, vec!["$2"]);
    let (poll, _) = poll_of(&chat).unwrap();
    react(&tx, "@alice:x", &poll, "✅");
    settle_until(|| !reply_said(&chat).is_empty()).await;
    for _ in 0..50 {
        if waiting(&store).await.is_empty() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(waiting(&store).await.is_empty(), "settled with the turn");
    // The transcript has it after the prompt it joined, before the answer.
    let key = ConversationKey::new("!room", "demo");
    let lines = store.transcript(&key).await.unwrap();
    let bodies: Vec<&str> = lines.iter().map(|l| l.body.as_str()).collect();
    assert_eq!(&bodies[..2], ["go", "and the tests"], "{bodies:?}");
    assert_eq!(agent.prompts().len(), 1, "one turn");
}

#[tokio::test]
async fn a_message_the_agent_could_not_steer_in_waits_its_turn() {
    for answer in [Steered::Failed, Steered::NoTurn] {
        let agent = FakeAgent::new(Script::AskPermission(1)).with_steering_answer(answer);
        let chat = FakeChat::new();
        let (tx, store) = channel(agent.clone(), chat.clone()).await;
        (store
            .set_room_queue_mode(&RoomId::from("!room"), "steer")
            .await)
            .unwrap();
        send(&store, &tx, "$1", "go").await;
        settle_until(|| poll_of(&chat).is_some()).await;
        send(&store, &tx, "$2", "and the tests").await;
        settle_until(|| {
            (chat.log().iter()).any(|s| matches!(s, Sent::React { event_id, key, .. } if event_id == "$2" && key == "⏳"))
        })
        .await;
        assert_eq!(agent.steered().len(), 1, "{answer:?}: it was asked");
        assert!(
            (chat.log().iter()).any(|s| matches!(s, Sent::React { event_id, key, .. } if event_id == "$2" && key == "⏳")),
            "{answer:?}: queued"
        );
        let (poll, _) = poll_of(&chat).unwrap();
        react(&tx, "@alice:x", &poll, "✅");
        settle_until(|| agent.prompts().len() == 2).await;
        assert_eq!(
            agent.prompts()[1].1,
            "and the tests",
            "{answer:?}: answered next"
        );
    }
}

#[tokio::test]
async fn an_interrupting_message_stops_the_turn_and_runs_next_told_of_the_cut() {
    let agent = FakeAgent::new(Script::UntilCancelled);
    let chat = FakeChat::new();
    let (tx, store) = channel(agent.clone(), chat.clone()).await;
    (store
        .set_room_queue_mode(&RoomId::from("!room"), "interrupt")
        .await)
        .unwrap();
    send(&store, &tx, "$1", "long task").await;
    settle_until(|| agent.prompts().len() == 1).await;
    send(&store, &tx, "$2", "do this instead").await;
    settle_until(|| agent.prompts().len() == 2).await;
    let second = &agent.prompts()[1].1;
    assert!(
        second.starts_with(strings::INTERRUPTED_BY_NEXT) && second.ends_with("do this instead"),
        "{second}"
    );
    settle_until(|| chat.shown("!room").iter().any(|t| t.contains("✂️ Cut by"))).await;
    assert!(
        (chat.shown("!room").iter()).any(|t| t.ends_with("✂️ Cut by a new message from @alice:x.")),
        "{:?}",
        chat.shown("!room")
    );
}
