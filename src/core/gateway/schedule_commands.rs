//! `!every`, `!at`, `!schedules` and `!unschedule`: schedules set, listed and removed from
//! the room (`docs/schedules.md`). The scheduler (`scheduler.rs`) runs them.

use super::Gateway;
use crate::core::command::Command;
use crate::core::command::registry::Kind;
use crate::core::inbound::IncomingMessage;
use crate::core::routing::{self, Addressed, Member};
use crate::model::ids::AgentId;
use crate::model::schedule::{self, Parsed};
use crate::render::strings::{self, ScheduleLine};
use crate::store::{NewSchedule, RoomRouting, Schedule, now_ms};

/// Options written before the time: `here` (answers in the room's conversation instead of
/// a thread per run), `skip-missed` (a run due while Sidekicks was down is skipped).
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
struct Options {
    here: bool,
    skip_missed: bool,
}

/// The options at the start of `text`, and the rest.
fn options(text: &str) -> (Options, &str) {
    let mut options = Options::default();
    let mut rest = text.trim_start();
    loop {
        let (word, after) = rest.split_once(char::is_whitespace).unwrap_or((rest, ""));
        match word.to_ascii_lowercase().as_str() {
            "here" => options.here = true,
            "skip-missed" => options.skip_missed = true,
            _ => return (options, rest),
        }
        rest = after.trim_start();
    }
}

/// What follows the command's word in `body`, as written (line breaks kept).
fn after_command(body: &str) -> &str {
    let body = body.trim_start();
    body.split_once(char::is_whitespace)
        .map_or("", |(_, rest)| rest.trim())
}

impl Gateway {
    /// Answers `!every`, `!at`, `!schedules` or `!unschedule`.
    pub(super) async fn schedule_command(
        &self,
        kind: Kind,
        command: &Command,
        message: &IncomingMessage,
        members: &[Member],
        routing: &RoomRouting,
    ) -> String {
        match kind {
            Kind::Every | Kind::At => self.set_schedule(kind, message, members, routing).await,
            Kind::Schedules => self.list_schedules(message, members).await,
            Kind::TimeZone => self.time_zone_command(command, message).await,
            _ => self.unschedule(command, message).await,
        }
    }

    /// `!every <when> <prompt>` or `!at <when> <prompt>`.
    async fn set_schedule(
        &self,
        kind: Kind,
        message: &IncomingMessage,
        members: &[Member],
        routing: &RoomRouting,
    ) -> String {
        let word = if kind == Kind::At { "at" } else { "every" };
        let (options, text) = options(after_command(&message.body));
        let settings = &self.schedules;
        let zone_name = self.room_zone(&message.room_id).await;
        let zone = schedule::zone_or_utc(&zone_name);
        let now = now_ms();
        let parsed = match kind {
            Kind::At => schedule::parse_at(text, now, &zone),
            _ => schedule::parse_every(text, settings.shortest_interval),
        };
        let Parsed { when, said, prompt } = match parsed {
            Ok(parsed) => parsed,
            Err(e) => return strings::schedule_not_understood(&self.prefix, word, &e.to_string()),
        };
        let Some((agent_id, prompt)) = self.schedule_agent(&prompt, members, routing) else {
            let lines = self.agent_lines(members, &Default::default());
            return strings::schedule_needs_one_agent(&lines);
        };
        let Some(next_run) = when.next(now, now, &zone) else {
            return strings::schedule_not_understood(&self.prefix, word, "it never runs");
        };
        let max = settings.max_per_owner;
        match self.store.live_schedules_of(&message.sender).await {
            Ok(count) if count >= i64::from(max) => {
                return strings::too_many_schedules(&self.prefix, max);
            }
            Ok(_) => {}
            Err(e) => {
                tracing::error!(error = %e, "could not count a person's schedules");
                return strings::store_failed("the schedule");
            }
        }
        let new = NewSchedule {
            room_id: message.room_id.clone(),
            agent_id,
            owner: message.sender.clone(),
            when,
            said,
            time_zone: zone_name,
            prompt,
            thread_per_run: !options.here,
            skip_missed: options.skip_missed,
            next_run,
            source: None,
        };
        match self.store.add_schedule(&new).await {
            Ok(id) => {
                tracing::info!(schedule = id, room = %new.room_id, agent = %new.agent_id, owner = %new.owner, "schedule set");
                let stored = self.store.schedule(id).await.ok().flatten();
                let line = match &stored {
                    Some(s) => self.schedule_line(s, members).await,
                    None => String::new(),
                };
                strings::schedule_set(&line, &self.prefix, id)
            }
            Err(e) => {
                tracing::error!(error = %e, "could not store a schedule");
                strings::store_failed("the schedule")
            }
        }
    }

    /// The one agent a scheduled prompt is for, and the prompt without its address: the
    /// agent it names, else the room's default, else the room's only agent.
    fn schedule_agent(
        &self,
        prompt: &str,
        members: &[Member],
        routing: &RoomRouting,
    ) -> Option<(AgentId, String)> {
        let addressed = Addressed {
            body: prompt,
            mentions: &[],
            reply_to_sender: None,
        };
        let addressing = routing::addressing(addressed, members);
        let targets = routing::targets(&addressing, members, routing.default_agent.as_ref());
        let agent = match (targets.as_slice(), members) {
            ([one], _) => one.clone(),
            ([], [only]) => only.agent_id.clone(),
            _ => return None,
        };
        let text = addressing.text.trim().to_owned();
        (!text.is_empty()).then_some((agent, text))
    }

    /// The time zone of the room's schedules: the one `!timezone` chose, else the config's.
    async fn room_zone(&self, room: &crate::model::ids::RoomId) -> String {
        match self.store.room_time_zone(room).await {
            Ok(Some(zone)) => zone,
            Ok(None) => self.schedules.time_zone.clone(),
            Err(e) => {
                tracing::error!(error = %e, "could not read the room's time zone");
                self.schedules.time_zone.clone()
            }
        }
    }

    /// `!timezone [ZONE]`.
    async fn time_zone_command(&self, command: &Command, message: &IncomingMessage) -> String {
        let Some(word) = command.arg(0) else {
            let zone = self.room_zone(&message.room_id).await;
            return strings::time_zone_is(&self.prefix, &zone);
        };
        // The zone database's own spelling (`europe/paris` is `Europe/Paris`).
        let zone = match schedule::zone(word) {
            Ok(zone) => zone.iana_name().unwrap_or(word).to_owned(),
            Err(e) => return format!("⚠️ {e}."),
        };
        match self.store.set_room_time_zone(&message.room_id, &zone).await {
            Ok(()) => strings::time_zone_set(&zone),
            Err(e) => {
                tracing::error!(error = %e, "could not save the room's time zone");
                strings::SETTING_NOT_SAVED.to_owned()
            }
        }
    }

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

    /// `!unschedule ID`.
    async fn unschedule(&self, command: &Command, message: &IncomingMessage) -> String {
        let word = command.arg(0).unwrap_or("").trim_start_matches('#');
        let Ok(id) = word.parse::<i64>() else {
            return strings::no_such_schedule(&self.prefix, word);
        };
        match self.store.remove_schedule(&message.room_id, id).await {
            Ok(true) => {
                tracing::info!(schedule = id, by = %message.sender, "schedule removed");
                strings::unscheduled(id)
            }
            Ok(false) => strings::no_such_schedule(&self.prefix, word),
            Err(e) => {
                tracing::error!(error = %e, "could not remove a schedule");
                strings::store_failed("the schedule")
            }
        }
    }

    /// One schedule as the room reads it.
    async fn schedule_line(&self, schedule: &Schedule, members: &[Member]) -> String {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn options_come_before_the_time_and_the_prompt_keeps_its_lines() {
        let table = [
            (
                "weekdays 09:00 run",
                Options::default(),
                "weekdays 09:00 run",
            ),
            (
                "here 2h run",
                Options {
                    here: true,
                    skip_missed: false,
                },
                "2h run",
            ),
            (
                "skip-missed Here 2h run",
                Options {
                    here: true,
                    skip_missed: true,
                },
                "2h run",
            ),
        ];
        for (text, expected, rest) in table {
            assert_eq!(options(text), (expected, rest), "{text}");
        }
        assert_eq!(
            after_command("!every 2h run\nthe tests"),
            "2h run\nthe tests"
        );
        assert_eq!(after_command("!schedules"), "");
    }
}
