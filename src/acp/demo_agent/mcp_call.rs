//! `%mcp-call SERVER TOOL [JSON]`: the demo agent calls a tool of an MCP server its session
//! was given (the gateway's room tools, or any configured one), the way a real agent does,
//! and says what it answered. With TOOL `-`, it lists the server's tools.

use agent_client_protocol::v1::schema::McpServer;

use crate::mcp::client::{Endpoint, call_tool};

/// What to say after calling the tool `arg` names (`SERVER TOOL [JSON]`) on one of `servers`.
pub(super) async fn call(servers: &[McpServer], arg: &str) -> String {
    let mut parts = arg.trim().splitn(3, ' ');
    let (server, tool) = (
        parts.next().unwrap_or_default(),
        parts.next().unwrap_or_default(),
    );
    let json = parts.next().unwrap_or("{}").trim();
    let Some(endpoint) = servers.iter().find_map(|s| endpoint(s, server)) else {
        return format!("mcp-call: no MCP server named {server:?}\n");
    };
    let arguments = match serde_json::from_str(json) {
        Ok(v) => v,
        Err(e) => return format!("mcp-call: the arguments are not JSON: {e}\n"),
    };
    let tool = if tool == "-" { "" } else { tool };
    match call_tool(&endpoint, tool, arguments).await {
        Ok(answer) if answer.failed => format!("mcp-call {tool} failed: {}\n", answer.text),
        Ok(answer) if tool.is_empty() => format!("mcp tools: {}\n", answer.text),
        Ok(answer) => format!("mcp-call {tool}:\n{}\n", answer.text),
        Err(e) => format!("mcp-call: {server} cannot be reached: {e}\n"),
    }
}

/// Where `server` is, if it is named `name`.
fn endpoint(server: &McpServer, name: &str) -> Option<Endpoint> {
    match server {
        McpServer::Stdio(s) if s.name == name => Some(Endpoint::Stdio {
            command: s.command.clone(),
            args: s.args.clone(),
            env: s
                .env
                .iter()
                .map(|e| (e.name.clone(), e.value.clone()))
                .collect(),
        }),
        McpServer::Http(h) if h.name == name => Some(Endpoint::Http {
            url: h.url.clone(),
            headers: (h.headers.iter())
                .map(|e| (e.name.clone(), e.value.clone()))
                .collect(),
        }),
        _ => None,
    }
}
