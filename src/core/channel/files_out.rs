//! Files out: what the agent shows in its answer (a picture, a link to a file of the
//! workspace, a file's content) posted as pictures and files under the answer, and the
//! workspace files people ask for with `!file`.

use super::Channel;
use super::running_turn::RunningTurn;

use crate::core::media::{self, WorkspaceFileError};
use crate::core::voice::txn;
use crate::model::OutMessage;
use crate::model::media::{AnswerFile, OutAttachment};
use crate::render::strings;

impl Channel {
    /// Posts a file of the agent's answer under the answer (the text so far goes up first,
    /// so the file comes after what introduces it). A link outside the workspace stays a
    /// link in the text; a file that cannot be posted gets a notice.
    pub(super) async fn post_answer_file(&mut self, file: AnswerFile, turn: &mut RunningTurn) {
        let folder = self.prepare_folder().await;
        let max = self.ctx.media.max_bytes;
        let attachment = match file {
            AnswerFile::Image { mime, data } => OutAttachment::new(picture_name(&mime), mime, data),
            AnswerFile::Embedded { uri, mime, data } => {
                let name = media::path_of_file_uri(&uri)
                    .and_then(|p| p.file_name().map(|n| n.to_string_lossy().into_owned()))
                    .or_else(|| uri.rsplit('/').next().map(str::to_owned))
                    .map(|n| media::safe_name(&n))
                    .unwrap_or_else(|| "file".into());
                let mime = mime.unwrap_or_else(|| media::guess_mimetype(&name));
                OutAttachment::new(name, mime, data)
            }
            AnswerFile::Link { uri, name } => {
                let read = match (media::path_of_file_uri(&uri), folder) {
                    (Some(path), Ok(folder)) => tokio::task::spawn_blocking(move || {
                        media::read_workspace_file(&folder, &path, max)
                    })
                    .await
                    .unwrap_or(Err(WorkspaceFileError::Missing)),
                    (Some(_), Err(e)) => Err(WorkspaceFileError::Unreadable(e.to_string())),
                    (None, _) => Err(WorkspaceFileError::Outside),
                };
                match read {
                    Ok((file_name, data)) => {
                        let mime = media::guess_mimetype(&file_name);
                        OutAttachment::new(file_name, mime, data)
                    }
                    // Not ours to post: the link stays in the answer as a link.
                    Err(WorkspaceFileError::Outside) | Err(WorkspaceFileError::Missing) => {
                        turn.push_text(&format!("[{name}]({uri})"));
                        return;
                    }
                    Err(why) => {
                        self.notice(strings::file_not_posted(&name, &why.to_string()))
                            .await;
                        return;
                    }
                }
            }
        };
        if attachment.data.len() as u64 > max {
            let why = WorkspaceFileError::TooLarge(attachment.data.len() as u64, max);
            self.notice(strings::file_not_posted(&attachment.name, &why.to_string()))
                .await;
            return;
        }
        if let Err(e) = turn.flush_reply().await {
            tracing::debug!(room = %self.key.room, error = %e, "edit deferred");
        }
        let number = turn.next_file().to_string();
        let (agent, prompt) = (self.ctx.agent_id.as_str(), turn.prompt_event().as_str());
        let id = txn("sk", &[agent, prompt, "file", &number]);
        self.post_file(&id, attachment).await;
    }

    /// Posts `file` as a message of its own; says so when the homeserver would not take it.
    pub(super) async fn post_file(&self, txn: &str, file: OutAttachment) {
        let name = file.name.clone();
        let bytes = file.data.len();
        match self
            .ctx
            .chat
            .send(&self.key.room, txn, &OutMessage::file(file))
            .await
        {
            Ok(event) => {
                tracing::info!(agent = %self.ctx.agent_id, room = %self.key.room, %event, name, bytes, "posted a file")
            }
            Err(e) => {
                tracing::warn!(agent = %self.ctx.agent_id, room = %self.key.room, name, error = %e, "could not post a file");
                self.notice(strings::file_not_posted(&name, &e.to_string()))
                    .await;
            }
        }
    }
}

/// The name of a picture an agent made, after its type (`image.png`).
fn picture_name(mime: &str) -> String {
    let ext = mime_guess::get_mime_extensions_str(mime)
        .and_then(|exts| exts.first())
        .copied()
        .unwrap_or("img");
    format!("image.{ext}")
}
