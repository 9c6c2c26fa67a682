//! One running turn, a part of its own: what it shows (the reply, the tool cards, the
//! plan) with its crash journal, its open polls and questions, the prompt it answers, and
//! what the room's inputs did to it (a stop, the gateway's shutdown, a mode the session
//! was lost to). It lives from the prompt to the end of the turn; the channel drives it
//! (`turn.rs`, `turn_input.rs`).

use std::time::Duration;

use tokio::time::Instant;

use super::journal::TurnJournal;
use super::typing::Typing;
use crate::core::agent::AgentSession;
use crate::core::approvals::Approvals;
use crate::core::chat::ChatError;
use crate::core::inbound::IncomingMessage;
use crate::core::view::activity::Activity;
use crate::core::view::stream::ReplyStream;
use crate::model::agent::Cost;
use crate::model::agent::{PlanEntry, ToolCallFields};
use crate::model::ids::{EventId, SessionId, ToolCallId, UserId};

/// The running turn.
pub(super) struct RunningTurn {
    /// The session the prompt went to: stops and cancels are for it (`None`: it was left
    /// before the turn began).
    session: Option<AgentSession>,
    /// The prompt: its author is notified when a poll waits for them, and it runs again
    /// when they edit it (`continuity.rerun_edited`).
    prompt: IncomingMessage,
    /// The answer.
    stream: ReplyStream,
    /// The typing notice, until the answer shows.
    typing: Typing,
    /// Tool cards, plan and thinking.
    activity: Activity,
    /// What the turn has recorded for a crash so far.
    journal: TurnJournal,
    /// Its open permission polls and questions, and the refusals so far.
    approvals: Approvals,
    /// How many files of the answer were posted (numbers their transaction IDs).
    files: u32,
    /// Who asked to stop, once someone did, by the name the room shows them.
    stopped_by: Option<String>,
    /// Set when the gateway shuts down during the turn: by then the turn must end.
    shutdown_deadline: Option<Instant>,
    /// Set once the turn was stopped because its session went to a mode that does not ask
    /// and could not be put back.
    lost_mode: bool,
    /// The messages steered into it (`!queue steer`): answered by it, their inputs settled
    /// when it ends (a crash before leaves them to be answered after the restart).
    steered: Vec<EventId>,
    /// Who stopped it by writing a message during it (`!queue interrupt`), as the room
    /// names them.
    cut: Option<String>,
    /// How long the agent has said nothing, and the room told of it.
    quiet: Quiet,
    /// The session's cost as the agent last reported it during the turn (ACP reports it
    /// cumulative): what the turn spent is what it grew by.
    cost: Option<Cost>,
}

/// A turn's quiet spells: a turn whose agent shows nothing for a while gets one note per
/// spell.
struct Quiet {
    /// When the agent last showed something (or a poll last waited for people: then the
    /// agent waits for them, which is not being quiet).
    since: Instant,
    /// Whether this spell was noted.
    noted: bool,
    /// The note telling the room the agent has gone quiet, while it has (a 🛑 on it stops
    /// the turn; it is edited once the agent goes on).
    note: Option<EventId>,
}

/// What is left of a turn once it ended: what it showed, to finish.
pub(super) struct Ended {
    /// The prompt it answered.
    pub(super) prompt: IncomingMessage,
    /// The answer.
    pub(super) stream: ReplyStream,
    /// The typing notice, to take off once the answer is complete.
    pub(super) typing: Typing,
    /// Tool cards, plan and thinking.
    pub(super) activity: Activity,
    /// Who stopped it, if someone did, by the name the room shows them.
    pub(super) stopped_by: Option<String>,
    /// Whether the gateway's shutdown ended it.
    pub(super) at_shutdown: bool,
    /// The messages steered into it, to settle with its end.
    pub(super) steered: Vec<EventId>,
    /// Who stopped it by writing a message during it, as the room names them.
    pub(super) cut: Option<String>,
    /// Tool calls its polls refused.
    pub(super) refused: u32,
    /// The session it ran in, if any.
    pub(super) session: Option<SessionId>,
    /// The session's cost as last reported during it.
    pub(super) cost: Option<Cost>,
}

impl RunningTurn {
    /// The turn answering `prompt` in `session`, shown by `stream` (with `typing` until
    /// it shows) and `activity`, journaled by `journal`.
    pub(super) fn new(
        session: Option<AgentSession>,
        prompt: IncomingMessage,
        stream: ReplyStream,
        typing: Typing,
        activity: Activity,
        journal: TurnJournal,
    ) -> Self {
        Self {
            session,
            prompt,
            stream,
            typing,
            activity,
            journal,
            approvals: Approvals::default(),
            files: 0,
            stopped_by: None,
            shutdown_deadline: None,
            lost_mode: false,
            steered: Vec::new(),
            cut: None,
            quiet: Quiet {
                since: Instant::now(),
                noted: false,
                note: None,
            },
            cost: None,
        }
    }

    /// The agent reported the session's cost so far.
    pub(super) fn cost_reported(&mut self, cost: Cost) {
        self.cost = Some(cost);
    }

    /// The session the prompt went to.
    pub(super) fn session(&self) -> Option<&AgentSession> {
        self.session.as_ref()
    }

    /// The prompt being answered.
    pub(super) fn prompt(&self) -> &IncomingMessage {
        &self.prompt
    }

    /// Who sent the prompt.
    pub(super) fn prompter(&self) -> &UserId {
        &self.prompt.sender
    }

    /// The prompt's event.
    pub(super) fn prompt_event(&self) -> &EventId {
        &self.prompt.event_id
    }

    /// Its open polls and questions.
    pub(super) fn approvals(&self) -> &Approvals {
        &self.approvals
    }

    /// Its open polls and questions, to open, answer or close one.
    pub(super) fn approvals_mut(&mut self) -> &mut Approvals {
        &mut self.approvals
    }

    /// More of the answer's text.
    pub(super) fn push_text(&mut self, text: &str) {
        self.stream.push(text);
    }

    /// More of the agent's thinking.
    pub(super) fn thought(&mut self, text: &str) {
        self.activity.thought(text);
    }

    /// A tool call announced (`announced`) or updated.
    pub(super) fn tool(&mut self, fields: ToolCallFields, announced: bool) {
        self.activity.tool(fields, announced);
    }

    /// What is known of tool call `id` so far.
    pub(super) fn known_tool(&self, id: &ToolCallId) -> Option<&ToolCallFields> {
        self.activity.known_tool(id)
    }

    /// The agent's plan, as it stands now.
    pub(super) fn plan(&mut self, entries: &[PlanEntry]) {
        self.activity.plan(entries);
    }

    /// Whether `event` is a message of the answer (a 🛑 on it stops the turn).
    pub(super) fn answers_with(&self, event: &EventId) -> bool {
        self.stream.event_ids().contains(event)
    }

    /// Whether a 🛑 on `event` stops the turn: a message of its answer, or the note that
    /// says the agent has gone quiet.
    pub(super) fn stops_with(&self, event: &EventId) -> bool {
        self.answers_with(event) || self.quiet.note.as_ref() == Some(event)
    }

    /// When the room is to be told the agent has gone quiet, `after` (`None`: never) a
    /// spell of silence; none once this spell was noted.
    pub(super) fn quiet_at(&mut self, after: Option<Duration>) -> Option<Instant> {
        if self.approvals.open_count() > 0 {
            self.quiet.since = Instant::now();
        }
        let since = self.quiet.since;
        after
            .filter(|_| !self.quiet.noted)
            .map(|after| since + after)
    }

    /// The room was told the agent has gone quiet, by `note` (`None`: the note could not
    /// be posted).
    pub(super) fn went_quiet(&mut self, note: Option<EventId>) {
        self.quiet.noted = true;
        self.quiet.note = note;
    }

    /// The agent said something: a new spell of silence starts. Returns the note of the
    /// spell it ends, if one was posted, and how long the spell lasted.
    pub(super) fn spoke_again(&mut self) -> Option<(EventId, Duration)> {
        let lasted = self.quiet.since.elapsed();
        self.quiet.since = Instant::now();
        self.quiet.noted = false;
        self.quiet.note.take().map(|note| (note, lasted))
    }

    /// When the answer's next edit is due, if one is.
    pub(super) fn reply_due(&self) -> Option<Instant> {
        self.stream.next_flush_at()
    }

    /// A poll opens about call `id`; `true` when it stands in for the call's card (see
    /// [`Activity::poll_opened`]).
    pub(super) fn poll_opened(&mut self, id: &ToolCallId) -> bool {
        // The poll goes up below what was said so far; the answer goes on below it.
        self.stream.break_after_work();
        self.activity.poll_opened(id)
    }

    /// A question went up below what was said so far: the answer goes on below it.
    pub(super) fn asked(&mut self) {
        self.stream.break_after_work();
    }

    /// Hands the permission polls settled since the last call to the cards: a poll that
    /// stood in for its call's card becomes that card.
    fn settle_cards(&mut self) {
        for call in self.approvals.take_settled() {
            if let Some(refused) = call.refused {
                self.activity.answered(&call.tool, refused);
            }
            (self.activity).poll_settled(&call.tool, call.message, call.decision);
        }
    }

    /// The agent asked about call `id`, which it had said runs: see
    /// [`Activity::waits_for_answer`].
    pub(super) fn waits_for_answer(&mut self, id: &ToolCallId) {
        self.activity.waits_for_answer(id);
    }

    /// When the cards' next edit is due, if one is.
    pub(super) fn cards_due(&mut self) -> Option<Instant> {
        self.settle_cards();
        self.activity.next_flush_at()
    }

    /// Posts the answer so far, then journals what it shows (whether the post went
    /// through or not: the journal records what was shown). Once the answer has text to
    /// post, the typing notice goes: the reply's live marker takes its place, and a
    /// homeserver slow to take the first post in would otherwise get renewals meanwhile.
    pub(super) async fn flush_reply(&mut self) -> Result<(), ChatError> {
        if !self.stream.text().is_empty() {
            self.typing.answer_shown();
        }
        let sent = self.stream.flush().await;
        self.journal.reply(&self.stream).await;
        sent
    }

    /// Posts the cards' changes, then journals what they show.
    pub(super) async fn flush_cards(&mut self) -> Result<(), ChatError> {
        self.settle_cards();
        let before = self.activity.posted();
        let sent = self.activity.flush().await;
        // A new card (or plan, or thinking) went up: the answer goes on below it.
        if self.activity.posted() > before {
            self.stream.break_after_work();
        }
        self.journal.cards(&self.activity).await;
        sent
    }

    /// The number of the answer's next file.
    pub(super) fn next_file(&mut self) -> u32 {
        self.files += 1;
        self.files
    }

    /// Records that `by` (their name in the room) stopped the turn; `false` when someone
    /// did already.
    pub(super) fn stop(&mut self, by: String) -> bool {
        if self.stopped_by.is_some() {
            return false;
        }
        self.stopped_by = Some(by);
        true
    }

    /// Records that message `event_id` was steered into the turn: it answers it.
    pub(super) fn steered_in(&mut self, event_id: EventId) {
        self.steered.push(event_id);
    }

    /// Records that `name` (as the room shows them) stopped the turn by writing a message
    /// (`!queue interrupt`); `false` when someone stopped it already.
    pub(super) fn cut_by(&mut self, name: String) -> bool {
        let first = self.stop(name.clone());
        if first {
            self.cut = Some(name);
        }
        first
    }

    /// Whether someone stopped the turn.
    pub(super) fn is_stopped(&self) -> bool {
        self.stopped_by.is_some()
    }

    /// The gateway shuts down: the turn must end within `grace`. `false` when it was told
    /// already.
    pub(super) fn shut_down(&mut self, grace: Duration) -> bool {
        if self.shutdown_deadline.is_some() {
            return false;
        }
        self.shutdown_deadline = Some(Instant::now() + grace);
        true
    }

    /// Whether the gateway's shutdown began during the turn.
    pub(super) fn shutting_down(&self) -> bool {
        self.shutdown_deadline.is_some()
    }

    /// When the turn must have ended, the gateway shutting down.
    pub(super) fn shutdown_deadline(&self) -> Option<Instant> {
        self.shutdown_deadline
    }

    /// Records that the turn is stopped for the mode its session was lost to; `false` when
    /// it was already.
    pub(super) fn stop_for_mode(&mut self) -> bool {
        !std::mem::replace(&mut self.lost_mode, true)
    }

    /// What the room still needs of the turn, now that it ended: its open polls closed
    /// (the channel did), what it showed.
    pub(super) fn end(mut self) -> Ended {
        self.settle_cards();
        Ended {
            prompt: self.prompt,
            stream: self.stream,
            typing: self.typing,
            activity: self.activity,
            stopped_by: self.stopped_by,
            at_shutdown: self.shutdown_deadline.is_some(),
            steered: self.steered,
            cut: self.cut,
            refused: self.approvals.refusals(),
            session: self.session.as_ref().map(|s| s.id().clone()),
            cost: self.cost,
        }
    }
}
