//! Sidekicks: a gateway that brings ACP coding agents into Matrix rooms.
//!
//! Data flows one way: a Matrix event ([`matrix`]) becomes a core decision ([`core`]), which
//! becomes an ACP call ([`acp`]); the agent's updates come back to the core, which renders
//! them ([`render`]) and sends them through the agent's Matrix user; the agent's room tools are
//! served over MCP ([`mcp`]). [`app`] wires it all and
//! owns start-up and shutdown. See `docs/architecture.md`.

pub mod acp;
pub mod app;
pub mod config;
pub mod core;
pub mod http_server;
pub mod matrix;
pub mod mcp;
pub mod model;
pub mod remote;
pub mod render;
pub mod state_dir;
pub mod store;
pub mod transcribe;
pub mod workspace;
