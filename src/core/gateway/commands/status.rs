//! `!status`: what the agents here are doing (in a thread, that thread's conversations; in
//! the main timeline, the room's threads too), and the context they use.

use std::sync::Arc;

use super::default_name;
use super::{Call, RoomCommand, Running};
use crate::core::command::registry::{AfterCrash, Applies, DuringTurn, Group, Scope, Spec, Who};
use crate::core::gateway::Gateway;
use crate::core::inbound::IncomingMessage;
use crate::core::routing::Member;
use crate::model::ids::{AgentId, ConversationKey, RoomId};
use crate::render::strings::{self, StatusLine};
use crate::store::RoomRouting;

pub(crate) static COMMAND: RoomCommand = RoomCommand {
    spec: Spec {
        name: "status",
        aliases: &[],
        args: "",
        scope: Scope::Room,
        who: Who::Allowed,
        during_turn: DuringTurn::AtOnce,
        after_crash: AfterCrash::Rerun,
        applies: Applies::Always,
        group: Group::Conversation,
        help: "what the agents here are doing, and the context they use",
        details: "Each agent of the room: working or idle, queued messages, open polls, its \
                      session, mode and usage.",
    },
    run,
};

fn run<'a>(gateway: &'a Arc<Gateway>, call: Call<'a>) -> Running<'a> {
    // It waits for the channels' reports: answered from a task of its own.
    let (gateway, message) = (gateway.clone(), call.message.clone());
    let (members, routing) = (call.members.to_vec(), call.routing.clone());
    Box::pin(async move {
        let this = gateway.clone();
        gateway.channels.spawn(async move {
            let text = this.status(&message, &members, &routing).await;
            this.answer(&message, text).await;
        });
    })
}

impl Gateway {
    /// `!status`, from what the room's channels report.
    async fn status(
        &self,
        message: &IncomingMessage,
        members: &[Member],
        routing: &RoomRouting,
    ) -> String {
        // Asked in a thread: that thread's conversations.
        let here = |agent: &AgentId| {
            ConversationKey::new(message.room_id.clone(), agent.clone())
                .in_thread(message.thread.clone())
        };
        let reports = self.reports(members, here).await;
        let mut parts: Vec<String> = members
            .iter()
            .map(|m| {
                let report = reports.get(&m.agent_id).cloned().unwrap_or_default();
                strings::status(&StatusLine {
                    agent: &m.display_name,
                    running: report.running,
                    waiting: report.waiting,
                    queued: report.queued,
                    polls: report.polls,
                    has_session: report.has_session,
                    mode: report.mode.as_deref(),
                    usage: report.usage.as_deref(),
                    title: report.title.as_deref(),
                })
            })
            .collect();
        if members.len() > 1 {
            parts.push(strings::routing_status(
                default_name(members, routing),
                self.handoff_on(routing),
            ));
        }
        // Asked in the main timeline: the room's thread conversations too.
        if message.thread.is_none() {
            parts.extend(self.thread_statuses(&message.room_id, members).await);
        }
        parts.join("\n\n")
    }

    /// The status lines of the room's thread conversations under their heading (none when
    /// the room has no thread conversation).
    async fn thread_statuses(&self, room: &RoomId, members: &[Member]) -> Vec<String> {
        let mut threads = Vec::new();
        for key in self.channels.thread_conversations(room) {
            let (Some(report), Some(member)) = (
                self.channels.report(&key).await,
                members.iter().find(|m| m.agent_id == key.agent),
            ) else {
                continue;
            };
            threads.push(strings::thread_status(
                &member.display_name,
                &strings::event_link(room.as_str(), key.thread_id()),
                report.running,
                report.queued,
            ));
        }
        if threads.is_empty() {
            return Vec::new();
        }
        vec![strings::threads_heading(threads.len()), threads.join("\n")]
    }
}
