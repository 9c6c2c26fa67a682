//! A streamed reply: one message created at the first text, then edited as chunks arrive.
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
            pictures: markdown::Pictures::default(),
        }
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
    /// Nothing is sent before this instant (interval or rate limit).
    not_before: Instant,
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
            not_before: Instant::now(),
            stats: StreamStats::default(),
        }
    }

    /// Appends a chunk of the agent's answer. Past `max_reply_bytes` the reply is cut with
    /// a line saying so, and what comes after is dropped.
    pub fn push(&mut self, chunk: &str) {
        if self.capped {
            return;
        }
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

    /// The next request to make, if any: (message index, the text it should show).
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
                Some(p) if p.shown == *want => continue,
                // An open (last) message stops receiving intermediate edits at the cap.
                Some(p) if i == last && !self.finishing && p.edits >= self.settings.max_edits => {
                    return None;
                }
                _ => return Some((i, want)),
            }
        }
        None
    }

    /// When the next request is due, or `None` when nothing needs sending.
    pub fn next_flush_at(&self) -> Option<Instant> {
        self.next_request().map(|_| self.not_before)
    }

    /// Makes at most one request (send or edit), if one is due. A refused request leaves
    /// the text pending for the next call.
    pub async fn flush(&mut self) -> Result<(), ChatError> {
        let now = Instant::now();
        if now < self.not_before {
            return Ok(());
        }
        let Some((index, text)) = self.next_request().map(|(i, t)| (i, t.into_owned())) else {
            return Ok(());
        };
        let message = to_message(&text, self.settings.pictures);
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
                    })
            }
        };
        let now = Instant::now();
        match &result {
            Ok(()) => self.not_before = now + self.settings.interval,
            Err(ChatError::RateLimited { retry_after }) => {
                self.stats.rate_limited += 1;
                self.not_before = now + (*retry_after).max(self.settings.interval);
            }
            Err(_) => {
                self.stats.failures += 1;
                self.not_before = now + self.settings.interval.max(Duration::from_secs(2));
            }
        }
        result
    }

    /// Ends the reply: appends `footer` (if any) and sends until every message shows its
    /// complete content (see [`send_everything`] for when it gives up).
    pub async fn finish(&mut self, footer: Option<String>) -> Result<(), ChatError> {
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
            if posted.is_some_and(|p| p.shown == want) {
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
mod tests {
    use super::*;
    use crate::core::fakes::{FakeChat, Sent};

    fn settings() -> StreamSettings {
        StreamSettings {
            interval: Duration::from_secs(1),
            max_edits: 100,
            max_bytes: 2_000,
            patience: crate::core::view::live::MAX_OUTAGE,
            ..Default::default()
        }
    }

    /// Feeds `chunks` one every `every`, flushing as the worker does.
    async fn drive(stream: &mut ReplyStream, chunks: &[String], every: Duration) {
        for chunk in chunks {
            stream.push(chunk);
            let until = Instant::now() + every;
            loop {
                match stream.next_flush_at() {
                    Some(at) if at <= until => {
                        tokio::time::sleep_until(at).await;
                        let _ = stream.flush().await;
                    }
                    _ => break,
                }
            }
            tokio::time::sleep_until(until).await;
        }
    }

    fn chunks(n: usize) -> Vec<String> {
        (0..n).map(|i| format!("word{i} ")).collect()
    }

    #[tokio::test(start_paused = true)]
    async fn a_reply_past_its_size_cap_is_cut_with_a_line_and_the_rest_dropped() {
        let chat = FakeChat::new();
        let capped = StreamSettings {
            max_reply_bytes: 5_000,
            ..settings()
        };
        let mut s = ReplyStream::new(chat.clone(), "!r".into(), "t-cap", capped);
        for _ in 0..1_000 {
            s.push("0123456789");
        }
        assert!(s.text().starts_with(&"0123456789".repeat(500)));
        assert!(
            s.text().ends_with("The rest was dropped."),
            "{}",
            &s.text()[4_990..]
        );
        assert!(s.text().len() < 5_000 + 200, "nothing kept past the cap");
        s.finish(None).await.unwrap();
        let shown = chat.shown("!r").concat();
        assert!(
            shown.contains("✂️ The answer was cut here: it passed 5 KB"),
            "{shown}"
        );
        // A multi-byte character is never split at the cap.
        let mut s = ReplyStream::new(
            FakeChat::new(),
            "!r".into(),
            "t-cap2",
            StreamSettings {
                max_reply_bytes: 5_001,
                ..settings()
            },
        );
        s.push(&"é".repeat(3_000));
        assert!(s.text().starts_with(&"é".repeat(2_500)));
    }

    #[tokio::test(start_paused = true)]
    async fn edits_are_coalesced_to_one_per_interval_and_the_last_holds_everything() {
        let chat = FakeChat::new();
        let mut s = ReplyStream::new(chat.clone(), "!r".into(), "t1", settings());
        let parts = chunks(50);
        drive(&mut s, &parts, Duration::from_millis(100)).await;
        s.finish(None).await.unwrap();
        let log = chat.log();
        // 50 chunks over 5 s at one request per second: about 6 requests, not 50.
        assert!(
            log.len() <= 7 && log.len() >= 3,
            "{} requests: {log:?}",
            log.len()
        );
        assert!(matches!(log[0], Sent::Send { .. }));
        assert_eq!(chat.shown("!r"), vec![parts.concat()]);
        let times = chat.times();
        for pair in times.windows(2) {
            assert!(pair[1] - pair[0] >= Duration::from_secs(1), "{times:?}");
        }
    }

    #[tokio::test(start_paused = true)]
    async fn the_first_text_is_sent_at_once() {
        let chat = FakeChat::new();
        let start = Instant::now();
        let mut s = ReplyStream::new(chat.clone(), "!r".into(), "t", settings());
        s.push("hello");
        assert_eq!(s.next_flush_at(), Some(start));
        s.flush().await.unwrap();
        assert_eq!(chat.shown("!r"), vec!["hello".to_string()]);
    }

    #[tokio::test(start_paused = true)]
    async fn a_rate_limit_folds_pending_text_into_the_next_edit() {
        let chat = FakeChat::new();
        // The 2nd and 3rd requests are refused with a 5 s retry_after.
        chat.rate_limit_calls(&[2, 3], Duration::from_secs(5));
        let mut s = ReplyStream::new(chat.clone(), "!r".into(), "t", settings());
        let parts = chunks(40);
        drive(&mut s, &parts, Duration::from_millis(250)).await;
        s.finish(None).await.unwrap();
        assert_eq!(chat.shown("!r"), vec![parts.concat()]);
        assert_eq!(s.stats().rate_limited, 2);
        assert_eq!(s.stats().sends, 1, "no duplicate message");
        // Nothing was sent in the 5 s after a refusal.
        let log = chat.attempt_times();
        let refused = log[1];
        assert!(log[2] - refused >= Duration::from_secs(5));
        assert!(log[3] - log[2] >= Duration::from_secs(5));
    }

    #[tokio::test(start_paused = true)]
    async fn the_edit_cap_stops_intermediate_edits_but_not_the_final_one() {
        let chat = FakeChat::new();
        let mut settings = settings();
        settings.max_edits = 2;
        let mut s = ReplyStream::new(chat.clone(), "!r".into(), "t", settings);
        let parts = chunks(100);
        drive(&mut s, &parts, Duration::from_millis(200)).await;
        assert_eq!(s.stats().edits, 2);
        s.finish(Some("⏹️ Stopped.".into())).await.unwrap();
        assert_eq!(s.stats().edits, 3);
        assert_eq!(
            chat.shown("!r"),
            // The footer follows the text after one blank line, whatever whitespace ended it.
            vec![format!("{}\n\n⏹️ Stopped.", parts.concat().trim_end())]
        );
    }

    #[tokio::test(start_paused = true)]
    async fn a_long_reply_continues_in_new_messages() {
        let chat = FakeChat::new();
        let mut s = ReplyStream::new(chat.clone(), "!r".into(), "t", settings());
        let parts: Vec<String> = (0..300)
            .map(|i| format!("line {i} of the answer\n"))
            .collect();
        drive(&mut s, &parts, Duration::from_millis(20)).await;
        s.finish(None).await.unwrap();
        let shown = chat.shown("!r");
        assert!(shown.len() >= 3, "{} messages", shown.len());
        assert!(shown.iter().all(|m| m.len() <= 2_000));
        assert_eq!(shown.concat(), parts.concat());
    }

    #[tokio::test(start_paused = true)]
    async fn transient_failures_are_retried_until_the_final_content_is_shown() {
        let chat = FakeChat::new();
        chat.fail_calls(&[2, 3]);
        let mut s = ReplyStream::new(chat.clone(), "!r".into(), "t", settings());
        s.push("a");
        s.flush().await.unwrap();
        s.push("b");
        s.finish(None).await.unwrap();
        assert_eq!(chat.shown("!r"), vec!["ab".to_string()]);
    }

    #[tokio::test(start_paused = true)]
    async fn the_final_content_waits_out_a_homeserver_outage_of_minutes() {
        let chat = FakeChat::new();
        // A minute and a half of refused connections (one attempt every 2 s) after the
        // first post.
        chat.fail_calls(&(2..=46).collect::<Vec<u32>>());
        let mut s = ReplyStream::new(chat.clone(), "!r".into(), "t", settings());
        s.push("a");
        s.flush().await.unwrap();
        s.push("b");
        let started = Instant::now();
        s.finish(None).await.unwrap();
        assert!(started.elapsed() >= Duration::from_secs(88));
        assert_eq!(chat.shown("!r"), vec!["ab".to_string()]);
    }

    #[tokio::test(start_paused = true)]
    async fn an_outage_longer_than_the_limit_gives_up() {
        let chat = FakeChat::new();
        chat.fail_calls(&(2..=1000).collect::<Vec<u32>>());
        let mut s = ReplyStream::new(chat.clone(), "!r".into(), "t", settings());
        s.push("a");
        s.flush().await.unwrap();
        s.push("b");
        let started = Instant::now();
        assert!(s.finish(None).await.is_err());
        let waited = started.elapsed();
        assert!(waited >= settings().patience, "{waited:?}");
        assert!(
            waited < settings().patience + Duration::from_secs(10),
            "{waited:?}"
        );
        // What is left for the outbox: the posted message's final text, as an edit.
        let left = s.undelivered();
        assert_eq!(left.len(), 1, "{left:?}");
        assert_eq!(left[0].content.body, "ab");
        assert_eq!(
            left[0].event_id.as_ref().map(|id| id.as_str()),
            Some(s.event_ids()[0].as_str())
        );
    }

    #[tokio::test(start_paused = true)]
    async fn messages_never_posted_are_left_to_post_under_their_transaction_id() {
        let chat = FakeChat::new();
        chat.fail_calls(&(1..=1000).collect::<Vec<u32>>());
        let quick = StreamSettings {
            patience: Duration::from_secs(5),
            ..settings()
        };
        let mut s = ReplyStream::new(chat.clone(), "!r".into(), "t-never", quick);
        s.push("never posted");
        assert!(s.finish(Some("⏹️ Stopped.".into())).await.is_err());
        let left = s.undelivered();
        assert_eq!(left.len(), 1, "{left:?}");
        assert_eq!(left[0].event_id, None);
        assert_eq!(left[0].txn, "t-never-0");
        assert_eq!(left[0].content.body, "never posted\n\n⏹️ Stopped.");
    }

    #[test]
    fn split_keeps_text_and_prefers_boundaries_outside_code() {
        let text = format!(
            "{}\n\n```\n{}\n```\n{}",
            "a".repeat(500),
            "code line\n".repeat(100),
            "tail ".repeat(200)
        );
        let parts = split_reply(&text, 1_000);
        assert_eq!(parts.concat(), text);
        assert!(parts.iter().all(|p| p.len() <= 1_000));
        assert_eq!(parts[0], format!("{}\n\n", "a".repeat(500)));
        // Stable: the first part does not move when more text arrives.
        let longer = format!("{text} and more");
        assert_eq!(split_reply(&longer, 1_000)[0], parts[0]);
    }

    #[test]
    fn boundaries_found_while_streaming_match_splitting_the_whole_text() {
        let text: String = (0..400)
            .map(|i| match i % 7 {
                0 => "```\ncode\n".to_owned(),
                3 => "\n".to_owned(),
                _ => format!("line {i} with some words ü\n"),
            })
            .collect();
        for chunk_size in [1, 7, 64, 5_000] {
            let mut stream = ReplyStream::new(
                FakeChat::new(),
                "!r".into(),
                "t",
                StreamSettings {
                    interval: Duration::from_secs(1),
                    max_edits: 10,
                    max_bytes: 1_000,
                    patience: crate::core::view::live::MAX_OUTAGE,
                    ..Default::default()
                },
            );
            let chars: Vec<char> = text.chars().collect();
            for chunk in chars.chunks(chunk_size) {
                stream.push(&chunk.iter().collect::<String>());
            }
            let mut parts = Vec::new();
            let mut start = 0;
            for &cut in stream.cuts.iter().chain([text.len()].iter()) {
                parts.push(&text[start..cut]);
                start = cut;
            }
            assert_eq!(parts, split_reply(&text, 1_000), "chunks of {chunk_size}");
        }
    }

    #[test]
    fn split_handles_text_without_breaks_and_multibyte_characters() {
        let text = "é".repeat(1_500);
        let parts = split_reply(&text, 1_001);
        assert_eq!(parts.concat(), text);
        assert!(parts.iter().all(|p| p.len() <= 1_001));
    }

    #[test]
    fn oversized_html_is_dropped_rather_than_sending_an_invalid_event() {
        let text = "<".repeat(10_000);
        let msg = to_message(&text, Default::default());
        assert_eq!(msg.html, None);
        assert_eq!(msg.body, text);
    }
}
