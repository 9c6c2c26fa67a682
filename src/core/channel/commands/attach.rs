//! `!attach ID`: this conversation takes up one of the agent's sessions of its folder (one
//! started in an editor or a terminal), loaded or resumed; another conversation's session
//! is refused.

use super::sessions::Listed;
use super::{AgentCommand, Call, Running};
use crate::core::channel::Channel;
use crate::core::command::registry::{AfterCrash, Applies, DuringTurn, Group, Scope, Spec, Who};
use crate::render::strings;
use crate::store::LogFailure;

pub(crate) static COMMAND: AgentCommand = AgentCommand {
    spec: Spec {
        name: "attach",
        aliases: &[],
        args: "ID",
        scope: Scope::Agent,
        who: Who::Allowed,
        during_turn: DuringTurn::Refused,
        after_crash: AfterCrash::Reported,
        applies: Applies::Always,
        group: Group::Conversation,
        help: "continue one of those sessions here (started in an editor or a terminal)",
        details: "This conversation continues session ID (session/load or session/resume); \
                      another conversation's session is refused.",
    },
    run,
    answers: None,
};

fn run<'a>(channel: &'a mut Channel, call: Call<'a>) -> Running<'a> {
    Box::pin(channel.attach_command(call.command.arg(0), call.running))
}

impl Channel {
    /// `!attach ID`: this conversation continues session `id` of the agent (loaded or
    /// resumed), which must be one of its sessions of this conversation's folder.
    async fn attach_command(&mut self, id: Option<&str>, running: bool) {
        let ctx = self.ctx.clone();
        if running {
            self.notice(strings::ATTACH_WHILE_RUNNING).await;
            return;
        }
        let Some(id) = id else {
            self.notice(strings::attach_usage(&ctx.command_prefix))
                .await;
            return;
        };
        let Some(Listed {
            _lease,
            listed,
            others,
        }) = self.listed_sessions().await
        else {
            return;
        };
        if others.iter().any(|other| other.as_str() == id) {
            tracing::warn!(agent = %ctx.agent_id, room = %self.key.room, session = id, "refused to attach another conversation's session");
            self.notice(strings::anothers_session(id, &ctx.command_prefix))
                .await;
            return;
        }
        let Some(found) = listed.iter().find(|s| s.id.as_str() == id).cloned() else {
            tracing::info!(agent = %ctx.agent_id, room = %self.key.room, session = id, "refused to attach a session of another folder, or none");
            self.notice(strings::no_such_session(id, &ctx.command_prefix))
                .await;
            return;
        };
        let Some(how) = ctx.agent.reopen_support() else {
            self.notice(strings::cannot_attach(&ctx.display_name)).await;
            return;
        };
        if self.slot.id() == Some(&found.id) {
            self.notice(strings::attached_already(id)).await;
            return;
        }
        let folder = match self.prepare_folder().await {
            Ok(folder) => folder,
            Err(e) => {
                self.notice(strings::session_failed(&ctx.display_name, &e.to_string()))
                    .await;
                return;
            }
        };
        let tools = self.grant_tools(&folder);
        let server = tools.as_ref().map(|g| &g.server);
        match ctx.agent.reopen_session(&found.id, &folder, server).await {
            Ok(session) => {
                // The conversation's own session is left, not closed: it can be attached
                // again.
                self.drop_session();
                tracing::info!(agent = %ctx.agent_id, room = %self.key.room, session = %session.id(), how = how.continuity(), "session attached");
                (ctx.store.save_session(&self.key, session.id()).await)
                    .or_log("could not save the attached session");
                (ctx.store.set_continuity(&self.key, how.continuity()).await)
                    .or_log("could not record how the session continued");
                let replayed = session.replayed;
                self.slot.put_reopened(session, tools);
                // In the conversation's mode, as any session of it: not the one it had where
                // it was started.
                if let Err(e) = self.fence_session().await {
                    tracing::error!(agent = %ctx.agent_id, room = %self.key.room, session = id, error = %e, "an attached session cannot be put in a mode that asks; leaving it");
                    self.leave_session().await;
                    self.notice(strings::session_failed(&ctx.display_name, &e.to_string()))
                        .await;
                    return;
                }
                self.notice(strings::attached(&found, how.continuity(), replayed))
                    .await;
            }
            Err(e) => {
                tracing::warn!(agent = %ctx.agent_id, room = %self.key.room, session = id, error = %e, "could not attach a session");
                self.notice(strings::attach_failed(id, &e.to_string()))
                    .await;
            }
        }
    }
}
