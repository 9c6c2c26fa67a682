//! The queue, stop requests and how a turn ends.

use super::*;
use crate::model::ids::{AgentId, ConversationKey, EventId};

#[tokio::test]
async fn at_shutdown_queued_prompts_stay_waiting_for_the_next_start() {
    let agent = FakeAgent::new(Script::UntilCancelled);
    let chat = FakeChat::new();
    let store = Store::in_memory().await.unwrap();
    let port: Arc<dyn AgentPort> = agent.clone();
    let pool = Pool::new(
        PoolSettings::default(),
        vec![("demo".into(), "Demo".into(), port)],
    );
    let ctx = Arc::new(context("demo", agent.clone(), chat.clone(), &store, pool));
    let (tx, rx) = mpsc::channel(1_024);
    let shutdown = CancellationToken::new();
    let task = tokio::spawn(
        Channel::new(
            ctx,
            ConversationKey::new("!room", "demo"),
            rx,
            shutdown.clone(),
        )
        .run(),
    );
    for (id, body) in [("$1", "first"), ("$2", "second")] {
        let pending = pending(id, body);
        store
            .admit(
                &EventId::from(id),
                &ConversationKey::new("!room", "demo"),
                Some(&pending),
            )
            .await
            .unwrap();
        tx.try_send(ChannelInput::Prompt(message(id, body)))
            .unwrap();
    }
    settle_until(|| chat.log().iter().any(|s| matches!(s, Sent::React { .. }))).await;
    shutdown.cancel();
    tokio::time::timeout(Duration::from_secs(10), task)
        .await
        .unwrap()
        .unwrap();
    let shown = chat.shown("!room");
    assert!(
        shown
            .iter()
            .any(|t| t.contains("1 queued message will be answered when it is back")),
        "{shown:?}"
    );
    let waiting = store.pending_inputs(&AgentId::from("demo")).await.unwrap();
    assert_eq!(waiting.len(), 1);
    assert_eq!(waiting[0].event_id, "$2");
    assert!(waiting[0].queued_reaction.is_some(), "its ⏳ is remembered");
    assert!(
        !chat.log().iter().any(|s| matches!(s, Sent::Redact { .. })),
        "the ⏳ stays: the message still waits"
    );
    assert_eq!(agent.prompt_texts(), vec!["first"]);
}

#[tokio::test]
async fn a_resumed_prompt_keeps_its_mark_until_its_turn_and_a_command_is_settled() {
    let agent = FakeAgent::new(Script::Chunks(vec!["ok".into()], Duration::from_millis(50)));
    let chat = FakeChat::new();
    let (tx, store) = channel(agent.clone(), chat.clone()).await;
    let command = crate::store::PendingInput {
        room_id: "!room".into(),
        thread: None,
        agent_id: "demo".into(),
        event_id: "$c".into(),
        kind: crate::store::PendingKind::Command,
        sender: "@alice:x".into(),
        body: "!logs".into(),
        reply_to: None,
        sent_at: 0,
        queued_reaction: None,
        media: Vec::new(),
    };
    store
        .admit(
            &EventId::from("$c"),
            &ConversationKey::new("!room", "demo"),
            Some(&command),
        )
        .await
        .unwrap();
    tx.try_send(ChannelInput::Resumed {
        message: message("$1", "first"),
        reaction: Some("$old-mark".into()),
    })
    .unwrap();
    tx.try_send(ChannelInput::Command(
        agent_command("logs", &[]),
        message("$c", "!logs"),
    ))
    .unwrap();
    settle_until(|| agent.prompts().len() == 1).await;
    settle_until(|| {
        chat.log()
            .iter()
            .any(|s| matches!(s, Sent::Redact { event_id, .. } if event_id == "$old-mark"))
    })
    .await;
    assert!(
        store
            .pending_inputs(&AgentId::from("demo"))
            .await
            .unwrap()
            .is_empty()
    );
}

#[tokio::test]
async fn prompts_queue_behind_the_running_turn_and_run_in_order() {
    // Behind a turn of 0.2 s the second prompt is answered without a mark; behind one of
    // 1.4 s it is marked ⏳ once the turn has lasted a moment, and the mark is taken back
    // when its own turn starts.
    for (every, marked) in [(100, false), (700, true)] {
        let agent = FakeAgent::new(Script::Chunks(
            vec!["a".into(), "b".into()],
            Duration::from_millis(every),
        ));
        let chat = FakeChat::new();
        let (tx, store) = channel(agent.clone(), chat.clone()).await;
        tx.try_send(ChannelInput::Prompt(message("$1", "first")))
            .unwrap();
        tx.try_send(ChannelInput::Prompt(message("$2", "second")))
            .unwrap();
        settle_until(|| chat.shown("!room") == vec!["ab", "ab"]).await;
        let prompts = agent.prompt_texts();
        assert_eq!(prompts, vec!["first", "second"]);
        assert_eq!(chat.shown("!room"), vec!["ab", "ab"]);
        let log = chat.log();
        let queued = log.iter().any(
            |s| matches!(s, Sent::React { event_id, key, .. } if event_id == "$2" && key == "⏳"),
        );
        let taken_back = log.iter().any(|s| matches!(s, Sent::Redact { .. }));
        assert_eq!(
            (queued, taken_back),
            (marked, marked),
            "every {every} ms: {log:?}"
        );
        let t = store
            .transcript(&ConversationKey::new("!room", "demo"))
            .await
            .unwrap();
        let roles: Vec<&str> = t.iter().map(|e| e.role.as_str()).collect();
        assert_eq!(roles, vec!["user", "agent", "user", "agent"]);
    }
}

#[tokio::test]
async fn stop_cancels_the_turn_and_says_who_stopped_it() {
    let agent = FakeAgent::new(Script::UntilCancelled);
    let chat = FakeChat::new();
    let (tx, store) = channel(agent, chat.clone()).await;
    tx.try_send(ChannelInput::Prompt(message("$1", "go")))
        .unwrap();
    settle_until(|| !chat.shown("!room").is_empty()).await;
    tx.try_send(ChannelInput::Command(
        agent_command("stop", &[]),
        message("$2", "!stop"),
    ))
    .unwrap();
    settle_until(|| chat.shown("!room")[0].contains("Stopped")).await;
    assert_eq!(
        chat.shown("!room"),
        vec!["working\n\n⏹️ Stopped by @alice:x."]
    );
    let t = store
        .transcript(&ConversationKey::new("!room", "demo"))
        .await
        .unwrap();
    assert_eq!(t[1].stop_reason.as_deref(), Some("cancelled"));
}

#[tokio::test]
async fn a_stop_reaction_on_the_reply_cancels_but_one_elsewhere_does_not() {
    let agent = FakeAgent::new(Script::UntilCancelled);
    let chat = FakeChat::new();
    let (tx, _) = channel(agent, chat.clone()).await;
    tx.try_send(ChannelInput::Prompt(message("$1", "go")))
        .unwrap();
    settle_until(|| !chat.shown("!room").is_empty()).await;
    tx.try_send(ChannelInput::Reaction {
        by: "@bob:x".into(),
        target: "$unrelated".into(),
        key: "🛑".into(),
    })
    .unwrap();
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(chat.shown("!room"), vec!["working"]);
    let reply = match &chat.log()[0] {
        Sent::Send { event_id, .. } => event_id.clone(),
        other => panic!("{other:?}"),
    };
    tx.try_send(ChannelInput::Reaction {
        by: "@bob:x".into(),
        target: EventId::new(reply),
        key: "🛑\u{fe0f}".into(),
    })
    .unwrap();
    settle_until(|| chat.shown("!room")[0].contains("Stopped")).await;
    assert_eq!(
        chat.shown("!room"),
        vec!["working\n\n⏹️ Stopped by @bob:x."]
    );
}

#[tokio::test]
async fn an_agent_error_is_shown_as_a_notice() {
    let agent = FakeAgent::new(Script::Error(
        "exceeded maximum tool call iterations (40)".into(),
    ));
    let chat = FakeChat::new();
    let (tx, _) = channel(agent, chat.clone()).await;
    tx.try_send(ChannelInput::Prompt(message("$1", "go")))
        .unwrap();
    settle_until(|| !chat.shown("!room").is_empty()).await;
    let shown = chat.messages("!room");
    assert_eq!(shown.len(), 1);
    assert!(shown[0].notice);
    assert!(
        shown[0]
            .body
            .contains("exceeded maximum tool call iterations"),
        "{}",
        shown[0].body
    );
}

#[tokio::test]
async fn stop_when_idle_says_nothing_runs() {
    let agent = FakeAgent::new(Script::UntilCancelled);
    let chat = FakeChat::new();
    let (tx, _) = channel(agent, chat.clone()).await;
    tx.try_send(ChannelInput::Command(
        agent_command("stop", &[]),
        message("$1", "!stop"),
    ))
    .unwrap();
    settle_until(|| !chat.shown("!room").is_empty()).await;
    assert_eq!(chat.shown("!room"), vec![strings::NOTHING_TO_STOP]);
}

#[tokio::test]
async fn a_turn_waiting_for_a_slot_says_so_keeps_listening_and_can_be_given_up() {
    let store = Store::in_memory().await.unwrap();
    let busy = FakeAgent::new(Script::UntilCancelled);
    let waiting = FakeAgent::new(Script::Chunks(vec!["ok".into()], Duration::ZERO));
    waiting.set_running(false);
    let ports: Vec<(AgentId, String, Arc<dyn AgentPort>)> = vec![
        ("busy".into(), "busy".into(), busy.clone()),
        ("waiting".into(), "waiting".into(), waiting.clone()),
    ];
    let settings = PoolSettings {
        max_running: Some(1),
        idle_stop: None,
    };
    let pool = Pool::new(settings, ports);
    let (busy_chat, chat) = (FakeChat::new(), FakeChat::new());
    let start = |id: &str, agent: &Arc<FakeAgent>, chat: &Arc<FakeChat>| {
        let ctx = context(id, agent.clone(), chat.clone(), &store, pool.clone());
        let (tx, rx) = mpsc::channel(1_024);
        let channel = Channel::new(
            Arc::new(ctx),
            ConversationKey::new("!room", id),
            rx,
            CancellationToken::new(),
        );
        tokio::spawn(channel.run());
        tx
    };
    let busy_tx = start("busy", &busy, &busy_chat);
    let tx = start("waiting", &waiting, &chat);
    busy_tx
        .try_send(ChannelInput::Prompt(message("$1", "work")))
        .unwrap();
    settle_until(|| busy.prompts().len() == 1).await;
    tx.try_send(ChannelInput::Prompt(message("$2", "first")))
        .unwrap();
    settle_until(|| !chat.shown("!room").is_empty()).await;
    assert!(
        chat.shown("!room")[0]
            .contains("waits for a free slot: at most 1 agent runs at once, and busy is busy"),
        "{:?}",
        chat.shown("!room")
    );
    // Still listening: a second prompt queues (⏳), a report comes back.
    tx.try_send(ChannelInput::Prompt(message("$3", "second")))
        .unwrap();
    let report = report(&tx).await;
    assert_eq!(report.queued, 1);
    assert!(report.waiting && !report.running, "{report:?}");
    // `!stop` gives the waiting prompt up; the queued one waits on.
    tx.try_send(ChannelInput::Command(
        agent_command("stop", &[]),
        message("$4", "!stop"),
    ))
    .unwrap();
    settle_until(|| chat.shown("!room").len() >= 3).await;
    assert!(
        chat.shown("!room")
            .iter()
            .any(|t| t.contains("before it started")),
        "{:?}",
        chat.shown("!room")
    );
    assert!(
        waiting.prompts().is_empty(),
        "nothing ran while the slot was taken"
    );
    // Once the busy turn ends, the queued prompt runs.
    busy_tx
        .try_send(ChannelInput::Command(
            agent_command("stop", &[]),
            message("$5", "!stop"),
        ))
        .unwrap();
    settle_until(|| waiting.prompts().len() == 1).await;
    assert_eq!(waiting.prompts()[0].1, "second");
}

#[tokio::test]
async fn a_quiet_turn_gets_one_note_saying_how_to_stop_it() {
    let agent = FakeAgent::new(Script::UntilCancelled);
    let chat = FakeChat::new();
    let (tx, _) = channel_with(
        agent.clone(),
        chat.clone(),
        Duration::from_secs(60),
        Some(Duration::from_millis(300)),
    )
    .await;
    tx.try_send(ChannelInput::Prompt(message("$1", "go")))
        .unwrap();
    settle_until(|| chat.shown("!room").iter().any(|b| b.starts_with("⏳"))).await;
    // One note per quiet spell, however long it lasts.
    tokio::time::sleep(Duration::from_millis(900)).await;
    let notes: Vec<String> = chat
        .shown("!room")
        .into_iter()
        .filter(|b| b.starts_with("⏳"))
        .collect();
    assert_eq!(notes.len(), 1, "{notes:?}");
    assert!(
        notes[0].contains("has shown nothing for 0 s"),
        "{}",
        notes[0]
    );
    assert!(notes[0].contains("!stop"), "{}", notes[0]);
    // The turn goes on: the note does not stop it.
    tx.try_send(ChannelInput::Command(
        agent_command("stop", &[]),
        message("$2", "!stop"),
    ))
    .unwrap();
    settle_until(|| chat.shown("!room").iter().any(|b| b.contains("Stopped by"))).await;
}

#[tokio::test]
async fn a_rerun_prompt_is_answered_without_being_recorded_twice() {
    let agent = FakeAgent::new(Script::Chunks(vec!["ok".into()], Duration::from_millis(10)));
    let chat = FakeChat::new();
    let (tx, store) = channel(agent.clone(), chat.clone()).await;
    earlier_prompt(&store, "$1", "again").await;
    tx.try_send(ChannelInput::Rerun(message("$1", "again")))
        .unwrap();
    settle_until(|| chat.shown("!room") == vec!["ok"]).await;
    let prompts = agent.prompts();
    assert_eq!(prompts.len(), 1);
    assert_eq!(
        prompts[0].1, "again",
        "the prompt itself is not re-injected before it"
    );
    let users = store
        .transcript(&ConversationKey::new("!room", "demo"))
        .await
        .unwrap()
        .into_iter()
        .filter(|e| e.role == "user")
        .count();
    assert_eq!(users, 1);
}

#[tokio::test]
async fn an_answer_that_comes_at_once_sends_no_typing_notice() {
    let agent = FakeAgent::new(Script::Chunks(vec!["at once".into()], Duration::ZERO));
    let chat = FakeChat::new();
    let (tx, _store) = channel(agent.clone(), chat.clone()).await;
    tx.try_send(ChannelInput::Prompt(message("$1", "hello")))
        .unwrap();
    settle_until(|| chat.shown("!room").iter().any(|t| t == "at once")).await;
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert_eq!(chat.typing_notices(), [], "no notice on, none off");
}

#[tokio::test]
async fn a_slow_answer_shows_typing_without_waiting_for_it_then_takes_it_off() {
    let agent = FakeAgent::new(Script::Chunks(vec!["late".into()], Duration::from_secs(1)));
    let chat = FakeChat::new();
    // A homeserver that takes its time over typing notices.
    chat.set_typing_delay(Duration::from_secs(3));
    let (tx, _store) = channel(agent.clone(), chat.clone()).await;
    let started = tokio::time::Instant::now();
    tx.try_send(ChannelInput::Prompt(message("$1", "hello")))
        .unwrap();
    settle_until(|| chat.shown("!room").iter().any(|t| t == "late")).await;
    assert!(
        started.elapsed() < Duration::from_millis(2500),
        "the answer was posted {:?} after the prompt: it waited for the typing notice",
        started.elapsed()
    );
    settle_until(|| chat.typing_notices().len() == 2).await;
    assert_eq!(
        chat.typing_notices(),
        [("!room".to_owned(), true), ("!room".to_owned(), false)],
        "on, then off"
    );
}

#[tokio::test]
async fn a_reply_streaming_from_the_start_needs_no_typing_notice() {
    // (how long each message takes to go in, why no notice is wanted)
    let cases = [
        (
            Duration::ZERO,
            "the streaming reply was the sign the agent works",
        ),
        // A saturated homeserver (measured: 4–6 s a message with 200 rooms at once).
        (
            Duration::from_millis(1500),
            "the reply was on its way: a notice beside it is a request for nothing",
        ),
    ];
    for (send_delay, why) in cases {
        let chunks = (0..8).map(|i| format!("part {i} ")).collect();
        let agent = FakeAgent::new(Script::Chunks(chunks, Duration::from_millis(150)));
        let chat = FakeChat::new();
        chat.set_send_delay(send_delay);
        let (tx, _store) = channel(agent.clone(), chat.clone()).await;
        tx.try_send(ChannelInput::Prompt(message("$1", "hello")))
            .unwrap();
        settle_until(|| chat.shown("!room").iter().any(|t| t.ends_with("part 7"))).await;
        tokio::time::sleep(Duration::from_millis(500)).await;
        assert_eq!(chat.typing_notices(), [], "{why}");
    }
}

#[tokio::test]
async fn the_typing_notice_goes_once_the_reply_shows_and_is_not_renewed() {
    // The first text comes after 1 s, then the reply streams for 3 s more.
    let chunks = (0..4).map(|i| format!("part {i} ")).collect();
    let agent = FakeAgent::new(Script::Chunks(chunks, Duration::from_secs(1)));
    let chat = FakeChat::new();
    let (tx, _store) = channel(agent.clone(), chat.clone()).await;
    tx.try_send(ChannelInput::Prompt(message("$1", "hello")))
        .unwrap();
    settle_until(|| !chat.shown("!room").is_empty()).await;
    settle_until(|| chat.typing_notices().len() == 2).await;
    let on_off = [("!room".to_owned(), true), ("!room".to_owned(), false)];
    assert_eq!(
        chat.typing_notices(),
        on_off,
        "on, then off as the reply shows"
    );
    assert!(
        !chat.shown("!room").iter().any(|t| t.ends_with("part 3")),
        "taken off while the reply still streams"
    );
    settle_until(|| chat.shown("!room").iter().any(|t| t.ends_with("part 3"))).await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(
        chat.typing_notices(),
        on_off,
        "not renewed, nor taken off again"
    );
}

/// Message `id` as the gateway admitted it: waiting in the store.

#[tokio::test]
async fn past_its_limit_a_waiting_message_is_refused_with_a_notice_and_settled() {
    let agent = FakeAgent::new(Script::UntilCancelled);
    let chat = FakeChat::new();
    let (tx, store) =
        channel_adjusted(agent.clone(), chat.clone(), |ctx| ctx.max_waiting = 2).await;
    let conversation = ConversationKey::new("!room", "demo");
    for (id, body) in [
        ("$1", "work"),
        ("$2", "a"),
        ("$3", "b"),
        ("$4", "c"),
        ("$5", "d"),
    ] {
        store
            .admit(&EventId::from(id), &conversation, Some(&pending(id, body)))
            .await
            .unwrap();
        tx.try_send(ChannelInput::Prompt(message(id, body)))
            .unwrap();
        if id == "$1" {
            settle_until(|| agent.prompts().len() == 1).await;
        }
    }
    let refused = |chat: &FakeChat| {
        chat.shown("!room")
            .iter()
            .filter(|t| {
                t.contains("2 messages wait for Demo here already, so this one was not taken")
            })
            .count()
    };
    settle_until(|| refused(&chat) == 2).await;
    // The two past the limit wait no more (nothing runs them after a restart); the two
    // within it do, marked ⏳.
    let waiting: Vec<String> = (store.pending_inputs(&AgentId::from("demo")).await.unwrap())
        .into_iter()
        .map(|p| p.event_id.to_string())
        .collect();
    assert_eq!(
        waiting,
        vec!["$2", "$3"],
        "the running one is in the crash journal"
    );
    // Marked once the turn ahead has lasted a moment.
    let marks = |chat: &FakeChat| {
        (chat.log().iter())
            .filter(|s| matches!(s, Sent::React { .. }))
            .count()
    };
    settle_until(|| marks(&chat) == 2).await;
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert_eq!(marks(&chat), 2, "{:?}", chat.log());
}

/// The reactions the agent put on `event`, in order.
fn reactions_on(chat: &FakeChat, event: &str) -> Vec<String> {
    (chat.log().into_iter())
        .filter_map(|s| match s {
            Sent::React { event_id, key, .. } if event_id == event => Some(key),
            _ => None,
        })
        .collect()
}

#[tokio::test]
async fn with_status_reactions_on_a_prompt_is_marked_taken_then_answered_or_stopped() {
    let agent = FakeAgent::new(Script::Chunks(vec!["hi".into()], Duration::from_millis(50)));
    let chat = FakeChat::new();
    let (tx, store) = channel(agent.clone(), chat.clone()).await;
    let room = crate::model::ids::RoomId::from("!room");
    (store.set_room_status_reactions(&room, true).await).unwrap();
    tx.try_send(ChannelInput::Prompt(message("$1", "hello")))
        .unwrap();
    settle_until(|| reactions_on(&chat, "$1").len() == 2).await;
    assert_eq!(reactions_on(&chat, "$1"), vec!["👀", "✅"]);
    settle_until(|| (chat.log().iter()).any(|s| matches!(s, Sent::Redact { .. }))).await;
    assert!(
        (chat.log().iter())
            .any(|s| matches!(s, Sent::Redact { event_id, .. } if event_id == "$react-$1")),
        "the 👀 is taken back: {:?}",
        chat.log()
    );
    // Off: nothing but the answer.
    (store.set_room_status_reactions(&room, false).await).unwrap();
    tx.try_send(ChannelInput::Prompt(message("$2", "again")))
        .unwrap();
    settle_until(|| chat.shown("!room").len() == 2).await;
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert!(reactions_on(&chat, "$2").is_empty(), "{:?}", chat.log());
}

#[tokio::test]
async fn a_stopped_or_failed_turn_marks_its_prompt_so() {
    let agent = FakeAgent::new(Script::UntilCancelled);
    let chat = FakeChat::new();
    let (tx, store) = channel(agent.clone(), chat.clone()).await;
    let room = crate::model::ids::RoomId::from("!room");
    (store.set_room_status_reactions(&room, true).await).unwrap();
    tx.try_send(ChannelInput::Prompt(message("$1", "long")))
        .unwrap();
    settle_until(|| reactions_on(&chat, "$1") == ["👀"]).await;
    tx.try_send(ChannelInput::Command(
        agent_command("stop", &[]),
        message("$s", "!stop"),
    ))
    .unwrap();
    settle_until(|| reactions_on(&chat, "$1").len() == 2).await;
    assert_eq!(reactions_on(&chat, "$1"), vec!["👀", "🛑"]);

    let failing = FakeAgent::new(Script::Error("boom".into()));
    let chat = FakeChat::new();
    let (tx, store) = channel(failing, chat.clone()).await;
    (store.set_room_status_reactions(&room, true).await).unwrap();
    tx.try_send(ChannelInput::Prompt(message("$1", "go")))
        .unwrap();
    settle_until(|| reactions_on(&chat, "$1").len() == 2).await;
    assert_eq!(reactions_on(&chat, "$1"), vec!["👀", "❌"]);
}

#[tokio::test]
async fn an_answer_that_comes_right_behind_its_text_is_posted_once_finished() {
    // The answer a moment behind its only text: taken before the text is shown, the reply
    // is sent once, without the live marker and the edit that takes it off. Twenty turns,
    // so that a race lost half the time shows.
    let agent = FakeAgent::new(Script::Says("done".into()));
    let chat = FakeChat::new();
    let (tx, _store) = channel(agent.clone(), chat.clone()).await;
    for n in 0..20 {
        tx.try_send(ChannelInput::Prompt(message(&format!("${n}"), "go")))
            .unwrap();
    }
    settle_until(|| chat.shown("!room").len() == 20).await;
    let log = chat.log();
    let sends = (log.iter())
        .filter(|s| matches!(s, Sent::Send { .. }))
        .count();
    let edits = (log.iter())
        .filter(|s| matches!(s, Sent::Edit { .. }))
        .count();
    assert_eq!((sends, edits), (20, 0), "{log:?}");
}

/// A channel whose agent's process waits for a place (one of `max_rooms`) for `after`
/// before it starts, prompted once.
async fn prompted_waiting_for_a_place(
    max_rooms: usize,
    after: Duration,
) -> (Arc<FakeAgent>, Arc<FakeChat>, mpsc::Sender<ChannelInput>) {
    let agent = FakeAgent::new(Script::Says("answered".into())).waiting_for_place(max_rooms, after);
    let chat = FakeChat::new();
    let (tx, _store) = channel(agent.clone(), chat.clone()).await;
    tx.try_send(ChannelInput::Prompt(message("$1", "hello")))
        .unwrap();
    (agent, chat, tx)
}

#[tokio::test]
async fn a_turn_whose_room_process_waits_for_a_place_tells_the_room_then_runs() {
    let (agent, chat, _tx) = prompted_waiting_for_a_place(2, Duration::from_millis(50)).await;
    settle_until(|| chat.shown("!room").iter().any(|t| t.contains("answered"))).await;
    let shown = chat.shown("!room");
    let told = (shown.iter()).position(|t| {
        t.contains("Demo waits for a free slot: it runs at most 2 rooms' processes at once")
    });
    let answered = shown.iter().position(|t| t.contains("answered"));
    assert!(told.is_some() && told < answered, "told first: {shown:?}");
    assert_eq!(agent.prompts().len(), 1, "the turn ran once its place came");
}

#[tokio::test]
async fn stop_gives_up_a_wait_for_a_place_and_the_turn_never_runs() {
    let (agent, chat, tx) = prompted_waiting_for_a_place(1, Duration::from_secs(3600)).await;
    settle_until(|| (chat.shown("!room").iter()).any(|t| t.contains("waits for a free slot")))
        .await;
    // Still listening while it waits: a report says so.
    let report = report(&tx).await;
    assert!(report.waiting && !report.running, "{report:?}");
    tx.try_send(ChannelInput::Command(
        agent_command("stop", &[]),
        message("$2", "!stop"),
    ))
    .unwrap();
    settle_until(|| (chat.shown("!room").iter()).any(|t| t.contains("before it started"))).await;
    assert_eq!(agent.places_given_up(), 1, "the wait itself was given up");
    assert!(agent.prompts().is_empty(), "the turn never ran");
}
