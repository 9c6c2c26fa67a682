//! The prompts waiting behind a channel's running turn: the order they run in, how many may
//! wait (`queue.max_waiting`), when they are marked ⏳, and their count in the queue metric.
//! The channel asks it through these methods; nothing else holds the prompts.

use std::collections::VecDeque;
use std::time::Duration;

use tokio::time::Instant;

use crate::core::inbound::IncomingMessage;
use crate::model::ids::{AgentId, EventId, UserId};

/// A prompt waiting for its turn.
pub(super) struct Queued {
    /// The message.
    pub(super) message: IncomingMessage,
    /// The "queued" reaction put on it, removed when its turn starts.
    pub(super) reaction: Option<EventId>,
    /// Whether it is the re-run of a prompt a crash cut (or `!retry` sends again).
    pub(super) rerun: bool,
    /// Whether `!retry` sends it again: its answer is a new one each time.
    pub(super) retried: bool,
    /// Whether it runs again because it was edited while it was being answered
    /// (`continuity.rerun_edited`): its answer is a new one.
    pub(super) edited: bool,
    /// Whether it stopped the turn before it (`!queue interrupt`): the agent is told its
    /// previous answer was cut.
    pub(super) interrupting: bool,
    /// Whether it is to be marked ⏳ once the turn ahead of it has run [`MARK_AFTER`] (it
    /// came while a turn ran, and that turn was younger).
    pub(super) awaits_mark: bool,
}

/// How long the turn ahead runs before the prompts waiting behind it are marked ⏳. A prompt
/// answered within a moment needs no mark: the answer is the sign it was seen. Marking each
/// prompt of a backlog answered one after another would cost the room two events per prompt
/// (the mark and its removal), which the homeserver takes in one at a time per room, ahead
/// of the answers.
pub(super) const MARK_AFTER: Duration = Duration::from_secs(1);

impl Queued {
    /// `message`, waiting as written.
    pub(super) fn new(message: IncomingMessage) -> Self {
        Self {
            message,
            reaction: None,
            rerun: false,
            retried: false,
            edited: false,
            interrupting: false,
            awaits_mark: false,
        }
    }

    /// `message` again, after a crash cut its turn.
    pub(super) fn rerun(message: IncomingMessage) -> Self {
        Self {
            rerun: true,
            ..Self::new(message)
        }
    }

    /// `message` again, at `!retry`: recorded already, answered anew.
    pub(super) fn retried(message: IncomingMessage) -> Self {
        Self {
            retried: true,
            ..Self::rerun(message)
        }
    }

    /// `message`, waiting with the ⏳ `reaction` already on it (if any).
    pub(super) fn marked(message: IncomingMessage, reaction: Option<EventId>) -> Self {
        Self {
            reaction,
            ..Self::new(message)
        }
    }

    /// `message`, to be marked ⏳ should the turn ahead of it last (see [`MARK_AFTER`]).
    pub(super) fn to_mark(message: IncomingMessage) -> Self {
        Self {
            awaits_mark: true,
            ..Self::new(message)
        }
    }
}

/// What an edit did to a waiting prompt.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Edit {
    /// No prompt waits under that event.
    NotHere,
    /// One waits, but someone other than its author edited it: nothing changed (Matrix
    /// ignores such edits too).
    NotTheAuthor,
    /// It runs with the new text.
    Done,
}

/// The prompts waiting behind the running turn, in the order they run.
pub(super) struct Queue {
    /// The prompts.
    items: VecDeque<Queued>,
    /// How many may wait (`queue.max_waiting`).
    max: usize,
    /// The agent, whose queue metric counts them.
    agent: AgentId,
    /// How many the metric counts for this queue now.
    counted: usize,
    /// From when the prompts waiting behind the current turn are marked ⏳ ([`MARK_AFTER`]
    /// after it began); `None` between turns, when a prompt that must wait is marked at once.
    marks_from: Option<Instant>,
}

impl Queue {
    /// An empty queue of `agent`'s channel, holding at most `max`.
    pub(super) fn new(agent: AgentId, max: usize) -> Self {
        Self {
            items: VecDeque::new(),
            max,
            agent,
            counted: 0,
            marks_from: None,
        }
    }

    /// A turn begins (it may still wait for a slot of the pool): the prompts that come
    /// meanwhile are marked ⏳ only once it has lasted [`MARK_AFTER`].
    pub(super) fn turn_began(&mut self) {
        self.marks_from = Some(Instant::now() + MARK_AFTER);
    }

    /// The turn is over: the next one counts its own moment.
    pub(super) fn turn_ended(&mut self) {
        self.marks_from = None;
    }

    /// Whether a prompt that must wait now is marked ⏳ at once: the turn ahead has lasted.
    pub(super) fn marks_now(&self) -> bool {
        self.marks_from.is_none_or(|from| Instant::now() >= from)
    }

    /// When the waiting prompts not marked yet are to be marked, if any waits for it.
    pub(super) fn next_mark_at(&self) -> Option<Instant> {
        (self.marks_from).filter(|_| self.items.iter().any(|q| q.awaits_mark))
    }

    /// The waiting prompts to mark ⏳ now, in order; each is then no longer awaiting it.
    pub(super) fn take_to_mark(&mut self) -> Vec<EventId> {
        (self.items.iter_mut())
            .filter_map(|q| std::mem::take(&mut q.awaits_mark).then(|| q.message.event_id.clone()))
            .collect()
    }

    /// The ⏳ `reaction` put on the waiting prompt of `event`.
    pub(super) fn marked(&mut self, event: &EventId, reaction: EventId) {
        if let Some(q) = self.items.iter_mut().find(|q| &q.message.event_id == event) {
            q.reaction = Some(reaction);
        }
    }

    /// How many prompts wait.
    pub(super) fn len(&self) -> usize {
        self.items.len()
    }

    /// The prompts that wait, in the order they run: their events and authors, and their
    /// text (for `!queue`).
    pub(super) fn waiting(&self) -> Vec<super::WaitingPrompt> {
        (self.items.iter())
            .map(|q| super::WaitingPrompt {
                event_id: q.message.event_id.clone(),
                sender: q.message.sender.clone(),
                body: q.message.body.clone(),
            })
            .collect()
    }

    /// Whether none waits.
    pub(super) fn is_empty(&self) -> bool {
        self.items.is_empty()
    }

    /// Whether no more may wait: the next is refused (`queue.max_waiting`).
    pub(super) fn is_full(&self) -> bool {
        self.items.len() >= self.max
    }

    /// `queued` waits behind the others.
    pub(super) fn push_back(&mut self, queued: Queued) {
        self.items.push_back(queued);
    }

    /// `queued` runs next (a turn given back at shutdown, a prompt edited while it ran).
    pub(super) fn push_front(&mut self, queued: Queued) {
        self.items.push_front(queued);
    }

    /// The prompt whose turn it is, out of the queue.
    pub(super) fn next(&mut self) -> Option<Queued> {
        self.items.pop_front()
    }

    /// Whether the prompt of `event` waits here.
    pub(super) fn holds(&self, event: &EventId) -> bool {
        self.items.iter().any(|q| &q.message.event_id == event)
    }

    /// `by` edited the prompt of `event` to read `text`.
    pub(super) fn edit(&mut self, event: &EventId, by: &UserId, text: &str) -> Edit {
        match self.items.iter_mut().find(|q| &q.message.event_id == event) {
            None => Edit::NotHere,
            Some(q) if &q.message.sender != by => Edit::NotTheAuthor,
            Some(q) => {
                q.message.body = text.to_owned();
                Edit::Done
            }
        }
    }

    /// The prompt of `event`, out of the queue (it was redacted).
    pub(super) fn take(&mut self, event: &EventId) -> Option<Queued> {
        let at = self
            .items
            .iter()
            .position(|q| &q.message.event_id == event)?;
        self.items.remove(at)
    }

    /// Empties the queue (at shutdown: the prompts wait in the store for the next start).
    pub(super) fn clear(&mut self) {
        self.items.clear();
    }

    /// Brings the queue metric up to date with how many wait.
    pub(super) fn count(&mut self) {
        let now = self.items.len();
        let change = now as i64 - self.counted as i64;
        if change != 0 {
            crate::core::metrics::metrics().queued(&self.agent, change);
            self.counted = now;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn prompt(id: &str, sender: &str) -> Queued {
        Queued::new(IncomingMessage {
            event_id: id.into(),
            sender: sender.into(),
            body: format!("text of {id}"),
            ..Default::default()
        })
    }

    fn order(queue: &mut Queue) -> Vec<String> {
        std::iter::from_fn(|| queue.next())
            .map(|q| q.message.event_id.to_string())
            .collect()
    }

    #[test]
    fn prompts_run_in_order_and_one_given_back_runs_first() {
        let mut queue = Queue::new("demo".into(), 10);
        queue.push_back(prompt("$1", "@a:x"));
        queue.push_back(prompt("$2", "@a:x"));
        queue.push_front(prompt("$0", "@a:x"));
        assert_eq!(queue.len(), 3);
        assert_eq!(order(&mut queue), ["$0", "$1", "$2"]);
        assert!(queue.is_empty());
    }

    #[test]
    fn the_queue_is_full_at_its_limit() {
        let mut queue = Queue::new("demo".into(), 2);
        queue.push_back(prompt("$1", "@a:x"));
        assert!(!queue.is_full());
        queue.push_back(prompt("$2", "@a:x"));
        assert!(queue.is_full());
    }

    #[test]
    fn only_the_author_edits_a_waiting_prompt_and_a_redacted_one_leaves() {
        let mut queue = Queue::new("demo".into(), 10);
        queue.push_back(prompt("$1", "@a:x"));
        queue.push_back(prompt("$2", "@b:x"));
        let (one, two) = (EventId::from("$1"), EventId::from("$2"));
        assert_eq!(
            queue.edit(&one, &"@b:x".into(), "hijacked"),
            Edit::NotTheAuthor
        );
        assert_eq!(queue.edit(&one, &"@a:x".into(), "fixed"), Edit::Done);
        assert_eq!(queue.edit(&"$9".into(), &"@a:x".into(), "x"), Edit::NotHere);
        assert!(queue.holds(&two));
        assert_eq!(queue.take(&two).unwrap().message.event_id, two);
        assert!(!queue.holds(&two) && queue.take(&two).is_none());
        assert_eq!(queue.next().unwrap().message.body, "fixed");
    }

    #[tokio::test(start_paused = true)]
    async fn prompts_behind_a_turn_are_marked_only_once_it_has_lasted() {
        let mut queue = Queue::new("demo".into(), 10);
        assert!(
            queue.marks_now(),
            "between turns a waiting prompt is marked at once"
        );
        queue.turn_began();
        assert!(!queue.marks_now());
        queue.push_back(Queued::to_mark(prompt("$1", "@a:x").message));
        queue.push_back(prompt("$2", "@a:x"));
        let due = queue.next_mark_at().expect("one awaits its mark");
        assert_eq!(due, Instant::now() + MARK_AFTER);
        tokio::time::advance(MARK_AFTER).await;
        assert!(queue.marks_now());
        assert_eq!(queue.take_to_mark(), vec![EventId::from("$1")]);
        assert_eq!(queue.next_mark_at(), None, "nothing left to mark");
        queue.marked(&"$1".into(), "$r".into());
        assert_eq!(queue.next().unwrap().reaction, Some("$r".into()));
        queue.turn_ended();
        assert!(queue.marks_now());
    }
}
