//! Files that travel with messages: what a person sent (pictures, files, audio, video), the
//! content blocks a prompt is made of, and files an agent's answer carries out.

use std::sync::Arc;

use serde::{Deserialize, Serialize};

use super::ids::EventId;

/// What kind of file a message carries: it decides how the agent gets it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum MediaKind {
    /// A picture (`m.image`): an image block for agents that take images.
    Image,
    /// A sound or voice message (`m.audio`): an audio block for agents that take audio.
    Audio,
    /// A video (`m.video`): always a saved file.
    Video,
    /// Any other file (`m.file`): a saved file, or its text for small text files.
    File,
}

impl MediaKind {
    /// The word people use for it, in notices.
    pub fn noun(self) -> &'static str {
        match self {
            MediaKind::Image => "picture",
            MediaKind::Audio => "audio message",
            MediaKind::Video => "video",
            MediaKind::File => "file",
        }
    }
}

/// A file someone sent, as the chat side describes it: not downloaded until its prompt's
/// turn comes (and never for people who may not prompt).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct IncomingMedia {
    /// What kind of file.
    pub kind: MediaKind,
    /// Its file name as the sender gave it: never trusted as a path.
    pub name: String,
    /// Its MIME type, as the sender gave it.
    pub mimetype: Option<String>,
    /// Its size in bytes, as the sender gave it (checked again after the download).
    pub size: Option<u64>,
    /// Where the chat side fetches it from, in the chat side's own words (for Matrix: the
    /// event's media source as JSON, plain or encrypted). Opaque to the core.
    pub source: String,
    /// The message that carried it: notices about it reply to it.
    pub event_id: EventId,
    /// Whether it is a voice note (an `m.audio` marked `org.matrix.msc3245.voice`): one is
    /// heard where a transcription service is set (`core::hearing`).
    #[serde(default)]
    pub voice: bool,
}

/// The most a conversation takes in of people's files.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MediaLimits {
    /// Largest file downloaded, in bytes; larger ones get a notice.
    pub max_bytes: u64,
    /// Largest text file given to the agent as its text (an embedded resource), in bytes;
    /// larger ones are given as a link to the saved file.
    pub embed_text_max_bytes: u64,
    /// Whether a picture without a caption waits for its sender's next message in the
    /// conversation (the question about it) instead of being a prompt by itself.
    pub wait_for_question: bool,
}

impl Default for MediaLimits {
    fn default() -> Self {
        Self {
            max_bytes: 25 * 1024 * 1024,
            embed_text_max_bytes: 64 * 1024,
            wait_for_question: true,
        }
    }
}

/// Prompt content an agent accepts besides text and links, as it advertised in
/// `initialize` (`promptCapabilities`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PromptSupport {
    /// Image blocks.
    pub image: bool,
    /// Audio blocks.
    pub audio: bool,
    /// Embedded resources (a file's text inside the prompt).
    pub embedded_context: bool,
}

impl PromptSupport {
    /// The kinds it accepts, for `sidekicks check`.
    pub fn names(&self) -> Vec<String> {
        [
            (self.image, "image"),
            (self.audio, "audio"),
            (self.embedded_context, "embedded context"),
        ]
        .into_iter()
        .filter(|(on, _)| *on)
        .map(|(_, name)| name.to_owned())
        .collect()
    }
}

/// One piece of a prompt, protocol-neutral (the ACP adapter turns each into a content
/// block).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PromptBlock {
    /// Text.
    Text(String),
    /// A picture, for agents that take images.
    Image {
        /// Its MIME type.
        mime: String,
        /// Its bytes.
        data: Vec<u8>,
    },
    /// A sound, for agents that take audio.
    Audio {
        /// Its MIME type.
        mime: String,
        /// Its bytes.
        data: Vec<u8>,
    },
    /// A file the agent can open itself (every agent takes links).
    Link {
        /// Where it is (`file://` and an absolute path).
        uri: String,
        /// Its file name.
        name: String,
        /// Its MIME type, when known.
        mime: Option<String>,
        /// Its size in bytes.
        size: u64,
    },
    /// A text file's content, for agents that take embedded context.
    EmbeddedText {
        /// Where it is saved (`file://` and an absolute path).
        uri: String,
        /// Its MIME type, when known.
        mime: Option<String>,
        /// Its text.
        text: String,
    },
}

impl PromptBlock {
    /// The text of a prompt made of `blocks`: what a text-only reader (a test fake, a log)
    /// sees; other blocks are named in brackets.
    pub fn text_of(blocks: &[PromptBlock]) -> String {
        blocks
            .iter()
            .map(|b| match b {
                PromptBlock::Text(t) => t.clone(),
                PromptBlock::Image { mime, data } => {
                    format!("[image {mime}, {} bytes]", data.len())
                }
                PromptBlock::Audio { mime, data } => {
                    format!("[audio {mime}, {} bytes]", data.len())
                }
                PromptBlock::Link { name, .. } => format!("[file {name}]"),
                PromptBlock::EmbeddedText { uri, .. } => format!("[text of {uri}]"),
            })
            .collect::<Vec<_>>()
            .join("\n")
    }
}

/// A file posted with a message: an agent's picture, a file it points to, `!file`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OutAttachment {
    /// Whether clients show it as a picture (`m.image`) or a file (`m.file`).
    pub kind: MediaKind,
    /// Its file name.
    pub name: String,
    /// Its MIME type.
    pub mimetype: String,
    /// Its bytes (shared: a retried post does not copy them).
    pub data: Arc<[u8]>,
}

impl OutAttachment {
    /// A file to post named `name`: a picture when its type is an image type.
    pub fn new(name: String, mimetype: String, data: Vec<u8>) -> Self {
        let kind = match mimetype.starts_with("image/") {
            true => MediaKind::Image,
            false => MediaKind::File,
        };
        Self {
            kind,
            name,
            mimetype,
            data: data.into(),
        }
    }
}

/// A file in an agent's answer, as the agent gave it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AnswerFile {
    /// A picture (an image block): its bytes.
    Image {
        /// Its MIME type.
        mime: String,
        /// Its bytes.
        data: Vec<u8>,
    },
    /// A file the agent points to (a resource link): posted when it is in the workspace.
    Link {
        /// Where it is.
        uri: String,
        /// Its name.
        name: String,
    },
    /// A file's content the agent embeds (an embedded resource).
    Embedded {
        /// Where it comes from.
        uri: String,
        /// Its MIME type, when given.
        mime: Option<String>,
        /// Its bytes (text or decoded blob).
        data: Vec<u8>,
    },
}
