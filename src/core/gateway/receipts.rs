//! Read receipts, one per burst: a receipt says "read up to here" (Matrix receipts are
//! cumulative within the main timeline or one thread), so of the messages an agent takes in
//! one room and thread within a moment of each other (a backlog after an outage, a person
//! typing fast), only the newest needs one. Each taken message is noted here; when its
//! moment has passed, its receipt is sent only if no newer message took its place.

use std::collections::HashMap;
use std::sync::Mutex;

use crate::model::ids::{AgentId, EventId, RoomId};

/// Where a receipt applies: the agent reading, the room, and the thread (`None`: the main
/// timeline).
pub(super) type ReceiptKey = (AgentId, RoomId, Option<EventId>);

/// The newest message taken in, by where its receipt applies, whose receipt is not sent yet.
#[derive(Default)]
pub(super) struct Receipts(Mutex<HashMap<ReceiptKey, EventId>>);

impl Receipts {
    /// `event` was taken in at `key`: it is the newest there now.
    pub(super) fn taken(&self, key: ReceiptKey, event: EventId) {
        self.0.lock().expect("receipts poisoned").insert(key, event);
    }

    /// Whether `event`'s receipt is to be sent now: it is still the newest at `key` (and is
    /// forgotten). `false`: a newer message's receipt covers it.
    pub(super) fn due(&self, key: &ReceiptKey, event: &EventId) -> bool {
        let mut newest = self.0.lock().expect("receipts poisoned");
        match newest.get(key) == Some(event) {
            true => {
                newest.remove(key);
                true
            }
            false => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn of_a_burst_only_the_newest_is_due_and_each_place_keeps_its_own() {
        let r = Receipts::default();
        let key = |thread: Option<&str>| -> ReceiptKey {
            ("demo".into(), "!r".into(), thread.map(EventId::from))
        };
        for e in ["$1", "$2", "$3"] {
            r.taken(key(None), e.into());
        }
        r.taken(key(Some("$t")), "$4".into());
        assert!(!r.due(&key(None), &"$1".into()));
        assert!(!r.due(&key(None), &"$2".into()));
        assert!(r.due(&key(None), &"$3".into()));
        assert!(!r.due(&key(None), &"$3".into()), "sent once");
        assert!(r.due(&key(Some("$t")), &"$4".into()), "a thread's own");
    }
}
