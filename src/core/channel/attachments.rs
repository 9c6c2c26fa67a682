//! Files that come with prompts: a picture sent without a question waits for its sender's
//! next message; at a prompt's turn its files are fetched, saved in the conversation's
//! inbox and given to the agent the way it takes them (`core::media`).

use super::Channel;
use crate::model::ids::EventId;
use crate::store::LogFailure;

use crate::core::hearing;
use crate::core::inbound::IncomingMessage;
use crate::core::media::{self, Received};
use crate::core::voice::txn;
use crate::model::OutMessage;
use crate::model::media::{IncomingMedia, PromptBlock};
use crate::render::strings;

impl Channel {
    /// Keeps a file sent to nobody in particular, quietly (see [`ChannelInput::Aside`]).
    pub(super) fn hold_aside(&mut self, message: IncomingMessage) {
        tracing::debug!(agent = %self.ctx.agent_id, room = %self.key.room, event = %message.event_id, "a file sent to nobody in particular is kept for a while");
        self.held.hold(message, true);
    }

    /// A prompt on its way into the queue. A picture (or any file) without a caption waits
    /// for its sender's next message, when the gateway is set so (`None`: it waits); a
    /// message with text takes the files its sender left waiting. `resumed`: it was taken in
    /// before a restart, and the room was told already.
    pub(super) async fn gather(
        &mut self,
        mut message: IncomingMessage,
        resumed: bool,
    ) -> Option<IncomingMessage> {
        // A voice note that will be heard is its own question.
        let heard = hearing::speaks_for_itself(&message.media, self.ctx.hearing.is_some());
        if !message.media.is_empty()
            && message.body.trim().is_empty()
            && self.ctx.media.wait_for_question
            && !heard
        {
            if !resumed {
                let what = message.media.iter().map(|m| m.name.as_str()).collect();
                let notice = OutMessage::notice(strings::waiting_for_question(what))
                    .replying_to(message.event_id.clone());
                self.say_once(&message.event_id, "held", &notice).await;
            }
            tracing::info!(agent = %self.ctx.agent_id, room = %self.key.room, event = %message.event_id, "a file without a question waits for its sender's next message");
            self.held.hold(message, false);
            return None;
        }
        // Files sent to nobody in particular are forgotten after a while.
        let mine = self.held.take_for(&message.sender);
        if mine.is_empty() {
            return Some(message);
        }
        let mut files: Vec<IncomingMedia> = mine.iter().flat_map(|h| h.media.clone()).collect();
        files.append(&mut message.media);
        message.media = files;
        // Recorded with the question before the pictures stop waiting on their own: a
        // crash in between keeps them.
        let ctx = &self.ctx;
        (ctx.store
            .set_pending_media(&ctx.agent_id, &message.event_id, &message.media)
            .await)
            .or_log("could not record the files that go with a prompt");
        for held in mine {
            self.settle(&held.event_id).await;
        }
        Some(message)
    }

    /// Fetches and saves the files of the prompt about to run, within the size limit; tells
    /// the room about each one that could not be taken (too large, not fetched, not saved).
    pub(super) async fn take_in(&mut self, files: &[IncomingMedia]) -> Vec<Received> {
        if files.is_empty() {
            return Vec::new();
        }
        let folder = match self.prepare_folder().await {
            Ok(folder) => folder,
            Err(e) => {
                for file in files {
                    self.file_refused(file, strings::file_not_saved(&file.name, &e.to_string()))
                        .await;
                }
                return Vec::new();
            }
        };
        let ctx = &self.ctx;
        let limits = &ctx.media;
        let mut received = Vec::new();
        for file in files {
            if let Some(size) = file.size.filter(|s| *s > limits.max_bytes) {
                self.file_refused(
                    file,
                    strings::file_too_large(&file.name, size, limits.max_bytes),
                )
                .await;
                continue;
            }
            let data = match ctx.chat.download(&file.source).await {
                Ok(data) => data,
                Err(e) => {
                    tracing::warn!(agent = %ctx.agent_id, room = %self.key.room, event = %file.event_id, error = %e, "could not fetch a file");
                    self.file_refused(file, strings::file_not_fetched(&file.name, &e.to_string()))
                        .await;
                    continue;
                }
            };
            // The size the sender gave may be wrong or missing.
            if data.len() as u64 > limits.max_bytes {
                let size = data.len() as u64;
                self.file_refused(
                    file,
                    strings::file_too_large(&file.name, size, limits.max_bytes),
                )
                .await;
                continue;
            }
            let (dir, name) = (folder.clone(), file.name.clone());
            let saved = tokio::task::spawn_blocking(move || {
                media::save(&dir, &name, &data).map(|path| (path, data))
            })
            .await
            .map_err(|e| std::io::Error::other(e.to_string()))
            .and_then(|saved| saved);
            match saved {
                Ok((path, data)) => {
                    tracing::info!(agent = %ctx.agent_id, room = %self.key.room, event = %file.event_id, path = %path.display(), bytes = data.len(), "saved a file for the agent");
                    received.push(Received {
                        media: file.clone(),
                        path,
                        data,
                        heard: false,
                    });
                }
                Err(e) => {
                    tracing::warn!(agent = %ctx.agent_id, room = %self.key.room, error = %e, "could not save a file");
                    self.file_refused(file, strings::file_not_saved(&file.name, &e.to_string()))
                        .await;
                }
            }
        }
        received
    }

    /// The prompt's blocks: `text` with a line for each file, then the files the way the
    /// agent takes them. A voice note that was heard goes only to agents that take audio:
    /// for the others its transcript is the prompt.
    pub(super) fn prompt_blocks(&self, text: String, files: &[Received]) -> Vec<PromptBlock> {
        let folder = self.ctx.workspace.for_room(&self.key.room);
        let support = self.ctx.agent.prompt_support();
        let files: Vec<&Received> = (files.iter())
            .filter(|f| !f.heard || support.audio)
            .collect();
        let mut text = text;
        for file in &files {
            if !text.is_empty() {
                text.push('\n');
            }
            text.push_str(&media::note(file, &folder));
        }
        let mut blocks = vec![PromptBlock::Text(text)];
        blocks.extend(
            files
                .iter()
                .map(|file| media::block(file, support, &self.ctx.media)),
        );
        blocks
    }

    /// Tells the room that `file` was not taken, and why, in reply to the message that
    /// carried it.
    async fn file_refused(&self, file: &IncomingMedia, text: String) {
        let notice = OutMessage::notice(text).replying_to(file.event_id.clone());
        self.say_once(&file.event_id, "refused", &notice).await;
    }

    /// Posts `notice` about `event` once (a retried post is not doubled).
    pub(super) async fn say_once(&self, event: &EventId, what: &str, notice: &OutMessage) {
        self.voice()
            .say(&txn("media", &[event.as_str(), what]), notice)
            .await;
    }
}
