//! The commands about the room rather than one agent, each a file of its own holding its
//! declaration (`Spec`) and its handler; one agent of the room answers them. With the
//! agents' commands (`core::channel::commands`) they make the set every message is parsed
//! with ([`known`]). A new room command is a file here and its line in [`ALL`].

use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, LazyLock};

use super::Gateway;
use crate::core::channel::commands as agent_commands;
use crate::core::command::registry::Spec;
use crate::core::command::{Command, CommandSet};
use crate::core::inbound::IncomingMessage;
use crate::core::routing::Member;
use crate::render::strings;
use crate::store::{RoomRouting, StoreError};

mod agents;
mod at;
mod budget;
mod default;
mod every;
mod fork;
mod handoff;
mod help;
mod queue;
mod reactions;
mod schedules;
mod show;
mod status;
mod threads;
mod timezone;
mod unschedule;
mod usage;

/// Every room command, in the order `!help` lists them within their groups.
pub(crate) static ALL: &[&RoomCommand] = &[
    &fork::COMMAND,
    &status::COMMAND,
    &show::COMMAND,
    &default::COMMAND,
    &handoff::COMMAND,
    &threads::COMMAND,
    &queue::COMMAND,
    &reactions::COMMAND,
    &usage::COMMAND,
    &budget::COMMAND,
    &every::COMMAND,
    &at::COMMAND,
    &schedules::COMMAND,
    &unschedule::COMMAND,
    &timezone::COMMAND,
    &agents::COMMAND,
    &help::COMMAND,
];

/// Every command the gateway knows, the room's and the agents', as messages are parsed
/// with them and `!help` lists them.
pub(crate) fn known() -> &'static CommandSet {
    static KNOWN: LazyLock<CommandSet> = LazyLock::new(|| {
        let agents = agent_commands::ALL.iter().map(|c| &c.spec);
        let room = ALL.iter().map(|c| &c.spec);
        CommandSet::new(agents.chain(room).collect())
    });
    &KNOWN
}

/// What a room command's handler returns: its work, done on the gateway's task.
pub(crate) type Running<'a> = Pin<Box<dyn Future<Output = ()> + Send + 'a>>;

/// A command about the room: its declaration and its handler.
pub(crate) struct RoomCommand {
    pub spec: Spec,
    /// Carries it out and answers in the room (the message is settled once answered).
    pub run: for<'a> fn(&'a Arc<Gateway>, Call<'a>) -> Running<'a>,
}

/// One use of a room command.
pub(crate) struct Call<'a> {
    pub command: &'a Command,
    /// The message that carried it (admitted, and settled once answered).
    pub message: &'a IncomingMessage,
    /// The room's agents.
    pub members: &'a [Member],
    /// The room's routing choices.
    pub routing: &'a RoomRouting,
}

impl Gateway {
    /// Answers a room command carried by `message`. Settings are changed before this
    /// returns, so the next message is routed by them; `!help` and `!status`, which wait
    /// for the channels' reports, are answered from their own task.
    pub(super) async fn room_command(
        self: &Arc<Self>,
        command: Command,
        message: &IncomingMessage,
        members: &[Member],
        routing: &RoomRouting,
    ) {
        let entry = (command.spec()).and_then(|spec| ALL.iter().find(|c| c.spec.name == spec.name));
        let Some(entry) = entry else {
            if command.spec().is_some() {
                // Commands for one agent are its channel's (`core::channel::commands`).
                tracing::warn!(?command, "not a room command");
                return;
            }
            let text = strings::unknown_command(&self.prefix, command.word());
            return self.answer(message, text).await;
        };
        let call = Call {
            command: &command,
            message,
            members,
            routing,
        };
        (entry.run)(self, call).await;
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

#[cfg(test)]
mod tests;
