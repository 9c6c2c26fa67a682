//! Translation from ACP SDK types to the core's own types. Pure functions, unit-tested.

use agent_client_protocol::v1::schema::{
    AuthMethod, ContentBlock, InitializeResponse, PermissionOptionKind, PlanEntryStatus,
    RequestPermissionRequest, SessionUpdate, StopReason as AcpStopReason, ToolCallStatus,
};
use tokio::sync::oneshot;

use crate::core::agent::{
    AgentEvent, AgentInfo, PermissionAnswer, PermissionKind, PermissionOption, PermissionRequest,
    StopReason, ToolStatus,
};

/// What the agent advertised in its `initialize` answer.
pub fn agent_info(r: &InitializeResponse) -> AgentInfo {
    let caps = &r.agent_capabilities;
    let mut prompt = Vec::new();
    if caps.prompt_capabilities.image {
        prompt.push("image".to_owned());
    }
    if caps.prompt_capabilities.audio {
        prompt.push("audio".to_owned());
    }
    if caps.prompt_capabilities.embedded_context {
        prompt.push("embedded context".to_owned());
    }
    AgentInfo {
        protocol_version: r.protocol_version.as_u16(),
        name: r.agent_info.as_ref().map(|i| i.name.clone()),
        title: r.agent_info.as_ref().and_then(|i| i.title.clone()),
        version: r.agent_info.as_ref().map(|i| i.version.clone()),
        load_session: caps.load_session,
        prompt_capabilities: prompt,
        auth_methods: r.auth_methods.iter().map(auth_method_name).collect(),
    }
}

fn auth_method_name(m: &AuthMethod) -> String {
    serde_json::to_value(m)
        .ok()
        .and_then(|v| {
            v.get("name")
                .or_else(|| v.get("id"))
                .and_then(|n| n.as_str())
                .map(str::to_owned)
        })
        .unwrap_or_else(|| "?".into())
}

/// The core's stop reason for the SDK's.
pub fn stop_reason(r: AcpStopReason) -> StopReason {
    match r {
        AcpStopReason::EndTurn => StopReason::EndTurn,
        AcpStopReason::MaxTokens => StopReason::MaxTokens,
        AcpStopReason::MaxTurnRequests => StopReason::MaxTurnRequests,
        AcpStopReason::Refusal => StopReason::Refusal,
        AcpStopReason::Cancelled => StopReason::Cancelled,
        // Newer reasons we do not know end the turn like a normal end.
        #[allow(unreachable_patterns)]
        _ => StopReason::EndTurn,
    }
}

fn tool_status(s: ToolCallStatus) -> ToolStatus {
    match s {
        ToolCallStatus::Pending => ToolStatus::Pending,
        ToolCallStatus::InProgress => ToolStatus::InProgress,
        ToolCallStatus::Completed => ToolStatus::Completed,
        ToolCallStatus::Failed => ToolStatus::Failed,
        #[allow(unreachable_patterns)]
        _ => ToolStatus::InProgress,
    }
}

/// Text of a content block; non-text content is described in brackets.
fn text_of(block: ContentBlock) -> String {
    match block {
        ContentBlock::Text(t) => t.text,
        ContentBlock::Image(_) => "[image]".into(),
        ContentBlock::Audio(_) => "[audio]".into(),
        ContentBlock::ResourceLink(link) => format!("[{}]({})", link.name, link.uri),
        _ => "[content]".into(),
    }
}

/// The core's event for one `session/update`.
pub fn session_update(update: SessionUpdate) -> AgentEvent {
    match update {
        SessionUpdate::AgentMessageChunk(c) => AgentEvent::MessageChunk(text_of(c.content)),
        SessionUpdate::AgentThoughtChunk(c) => AgentEvent::ThoughtChunk(text_of(c.content)),
        SessionUpdate::ToolCall(t) => AgentEvent::ToolCall {
            id: t.tool_call_id.0.to_string(),
            title: t.title,
            status: tool_status(t.status),
        },
        SessionUpdate::ToolCallUpdate(u) => AgentEvent::ToolCallUpdate {
            id: u.tool_call_id.0.to_string(),
            status: u.fields.status.map(tool_status),
            title: u.fields.title,
        },
        SessionUpdate::Plan(p) => AgentEvent::Plan(
            p.entries
                .into_iter()
                .map(|e| (e.content, matches!(e.status, PlanEntryStatus::Completed)))
                .collect(),
        ),
        SessionUpdate::UsageUpdate(u) => AgentEvent::Usage {
            used: u.used,
            size: u.size,
        },
        SessionUpdate::AvailableCommandsUpdate(c) => AgentEvent::Commands(
            c.available_commands
                .into_iter()
                .map(|c| (c.name, c.description))
                .collect(),
        ),
        other => AgentEvent::Other(
            serde_json::to_value(&other)
                .ok()
                .and_then(|v| {
                    v.get("sessionUpdate")
                        .and_then(|k| k.as_str())
                        .map(str::to_owned)
                })
                .unwrap_or_else(|| "unknown".into()),
        ),
    }
}

/// The core's permission request for the SDK's, answered through `reply`.
pub fn permission_request(
    r: &RequestPermissionRequest,
    reply: oneshot::Sender<PermissionAnswer>,
) -> AgentEvent {
    AgentEvent::Permission(PermissionRequest {
        tool_call_id: r.tool_call.tool_call_id.0.to_string(),
        title: r.tool_call.fields.title.clone(),
        options: r
            .options
            .iter()
            .map(|o| PermissionOption {
                id: o.option_id.0.to_string(),
                name: o.name.clone(),
                kind: match o.kind {
                    PermissionOptionKind::AllowOnce => PermissionKind::AllowOnce,
                    PermissionOptionKind::AllowAlways => PermissionKind::AllowAlways,
                    PermissionOptionKind::RejectOnce => PermissionKind::RejectOnce,
                    PermissionOptionKind::RejectAlways => PermissionKind::RejectAlways,
                    #[allow(unreachable_patterns)]
                    _ => PermissionKind::RejectOnce,
                },
            })
            .collect(),
        reply,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use agent_client_protocol::v1::schema::SessionNotification;

    fn update(json: serde_json::Value) -> AgentEvent {
        let n: SessionNotification =
            serde_json::from_value(serde_json::json!({"sessionId": "s", "update": json})).unwrap();
        session_update(n.update)
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
    fn usage_and_commands_translate() {
        let u = update(serde_json::json!({"sessionUpdate": "usage_update", "used": 10, "size": 0}));
        assert!(matches!(u, AgentEvent::Usage { used: 10, size: 0 }));
        let c = update(
            serde_json::json!({"sessionUpdate": "available_commands_update",
            "availableCommands": [{"name": "compact", "description": "Compact"}]}),
        );
        assert!(
            matches!(c, AgentEvent::Commands(list) if list == vec![("compact".to_string(), "Compact".to_string())])
        );
    }

    #[test]
    fn an_unknown_update_kind_does_not_parse_so_the_connection_skips_it() {
        let raw =
            serde_json::json!({"sessionId": "s", "update": {"sessionUpdate": "hologram", "x": 1}});
        assert!(serde_json::from_value::<SessionNotification>(raw).is_err());
    }
}
