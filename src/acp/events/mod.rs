//! Translation from ACP SDK types to the core's own types. Pure functions, unit-tested.

use agent_client_protocol::schema::MaybeUndefined;
use agent_client_protocol::v1::schema::{
    AudioContent, AuthMethod, CompactionStatus, CompactionUpdate, ContentBlock, EmbeddedResource,
    EmbeddedResourceResource, EnvVariable, HttpHeader, ImageContent, InitializeResponse, McpServer,
    McpServerHttp, McpServerStdio, PermissionOptionKind, PlanEntryStatus, PromptResponse,
    RequestPermissionRequest, ResourceLink, SessionConfigKind, SessionConfigOption,
    SessionConfigOptionCategory, SessionConfigOptionValue, SessionConfigSelectOptions, SessionInfo,
    SessionModeState, SessionUpdate, StopReason as AcpStopReason, TextContent,
    TextResourceContents, ToolCallContent, ToolCallLocation, ToolCallStatus, ToolCallUpdateFields,
    ToolKind as AcpToolKind,
};
use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as BASE64;
use tokio::sync::oneshot;

use crate::model::agent::{
    AgentEvent, AgentInfo, AuthMethodInfo, CompactionReport, CompactionState, ConfigChoice,
    ConfigOption, ConfigValue, Cost, McpServerSpec, PermissionAnswer, PermissionKind,
    PermissionOption, PermissionRequest, PlanEntry, PlanStatus, SessionListing, SessionSettings,
    SessionTools, SlashCommand, Steered, StopReason, TerminalOutput, TokenUsage, ToolCallFields,
    ToolContent, ToolKind, ToolStatus, TurnEnd,
};
use crate::model::ids::{AgentId, PermissionOptionId, SessionId, ToolCallId};
use crate::model::media::{AnswerFile, PromptBlock, PromptSupport};

/// What the agent advertised in its `initialize` answer.
pub fn agent_info(r: &InitializeResponse) -> AgentInfo {
    let caps = &r.agent_capabilities;
    let prompt = PromptSupport {
        image: caps.prompt_capabilities.image,
        audio: caps.prompt_capabilities.audio,
        embedded_context: caps.prompt_capabilities.embedded_context,
    };
    AgentInfo {
        protocol_version: r.protocol_version.as_u16(),
        name: r.agent_info.as_ref().map(|i| i.name.clone()),
        title: r.agent_info.as_ref().and_then(|i| i.title.clone()),
        version: r.agent_info.as_ref().map(|i| i.version.clone()),
        load_session: caps.load_session,
        resume_session: caps.session_capabilities.resume.is_some(),
        close_session: caps.session_capabilities.close.is_some(),
        fork_session: caps.session_capabilities.fork.is_some(),
        list_sessions: caps.session_capabilities.list.is_some(),
        mcp_http: caps.mcp_capabilities.http,
        prompt_capabilities: prompt,
        auth_methods: r.auth_methods.iter().map(auth_method).collect(),
        steering: (r.meta.as_ref())
            .and_then(|m| m.get("steering"))
            .and_then(|s| s.get("supported"))
            .and_then(serde_json::Value::as_bool)
            .unwrap_or(false),
    }
}

/// What an agent's answer to `_session/steering` says became of the message: `None` for
/// an answer that is not one of the contract's.
pub fn steered(answer: &serde_json::Value) -> Option<Steered> {
    match answer.get("outcome")?.as_str()? {
        "injected" => Some(Steered::Injected),
        // Asked for `promptRequired`; an adapter that started a turn of its own anyway
        // took the message all the same.
        "startedNewTurn" => Some(Steered::Injected),
        "promptRequired" => Some(Steered::NoTurn),
        "failed" => Some(Steered::Failed),
        _ => None,
    }
}

/// How an agent's sessions reach the room tools.
#[derive(Debug, Clone, PartialEq)]
pub enum ToolsRoute {
    /// On loopback: over HTTP when the agent takes HTTP, else over stdio.
    Loopback,
    /// Over stdio through the socket file bound into its sandbox (an agent without network,
    /// or on another host, whose connection forwards the socket): `bridge` is the program
    /// that speaks stdio there when it is not the gateway's own (on another host).
    Socket {
        /// The `sidekicks` program on the agent's host.
        bridge: Option<std::path::PathBuf>,
    },
}

impl ToolsRoute {
    /// The route of an agent with `network`, on another host whose `sidekicks` is
    /// `remote_program` (`None`: on this one).
    pub fn of(network: Option<super::sandbox::Network>, remote_program: Option<String>) -> Self {
        match (remote_program, network) {
            (Some(program), _) => Self::Socket {
                bridge: Some(program.into()),
            },
            (None, Some(super::sandbox::Network::None)) => Self::Socket { bridge: None },
            (None, _) => Self::Loopback,
        }
    }
}

/// The MCP servers one session is given: the agent's (`configured`), and the gateway's room
/// tools (`tools`) the way `route` says.
pub fn with_tools(
    configured: &[McpServer],
    tools: Option<SessionTools>,
    http: bool,
    route: &ToolsRoute,
    agent: &AgentId,
) -> Vec<McpServer> {
    let mut servers = configured.to_vec();
    if let Some(tools) = tools {
        let (spec, over) = match (route, http) {
            (ToolsRoute::Socket { bridge }, _) => {
                let mut spec = tools.local;
                if let (McpServerSpec::Stdio { command, .. }, Some(bridge)) = (&mut spec, bridge) {
                    command.clone_from(bridge);
                }
                (spec, "stdio through the socket file")
            }
            (ToolsRoute::Loopback, true) => (tools.http, "http"),
            (ToolsRoute::Loopback, false) => (tools.stdio, "stdio"),
        };
        tracing::debug!(%agent, over, "the session gets the room tools");
        servers.extend(mcp_servers(&[spec], http, agent));
    }
    servers
}

/// The MCP servers as sessions are given them: HTTP ones only when the agent takes HTTP
/// (`http`); one it does not is left out, with a warning in the log.
pub fn mcp_servers(specs: &[McpServerSpec], http: bool, agent: &AgentId) -> Vec<McpServer> {
    let pairs = |list: &[(String, crate::model::Secret)]| -> Vec<(String, String)> {
        list.iter()
            .map(|(k, v)| (k.clone(), v.expose().to_owned()))
            .collect()
    };
    specs
        .iter()
        .filter_map(|spec| match spec {
            McpServerSpec::Stdio {
                name,
                command,
                args,
                env,
            } => Some(McpServer::Stdio(
                McpServerStdio::new(name.clone(), command.clone())
                    .args(args.clone())
                    .env(pairs(env).into_iter().map(|(k, v)| EnvVariable::new(k, v)).collect()),
            )),
            McpServerSpec::Http { name, .. } if !http => {
                tracing::warn!(%agent, server = %name, "the agent does not take HTTP MCP servers; leaving this one out");
                None
            }
            McpServerSpec::Http { name, url, headers } => Some(McpServer::Http(
                McpServerHttp::new(name.clone(), url.clone())
                    .headers(pairs(headers).into_iter().map(|(k, v)| HttpHeader::new(k, v)).collect()),
            )),
        })
        .collect()
}

/// The core's description of a sign-in method.
fn auth_method(m: &AuthMethod) -> AuthMethodInfo {
    let terminal = match m {
        AuthMethod::Terminal(t) => Some(t.args.join(" ")),
        _ => None,
    };
    AuthMethodInfo {
        id: m.id().0.to_string(),
        name: m.name().to_owned(),
        description: m.description().map(str::to_owned),
        terminal,
    }
}

/// The core's description of one listed session.
pub fn session_listing(s: SessionInfo) -> SessionListing {
    SessionListing {
        id: SessionId::new(s.session_id.0.to_string()),
        cwd: s.cwd,
        title: s.title,
        updated_at: s.updated_at,
    }
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

/// How the turn ended, with the token counts when the agent sent them.
pub fn turn_end(r: PromptResponse) -> TurnEnd {
    TurnEnd {
        reason: stop_reason(r.stop_reason),
        usage: r.usage.map(|u| TokenUsage {
            input: u.input_tokens,
            output: u.output_tokens,
            thought: u.thought_tokens,
            cached_read: u.cached_read_tokens,
            total: u.total_tokens,
        }),
    }
}

fn tool_kind(k: AcpToolKind) -> ToolKind {
    match k {
        AcpToolKind::Read => ToolKind::Read,
        AcpToolKind::Edit => ToolKind::Edit,
        AcpToolKind::Delete => ToolKind::Delete,
        AcpToolKind::Move => ToolKind::Move,
        AcpToolKind::Search => ToolKind::Search,
        AcpToolKind::Execute => ToolKind::Execute,
        AcpToolKind::Think => ToolKind::Think,
        AcpToolKind::Fetch => ToolKind::Fetch,
        AcpToolKind::SwitchMode => ToolKind::SwitchMode,
        _ => ToolKind::Other,
    }
}

fn location(l: ToolCallLocation) -> String {
    match l.line {
        Some(line) => format!("{}:{line}", l.path.display()),
        None => l.path.display().to_string(),
    }
}

fn tool_content(c: ToolCallContent) -> Option<ToolContent> {
    match c {
        ToolCallContent::Content(c) => Some(ToolContent::Text(text_of(c.content))),
        ToolCallContent::Diff(d) => Some(ToolContent::Diff {
            path: d.path.display().to_string(),
            old: d.old_text,
            new: d.new_text,
        }),
        // Client terminals are not offered to agents, and sub-sessions are not shown.
        _ => None,
    }
}

/// The core's tool call fields for the SDK's update fields (an announcement is converted
/// to update fields first, so both paths share this).
fn tool_fields(id: String, f: ToolCallUpdateFields) -> ToolCallFields {
    ToolCallFields {
        id: ToolCallId::new(id),
        title: f.title,
        kind: f.kind.map(tool_kind),
        status: f.status.map(tool_status),
        locations: f.locations.map(|l| l.into_iter().map(location).collect()),
        content: f
            .content
            .map(|c| c.into_iter().filter_map(tool_content).collect()),
        raw_input: f.raw_input,
        raw_output: f.raw_output,
        terminal_output: None,
    }
}

/// What a command printed, as an agent reports it in a tool call's `_meta` (the terminal
/// extension of Zed's adapters, which Codex's and pi's use even when the client offers no
/// terminals): `terminal_output_delta.data` adds to it, `terminal_output.data` is all of it.
fn terminal_output(
    meta: Option<&agent_client_protocol::v1::schema::Meta>,
) -> Option<TerminalOutput> {
    let meta = meta?;
    let data = |key: &str| meta.get(key)?.get("data")?.as_str().map(str::to_owned);
    (data("terminal_output_delta").map(TerminalOutput::Append))
        .or_else(|| data("terminal_output").map(TerminalOutput::Whole))
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

/// The SDK's content block for one piece of a prompt (bytes as base64, as the protocol
/// carries them).
pub fn prompt_block(block: PromptBlock) -> ContentBlock {
    match block {
        PromptBlock::Text(text) => ContentBlock::Text(TextContent::new(text)),
        PromptBlock::Image { mime, data } => {
            ContentBlock::Image(ImageContent::new(BASE64.encode(data), mime))
        }
        PromptBlock::Audio { mime, data } => {
            ContentBlock::Audio(AudioContent::new(BASE64.encode(data), mime))
        }
        PromptBlock::Link {
            uri,
            name,
            mime,
            size,
        } => ContentBlock::ResourceLink(
            ResourceLink::new(name, uri)
                .mime_type(mime)
                .size(i64::try_from(size).ok()),
        ),
        PromptBlock::EmbeddedText { uri, mime, text } => ContentBlock::Resource(
            EmbeddedResource::new(EmbeddedResourceResource::TextResourceContents(
                TextResourceContents::new(text, uri).mime_type(mime),
            )),
        ),
    }
}

/// The file an answer chunk carries, if it is no text: a picture, a link, an embedded
/// resource (a blob whose base64 is broken is nothing).
fn answer_file(block: &ContentBlock) -> Option<AnswerFile> {
    match block {
        ContentBlock::Image(image) => Some(AnswerFile::Image {
            mime: image.mime_type.clone(),
            data: BASE64.decode(image.data.trim()).ok()?,
        }),
        ContentBlock::ResourceLink(link) => Some(AnswerFile::Link {
            uri: link.uri.clone(),
            name: link.name.clone(),
        }),
        ContentBlock::Resource(resource) => match &resource.resource {
            EmbeddedResourceResource::TextResourceContents(t) => Some(AnswerFile::Embedded {
                uri: t.uri.clone(),
                mime: t.mime_type.clone(),
                data: t.text.clone().into_bytes(),
            }),
            EmbeddedResourceResource::BlobResourceContents(b) => Some(AnswerFile::Embedded {
                uri: b.uri.clone(),
                mime: b.mime_type.clone(),
                data: BASE64.decode(b.blob.trim()).ok()?,
            }),
            #[allow(unreachable_patterns)]
            _ => None,
        },
        _ => None,
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
        SessionUpdate::AgentMessageChunk(c) => match answer_file(&c.content) {
            Some(file) => AgentEvent::File(file),
            None => AgentEvent::MessageChunk(text_of(c.content)),
        },
        SessionUpdate::AgentThoughtChunk(c) => AgentEvent::ThoughtChunk(text_of(c.content)),
        SessionUpdate::ToolCall(t) => AgentEvent::ToolCall(ToolCallFields {
            terminal_output: terminal_output(t.meta.as_ref()),
            id: ToolCallId::new(t.tool_call_id.0.to_string()),
            title: Some(t.title),
            kind: Some(tool_kind(t.kind)),
            status: Some(tool_status(t.status)),
            locations: Some(t.locations.into_iter().map(location).collect()),
            content: Some(t.content.into_iter().filter_map(tool_content).collect()),
            raw_input: t.raw_input,
            raw_output: t.raw_output,
        }),
        SessionUpdate::ToolCallUpdate(u) => AgentEvent::ToolCallUpdate(ToolCallFields {
            terminal_output: terminal_output(u.meta.as_ref()),
            ..tool_fields(u.tool_call_id.0.to_string(), u.fields)
        }),
        SessionUpdate::Plan(p) => AgentEvent::Plan(
            p.entries
                .into_iter()
                .map(|e| PlanEntry {
                    text: e.content,
                    status: match e.status {
                        PlanEntryStatus::Completed => PlanStatus::Completed,
                        PlanEntryStatus::InProgress => PlanStatus::InProgress,
                        _ => PlanStatus::Pending,
                    },
                })
                .collect(),
        ),
        SessionUpdate::UsageUpdate(u) => AgentEvent::Usage {
            used: u.used,
            size: u.size,
            cost: u.cost.map(|c| Cost {
                amount: c.amount,
                currency: c.currency,
            }),
        },
        SessionUpdate::SessionInfoUpdate(info) => match info.title {
            MaybeUndefined::Value(title) => AgentEvent::Title(Some(title)),
            MaybeUndefined::Null => AgentEvent::Title(None),
            MaybeUndefined::Undefined => AgentEvent::Unused {
                kind: "session_info_update".into(),
            },
        },
        SessionUpdate::AvailableCommandsUpdate(c) => AgentEvent::Commands(
            c.available_commands
                .into_iter()
                .map(|c| SlashCommand::new(c.name, c.description))
                .collect(),
        ),
        SessionUpdate::CurrentModeUpdate(m) => {
            AgentEvent::ModeChanged(m.current_mode_id.0.to_string())
        }
        SessionUpdate::ConfigOptionUpdate(c) => {
            AgentEvent::Options(config_options(c.config_options))
        }
        SessionUpdate::UserMessageChunk(c) => AgentEvent::UserMessageChunk(text_of(c.content)),
        SessionUpdate::CompactionUpdate(c) => AgentEvent::Compaction(compaction(c)),
        other => AgentEvent::Unused {
            kind: serde_json::to_value(&other)
                .ok()
                .and_then(|v| {
                    v.get("sessionUpdate")
                        .and_then(|k| k.as_str())
                        .map(str::to_owned)
                })
                .unwrap_or_else(|| "unknown".into()),
        },
    }
}

/// The core's report of one summary of the agent's context.
fn compaction(c: CompactionUpdate) -> CompactionReport {
    CompactionReport {
        id: c.compaction_id.0.to_string(),
        state: match c.status {
            CompactionStatus::Completed => CompactionState::Done,
            CompactionStatus::Failed => CompactionState::Failed,
            CompactionStatus::Cancelled => CompactionState::Cancelled,
            _ => CompactionState::Running,
        },
        error: match c.error {
            MaybeUndefined::Value(error) => Some(error),
            _ => None,
        },
    }
}

/// The modes and config options a session answer (`session/new`, `load`, `resume`) carries.
pub fn session_settings(
    modes: Option<&SessionModeState>,
    options: Option<&[SessionConfigOption]>,
) -> SessionSettings {
    SessionSettings {
        modes: modes
            .map(|m| {
                m.available_modes
                    .iter()
                    .map(|m| (m.id.0.to_string(), m.name.clone()))
                    .collect()
            })
            .unwrap_or_default(),
        current_mode: modes.map(|m| m.current_mode_id.0.to_string()),
        options: options
            .map(|o| config_options(o.to_vec()))
            .unwrap_or_default(),
    }
}

/// The core's config options for the SDK's; kinds this version does not know are left out.
pub fn config_options(options: Vec<SessionConfigOption>) -> Vec<ConfigOption> {
    options
        .into_iter()
        .filter_map(|o| {
            let value = match o.kind {
                SessionConfigKind::Select(select) => ConfigValue::Choice {
                    current: select.current_value.0.to_string(),
                    choices: match select.options {
                        SessionConfigSelectOptions::Ungrouped(list) => list,
                        SessionConfigSelectOptions::Grouped(groups) => {
                            groups.into_iter().flat_map(|g| g.options).collect()
                        }
                        _ => Vec::new(),
                    }
                    .into_iter()
                    .map(|c| (c.value.0.to_string(), c.name))
                    .collect(),
                },
                SessionConfigKind::Boolean(b) => ConfigValue::Toggle(b.current_value),
                _ => return None,
            };
            Some(ConfigOption {
                id: o.id.0.to_string(),
                name: o.name,
                category: o.category.map(|c| match c {
                    SessionConfigOptionCategory::Mode => "mode".to_owned(),
                    SessionConfigOptionCategory::Model => "model".to_owned(),
                    SessionConfigOptionCategory::ModelConfig => "model_config".to_owned(),
                    SessionConfigOptionCategory::ThoughtLevel => "thought_level".to_owned(),
                    SessionConfigOptionCategory::Other(word) => word,
                    _ => "other".to_owned(),
                }),
                value,
            })
        })
        .collect()
}

/// The SDK's value for a new config option value.
pub fn config_value(choice: ConfigChoice) -> SessionConfigOptionValue {
    match choice {
        ConfigChoice::Value(id) => SessionConfigOptionValue::value_id(id),
        ConfigChoice::Toggle(on) => SessionConfigOptionValue::boolean(on),
    }
}

/// The core's permission request for the SDK's, answered through `reply`.
pub fn permission_request(
    r: &RequestPermissionRequest,
    reply: oneshot::Sender<PermissionAnswer>,
) -> PermissionRequest {
    PermissionRequest {
        tool: tool_fields(
            r.tool_call.tool_call_id.0.to_string(),
            r.tool_call.fields.clone(),
        ),
        options: r
            .options
            .iter()
            .map(|o| PermissionOption {
                id: PermissionOptionId::new(o.option_id.0.to_string()),
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
        resumes_when_allowed: false,
        reply,
    }
}

/// The protocol version named in the SDK's version-mismatch error, if that is what it is.
pub fn spoken_version(data: &str) -> Option<u16> {
    ["unsupported ACP protocol version ", "but peer negotiated "]
        .iter()
        .find_map(|marker| data.split_once(marker))
        .and_then(|(_, rest)| {
            rest.split(|c: char| !c.is_ascii_digit())
                .next()?
                .parse()
                .ok()
        })
}

#[cfg(test)]
mod tests;
