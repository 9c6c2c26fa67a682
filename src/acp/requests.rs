//! The work an [`AcpAgent`](super::AcpAgent) hands the task that owns the SDK connection:
//! one variant per request it makes of the agent, each with where its answer goes.

use std::path::PathBuf;

use agent_client_protocol::v1::schema::{
    ContentBlock, ListSessionsResponse, NewSessionResponse, PromptResponse, SessionConfigOption,
    SessionConfigOptionValue,
};
use tokio::sync::oneshot;

use crate::model::agent::{Reopen, SessionTools};

/// Work for the task that owns the SDK connection.
pub(super) enum Request {
    /// `session/new` with this working folder.
    NewSession {
        /// The session's `cwd`.
        cwd: PathBuf,
        /// The gateway's room tools for it.
        tools: Option<SessionTools>,
        /// Where the answer goes.
        reply: oneshot::Sender<Result<NewSessionResponse, agent_client_protocol::Error>>,
    },
    /// `session/load` or `session/resume` of an earlier session.
    Reopen {
        /// Which of the two.
        how: Reopen,
        /// The session to get back.
        session: String,
        /// The session's `cwd`.
        cwd: PathBuf,
        /// The gateway's room tools for it.
        tools: Option<SessionTools>,
        /// Where the answer goes (the new-session shape: only the settings matter).
        reply: oneshot::Sender<Result<NewSessionResponse, agent_client_protocol::Error>>,
    },
    /// `session/prompt`.
    Prompt {
        /// The session.
        session: String,
        /// The prompt's content blocks.
        blocks: Vec<ContentBlock>,
        /// Where the answer goes.
        reply: oneshot::Sender<Result<PromptResponse, agent_client_protocol::Error>>,
    },
    /// `session/set_mode`.
    SetMode {
        /// The session.
        session: String,
        /// The mode to switch to.
        mode: String,
        /// Where the answer goes.
        reply: oneshot::Sender<Result<(), agent_client_protocol::Error>>,
    },
    /// `session/set_config_option`.
    SetOption {
        /// The session.
        session: String,
        /// The option to change.
        option: String,
        /// Its new value.
        value: SessionConfigOptionValue,
        /// Where the answer goes: every option as the agent now has them.
        reply: oneshot::Sender<Result<Vec<SessionConfigOption>, agent_client_protocol::Error>>,
    },
    /// `session/list`, one page.
    List {
        /// The working folder the sessions must have.
        cwd: PathBuf,
        /// Where the previous page ended, if anywhere.
        cursor: Option<String>,
        /// Where the answer goes.
        reply: oneshot::Sender<Result<ListSessionsResponse, agent_client_protocol::Error>>,
    },
    /// `authenticate`.
    Authenticate {
        /// The sign-in method's ID.
        method: String,
        /// Where the answer goes.
        reply: oneshot::Sender<Result<(), agent_client_protocol::Error>>,
    },
    /// `session/close`.
    Close {
        /// The session to free.
        session: String,
        /// Where the answer goes.
        reply: oneshot::Sender<Result<(), agent_client_protocol::Error>>,
    },
    /// `session/cancel` (a notification: no answer).
    Cancel {
        /// The session whose turn to stop.
        session: String,
    },
}
