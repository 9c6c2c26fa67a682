//! The channel's session slot: getting the last session back, opening a new one, the
//! earlier conversation for a new session, `!new`, and the agent's stderr after a failure.

use super::Channel;
use crate::core::voice::fresh_txn;
use crate::store::LogFailure;

use crate::core::continuity;
use crate::core::inbound::IncomingMessage;
use crate::core::room_tools::{Grant, RoomScope};
use crate::model::OutMessage;
use crate::model::agent::AgentError;
use crate::model::ids::{EventId, SessionId};
use crate::render::cards;
use crate::render::strings;
use crate::workspace::folder::Folder;
use std::path::Path;
use std::sync::Arc;

use tokio_util::sync::CancellationToken;

use crate::core::agent::PlaceWaits;
use crate::core::context::AgentContext;
use crate::model::ids::RoomId;

impl Channel {
    /// Leaves the channel's session, if one is open: the agent forgets it too.
    pub(super) fn drop_session(&mut self) {
        // Its room tools close with it: the token it was given stops working.
        if let Some(session) = self.slot.take() {
            session.forget();
        }
    }

    /// Leaves the session for good (the agent may free it: `session/close`): the next
    /// message opens a new one, put in the asking mode from the start.
    pub(super) async fn leave_session(&mut self) {
        if let Some(session) = self.slot.take() {
            session.close().await;
        }
    }

    /// Opens the channel's ACP session if none is open: gets the last one back when the
    /// agent can (`session/load` or `session/resume`: it remembers the conversation), else
    /// opens a new one (marked `fresh`: its first prompt carries the conversation).
    pub(super) async fn ensure_session(&mut self) -> Result<(), AgentError> {
        if self.slot.is_open() {
            return Ok(());
        }
        let ctx = self.ctx.clone();
        // Started first if it is not running: whether it can reopen sessions is known then.
        let folder = self.folder_with_agent().await?;
        if let Some(how) = ctx.agent.reopen_support()
            && let Some(earlier) = self.saved_session().await
        {
            let tools = self.grant_tools(&folder);
            let server = tools.as_ref().map(|g| &g.server);
            match ctx.agent.reopen_session(&earlier, &folder, server).await {
                Ok(session) => {
                    tracing::info!(agent = %ctx.agent_id, room = %self.key.room, session = %session.id(), how = how.continuity(), "session got back");
                    ctx.store
                        .set_continuity(&self.key, how.continuity())
                        .await
                        .or_log("could not record how the session continued");
                    self.slot.put_reopened(session, tools);
                    return self.fenced_or_left().await;
                }
                Err(e) => {
                    tracing::warn!(agent = %ctx.agent_id, room = %self.key.room, session = %earlier, error = %e, "could not get the session back; opening a new one with the conversation re-injected");
                }
            }
        }
        if self.forked(&folder).await {
            return self.fenced_or_left().await;
        }
        let tools = self.grant_tools(&folder);
        let new = (ctx.agent)
            .new_session(&folder, tools.as_ref().map(|g| &g.server))
            .await?;
        ctx.store
            .save_session(&self.key, new.id())
            .await
            .or_log("could not save the session");
        tracing::info!(agent = %ctx.agent_id, room = %self.key.room, session = %new.id(), "session opened");
        self.slot.put_new(new, tools);
        self.fenced_or_left().await
    }

    /// Opens the channel's first session as a fork (`session/fork`) of the session of the
    /// conversation this one was forked from, when one was noted, the agent forks, and the
    /// original has not gone on since: the copy remembers the conversation, nothing is
    /// re-injected. `false` when no session was forked (the copied transcript is then
    /// re-injected into a new one).
    async fn forked(&mut self, folder: &Arc<Folder>) -> bool {
        let ctx = self.ctx.clone();
        let source = (ctx.store.take_fork_source(&self.key).await)
            .or_log("could not read the session this fork may copy")
            .flatten();
        let Some(source) = source else {
            return false;
        };
        if !source.current || !ctx.agent.forks() {
            tracing::info!(agent = %ctx.agent_id, room = %self.key.room, source = %source.session_id, original_went_on = !source.current, agent_forks = ctx.agent.forks(), "not forking the session; the fork's conversation is re-injected");
            return false;
        }
        let tools = self.grant_tools(folder);
        let server = tools.as_ref().map(|g| &g.server);
        match ctx
            .agent
            .fork_session(&source.session_id, folder, server)
            .await
        {
            Ok(session) => {
                tracing::info!(agent = %ctx.agent_id, room = %self.key.room, source = %source.session_id, session = %session.id(), "session forked");
                (ctx.store.save_session(&self.key, session.id()).await)
                    .or_log("could not save the session");
                (ctx.store.set_continuity(&self.key, "forked").await)
                    .or_log("could not record how the session continued");
                self.slot.put_reopened(session, tools);
                true
            }
            Err(e) => {
                tracing::warn!(agent = %ctx.agent_id, room = %self.key.room, source = %source.session_id, error = %e, "could not fork the session; the fork's conversation is re-injected");
                false
            }
        }
    }

    /// Puts the session just opened in a mode that asks ([`Channel::fence_session`]); one
    /// that cannot be is left at once, never used.
    async fn fenced_or_left(&mut self) -> Result<(), AgentError> {
        let fenced = self.fence_session().await;
        if let Err(e) = &fenced {
            tracing::error!(agent = %self.ctx.agent_id, room = %self.key.room, error = %e, "the session cannot be put in a mode that asks before acting; not using it");
            self.leave_session().await;
        }
        fenced
    }

    /// Opens the room tools to a session about to be opened in `folder`, when the agent has
    /// them: they reach this conversation's room (and thread) only, and close when the
    /// session is left.
    pub(super) fn grant_tools(&self, folder: &Arc<Folder>) -> Option<Grant> {
        let host = self.ctx.room_tools.as_ref()?;
        Some(host.grant(RoomScope {
            agent_id: self.ctx.agent_id.clone(),
            chat: self.ctx.chat.clone(),
            room: self.key.room.clone(),
            thread: self.key.thread.clone(),
            folder: folder.clone(),
            max_bytes: self.ctx.media.max_bytes,
        }))
    }

    /// The conversation's folder, prepared, with the agent's process that serves it
    /// running (what it advertises is known from then on). A turn has started it while it
    /// waited for its lease ([`Channel::lease_for_turn`]): that outcome is used, once.
    pub(super) async fn folder_with_agent(&mut self) -> Result<Arc<Folder>, AgentError> {
        let folder = self.prepare_folder().await?;
        match self.started.take() {
            Some(started) => started?,
            None => {
                let give_up = CancellationToken::new();
                start_agent(&self.ctx, &self.key.room, folder.path(), give_up).await?
            }
        }
        Ok(folder)
    }

    /// The conversation's folder, opened once and held (made if it is not there; in
    /// worktree mode by `git`, off the async threads): every file of the conversation the
    /// gateway reads or writes is opened beneath it.
    pub(super) async fn prepare_folder(&mut self) -> Result<Arc<Folder>, AgentError> {
        let opened = self.folder.open(&self.ctx.workspace, &self.key.room).await;
        opened.map_err(|why| {
            let folder = self.ctx.workspace.for_room(&self.key.room);
            tracing::warn!(agent = %self.ctx.agent_id, room = %self.key.room, folder = %folder.display(), error = %why, "the conversation's folder cannot be used");
            AgentError::Failed(strings::workspace_unusable(
                &folder.display().to_string(),
                &why,
            ))
        })
    }

    /// Makes sure a live session is open; says why in the room when none can be.
    pub(super) async fn open_session(&mut self) -> bool {
        // A session whose process died (a crash during another room's turn, or stopped by
        // the pool) cannot answer: open a new one rather than lose a message to it.
        if let Some(session) = self.slot.session()
            && !session.alive()
        {
            tracing::info!(agent = %self.ctx.agent_id, room = %self.key.room, session = %session.id(), "the session's process has stopped; opening a session again");
            self.drop_session();
        }
        match self.ensure_session().await {
            Ok(_) => true,
            // Not signed in: how to sign it in, not a raw error.
            Err(e) if e.is_auth_required() => {
                tracing::warn!(agent = %self.ctx.agent_id, room = %self.key.room, error = %e, "the agent is not signed in");
                let methods = self.ctx.agent.auth_methods();
                self.notice(strings::sign_in_needed(
                    &self.ctx.display_name,
                    &methods,
                    &self.ctx.command_prefix,
                ))
                .await;
                false
            }
            Err(e) => {
                tracing::warn!(agent = %self.ctx.agent_id, room = %self.key.room, error = %e, "no session");
                self.notice(strings::session_failed(
                    &self.ctx.display_name,
                    &e.to_string(),
                ))
                .await;
                self.show_stderr(false).await;
                false
            }
        }
    }

    /// After the agent failed, or when `asked` (`!logs`): what it last wrote to stderr,
    /// when everyone who can read the room, invited people included, may read it (allowed
    /// users and the gateway's agents), else where to find it.
    pub(super) async fn show_stderr(&self, asked: bool) {
        let ctx = &self.ctx;
        let tail = ctx.agent.stderr_tail();
        if tail.trim().is_empty() {
            if asked {
                self.notice(strings::no_stderr(&ctx.display_name)).await;
            }
            return;
        }
        let private = match ctx.chat.readers(&self.key.room).await {
            Ok(Some(readers)) => readers
                .iter()
                .all(|m| ctx.allowed.allows(m) || ctx.agent_users.contains(m)),
            Ok(None) => false,
            Err(e) => {
                tracing::warn!(room = %self.key.room, error = %e, "could not list the room's members; the agent's stderr stays in the log");
                false
            }
        };
        let message = match private {
            true => cards::stderr_tail(&ctx.display_name, &tail),
            false => OutMessage::notice(strings::stderr_in_log(&ctx.display_name)),
        };
        self.voice().say(&fresh_txn("stderr"), &message).await;
    }

    /// The session this channel last used, as saved (none after a fresh start).
    pub(super) async fn saved_session(&self) -> Option<SessionId> {
        (self.ctx.store.session(&self.key).await)
            .or_log("could not read the saved session")
            .flatten()
    }

    /// The first ordinary prompt of a session just opened: `message` after the earlier
    /// conversation (since the last fresh start, before the session's first prompt
    /// `opened_at`), as much as the budget allows.
    pub(super) async fn restore_conversation(
        &self,
        message: &IncomingMessage,
        opened_at: &EventId,
    ) -> String {
        let ctx = &self.ctx;
        let entries = match ctx.store.conversation(&self.key).await {
            Ok(entries) => entries,
            Err(e) => {
                tracing::error!(agent = %ctx.agent_id, room = %self.key.room, error = %e, "could not read the transcript; the conversation starts afresh");
                return message.body.clone();
            }
        };
        // The session already has what came since its first prompt (`opened_at`: usually
        // the message being answered, recorded just before; it goes last, as written).
        let before = entries
            .iter()
            .position(|e| e.event_id.as_ref() == Some(opened_at))
            .unwrap_or(entries.len());
        let Some(preamble) = continuity::preamble(
            &entries[..before],
            &ctx.display_name,
            ctx.reinject_max_chars,
        ) else {
            return message.body.clone();
        };
        tracing::info!(agent = %ctx.agent_id, room = %self.key.room, earlier_entries = before, chars = preamble.len(), "re-injecting the earlier conversation into the new session");
        ctx.store
            .set_continuity(&self.key, "reinjected")
            .await
            .or_log("could not record how the session continued");
        continuity::compose(&preamble, &message.body)
    }

    /// `!new`: the next message starts a new session without the conversation so far.
    pub(super) async fn start_fresh(&mut self) {
        let ctx = self.ctx.clone();
        if let Err(e) = ctx.store.start_conversation(&self.key).await {
            tracing::error!(error = %e, "could not record the fresh start");
            self.notice(strings::FRESH_START_FAILED).await;
            return;
        }
        self.drain_events(None).await;
        // The agent may free what it holds for the old session.
        self.leave_session().await;
        tracing::info!(agent = %ctx.agent_id, room = %self.key.room, "fresh conversation requested");
        self.notice(strings::fresh_start(&ctx.display_name)).await;
    }
}

/// Starts the agent's process that serves `folder` if it is not running. When it must wait
/// for a place (an agent with a container per room, at `max_rooms`), `room` is told, once;
/// cancelling `give_up` ends such a wait with an error (a start under way goes on).
pub(super) async fn start_agent(
    ctx: &AgentContext,
    room: &RoomId,
    folder: &Path,
    give_up: CancellationToken,
) -> Result<(), AgentError> {
    let (tell, told) = tokio::sync::oneshot::channel();
    let start = (ctx.agent).ensure_running(folder, PlaceWaits { tell, give_up });
    tokio::pin!(start);
    tokio::select! {
        started = &mut start => started,
        Ok(wait) = told => {
            let text = strings::waiting_for_room_place(&ctx.display_name, wait.max_rooms);
            super::post_notice(ctx, room, text).await;
            start.await
        }
    }
}
