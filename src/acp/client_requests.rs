//! Every request and notification an agent sends its client, routed to the file that
//! serves it: files (`client_fs.rs`), terminals (`client_terminal.rs`), permission
//! questions (`client_permission.rs`), the agent's own questions (`client_question.rs`)
//! and session updates (`notifications.rs`). One handler takes the SDK's `AgentRequest`
//! and matches it, so adding a method is one arm here and its file, and the connection
//! registers two handlers instead of one per method.

use std::path::Path;
use std::sync::{Arc, Mutex};

use agent_client_protocol::UntypedMessage;
use agent_client_protocol::v1::Responder;
use agent_client_protocol::v1::schema::{AgentRequest, ReadTextFileRequest, WriteTextFileRequest};

use super::client_terminal::{self, Terminals};
use super::sessions::Sessions;
use super::{client_fs, client_permission, client_question, notifications};
use crate::model::ids::AgentId;
use crate::workspace::folder::Folder;

/// What the client serves one agent process with: its sessions and terminals.
#[derive(Clone)]
pub(super) struct Served {
    pub agent: AgentId,
    pub sessions: Arc<Mutex<Sessions>>,
    pub terminals: Arc<Terminals>,
    /// Whether the agent may reach its conversations' files through the client.
    pub file_access: bool,
}

impl Served {
    /// Serves one request. Each answer that waits (on a person, a command, the disk) is
    /// given off the dispatch loop, which must never wait (`stack-facts`: a handler that
    /// awaits blocks every other message of the connection).
    pub fn request(&self, request: AgentRequest, responder: Responder<serde_json::Value>) {
        match request {
            AgentRequest::ReadTextFileRequest(r) => self.read(r, responder.cast()),
            AgentRequest::WriteTextFileRequest(r) => self.write(r, responder.cast()),
            AgentRequest::RequestPermissionRequest(r) => {
                client_permission::serve(&self.sessions, r, responder.cast())
            }
            AgentRequest::CreateElicitationRequest(r) => {
                client_question::serve(&self.agent, &self.sessions, r, responder.cast())
            }
            AgentRequest::CreateTerminalRequest(r) => {
                client_terminal::serve_create(&self.terminals, r, responder.cast())
            }
            AgentRequest::TerminalOutputRequest(r) => {
                client_terminal::serve_output(&self.terminals, r, responder.cast())
            }
            AgentRequest::WaitForTerminalExitRequest(r) => {
                client_terminal::serve_wait(&self.terminals, r, responder.cast())
            }
            AgentRequest::KillTerminalRequest(r) => {
                client_terminal::serve_kill(&self.terminals, r, responder.cast())
            }
            AgentRequest::ReleaseTerminalRequest(r) => {
                client_terminal::serve_release(&self.terminals, r, responder.cast())
            }
            // Extension methods and any the SDK learns later: not ours to serve.
            _ => {
                let _ =
                    responder.respond_with_error(agent_client_protocol::Error::method_not_found());
            }
        }
    }

    /// Delivers one notification to the session it is about.
    pub fn notification(&self, message: UntypedMessage) {
        notifications::deliver(&self.agent, &self.sessions, &self.terminals, message);
    }

    /// A session's folder, when the agent may reach files through us.
    fn folder(&self, session: &str) -> Option<Arc<Folder>> {
        let sessions = self.sessions.lock().expect("sessions poisoned");
        sessions.folder(session).filter(|_| self.file_access)
    }

    fn read(
        &self,
        request: ReadTextFileRequest,
        responder: Responder<agent_client_protocol::v1::schema::ReadTextFileResponse>,
    ) {
        let root = self.folder(&request.session_id.0);
        let empty = (self.sessions.lock().expect("sessions poisoned")).missing_file_reads_empty();
        client_fs::serve_read(&self.agent, root, empty, request, responder);
    }

    fn write(
        &self,
        request: WriteTextFileRequest,
        responder: Responder<agent_client_protocol::v1::schema::WriteTextFileResponse>,
    ) {
        let session = request.session_id.0.to_string();
        let root = self.folder(&session);
        let cards = self.sessions.clone();
        // The write's card shows the diff before the agent hears the write was made.
        let shown = move |path: &Path, old: Option<String>, new: &str| {
            (cards.lock().expect("sessions poisoned")).show_write(&session, path, old, new);
        };
        client_fs::serve_write(&self.agent, root, request, responder, shown);
    }
}
