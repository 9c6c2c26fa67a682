//! The translations, tested on the JSON real agents send.

use super::*;
use agent_client_protocol::v1::schema::SessionNotification;

fn update(json: serde_json::Value) -> AgentEvent {
    let n: SessionNotification =
        serde_json::from_value(serde_json::json!({"sessionId": "s", "update": json})).unwrap();
    session_update(n.update)
}

#[test]
fn steering_is_read_from_the_initialize_meta_and_its_outcomes_from_the_answer() {
    let init = |meta: serde_json::Value| {
        let r: InitializeResponse = serde_json::from_value(serde_json::json!({
            "protocolVersion": 1, "agentCapabilities": {}, "_meta": meta,
        }))
        .unwrap();
        agent_info(&r).steering
    };
    assert!(init(serde_json::json!({"steering": {"supported": true}})));
    assert!(!init(serde_json::json!({"steering": {"supported": false}})));
    assert!(!init(serde_json::json!({})));
    let outcome = |o: &str| steered(&serde_json::json!({"outcome": o}));
    assert_eq!(outcome("injected"), Some(Steered::Injected));
    assert_eq!(outcome("startedNewTurn"), Some(Steered::Injected));
    assert_eq!(outcome("promptRequired"), Some(Steered::NoTurn));
    assert_eq!(outcome("failed"), Some(Steered::Failed));
    assert_eq!(outcome("queued"), None);
    assert_eq!(steered(&serde_json::json!({})), None);
}

#[test]
fn the_room_tools_come_the_way_the_agent_can_reach_them() {
    use super::super::sandbox::Network;
    let stdio = |address: &str| McpServerSpec::Stdio {
        name: "sidekicks".into(),
        command: "/usr/bin/sidekicks".into(),
        args: vec!["mcp-stdio".into()],
        env: vec![(
            "SIDEKICKS_MCP_ADDRESS".into(),
            crate::model::Secret::new(address.to_owned()),
        )],
    };
    let tools = SessionTools {
        stdio: stdio("127.0.0.1:1"),
        local: stdio("unix:/run/sidekicks/room-tools.sock"),
        http: McpServerSpec::Http {
            name: "sidekicks".into(),
            url: "http://127.0.0.1:2/mcp".into(),
            headers: vec![],
        },
    };
    let agent = AgentId::parse("a").unwrap();
    let served = |route: ToolsRoute, http: bool| {
        format!(
            "{:?}",
            with_tools(&[], Some(tools.clone()), http, &route, &agent)
        )
    };
    // At home with a network: HTTP when the agent takes it, else stdio over loopback.
    assert!(served(ToolsRoute::of(None, None), true).contains("http://127.0.0.1:2/mcp"));
    assert!(served(ToolsRoute::of(Some(Network::Host), None), false).contains("127.0.0.1:1"));
    // Without one: the socket bound into its sandbox, the gateway's own program.
    let offline = served(ToolsRoute::of(Some(Network::None), None), true);
    assert!(
        offline.contains("unix:/run/sidekicks/room-tools.sock"),
        "{offline}"
    );
    assert!(offline.contains("/usr/bin/sidekicks"), "{offline}");
    // On another host: the forwarded socket, bound in the same place, and its program.
    let remote = served(
        ToolsRoute::of(Some(Network::Host), Some("/opt/sk".into())),
        true,
    );
    assert!(
        remote.contains("unix:/run/sidekicks/room-tools.sock"),
        "{remote}"
    );
    assert!(
        remote.contains("/opt/sk") && !remote.contains("/usr/bin/sidekicks"),
        "{remote}"
    );
}

#[test]
fn message_and_thought_chunks_stay_apart() {
    let m = update(
        serde_json::json!({"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "hi"}}),
    );
    assert!(matches!(m, AgentEvent::MessageChunk(t) if t == "hi"));
    let t = update(
        serde_json::json!({"sessionUpdate": "agent_thought_chunk", "content": {"type": "text", "text": "hmm"}}),
    );
    assert!(matches!(t, AgentEvent::ThoughtChunk(t) if t == "hmm"));
}

#[test]
fn a_replayed_prompt_and_a_title_less_info_update_are_variants_of_their_own() {
    let prompt = update(
        serde_json::json!({"sessionUpdate": "user_message_chunk", "content": {"type": "text", "text": "earlier"}}),
    );
    assert!(matches!(prompt, AgentEvent::UserMessageChunk(t) if t == "earlier"));
    let info = update(serde_json::json!({"sessionUpdate": "session_info_update"}));
    assert!(matches!(info, AgentEvent::Unused { kind } if kind == "session_info_update"));
    let titled =
        update(serde_json::json!({"sessionUpdate": "session_info_update", "title": "Fix it"}));
    assert!(matches!(titled, AgentEvent::Title(Some(t)) if t == "Fix it"));
}

#[test]
fn usage_and_commands_translate() {
    let u = update(serde_json::json!({"sessionUpdate": "usage_update", "used": 10, "size": 0}));
    assert!(matches!(
        u,
        AgentEvent::Usage {
            used: 10,
            size: 0,
            cost: None
        }
    ));
    let c = update(
        serde_json::json!({"sessionUpdate": "available_commands_update",
        "availableCommands": [{"name": "compact", "description": "Compact"}]}),
    );
    assert!(
        matches!(c, AgentEvent::Commands(list) if list == vec![SlashCommand::new("compact", "Compact")])
    );
}

#[test]
fn modes_and_config_options_translate_as_agents_send_them() {
    let mode = update(
        serde_json::json!({"sessionUpdate": "current_mode_update", "currentModeId": "code"}),
    );
    assert!(matches!(mode, AgentEvent::ModeChanged(m) if m == "code"));
    let options = update(serde_json::json!({"sessionUpdate": "config_option_update",
    "configOptions": [
        {"id": "model", "name": "Model", "category": "model", "type": "select",
         "currentValue": "s", "options": [
            {"group": "fast", "name": "Fast", "options": [{"value": "s", "name": "Small"}]},
            {"group": "big", "name": "Big", "options": [{"value": "l", "name": "Large"}]}]},
        {"id": "verbose", "name": "Verbose", "type": "boolean", "currentValue": true},
        {"id": "mystery", "name": "Mystery", "type": "slider", "currentValue": 3}
    ]}));
    let AgentEvent::Options(options) = options else {
        panic!("not options: {options:?}");
    };
    assert_eq!(
        options,
        vec![
            ConfigOption {
                id: "model".into(),
                name: "Model".into(),
                category: Some("model".into()),
                value: ConfigValue::Choice {
                    current: "s".into(),
                    choices: vec![("s".into(), "Small".into()), ("l".into(), "Large".into())],
                },
            },
            ConfigOption {
                id: "verbose".into(),
                name: "Verbose".into(),
                category: None,
                value: ConfigValue::Toggle(true),
            },
        ],
        "grouped choices are flattened; an unknown kind is left out"
    );
}

#[test]
fn a_tool_call_keeps_its_kind_locations_diff_and_input() {
    let t = update(
        serde_json::json!({"sessionUpdate": "tool_call", "toolCallId": "t1",
        "title": "write_file: notes.txt", "kind": "edit", "status": "pending",
        "locations": [{"path": "/w/notes.txt", "line": 3}],
        "content": [{"type": "diff", "path": "/w/notes.txt", "oldText": "a", "newText": "b"}],
        "rawInput": {"path": "notes.txt"}}),
    );
    let AgentEvent::ToolCall(f) = t else {
        panic!("{t:?}")
    };
    assert_eq!(f.kind, Some(ToolKind::Edit));
    assert_eq!(f.status, Some(ToolStatus::Pending));
    assert_eq!(f.locations, Some(vec!["/w/notes.txt:3".to_string()]));
    assert_eq!(
        f.content,
        Some(vec![ToolContent::Diff {
            path: "/w/notes.txt".into(),
            old: Some("a".into()),
            new: "b".into()
        }])
    );
    assert_eq!(f.raw_input, Some(serde_json::json!({"path": "notes.txt"})));
    // An update sets only what it names.
    let u = update(
        serde_json::json!({"sessionUpdate": "tool_call_update", "toolCallId": "t1",
        "status": "completed"}),
    );
    let AgentEvent::ToolCallUpdate(u) = u else {
        panic!("{u:?}")
    };
    assert_eq!(u.status, Some(ToolStatus::Completed));
    assert_eq!(u.title, None);
    let mut merged = f.clone();
    merged.merge(u);
    assert_eq!(merged.status, Some(ToolStatus::Completed));
    assert_eq!(merged.title, f.title);
}

#[test]
fn the_prompt_result_carries_token_usage() {
    let r: PromptResponse = serde_json::from_value(serde_json::json!({"stopReason": "end_turn",
        "usage": {"totalTokens": 30, "inputTokens": 20, "outputTokens": 10}}))
    .unwrap();
    let end = turn_end(r);
    assert_eq!(end.reason, StopReason::EndTurn);
    assert_eq!(
        end.usage.map(|u| (u.input, u.output, u.total)),
        Some((20, 10, 30))
    );
}

#[test]
fn an_unknown_update_kind_does_not_parse_so_the_connection_skips_it() {
    let raw =
        serde_json::json!({"sessionId": "s", "update": {"sessionUpdate": "hologram", "x": 1}});
    assert!(serde_json::from_value::<SessionNotification>(raw).is_err());
}

#[test]
fn the_spoken_version_is_read_from_the_sdk_error() {
    let table = [
        (
            "unsupported ACP protocol version 7; this endpoint only supports ACP protocol version 1",
            Some(7),
        ),
        (
            "required ACP protocol version 1 but peer negotiated 2; use a matching implementation",
            Some(2),
        ),
        ("something else", None),
    ];
    for (data, expected) in table {
        assert_eq!(spoken_version(data), expected, "{data}");
    }
}
