//! The client's `session/request_permission`: the agent's question handed to its session's
//! queue as a permission request for the room to answer, and the answer sent back: the
//! option the room chose, or `cancelled` when the turn ended without one. See
//! `docs/acp-client.md`.

use std::sync::{Arc, Mutex};

use agent_client_protocol::v1::Responder;
use agent_client_protocol::v1::schema::{
    RequestPermissionOutcome, RequestPermissionRequest, RequestPermissionResponse,
    SelectedPermissionOutcome,
};
use tokio::sync::oneshot;

use super::events;
use super::sessions::Sessions;
use crate::model::agent::{AgentEvent, PermissionAnswer};
use crate::model::ids::PermissionOptionId;

/// Serves one `session/request_permission`: delivers it to its session and answers the
/// agent once the room has. The answer is awaited outside the dispatch loop, so other
/// messages and cancellations keep flowing while the question is open.
pub fn serve(
    sessions: &Arc<Mutex<Sessions>>,
    request: RequestPermissionRequest,
    responder: Responder<RequestPermissionResponse>,
) {
    let session = request.session_id.0.to_string();
    let (reply, answer) = oneshot::channel();
    let asked = events::permission_request(&request, reply);
    // Which answers refuse is the model's to say (`PermissionKind::refuses`); the turn's
    // end needs it, the card's status is the core's.
    let refusals: Vec<PermissionOptionId> = (asked.options.iter())
        .filter(|o| o.kind.refuses())
        .map(|o| o.id.clone())
        .collect();
    sessions
        .lock()
        .expect("sessions poisoned")
        .deliver(&session, AgentEvent::Permission(asked));
    let answered = sessions.clone();
    tokio::spawn(async move {
        let outcome = match answer.await {
            Ok(PermissionAnswer::Selected(id)) => {
                if refusals.contains(&id) {
                    (answered.lock().expect("sessions poisoned")).refused(&session);
                }
                RequestPermissionOutcome::Selected(SelectedPermissionOutcome::new(String::from(id)))
            }
            Ok(PermissionAnswer::Cancelled) | Err(_) => RequestPermissionOutcome::Cancelled,
        };
        let _ = responder.respond(RequestPermissionResponse::new(outcome));
    });
}
