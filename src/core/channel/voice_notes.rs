//! Voice notes heard at their prompt's turn (`[voice]`, `core::hearing`): each one's
//! transcript is posted in reply to it and becomes the prompt's text; one that cannot be
//! heard goes on as a file, as if no service were set.

use super::Channel;
use crate::core::hearing;
use crate::core::inbound::IncomingMessage;
use crate::core::media::{self, Received};
use crate::model::OutMessage;
use crate::render::strings;

impl Channel {
    /// `message` with its voice notes heard: the transcripts come before what the sender
    /// wrote, and each heard file is marked so (an agent that does not take audio is not
    /// sent it again as a file). Without a service, `message` as it is.
    pub(super) async fn hear(
        &self,
        message: IncomingMessage,
        files: &mut [Received],
    ) -> IncomingMessage {
        let Some(ears) = self.ctx.hearing.clone() else {
            return message;
        };
        let mut heard = Vec::new();
        for file in files.iter_mut().filter(|f| hearing::is_heard(&f.media)) {
            let mime = media::mimetype(&file.media);
            let said = ears.transcribe(&file.media.name, &mime, file.data.clone());
            match said.await {
                Ok(text) => {
                    tracing::info!(agent = %self.ctx.agent_id, room = %self.key.room, event = %file.media.event_id, chars = text.chars().count(), "heard a voice note");
                    let reply = OutMessage::notice(strings::heard(&text))
                        .replying_to(file.media.event_id.clone());
                    self.say_once(&file.media.event_id, "heard", &reply).await;
                    file.heard = true;
                    heard.push(text);
                }
                Err(e) => {
                    tracing::warn!(agent = %self.ctx.agent_id, room = %self.key.room, event = %file.media.event_id, error = %e, "could not hear a voice note; it goes as a file");
                    let notice =
                        OutMessage::notice(strings::not_heard(&file.media.name, &e.to_string()))
                            .replying_to(file.media.event_id.clone());
                    self.say_once(&file.media.event_id, "not heard", &notice)
                        .await;
                }
            }
        }
        if heard.is_empty() {
            return message;
        }
        IncomingMessage {
            body: hearing::prompt_text(&heard, &message.body),
            ..message
        }
    }
}
