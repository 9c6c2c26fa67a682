//! `!queue [queue|steer|interrupt]`: what a message written while an agent works does
//! in the room, and what waits; `!queue drop N` and `!queue clear` take waiting prompts
//! out (their authors', or any for admins).

use super::{Call, RoomCommand, Running};
use crate::core::command::registry::{AfterCrash, Applies, DuringTurn, Group, Scope, Spec, Who};
use crate::core::gateway::Gateway;
use std::sync::Arc;

use super::saved;
use crate::core::channel::WaitingPrompt;
use crate::model::QueueMode;
use crate::model::ids::{ConversationKey, RoomId, UserId};
use crate::render::strings;

pub(crate) static COMMAND: RoomCommand = RoomCommand {
    spec: Spec {
        name: "queue",
        aliases: &[],
        args: "[queue|steer|interrupt|drop N|clear]",
        scope: Scope::Room,
        who: Who::Allowed,
        during_turn: DuringTurn::AtOnce,
        after_crash: AfterCrash::Reported,
        applies: Applies::Always,
        group: Group::Room,
        help: "what a message written while the agent works does, and what waits",
        details: "queue: it waits its turn (⏳); steer: it joins the running turn (↪️) where \
                      the agent offers that, else it waits; interrupt: it stops the running turn \
                      and is answered at once. Without a word: the setting and the prompts \
                      that wait, numbered; drop N takes number N out, clear all of yours \
                      (admins may take anyone's).",
    },
    run,
};

fn run<'a>(gateway: &'a Arc<Gateway>, call: Call<'a>) -> Running<'a> {
    Box::pin(async move {
        let (prefix, room) = (&gateway.prefix, &call.message.room_id);
        let text = match call.command.choice() {
            None => {
                let mode = gateway.room_queue_mode(room).await;
                let waiting = gateway.waiting_in(room).await;
                let lines = lines(waiting.as_ref().unwrap_or_else(|some| some));
                let waiting = strings::queue_waiting(prefix, &lines);
                format!(
                    "{}\n\n{waiting}",
                    strings::queue_mode_is(prefix, mode.as_str())
                )
            }
            Some(word) if word == "clear" => gateway.clear_queue(room, &call.message.sender).await,
            Some(word) if word == "drop" => {
                let number = call.command.arg(1).unwrap_or_default();
                (gateway.drop_queued(room, &call.message.sender, number)).await
            }
            Some(word) => match QueueMode::parse(&word) {
                Some(mode) => saved(
                    gateway.store.set_room_queue_mode(room, mode.as_str()).await,
                    "the room's queue setting",
                    strings::queue_mode_set(mode),
                ),
                None => strings::queue_mode_usage(prefix, &word),
            },
        };
        gateway.answer(call.message, text).await
    })
}

/// A prompt waiting in one of the room's conversations.
type Waiting = (ConversationKey, WaitingPrompt);

/// The lines `!queue` shows for `waiting`, numbered from 1.
fn lines(waiting: &[Waiting]) -> Vec<String> {
    (waiting.iter().enumerate())
        .map(|(i, (key, w))| line(i + 1, key, w))
        .collect()
}

fn line(number: usize, key: &ConversationKey, w: &WaitingPrompt) -> String {
    strings::queue_line(number, w.sender.as_str(), key.agent.as_str(), &w.body)
}

impl Gateway {
    /// The prompts waiting in `room`'s conversations, in the order `!queue` numbers them;
    /// `Err` with those it could read when a conversation did not say in time (numbers
    /// after it would not be the ones people were shown).
    async fn waiting_in(&self, room: &RoomId) -> Result<Vec<Waiting>, Vec<Waiting>> {
        let (mut waiting, mut complete) = (Vec::new(), true);
        for key in self.channels.room_conversations(room) {
            match self.channels.report(&key).await {
                Some(report) => {
                    waiting.extend(report.waiting_prompts.into_iter().map(|w| (key.clone(), w)))
                }
                None => complete = false,
            }
        }
        match complete {
            true => Ok(waiting),
            false => Err(waiting),
        }
    }

    /// `!queue drop N` by `by`.
    async fn drop_queued(&self, room: &RoomId, by: &UserId, number: &str) -> String {
        let Ok(waiting) = self.waiting_in(room).await else {
            return strings::QUEUE_UNREADABLE.to_owned();
        };
        let found =
            (number.parse::<usize>().ok()).and_then(|n| Some((n, waiting.get(n.checked_sub(1)?)?)));
        let Some((n, (key, w))) = found else {
            return strings::queue_no_such(&self.prefix, number);
        };
        if &w.sender != by && !self.people.is_admin(by) {
            return strings::queue_not_yours(n, w.sender.as_str());
        }
        match (self.channels.withdraw(key, w.event_id.clone(), by.clone())).await {
            true => strings::queue_dropped(&[line(n, key, w)]),
            // Its turn came meanwhile.
            false => strings::queue_no_such(&self.prefix, number),
        }
    }

    /// `!queue clear` by `by`: every prompt of theirs that waits (an admin's: every one).
    async fn clear_queue(&self, room: &RoomId, by: &UserId) -> String {
        let admin = self.people.is_admin(by);
        let Ok(waiting) = self.waiting_in(room).await else {
            return strings::QUEUE_UNREADABLE.to_owned();
        };
        let mut dropped = Vec::new();
        for (i, (key, w)) in waiting.iter().enumerate() {
            if (admin || &w.sender == by)
                && (self.channels.withdraw(key, w.event_id.clone(), by.clone())).await
            {
                dropped.push(line(i + 1, key, w));
            }
        }
        match dropped.is_empty() {
            true => strings::QUEUE_NOTHING_OF_YOURS.to_owned(),
            false => strings::queue_dropped(&dropped),
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
}
