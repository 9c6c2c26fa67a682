//! The scheduler: schedules set from rooms (`!every`, `!at`) run as prompts like a
//! person's (`docs/schedules.md`).
//!
//! Each second the due schedules are taken: a run is written once per due time, in the
//! transaction that moves its schedule on (`store/schedules.rs`). A run then goes through
//! three steps, each safe to do again after a crash: its message is posted (the prompt, in
//! the room, under a transaction ID made from the run's key, so the homeserver keeps one),
//! the message is admitted as a prompt of the schedule's owner (once: admission is keyed by
//! the event), and once its turn has ended the room gets a summary line. A run whose
//! schedule's owner may no longer prompt is not admitted, and the schedule stops.

use std::sync::Arc;
use std::time::Duration;

use super::Gateway;
use crate::core::inbound::IncomingMessage;
use crate::core::metrics::metrics;
use crate::core::settings_policy::Asking;
use crate::core::voice::{RoomVoice, txn};
use crate::model::OutMessage;
use crate::model::ids::{ConversationKey, EventId};
use crate::model::schedule;
use crate::render::strings;
use crate::store::{LogFailure, RunProgress, Schedule, ScheduleRun, now_ms};

/// How often due schedules and open runs are looked at.
const TICK: Duration = Duration::from_secs(1);
/// The first wait before a run's message that could not be posted is tried again; it
/// doubles each time, up to [`POST_RETRY_MAX`] (a room the agent is not in fails for
/// good, and a homeserver away for long comes back).
const POST_RETRY_FIRST: Duration = Duration::from_secs(5);
/// The longest wait between two tries of a run's message.
const POST_RETRY_MAX: Duration = Duration::from_secs(300);

/// How schedules behave: the `[schedules]` table of the config (its keys and defaults are
/// declared here and nowhere else).
#[derive(Debug, Clone, PartialEq, serde::Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ScheduleSettings {
    /// The time zone of the times people write (`!every weekdays 09:00`), an IANA name.
    pub time_zone: String,
    /// The shortest interval `!every` takes (`shortest_interval_secs`): a schedule is a
    /// turn of an agent each time, so not too often.
    #[serde(
        rename = "shortest_interval_secs",
        with = "crate::model::durations::secs"
    )]
    pub shortest_interval: Duration,
    /// The most schedules one person may have running at once, in all rooms together: each
    /// is a turn of an agent, as them, again and again.
    pub max_per_owner: u32,
}

impl ScheduleSettings {
    /// What is wrong with these settings, as (key in `[schedules]`, why).
    pub fn problems(&self) -> Vec<(&'static str, String)> {
        let mut out = Vec::new();
        if let Err(e) = schedule::zone(&self.time_zone) {
            out.push(("time_zone", e.to_string()));
        }
        if self.shortest_interval.is_zero() {
            out.push(("shortest_interval_secs", "must be at least 1".into()));
        }
        out
    }
}

impl Default for ScheduleSettings {
    fn default() -> Self {
        Self {
            time_zone: "UTC".into(),
            shortest_interval: Duration::from_secs(60),
            max_per_owner: 20,
        }
    }
}

impl Gateway {
    /// Runs the due schedules until shutdown.
    pub async fn run_schedules(self: Arc<Self>) {
        loop {
            self.schedules_tick(now_ms()).await;
            tokio::select! {
                _ = self.channels.shutting_down() => return,
                _ = tokio::time::sleep(TICK) => {}
            }
        }
    }

    /// Takes the schedules due at `now`, then moves every open run on by a step.
    pub(super) async fn schedules_tick(&self, now: i64) {
        let due = match self.store.due_schedules(now).await {
            Ok(due) => due,
            Err(e) => {
                tracing::error!(error = %e, "could not read the due schedules");
                return;
            }
        };
        for schedule in due {
            self.take_due(&schedule, now).await;
        }
        let open = match self.store.open_runs().await {
            Ok(open) => open,
            Err(e) => {
                tracing::error!(error = %e, "could not read the schedules' runs");
                return;
            }
        };
        for (schedule, run) in open {
            self.step_run(&schedule, run).await;
        }
    }

    /// Takes the run of `schedule` that is due: to run, or ended at once (skipped, the
    /// previous run still going), or the schedule stopped (its owner lost their rights).
    async fn take_due(&self, schedule: &Schedule, now: i64) {
        let set = &schedule.set;
        let Some(due) = schedule.next_run else {
            return;
        };
        if let Some((why, text)) = self.owner_gone(schedule).await {
            if let Err(e) = self.store.stop_schedule(schedule.id, &why).await {
                tracing::error!(schedule = schedule.id, error = %e, "could not stop a schedule");
                return;
            }
            tracing::info!(schedule = schedule.id, owner = %set.owner, why, "schedule stopped");
            self.schedule_notice(
                schedule,
                &txn("schedule-stopped", &[&schedule.id.to_string()]),
                text,
                None,
            )
            .await;
            return;
        }
        let zone = schedule::zone_or_utc(&set.time_zone);
        let next = set.when.next(due, now, &zone);
        let running = self.store.schedule_is_running(schedule.id).await;
        let outcome = match running {
            Ok(true) => Some(strings::RUN_OVERLAPPED),
            Ok(false) if set.skip_missed && due < self.started_at => Some(strings::RUN_SKIPPED),
            Ok(false) => None,
            Err(e) => {
                tracing::error!(schedule = schedule.id, error = %e, "could not read a schedule's runs");
                return;
            }
        };
        let run = match self.store.take_run(schedule.id, due, next, outcome).await {
            Ok(Some(run)) => run,
            Ok(None) => return,
            Err(e) => {
                tracing::error!(schedule = schedule.id, error = %e, "could not take a schedule's run");
                return;
            }
        };
        let Some(outcome) = outcome else {
            tracing::info!(
                schedule = schedule.id,
                run = run.number,
                "a scheduled run is due"
            );
            return;
        };
        tracing::info!(
            schedule = schedule.id,
            run = run.number,
            outcome,
            "a scheduled run was not started"
        );
        metrics().schedule_run(&set.agent_id, outcome_label(outcome));
        let text = strings::run_not_started(schedule.id, run.number, outcome);
        let key = txn(
            "schedule-not-run",
            &[&schedule.id.to_string(), &due.to_string()],
        );
        self.schedule_notice(schedule, &key, text, None).await;
    }

    /// Why `schedule` may no longer run as its owner, if it may not: they may no longer
    /// prompt, or (a schedule set in the room, not a webhook's) they left the room or were
    /// kicked or banned from it. The reason kept for `!schedules`, and what the room is told.
    /// A room whose members cannot be read now (the homeserver away) is asked again at the
    /// next run.
    async fn owner_gone(&self, schedule: &Schedule) -> Option<(String, String)> {
        let set = &schedule.set;
        if !self.people.may_prompt(&set.owner) {
            let owner = self.shown_name(schedule, &set.owner).await;
            let text = match &set.source {
                Some(hook) => strings::webhook_not_run(hook, &owner),
                None => strings::schedule_stopped(schedule.id, &owner),
            };
            return Some((strings::owner_lost_rights(&owner), text));
        }
        if set.source.is_some() {
            return None;
        }
        let ctx = self.agents.get(&set.agent_id)?;
        let members = ctx.chat.members(&set.room_id).await.ok()?;
        let present = members.iter().any(|m| m.user_id == set.owner && m.joined);
        if present {
            return None;
        }
        let owner = self.shown_name(schedule, &set.owner).await;
        let text = strings::schedule_stopped_owner_left(schedule.id, &owner);
        Some((strings::owner_left_room(&owner), text))
    }

    /// The mode a run answered in the room's conversation (`here`) would act in without
    /// asking, if it would and nobody who may choose that answers for it: a webhook's
    /// prompt is a sender's text, never run unasked (it may make an agent propose, not act);
    /// a schedule's is its owner's, run unasked only when they are an admin (who may choose
    /// such a mode). A run in a thread of its own is a new conversation, put in an asking
    /// mode.
    async fn would_act_unasked(&self, schedule: &Schedule) -> Option<String> {
        let set = &schedule.set;
        if set.thread_per_run || (set.source.is_none() && self.people.is_admin(&set.owner)) {
            return None;
        }
        let ctx = self.agents.get(&set.agent_id)?;
        let conversation = ConversationKey::new(set.room_id.clone(), set.agent_id.clone());
        let kept = (self.store.kept_mode(&conversation).await)
            .or_log("could not read the conversation's mode")
            .flatten()?;
        let rules = ctx.settings.rules(&ctx.agent.known_modes());
        (rules.asking(&kept.mode) == Asking::DoesNotAsk).then_some(kept.mode)
    }

    /// Moves an open run on by one step: its message posted, admitted as its owner's
    /// prompt, or, once its turn ended, reported.
    async fn step_run(&self, schedule: &Schedule, run: ScheduleRun) {
        let set = &schedule.set;
        let Some(event) = run.event_id.clone() else {
            if self.may_post(&run) {
                self.post_run(schedule, &run).await;
            }
            return;
        };
        let progress = match self.store.run_progress(&set.agent_id, &event).await {
            Ok(progress) => progress,
            Err(e) => {
                tracing::error!(schedule = schedule.id, error = %e, "could not read a run's progress");
                return;
            }
        };
        match progress {
            RunProgress::NotAdmitted if !self.people.may_prompt(&set.owner) => {
                let owner = self.shown_name(schedule, &set.owner).await;
                self.end_run(schedule, &run, &strings::owner_lost_rights(&owner))
                    .await;
            }
            RunProgress::NotAdmitted => self.admit_run(schedule, &run, &event).await,
            RunProgress::Going => {}
            RunProgress::Ended(ended) => {
                let outcome = strings::run_outcome(ended.stop_reason.as_deref(), ended.refused);
                self.end_run(schedule, &run, &outcome).await;
            }
        }
    }

    /// Posts the run's message, the prompt its agent answers.
    async fn post_run(&self, schedule: &Schedule, run: &ScheduleRun) {
        let set = &schedule.set;
        let owner = self.shown_name(schedule, &set.owner).await;
        let text = match &set.source {
            Some(hook) => strings::webhook_message(hook, &owner, &set.prompt),
            None => strings::run_message(schedule.id, run.number, &owner, &set.prompt),
        };
        let key = txn(
            "schedule-run",
            &[&schedule.id.to_string(), &run.due_at.to_string()],
        );
        let Some(ctx) = self.agents.get(&set.agent_id) else {
            tracing::warn!(schedule = schedule.id, agent = %set.agent_id, "a schedule of an agent this gateway no longer runs");
            self.end_run(schedule, run, "not run: the agent is gone")
                .await;
            return;
        };
        let voice = RoomVoice::new(&*ctx.chat, &set.agent_id, &set.room_id);
        let mut message = OutMessage::notice(text);
        message.mentions = vec![set.owner.clone()];
        let Some(event) = voice.say(&key, &message).await else {
            // Said again later, under the same transaction ID.
            self.post_failed(schedule, run);
            return;
        };
        self.post_retries
            .lock()
            .expect("retries poisoned")
            .remove(&(run.schedule_id, run.due_at));
        if let Err(e) = self.store.set_run_event(run, &event).await {
            tracing::error!(schedule = schedule.id, error = %e, "could not note a run's message");
            return;
        }
        self.admit_run(schedule, run, &event).await;
    }

    /// Admits the run's message (`event`) as its owner's prompt, unless it would act
    /// without asking ([`Gateway::would_act_unasked`]): then it ends, saying why.
    async fn admit_run(&self, schedule: &Schedule, run: &ScheduleRun, event: &EventId) {
        match self.would_act_unasked(schedule).await {
            Some(mode) => {
                let outcome = strings::run_would_act_unasked(&mode);
                self.end_run(schedule, run, &outcome).await;
            }
            None => self.prompt(self.run_prompt(schedule, event).await).await,
        }
    }

    /// Whether the run's message may be tried now (it is not waiting after a failure).
    pub(super) fn may_post(&self, run: &ScheduleRun) -> bool {
        let retries = self.post_retries.lock().expect("retries poisoned");
        (retries.get(&(run.schedule_id, run.due_at)))
            .is_none_or(|(next, _)| *next <= std::time::Instant::now())
    }

    /// The run's message could not be posted: it is tried again after a wait that doubles.
    pub(super) fn post_failed(&self, schedule: &Schedule, run: &ScheduleRun) {
        let mut retries = self.post_retries.lock().expect("retries poisoned");
        let key = (run.schedule_id, run.due_at);
        let wait = (retries.get(&key)).map_or(POST_RETRY_FIRST, |(_, last)| {
            (*last * 2).min(POST_RETRY_MAX)
        });
        tracing::warn!(schedule = schedule.id, room = %schedule.set.room_id, retry_in_secs = wait.as_secs(), "a scheduled run's message could not be posted");
        retries.insert(key, (std::time::Instant::now() + wait, wait));
    }

    /// The run's message as a prompt of the schedule's owner: in a thread of its own
    /// (rooted at the message) or in the room's conversation. The gateway's own prompt is
    /// never taken for history: it is stamped no earlier than the agent's arrival in the
    /// room on record (recorded now if there is none; one recorded by a clock ahead of
    /// this one, another host's or this one's before it was set back, is later than now).
    async fn run_prompt(&self, schedule: &Schedule, event: &EventId) -> IncomingMessage {
        let set = &schedule.set;
        let now = now_ms();
        let conversation = ConversationKey::new(set.room_id.clone(), set.agent_id.clone());
        let arrived = (self.store.member_since(&conversation, now).await)
            .or_log("could not read when the agent arrived in the room")
            .unwrap_or(now);
        IncomingMessage {
            agent_id: set.agent_id.clone(),
            room_id: set.room_id.clone(),
            event_id: event.clone(),
            sender: set.owner.clone(),
            body: set.prompt.clone(),
            timestamp_ms: now.max(arrived) as u64,
            thread: set.thread_per_run.then(|| event.clone()),
            ..IncomingMessage::default()
        }
    }

    /// Ends a run with `outcome`, and tells the room, under its answer.
    async fn end_run(&self, schedule: &Schedule, run: &ScheduleRun, outcome: &str) {
        if let Err(e) = self.store.end_run(run, outcome).await {
            tracing::error!(schedule = schedule.id, error = %e, "could not end a run");
            return;
        }
        tracing::info!(
            schedule = schedule.id,
            run = run.number,
            outcome,
            "a scheduled run ended"
        );
        metrics().schedule_run(&schedule.set.agent_id, outcome_label(outcome));
        let zone = schedule::zone_or_utc(&schedule.set.time_zone);
        let next = match self.store.schedule(schedule.id).await {
            Ok(Some(now)) => now.next_run.filter(|_| now.stopped.is_none()),
            _ => None,
        };
        let next = next.map(|at| schedule::shown(at, &zone));
        let took = (now_ms() - run.due_at).max(0) / 1000;
        let text = match &schedule.set.source {
            Some(hook) => strings::webhook_ended(hook, outcome, took),
            None => strings::run_ended(schedule.id, run.number, outcome, took, next.as_deref()),
        };
        let thread = (run.event_id.clone()).filter(|_| schedule.set.thread_per_run);
        let key = txn(
            "schedule-ended",
            &[&schedule.id.to_string(), &run.due_at.to_string()],
        );
        self.schedule_notice(schedule, &key, text, thread).await;
    }

    /// Posts `text` in the schedule's room (in `thread` if given), as its agent.
    async fn schedule_notice(
        &self,
        schedule: &Schedule,
        key: &str,
        text: String,
        thread: Option<EventId>,
    ) {
        let set = &schedule.set;
        let Some(ctx) = self.agents.get(&set.agent_id) else {
            return;
        };
        RoomVoice::new(&*ctx.chat, &set.agent_id, &set.room_id)
            .say(key, &OutMessage::notice(text).in_thread(thread))
            .await;
    }

    /// How the room shows `user`, as the schedule's agent sees it.
    pub(super) async fn shown_name(
        &self,
        schedule: &Schedule,
        user: &crate::model::ids::UserId,
    ) -> String {
        match self.agents.get(&schedule.set.agent_id) {
            Some(ctx) => ctx.name_in(&schedule.set.room_id, user).await,
            None => user.to_string(),
        }
    }
}

/// A run's outcome as a metric label: one of a few words, never the free text.
fn outcome_label(outcome: &str) -> &'static str {
    match outcome {
        o if o.starts_with("answered") && !o.contains("refused") => "answered",
        "stopped" => "stopped",
        o if o == strings::RUN_OVERLAPPED => "overlapped",
        o if o == strings::RUN_SKIPPED => "skipped",
        o if o.contains("may no longer prompt") => "owner_lost_rights",
        o if o.contains("acts without asking") => "would_act_unasked",
        o if o.contains("refused") => "refused",
        _ => "other",
    }
}
