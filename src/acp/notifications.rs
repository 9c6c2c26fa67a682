//! Notifications from an agent, routed to the session they are about: `session/update`,
//! background task reports, and the mode reports some agents send under a name of their
//! own (`dialect::MODE_NOTIFICATIONS`).

use std::sync::Mutex;

use agent_client_protocol::UntypedMessage;
use agent_client_protocol::v1::schema::SessionNotification;

use super::client_terminal::Terminals;
use super::dialect;
use super::events;
use super::sessions::Sessions;
use super::tasks;
use crate::model::agent::AgentEvent;
use crate::model::ids::AgentId;

/// A notification from the agent: a `session/update` goes to its session's queue (with the
/// terminals it shows embedded), as does a vendor's mode report or background task report;
/// anything else is skipped. Parsed here rather than by the
/// SDK, so an update kind this version does not know is skipped instead of tearing the
/// connection down.
pub(super) fn deliver(
    agent: &AgentId,
    sessions: &Mutex<Sessions>,
    terminals: &Terminals,
    message: UntypedMessage,
) {
    if let Some((session, mode)) = dialect::mode_notification(&message.method, &message.params) {
        (sessions.lock().expect("sessions poisoned"))
            .deliver(&session, AgentEvent::ModeChanged(mode));
        return;
    }
    if message.method != "session/update" {
        tracing::debug!(agent = %agent, method = %message.method, "ignoring notification");
        return;
    }
    match serde_json::from_value::<SessionNotification>(message.params.clone()) {
        Ok(mut n) => {
            terminals.embed(&n.session_id.0, &mut n.update);
            let event = events::session_update(n.update);
            (sessions.lock().expect("sessions poisoned")).deliver(&n.session_id.0, event);
        }
        Err(_) if let Some((session, report)) = tasks::notification(&message.params) => {
            (sessions.lock().expect("sessions poisoned"))
                .deliver(session, AgentEvent::Task(report));
        }
        Err(_) => {
            let kind = (message.params.pointer("/update/sessionUpdate"))
                .and_then(|v| v.as_str())
                .unwrap_or("?");
            tracing::debug!(agent = %agent, kind, "ignoring an update kind this version does not know");
        }
    }
}
