//! The channel's session slot, a part of its own: the ACP session the conversation has open,
//! if any, its updates, its settings as the agent last reported them, and whether it still
//! owes the agent the earlier conversation. The channel opens, fences and leaves sessions
//! (`session.rs`, `modes.rs`); this part only holds one, behind methods.

use tokio::sync::mpsc;

use crate::core::agent::{AgentSession, NewSession};
use crate::core::room_tools::Grant;
use crate::model::agent::{AgentEvent, SessionSettings};
use crate::model::ids::{EventId, SessionId};

/// The conversation's open session, if one is.
#[derive(Default)]
pub(super) struct SessionSlot {
    /// The session; `None` until the first prompt or command that needs one, and after
    /// it was left.
    open: Option<Session>,
}

/// An open ACP session.
struct Session {
    /// The session, as the agent opened it.
    handle: AgentSession,
    /// The session's updates, in the order the agent sent them.
    events: mpsc::Receiver<AgentEvent>,
    /// Its modes and config options, kept up to date with the agent's updates.
    settings: SessionSettings,
    /// Whether it is new and the earlier conversation has not been given to it yet: its
    /// first ordinary prompt carries it (a command may open the session before any
    /// prompt, and a slash command must start its prompt).
    fresh: bool,
    /// The first prompt it was sent: what came before it is the earlier conversation.
    first_prompt: Option<EventId>,
    /// The room tools opened to it: they close when it is left (dropped with it).
    _tools: Option<Grant>,
    /// Whether its agent said it has no modes (no `session/set_mode`), so that a session
    /// reporting none is not one whose mode is unknown.
    modeless: bool,
}

impl SessionSlot {
    /// Holds `session`, which the agent just opened: new, it does not know the earlier
    /// conversation, so its first ordinary prompt carries it.
    pub(super) fn put_new(&mut self, session: NewSession, tools: Option<Grant>) {
        self.put(session, tools, true);
    }

    /// Holds `session`, which the agent got back (loaded, resumed, attached): it remembers
    /// its conversation, so nothing is re-injected.
    pub(super) fn put_reopened(&mut self, session: NewSession, tools: Option<Grant>) {
        self.put(session, tools, false);
    }

    fn put(&mut self, session: NewSession, tools: Option<Grant>, fresh: bool) {
        self.open = Some(Session {
            handle: session.session,
            events: session.events,
            settings: session.settings,
            fresh,
            first_prompt: None,
            _tools: tools,
            modeless: false,
        });
    }

    /// Records that the session's agent has no modes at all.
    pub(super) fn mark_modeless(&mut self) {
        if let Some(open) = self.open.as_mut() {
            open.modeless = true;
        }
    }

    /// Whether the session's agent said it has no modes at all.
    pub(super) fn is_modeless(&self) -> bool {
        self.open.as_ref().is_some_and(|s| s.modeless)
    }

    /// Lets go of the session, its room tools closed; the session, for the agent to forget
    /// or close it.
    pub(super) fn take(&mut self) -> Option<AgentSession> {
        self.open.take().map(|session| session.handle)
    }

    /// Whether a session is open.
    pub(super) fn is_open(&self) -> bool {
        self.open.is_some()
    }

    /// The open session's ID.
    pub(super) fn id(&self) -> Option<&SessionId> {
        self.open.as_ref().map(|s| s.handle.id())
    }

    /// The open session, to prompt or change.
    pub(super) fn session(&self) -> Option<&AgentSession> {
        self.open.as_ref().map(|s| &s.handle)
    }

    /// Whether the open session is new and has not had the earlier conversation yet.
    pub(super) fn is_fresh(&self) -> bool {
        self.open.as_ref().is_some_and(|s| s.fresh)
    }

    /// The open session's modes and config options.
    pub(super) fn settings(&self) -> Option<&SessionSettings> {
        self.open.as_ref().map(|s| &s.settings)
    }

    /// The open session's modes and config options, to change as the agent reports.
    pub(super) fn settings_mut(&mut self) -> Option<&mut SessionSettings> {
        self.open.as_mut().map(|s| &mut s.settings)
    }

    /// A prompt, `event`, goes to the open session. Its first prompt is remembered; when it
    /// is fresh and `carries` (an ordinary prompt, not a slash command, which must start
    /// its prompt), the earlier conversation goes with it: the event before which the
    /// conversation is earlier is returned, and the session is fresh no more.
    pub(super) fn begin_prompt(&mut self, event: &EventId, carries: bool) -> Option<EventId> {
        let session = self.open.as_mut()?;
        let first = session.first_prompt.get_or_insert_with(|| event.clone());
        (carries && std::mem::replace(&mut session.fresh, false)).then(|| first.clone())
    }

    /// The open session's next update; never, while no session is open.
    pub(super) async fn next_update(&mut self) -> Option<AgentEvent> {
        match &mut self.open {
            Some(session) => session.events.recv().await,
            None => std::future::pending().await,
        }
    }

    /// An update of the open session that is already queued, if one is.
    pub(super) fn queued_update(&mut self) -> Option<AgentEvent> {
        self.open.as_mut()?.events.try_recv().ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::agent::Replayed;

    fn session(id: &str) -> (NewSession, mpsc::Sender<AgentEvent>) {
        let (tx, events) = mpsc::channel(4);
        let session = NewSession {
            session: crate::core::fakes::idle_session(id),
            settings: SessionSettings::default(),
            events,
            replayed: Replayed::default(),
        };
        (session, tx)
    }

    #[test]
    fn a_new_session_carries_the_conversation_once_and_not_with_a_slash_command() {
        let mut slot = SessionSlot::default();
        assert!(!slot.is_open());
        assert_eq!(
            slot.begin_prompt(&EventId::new("$0"), true),
            None,
            "none open"
        );
        let (new, _tx) = session("s1");
        slot.put_new(new, None);
        assert!(slot.is_fresh());
        // A slash command first: the session stays fresh, its first prompt is the command.
        assert_eq!(slot.begin_prompt(&EventId::new("$1"), false), None);
        assert!(slot.is_fresh());
        assert_eq!(
            slot.begin_prompt(&EventId::new("$2"), true),
            Some(EventId::new("$1")),
            "the earlier conversation is what came before the first prompt"
        );
        assert!(!slot.is_fresh());
        assert_eq!(slot.begin_prompt(&EventId::new("$3"), true), None);
        assert_eq!(
            slot.take().map(|s| s.id().to_string()).as_deref(),
            Some("s1")
        );
        assert!(!slot.is_open() && slot.take().is_none());
    }

    #[test]
    fn a_reopened_session_is_given_nothing_again() {
        let mut slot = SessionSlot::default();
        let (back, _tx) = session("s2");
        slot.put_reopened(back, None);
        assert_eq!(slot.id().map(SessionId::as_str), Some("s2"));
        assert_eq!(slot.begin_prompt(&EventId::new("$1"), true), None);
    }

    #[tokio::test]
    async fn updates_come_in_order_and_never_without_a_session() {
        let mut slot = SessionSlot::default();
        let waited = tokio::time::timeout(std::time::Duration::from_millis(20), slot.next_update());
        assert!(waited.await.is_err(), "no session: no update, ever");
        let (new, tx) = session("s3");
        slot.put_new(new, None);
        tx.send(AgentEvent::Title(Some("one".into())))
            .await
            .unwrap();
        tx.send(AgentEvent::Title(Some("two".into())))
            .await
            .unwrap();
        assert!(matches!(slot.next_update().await, Some(AgentEvent::Title(Some(t))) if t == "one"));
        assert!(matches!(slot.queued_update(), Some(AgentEvent::Title(Some(t))) if t == "two"));
        assert!(slot.queued_update().is_none());
    }
}
