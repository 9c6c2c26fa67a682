//! What the room is told about budgets: a warning near a limit, a prompt refused at one,
//! `!usage` and `!budget`.

use jiff::Timestamp;
use jiff::tz::TimeZone;

use crate::model::budget::{Amount, Limit, Period, Scope, Standing};

/// Whose spend a limit bounds, as a sentence names it: `this room` or `@bob:x`.
fn whose(limit: &Limit, person: &str) -> String {
    match limit.scope {
        Scope::Room => "This room".to_owned(),
        Scope::Person => person.to_owned(),
    }
}

/// `0.50 USD a day`.
pub fn limit_words(limit: &Limit) -> String {
    let per = match limit.period {
        Period::Day => "a day",
        Period::Month => "a month",
    };
    let whom = match limit.scope {
        Scope::Room => "for the room",
        Scope::Person => "per person",
    };
    format!("{} {per} {whom}", limit.amount)
}

/// Who set a limit: `the operator` (the config) or the admin.
fn set_by(limit: &Limit) -> String {
    match &limit.set_by {
        Some(admin) => admin.clone(),
        None => "the operator".to_owned(),
    }
}

/// When a period ends, in the room's zone, and how far off: `2026-12-09 00:00 (UTC), in
/// 10 h 30 min`.
pub fn resets(at_ms: i64, now_ms: i64, zone: &TimeZone) -> String {
    let when = Timestamp::from_millisecond(at_ms)
        .map(|t| {
            t.to_zoned(zone.clone())
                .strftime("%Y-%m-%d %H:%M")
                .to_string()
        })
        .unwrap_or_default();
    let name = zone.iana_name().unwrap_or("UTC");
    let minutes = (at_ms - now_ms).max(0) / 60_000;
    let left = match (minutes / 60, minutes % 60) {
        (0, m) => format!("{m} min"),
        (h, 0) => format!("{h} h"),
        (h, m) if h < 48 => format!("{h} h {m} min"),
        (h, _) => format!("{} days", h / 24),
    };
    format!("{when} ({name}), in {left}")
}

/// A prompt from `person` refused: `standing`'s limit is reached.
pub fn budget_reached(standing: &Standing, person: &str, resets_at: &str, prefix: &str) -> String {
    let limit = &standing.limit;
    format!(
        "💸 {} reached its budget: {} spent of {} (set by {}). It resets {resets_at}; until \
         then only admins may prompt. An admin may raise it with \
         `{prefix}budget {} {} AMOUNT`.",
        whose(limit, person),
        standing.spent_amount(),
        limit_words(limit),
        set_by(limit),
        limit.scope.word(),
        limit.period.word(),
    )
}

/// The room told once a turn takes `standing` past the warning share.
pub fn budget_warning(standing: &Standing, person: &str, percent: u8, resets_at: &str) -> String {
    let limit = &standing.limit;
    let reached = match standing.reached() {
        true => " It is reached: the next prompts wait for an admin or the reset.",
        false => "",
    };
    format!(
        "💸 {} has spent {} of {} ({}% or more). It resets {resets_at}.{reached}",
        whose(limit, person),
        standing.spent_amount(),
        limit_words(limit),
        percent,
    )
}

/// An admin's prompt passes a reached limit: said in the log only, and here for `!usage`.
pub fn budget_line(standing: &Standing, person: &str) -> String {
    let limit = &standing.limit;
    let share = match standing.limit.amount.value {
        0 => 100,
        v => (standing.spent as i128 * 100 / v as i128) as i64,
    };
    let whom = match limit.scope {
        Scope::Room => String::new(),
        Scope::Person => format!(" ({person})"),
    };
    format!(
        "- {}{whom}: {} spent, {share}% (set by {})",
        limit_words(limit),
        standing.spent_amount(),
        set_by(limit),
    )
}

/// One line of `!usage`: who, which agent, what it cost and how many turns.
pub fn usage_line(
    person: &str,
    agent: &str,
    cost: Option<&Amount>,
    tokens: u64,
    turns: u64,
) -> String {
    let cost = match cost {
        Some(cost) => cost.to_string(),
        None => "no cost reported".to_owned(),
    };
    let tokens = match tokens {
        0 => String::new(),
        n => format!(", {}", Amount::tokens(n)),
    };
    let turns = match turns {
        1 => "1 turn".to_owned(),
        n => format!("{n} turns"),
    };
    format!("- {person} with {agent}: {cost}{tokens} ({turns})")
}

/// `!usage` when nothing was spent in the period.
pub const NOTHING_SPENT: &str = "nothing yet";

/// `!budget` for someone who is not an admin, with words after it.
pub const BUDGET_FOR_ADMINS: &str = "💸 Only admins may set a budget.";

/// How to write `!budget`.
pub fn budget_usage(prefix: &str) -> String {
    format!(
        "Write `{prefix}budget room|person day|month AMOUNT` (such as `{prefix}budget room day \
         5 USD` or `{prefix}budget person month 2M tokens`), or `{prefix}budget room day off` \
         to go back to the configured limits."
    )
}

/// `!budget` set a limit.
pub fn budget_set(limit: &Limit) -> String {
    format!(
        "💸 Budget set: {} (by {}).",
        limit_words(limit),
        set_by(limit)
    )
}

/// `!budget … off` took the room's own limits away.
pub fn budget_cleared(scope: Scope, period: Period, removed: u64) -> String {
    match removed {
        0 => format!(
            "💸 This room had no {} {} limit of its own: the configured ones hold.",
            scope.word(),
            period.word()
        ),
        _ => format!(
            "💸 This room's own {} {} limits are gone: the configured ones hold.",
            scope.word(),
            period.word()
        ),
    }
}

/// `!budget` with nothing after it, where no limit holds.
pub const NO_BUDGET: &str = "💸 No budget holds here: agents may spend without limit.";
