//! The MCP side: the only module that imports the MCP SDK (`rmcp`). It serves each
//! session's room tools ([`crate::core::room_tools`]) as a built-in MCP server, reached by
//! the agent over loopback HTTP with the session's token, or over stdio through a small
//! command (`sidekicks mcp-stdio`) that passes the protocol on to the gateway; and it holds
//! the MCP client the demo agent uses to call tools. See `docs/room-tools.md`.

pub mod bridge;
pub mod client;
mod host;
mod tools;

pub use host::McpHost;

/// The name the built-in server has for agents (Claude Code calls its tools
/// `mcp__sidekicks__…`).
pub const SERVER_NAME: &str = "sidekicks";
/// The variable the stdio command finds the gateway's address in.
pub const ADDRESS_VAR: &str = "SIDEKICKS_MCP_ADDRESS";
/// The variable the stdio command finds the session's token in.
pub const TOKEN_VAR: &str = "SIDEKICKS_MCP_TOKEN";
