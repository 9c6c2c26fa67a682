//! `!help [COMMAND]`: who is here, how messages find them, the commands that apply here to
//! the person asking, each agent's own slash commands; or more about one command.

use std::sync::Arc;

use super::{Call, RoomCommand, Running};
use super::{default_name, known};
use crate::core::command::registry::Audience;
use crate::core::command::registry::{AfterCrash, Applies, DuringTurn, Group, Scope, Spec, Who};
use crate::core::gateway::Gateway;
use crate::model::ids::ConversationKey;
use crate::render::strings;

pub(crate) static COMMAND: RoomCommand = RoomCommand {
    spec: Spec {
        name: "help",
        aliases: &["h", "?"],
        args: "[COMMAND]",
        scope: Scope::Room,
        who: Who::Allowed,
        during_turn: DuringTurn::AtOnce,
        after_crash: AfterCrash::Rerun,
        applies: Applies::Always,
        group: Group::Room,
        help: "this text, or more about one command",
        details: "Who is here and how to address them, the commands that apply here, and \
                      each agent's own slash commands; with a command's name, more about it.",
    },
    run,
};

fn run<'a>(gateway: &'a Arc<Gateway>, call: Call<'a>) -> Running<'a> {
    // It waits for the channels' reports: answered from a task of its own.
    let (gateway, message) = (gateway.clone(), call.message.clone());
    let (command, members, routing) = (
        call.command.clone(),
        call.members.to_vec(),
        call.routing.clone(),
    );
    Box::pin(async move {
        let this = gateway.clone();
        gateway.channels.spawn(async move {
            let text = match command.choice() {
                Some(word) => strings::help_for(&this.prefix, &word, known().specs()),
                None => this.help(&message, &members, &routing).await,
            };
            // Written in Markdown: posted with its HTML.
            this.answer_formatted(&message, text).await;
        });
    })
}

impl Gateway {
    /// `!help`: from what the room's channels report (in a thread, that thread's).
    async fn help(
        &self,
        message: &crate::core::inbound::IncomingMessage,
        members: &[crate::core::routing::Member],
        routing: &crate::store::RoomRouting,
    ) -> String {
        let here = |agent: &crate::model::ids::AgentId| {
            ConversationKey::new(message.room_id.clone(), agent.clone())
                .in_thread(message.thread.clone())
        };
        let reports = self.reports(members, here).await;
        let lines = self.agent_lines(members, &reports);
        let audience = Audience {
            several_agents: members.len() > 1,
            worktrees: (members.iter())
                .filter_map(|m| self.agents.get(&m.agent_id))
                .any(|ctx| ctx.workspace.worktrees().is_some()),
            admin: self.people.is_admin(&message.sender),
        };
        let default = default_name(members, routing);
        strings::help(&self.prefix, &lines, default, audience, known().specs())
    }
}
