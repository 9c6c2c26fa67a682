//! Rooms with several agents: who answers what, commands for one agent or all, hand-offs.

use super::*;

#[tokio::test]
async fn messages_go_to_the_agents_they_address_and_nobody_else() {
    let (gw, fakes, _, _) = gateway_in_room(&two_agents(), false, RoomRules::default()).await;
    let agents = ["claude", "codex"];
    let body = |text: &'static str| move |m: &mut IncomingMessage| m.body = text.into();
    to_all(&gw, &agents, "$1", body("nobody in particular")).await;
    to_all(&gw, &agents, "$2", body("codex: only you")).await;
    to_all(&gw, &agents, "$3", |m| {
        m.body = "Claude look".into();
        m.mentions = vec!["@claude:x".into()];
    })
    .await;
    to_all(&gw, &agents, "$4", |m| {
        m.body = "and then?".into();
        m.reply_to = Some("$earlier".into());
        m.reply_to_sender = Some("@codex:x".into());
    })
    .await;
    to_all(&gw, &agents, "$5", body("@claude @codex both of you")).await;
    // The last message is for both: once each has it, each has had what came before.
    until(|| {
        (fakes.iter())
            .all(|(agent, _)| (agent.prompt_texts().last()).is_some_and(|t| t == "both of you"))
    })
    .await;
    assert_eq!(
        fakes[0].0.prompt_texts(),
        vec!["Claude look", "both of you"]
    );
    assert_eq!(
        fakes[1].0.prompt_texts(),
        vec!["only you", "and then?", "both of you"]
    );
}

#[tokio::test]
async fn unaddressed_messages_go_to_the_default_agent_or_the_only_one() {
    let (gw, fakes, store, _) = gateway_in_room(&two_agents(), false, RoomRules::default()).await;
    let agents = ["claude", "codex"];
    to_all(&gw, &agents, "$1", |m| m.body = "!default codex".into()).await;
    let said = || -> Vec<String> { fakes.iter().flat_map(|(_, c)| c.shown("!r")).collect() };
    until(|| said().iter().any(|t| t.contains("go to Codex"))).await;
    assert_eq!(
        store
            .room_routing(&RoomId::from("!r"))
            .await
            .unwrap()
            .default_agent,
        Some(AgentId::from("codex"))
    );
    to_all(&gw, &agents, "$2", |m| m.body = "to the default".into()).await;
    // With one agent left, every message goes to it.
    gw.left_room(&"codex".into(), &"!r".into()).await;
    to_all(&gw, &["claude"], "$3", |m| {
        m.body = "to the only one".into()
    })
    .await;
    until(|| fakes.iter().all(|(agent, _)| !agent.prompts().is_empty())).await;
    assert_eq!(fakes[1].0.prompt_texts(), vec!["to the default"]);
    assert_eq!(fakes[0].0.prompt_texts(), vec!["to the only one"]);
    let said = said();
    assert_eq!(
        said.iter().filter(|t| t.contains("go to Codex")).count(),
        1,
        "the room command is answered once: {said:?}"
    );
}

#[tokio::test]
async fn commands_for_one_agent_reach_only_it_and_unnamed_ones_ask_which() {
    let (gw, fakes, _, _) = gateway_in_room(&two_agents(), false, RoomRules::default()).await;
    let agents = ["claude", "codex"];
    to_all(&gw, &agents, "$1", |m| m.body = "!new codex".into()).await;
    to_all(&gw, &agents, "$2", |m| m.body = "!new".into()).await;
    to_all(&gw, &agents, "$3", |m| m.body = "!status".into()).await;
    // `!status` comes last and is answered once, for both.
    until(|| {
        (fakes.iter()).any(|(_, chat)| {
            chat.shown("!r")
                .iter()
                .any(|t| t.contains("no session yet"))
        })
    })
    .await;
    let claude = fakes[0].1.shown("!r");
    let codex = fakes[1].1.shown("!r");
    assert!(codex.iter().any(|t| t.contains("Fresh start")), "{codex:?}");
    assert!(
        !claude.iter().any(|t| t.contains("Fresh start")),
        "{claude:?}"
    );
    // The responder (first agent by ID) asks which agent `!new` is for, and answers
    // `!status` once for both.
    assert!(
        claude
            .iter()
            .any(|t| t.contains("!new claude or !new codex")),
        "{claude:?}"
    );
    let status: Vec<&String> = claude
        .iter()
        .chain(codex.iter())
        .filter(|t| t.contains("no session yet"))
        .collect();
    assert_eq!(status.len(), 1, "{status:?}");
    assert!(status[0].contains("Claude: idle") && status[0].contains("Codex: idle"));
}

#[tokio::test]
async fn an_unnamed_stop_stops_every_turn_running_in_the_room() {
    let (gw, fakes, _, _) = gateway_in_room(
        &[
            ("claude", Script::UntilCancelled),
            ("codex", Script::UntilCancelled),
        ],
        false,
        RoomRules::default(),
    )
    .await;
    let agents = ["claude", "codex"];
    to_all(&gw, &agents, "$1", |m| m.body = "claude: work".into()).await;
    until(|| !fakes[0].0.prompts().is_empty()).await;
    to_all(&gw, &agents, "$2", |m| m.body = "!stop".into()).await;
    until(|| (fakes[0].1.shown("!r").iter()).any(|t| t.contains("Stopped by"))).await;
    let claude = fakes[0].1.shown("!r");
    assert!(
        claude.iter().any(|t| t.contains("Stopped by @alice:x")),
        "{claude:?}"
    );
    assert!(
        fakes[1].1.shown("!r").is_empty(),
        "codex had nothing to stop"
    );
}

#[tokio::test]
async fn hand_offs_between_agents_stop_at_the_hop_limit() {
    let say = |text: &str| Script::Chunks(vec![text.into()], Duration::from_millis(5));
    let rules = RoomRules {
        handoff: true,
        handoff_max_hops: 3,
        ..RoomRules::default()
    };
    let (gw, fakes, _, handed) = gateway_in_room(
        &[
            ("claude", say("codex: ping")),
            ("codex", say("@claude pong")),
        ],
        false,
        rules,
    )
    .await;
    tokio::spawn(gw.clone().run_handoffs(handed));
    let agents = ["claude", "codex"];
    // How many times the room was told the chain reached its limit: the last thing a
    // chain does, so what it prompted is all there by then.
    let stopped = || {
        (fakes.iter().flat_map(|(_, c)| c.shown("!r")))
            .filter(|t| t.contains("the most allowed"))
            .count()
    };
    to_all(&gw, &agents, "$1", |m| m.body = "claude: start".into()).await;
    wait_for(Duration::from_secs(10), || stopped() == 1).await;
    // start → claude; claude → codex (1); codex → claude (2); claude → codex (3); stop.
    assert_eq!(
        fakes[0].0.prompt_texts().len(),
        2,
        "{:?}",
        fakes[0].0.prompt_texts()
    );
    assert_eq!(
        fakes[1].0.prompt_texts().len(),
        2,
        "{:?}",
        fakes[1].0.prompt_texts()
    );
    assert_eq!(
        fakes[1].0.prompt_texts()[0],
        "Claude (another agent in this room) hands this to you:\n\nping"
    );
    let said: Vec<String> = fakes.iter().flat_map(|(_, c)| c.shown("!r")).collect();
    assert_eq!(
        said.iter()
            .filter(|t| t.contains("the most allowed"))
            .count(),
        1,
        "{said:?}"
    );
    // A person's message starts the count over.
    to_all(&gw, &agents, "$2", |m| m.body = "codex: again".into()).await;
    wait_for(Duration::from_secs(10), || stopped() == 2).await;
    assert_eq!(stopped(), 2, "the second chain reached the limit too");
    assert_eq!(
        fakes[1].0.prompt_texts().len(),
        4,
        "{:?}",
        fakes[1].0.prompt_texts()
    );
}

#[tokio::test]
async fn without_hand_offs_an_agent_addressing_another_prompts_nothing() {
    let say = |text: &str| Script::Chunks(vec![text.into()], Duration::from_millis(5));
    let (gw, fakes, _, handed) = gateway_in_room(
        &[("claude", say("codex: ping")), ("codex", say("pong"))],
        false,
        RoomRules::default(),
    )
    .await;
    tokio::spawn(gw.clone().run_handoffs(handed));
    to_all(&gw, &["claude", "codex"], "$1", |m| {
        m.body = "claude: start".into()
    })
    .await;
    wait_for(Duration::from_secs(10), || {
        fakes[0]
            .1
            .shown("!r")
            .iter()
            .any(|t| t.contains("codex: ping"))
    })
    .await;
    // A person's message to codex after Claude's answer is shown: codex's first prompt is
    // theirs, so Claude's answer prompted nothing.
    to_all(&gw, &["claude", "codex"], "$2", |m| {
        m.body = "codex: hello".into()
    })
    .await;
    wait_for(Duration::from_secs(10), || !fakes[1].0.prompts().is_empty()).await;
    assert_eq!(fakes[0].0.prompts().len(), 1);
    assert_eq!(fakes[1].0.prompt_texts(), vec!["hello"]);
}

#[tokio::test]
async fn unsupported_kinds_are_answered_by_the_agents_they_are_for_only() {
    let (gw, fakes, _, _) = gateway_in_room(&two_agents(), false, RoomRules::default()).await;
    let image = |agent: &str, id: &str, reply_to_codex: bool| {
        let mut m = copy_for(agent, id, "");
        if reply_to_codex {
            m.reply_to = Some("$earlier".into());
            m.reply_to_sender = Some("@codex:x".into());
        }
        Inbound::Unreadable(m, Unreadable::Unsupported("m.location".into()))
    };
    for agent in ["claude", "codex"] {
        gw.handle(image(agent, "$1", false)).await;
        gw.handle(image(agent, "$2", true)).await;
    }
    // Then a message for Claude alone: once it is answered, Claude has had the two before.
    to_all(&gw, &["claude", "codex"], "$3", |m| {
        m.body = "claude: and you?".into()
    })
    .await;
    until(|| !fakes[0].0.prompts().is_empty() && !fakes[1].1.shown("!r").is_empty()).await;
    let claude = fakes[0].1.shown("!r");
    assert!(
        !claude.iter().any(|t| t.contains("cannot read")),
        "{claude:?}"
    );
    let codex = fakes[1].1.shown("!r");
    assert_eq!(codex.len(), 1, "{codex:?}");
    assert!(
        codex[0].contains("cannot read location messages"),
        "{codex:?}"
    );
}

#[tokio::test]
async fn a_command_naming_no_agent_here_changes_nothing_and_says_so() {
    let script = Script::Chunks(vec!["ok".into()], Duration::ZERO);
    let (gw, fakes, _, _) = gateway_in_room(&[("demo", script)], false, RoomRules::default()).await;
    to_all(&gw, &["demo"], "$1", |m| m.body = "!new ghost".into()).await;
    until(|| !fakes[0].1.shown("!r").is_empty()).await;
    let shown = fakes[0].1.shown("!r");
    assert_eq!(shown.len(), 1, "{shown:?}");
    assert!(
        shown[0].contains("No agent here is called “ghost”"),
        "{shown:?}"
    );
    assert!(!shown[0].contains("Fresh start"));
}
