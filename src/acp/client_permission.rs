//! The client's `session/request_permission`: the agent's question handed to its session's
//! queue as a permission request for the room to answer, and the answer sent back: the
//! option the room chose, or `cancelled` when the turn ended without one. See
//! `docs/acp-client.md`.

use std::sync::{Arc, Mutex};

use agent_client_protocol::v1::Responder;
use agent_client_protocol::v1::schema::{
    PermissionOptionKind, RequestPermissionOutcome, RequestPermissionRequest,
    RequestPermissionResponse, SelectedPermissionOutcome,
};
use tokio::sync::oneshot;

use super::events;
use super::sessions::Sessions;
use crate::model::agent::PermissionAnswer;

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
    let event = events::permission_request(&request, reply);
    sessions
        .lock()
        .expect("sessions poisoned")
        .deliver(&session, event);
    let refusals = refusals(&request);
    let answered = sessions.clone();
    let tool = request.tool_call.tool_call_id.0.to_string();
    tokio::spawn(async move {
        let outcome = match answer.await {
            Ok(PermissionAnswer::Selected(id)) => {
                // Before the agent hears it, the call's card is made to read right.
                let refused = refusals.contains(&id);
                (answered.lock().expect("sessions poisoned")).answered(&session, &tool, refused);
                RequestPermissionOutcome::Selected(SelectedPermissionOutcome::new(id))
            }
            Ok(PermissionAnswer::Cancelled) | Err(_) => RequestPermissionOutcome::Cancelled,
        };
        let _ = responder.respond(RequestPermissionResponse::new(outcome));
    });
}

/// The IDs of `request`'s options that refuse the tool.
fn refusals(request: &RequestPermissionRequest) -> Vec<String> {
    (request.options.iter())
        .filter(|o| {
            matches!(
                o.kind,
                PermissionOptionKind::RejectOnce | PermissionOptionKind::RejectAlways
            )
        })
        .map(|o| o.option_id.0.to_string())
        .collect()
}
