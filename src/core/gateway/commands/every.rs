//! `!every WHEN PROMPT`: a prompt that runs by itself again and again (`docs/schedules.md`);
//! also how `!at` sets its one run (`at.rs`). The scheduler (`scheduler.rs`) runs them.

use std::sync::Arc;

use super::{Call, RoomCommand, Running};
use crate::core::command::registry::{AfterCrash, Applies, DuringTurn, Group, Scope, Spec, Who};
use crate::core::gateway::Gateway;
use crate::core::inbound::IncomingMessage;
use crate::core::routing::{self, Addressed, Member};
use crate::model::ids::AgentId;
use crate::model::schedule::{self, Parsed};
use crate::render::strings;
use crate::store::{NewSchedule, RoomRouting, now_ms};

pub(crate) static COMMAND: RoomCommand = RoomCommand {
    spec: Spec {
        name: "every",
        aliases: &[],
        args: "[here] [skip-missed] WHEN PROMPT",
        scope: Scope::Room,
        who: Who::Allowed,
        during_turn: DuringTurn::AtOnce,
        after_crash: AfterCrash::Reported,
        applies: Applies::Always,
        group: Group::Schedules,
        help: "ask an agent PROMPT again and again: WHEN is 2h, daily 09:00, weekdays 09:00, \
                   mondays 08:00 or cron 0 9 * * 1-5",
        details: "Each run is a prompt of yours, posted in the room: it answers in a thread of \
                      its own (`here`: in the room's conversation), with the usual cards and \
                      polls, and ends with a summary line. Times are in the configured time zone. \
                      A run due while Sidekicks was down runs once when it is back \
                      (`skip-missed`: it is skipped); a run is not started while the last one is \
                      still going. It stops when you may no longer prompt. Name the agent first \
                      in a room with several.",
    },
    run,
};

fn run<'a>(gateway: &'a Arc<Gateway>, call: Call<'a>) -> Running<'a> {
    Box::pin(async move {
        let text = (gateway.set_schedule(false, call.message, call.members, call.routing)).await;
        gateway.answer(call.message, text).await
    })
}

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
    /// `!every <when> <prompt>` or `!at <when> <prompt>`.
    pub(super) async fn set_schedule(
        &self,
        at: bool,
        message: &IncomingMessage,
        members: &[Member],
        routing: &RoomRouting,
    ) -> String {
        let word = if at { "at" } else { "every" };
        let (options, text) = options(after_command(&message.body));
        let settings = &self.schedules;
        let zone_name = self.room_zone(&message.room_id).await;
        let zone = schedule::zone_or_utc(&zone_name);
        let now = now_ms();
        let parsed = match at {
            true => schedule::parse_at(text, now, &zone),
            false => schedule::parse_every(text, settings.shortest_interval),
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
