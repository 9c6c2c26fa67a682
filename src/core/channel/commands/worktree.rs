//! `!worktree [remove]`: the conversation's git worktree in worktree mode, shown or removed.

use super::{AgentCommand, Call, Running};
use crate::core::channel::Channel;
use crate::core::command::registry::{AfterCrash, Applies, DuringTurn, Group, Scope, Spec, Who};
use crate::render::strings;

pub(crate) static COMMAND: AgentCommand = AgentCommand {
    spec: Spec {
        name: "worktree",
        aliases: &[],
        args: "[remove]",
        scope: Scope::Agent,
        who: Who::Allowed,
        during_turn: DuringTurn::AtOnce,
        after_crash: AfterCrash::Reported,
        applies: Applies::Worktrees,
        group: Group::Conversation,
        help: "the agent's git worktree, its branch and changes (remove: take it away)",
        details: "In worktree mode: the conversation's worktree, its branch, uncommitted \
                      changes and commits; `remove` takes the worktree away and keeps its branch.",
    },
    run,
    answers: None,
};

fn run<'a>(channel: &'a mut Channel, call: Call<'a>) -> Running<'a> {
    Box::pin(channel.worktree_command(call.command.arg(0), call.running))
}

impl Channel {
    /// `!worktree` (`word` `None`): how the conversation's worktree stands; `!worktree
    /// remove`: takes it away, its branch kept (git refuses while it holds uncommitted
    /// changes), and leaves the session, whose folder is gone; the next message makes the
    /// worktree again from the branch.
    async fn worktree_command(&mut self, word: Option<&str>, running: bool) {
        let name = self.ctx.display_name.clone();
        let folder = self.ctx.workspace.for_room(&self.key.room);
        let shown = folder.display().to_string();
        let (Some(worktrees), Some(branch)) = (
            self.ctx.workspace.worktrees().cloned(),
            self.ctx.workspace.branch_for_room(&self.key.room),
        ) else {
            return self.notice(strings::no_worktree_mode(&name, &shown)).await;
        };
        let text = match word.map(str::to_lowercase).as_deref() {
            None | Some("status") => {
                let status = blocking(move || worktrees.status(&folder)).await;
                match status {
                    Ok(Some(status)) => strings::worktree_status(&name, &shown, &status),
                    Ok(None) => strings::worktree_not_yet(&name, &branch),
                    Err(e) => strings::worktree_failed(&e),
                }
            }
            Some("remove") if running => strings::WORKTREE_BUSY.to_owned(),
            Some("remove") => {
                // A folder on the agent's host is not looked for here: git there says.
                if worktrees.remote.is_none() && !folder.exists() {
                    strings::worktree_not_yet(&name, &branch)
                } else {
                    match blocking(move || worktrees.remove(&folder)).await {
                        Ok(()) => {
                            tracing::info!(agent = %self.ctx.agent_id, room = %self.key.room, %branch, "worktree removed");
                            self.drain_events(None).await;
                            self.drop_session();
                            // Its folder is gone: the next message makes and opens it again.
                            self.folder.forget();
                            strings::worktree_removed(&name, &branch)
                        }
                        Err(e) => strings::worktree_failed(&e),
                    }
                }
            }
            Some(_) => strings::worktree_usage(&self.ctx.command_prefix),
        };
        self.notice(text).await;
    }
}

/// Runs a git step off the async threads; its error as text.
async fn blocking<T: Send + 'static>(
    work: impl FnOnce() -> Result<T, crate::workspace::WorktreeError> + Send + 'static,
) -> Result<T, String> {
    match tokio::task::spawn_blocking(work).await {
        Ok(done) => done.map_err(|e| e.to_string()),
        Err(e) => Err(e.to_string()),
    }
}
