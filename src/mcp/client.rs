//! A small MCP client: connect to a server the way a session was given it, list its tools
//! or call one, and hang up. The demo agent uses it to exercise the room tools end to end.

use std::path::PathBuf;

use rmcp::ServiceExt;
use rmcp::model::CallToolRequestParams;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::transport::{StreamableHttpClientTransport, TokioChildProcess};

/// Where an MCP server is, as a session was given it.
#[derive(Debug, Clone)]
pub enum Endpoint {
    /// A command to start, speaking over its stdin and stdout.
    Stdio {
        /// The program.
        command: PathBuf,
        /// Its arguments.
        args: Vec<String>,
        /// Variables set for it.
        env: Vec<(String, String)>,
    },
    /// An HTTP URL.
    Http {
        /// The URL.
        url: String,
        /// Headers sent with each request.
        headers: Vec<(String, String)>,
    },
}

/// What a tool answered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolAnswer {
    /// Its text.
    pub text: String,
    /// Whether the tool said it failed.
    pub failed: bool,
}

/// Calls tool `name` with `arguments` (a JSON object) on the server at `endpoint`, or lists
/// its tools when `name` is empty; an error says why the server could not be asked.
pub async fn call_tool(
    endpoint: &Endpoint,
    name: &str,
    arguments: serde_json::Value,
) -> Result<ToolAnswer, String> {
    let client = match endpoint {
        Endpoint::Stdio { command, args, env } => {
            let mut cmd = tokio::process::Command::new(command);
            cmd.args(args).envs(env.iter().map(|(k, v)| (k, v)));
            let transport = TokioChildProcess::new(cmd).map_err(|e| e.to_string())?;
            ().serve(transport).await.map_err(|e| e.to_string())?
        }
        Endpoint::Http { url, headers } => {
            let mut config = StreamableHttpClientTransportConfig::with_uri(url.as_str());
            for (key, value) in headers {
                match value.strip_prefix("Bearer ") {
                    Some(token) if key.eq_ignore_ascii_case("authorization") => {
                        config = config.auth_header(token);
                    }
                    _ => return Err(format!("header {key} is not supported by this client")),
                }
            }
            let transport = StreamableHttpClientTransport::from_config(config);
            ().serve(transport).await.map_err(|e| e.to_string())?
        }
    };
    let answer = if name.is_empty() {
        let tools = client.list_all_tools().await.map_err(|e| e.to_string())?;
        let names: Vec<String> = tools.iter().map(|t| t.name.to_string()).collect();
        ToolAnswer {
            text: names.join(", "),
            failed: false,
        }
    } else {
        let arguments = match arguments {
            serde_json::Value::Object(map) => map,
            serde_json::Value::Null => Default::default(),
            other => return Err(format!("arguments must be a JSON object, not {other}")),
        };
        let params = CallToolRequestParams::new(name.to_owned()).with_arguments(arguments);
        let result = client.call_tool(params).await.map_err(|e| e.to_string())?;
        let text: Vec<String> = (result.content.iter())
            .filter_map(|c| c.as_text().map(|t| t.text.clone()))
            .collect();
        ToolAnswer {
            text: text.join("\n"),
            failed: result.is_error == Some(true),
        }
    };
    let _ = client.cancel().await;
    Ok(answer)
}
