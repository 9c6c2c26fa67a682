//! `!sessions` and `!attach`: the agent's sessions of this conversation's folder, and taking
//! one up here (a session started in an editor or a terminal continues in the room); and
//! `!login`, signing the agent in.

use super::Channel;
use crate::render::strings;
use crate::store::LogFailure;

use crate::model::agent::SessionListing;
use crate::model::ids::UserId;

impl Channel {
    /// `!sessions`: the agent's sessions whose folder is this conversation's.
    pub(super) async fn sessions_command(&mut self) {
        let Some(Listed { listed, others, .. }) = self.listed_sessions().await else {
            return;
        };
        let current = self.slot.id();
        let text = strings::sessions_list(
            &self.ctx.display_name,
            &listed,
            others.len(),
            current,
            &self.ctx.command_prefix,
        );
        self.notice(text).await;
    }

    /// `!attach ID`: this conversation continues session `id` of the agent (loaded or
    /// resumed), which must be one of its sessions of this conversation's folder.
    pub(super) async fn attach_command(&mut self, id: Option<&str>, running: bool) {
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
        if others.iter().any(|other| other == id) {
            tracing::warn!(agent = %ctx.agent_id, room = %self.key.room, session = id, "refused to attach another conversation's session");
            self.notice(strings::anothers_session(id, &ctx.command_prefix))
                .await;
            return;
        }
        let Some(found) = listed.iter().find(|s| s.id == id).cloned() else {
            tracing::info!(agent = %ctx.agent_id, room = %self.key.room, session = id, "refused to attach a session of another folder, or none");
            self.notice(strings::no_such_session(id, &ctx.command_prefix))
                .await;
            return;
        };
        let Some(how) = ctx.agent.reopen_support() else {
            self.notice(strings::cannot_attach(&ctx.display_name)).await;
            return;
        };
        if self.slot.id() == Some(found.id.as_str()) {
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
                tracing::info!(agent = %ctx.agent_id, room = %self.key.room, session = %session.id, how = how.continuity(), "session attached");
                (ctx.store.save_session(&self.key, &session.id).await)
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

    /// `!login ID` (admins only): signs the agent in with a method it offers.
    pub(super) async fn login_command(&mut self, method: Option<&str>, by: &UserId) {
        let ctx = self.ctx.clone();
        if !ctx.admins.allows(by) {
            self.notice(strings::login_admins_only(&ctx.command_prefix))
                .await;
            return;
        }
        let _lease = self.lease().await;
        if let Err(e) = self.folder_with_agent().await {
            self.notice(strings::session_failed(&ctx.display_name, &e.to_string()))
                .await;
            return;
        }
        let methods = ctx.agent.auth_methods();
        let Some(method) = method.filter(|m| methods.iter().any(|known| known.id == *m)) else {
            self.notice(strings::login_usage(
                &ctx.display_name,
                &methods,
                &ctx.command_prefix,
            ))
            .await;
            return;
        };
        match ctx.agent.authenticate(method).await {
            Ok(()) => {
                tracing::info!(agent = %ctx.agent_id, method, by = %by, "the agent was signed in");
                self.notice(strings::signed_in(&ctx.display_name, method))
                    .await
            }
            Err(e) => {
                tracing::warn!(agent = %ctx.agent_id, method, error = %e, "signing in failed");
                self.notice(strings::sign_in_failed(
                    &ctx.display_name,
                    method,
                    &e.to_string(),
                ))
                .await
            }
        }
    }

    /// The agent started (with a lease held while the command works) and its sessions of
    /// this conversation's folder that are not another conversation's; says why in the room
    /// when there are none to have.
    async fn listed_sessions(&mut self) -> Option<Listed> {
        let ctx = self.ctx.clone();
        let lease = self.lease().await;
        let folder = match self.folder_with_agent().await {
            Ok(folder) => folder,
            Err(e) => {
                self.notice(strings::session_failed(&ctx.display_name, &e.to_string()))
                    .await;
                return None;
            }
        };
        // In a folder several rooms share, the agent lists every room's sessions: those of
        // the other conversations stay theirs.
        let theirs = match ctx.store.others_sessions(&self.key).await {
            Ok(theirs) => theirs,
            Err(e) => {
                tracing::error!(agent = %ctx.agent_id, room = %self.key.room, error = %e, "cannot tell which sessions are other conversations'");
                self.notice(strings::session_failed(&ctx.display_name, &e.to_string()))
                    .await;
                return None;
            }
        };
        match ctx.agent.list_sessions(folder.path()).await {
            Ok(listed) => {
                let (others, listed) = listed
                    .into_iter()
                    .partition::<Vec<_>, _>(|s| theirs.contains(&s.id));
                Some(Listed {
                    _lease: lease,
                    listed,
                    others: others.into_iter().map(|s| s.id).collect(),
                })
            }
            Err(e) => {
                tracing::info!(agent = %ctx.agent_id, room = %self.key.room, error = %e, "no session list");
                self.notice(strings::sessions_unavailable(&ctx.display_name))
                    .await;
                None
            }
        }
    }
}

/// The agent's sessions of a conversation's folder, as `!sessions` and `!attach` see them.
struct Listed {
    /// Keeps the agent running while the command works.
    _lease: crate::core::pool::Lease,
    /// This conversation's own, and those the gateway never took up (started elsewhere).
    listed: Vec<SessionListing>,
    /// The IDs of those that are other conversations': neither shown nor attached.
    others: Vec<String>,
}
