//! The prompts waiting behind a channel's running turn: the order they run in, how many may
//! wait (`queue.max_waiting`), and their count in the queue metric. The channel asks it
//! through these methods; nothing else holds the prompts.

use std::collections::VecDeque;

use crate::core::inbound::IncomingMessage;
use crate::model::ids::{AgentId, EventId, UserId};

/// A prompt waiting for its turn.
pub(super) struct Queued {
    /// The message.
    pub(super) message: IncomingMessage,
    /// The "queued" reaction put on it, removed when its turn starts.
    pub(super) reaction: Option<EventId>,
    /// Whether it is the re-run of a prompt a crash cut.
    pub(super) rerun: bool,
    /// Whether it runs again because it was edited while it was being answered
    /// (`continuity.rerun_edited`): its answer is a new one.
    pub(super) edited: bool,
    /// Whether it stopped the turn before it (`!queue interrupt`): the agent is told its
    /// previous answer was cut.
    pub(super) interrupting: bool,
}

impl Queued {
    /// `message`, waiting as written.
    pub(super) fn new(message: IncomingMessage) -> Self {
        Self {
            message,
            reaction: None,
            rerun: false,
            edited: false,
            interrupting: false,
        }
    }

    /// `message` again, after a crash cut its turn.
    pub(super) fn rerun(message: IncomingMessage) -> Self {
        Self {
            rerun: true,
            ..Self::new(message)
        }
    }

    /// `message`, waiting with the ⏳ `reaction` already on it (if any).
    pub(super) fn marked(message: IncomingMessage, reaction: Option<EventId>) -> Self {
        Self {
            reaction,
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
}

impl Queue {
    /// An empty queue of `agent`'s channel, holding at most `max`.
    pub(super) fn new(agent: AgentId, max: usize) -> Self {
        Self {
            items: VecDeque::new(),
            max,
            agent,
            counted: 0,
        }
    }

    /// How many prompts wait.
    pub(super) fn len(&self) -> usize {
        self.items.len()
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
}
