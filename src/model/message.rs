//! A message as Sidekicks posts it, whatever the chat side.

use super::ids::{EventId, UserId};
use super::media::OutAttachment;

/// A message to post or the new content of an edit.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OutMessage {
    /// Plain text (for a reply: the Markdown source).
    pub body: String,
    /// HTML rendering, when there is formatting.
    pub html: Option<String>,
    /// Whether this is an `m.notice` (status, errors) rather than an `m.text` (answers).
    pub notice: bool,
    /// Users to notify (Matrix intentional mentions), e.g. the person whose approval a poll
    /// waits for; nobody when empty (the message says so, so no push rule fires on the
    /// agent's words). Honoured when the message is posted, never by edits, so an edit does
    /// not notify again.
    pub mentions: Vec<UserId>,
    /// The message this one answers (an `m.in_reply_to` relation), so a notice about one
    /// message among many says which. Honoured when the message is posted, never by edits.
    pub reply_to: Option<EventId>,
    /// The root of the thread it is posted in (an `m.thread` relation; clients without
    /// threads see a reply). Honoured when the message is posted, never by edits.
    pub thread: Option<EventId>,
    /// A file posted with it (a picture, a file): the body is then its caption, or its
    /// file name. Honoured when the message is posted; an edit changes only the text.
    pub attachment: Option<OutAttachment>,
    /// Whether the message is still being written (an answer streaming in): posted and
    /// edited with the MSC4357 live marker, so clients can show it as in progress and
    /// notify once it is done. The edit that completes a message sends it without.
    pub live: bool,
}

impl OutMessage {
    /// A notice without formatting.
    pub fn notice(text: impl Into<String>) -> Self {
        let body = text.into();
        Self {
            html: None,
            body,
            notice: true,
            mentions: Vec::new(),
            reply_to: None,
            thread: None,
            attachment: None,
            live: false,
        }
    }

    /// A file posted as a message of its own; its body is its file name.
    pub fn file(attachment: OutAttachment) -> Self {
        Self {
            body: attachment.name.clone(),
            notice: false,
            attachment: Some(attachment),
            ..Self::notice("")
        }
    }

    /// This message, posted in the thread whose root is `thread` (`None`: the room's
    /// main timeline, unless it is set already).
    pub fn in_thread(self, thread: Option<EventId>) -> Self {
        Self {
            thread: thread.or(self.thread),
            ..self
        }
    }

    /// This message, posted as a reply to `event_id`.
    pub fn replying_to(self, event_id: EventId) -> Self {
        Self {
            reply_to: Some(event_id),
            ..self
        }
    }
}
