//! A streamed reply: a message created at the first text and edited as chunks arrive, a new
//! one below each piece of work and past each size cut.
//!
//! The rules (see `docs/streaming.md`):
//! - at most one request (send or edit) per `interval`, and at most `max_edits` edits per
//!   message before only the final edit is sent;
//! - every request carries the *whole* current text of its message, so a request that is
//!   refused (rate limit, network) loses nothing: the next one folds the pending text in;
//! - on `M_LIMIT_EXCEEDED` nothing is sent before `retry_after` has passed;
//! - a reply larger than one event continues in a new message, split at a paragraph or line
//!   boundary outside code fences; the split points depend only on text already received,
//!   so a message that has been finished never changes again;
//! - [`ReplyStream::finish`] keeps trying until every message shows its final content.

use std::borrow::Cow;
use std::sync::Arc;
use std::time::Duration;

use tokio::time::Instant;

use crate::core::chat::{ChatError, ChatPort, Undelivered};
use crate::core::view::live::{Paced, send_everything};
use crate::model::OutMessage;
use crate::model::ids::{EventId, RoomId};
use crate::render::{markdown, strings};

/// Most bytes of body + HTML we put in one event, keeping clear of Matrix's 64 KiB limit
/// (an edit carries the content twice: the fallback and `m.new_content`).
const MAX_EVENT_CONTENT_BYTES: usize = 28_000;

/// How a reply is streamed: the `[streaming]` table of the config, read straight into this
/// struct (its keys and defaults are declared here and nowhere else), and `[display]
/// pictures`. Tests change what they need with `..Default::default()`.
#[derive(Debug, Clone, PartialEq, serde::Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct StreamSettings {
    /// Minimum time between two requests for this reply (`edit_interval_ms`).
    #[serde(rename = "edit_interval_ms", with = "crate::model::durations::millis")]
    pub interval: Duration,
    /// Edits per message before intermediate edits stop (the final edit is always sent)
    /// (`max_edits_per_message`).
    #[serde(rename = "max_edits_per_message")]
    pub max_edits: u32,
    /// Largest Markdown text per message, in bytes, before the reply continues in a new
    /// message (`max_message_bytes`).
    #[serde(rename = "max_message_bytes")]
    pub max_bytes: usize,
    /// Largest whole reply, in bytes: past it the reply is cut with a line saying so and
    /// the rest of the answer is dropped (not kept in memory).
    pub max_reply_bytes: usize,
    /// How long the end of a turn keeps retrying its final content while the homeserver
    /// fails; what is still undelivered then goes to the outbox, is delivered once the
    /// homeserver is back, and the next prompt runs meanwhile (`outage_patience_secs`).
    #[serde(
        rename = "outage_patience_secs",
        with = "crate::model::durations::secs"
    )]
    pub patience: Duration,
    /// Whether a message still streaming carries the MSC4357 live marker until its last
    /// edit (`live_marker`), so clients that know it show it as in progress and notify once
    /// it is done.
    #[serde(rename = "live_marker")]
    pub live: bool,
    /// Which of the agent's Markdown pictures are shown: set from `[display] pictures`.
    #[serde(skip)]
    pub pictures: markdown::Pictures,
}

impl Default for StreamSettings {
    fn default() -> Self {
        Self {
            interval: Duration::from_millis(1000),
            max_edits: 120,
            max_bytes: 12_000,
            max_reply_bytes: 1_000_000,
            patience: Duration::from_secs(300),
            live: true,
            pictures: markdown::Pictures::default(),
        }
    }
}

impl StreamSettings {
    /// What is wrong with these settings, as (key in `[streaming]`, why): checked here,
    /// beside the keys, so a new key's bounds are written where the key is.
    pub fn problems(&self) -> Vec<(&'static str, String)> {
        let mut out = Vec::new();
        if self.interval < Duration::from_millis(100) {
            out.push(("edit_interval_ms", "must be at least 100".into()));
        }
        if self.max_edits == 0 {
            out.push(("max_edits_per_message", "must be at least 1".into()));
        }
        if !(1_000..=30_000).contains(&self.max_bytes) {
            out.push((
                "max_message_bytes",
                "must be between 1000 and 30000 (a Matrix event holds at most 64 KiB)".into(),
            ));
        }
        if self.max_reply_bytes < self.max_bytes {
            out.push((
                "max_reply_bytes",
                "must be at least streaming.max_message_bytes".into(),
            ));
        }
        if self.patience.is_zero() {
            out.push(("outage_patience_secs", "must be at least 1".into()));
        }
        out
    }
}

/// Counts kept for the log and for benchmarks.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct StreamStats {
    /// Messages created.
    pub sends: u32,
    /// Edits sent successfully.
    pub edits: u32,
    /// Requests refused with `M_LIMIT_EXCEEDED`.
    pub rate_limited: u32,
    /// Requests that failed otherwise.
    pub failures: u32,
    /// When the answer's first message was posted (the wall clock, comparable with the
    /// homeserver's timestamps), if it was.
    pub first_post: Option<std::time::SystemTime>,
}

/// One message of the reply that exists in the room.
#[derive(Debug)]
struct Posted {
    /// Its event ID, the target of edits.
    event_id: EventId,
    /// The text it shows now.
    shown: String,
    /// Edits it has received.
    edits: u32,
    /// Whether it carries the live marker now: its last edit must drop it.
    live: bool,
}

/// The state of one streamed reply.
pub struct ReplyStream {
    /// Where to send.
    chat: Arc<dyn ChatPort>,
    /// The room.
    room: RoomId,
    /// Prefix of transaction IDs, unique per reply, so a retried send is not duplicated.
    txn_prefix: String,
    /// Pacing rules.
    settings: StreamSettings,
    /// The whole reply text received so far.
    text: String,
    /// Where each full message ends in `text` (see [`split_reply`]).
    cuts: Vec<usize>,
    /// A line appended to the last message when the turn ends abnormally.
    footer: Option<String>,
    /// Whether the turn has ended (final edits may ignore the edit cap).
    finishing: bool,
    /// Messages posted so far, in order.
    posted: Vec<Posted>,
    /// Whether the reply reached `max_reply_bytes` and was cut: later chunks are dropped.
    capped: bool,
    /// Whether the last cut is a break after work (see [`ReplyStream::break_after_work`])
    /// that no text has followed yet.
    open_break: bool,
    /// Nothing is sent before this instant (interval or rate limit).
    not_before: Instant,
    /// Nothing at all is sent before this instant (a rate limit, or a failure's back-off):
    /// the edit that only drops the live marker at the end waits for this, not for the
    /// interval, so a short answer's turn does not end an interval late.
    retry_at: Instant,
    /// Counters.
    stats: StreamStats,
}

impl ReplyStream {
    /// A reply that has not sent anything yet.
    pub fn new(
        chat: Arc<dyn ChatPort>,
        room: RoomId,
        txn_prefix: impl Into<String>,
        settings: StreamSettings,
    ) -> Self {
        Self {
            chat,
            room,
            txn_prefix: txn_prefix.into(),
            settings,
            text: String::new(),
            cuts: Vec::new(),
            footer: None,
            finishing: false,
            posted: Vec::new(),
            capped: false,
            open_break: false,
            not_before: Instant::now(),
            retry_at: Instant::now(),
            stats: StreamStats::default(),
        }
    }

    /// Appends a chunk of the agent's answer. Past `max_reply_bytes` the reply is cut with
    /// a line saying so, and what comes after is dropped.
    pub fn push(&mut self, chunk: &str) {
        if self.capped {
            return;
        }
        self.open_break &= chunk.is_empty();
        let room = self
            .settings
            .max_reply_bytes
            .saturating_sub(self.text.len());
        if chunk.len() <= room {
            self.text.push_str(chunk);
        } else {
            let mut end = room;
            while !chunk.is_char_boundary(end) {
                end -= 1;
            }
            self.text.push_str(&chunk[..end]);
            self.text
                .push_str(&strings::reply_cut(self.settings.max_reply_bytes));
            self.capped = true;
            tracing::warn!(room = %self.room, max = self.settings.max_reply_bytes, "a reply reached the size limit; the rest is dropped");
        }
        // A message that is full gets its final boundary once, never to move again.
        loop {
            let start = self.cuts.last().copied().unwrap_or(0);
            let rest = &self.text[start..];
            if rest.len() <= self.settings.max_bytes {
                break;
            }
            let cut = start + choose_cut(rest, self.settings.max_bytes);
            self.cuts.push(cut);
        }
    }

    /// The turn's work (a tool card, a poll, the plan, a question) was just posted below
    /// the reply's current message: what the agent writes next goes into a new message,
    /// below that work, so the room reads the answer after the steps that led to it. A
    /// message that holds nothing yet is not cut (the next text is below the work already).
    /// If no text follows before the turn ends, the break is taken back and the footer goes
    /// to the message above. See `docs/streaming.md`, "Read in order".
    pub fn break_after_work(&mut self) {
        let start = self.cuts.last().copied().unwrap_or(0);
        if self.capped || self.text.len() == start {
            return;
        }
        self.cuts.push(self.text.len());
        self.open_break = true;
    }

    /// The whole text received so far.
    pub fn text(&self) -> &str {
        &self.text
    }

    /// Event IDs of the messages posted so far.
    pub fn event_ids(&self) -> Vec<EventId> {
        self.posted.iter().map(|p| p.event_id.clone()).collect()
    }

    /// The last message posted and the text the room shows in it: what a cut turn leaves.
    pub fn last_shown(&self) -> Option<(&EventId, &str)> {
        self.posted.last().map(|p| (&p.event_id, p.shown.as_str()))
    }

    /// The content of a reply message that was cut after `shown`: the text, then `footer`,
    /// its pictures as `pictures` says.
    pub fn cut_content(shown: &str, footer: &str, pictures: markdown::Pictures) -> OutMessage {
        to_message(&with_footer(shown, footer), pictures)
    }

    /// Which of the agent's pictures this reply shows.
    pub fn pictures(&self) -> markdown::Pictures {
        self.settings.pictures
    }

    /// Counters so far.
    pub fn stats(&self) -> &StreamStats {
        &self.stats
    }

    /// Whether message `index` of a reply whose last message is `last` is still being
    /// written: only the last one, until the turn ends.
    fn live_at(&self, index: usize, last: usize) -> bool {
        self.settings.live && index == last && !self.finishing
    }

    /// The last message's index.
    fn last_index(&self) -> usize {
        self.cuts.len()
    }

    /// The next request to make, if any: (message index, the text it should show).
    /// A message that shows its text but still carries the live marker it should no
    /// longer carry needs one more edit.
    ///
    /// Runs on every loop of a turn, so it borrows the text instead of copying it (only a
    /// footer, at the end, makes a new string): message boundaries come from `cuts`,
    /// computed once as the text grows.
    fn next_request(&self) -> Option<(usize, Cow<'_, str>)> {
        let mut bounds = Vec::with_capacity(self.cuts.len() + 2);
        bounds.push(0);
        bounds.extend_from_slice(&self.cuts);
        bounds.push(self.text.len());
        let last = bounds.len() - 2;
        let footer = self.footer.as_deref().filter(|_| self.finishing);
        for i in 0..=last {
            let part = &self.text[bounds[i]..bounds[i + 1]];
            let want: Cow<'_, str> = match footer {
                Some(footer) if i == last && part.is_empty() => footer.into(),
                Some(footer) if i == last => with_footer(part, footer).into(),
                _ => part.into(),
            };
            if want.is_empty() {
                return None;
            }
            match self.posted.get(i) {
                Some(p) if p.shown == *want && p.live == self.live_at(i, last) => continue,
                // An open (last) message stops receiving intermediate edits at the cap.
                Some(p) if i == last && !self.finishing && p.edits >= self.settings.max_edits => {
                    return None;
                }
                _ => return Some((i, want)),
            }
        }
        None
    }

    /// Whether showing `text` in message `index` only drops its live marker (at the end):
    /// the room shows the text already.
    fn only_unmarks(&self, index: usize, text: &str) -> bool {
        self.finishing && (self.posted.get(index)).is_some_and(|p| p.live && p.shown == text)
    }

    /// When the next request is due, or `None` when nothing needs sending.
    pub fn next_flush_at(&self) -> Option<Instant> {
        self.next_request()
            .map(|(index, text)| match self.only_unmarks(index, &text) {
                true => self.retry_at,
                false => self.not_before,
            })
    }

    /// Makes at most one request (send or edit), if one is due. A refused request leaves
    /// the text pending for the next call.
    pub async fn flush(&mut self) -> Result<(), ChatError> {
        let now = Instant::now();
        let Some((index, text)) = self.next_request().map(|(i, t)| (i, t.into_owned())) else {
            return Ok(());
        };
        let due = match self.only_unmarks(index, &text) {
            true => self.retry_at,
            false => self.not_before,
        };
        if now < due {
            return Ok(());
        }
        let live = self.live_at(index, self.last_index());
        let message = OutMessage {
            live,
            ..to_message(&text, self.settings.pictures)
        };
        let result = match self.posted.get(index) {
            None => {
                let txn = format!("{}-{index}", self.txn_prefix);
                self.chat
                    .send(&self.room, &txn, &message)
                    .await
                    .map(|event_id| {
                        self.stats.sends += 1;
                        self.stats
                            .first_post
                            .get_or_insert_with(std::time::SystemTime::now);
                        self.posted.push(Posted {
                            event_id,
                            shown: text,
                            edits: 0,
                            live,
                        });
                    })
            }
            Some(p) => {
                let event_id = p.event_id.clone();
                self.chat
                    .edit(&self.room, &event_id, &message)
                    .await
                    .map(|()| {
                        self.stats.edits += 1;
                        let p = &mut self.posted[index];
                        p.shown = text;
                        p.edits += 1;
                        p.live = live;
                    })
            }
        };
        let now = Instant::now();
        match &result {
            Ok(()) => self.not_before = now + self.settings.interval,
            Err(ChatError::RateLimited { retry_after }) => {
                self.stats.rate_limited += 1;
                self.not_before = now + (*retry_after).max(self.settings.interval);
                self.retry_at = now + *retry_after;
            }
            Err(_) => {
                self.stats.failures += 1;
                self.not_before = now + self.settings.interval.max(Duration::from_secs(2));
                self.retry_at = self.not_before;
            }
        }
        result
    }

    /// Ends the reply: appends `footer` (if any) and sends until every message shows its
    /// complete content (see [`send_everything`] for when it gives up).
    pub async fn finish(&mut self, footer: Option<String>) -> Result<(), ChatError> {
        // Nothing came after the last break: the footer ends the message above it.
        if std::mem::take(&mut self.open_break) {
            self.cuts.pop();
        }
        self.footer = footer;
        self.finishing = true;
        send_everything(self, self.settings.patience).await
    }

    /// After [`ReplyStream::finish`] gave up on a homeserver that stayed away: what each
    /// message of the reply should show and does not yet, in order.
    pub fn undelivered(&self) -> Vec<Undelivered> {
        let mut bounds = Vec::with_capacity(self.cuts.len() + 2);
        bounds.push(0);
        bounds.extend_from_slice(&self.cuts);
        bounds.push(self.text.len());
        let last = bounds.len() - 2;
        let mut out = Vec::new();
        for i in 0..=last {
            let part = &self.text[bounds[i]..bounds[i + 1]];
            let want = match self.footer.as_deref() {
                Some(footer) if i == last && part.is_empty() => footer.to_owned(),
                Some(footer) if i == last => with_footer(part, footer),
                _ => part.to_owned(),
            };
            if want.is_empty() {
                continue;
            }
            let posted = self.posted.get(i);
            if posted.is_some_and(|p| p.shown == want && !p.live) {
                continue;
            }
            out.push(Undelivered {
                event_id: posted.map(|p| p.event_id.clone()),
                txn: format!("{}-{i}", self.txn_prefix),
                content: to_message(&want, self.settings.pictures),
            });
        }
        out
    }
}

impl Paced for ReplyStream {
    fn due_at(&mut self) -> Option<Instant> {
        self.next_flush_at()
    }

    async fn send_due(&mut self) -> Result<(), ChatError> {
        self.flush().await
    }
}

/// `text` followed by `footer` after one blank line, whatever whitespace ended the text.
fn with_footer(text: &str, footer: &str) -> String {
    format!("{}\n\n{footer}", text.trim_end())
}

/// The Matrix content for one message of a reply: Markdown body plus HTML, without HTML when
/// the event would grow too large.
fn to_message(text: &str, pictures: markdown::Pictures) -> OutMessage {
    let html = markdown::to_html(text, pictures)
        .filter(|h| h.len() + text.len() <= MAX_EVENT_CONTENT_BYTES);
    OutMessage {
        body: text.to_owned(),
        html,
        notice: false,
        mentions: Vec::new(),
        reply_to: None,
        thread: None,
        attachment: None,
        live: false,
    }
}

/// Splits a reply into the texts of consecutive messages of at most `max_bytes` each
/// (always at least one, possibly empty). Concatenating the parts gives `text` back.
///
/// A cut goes after the last blank line outside a code fence, else after the last line
/// break, else at a character boundary. It only looks at the first `max_bytes` of what is
/// left, so parts already complete never change as more text arrives.
pub fn split_reply(text: &str, max_bytes: usize) -> Vec<&str> {
    let mut parts = Vec::new();
    let mut rest = text;
    while rest.len() > max_bytes {
        let cut = choose_cut(rest, max_bytes);
        parts.push(&rest[..cut]);
        rest = &rest[cut..];
    }
    parts.push(rest);
    parts
}

/// Where to end a message holding the start of `s`, in one pass over at most `max_bytes`.
fn choose_cut(s: &str, max_bytes: usize) -> usize {
    let mut limit = max_bytes.min(s.len());
    while !s.is_char_boundary(limit) {
        limit -= 1;
    }
    let (mut after_blank_line, mut after_line, mut after_any_line) = (None, None, None);
    let mut in_fence = false;
    let mut end = 0;
    for line in s[..limit].split_inclusive('\n') {
        end += line.len();
        if line.trim_start().starts_with("```") {
            in_fence = !in_fence;
        }
        // Only whole lines, and not so early that the message would be tiny.
        if !line.ends_with('\n') || end < limit / 4 {
            continue;
        }
        after_any_line = Some(end);
        if !in_fence {
            after_line = Some(end);
            if line.trim().is_empty() {
                after_blank_line = Some(end);
            }
        }
    }
    after_blank_line
        .or(after_line)
        .or(after_any_line)
        .unwrap_or(limit.max(1))
}

#[cfg(test)]
mod tests;
