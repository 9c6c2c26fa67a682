//! `!file PATH`: posts a file of the conversation's workspace; one outside it is refused.

use super::{AgentCommand, Call, Running};
use crate::core::channel::Channel;
use crate::core::command::registry::{AfterCrash, Applies, DuringTurn, Group, Scope, Spec, Who};
use crate::core::media::{self, WorkspaceFileError};
use crate::model::media::OutAttachment;
use crate::render::strings;

pub(crate) static COMMAND: AgentCommand = AgentCommand {
    spec: Spec {
        name: "file",
        aliases: &[],
        args: "PATH",
        scope: Scope::Agent,
        who: Who::Allowed,
        during_turn: DuringTurn::AtOnce,
        after_crash: AfterCrash::Reported,
        applies: Applies::Always,
        group: Group::Conversation,
        help: "post a file of the agent's workspace here",
        details: "Posts the file at PATH (relative to the conversation's folder) as a picture \
                      or a file; folders, missing files, files outside the folder and files over \
                      the size limit are refused.",
    },
    run,
    answers: None,
};

fn run<'a>(channel: &'a mut Channel, call: Call<'a>) -> Running<'a> {
    Box::pin(async move { channel.file_command(&call.command.words().join(" ")).await })
}

impl Channel {
    /// `!file PATH`: posts a file of the conversation's workspace; one outside it is
    /// refused.
    async fn file_command(&mut self, path: &str) {
        if path.trim().is_empty() {
            self.notice(strings::file_usage(&self.ctx.command_prefix))
                .await;
            return;
        }
        let (max, wanted) = (
            self.ctx.media.max_bytes,
            std::path::PathBuf::from(path.trim()),
        );
        let read = match self.prepare_folder().await {
            Ok(folder) => tokio::task::spawn_blocking(move || {
                media::read_workspace_file(&folder, &wanted, max)
            })
            .await
            .unwrap_or(Err(WorkspaceFileError::Missing)),
            Err(e) => Err(WorkspaceFileError::Unreadable(e.to_string())),
        };
        match read {
            Ok((name, data)) => {
                let mime = media::guess_mimetype(&name);
                let id = crate::core::voice::fresh_txn("file");
                self.post_file(&id, OutAttachment::new(name, mime, data))
                    .await;
            }
            Err(why) => {
                tracing::info!(agent = %self.ctx.agent_id, room = %self.key.room, path, reason = %why, "a file was not posted");
                self.notice(strings::file_not_posted(path.trim(), &why.to_string()))
                    .await
            }
        }
    }
}
