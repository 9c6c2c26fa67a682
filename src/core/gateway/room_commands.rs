//! Chat commands about the room rather than one agent: help, status, the agent list, what
//! the room shows, its default agent and hand-offs. One agent of the room answers them.

use crate::core::command::registry::{Audience, Kind};
use std::collections::HashMap;
use std::sync::Arc;

use super::Gateway;
use crate::core::command::Command;
use crate::core::inbound::IncomingMessage;
use crate::core::routing::Member;
use crate::model::agent::ProcessState;
use crate::model::ids::{AgentId, ConversationKey, RoomId};
use crate::model::{QueueMode, ThreadMode, Verbosity};
use crate::render::strings::{self, ProcessLine, StatusLine};
use crate::store::{RoomRouting, StoreError};

impl Gateway {
    /// Answers a room command carried by `message` (already admitted, and settled once
    /// answered). Settings are
    /// changed before this returns, so the next message is routed by them; `!help` and
    /// `!status`, which wait for the channels' reports, are answered from their own task.
    pub(super) async fn room_command(
        self: &Arc<Self>,
        command: Command,
        message: &IncomingMessage,
        members: &[Member],
        routing: &RoomRouting,
    ) {
        let room = &message.room_id;
        let prefix = &self.prefix;
        let text = match command.kind() {
            None => strings::unknown_command(prefix, command.word()),
            Some(kind @ (Kind::Help | Kind::Status)) => {
                let this = self.clone();
                let (message, members, routing) =
                    (message.clone(), members.to_vec(), routing.clone());
                self.channels.spawn(async move {
                    let text = this
                        .room_report(&command, &message, &members, &routing)
                        .await;
                    match kind {
                        // Written in Markdown: posted with its HTML.
                        Kind::Help => this.answer_formatted(&message, text).await,
                        _ => this.answer(&message, text).await,
                    }
                });
                return;
            }
            Some(Kind::Agents) => self.agent_list(members),
            Some(Kind::Fork) => match self.fork(&command, message, members, routing).await {
                Some(text) => text,
                None => {
                    self.settle(&message.agent_id, &message.event_id).await;
                    return;
                }
            },
            Some(
                kind @ (Kind::Show
                | Kind::Default
                | Kind::Handoff
                | Kind::Threads
                | Kind::Queue
                | Kind::Reactions),
            ) => {
                self.room_setting(kind, &command, room, members, routing)
                    .await
            }
            Some(kind @ (Kind::Every | Kind::At | Kind::Unschedule | Kind::TimeZone))
            | Some(kind @ Kind::Schedules) => {
                self.schedule_command(kind, &command, message, members, routing)
                    .await
            }
            // Commands for one agent are its channel's (`Channel::answer_command`).
            Some(
                Kind::Stop
                | Kind::Allow
                | Kind::Always
                | Kind::Deny
                | Kind::Reject
                | Kind::New
                | Kind::Logs
                | Kind::Commands
                | Kind::Mode
                | Kind::Model
                | Kind::Set
                | Kind::Worktree
                | Kind::File
                | Kind::Sessions
                | Kind::Attach
                | Kind::Login,
            ) => {
                tracing::warn!(?command, "not a room command");
                return;
            }
        };
        self.answer(message, text).await;
    }

    /// Shows or changes one of the room's settings (`!show`, `!default`, `!handoff`,
    /// `!threads`): the answer says what it is, what it became, or how to use the command.
    async fn room_setting(
        &self,
        kind: Kind,
        command: &Command,
        room: &RoomId,
        members: &[Member],
        routing: &RoomRouting,
    ) -> String {
        let prefix = &self.prefix;
        match kind {
            Kind::Show => match command.choice() {
                None => {
                    let current = self.room_verbosity(room).await;
                    strings::verbosity_is(prefix, current.as_str())
                }
                Some(word) => match Verbosity::parse(&word) {
                    Some(v) => saved(
                        self.store.set_room_verbosity(room, v.as_str()).await,
                        "the room's verbosity",
                        strings::verbosity_set(v.as_str()),
                    ),
                    None => strings::unknown_verbosity(prefix, &word),
                },
            },
            Kind::Default => match command.arg(0) {
                None => strings::default_is(prefix, default_name(members, routing)),
                Some(word) => self.choose_default_agent(room, word, members).await,
            },
            Kind::Handoff => match command.choice().as_deref() {
                None => strings::handoff_is(
                    prefix,
                    self.handoff_on(routing),
                    self.rules.handoff_max_hops,
                ),
                Some(word @ ("on" | "off")) => {
                    let on = word == "on";
                    saved(
                        self.store.set_handoff(room, on).await,
                        "the hand-off setting",
                        strings::handoff_set(on),
                    )
                }
                Some(_) => strings::handoff_usage(prefix),
            },
            Kind::Threads => match command.choice() {
                None => strings::threads_are(prefix, self.thread_mode(routing).as_str()),
                Some(word) => match ThreadMode::parse(&word) {
                    Some(mode) => saved(
                        self.store.set_room_threads(room, mode.as_str()).await,
                        "the room's thread setting",
                        strings::threads_set(mode.as_str()),
                    ),
                    None => strings::threads_usage(prefix, &word),
                },
            },
            Kind::Queue => self.queue_setting(command, room).await,
            Kind::Reactions => self.reactions_setting(command, room).await,
            _ => strings::unknown_command(prefix, command.word()),
        }
    }

    /// `!default WORD`: the room's default agent becomes the agent named `word` (`off`:
    /// none); the answer says so, or names the agents there are.
    async fn choose_default_agent(&self, room: &RoomId, word: &str, members: &[Member]) -> String {
        let off = matches!(word.to_lowercase().as_str(), "off" | "none" | "nobody");
        let chosen = members.iter().find(|m| m.is_named(word)).filter(|_| !off);
        if chosen.is_none() && !off {
            return strings::no_such_agent(word, &self.agent_lines(members, &HashMap::new()));
        }
        let id = chosen.map(|m| &m.agent_id);
        saved(
            self.store.set_default_agent(room, id).await,
            "the default agent",
            strings::default_set(chosen.map(|m| m.display_name.as_str())),
        )
    }

    /// The answer to `!help` or `!status`, from what the room's channels report.
    async fn room_report(
        &self,
        command: &Command,
        message: &IncomingMessage,
        members: &[Member],
        routing: &RoomRouting,
    ) -> String {
        // Asked in a thread: that thread's conversations.
        let here = |agent: &AgentId| {
            ConversationKey::new(message.room_id.clone(), agent.clone())
                .in_thread(message.thread.clone())
        };
        let help = command.kind() == Some(Kind::Help);
        if let Some(word) = command.choice().filter(|_| help) {
            return strings::help_for(&self.prefix, &word);
        }
        let reports = self.reports(members, here).await;
        if help {
            let lines = self.agent_lines(members, &reports);
            let audience = Audience {
                several_agents: members.len() > 1,
                worktrees: (members.iter())
                    .filter_map(|m| self.agents.get(&m.agent_id))
                    .any(|ctx| ctx.workspace.worktrees().is_some()),
                admin: self.people.is_admin(&message.sender),
            };
            return strings::help(
                &self.prefix,
                &lines,
                default_name(members, routing),
                audience,
            );
        }
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

    /// How the room's threads map onto conversations, as chosen with `!threads` or
    /// configured.
    pub(super) fn thread_mode(&self, routing: &RoomRouting) -> ThreadMode {
        (routing.threads.as_deref())
            .and_then(ThreadMode::parse)
            .unwrap_or(self.rules.threads)
    }

    /// `!queue`: what a message written during a turn does here, or the change to it.
    async fn queue_setting(&self, command: &Command, room: &RoomId) -> String {
        let prefix = &self.prefix;
        match command.choice() {
            None => strings::queue_mode_is(prefix, self.room_queue_mode(room).await.as_str()),
            Some(word) => match QueueMode::parse(&word) {
                Some(mode) => saved(
                    self.store.set_room_queue_mode(room, mode.as_str()).await,
                    "the room's queue setting",
                    strings::queue_mode_set(mode),
                ),
                None => strings::queue_mode_usage(prefix, &word),
            },
        }
    }

    /// `!reactions`: whether agents mark people's messages here, or the change to it.
    async fn reactions_setting(&self, command: &Command, room: &RoomId) -> String {
        let prefix = &self.prefix;
        match command.choice().as_deref() {
            None => strings::status_reactions_are(prefix, self.room_status_reactions(room).await),
            Some(word @ ("on" | "off")) => {
                let on = word == "on";
                saved(
                    self.store.set_room_status_reactions(room, on).await,
                    "the room's reactions setting",
                    strings::status_reactions_set(on),
                )
            }
            Some(_) => strings::status_reactions_usage(prefix),
        }
    }

    /// What a message written during a turn does in the room (the setting and its default
    /// are the same for every agent: any one answers).
    async fn room_queue_mode(&self, room_id: &RoomId) -> QueueMode {
        match self.agents.values().next() {
            Some(ctx) => ctx.queue_mode_in(room_id).await,
            None => QueueMode::default(),
        }
    }

    /// Whether agents mark people's messages in the room (the same for every agent).
    async fn room_status_reactions(&self, room_id: &RoomId) -> bool {
        match self.agents.values().next() {
            Some(ctx) => ctx.status_reactions_in(room_id).await,
            None => false,
        }
    }

    /// What the room shows, as chosen with `!show` or configured.
    async fn room_verbosity(&self, room_id: &RoomId) -> Verbosity {
        let configured = self
            .agents
            .values()
            .next()
            .map(|ctx| ctx.verbosity.get())
            .unwrap_or_default();
        match self.store.room_verbosity(room_id).await {
            Ok(word) => word
                .as_deref()
                .and_then(Verbosity::parse)
                .unwrap_or(configured),
            Err(e) => {
                tracing::error!(error = %e, "could not read the room's settings");
                configured
            }
        }
    }

    /// Whether hand-offs are on in a room with these routing choices.
    pub(super) fn handoff_on(&self, routing: &RoomRouting) -> bool {
        routing.handoff.unwrap_or(self.rules.handoff)
    }

    /// The reports of the room's channels that exist, by agent ID.
    async fn reports(
        &self,
        members: &[Member],
        conversation: impl Fn(&AgentId) -> ConversationKey,
    ) -> HashMap<AgentId, crate::core::channel::ChannelReport> {
        let mut reports = HashMap::new();
        for m in members {
            if let Some(report) = self.channels.report(&conversation(&m.agent_id)).await {
                reports.insert(m.agent_id.clone(), report);
            }
        }
        reports
    }

    /// `!agents`: every agent of the gateway, its process and whether it is in this room.
    fn agent_list(&self, members: &[Member]) -> String {
        let states = self.pool.states();
        let mut lines = vec![strings::agents_heading(
            states.len(),
            self.pool.settings().max_running,
        )];
        for state in states {
            let Some(ctx) = self.agents.get(&state.agent_id) else {
                continue;
            };
            let (process, sessions, uptime) = match state.process {
                ProcessState::Running { uptime, sessions } => {
                    let line = match state.turns {
                        0 => ProcessLine::Idle,
                        n => ProcessLine::Working(n),
                    };
                    (line, sessions, Some(uptime))
                }
                ProcessState::Stopped => (ProcessLine::Stopped, 0, None),
                ProcessState::Crashed { status } => (ProcessLine::Crashed(status), 0, None),
            };
            let here = members.iter().any(|m| m.agent_id == state.agent_id);
            lines.push(strings::agent_line(
                &ctx.display_name,
                ctx.agent_id.as_str(),
                &process,
                sessions,
                uptime,
                here,
            ));
        }
        lines.join("\n")
    }
}

/// The display name of the room's default agent, if it has one and the agent is here.
fn default_name<'m>(members: &'m [Member], routing: &RoomRouting) -> Option<&'m str> {
    let default = routing.default_agent.as_ref()?;
    members
        .iter()
        .find(|m| &m.agent_id == default)
        .map(|m| m.display_name.as_str())
}

/// The answer to a room setting whose saving returned `result`: `done` once it is saved,
/// else the notice that nothing changed (the log says what could not be saved).
fn saved(result: Result<(), StoreError>, what: &str, done: String) -> String {
    match result {
        Ok(()) => done,
        Err(e) => {
            tracing::error!(error = %e, "could not save {what}");
            strings::SETTING_NOT_SAVED.to_owned()
        }
    }
}
