//! `!schedules`: the room's schedules, each as a line the room reads (also how `!every`
//! and `!at` answer).

use std::sync::Arc;

use super::{Call, RoomCommand, Running};
use crate::core::command::registry::{AfterCrash, Applies, DuringTurn, Group, Scope, Spec, Who};
use crate::core::gateway::Gateway;
use crate::core::inbound::IncomingMessage;
use crate::core::routing::Member;
use crate::model::schedule;
use crate::render::strings::{self, ScheduleLine};
use crate::store::Schedule;

pub(crate) static COMMAND: RoomCommand = RoomCommand {
    spec: Spec {
        name: "schedules",
        aliases: &[],
        args: "",
        scope: Scope::Room,
        who: Who::Allowed,
        during_turn: DuringTurn::AtOnce,
        after_crash: AfterCrash::Rerun,
        applies: Applies::Always,
        group: Group::Schedules,
        help: "what is scheduled here: when, by whom, the next run, the last outcome",
        details: "Every schedule of the room with its ID, when it runs and in which time zone, \
                      the agent, who set it, its next run, how many runs it had and how the last \
                      one ended, or why it stopped.",
    },
    run,
};

fn run<'a>(gateway: &'a Arc<Gateway>, call: Call<'a>) -> Running<'a> {
    Box::pin(async move {
        let text = gateway.list_schedules(call.message, call.members).await;
        gateway.answer(call.message, text).await
    })
}

impl Gateway {
    /// `!schedules`.
    async fn list_schedules(&self, message: &IncomingMessage, members: &[Member]) -> String {
        let schedules = match self.store.schedules_in(&message.room_id).await {
            Ok(schedules) => schedules,
            Err(e) => {
                tracing::error!(error = %e, "could not read the room's schedules");
                return strings::store_failed("the schedules");
            }
        };
        if schedules.is_empty() {
            return strings::no_schedules(&self.prefix);
        }
        let mut lines = Vec::new();
        for schedule in &schedules {
            lines.push(self.schedule_line(schedule, members).await);
        }
        strings::schedules_here(&lines)
    }

    /// One schedule as the room reads it.
    pub(super) async fn schedule_line(&self, schedule: &Schedule, members: &[Member]) -> String {
        let set = &schedule.set;
        let zone = schedule::zone_or_utc(&set.time_zone);
        let agent = (members.iter())
            .find(|m| m.agent_id == set.agent_id)
            .map_or(set.agent_id.to_string(), |m| m.display_name.clone());
        let owner = self.shown_name(schedule, &set.owner).await;
        strings::schedule_line(&ScheduleLine {
            id: schedule.id,
            when: &set.said,
            zone: &set.time_zone,
            agent: &agent,
            owner: &owner,
            prompt: &set.prompt,
            next: schedule.next_run.map(|at| schedule::shown(at, &zone)),
            runs: schedule.runs,
            last: schedule.last_outcome.as_deref(),
            stopped: schedule.stopped.as_deref(),
            thread_per_run: set.thread_per_run,
        })
    }
}
