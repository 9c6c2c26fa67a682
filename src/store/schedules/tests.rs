//! The schedules' store, tested on SQLite: claiming runs, keeping them across restarts, owners' limits.

use std::time::Duration;

use super::*;
use crate::model::ids::ConversationKey;
use crate::store::{Role, TranscriptLine};

fn hourly(next_run: i64) -> NewSchedule {
    NewSchedule {
        room_id: "!r".into(),
        agent_id: "a".into(),
        owner: "@alice:x".into(),
        when: When::Every(Duration::from_secs(3600)),
        said: "1h".into(),
        time_zone: "UTC".into(),
        prompt: "run the tests".into(),
        thread_per_run: true,
        skip_missed: false,
        next_run,
        source: None,
    }
}

#[tokio::test]
async fn a_due_run_is_taken_once_and_the_schedule_moves_on() {
    let store = Store::in_memory().await.unwrap();
    let id = store.add_schedule(&hourly(1_000)).await.unwrap();
    assert!(store.due_schedules(999).await.unwrap().is_empty());
    let due = store.due_schedules(1_000).await.unwrap();
    assert_eq!(
        (due.len(), due[0].set.prompt.as_str()),
        (1, "run the tests")
    );
    let run = store
        .take_run(id, 1_000, Some(3_601_000), None)
        .await
        .unwrap();
    assert_eq!(run.as_ref().map(|r| r.number), Some(1));
    // Taken again (two ticks, or a restart racing the first): nothing.
    assert_eq!(
        store
            .take_run(id, 1_000, Some(3_601_000), None)
            .await
            .unwrap(),
        None
    );
    assert!(store.due_schedules(3_600_999).await.unwrap().is_empty());
    assert_eq!(store.next_schedule_run().await.unwrap(), Some(3_601_000));
    assert!(store.schedule_is_running(id).await.unwrap());
    let run = run.unwrap();
    let open = store.open_runs().await.unwrap();
    assert_eq!(open.len(), 1);
    assert_eq!(open[0].1, run);
    store.set_run_event(&run, &"$run1".into()).await.unwrap();
    store.end_run(&run, "answered").await.unwrap();
    assert!(store.open_runs().await.unwrap().is_empty());
    let listed = store.schedules_in(&"!r".into()).await.unwrap();
    assert_eq!(listed[0].runs, 1);
    assert_eq!(listed[0].last_outcome.as_deref(), Some("answered"));
    // A run not to be run (skipped) is ended as it is taken.
    let skipped = store
        .take_run(id, 3_601_000, Some(7_201_000), Some("skipped"))
        .await;
    assert_eq!(skipped.unwrap().map(|r| r.number), Some(2));
    assert!(!store.schedule_is_running(id).await.unwrap());
}

#[tokio::test]
async fn removed_and_stopped_schedules_do_not_run() {
    let store = Store::in_memory().await.unwrap();
    let removed = store.add_schedule(&hourly(1_000)).await.unwrap();
    let stopped = store.add_schedule(&hourly(1_000)).await.unwrap();
    assert!(
        !store
            .remove_schedule(&"!other".into(), removed)
            .await
            .unwrap()
    );
    assert!(store.remove_schedule(&"!r".into(), removed).await.unwrap());
    assert!(!store.remove_schedule(&"!r".into(), removed).await.unwrap());
    store
        .stop_schedule(stopped, "alice may no longer prompt")
        .await
        .unwrap();
    assert!(store.due_schedules(i64::MAX).await.unwrap().is_empty());
    assert_eq!(
        store.take_run(stopped, 1_000, None, None).await.unwrap(),
        None
    );
    let listed = store.schedules_in(&"!r".into()).await.unwrap();
    assert_eq!(listed.len(), 1);
    assert_eq!(
        listed[0].stopped.as_deref(),
        Some("alice may no longer prompt")
    );
}

#[tokio::test]
async fn a_runs_progress_is_read_from_the_inbox_and_the_transcript() {
    let store = Store::in_memory().await.unwrap();
    let key = ConversationKey::new("!r", "a").in_thread(Some("$run".into()));
    let (agent, event): (AgentId, EventId) = ("a".into(), "$run".into());
    let progress = || store.run_progress(&agent, &event);
    assert_eq!(progress().await.unwrap(), RunProgress::NotAdmitted);
    let pending = crate::store::PendingInput {
        room_id: "!r".into(),
        thread: Some("$run".into()),
        agent_id: "a".into(),
        event_id: "$run".into(),
        kind: crate::store::PendingKind::Prompt,
        sender: "@alice:x".into(),
        body: "run the tests".into(),
        reply_to: None,
        sent_at: 1,
        queued_reaction: None,
        media: vec![],
    };
    assert!(store.admit(&event, &key, Some(&pending)).await.unwrap());
    assert_eq!(progress().await.unwrap(), RunProgress::Going);
    store.begin_turn(&key, &event, false).await.unwrap();
    let prompt = TranscriptLine {
        role: Role::User,
        sender: &"@alice:x".into(),
        event_id: Some(&event),
        body: "run the tests",
        stop_reason: None,
    };
    store.append_transcript(&key, prompt).await.unwrap();
    assert_eq!(progress().await.unwrap(), RunProgress::Going);
    let reply = TranscriptLine {
        role: Role::Agent,
        sender: &"@a:x".into(),
        event_id: Some(&"$answer".into()),
        body: "all green",
        stop_reason: Some("end_turn"),
    };
    store.note_refusals(&key, 2).await.unwrap();
    store.end_turn(&key, Some(reply), None, &[]).await.unwrap();
    let ended = TurnOutcome {
        stop_reason: Some("end_turn".into()),
        refused: 2,
    };
    assert_eq!(progress().await.unwrap(), RunProgress::Ended(ended));
}

#[tokio::test]
async fn a_webhook_delivery_is_stored_once_as_a_one_off_not_listed_with_the_rooms_schedules() {
    let store = Store::in_memory().await.unwrap();
    let delivery = NewSchedule {
        when: When::Once(5_000),
        source: Some("ci".into()),
        ..hourly(5_000)
    };
    let id = (store.add_delivery("ci", &["d-1", "signed:a"], &delivery)).await;
    assert!(id.unwrap().is_some());
    for (keys, what) in [
        (["d-1", "signed:b"], "the same ID"),
        (
            ["d-2", "signed:a"],
            "the same signed request under another ID",
        ),
    ] {
        let replay = store.add_delivery("ci", &keys, &delivery).await.unwrap();
        assert_eq!(replay, None, "a replay: {what}");
    }
    // A refused replay leaves nothing of its own: its new key is still free.
    let other = store
        .add_delivery("ci", &["d-3", "signed:b"], &delivery)
        .await;
    assert!(other.unwrap().is_some());
    assert!(
        store
            .add_delivery("other", &["d-1", "signed:a"], &delivery)
            .await
            .unwrap()
            .is_some()
    );
    assert!(store.schedules_in(&"!r".into()).await.unwrap().is_empty());
    let due = store.due_schedules(5_000).await.unwrap();
    assert_eq!(due.len(), 3);
    assert_eq!(due[0].set.source.as_deref(), Some("ci"));
}
