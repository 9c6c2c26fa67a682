//! Schedules (`!every`, `!at`) and their runs: the durable side of the scheduler
//! (`docs/schedules.md`). A run is taken once per due time, in the transaction that moves
//! its schedule on; what becomes of it afterwards is read from the inbox and the transcript
//! (the run's message is a prompt like a person's).

use super::columns::Flag;
use super::{Store, StoreError, now_ms};
use crate::model::ids::{AgentId, ConversationKey, EventId, RoomId, UserId};
use crate::model::schedule::When;

/// A schedule as it is set.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewSchedule {
    /// The room it prompts in.
    pub room_id: RoomId,
    /// The agent it prompts.
    pub agent_id: AgentId,
    /// Who set it: it runs with their rights.
    pub owner: UserId,
    /// When it runs.
    pub when: When,
    /// When, as they wrote it.
    pub said: String,
    /// The time zone its times are in.
    pub time_zone: String,
    /// What the agent is asked each time.
    pub prompt: String,
    /// Whether each run answers in a thread of its own (else in the room's conversation).
    pub thread_per_run: bool,
    /// Whether a run due while the gateway was down is skipped (else it runs once at start).
    pub skip_missed: bool,
    /// Its first run's due time (ms).
    pub next_run: i64,
    /// Where it comes from: `None`, set in the room; `Some(NAME)`, a delivery of webhook
    /// NAME (not listed by `!schedules`).
    pub source: Option<String>,
}

/// A schedule as stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Schedule {
    /// Its number, shown in the room (`!unschedule ID`).
    pub id: i64,
    /// What was set.
    pub set: NewSchedule,
    /// When it was set (ms).
    pub set_at: i64,
    /// The next run's due time; `None`: it will not run again.
    pub next_run: Option<i64>,
    /// How many runs it had.
    pub runs: i64,
    /// How its last run ended, in words.
    pub last_outcome: Option<String>,
    /// Why it stopped, if it did (its owner lost their rights).
    pub stopped: Option<String>,
}

/// One run of a schedule.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScheduleRun {
    /// Its schedule.
    pub schedule_id: i64,
    /// The due time it is the run of (ms): with the schedule, its key.
    pub due_at: i64,
    /// Its number among the schedule's runs, from 1.
    pub number: i64,
    /// Its message, once posted: the prompt the agent answers.
    pub event_id: Option<EventId>,
}

/// Where a run's prompt stands, read from the inbox and the transcript.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RunProgress {
    /// Not admitted yet.
    NotAdmitted,
    /// Admitted, waiting for its turn or in it.
    Going,
    /// Its turn ended.
    Ended(TurnOutcome),
}

/// How a run's turn ended.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TurnOutcome {
    /// The reply's stop reason; `None`: it ended without a reply.
    pub stop_reason: Option<String>,
    /// Tool calls its polls refused (a refusal, or nobody answering in time).
    pub refused: u32,
}

/// A row of `schedules`, as [`select_schedules`] reads it.
#[derive(sqlx::FromRow)]
struct ScheduleRow {
    id: i64,
    room_id: RoomId,
    agent_id: AgentId,
    owner: UserId,
    kind: String,
    spec: String,
    said: String,
    time_zone: String,
    prompt: String,
    #[sqlx(try_from = "Flag")]
    thread_per_run: bool,
    #[sqlx(try_from = "Flag")]
    skip_missed: bool,
    set_at: i64,
    next_run: Option<i64>,
    runs: i64,
    last_outcome: Option<String>,
    stopped: Option<String>,
    source: Option<String>,
}

/// `SELECT` of a schedule's columns, as [`ScheduleRow`] reads them.
macro_rules! select_schedules {
    () => {
        "SELECT id, room_id, agent_id, owner, kind, spec, said, time_zone, prompt,
         thread_per_run, skip_missed, set_at, next_run, runs, last_outcome, stopped,
         source FROM schedules "
    };
}

fn schedule(row: ScheduleRow) -> Option<Schedule> {
    Some(Schedule {
        id: row.id,
        set: NewSchedule {
            room_id: row.room_id,
            agent_id: row.agent_id,
            owner: row.owner,
            when: When::from_row(&row.kind, &row.spec)?,
            said: row.said,
            time_zone: row.time_zone,
            prompt: row.prompt,
            thread_per_run: row.thread_per_run,
            skip_missed: row.skip_missed,
            next_run: row.next_run.unwrap_or(row.set_at),
            source: (row.source).and_then(|s| s.strip_prefix("webhook:").map(str::to_owned)),
        },
        set_at: row.set_at,
        next_run: row.next_run,
        runs: row.runs,
        last_outcome: row.last_outcome,
        stopped: row.stopped,
    })
}

impl Store {
    /// Sets a schedule; returns its ID.
    pub async fn add_schedule(&self, new: &NewSchedule) -> Result<i64, StoreError> {
        let mut tx = self.pool.begin().await?;
        let id = insert_schedule(&mut tx, new).await?;
        tx.commit().await?;
        Ok(id)
    }

    /// Stores a delivery of webhook `webhook`, known by each of `keys` (the sender's ID,
    /// what its signature covers), as the one-off schedule `new`, once: `None` when any of
    /// its keys was taken before (a replay, under the same ID or another).
    pub async fn add_delivery(
        &self,
        webhook: &str,
        keys: &[&str],
        new: &NewSchedule,
    ) -> Result<Option<i64>, StoreError> {
        // The schedule is written first and rolled back with the transaction when the
        // delivery was taken before under any of its keys.
        let mut tx = self.pool.begin().await?;
        let id = insert_schedule(&mut tx, new).await?;
        for key in keys {
            let taken = sqlx::query(
                "INSERT INTO webhook_deliveries (webhook, delivery_id, schedule_id, received_at)
                 VALUES ($1, $2, $3, $4)
                 ON CONFLICT DO NOTHING",
            )
            .bind(webhook)
            .bind(key)
            .bind(id)
            .bind(now_ms())
            .execute(&mut *tx)
            .await?;
            if taken.rows_affected() != 1 {
                return Ok(None);
            }
        }
        tx.commit().await?;
        Ok(Some(id))
    }

    /// The schedules of `room` not removed, oldest first.
    pub async fn schedules_in(&self, room: &RoomId) -> Result<Vec<Schedule>, StoreError> {
        let rows: Vec<ScheduleRow> = sqlx::query_as(concat!(
            select_schedules!(),
            "WHERE room_id = $1 AND removed = 0 AND source IS NULL
             ORDER BY id"
        ))
        .bind(room)
        .fetch_all(&self.pool)
        .await?;
        Ok(rows.into_iter().filter_map(schedule).collect())
    }

    /// How many schedules `owner` has that still run (not removed, stopped or ended), in
    /// every room: what `[schedules] max_per_owner` bounds.
    pub async fn live_schedules_of(&self, owner: &UserId) -> Result<i64, StoreError> {
        let (count,): (i64,) = sqlx::query_as(
            "SELECT COUNT(*) FROM schedules
             WHERE owner = $1 AND removed = 0 AND stopped IS NULL AND next_run IS NOT NULL
             AND source IS NULL",
        )
        .bind(owner)
        .fetch_one(&self.pool)
        .await?;
        Ok(count)
    }

    /// One schedule, removed or not.
    pub async fn schedule(&self, id: i64) -> Result<Option<Schedule>, StoreError> {
        let row: Option<ScheduleRow> =
            sqlx::query_as(concat!(select_schedules!(), "WHERE id = $1"))
                .bind(id)
                .fetch_optional(&self.pool)
                .await?;
        Ok(row.and_then(schedule))
    }

    /// The schedules whose next run is due at `now`, the most overdue first.
    pub async fn due_schedules(&self, now: i64) -> Result<Vec<Schedule>, StoreError> {
        let rows: Vec<ScheduleRow> = sqlx::query_as(concat!(
            select_schedules!(),
            "WHERE next_run IS NOT NULL AND next_run <= $1 AND removed = 0 AND stopped IS NULL
             ORDER BY next_run"
        ))
        .bind(now)
        .fetch_all(&self.pool)
        .await?;
        Ok(rows.into_iter().filter_map(schedule).collect())
    }

    /// The earliest next run of any schedule, to sleep until.
    pub async fn next_schedule_run(&self) -> Result<Option<i64>, StoreError> {
        let (next,): (Option<i64>,) = sqlx::query_as(
            "SELECT MIN(next_run) FROM schedules WHERE removed = 0 AND stopped IS NULL",
        )
        .fetch_one(&self.pool)
        .await?;
        Ok(next)
    }

    /// Removes schedule `id` of `room` (`!unschedule`); whether there was one.
    pub async fn remove_schedule(&self, room: &RoomId, id: i64) -> Result<bool, StoreError> {
        let done = sqlx::query(
            "UPDATE schedules SET removed = 1, next_run = NULL
             WHERE id = $1 AND room_id = $2 AND removed = 0",
        )
        .bind(id)
        .bind(room)
        .execute(&self.pool)
        .await?;
        Ok(done.rows_affected() == 1)
    }

    /// Stops schedule `id` for `why` (its owner lost their rights): it runs no more.
    pub async fn stop_schedule(&self, id: i64, why: &str) -> Result<(), StoreError> {
        sqlx::query("UPDATE schedules SET stopped = $1, next_run = NULL WHERE id = $2")
            .bind(why)
            .bind(id)
            .execute(&self.pool)
            .await?;
        Ok(())
    }

    /// Takes the run of schedule `id` due at `due_at`, once: in one transaction the run is
    /// written (ended at once with `outcome` when it is not to run: skipped, or the last
    /// run still going) and the schedule moved on to `next`. `None` when that run was
    /// already taken or the schedule moved on meanwhile.
    pub async fn take_run(
        &self,
        id: i64,
        due_at: i64,
        next: Option<i64>,
        outcome: Option<&str>,
    ) -> Result<Option<ScheduleRun>, StoreError> {
        let mut tx = self.pool.begin().await?;
        let moved = sqlx::query(
            "UPDATE schedules SET next_run = $1, runs = runs + 1,
             last_outcome = COALESCE($2, last_outcome)
             WHERE id = $3 AND next_run = $4 AND removed = 0 AND stopped IS NULL",
        )
        .bind(next)
        .bind(outcome)
        .bind(id)
        .bind(due_at)
        .execute(&mut *tx)
        .await?;
        if moved.rows_affected() != 1 {
            return Ok(None);
        }
        let now = now_ms();
        let (number,): (i64,) = sqlx::query_as(
            "INSERT INTO schedule_runs (schedule_id, due_at, number, outcome, taken_at, ended_at)
             VALUES ($1, $2, (SELECT runs FROM schedules WHERE id = $1), $3, $4,
                     CASE WHEN $3 IS NULL THEN NULL ELSE $4 END)
             RETURNING number",
        )
        .bind(id)
        .bind(due_at)
        .bind(outcome)
        .bind(now)
        .fetch_one(&mut *tx)
        .await?;
        tx.commit().await?;
        Ok(Some(ScheduleRun {
            schedule_id: id,
            due_at,
            number,
            event_id: None,
        }))
    }

    /// The runs that have not ended, with their schedules, oldest first.
    pub async fn open_runs(&self) -> Result<Vec<(Schedule, ScheduleRun)>, StoreError> {
        let rows: Vec<(i64, i64, i64, Option<EventId>)> = sqlx::query_as(
            "SELECT schedule_id, due_at, number, event_id FROM schedule_runs
             WHERE outcome IS NULL ORDER BY taken_at, schedule_id",
        )
        .fetch_all(&self.pool)
        .await?;
        let mut open = Vec::new();
        for (schedule_id, due_at, number, event_id) in rows {
            if let Some(schedule) = self.schedule(schedule_id).await? {
                let run = ScheduleRun {
                    schedule_id,
                    due_at,
                    number,
                    event_id,
                };
                open.push((schedule, run));
            }
        }
        Ok(open)
    }

    /// Whether schedule `id` has a run that has not ended.
    pub async fn schedule_is_running(&self, id: i64) -> Result<bool, StoreError> {
        let (n,): (i64,) = sqlx::query_as(
            "SELECT COUNT(*) FROM schedule_runs WHERE schedule_id = $1 AND outcome IS NULL",
        )
        .bind(id)
        .fetch_one(&self.pool)
        .await?;
        Ok(n > 0)
    }

    /// Notes the message a run posted (its prompt).
    pub async fn set_run_event(
        &self,
        run: &ScheduleRun,
        event: &EventId,
    ) -> Result<(), StoreError> {
        sqlx::query(
            "UPDATE schedule_runs SET event_id = $1 WHERE schedule_id = $2 AND due_at = $3",
        )
        .bind(event)
        .bind(run.schedule_id)
        .bind(run.due_at)
        .execute(&self.pool)
        .await?;
        Ok(())
    }

    /// Ends a run with `outcome` (in words), also the schedule's last outcome.
    pub async fn end_run(&self, run: &ScheduleRun, outcome: &str) -> Result<(), StoreError> {
        let mut tx = self.pool.begin().await?;
        sqlx::query(
            "UPDATE schedule_runs SET outcome = $1, ended_at = $2
             WHERE schedule_id = $3 AND due_at = $4",
        )
        .bind(outcome)
        .bind(now_ms())
        .bind(run.schedule_id)
        .bind(run.due_at)
        .execute(&mut *tx)
        .await?;
        sqlx::query("UPDATE schedules SET last_outcome = $1 WHERE id = $2")
            .bind(outcome)
            .bind(run.schedule_id)
            .execute(&mut *tx)
            .await?;
        tx.commit().await?;
        Ok(())
    }

    /// Where the prompt `event` of `agent` stands: not admitted, waiting or in its turn, or
    /// answered (the stop reason of the reply after it in the transcript).
    pub async fn run_progress(
        &self,
        agent: &AgentId,
        event: &EventId,
    ) -> Result<RunProgress, StoreError> {
        let (handled, waiting, in_turn): (i64, i64, i64) = sqlx::query_as(
            "SELECT
               (SELECT COUNT(*) FROM handled_events WHERE agent_id = $1 AND event_id = $2),
               (SELECT COUNT(*) FROM pending_inputs WHERE agent_id = $1 AND event_id = $2),
               (SELECT COUNT(*) FROM unfinished_turns WHERE agent_id = $1 AND prompt_event_id = $2)",
        )
        .bind(agent)
        .bind(event)
        .fetch_one(&self.pool)
        .await?;
        if handled == 0 {
            return Ok(RunProgress::NotAdmitted);
        }
        if waiting + in_turn > 0 {
            return Ok(RunProgress::Going);
        }
        let reply: Option<(Option<String>,)> = sqlx::query_as(
            "SELECT a.stop_reason FROM transcript u JOIN transcript a
               ON a.room_id = u.room_id AND a.agent_id = u.agent_id
              AND a.thread_id = u.thread_id AND a.id > u.id AND a.role = 'agent'
             WHERE u.agent_id = $1 AND u.event_id = $2 AND u.role = 'user'
             ORDER BY a.id LIMIT 1",
        )
        .bind(agent)
        .bind(event)
        .fetch_optional(&self.pool)
        .await?;
        let refused: Option<(i64,)> = sqlx::query_as(
            "SELECT refused FROM turn_refusals WHERE agent_id = $1 AND prompt_event_id = $2",
        )
        .bind(agent)
        .bind(event)
        .fetch_optional(&self.pool)
        .await?;
        Ok(RunProgress::Ended(TurnOutcome {
            stop_reason: reply.and_then(|(r,)| r),
            refused: refused.map_or(0, |(n,)| n as u32),
        }))
    }

    /// Notes that the running turn of `conversation` had `refused` tool calls refused by
    /// its polls (before its end is recorded, while its prompt is known).
    pub async fn note_refusals(
        &self,
        conversation: &ConversationKey,
        refused: u32,
    ) -> Result<(), StoreError> {
        sqlx::query(
            "INSERT INTO turn_refusals (agent_id, prompt_event_id, refused, noted_at)
             SELECT agent_id, prompt_event_id, $4, $5 FROM unfinished_turns
             WHERE room_id = $1 AND agent_id = $2 AND thread_id = $3
             ON CONFLICT (agent_id, prompt_event_id) DO UPDATE SET
             refused = excluded.refused, noted_at = excluded.noted_at",
        )
        .bind(&conversation.room)
        .bind(&conversation.agent)
        .bind(conversation.thread_id())
        .bind(refused as i64)
        .bind(now_ms())
        .execute(&self.pool)
        .await?;
        Ok(())
    }
}

/// Writes schedule `new` in `tx`; returns its ID.
async fn insert_schedule(
    tx: &mut sqlx::Transaction<'_, sqlx::Any>,
    new: &NewSchedule,
) -> Result<i64, StoreError> {
    let (kind, spec) = new.when.to_row();
    let source = new.source.as_ref().map(|name| format!("webhook:{name}"));
    let (id,): (i64,) = sqlx::query_as(
        "INSERT INTO schedules (room_id, agent_id, owner, kind, spec, said, time_zone,
         prompt, thread_per_run, skip_missed, set_at, next_run, source)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13) RETURNING id",
    )
    .bind(&new.room_id)
    .bind(&new.agent_id)
    .bind(&new.owner)
    .bind(kind)
    .bind(spec)
    .bind(&new.said)
    .bind(&new.time_zone)
    .bind(&new.prompt)
    .bind(Flag(new.thread_per_run))
    .bind(Flag(new.skip_missed))
    .bind(now_ms())
    .bind(new.next_run)
    .bind(source)
    .fetch_one(&mut **tx)
    .await?;
    Ok(id)
}

#[cfg(test)]
mod tests;
