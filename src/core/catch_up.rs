//! Catching up on a gap in a room's timeline, decided without Matrix: which events to take
//! in, where paging back stops, and what lies beyond the bound and must be reported.
//!
//! The chat side hands the planner the events it has, newest first: first the batch a
//! sync delivered, then, while the planner asks for more and the timeline had a gap, older
//! pages. The planner stops at the newest event the agent had taken in before (its
//! position), at the moment the agent arrived in the room (what came before is history), or
//! at the bound: past it, events are kept only to be counted and reported. See the table
//! in `docs/continuity.md`.

use std::collections::HashSet;
use std::time::Duration;

use crate::model::ids::EventId;

/// Events older than the position by more than this still count as new: server timestamps
/// are not strictly ordered, and taking in an event twice is harmless (admission is unique
/// per event), whereas skipping one is not.
const TIMESTAMP_SLACK_MS: i64 = 60_000;

/// How far back a catch-up looks in one room.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CatchUpBounds {
    /// Most events taken in for one room in one go (newest first).
    pub max_events: usize,
    /// Oldest an event may be and still be taken in.
    pub max_age: Duration,
}

impl Default for CatchUpBounds {
    fn default() -> Self {
        Self {
            max_events: 500,
            max_age: Duration::from_secs(24 * 3600),
        }
    }
}

/// Where an agent's handling of a room stood before this batch.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct HandledSoFar {
    /// The newest event taken in, and its server timestamp (ms since the epoch).
    pub last: Option<(EventId, i64)>,
    /// When the agent arrived in the room (ms since the epoch): earlier is history.
    pub floor: Option<i64>,
}

/// An event as the planner sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stamp<'a> {
    /// The event ID.
    pub id: &'a EventId,
    /// Its server timestamp, ms since the epoch.
    pub ts: i64,
}

/// Why the planner stopped looking back.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reached {
    /// Not yet: it wants an older page if there is one.
    No,
    /// The events the agent had taken in before.
    Position,
    /// The moment the agent arrived in the room.
    Arrival,
    /// The bound, and as many events past it as it counts.
    Bound,
}

/// What to do with one room's events once the planner has seen enough.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Plan<T> {
    /// Events to take in, oldest first.
    pub admit: Vec<T>,
    /// Events past the bound, oldest first: never taken in, to be reported.
    pub missed: Vec<T>,
    /// Whether even more lay past the bound than `missed` holds (counting stopped).
    pub missed_more: bool,
    /// Why looking back stopped.
    pub reached: Reached,
}

/// Plans the catch-up of one room. See the module documentation.
#[derive(Debug)]
pub struct CatchUp<T> {
    /// How far back to look.
    bounds: CatchUpBounds,
    /// Where handling stood.
    handled: HandledSoFar,
    /// Now, ms since the epoch (events older than `now - max_age` are past the bound).
    now_ms: i64,
    /// Events to take in, newest first.
    within: Vec<T>,
    /// Events past the bound, newest first.
    beyond: Vec<T>,
    /// Whether more lay past the bound than were kept.
    beyond_more: bool,
    /// Why looking back stopped, if it did.
    reached: Reached,
    /// The events seen so far: pages may overlap, and an event counts once.
    seen: HashSet<EventId>,
}

impl<T> CatchUp<T> {
    /// A planner for a room whose handling stood at `handled`, at time `now_ms`.
    pub fn new(bounds: CatchUpBounds, handled: HandledSoFar, now_ms: i64) -> Self {
        Self {
            bounds,
            handled,
            now_ms,
            within: Vec::new(),
            beyond: Vec::new(),
            beyond_more: false,
            reached: Reached::No,
            seen: HashSet::new(),
        }
    }

    /// Whether looking back has stopped.
    pub fn done(&self) -> bool {
        self.reached != Reached::No
    }

    /// Takes the next events, newest first. Returns whether an older page is still wanted.
    pub fn take<'a>(&mut self, events: impl IntoIterator<Item = (Stamp<'a>, T)>) -> bool {
        for (stamp, event) in events {
            if self.done() {
                break;
            }
            if !self.seen.insert(stamp.id.clone()) {
                continue;
            }
            if let Some((id, ts)) = &self.handled.last
                && (stamp.id == id || stamp.ts < ts - TIMESTAMP_SLACK_MS)
            {
                self.reached = Reached::Position;
                break;
            }
            if self.handled.floor.is_some_and(|floor| stamp.ts < floor) {
                self.reached = Reached::Arrival;
                break;
            }
            let too_old = self.now_ms - stamp.ts > self.bounds.max_age.as_millis() as i64;
            let full = self.within.len() >= self.bounds.max_events;
            if !too_old && !full {
                self.within.push(event);
            } else if self.beyond.len() < self.bounds.max_events.max(1) {
                self.beyond.push(event);
            } else {
                // Counting stops here too: there is at least this one more.
                self.beyond_more = true;
                self.reached = Reached::Bound;
            }
        }
        !self.done()
    }

    /// There is no older page: the room's history begins here.
    pub fn end_of_history(&mut self) {
        if !self.done() {
            self.reached = Reached::Arrival;
        }
    }

    /// The plan: what to take in and what to report, oldest first.
    pub fn finish(self) -> Plan<T> {
        let mut admit = self.within;
        admit.reverse();
        let mut missed = self.beyond;
        missed.reverse();
        Plan {
            admit,
            missed,
            missed_more: self.beyond_more,
            reached: self.reached,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const HOUR: i64 = 3_600_000;
    const NOW: i64 = 100 * HOUR;

    /// Event `n` of a room, sent `n` minutes after `NOW - 10 h`.
    fn event(n: i64) -> (EventId, i64) {
        (EventId::new(format!("$e{n}")), NOW - 10 * HOUR + n * 60_000)
    }

    /// Pages of events `from..=to`, newest first, `size` a page.
    fn pages(from: i64, to: i64, size: usize) -> Vec<Vec<(EventId, i64)>> {
        let all: Vec<(EventId, i64)> = (from..=to).rev().map(event).collect();
        all.chunks(size).map(|c| c.to_vec()).collect()
    }

    /// Runs the planner over `pages` until it stops asking; returns the plan (event numbers)
    /// and how many pages it read.
    fn plan(
        bounds: CatchUpBounds,
        handled: HandledSoFar,
        pages: Vec<Vec<(EventId, i64)>>,
    ) -> (Plan<i64>, usize) {
        let mut planner = CatchUp::new(bounds, handled, NOW);
        let mut read = 0;
        for page in &pages {
            read += 1;
            let events = page.iter().map(|(id, ts)| {
                let n: i64 = id.as_str()[2..].parse().unwrap();
                (Stamp { id, ts: *ts }, n)
            });
            if !planner.take(events) {
                break;
            }
        }
        if !planner.done() {
            planner.end_of_history();
        }
        (planner.finish(), read)
    }

    fn at(n: i64) -> HandledSoFar {
        let (id, ts) = event(n);
        HandledSoFar {
            last: Some((id, ts)),
            floor: Some(0),
        }
    }

    fn bounds(max_events: usize, hours: u64) -> CatchUpBounds {
        CatchUpBounds {
            max_events,
            max_age: Duration::from_secs(hours * 3600),
        }
    }

    #[test]
    fn catching_up_stops_where_the_handling_stood_and_admits_in_order() {
        // Handled up to 40; events 1..=100 exist; pages of 10, newest first.
        let (plan, read) = plan(bounds(500, 24), at(40), pages(1, 100, 10));
        assert_eq!(plan.admit, (41..=100).collect::<Vec<_>>());
        assert!(plan.missed.is_empty() && !plan.missed_more);
        assert_eq!(plan.reached, Reached::Position);
        assert_eq!(read, 7, "stops on the page holding the position");
    }

    #[test]
    fn a_batch_that_reaches_the_position_needs_no_paging() {
        let (plan, read) = plan(bounds(500, 24), at(95), pages(90, 100, 20));
        assert_eq!(plan.admit, (96..=100).collect::<Vec<_>>());
        assert_eq!(read, 1);
    }

    #[test]
    fn past_the_event_bound_events_are_counted_not_admitted() {
        let (plan, _) = plan(bounds(25, 24), at(40), pages(1, 100, 10));
        assert_eq!(plan.admit, (76..=100).collect::<Vec<_>>());
        assert_eq!(plan.missed, (51..=75).collect::<Vec<_>>());
        assert!(plan.missed_more, "41..=50 were not even counted");
        assert_eq!(plan.reached, Reached::Bound);
    }

    #[test]
    fn past_the_age_bound_events_are_counted_not_admitted() {
        // Events are a minute apart and the newest is 8 h 20 min old: a 9 h bound
        // keeps the last 40 minutes' worth only.
        let (plan, _) = plan(bounds(500, 9), at(0), pages(1, 100, 10));
        assert_eq!(plan.admit, (60..=100).collect::<Vec<_>>());
        assert_eq!(plan.missed, (1..=59).collect::<Vec<_>>());
        assert!(!plan.missed_more);
        assert_eq!(plan.reached, Reached::Arrival, "the pages ran out");
    }

    #[test]
    fn history_from_before_the_agent_arrived_is_never_taken_in() {
        let arrived = event(70).1;
        let handled = HandledSoFar {
            last: None,
            floor: Some(arrived),
        };
        let (plan, read) = plan(bounds(500, 24), handled, pages(1, 100, 10));
        assert_eq!(plan.admit, (70..=100).collect::<Vec<_>>());
        assert!(plan.missed.is_empty());
        assert_eq!(plan.reached, Reached::Arrival);
        assert_eq!(read, 4);
    }

    #[test]
    fn without_a_position_it_goes_back_to_the_beginning_or_the_bound() {
        let (plan, _) = plan(bounds(500, 24), HandledSoFar::default(), pages(1, 30, 7));
        assert_eq!(plan.admit, (1..=30).collect::<Vec<_>>());
        assert_eq!(plan.reached, Reached::Arrival, "the room's history began");
    }

    #[test]
    fn an_event_on_two_overlapping_pages_counts_once() {
        let mut overlapping = pages(1, 100, 10);
        overlapping[1].insert(0, event(91));
        let (plan, _) = plan(bounds(500, 24), at(40), overlapping);
        assert_eq!(plan.admit, (41..=100).collect::<Vec<_>>());
    }

    #[test]
    fn an_out_of_order_timestamp_near_the_position_is_not_a_stop() {
        // Event 42's clock ran 30 s behind event 40's: it is still taken in.
        let mut batch = pages(41, 45, 10).remove(0);
        let skewed = event(40).1 - 30_000;
        batch.iter_mut().find(|(id, _)| *id == "$e42").unwrap().1 = skewed;
        let (plan, _) = plan(
            bounds(500, 24),
            at(40),
            vec![batch, pages(1, 40, 10)[0].clone()],
        );
        assert_eq!(plan.admit, (41..=45).collect::<Vec<_>>());
    }
}
