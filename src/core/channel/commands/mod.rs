//! The commands for one agent, each a file of its own holding its declaration (`Spec`:
//! names, who, during a turn, after a crash, help) and what the conversation's channel does
//! with it. A new command for one agent is a file here and its line in [`ALL`]; the gateway
//! finds it by its declared scope and hands it to the agent's channel, which runs it from
//! this table.

use std::future::Future;
use std::pin::Pin;
use std::time::Duration;

use super::Channel;
use crate::core::command::Command;
use crate::core::command::registry::Spec;
use crate::core::poll::Reply;
use crate::core::pool::Lease;
use crate::model::ids::UserId;

mod agent_commands;
mod attach;
mod file;
mod login;
mod logs;
mod mode;
mod model;
mod new;
mod poll_answers;
mod retry;
mod sessions;
mod set;
mod stop;
mod worktree;

/// Every command for one agent, in the order `!help` lists them within their groups.
pub(crate) static ALL: &[&AgentCommand] = &[
    &stop::COMMAND,
    &new::COMMAND,
    &retry::COMMAND,
    &file::COMMAND,
    &sessions::COMMAND,
    &attach::COMMAND,
    &worktree::COMMAND,
    &mode::COMMAND,
    &model::COMMAND,
    &set::COMMAND,
    &agent_commands::COMMAND,
    &logs::COMMAND,
    &login::COMMAND,
    &poll_answers::ALLOW,
    &poll_answers::ALWAYS,
    &poll_answers::DENY,
    &poll_answers::REJECT,
];

/// What a command's handler returns: its work, done on the channel's task.
pub(crate) type Running<'a> = Pin<Box<dyn Future<Output = ()> + Send + 'a>>;

/// A command for one agent: its declaration and its handler.
pub(crate) struct AgentCommand {
    pub spec: Spec,
    /// Carries it out, outside a turn or beside the running one (`call.running`); the
    /// handler says in the room what became of it.
    pub run: for<'a> fn(&'a mut Channel, Call<'a>) -> Running<'a>,
    /// The poll answer it gives during a turn (`!allow`), if it is one.
    pub answers: Option<Reply>,
}

/// One use of a command.
pub(crate) struct Call<'a> {
    pub command: &'a Command,
    /// Who wrote it.
    pub by: &'a UserId,
    /// Whether the conversation's turn runs: the command is answered beside it.
    pub running: bool,
}

/// The entry of `command`, if it is a command for one agent.
pub(crate) fn find(command: &Command) -> Option<&'static AgentCommand> {
    let spec = command.spec()?;
    ALL.iter()
        .copied()
        .find(|entry| entry.spec.name == spec.name)
}

/// How long a new session's command list may take to arrive after `session/new` (agents
/// send it right after their answer).
const COMMANDS_GRACE: Duration = Duration::from_secs(1);

impl Channel {
    /// Carries out a command for this agent that does not act on the running turn (those
    /// are handled in [`Channel::handle_input_during_turn`]); room commands are the
    /// gateway's, and never reach a channel.
    pub(super) async fn answer_command(&mut self, command: &Command, by: &UserId, running: bool) {
        let Some(entry) = find(command) else {
            tracing::warn!(agent = %self.ctx.agent_id, command = command.word(), "a room command reached a channel; the gateway answers those");
            return;
        };
        let call = Call {
            command,
            by,
            running,
        };
        (entry.run)(self, call).await;
    }

    /// Opens the session a command needs, with a pool lease to hold while the command
    /// works on it (so the pool does not stop the agent meanwhile); says why in the room
    /// when it cannot. During a turn the agent already has a lease, so this one comes at
    /// once.
    pub(super) async fn session_for_command(&mut self) -> Option<Lease> {
        let lease = self.lease().await;
        self.open_session().await.then_some(lease)
    }

    /// The agent's command list arrives just after `session/new`: waits a moment for it
    /// when the session is new and the list is still empty.
    pub(super) async fn await_commands(&mut self) {
        let fresh = self.slot.is_fresh();
        self.drain_events(None).await;
        if !fresh || !self.reported.commands().is_empty() {
            return;
        }
        let deadline = tokio::time::Instant::now() + COMMANDS_GRACE;
        while self.reported.commands().is_empty() {
            if !self.slot.is_open() {
                return;
            }
            match tokio::time::timeout_at(deadline, self.slot.next_update()).await {
                Ok(Some(event)) => self.handle_event(event, None).await,
                Ok(None) | Err(_) => return,
            }
        }
    }
}
