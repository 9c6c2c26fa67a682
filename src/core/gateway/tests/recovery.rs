//! What the next start does with what the previous run took in and never carried out.

use super::*;

// In a room of two agents, `codex: !agents` and `codex: !commands` are taken in for Codex
// (stored without the address in front). After a crash, Codex still answers them, though
// neither names it any more and Claude speaks for the room.
#[tokio::test]
async fn a_command_run_after_a_crash_is_carried_out_by_the_agent_it_was_taken_in_for() {
    let (gw, fakes, store, _) = gateway_in_room(&two_agents(), false, RoomRules::default()).await;
    for (id, body) in [("$room", "!agents"), ("$agent", "!commands")] {
        let input = PendingInput {
            agent_id: "codex".into(),
            ..waiting(id, PendingKind::Command, body, None)
        };
        let key = ConversationKey::new("!r", "codex");
        assert!(
            store
                .admit(&input.event_id.clone(), &key, Some(&input))
                .await
                .unwrap()
        );
    }
    gw.clean_up_previous_run().await;
    let codex = &fakes[1].1;
    wait_for(Duration::from_secs(2), || codex.shown("!r").len() >= 2).await;
    let shown = codex.shown("!r");
    assert!(shown.iter().any(|t| t.contains("2 agents")), "{shown:?}");
    assert!(
        !shown.iter().any(|t| t.contains("before it carried out")),
        "{shown:?}"
    );
    assert_eq!(shown.len(), 2, "each answered: {shown:?}");
    assert!(
        fakes[0].1.shown("!r").is_empty(),
        "Claude answers none of them"
    );
    let left = store.pending_inputs(&AgentId::from("codex")).await.unwrap();
    assert!(left.is_empty(), "settled: {left:?}");
}
