//! What the agent does during one turn besides answering: its tool calls (one card each),
//! its plan and its thinking, each shown as a message edited in place, paced like replies.
//!
//! The tool calls are tracked whatever the room shows, because a permission poll describes
//! the call it is about with what the agent announced.

use std::collections::HashMap;
use std::time::Duration;

use tokio::time::Instant;

use std::sync::Arc;

use crate::core::chat::{ChatError, ChatPort, Undelivered};
use crate::core::view::live::{LiveMessage, Paced, send_everything};
use crate::core::view::stream::StreamSettings;
use crate::model::OutMessage;
use crate::model::agent::{PlanEntry, ToolCallFields, ToolStatus};
use crate::model::ids::{EventId, RoomId, ToolCallId};
use crate::render::cards::{self, CardStatus};

use crate::model::Verbosity;
use crate::model::media::{MediaKind, OutAttachment};

/// How long the card of a call announced but not running waits before it is posted: a
/// permission request for the call that comes meanwhile (agents ask right after they
/// announce) makes the poll the call's only message.
const CARD_HOLD: Duration = Duration::from_millis(700);

/// One tool call of the turn.
struct Card {
    /// Everything the agent said about it so far.
    fields: ToolCallFields,
    /// Set when the turn ended with the call still open.
    closed: Option<CardStatus>,
    /// Its card, when the room shows cards and the call was announced.
    message: Option<LiveMessage>,
    /// Whether its whole output was attached to its card (once it ended and the card shows
    /// only the end of it).
    output_attached: bool,
    /// Where the poll asking about the call stands: a poll that came before the card was
    /// posted takes the card's place, so the call has one message.
    poll: CardPoll,
    /// The agent said the call runs, then asked about it: shown waiting, running again
    /// once allowed.
    resumes_when_allowed: bool,
}

/// A call's poll, as far as its card is concerned.
#[derive(Debug, Clone, PartialEq, Eq)]
enum CardPoll {
    /// No poll stands in for the card.
    None,
    /// The poll is open and is the call's message: no card is posted meanwhile.
    Open,
    /// The poll was settled and its message became the card, which shows how it ended.
    Decided(String),
}

impl Card {
    /// Whether the agent has not said how the call ended.
    fn is_open(&self) -> bool {
        matches!(
            self.fields.status,
            None | Some(ToolStatus::Pending | ToolStatus::InProgress)
        )
    }

    fn status(&self) -> CardStatus {
        self.closed.unwrap_or(CardStatus::Reported(
            self.fields.status.unwrap_or(ToolStatus::Pending),
        ))
    }

    /// The card as it should show with `status`.
    fn content(&self, status: CardStatus) -> OutMessage {
        let decision = match &self.poll {
            CardPoll::Decided(line) => Some(line.as_str()),
            _ => None,
        };
        cards::tool_card_decided(&self.fields, status, decision)
    }

    fn render(&mut self) {
        let content = self.content(self.status());
        if let Some(m) = &mut self.message {
            m.set(content);
        }
    }
}

/// The thinking indicator of the turn.
struct Thinking {
    /// When the first thought arrived.
    started: Instant,
    /// When the latest one arrived.
    last: Instant,
    /// All thoughts of the turn.
    text: String,
    /// The indicator message.
    message: LiveMessage,
}

impl Thinking {
    /// The folded indicator: how long the agent thought, and its thoughts.
    fn folded(&self) -> OutMessage {
        let took = self
            .last
            .duration_since(self.started)
            .max(Duration::from_secs(1));
        cards::thinking(Some(took), &self.text)
    }
}

/// The work shown during one turn.
pub struct Activity {
    /// Where to send.
    chat: Arc<dyn ChatPort>,
    /// The room.
    room: RoomId,
    /// What the room shows.
    verbosity: Verbosity,
    /// Prefix of transaction IDs, unique per turn.
    txn_prefix: String,
    /// Pacing, shared with the reply.
    settings: StreamSettings,
    /// Tool calls in the order they appeared.
    cards: Vec<Card>,
    /// Index in `cards` by tool call ID.
    index: HashMap<ToolCallId, usize>,
    /// The plan message.
    plan: Option<LiveMessage>,
    /// The thinking indicator.
    thinking: Option<Thinking>,
    /// No request before this instant (set by a rate limit).
    not_before: Option<Instant>,
    /// Whether the turn is over (final edits ignore the edit cap).
    finishing: bool,
}

impl Activity {
    /// The activity of a turn in `room` whose transaction IDs start with `txn_prefix`.
    pub fn new(
        chat: Arc<dyn ChatPort>,
        room: RoomId,
        verbosity: Verbosity,
        txn_prefix: String,
        settings: StreamSettings,
    ) -> Self {
        Self {
            chat,
            room,
            verbosity,
            txn_prefix,
            settings,
            cards: Vec::new(),
            index: HashMap::new(),
            plan: None,
            thinking: None,
            not_before: None,
            finishing: false,
        }
    }

    /// Whether the turn showed its work in the room: a tool card or a plan was posted.
    pub fn showed_work(&self) -> bool {
        let posted = |m: &LiveMessage| m.event_id().is_some();
        self.plan.as_ref().is_some_and(posted)
            || (self.cards.iter()).any(|c| c.message.as_ref().is_some_and(posted))
    }

    /// How many of its messages (tool cards, plan, thinking) are in the room.
    pub fn posted(&self) -> usize {
        let posted = |m: &LiveMessage| m.event_id().is_some();
        let thinking = self.thinking.as_ref().map(|t| &t.message);
        (thinking.into_iter().chain(&self.plan))
            .chain(self.cards.iter().filter_map(|c| c.message.as_ref()))
            .filter(|m| posted(m))
            .count()
    }

    /// A tool call was announced or changed.
    pub fn tool(&mut self, fields: ToolCallFields, announced: bool) {
        let i = match self.index.get(&fields.id) {
            Some(&i) => {
                self.cards[i].fields.merge(fields);
                i
            }
            None => {
                self.index.insert(fields.id.clone(), self.cards.len());
                self.cards.push(Card {
                    fields,
                    closed: None,
                    message: None,
                    output_attached: false,
                    poll: CardPoll::None,
                    resumes_when_allowed: false,
                });
                self.cards.len() - 1
            }
        };
        let card = &mut self.cards[i];
        // A card appears once the call is announced (or is running): a permission request
        // alone makes a poll, not a card.
        let running = matches!(
            card.fields.status,
            Some(ToolStatus::InProgress | ToolStatus::Completed | ToolStatus::Failed)
        );
        let waits_for_poll = card.poll == CardPoll::Open;
        let shown = self.verbosity.cards() && (announced || running);
        if card.message.is_none() && !waits_for_poll && shown {
            let txn = format!("{}-tool-{i}", self.txn_prefix);
            let content = card.content(card.status());
            // A call announced but not running may be about to ask: its card waits a
            // moment, so that a poll that comes meanwhile is the call's only message.
            card.message = Some(match running {
                true => LiveMessage::new(txn, content),
                false => LiveMessage::held(txn, content, Instant::now() + CARD_HOLD),
            });
        }
        if running && let Some(m) = &mut card.message {
            m.release();
        }
        card.render();
    }

    /// A poll opens about call `id`: if the call's card is not posted yet, the poll takes
    /// its place (no card is posted while it is open) and `true` is returned.
    pub fn poll_opened(&mut self, id: &ToolCallId) -> bool {
        let Some(&i) = self.index.get(id) else {
            return false;
        };
        let card = &mut self.cards[i];
        if card
            .message
            .as_ref()
            .is_some_and(|m| m.event_id().is_some())
        {
            return false;
        }
        card.message = None;
        card.poll = CardPoll::Open;
        true
    }

    /// The agent asked about call `id`, which it had said runs: it waits for the answer.
    pub fn waits_for_answer(&mut self, id: &ToolCallId) {
        if let Some(&i) = self.index.get(id) {
            self.cards[i].resumes_when_allowed = true;
        }
    }

    /// The approver answered about call `id` (`refused` when the option chosen, or sent
    /// when nobody answered, refuses). The card says so whatever the agent does next: a
    /// refused call still open is failed (Gemini and Qwen Code send nothing more for it),
    /// an allowed one that waited after it was said to run runs again. Anything else is
    /// the agent's to report.
    pub fn answered(&mut self, id: &ToolCallId, refused: bool) {
        let Some(&i) = self.index.get(id) else {
            return;
        };
        let card = &mut self.cards[i];
        let resumes = std::mem::take(&mut card.resumes_when_allowed);
        let status = match (refused, card.is_open(), resumes) {
            (true, true, _) => ToolStatus::Failed,
            (false, true, true) => ToolStatus::InProgress,
            _ => return,
        };
        self.tool(ToolCallFields::status_only(id, status), false);
    }

    /// The poll about call `id`, message `event_id`, was settled (`decision` says how):
    /// where it stood in for the card, its message becomes the card from the next edit
    /// on. The poll could not be posted (`event_id` is `None`): the card is posted alone.
    pub fn poll_settled(&mut self, id: &ToolCallId, event_id: Option<EventId>, decision: String) {
        let Some(&i) = self.index.get(id) else {
            return;
        };
        let (verbosity, txn) = (self.verbosity, format!("{}-tool-{i}", self.txn_prefix));
        let card = &mut self.cards[i];
        if card.poll != CardPoll::Open {
            return;
        }
        card.poll = CardPoll::Decided(decision);
        let content = card.content(card.status());
        card.message = match (verbosity.cards(), event_id) {
            (false, _) => None,
            (true, Some(event_id)) => Some(LiveMessage::adopt(event_id, content)),
            (true, None) => Some(LiveMessage::new(txn, content)),
        };
    }

    /// Everything known about tool call `id`, if it was mentioned in this turn.
    pub fn known_tool(&self, id: &ToolCallId) -> Option<&ToolCallFields> {
        self.index.get(id).map(|&i| &self.cards[i].fields)
    }

    /// The agent's plan changed.
    pub fn plan(&mut self, entries: &[PlanEntry]) {
        if !self.verbosity.cards() {
            return;
        }
        let content = cards::plan(entries);
        match &mut self.plan {
            Some(m) => m.set(content),
            None => {
                self.plan = Some(LiveMessage::new(
                    format!("{}-plan", self.txn_prefix),
                    content,
                ))
            }
        }
    }

    /// A piece of the agent's reasoning arrived.
    pub fn thought(&mut self, text: &str) {
        if !self.verbosity.thinking() {
            return;
        }
        let now = Instant::now();
        match &mut self.thinking {
            Some(t) => {
                t.text.push_str(text);
                t.last = now;
            }
            None => {
                self.thinking = Some(Thinking {
                    started: now,
                    last: now,
                    text: text.to_owned(),
                    message: LiveMessage::new(
                        format!("{}-thinking", self.txn_prefix),
                        cards::thinking(None, ""),
                    ),
                })
            }
        }
    }

    fn messages(&mut self) -> impl Iterator<Item = &mut LiveMessage> {
        let thinking = self.thinking.as_mut().map(|t| &mut t.message);
        thinking
            .into_iter()
            .chain(self.plan.as_mut())
            .chain(self.cards.iter_mut().filter_map(|c| c.message.as_mut()))
    }

    /// For every message posted so far, what it should show if the turn is cut now: open
    /// cards cancelled, thoughts folded.
    pub fn cut_versions(&self) -> Vec<(EventId, OutMessage)> {
        let mut out = Vec::new();
        if let Some(t) = &self.thinking
            && let Some(id) = t.message.event_id()
        {
            out.push((id.clone(), t.folded()));
        }
        for card in &self.cards {
            let Some(id) = card.message.as_ref().and_then(|m| m.event_id()) else {
                continue;
            };
            let status = match card.is_open() {
                true => CardStatus::Cancelled,
                false => card.status(),
            };
            out.push((id.clone(), card.content(status)));
        }
        out
    }

    /// When the next request is due, if any.
    pub fn next_flush_at(&mut self) -> Option<Instant> {
        let (interval, max_edits, last) = (
            self.settings.interval,
            self.settings.max_edits,
            self.finishing,
        );
        let not_before = self.not_before;
        self.messages()
            .filter_map(|m| m.due_at(interval, max_edits, last))
            .min()
            .map(|at| not_before.map_or(at, |nb| at.max(nb)))
    }

    /// Sends every request that is due, oldest message first. Stops at a rate limit, which
    /// holds every further request back for the time the homeserver asked.
    pub async fn flush(&mut self) -> Result<(), ChatError> {
        let now = Instant::now();
        if self.not_before.is_some_and(|nb| now < nb) {
            return Ok(());
        }
        let (interval, max_edits, last) = (
            self.settings.interval,
            self.settings.max_edits,
            self.finishing,
        );
        let (chat, room) = (self.chat.clone(), self.room.clone());
        let mut outcome = Ok(());
        for m in self.messages() {
            if m.due_at(interval, max_edits, last)
                .is_none_or(|at| at > Instant::now())
            {
                continue;
            }
            if let Err(e) = m.flush(&*chat, &room).await {
                outcome = Err(e);
                break;
            }
        }
        self.not_before = match &outcome {
            Err(ChatError::RateLimited { retry_after }) => Some(Instant::now() + *retry_after),
            Err(_) => Some(Instant::now() + interval.max(Duration::from_secs(2))),
            Ok(()) => None,
        };
        if outcome.is_ok() {
            self.attach_outputs().await;
        }
        outcome
    }

    /// Attaches the whole output of each ended call whose card shows only its end, as a
    /// text file replying to the card (once; a failure is only logged).
    async fn attach_outputs(&mut self) {
        let (chat, room) = (self.chat.clone(), self.room.clone());
        for (n, card) in self.cards.iter_mut().enumerate() {
            if card.output_attached || card.is_open() {
                continue;
            }
            let Some(card_event) = card.message.as_ref().and_then(|m| m.event_id()) else {
                continue;
            };
            let Some(output) = cards::cut_output(&card.fields) else {
                card.output_attached = true;
                continue;
            };
            let file = OutAttachment {
                kind: MediaKind::File,
                name: cards::output_file_name(&card.fields),
                mimetype: "text/plain".into(),
                data: output.into_bytes().into(),
            };
            let msg = OutMessage::file(file).replying_to(card_event.clone());
            let txn = format!("{}-output-{n}", self.txn_prefix);
            if let Err(e) = chat.send(&room, &txn, &msg).await {
                tracing::warn!(room = %room, error = %e, "could not attach a tool call's output");
            }
            card.output_attached = true;
        }
    }

    /// Ends the turn's display: open cards are closed (`cancelled` when the turn was
    /// cancelled, else "ended without a status"), the thinking indicator folds its
    /// thoughts, and everything is sent until it shows its final state.
    pub async fn finish(&mut self, cancelled: bool) -> Result<(), ChatError> {
        for card in &mut self.cards {
            if card.is_open() {
                card.closed = Some(if cancelled {
                    CardStatus::Cancelled
                } else {
                    CardStatus::Unknown
                });
                card.render();
            }
            if let Some(m) = &mut card.message {
                m.release();
            }
        }
        if let Some(t) = &mut self.thinking {
            let folded = t.folded();
            t.message.set(folded);
        }
        self.finishing = true;
        send_everything(self, self.settings.patience).await
    }

    /// After [`Activity::finish`] gave up on a homeserver that stayed away: what each card
    /// (and the plan and thinking indicator) should show and does not yet.
    pub fn undelivered(&mut self) -> Vec<Undelivered> {
        self.messages().filter_map(|m| m.undelivered()).collect()
    }
}

impl Paced for Activity {
    fn due_at(&mut self) -> Option<Instant> {
        self.next_flush_at()
    }

    async fn send_due(&mut self) -> Result<(), ChatError> {
        self.flush().await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::fakes::{FakeChat, Sent};
    use crate::core::view::live::MAX_OUTAGE;
    use crate::model::agent::{PlanStatus, ToolKind};

    fn settings() -> StreamSettings {
        StreamSettings {
            interval: Duration::from_millis(10),
            max_edits: 100,
            max_bytes: 10_000,
            patience: crate::core::view::live::MAX_OUTAGE,
            ..Default::default()
        }
    }

    fn call(id: &str, status: Option<ToolStatus>) -> ToolCallFields {
        ToolCallFields {
            id: id.into(),
            title: Some(format!("run {id}")),
            kind: Some(ToolKind::Execute),
            status,
            ..Default::default()
        }
    }

    fn activity(chat: &Arc<FakeChat>, verbosity: Verbosity) -> Activity {
        Activity::new(chat.clone(), "!r".into(), verbosity, "x".into(), settings())
    }

    async fn settle(a: &mut Activity) {
        send_everything(a, MAX_OUTAGE).await.unwrap();
    }

    fn status_of(a: &Activity, id: &str) -> Option<ToolStatus> {
        a.known_tool(&id.into()).and_then(|f| f.status)
    }

    #[test]
    fn a_call_said_to_run_then_asked_about_waits_and_runs_again_once_allowed() {
        let chat = FakeChat::new();
        let mut a = activity(&chat, Verbosity::All);
        // OpenCode's order: running, then the request, which the adapter reports waiting.
        a.tool(call("c1", Some(ToolStatus::InProgress)), true);
        a.tool(call("c1", Some(ToolStatus::Pending)), false);
        a.waits_for_answer(&"c1".into());
        a.answered(&"c1".into(), false);
        assert_eq!(status_of(&a, "c1"), Some(ToolStatus::InProgress));
        // A call announced pending and allowed is the agent's to start.
        a.tool(call("c2", Some(ToolStatus::Pending)), true);
        a.answered(&"c2".into(), false);
        assert_eq!(status_of(&a, "c2"), Some(ToolStatus::Pending));
    }

    #[test]
    fn a_refused_call_left_open_is_failed_and_one_the_agent_closed_is_left_alone() {
        let chat = FakeChat::new();
        let mut a = activity(&chat, Verbosity::All);
        // Gemini and Qwen Code send nothing more for a refused call.
        a.tool(call("c1", Some(ToolStatus::Pending)), false);
        a.answered(&"c1".into(), true);
        assert_eq!(status_of(&a, "c1"), Some(ToolStatus::Failed));
        a.tool(call("c2", Some(ToolStatus::Pending)), true);
        a.tool(call("c2", Some(ToolStatus::Completed)), false);
        a.answered(&"c2".into(), true);
        assert_eq!(
            status_of(&a, "c2"),
            Some(ToolStatus::Completed),
            "already closed by the agent"
        );
        // A refusal after the agent said it runs fails it too.
        a.tool(call("c3", Some(ToolStatus::InProgress)), true);
        a.waits_for_answer(&"c3".into());
        a.answered(&"c3".into(), true);
        assert_eq!(status_of(&a, "c3"), Some(ToolStatus::Failed));
    }

    #[tokio::test]
    async fn an_ended_call_whose_card_cuts_its_output_gets_the_whole_output_attached() {
        use crate::model::agent::ToolContent;
        let chat = FakeChat::new();
        let mut a = activity(&chat, Verbosity::All);
        let long: String = (1..=100).map(|n| format!("line {n}\n")).collect();
        let with_output = |id: &str, text: &str, status| ToolCallFields {
            content: Some(vec![ToolContent::Text(text.into())]),
            ..call(id, Some(status))
        };
        a.tool(with_output("long", &long, ToolStatus::InProgress), true);
        a.tool(with_output("short", "ok", ToolStatus::Completed), true);
        settle(&mut a).await;
        let files = || -> Vec<OutMessage> {
            chat.messages("!r")
                .into_iter()
                .filter(|m| m.attachment.is_some())
                .collect()
        };
        assert!(
            files().is_empty(),
            "not while the call runs, nor for a short output"
        );
        a.tool(with_output("long", &long, ToolStatus::Completed), false);
        settle(&mut a).await;
        settle(&mut a).await;
        let files = files();
        assert_eq!(files.len(), 1, "{files:?}");
        let file = files[0].attachment.as_ref().unwrap();
        assert_eq!(file.name, "run-long-output.txt");
        assert_eq!(&*file.data, long.as_bytes());
        let card = chat.log().into_iter().find_map(|s| match s {
            Sent::Send { event_id, msg, .. } if msg.body.contains("run long") => Some(event_id),
            _ => None,
        });
        assert_eq!(
            files[0].reply_to,
            card.map(EventId::new),
            "attached to its card"
        );
    }

    #[tokio::test]
    async fn cards_follow_their_tool_calls_and_open_ones_are_closed_at_the_end() {
        let chat = FakeChat::new();
        let mut a = activity(&chat, Verbosity::All);
        a.tool(call("a", Some(ToolStatus::Pending)), true);
        a.tool(call("b", Some(ToolStatus::InProgress)), true);
        settle(&mut a).await;
        a.tool(
            ToolCallFields {
                status: Some(ToolStatus::Completed),
                ..ToolCallFields {
                    id: "a".into(),
                    ..Default::default()
                }
            },
            false,
        );
        settle(&mut a).await;
        // The call that runs is shown at once; the one only announced a moment later.
        assert_eq!(
            chat.shown("!r"),
            vec![
                "🔄 💻 run b · in progress".to_string(),
                "✅ 💻 run a · completed".to_string(),
            ]
        );
        a.finish(true).await.unwrap();
        assert_eq!(chat.shown("!r")[0], "⏹️ 💻 run b · cancelled");
    }

    #[tokio::test]
    async fn a_permission_request_alone_makes_no_card_but_is_remembered() {
        let chat = FakeChat::new();
        let mut a = activity(&chat, Verbosity::All);
        a.tool(call("p", None), false);
        settle(&mut a).await;
        assert!(chat.shown("!r").is_empty());
        assert_eq!(
            a.known_tool(&"p".into()).unwrap().title.as_deref(),
            Some("run p")
        );
        // Announced later, it gets its card with what the request said.
        a.tool(
            ToolCallFields {
                id: "p".into(),
                status: Some(ToolStatus::Pending),
                ..Default::default()
            },
            true,
        );
        settle(&mut a).await;
        assert_eq!(chat.shown("!r"), vec!["🕓 💻 run p · pending"]);
    }

    #[tokio::test]
    async fn answer_only_rooms_see_no_cards_plan_or_thinking() {
        let chat = FakeChat::new();
        let mut a = activity(&chat, Verbosity::Answer);
        a.tool(call("a", Some(ToolStatus::Pending)), true);
        a.plan(&[PlanEntry {
            text: "x".into(),
            status: PlanStatus::Pending,
        }]);
        a.thought("hmm");
        a.finish(false).await.unwrap();
        assert!(chat.log().is_empty());
    }

    #[tokio::test]
    async fn tools_rooms_see_cards_and_plan_but_no_thinking() {
        let chat = FakeChat::new();
        let mut a = activity(&chat, Verbosity::Tools);
        a.thought("hmm");
        a.plan(&[PlanEntry {
            text: "x".into(),
            status: PlanStatus::Pending,
        }]);
        a.finish(false).await.unwrap();
        assert_eq!(chat.shown("!r"), vec!["📋 Plan (0/1 done)\n⬜ x"]);
    }

    #[test]
    fn verbosity_words() {
        for v in [Verbosity::Answer, Verbosity::Tools, Verbosity::All] {
            assert_eq!(Verbosity::parse(v.as_str()), Some(v));
        }
        assert_eq!(Verbosity::parse("loud"), None);
    }

    #[tokio::test(start_paused = true)]
    async fn a_poll_that_comes_before_the_card_is_posted_stands_in_for_it() {
        let chat = FakeChat::new();
        let mut a = activity(&chat, Verbosity::All);
        a.tool(call("p", Some(ToolStatus::Pending)), true);
        assert!(
            a.poll_opened(&"p".into()),
            "the card was held back: the poll takes its place"
        );
        // Nothing is posted for the call while its poll is open, whatever it reports.
        a.tool(call("p", Some(ToolStatus::Pending)), false);
        tokio::time::sleep(CARD_HOLD * 2).await;
        settle(&mut a).await;
        assert!(chat.log().is_empty(), "{:?}", chat.log());
        // Settled, the poll's message becomes the card, with the answer under it.
        let poll = chat
            .send(&"!r".into(), "poll", &OutMessage::notice("🔐 run p?"))
            .await;
        a.poll_settled(
            &"p".into(),
            Some(poll.unwrap()),
            "✅ Allow, chosen by alice".into(),
        );
        a.tool(call("p", Some(ToolStatus::Completed)), false);
        settle(&mut a).await;
        assert_eq!(
            chat.shown("!r"),
            vec!["✅ 💻 run p · completed\n✅ Allow, chosen by alice".to_string()]
        );
        assert!(a.showed_work());
    }

    #[tokio::test(start_paused = true)]
    async fn a_card_posted_before_the_poll_stays_the_calls_card() {
        let chat = FakeChat::new();
        let mut a = activity(&chat, Verbosity::All);
        a.tool(call("p", Some(ToolStatus::Pending)), true);
        tokio::time::sleep(CARD_HOLD).await;
        settle(&mut a).await;
        assert_eq!(chat.shown("!r"), vec!["🕓 💻 run p · pending"]);
        assert!(!a.poll_opened(&"p".into()));
        a.poll_settled(&"p".into(), Some(EventId::from("$poll")), "✅ Allow".into());
        a.tool(call("p", Some(ToolStatus::Completed)), false);
        settle(&mut a).await;
        assert_eq!(chat.shown("!r"), vec!["✅ 💻 run p · completed"]);
    }

    #[tokio::test(start_paused = true)]
    async fn a_call_that_runs_is_shown_at_once_and_one_only_announced_after_a_moment() {
        let chat = FakeChat::new();
        let mut a = activity(&chat, Verbosity::All);
        a.tool(call("p", Some(ToolStatus::Pending)), true);
        settle_now(&mut a).await;
        assert!(chat.log().is_empty(), "held back a moment");
        a.tool(call("p", Some(ToolStatus::InProgress)), false);
        settle_now(&mut a).await;
        assert_eq!(chat.shown("!r"), vec!["🔄 💻 run p · in progress"]);
    }

    #[tokio::test(start_paused = true)]
    async fn in_a_room_without_cards_a_settled_poll_stays_a_poll() {
        let chat = FakeChat::new();
        let mut a = activity(&chat, Verbosity::Answer);
        a.tool(call("p", Some(ToolStatus::Pending)), true);
        assert!(a.poll_opened(&"p".into()));
        a.poll_settled(&"p".into(), Some(EventId::from("$poll")), "✅ Allow".into());
        a.tool(call("p", Some(ToolStatus::Completed)), false);
        settle(&mut a).await;
        assert!(chat.log().is_empty(), "{:?}", chat.log());
    }

    /// Sends what is due now, without waiting for anything held.
    async fn settle_now(a: &mut Activity) {
        while a.next_flush_at().is_some_and(|at| at <= Instant::now()) {
            a.flush().await.unwrap();
        }
    }
}
