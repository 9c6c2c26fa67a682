//! The schedules' pure rules, tested: reading `every` and `at`, the cron floor, the next run.

use super::*;

const MINUTE: Duration = Duration::from_secs(60);

/// ms of a UTC wall time.
fn utc(text: &str) -> i64 {
    let civil = DateTime::from_str(text).unwrap();
    civil
        .to_zoned(TimeZone::UTC)
        .unwrap()
        .timestamp()
        .as_millisecond()
}

#[test]
fn every_reads_intervals_days_and_cron_patterns() {
    let cron = |p: &str| When::Cron(p.to_owned());
    let every = |s: u64| When::Every(Duration::from_secs(s));
    let table = [
        ("2h run the tests", every(7200), "2h", "run the tests"),
        ("1h30m check CI", every(5400), "1h30m", "check CI"),
        ("1d tidy up", every(86_400), "1d", "tidy up"),
        (
            "weekdays 09:00 run the tests",
            cron("0 9 * * 1-5"),
            "weekdays 09:00",
            "run the tests",
        ),
        (
            "daily 9:30 say hi",
            cron("30 9 * * *"),
            "daily 9:30",
            "say hi",
        ),
        (
            "weekends 10:05 relax",
            cron("5 10 * * 0,6"),
            "weekends 10:05",
            "relax",
        ),
        (
            "mondays 08:00 plan",
            cron("0 8 * * 1"),
            "mondays 08:00",
            "plan",
        ),
        (
            "Friday 17:00 wrap up",
            cron("0 17 * * 5"),
            "Friday 17:00",
            "wrap up",
        ),
        (
            "tues 17:00 wrap up",
            cron("0 17 * * 2"),
            "tues 17:00",
            "wrap up",
        ),
        (
            "cron 0 9 * * 1-5 run the tests",
            cron("0 9 * * 1-5"),
            "cron 0 9 * * 1-5",
            "run the tests",
        ),
        (
            "`*/15 * * * *` look",
            cron("*/15 * * * *"),
            "cron */15 * * * *",
            "look",
        ),
        (
            "\"0 0 1 * *\" bill",
            cron("0 0 1 * *"),
            "cron 0 0 1 * *",
            "bill",
        ),
    ];
    for (text, when, said, prompt) in table {
        let parsed = parse_every(text, MINUTE).unwrap_or_else(|e| panic!("{text}: {e}"));
        assert_eq!(parsed.when, when, "{text}");
        assert_eq!(parsed.said, said, "{text}");
        assert_eq!(parsed.prompt, prompt, "{text}");
    }
}

/// Whether an error is the expected kind.
type Expect = fn(&WhenError) -> bool;

#[test]
fn every_refuses_what_it_cannot_read_with_the_reason() {
    let table: [(&str, Expect); 8] = [
        ("fortnightly do it", |e| matches!(e, WhenError::Unknown(_))),
        ("monster 09:00 do it", |e| {
            matches!(e, WhenError::Unknown(_))
        }),
        ("weekdays 25:00 run", |e| matches!(e, WhenError::BadTime(_))),
        ("daily nine run", |e| matches!(e, WhenError::BadTime(_))),
        ("cron 0 9 * * funday run", |e| {
            matches!(e, WhenError::BadCron(..))
        }),
        ("`0 9 * *` run", |e| matches!(e, WhenError::BadCron(..))),
        ("30s too fast", |e| matches!(e, WhenError::TooOften(..))),
        ("2h", |e| matches!(e, WhenError::NoPrompt)),
    ];
    for (text, expected) in table {
        let error = parse_every(text, MINUTE).unwrap_err();
        assert!(expected(&error), "{text}: {error:?}");
    }
    let error = parse_every("30s too fast", MINUTE).unwrap_err();
    assert_eq!(
        error.to_string(),
        "every 30s is too often: the shortest interval here is 1m"
    );
}

#[test]
fn a_cron_pattern_is_held_to_the_same_floor_as_an_interval() {
    let five_minutes = Duration::from_secs(300);
    for text in [
        "cron * * * * * every minute",
        "`*/2 * * * *` twice as rare",
        // Dense on one day a month only.
        "cron 0,1 9 1 * * at nine and a minute past",
    ] {
        let error = parse_every(text, five_minutes).unwrap_err();
        assert!(
            matches!(error, WhenError::TooOften(..)),
            "{text}: {error:?}"
        );
        assert!(
            error
                .to_string()
                .ends_with("the shortest interval here is 5m"),
            "{error}"
        );
    }
    assert_eq!(
        parse_every("cron * * * * * go", five_minutes)
            .unwrap_err()
            .to_string(),
        "every cron * * * * * (as often as every 1m) is too often: the shortest interval here is 5m"
    );
    for text in [
        "cron */5 * * * * go",
        "cron 0 9 * * 1-5 go",
        "weekdays 09:00 go",
    ] {
        assert!(parse_every(text, five_minutes).is_ok(), "{text}");
    }
}

#[test]
fn at_reads_a_time_a_date_tomorrow_or_a_wait_in_the_time_zone() {
    let paris = zone("Europe/Paris").unwrap();
    // Friday 4 December 2026, 10:00 in Paris (09:00 UTC).
    let now = utc("2026-12-04T09:00");
    let table = [
        ("in 10m check", utc("2026-12-04T09:10"), "in 10m"),
        ("11:30 check", utc("2026-12-04T10:30"), "11:30"),
        // Already past today: tomorrow.
        ("08:00 check", utc("2026-12-05T07:00"), "08:00"),
        (
            "tomorrow 08:00 check",
            utc("2026-12-05T07:00"),
            "tomorrow 08:00",
        ),
        (
            "2026-12-24 08:00 check",
            utc("2026-12-24T07:00"),
            "2026-12-24 08:00",
        ),
        // Summer time: two hours ahead of UTC.
        (
            "2027-07-01 08:00 check",
            utc("2027-07-01T06:00"),
            "2027-07-01 08:00",
        ),
        // DST skips 02:30 on 28 March 2027: the same wall time after the jump, 03:30 CEST.
        (
            "2027-03-28 02:30 check",
            utc("2027-03-28T01:30"),
            "2027-03-28 02:30",
        ),
    ];
    for (text, at, said) in table {
        let parsed = parse_at(text, now, &paris).unwrap_or_else(|e| panic!("{text}: {e}"));
        assert_eq!(parsed.when, When::Once(at), "{text}");
        assert_eq!(parsed.said, said, "{text}");
        assert_eq!(parsed.prompt, "check");
    }
    for (text, why) in [
        ("2026-12-01 08:00 check", "has already passed"),
        ("2026-13-01 08:00 check", "is not a date"),
        ("soon check", "is not a time of day"),
        ("in ages check", "is not a time Sidekicks knows"),
        ("in 5m", "nothing to ask"),
    ] {
        let error = parse_at(text, now, &paris).unwrap_err().to_string();
        assert!(error.contains(why), "{text}: {error}");
    }
}

#[test]
fn the_next_run_follows_the_time_zone_across_dst() {
    let paris = zone("Europe/Paris").unwrap();
    let weekdays = When::Cron("0 9 * * 1-5".into());
    // Friday 10:00 in Paris: the next weekday 09:00 is Monday's, 08:00 UTC in winter.
    let next = weekdays.next(0, utc("2026-12-04T09:00"), &paris);
    assert_eq!(next, Some(utc("2026-12-07T08:00")));
    // Over the spring change (Sunday 28 March 2027): Monday 09:00 is 07:00 UTC.
    let next = weekdays.next(0, utc("2027-03-26T09:00"), &paris);
    assert_eq!(next, Some(utc("2027-03-29T07:00")));
    // A daily run at 02:30, a time the spring change skips, still runs that day, once.
    let night = When::Cron("30 2 * * *".into());
    let spring = night.next(0, utc("2027-03-27T02:00"), &paris).unwrap();
    assert!(spring > utc("2027-03-27T02:00") && spring < utc("2027-03-29T00:00"));
    let after = night.next(0, spring, &paris).unwrap();
    assert_eq!(
        after,
        utc("2027-03-29T00:30"),
        "the next night's 02:30 CEST"
    );
    // 02:30 happens twice when autumn comes (31 October 2027): one run, not two.
    let first = night.next(0, utc("2027-10-30T12:00"), &paris).unwrap();
    let second = night.next(0, first, &paris).unwrap();
    assert!(second - first >= 23 * 3_600_000, "{first} {second}");
    // In UTC the pattern is the wall clock.
    let next = weekdays.next(0, utc("2026-12-04T09:00"), &TimeZone::UTC);
    assert_eq!(next, Some(utc("2026-12-07T09:00")));
}

#[test]
fn an_interval_counts_from_when_it_was_set_and_skips_what_was_missed() {
    let hourly = When::Every(Duration::from_secs(3600));
    let set = utc("2026-12-04T09:10");
    let tz = TimeZone::UTC;
    assert_eq!(hourly.next(set, set, &tz), Some(utc("2026-12-04T10:10")));
    // Down for three hours and a bit: the next run is the next one on the grid.
    let back = utc("2026-12-04T12:30");
    assert_eq!(hourly.next(set, back, &tz), Some(utc("2026-12-04T13:10")));
    let once = When::Once(set);
    assert_eq!(once.next(0, set - 1, &tz), Some(set));
    assert_eq!(once.next(0, set, &tz), None);
}

#[test]
fn the_store_row_reads_back_and_times_read_as_words() {
    for when in [
        When::Cron("0 9 * * 1-5".into()),
        When::Every(Duration::from_secs(5400)),
        When::Once(1_796_000_000_000),
    ] {
        let (kind, spec) = when.to_row();
        assert_eq!(When::from_row(kind, &spec), Some(when));
    }
    assert_eq!(When::from_row("fortnightly", "1"), None);
    assert_eq!(words_for(Duration::from_secs(5400)), "1h 30m");
    assert_eq!(words_for(Duration::from_secs(45)), "45s");
    let paris = zone("Europe/Paris").unwrap();
    assert_eq!(
        shown(utc("2026-12-24T07:00"), &paris),
        "2026-12-24 08:00 (Europe/Paris)"
    );
    assert!(zone("Mars/Olympus").is_err());
}
