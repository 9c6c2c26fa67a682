//! What the room is told about schedules (`!every`, `!at`, `!schedules`, `!unschedule`) and
//! their runs.

/// What a schedule is, as `!schedules` and the answer to `!every` show it.
pub struct ScheduleLine<'a> {
    /// Its ID.
    pub id: i64,
    /// When, as written, with its time zone.
    pub when: &'a str,
    /// Its time zone.
    pub zone: &'a str,
    /// The agent it prompts, as the room shows it.
    pub agent: &'a str,
    /// Who set it, as the room shows them.
    pub owner: &'a str,
    /// What it asks.
    pub prompt: &'a str,
    /// Its next run, shown in its zone; `None`: none.
    pub next: Option<String>,
    /// How many runs it had.
    pub runs: i64,
    /// How its last run ended.
    pub last: Option<&'a str>,
    /// Why it stopped, if it did.
    pub stopped: Option<&'a str>,
    /// Whether each run has a thread of its own.
    pub thread_per_run: bool,
}

/// One schedule in a line or two.
pub fn schedule_line(s: &ScheduleLine<'_>) -> String {
    let place = match s.thread_per_run {
        true => "a thread per run",
        false => "in the room's conversation",
    };
    let mut line = format!(
        "#{} · {} ({}) · {} · set by {} · {place}\n   “{}”",
        s.id, s.when, s.zone, s.agent, s.owner, s.prompt
    );
    let runs = super::count(s.runs as usize, "run", "runs");
    match (s.stopped, &s.next) {
        (Some(why), _) => line.push_str(&format!("\n   stopped: {why} · {runs}")),
        (None, Some(next)) => line.push_str(&format!("\n   next: {next} · {runs}")),
        (None, None) => line.push_str(&format!("\n   no more runs · {runs}")),
    }
    if let Some(last) = s.last {
        line.push_str(&format!(", last: {last}"));
    }
    line
}

/// `!schedules` in a room without any.
pub fn no_schedules(prefix: &str) -> String {
    format!(
        "No schedules here. Set one with {prefix}every <when> <prompt> (e.g. {prefix}every \
         weekdays 09:00 run the tests) or {prefix}at <when> <prompt>."
    )
}

/// `!schedules`: each schedule of the room.
pub fn schedules_here(lines: &[String]) -> String {
    format!("⏰ Schedules here:\n{}", lines.join("\n"))
}

/// The answer to `!every` or `!at` once the schedule is set.
pub fn schedule_set(line: &str, prefix: &str, id: i64) -> String {
    format!("⏰ Scheduled:\n{line}\nRemove it with {prefix}unschedule {id}.")
}

/// `!every`/`!at` from someone who has `max` schedules running already.
pub fn too_many_schedules(prefix: &str, max: u32) -> String {
    format!(
        "⏰ Not set: you have {max} schedules running already, the most one person may have \
         here ([schedules] max_per_owner). Remove one first ({prefix}unschedule)."
    )
}

/// `!every`/`!at` whose time was not understood (`why`).
pub fn schedule_not_understood(prefix: &str, command: &str, why: &str) -> String {
    let forms = match command {
        "at" => "HH:MM, tomorrow HH:MM, YYYY-MM-DD HH:MM or in 10m",
        _ => "2h, 30m, daily 09:00, weekdays 09:00, mondays 08:00, or cron 0 9 * * 1-5",
    };
    format!("⚠️ {why}. Write {prefix}{command} <when> <prompt>, with <when> one of: {forms}.")
}

/// A schedule that would prompt several agents, or none the room can tell.
pub fn schedule_needs_one_agent(agents: &[super::AgentLine]) -> String {
    let ids: Vec<&str> = agents.iter().map(|a| a.id.as_str()).collect();
    format!(
        "⚠️ Which agent should it ask? Start the prompt with one agent's name (one of: {}).",
        ids.join(", ")
    )
}

/// `!unschedule ID` done.
pub fn unscheduled(id: i64) -> String {
    format!("⏰ Schedule #{id} removed: it will not run again.")
}

/// `!unschedule` of no schedule of this room.
pub fn no_such_schedule(prefix: &str, word: &str) -> String {
    format!("⚠️ No schedule “{word}” here. {prefix}schedules lists them.")
}

/// The message a run posts: the prompt the agent answers, and whose it is.
pub fn run_message(id: i64, number: i64, owner: &str, prompt: &str) -> String {
    format!("⏰ Schedule #{id}, run {number} (set by {owner}): {prompt}")
}

/// A run ended: the summary line under its answer.
pub fn run_ended(
    id: i64,
    number: i64,
    outcome: &str,
    took_secs: i64,
    next: Option<&str>,
) -> String {
    let next = match next {
        Some(next) => format!(" Next run: {next}."),
        None => " No more runs.".to_owned(),
    };
    format!("⏰ Schedule #{id}, run {number}: {outcome} after {took_secs} s.{next}")
}

/// A run's outcome in words, from how its turn ended (`None`: without a reply) and how
/// many tool calls its polls refused.
pub fn run_outcome(stop_reason: Option<&str>, refused: u32) -> String {
    let ended = match stop_reason {
        Some("end_turn") => "answered",
        Some("cancelled") => "stopped",
        Some("refusal") => "refused by the agent",
        Some("ended_after_refusal") => "ended after a tool was refused",
        Some("max_tokens") | Some("max_turn_requests") => "cut short by the agent's limits",
        Some(_) => "ended",
        None => "ended without an answer",
    };
    match refused {
        0 => ended.to_owned(),
        n => format!(
            "{ended}; {} refused (by an approver, or nobody answered in time)",
            super::count(n as usize, "tool call", "tool calls")
        ),
    }
}

/// The outcome of a run not started because the previous one was still going.
pub const RUN_OVERLAPPED: &str = "not started: the previous run was still going";
/// The outcome of a run due while the gateway was down, skipped as its schedule says.
pub const RUN_SKIPPED: &str = "skipped: it was due while Sidekicks was down";

/// A run not started (`outcome` says why).
pub fn run_not_started(id: i64, number: i64, outcome: &str) -> String {
    format!("⏰ Schedule #{id}, run {number}: {outcome}.")
}

/// A schedule stopped because its owner lost their rights.
pub fn schedule_stopped(id: i64, owner: &str) -> String {
    format!(
        "⏰ Schedule #{id} stopped: {owner}, who set it, may no longer prompt here. Its runs \
         had their rights."
    )
}

/// A run that was not run: the room's conversation is in `mode`, which acts without
/// asking, and the run's text is not an admin's (a webhook sender's, or a schedule's owner
/// who is no admin).
pub fn run_would_act_unasked(mode: &str) -> String {
    format!(
        "not run: the room's conversation is in `{mode}`, which acts without asking, and a \
         run's prompt only runs where tools wait for an approver (answer runs in threads of \
         their own, or switch the conversation to a mode that asks)"
    )
}

/// Said when a schedule stops because `owner`, who set it, left the room (or was kicked or
/// banned): a run is their prompt, and they are no longer there to read it.
pub fn schedule_stopped_owner_left(id: i64, owner: &str) -> String {
    format!(
        "⏰ Schedule #{id} stopped: {owner}, who set it, is no longer in the room. Its runs \
         were their prompts."
    )
}

/// Why a schedule stopped, as `!schedules` shows it.
pub fn owner_lost_rights(owner: &str) -> String {
    format!("{owner} may no longer prompt")
}

/// Why a schedule stopped when its owner left the room, as `!schedules` shows it.
pub fn owner_left_room(owner: &str) -> String {
    format!("{owner} is no longer in the room")
}

/// The store failed while reading or writing `what`.
pub fn store_failed(what: &str) -> String {
    format!("⚠️ Could not read or save {what} (the gateway's database failed; see its log).")
}

/// `!timezone` without a zone.
pub fn time_zone_is(prefix: &str, zone: &str) -> String {
    format!(
        "Times written here ({prefix}every, {prefix}at) are in {zone}. \
         {prefix}timezone ZONE changes it (e.g. Europe/Paris)."
    )
}

/// `!timezone ZONE` done.
pub fn time_zone_set(zone: &str) -> String {
    format!(
        "Times written here are now in {zone}; schedules set before keep the zone they were \
         set in."
    )
}

/// The message a webhook delivery posts: the prompt the agent answers, and whose it is.
pub fn webhook_message(name: &str, owner: &str, prompt: &str) -> String {
    format!("🪝 Webhook {name} (for {owner}): {prompt}")
}

/// A webhook delivery's turn ended: the summary line under its answer.
pub fn webhook_ended(name: &str, outcome: &str, took_secs: i64) -> String {
    format!("🪝 Webhook {name}: {outcome} after {took_secs} s.")
}

/// A webhook delivery not run: its `run_as` may no longer prompt.
pub fn webhook_not_run(name: &str, owner: &str) -> String {
    format!(
        "🪝 Webhook {name}: a delivery was not run: {owner}, whom it runs as, may no longer prompt here."
    )
}
