//! Which messages the gateway takes, and what happens around one it takes: its read
//! receipt.

use super::*;
use crate::core::fakes::Sent;

#[tokio::test]
async fn an_answer_that_comes_at_once_is_posted_before_the_read_receipt() {
    let (gw, _agent, chat) = gateway().await;
    assert!(
        gw.accept_invite(&"demo".into(), &"!r".into(), &"@alice:x".into())
            .await
    );
    gw.handle(msg("$1", "@alice:x", now_ms() as u64 + 1)).await;
    wait_for(Duration::from_secs(5), || {
        chat.log().iter().any(|s| matches!(s, Sent::Read { .. }))
    })
    .await;
    let log = chat.log();
    let read = log.iter().position(|s| matches!(s, Sent::Read { .. }));
    let answer = log.iter().position(|s| matches!(s, Sent::Send { .. }));
    assert!(read.is_some(), "the message is still marked read: {log:?}");
    assert!(answer.is_some(), "the answer was posted: {log:?}");
    assert!(answer < read, "the answer first, then the receipt: {log:?}");
}

#[tokio::test]
async fn only_new_messages_from_allowed_humans_become_prompts_once() {
    let (gw, agent, _) = gateway().await;
    assert!(
        gw.accept_invite(&"demo".into(), &"!r".into(), &"@alice:x".into())
            .await
    );
    let now = now_ms() as u64;
    gw.handle(msg("$old", "@alice:x", now - 60_000)).await;
    gw.handle(msg("$stranger", "@mallory:x", now + 1)).await;
    gw.handle(msg("$self", "@demo:x", now + 1)).await;
    gw.handle(msg("$ok", "@alice:x", now + 1)).await;
    gw.handle(msg("$ok", "@alice:x", now + 1)).await;
    // A later message is prompted after whatever of those was.
    gw.handle(msg("$later", "@alice:x", now + 2)).await;
    until(|| agent.prompt_texts().iter().any(|t| t == "hello $later")).await;
    let prompts = agent.prompt_texts();
    assert_eq!(prompts, vec!["hello $ok", "hello $later"]);
}

// A current-thread runtime, and nothing awaited while the queue fills: the channel's task
// does not run, so its queue stays full.
#[tokio::test(flavor = "current_thread")]
async fn a_message_a_full_channel_queue_refuses_is_answered_and_no_longer_waits() {
    let (gw, agent, chat, store) = gateway_with(false).await;
    let Inbound::Message(message) = msg("$flood", "@alice:x", now_ms() as u64 + 1) else {
        unreachable!()
    };
    let key = message.conversation();
    let pending = waiting("$flood", PendingKind::Prompt, &message.body, None);
    store
        .admit(&message.event_id, &key, Some(&pending))
        .await
        .unwrap();
    let ctx = gw.agents[&key.agent].clone();
    for _ in 0..crate::core::queues::CHANNEL_INPUTS {
        let (reply, _) = tokio::sync::oneshot::channel();
        assert!(
            gw.channels
                .send(&ctx, &key, ChannelInput::Report(reply))
                .is_ok()
        );
    }
    let (reply, _) = tokio::sync::oneshot::channel();
    assert!(
        gw.channels
            .send(&ctx, &key, ChannelInput::Report(reply))
            .is_err(),
        "bounded"
    );
    gw.send_to_channel(&key, ChannelInput::Prompt(message))
        .await;
    let shown = chat.shown("!r");
    assert!(
        shown
            .iter()
            .any(|t| t.contains("too many messages wait for Demo here already")),
        "{shown:?}"
    );
    let left = store.pending_inputs(&AgentId::from("demo")).await.unwrap();
    assert!(left.is_empty(), "settled: {left:?}");
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(agent.prompts().is_empty(), "never run");
}

#[tokio::test]
async fn a_burst_of_messages_gets_one_read_receipt_on_the_newest() {
    let (gw, _agent, chat) = gateway().await;
    assert!(
        gw.accept_invite(&"demo".into(), &"!r".into(), &"@alice:x".into())
            .await
    );
    let now = now_ms() as u64;
    for (n, id) in ["$1", "$2", "$3"].into_iter().enumerate() {
        gw.handle(msg(id, "@alice:x", now + 1 + n as u64)).await;
    }
    wait_for(Duration::from_secs(5), || {
        chat.log().iter().any(|s| matches!(s, Sent::Read { .. }))
    })
    .await;
    tokio::time::sleep(Duration::from_millis(800)).await;
    let reads: Vec<String> = (chat.log().into_iter())
        .filter_map(|s| match s {
            Sent::Read { event_id, .. } => Some(event_id),
            _ => None,
        })
        .collect();
    assert_eq!(
        reads,
        ["$3"],
        "one receipt, on the newest: it covers the others"
    );
}
