//! The room tools as MCP tools: names, descriptions and parameters as agents see them, each
//! answered by the session's [`RoomScope`]. A refusal is a tool error the agent reads.

use std::sync::Arc;

use rmcp::handler::server::wrapper::Parameters;
use rmcp::{ServerHandler, schemars, tool, tool_handler, tool_router};
use serde::Deserialize;

use crate::core::room_tools::RoomScope;

/// One session's room tools.
#[derive(Clone)]
pub struct RoomToolsServer {
    /// The room (and thread) they reach.
    scope: Arc<RoomScope>,
}

impl RoomToolsServer {
    /// The tools of `scope`.
    pub fn new(scope: Arc<RoomScope>) -> Self {
        Self { scope }
    }
}

/// How many messages.
#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[schemars(crate = "rmcp::schemars")]
pub struct RecentParams {
    /// How many of the latest messages (default 20, at most 100).
    pub limit: Option<usize>,
}

/// What to look for.
#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[schemars(crate = "rmcp::schemars")]
pub struct SearchParams {
    /// Text to find in messages, senders or file names (case does not matter).
    pub query: String,
    /// How many matches at most (default 20, at most 100); the latest are returned.
    pub limit: Option<usize>,
}

/// Which message's file.
#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[schemars(crate = "rmcp::schemars")]
pub struct FetchParams {
    /// The event ID of a message of this room that carries a file (as listed by
    /// recent_messages or search_messages).
    pub event_id: String,
}

/// Which file to post.
#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[schemars(crate = "rmcp::schemars")]
pub struct PostParams {
    /// The file, relative to the workspace or absolute inside it.
    pub path: String,
    /// Text shown with it (default: its name).
    pub caption: Option<String>,
}

#[tool_router]
impl RoomToolsServer {
    /// The latest messages.
    #[tool(
        description = "Read the latest messages of this chat conversation (in a thread: that thread), oldest first, one per line starting with [time], with sender and event ID, and the files they carry; a message of several lines continues on lines indented by four spaces."
    )]
    async fn recent_messages(
        &self,
        Parameters(p): Parameters<RecentParams>,
    ) -> Result<String, String> {
        self.scope.recent(p.limit).await.map_err(|e| e.to_string())
    }

    /// A search.
    #[tool(
        description = "Search the latest 500 messages of this chat conversation for text (in the message, the sender or a file name; case does not matter)."
    )]
    async fn search_messages(
        &self,
        Parameters(p): Parameters<SearchParams>,
    ) -> Result<String, String> {
        self.scope
            .search(&p.query, p.limit)
            .await
            .map_err(|e| e.to_string())
    }

    /// A file into the workspace.
    #[tool(
        description = "Save the file (picture, document…) of a message of this room into the workspace; returns the path it was saved at."
    )]
    async fn fetch_attachment(
        &self,
        Parameters(p): Parameters<FetchParams>,
    ) -> Result<String, String> {
        self.scope
            .fetch_attachment(&p.event_id)
            .await
            .map_err(|e| e.to_string())
    }

    /// A file into the room.
    #[tool(
        description = "Post a file of the workspace to this chat conversation (a picture is shown as one); returns the new message's event ID."
    )]
    async fn post_file(&self, Parameters(p): Parameters<PostParams>) -> Result<String, String> {
        (self.scope.post_file(&p.path, p.caption.as_deref()).await).map_err(|e| e.to_string())
    }

    /// The members.
    #[tool(
        description = "List the members of this room: user ID, display name, and whether only invited."
    )]
    async fn list_members(&self) -> Result<String, String> {
        self.scope.members().await.map_err(|e| e.to_string())
    }
}

#[tool_handler(
    name = "sidekicks",
    instructions = "Tools for the chat room this conversation happens in: read and search what people said, fetch the files they sent into the workspace, post files to the room, list who is there. They reach this room only."
)]
impl ServerHandler for RoomToolsServer {}
