//! Voice notes heard: what the core needs from a speech-to-text service (`[voice]`), and the
//! pure decisions about which files are heard. Implemented over HTTP by
//! `crate::transcribe`, and by [`fake::Ears`] in tests. See `docs/conversations.md`,
//! "Voice notes".

use async_trait::async_trait;

use crate::model::media::{IncomingMedia, MediaKind};

/// Why a voice note was not heard. Every one of them leaves the note as a file, as if no
/// service were set: nothing is lost.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum HearingError {
    /// The service could not be reached, or broke off.
    #[error("the transcription service could not be reached: {0}")]
    Unreachable(String),
    /// The service did not answer within its deadline (`voice.timeout_secs`).
    #[error("the transcription service did not answer within {0} s")]
    TimedOut(u64),
    /// The service answered with an error status; its own words, cut short.
    #[error("the transcription service refused it ({status}): {message}")]
    Refused {
        /// The HTTP status.
        status: u16,
        /// What it said.
        message: String,
    },
    /// The service answered with something that is not a transcript.
    #[error("the transcription service answered with no text: {0}")]
    NoText(String),
}

/// A speech-to-text service.
#[async_trait]
pub trait Transcriber: Send + Sync {
    /// The words spoken in `data` (a sound file named `name`, of type `mime`).
    async fn transcribe(
        &self,
        name: &str,
        mime: &str,
        data: Vec<u8>,
    ) -> Result<String, HearingError>;
}

/// Whether `media` is heard when a service is set: a voice note (MSC3245), not any sound
/// file: a song or a recording sent as a file is the agent's to open.
pub fn is_heard(media: &IncomingMedia) -> bool {
    media.kind == MediaKind::Audio && media.voice
}

/// Whether a message made only of `media` is a prompt by itself rather than a file waiting
/// for its sender's question: a voice note is its own question, where it is heard.
pub fn speaks_for_itself(media: &[IncomingMedia], hearing: bool) -> bool {
    hearing && !media.is_empty() && media.iter().all(is_heard)
}

/// The prompt's text once `heard` (each voice note's transcript, in order) is known: a
/// bracketed line saying it was spoken (so the agent allows for mishearing), the
/// transcripts, then what the sender wrote beside them. It never starts with the
/// transcript: words heard as `/allow-all` are not a slash command, which only a typed
/// prompt from someone allowed to may send.
pub fn prompt_text(heard: &[String], written: &str) -> String {
    let mut parts = vec![VOICE_LINE];
    parts.extend(heard.iter().map(|t| t.trim()));
    if !written.trim().is_empty() {
        parts.push(written);
    }
    parts.join("\n")
}

/// The line a heard prompt starts with.
pub const VOICE_LINE: &str = "[Voice note, transcribed:]";

/// A scripted service for unit tests.
#[cfg(test)]
pub mod fake {
    use std::sync::Mutex;

    use super::*;

    /// Answers each note with the next scripted result; records what it was sent.
    #[derive(Default)]
    pub struct Ears {
        /// What it answers, in order (then it refuses).
        pub answers: Mutex<Vec<Result<String, HearingError>>>,
        /// The names of the files it heard.
        pub heard: Mutex<Vec<String>>,
    }

    #[async_trait]
    impl Transcriber for Ears {
        async fn transcribe(
            &self,
            name: &str,
            _mime: &str,
            _data: Vec<u8>,
        ) -> Result<String, HearingError> {
            self.heard.lock().unwrap().push(name.to_owned());
            let mut answers = self.answers.lock().unwrap();
            match answers.is_empty() {
                true => Err(HearingError::Unreachable("nothing scripted".into())),
                false => answers.remove(0),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::ids::EventId;

    fn audio(voice: bool) -> IncomingMedia {
        IncomingMedia {
            kind: MediaKind::Audio,
            name: "Voice message.ogg".into(),
            mimetype: Some("audio/ogg".into()),
            size: Some(10),
            source: String::new(),
            event_id: EventId::from("$a"),
            voice,
        }
    }

    #[test]
    fn only_voice_notes_are_heard_and_speak_for_themselves() {
        assert!(is_heard(&audio(true)));
        assert!(!is_heard(&audio(false)));
        assert!(speaks_for_itself(&[audio(true)], true));
        assert!(!speaks_for_itself(&[audio(true)], false));
        assert!(!speaks_for_itself(&[audio(true), audio(false)], true));
        assert!(!speaks_for_itself(&[], true));
    }

    #[test]
    fn the_transcript_comes_after_a_line_saying_so_and_before_what_was_written() {
        assert_eq!(
            prompt_text(&[" fix the build ".into()], ""),
            format!("{VOICE_LINE}\nfix the build")
        );
        assert_eq!(
            prompt_text(&["/allow-all".into()], "in main.rs"),
            format!("{VOICE_LINE}\n/allow-all\nin main.rs")
        );
    }
}
