//! When a schedule runs (`!every`, `!at`): read from what a person wrote, kept in the store
//! as a kind and a spec, and asked for its next run in the schedule's time zone. Pure: the
//! clock is an argument, so the rules (cron and short forms, time zones, DST) are tested
//! table-style without waiting.

use std::str::FromStr;
use std::time::Duration;

use jiff::civil::{Date, DateTime, Time};
use jiff::tz::TimeZone;
use jiff::{Timestamp, Zoned};

/// When a schedule runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum When {
    /// At every time a cron pattern (five fields: minute, hour, day, month, weekday)
    /// matches, in the schedule's time zone. The short forms (`weekdays 09:00`) are patterns.
    Cron(String),
    /// Every so long, counted from when it was set (not tied to the clock's hours).
    Every(Duration),
    /// Once, at this instant (ms since the epoch).
    Once(i64),
}

/// Why a `<when>` was not understood; shown to the person with the forms that work.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum WhenError {
    /// Nothing recognisable.
    #[error("“{0}” is not a time Sidekicks knows")]
    Unknown(String),
    /// A cron pattern the parser refused.
    #[error("the cron pattern “{0}” is not valid: {1}")]
    BadCron(String, String),
    /// A time of day that is not one (`25:00`).
    #[error("“{0}” is not a time of day (HH:MM)")]
    BadTime(String),
    /// A date that is not one.
    #[error("“{0}” is not a date (YYYY-MM-DD)")]
    BadDate(String),
    /// An interval shorter than the configured floor.
    #[error("every {0} is too often: the shortest interval here is {1}")]
    TooOften(String, String),
    /// A one-off time already past.
    #[error("{0} has already passed")]
    Past(String),
    /// A time zone the zone database does not know.
    #[error("“{0}” is not a time zone (use a name such as Europe/Paris or UTC)")]
    BadZone(String),
    /// Nothing to prompt after the time.
    #[error("nothing to ask the agent: write the prompt after the time")]
    NoPrompt,
}

/// The time zone named `name` (IANA, e.g. `Europe/Paris`, or `UTC`).
pub fn zone(name: &str) -> Result<TimeZone, WhenError> {
    TimeZone::get(name).map_err(|_| WhenError::BadZone(name.to_owned()))
}

/// The zone a schedule or room keeps (checked when it was chosen), or UTC should the zone
/// database no longer know it.
pub fn zone_or_utc(name: &str) -> TimeZone {
    zone(name).unwrap_or(TimeZone::UTC)
}

impl When {
    /// The kind and spec the store keeps.
    pub fn to_row(&self) -> (&'static str, String) {
        match self {
            When::Cron(pattern) => ("cron", pattern.clone()),
            When::Every(every) => ("every", every.as_secs().to_string()),
            When::Once(at) => ("once", at.to_string()),
        }
    }

    /// Back from the store's kind and spec.
    pub fn from_row(kind: &str, spec: &str) -> Option<Self> {
        match kind {
            "cron" => Some(When::Cron(spec.to_owned())),
            "every" => spec
                .parse()
                .ok()
                .map(|s| When::Every(Duration::from_secs(s))),
            "once" => spec.parse().ok().map(When::Once),
            _ => None,
        }
    }

    /// Whether it runs once only.
    pub fn is_once(&self) -> bool {
        matches!(self, When::Once(_))
    }

    /// The first run due after `after` (ms since the epoch) in `tz`; for [`When::Every`],
    /// `from` is the run it counts from (when it was set, or its last due time). `None`:
    /// it will not run again.
    pub fn next(&self, from: i64, after: i64, tz: &TimeZone) -> Option<i64> {
        match self {
            When::Once(at) => (*at > after).then_some(*at),
            When::Every(every) => {
                let step = (every.as_millis() as i64).max(1);
                let behind = (after - from).max(0) / step + 1;
                Some(from + behind * step)
            }
            When::Cron(pattern) => {
                let cron = croner::Cron::from_str(pattern).ok()?;
                let now = Timestamp::from_millisecond(after)
                    .ok()?
                    .to_zoned(tz.clone());
                let next = cron.find_next_occurrence(&now, false).ok()?;
                Some(next.timestamp().as_millisecond())
            }
        }
    }
}

/// A `!every` or `!at` as written: when, and the prompt after it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Parsed {
    /// When it runs.
    pub when: When,
    /// The words that said when, for `!schedules` (`weekdays 09:00`).
    pub said: String,
    /// What the agent is asked each time.
    pub prompt: String,
}

/// Reads `!every <when> <prompt>`: an interval (`2h`, `30m`, `1h30m`, `45s`), a day and
/// time (`daily 09:00`, `weekdays 09:00`, `weekends 10:30`, `mondays 08:00`), or a cron
/// pattern (`cron 0 9 * * 1-5`, or in backticks or quotes). `floor` is the shortest
/// interval allowed.
pub fn parse_every(text: &str, floor: Duration) -> Result<Parsed, WhenError> {
    let text = text.trim();
    if let Some((pattern, rest)) = quoted(text) {
        return cron(pattern, rest, floor);
    }
    let words: Vec<&str> = text.split_whitespace().collect();
    let first = words.first().copied().unwrap_or("");
    if first.eq_ignore_ascii_case("cron") && words.len() >= 6 {
        return cron(&words[1..6].join(" "), after_words(text, 6), floor);
    }
    if let Some(every) = duration(first) {
        if every < floor {
            return Err(WhenError::TooOften(first.to_owned(), words_for(floor)));
        }
        return with_prompt(When::Every(every), first, after_words(text, 1));
    }
    let days = match first.to_ascii_lowercase().as_str() {
        "daily" | "day" | "days" => "*".to_owned(),
        "weekdays" | "weekday" => "1-5".to_owned(),
        "weekends" | "weekend" => "0,6".to_owned(),
        other => match weekday(other) {
            Some(n) => n.to_string(),
            None => return Err(WhenError::Unknown(text_head(text))),
        },
    };
    let at = words.get(1).copied().unwrap_or("");
    let time = time_of_day(at)?;
    let pattern = format!("{} {} * * {days}", time.minute(), time.hour());
    with_prompt(
        When::Cron(pattern),
        &format!("{first} {at}"),
        after_words(text, 2),
    )
}

/// Reads `!at <when> <prompt>`: `HH:MM` (the next such time), `tomorrow HH:MM`,
/// `YYYY-MM-DD HH:MM`, or `in DURATION` (`in 10m`), in `tz`, after `now` (ms).
pub fn parse_at(text: &str, now: i64, tz: &TimeZone) -> Result<Parsed, WhenError> {
    let words: Vec<&str> = text.split_whitespace().collect();
    let first = words.first().copied().unwrap_or("");
    let second = words.get(1).copied().unwrap_or("");
    let now_here = Timestamp::from_millisecond(now)
        .map_err(|_| WhenError::Unknown(first.to_owned()))?
        .to_zoned(tz.clone());
    let (at, said, used) = if first.eq_ignore_ascii_case("in") {
        let wait = duration(second).ok_or_else(|| WhenError::Unknown(text_head(text)))?;
        (now + wait.as_millis() as i64, format!("in {second}"), 2)
    } else if first.eq_ignore_ascii_case("tomorrow") {
        let date = now_here
            .date()
            .tomorrow()
            .map_err(|_| WhenError::BadDate(first.into()))?;
        (
            instant(date, time_of_day(second)?, tz)?,
            format!("tomorrow {second}"),
            2,
        )
    } else if let Ok(date) = Date::from_str(first) {
        (
            instant(date, time_of_day(second)?, tz)?,
            format!("{first} {second}"),
            2,
        )
    } else if first.contains('-') && first.chars().next().is_some_and(|c| c.is_ascii_digit()) {
        return Err(WhenError::BadDate(first.to_owned()));
    } else {
        let time = time_of_day(first)?;
        let today = instant(now_here.date(), time, tz)?;
        let at = match today > now {
            true => today,
            false => {
                let tomorrow =
                    (now_here.date().tomorrow()).map_err(|_| WhenError::BadDate(first.into()))?;
                instant(tomorrow, time, tz)?
            }
        };
        (at, first.to_owned(), 1)
    };
    if at <= now {
        return Err(WhenError::Past(said));
    }
    with_prompt(When::Once(at), &said, after_words(text, used))
}

/// A time in words for people: `1h 30m`, `45s`.
pub fn words_for(duration: Duration) -> String {
    let secs = duration.as_secs();
    let parts = [
        (secs / 86_400, "d"),
        (secs / 3600 % 24, "h"),
        (secs / 60 % 60, "m"),
        (secs % 60, "s"),
    ];
    let words: Vec<String> = (parts.iter())
        .filter(|(n, _)| *n > 0)
        .map(|(n, unit)| format!("{n}{unit}"))
        .collect();
    match words.is_empty() {
        true => "0s".to_owned(),
        false => words.join(" "),
    }
}

/// An instant (ms) shown in `tz` for people: `2026-12-24 08:00 (Europe/Paris)`.
pub fn shown(at: i64, tz: &TimeZone) -> String {
    match Timestamp::from_millisecond(at) {
        Ok(ts) => {
            let here: Zoned = ts.to_zoned(tz.clone());
            let name = tz.iana_name().unwrap_or("UTC");
            format!("{} ({name})", here.strftime("%Y-%m-%d %H:%M"))
        }
        Err(_) => at.to_string(),
    }
}

fn cron(pattern: &str, rest: &str, floor: Duration) -> Result<Parsed, WhenError> {
    let pattern = pattern.trim();
    let fields = pattern.split_whitespace().count();
    if fields != 5 {
        let why = format!("it has {fields} fields; minute hour day month weekday are five");
        return Err(WhenError::BadCron(pattern.to_owned(), why));
    }
    let parsed = croner::Cron::from_str(pattern)
        .map_err(|e| WhenError::BadCron(pattern.to_owned(), e.to_string()))?;
    // A pattern runs as often as its two closest times: it is held to the same floor as
    // an interval.
    if let Some(gap) = shortest_gap(&parsed)
        && gap < floor
    {
        let said = format!("cron {pattern} (as often as every {})", words_for(gap));
        return Err(WhenError::TooOften(said, words_for(floor)));
    }
    with_prompt(
        When::Cron(pattern.to_owned()),
        &format!("cron {pattern}"),
        rest,
    )
}

/// The shortest time between two runs of `cron`, over its next 1,500 runs from the start
/// of 2026 (UTC): a pattern dense on some days only (`0,1 9 1 * *`) shows it within them.
fn shortest_gap(cron: &croner::Cron) -> Option<Duration> {
    let start = Timestamp::from_second(1_767_225_600)
        .ok()?
        .to_zoned(TimeZone::UTC);
    let times: Vec<i64> = (cron.iter_after(start))
        .take(1_500)
        .map(|t| t.timestamp().as_millisecond())
        .collect();
    let gap = times.windows(2).map(|w| w[1] - w[0]).min()?;
    Some(Duration::from_millis(gap.max(0) as u64))
}

fn with_prompt(when: When, said: &str, rest: &str) -> Result<Parsed, WhenError> {
    let prompt = rest.trim().to_owned();
    if prompt.is_empty() {
        return Err(WhenError::NoPrompt);
    }
    Ok(Parsed {
        when,
        said: said.to_owned(),
        prompt,
    })
}

/// What follows the first `n` words of `text`, as written (its lines kept).
fn after_words(text: &str, n: usize) -> &str {
    let mut rest = text.trim_start();
    for _ in 0..n {
        let end = rest.find(char::is_whitespace).unwrap_or(rest.len());
        rest = rest[end..].trim_start();
    }
    rest
}

/// A pattern in backticks or quotes at the start of `text`, and what follows it.
fn quoted(text: &str) -> Option<(&str, &str)> {
    let close = match text.chars().next()? {
        '`' => '`',
        '"' => '"',
        '“' => '”',
        _ => return None,
    };
    let open_len = text.chars().next()?.len_utf8();
    let end = text[open_len..].find(close)? + open_len;
    Some((&text[open_len..end], &text[end + close.len_utf8()..]))
}

/// `2h`, `30m`, `1h30m`, `45s`, `1d`: a duration, if the word is one.
fn duration(word: &str) -> Option<Duration> {
    let mut total = 0u64;
    let mut number = String::new();
    for c in word.to_ascii_lowercase().chars() {
        if c.is_ascii_digit() {
            number.push(c);
            continue;
        }
        let unit = match c {
            's' => 1,
            'm' => 60,
            'h' => 3600,
            'd' => 86_400,
            _ => return None,
        };
        total = total.checked_add(number.parse::<u64>().ok()?.checked_mul(unit)?)?;
        number.clear();
    }
    (number.is_empty() && total > 0).then(|| Duration::from_secs(total))
}

/// `09:00`, `9:30`: a time of day.
fn time_of_day(word: &str) -> Result<Time, WhenError> {
    let bad = || WhenError::BadTime(word.to_owned());
    let (h, m) = word.split_once(':').ok_or_else(bad)?;
    let (h, m): (i8, i8) = (h.parse().map_err(|_| bad())?, m.parse().map_err(|_| bad())?);
    Time::new(h, m, 0, 0).map_err(|_| bad())
}

/// `monday`/`mondays`/`mon` … as cron's weekday number (Sunday is 0).
fn weekday(word: &str) -> Option<u8> {
    let names = [
        "sunday",
        "monday",
        "tuesday",
        "wednesday",
        "thursday",
        "friday",
        "saturday",
    ];
    let stem = word
        .strip_suffix('s')
        .filter(|s| s.ends_with("day"))
        .unwrap_or(word);
    (stem.len() >= 3)
        .then(|| names.iter().position(|n| n.starts_with(stem)))
        .flatten()
        .map(|n| n as u8)
}

/// The instant (ms) of `date` at `time` in `tz`; a time that DST skips is taken as the
/// same wall time after the jump (jiff's "compatible" rule), a repeated one as its first.
fn instant(date: Date, time: Time, tz: &TimeZone) -> Result<i64, WhenError> {
    let civil = DateTime::from_parts(date, time);
    let zoned = civil
        .to_zoned(tz.clone())
        .map_err(|_| WhenError::BadDate(date.to_string()))?;
    Ok(zoned.timestamp().as_millisecond())
}

/// The first words of `text`, for an error.
fn text_head(text: &str) -> String {
    text.split_whitespace()
        .take(2)
        .collect::<Vec<_>>()
        .join(" ")
}

#[cfg(test)]
mod tests;
