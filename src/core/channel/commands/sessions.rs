//! `!sessions`: the agent's sessions whose folder is this conversation's; also what
//! `!attach` chooses from (`attach.rs`).

use super::{AgentCommand, Call, Running};
use crate::core::channel::Channel;
use crate::core::command::registry::{AfterCrash, Applies, DuringTurn, Group, Scope, Spec, Who};
use crate::model::agent::SessionListing;
use crate::model::ids::SessionId;
use crate::render::strings;

pub(crate) static COMMAND: AgentCommand = AgentCommand {
    spec: Spec {
        name: "sessions",
        aliases: &[],
        args: "",
        scope: Scope::Agent,
        who: Who::Allowed,
        during_turn: DuringTurn::AtOnce,
        after_crash: AfterCrash::Rerun,
        applies: Applies::Always,
        group: Group::Conversation,
        help: "the agent's sessions in this conversation's folder",
        details: "Lists the agent's sessions whose folder is this conversation's (where the \
                      agent offers session/list); those of other rooms' conversations are not \
                      shown.",
    },
    run,
    answers: None,
};

fn run<'a>(channel: &'a mut Channel, _call: Call<'a>) -> Running<'a> {
    Box::pin(channel.sessions_command())
}

impl Channel {
    /// `!sessions`: the agent's sessions whose folder is this conversation's.
    async fn sessions_command(&mut self) {
        let Some(Listed { listed, others, .. }) = self.listed_sessions().await else {
            return;
        };
        let current = self.slot.id().map(SessionId::as_str);
        let text = strings::sessions_list(
            &self.ctx.display_name,
            &listed,
            others.len(),
            current,
            &self.ctx.command_prefix,
        );
        self.notice(text).await;
    }

    /// The agent started (with a lease held while the command works) and its sessions of
    /// this conversation's folder that are not another conversation's; says why in the room
    /// when there are none to have.
    pub(super) async fn listed_sessions(&mut self) -> Option<Listed> {
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
pub(super) struct Listed {
    /// Keeps the agent running while the command works.
    pub _lease: crate::core::pool::Lease,
    /// This conversation's own, and those the gateway never took up (started elsewhere).
    pub listed: Vec<SessionListing>,
    /// The IDs of those that are other conversations': neither shown nor attached.
    pub others: Vec<SessionId>,
}
