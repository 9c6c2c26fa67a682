//! The streaming rules of a reply, on a fake chat and a paused clock.

use super::*;
use crate::core::fakes::{FakeChat, Sent};

fn settings() -> StreamSettings {
    StreamSettings {
        interval: Duration::from_secs(1),
        max_edits: 100,
        max_bytes: 2_000,
        patience: crate::core::view::live::MAX_OUTAGE,
        ..Default::default()
    }
}

/// Feeds `chunks` one every `every`, flushing as the worker does.
async fn drive(stream: &mut ReplyStream, chunks: &[String], every: Duration) {
    for chunk in chunks {
        stream.push(chunk);
        let until = Instant::now() + every;
        loop {
            match stream.next_flush_at() {
                Some(at) if at <= until => {
                    tokio::time::sleep_until(at).await;
                    let _ = stream.flush().await;
                }
                _ => break,
            }
        }
        tokio::time::sleep_until(until).await;
    }
}

fn chunks(n: usize) -> Vec<String> {
    (0..n).map(|i| format!("word{i} ")).collect()
}

#[tokio::test(start_paused = true)]
async fn a_reply_past_its_size_cap_is_cut_with_a_line_and_the_rest_dropped() {
    let chat = FakeChat::new();
    let capped = StreamSettings {
        max_reply_bytes: 5_000,
        ..settings()
    };
    let mut s = ReplyStream::new(chat.clone(), "!r".into(), "t-cap", capped);
    for _ in 0..1_000 {
        s.push("0123456789");
    }
    assert!(s.text().starts_with(&"0123456789".repeat(500)));
    assert!(
        s.text().ends_with("The rest was dropped."),
        "{}",
        &s.text()[4_990..]
    );
    assert!(s.text().len() < 5_000 + 200, "nothing kept past the cap");
    s.finish(None).await.unwrap();
    let shown = chat.shown("!r").concat();
    assert!(
        shown.contains("✂️ The answer was cut here: it passed 5 KB"),
        "{shown}"
    );
    // A multi-byte character is never split at the cap.
    let mut s = ReplyStream::new(
        FakeChat::new(),
        "!r".into(),
        "t-cap2",
        StreamSettings {
            max_reply_bytes: 5_001,
            ..settings()
        },
    );
    s.push(&"é".repeat(3_000));
    assert!(s.text().starts_with(&"é".repeat(2_500)));
}

#[tokio::test(start_paused = true)]
async fn edits_are_coalesced_to_one_per_interval_and_the_last_holds_everything() {
    let chat = FakeChat::new();
    let mut s = ReplyStream::new(chat.clone(), "!r".into(), "t1", settings());
    let parts = chunks(50);
    drive(&mut s, &parts, Duration::from_millis(100)).await;
    s.finish(None).await.unwrap();
    let log = chat.log();
    // 50 chunks over 5 s at one request per second: about 6 requests, not 50.
    assert!(
        log.len() <= 7 && log.len() >= 3,
        "{} requests: {log:?}",
        log.len()
    );
    assert!(matches!(log[0], Sent::Send { .. }));
    assert_eq!(chat.shown("!r"), vec![parts.concat()]);
    // One request per interval, but for the last: it only drops the live marker of a
    // message that shows everything already, at once.
    let times = chat.times();
    let (paced, last) = times.split_at(times.len() - 1);
    for pair in paced.windows(2) {
        assert!(pair[1] - pair[0] >= Duration::from_secs(1), "{times:?}");
    }
    if last[0] - paced[paced.len() - 1] < Duration::from_secs(1) {
        let flags = live_flags(&log);
        assert_eq!(flags[flags.len() - 2..], [true, false], "{log:?}");
        let Sent::Edit { msg, .. } = &log[log.len() - 1] else {
            panic!("{log:?}")
        };
        assert_eq!(msg.body, parts.concat(), "the text did not change");
    }
}

#[tokio::test(start_paused = true)]
async fn the_first_text_is_sent_at_once() {
    let chat = FakeChat::new();
    let start = Instant::now();
    let mut s = ReplyStream::new(chat.clone(), "!r".into(), "t", settings());
    s.push("hello");
    assert_eq!(s.next_flush_at(), Some(start));
    s.flush().await.unwrap();
    assert_eq!(chat.shown("!r"), vec!["hello".to_string()]);
}

#[tokio::test(start_paused = true)]
async fn a_rate_limit_folds_pending_text_into_the_next_edit() {
    let chat = FakeChat::new();
    // The 2nd and 3rd requests are refused with a 5 s retry_after.
    chat.rate_limit_calls(&[2, 3], Duration::from_secs(5));
    let mut s = ReplyStream::new(chat.clone(), "!r".into(), "t", settings());
    let parts = chunks(40);
    drive(&mut s, &parts, Duration::from_millis(250)).await;
    s.finish(None).await.unwrap();
    assert_eq!(chat.shown("!r"), vec![parts.concat()]);
    assert_eq!(s.stats().rate_limited, 2);
    assert_eq!(s.stats().sends, 1, "no duplicate message");
    // Nothing was sent in the 5 s after a refusal.
    let log = chat.attempt_times();
    let refused = log[1];
    assert!(log[2] - refused >= Duration::from_secs(5));
    assert!(log[3] - log[2] >= Duration::from_secs(5));
}

#[tokio::test(start_paused = true)]
async fn the_edit_cap_stops_intermediate_edits_but_not_the_final_one() {
    let chat = FakeChat::new();
    let mut settings = settings();
    settings.max_edits = 2;
    let mut s = ReplyStream::new(chat.clone(), "!r".into(), "t", settings);
    let parts = chunks(100);
    drive(&mut s, &parts, Duration::from_millis(200)).await;
    assert_eq!(s.stats().edits, 2);
    s.finish(Some("⏹️ Stopped.".into())).await.unwrap();
    assert_eq!(s.stats().edits, 3);
    assert_eq!(
        chat.shown("!r"),
        // The footer follows the text after one blank line, whatever whitespace ended it.
        vec![format!("{}\n\n⏹️ Stopped.", parts.concat().trim_end())]
    );
}

#[tokio::test(start_paused = true)]
async fn a_long_reply_continues_in_new_messages() {
    let chat = FakeChat::new();
    let mut s = ReplyStream::new(chat.clone(), "!r".into(), "t", settings());
    let parts: Vec<String> = (0..300)
        .map(|i| format!("line {i} of the answer\n"))
        .collect();
    drive(&mut s, &parts, Duration::from_millis(20)).await;
    s.finish(None).await.unwrap();
    let shown = chat.shown("!r");
    assert!(shown.len() >= 3, "{} messages", shown.len());
    assert!(shown.iter().all(|m| m.len() <= 2_000));
    assert_eq!(shown.concat(), parts.concat());
}

#[tokio::test(start_paused = true)]
async fn transient_failures_are_retried_until_the_final_content_is_shown() {
    let chat = FakeChat::new();
    chat.fail_calls(&[2, 3]);
    let mut s = ReplyStream::new(chat.clone(), "!r".into(), "t", settings());
    s.push("a");
    s.flush().await.unwrap();
    s.push("b");
    s.finish(None).await.unwrap();
    assert_eq!(chat.shown("!r"), vec!["ab".to_string()]);
}

#[tokio::test(start_paused = true)]
async fn the_final_content_waits_out_a_homeserver_outage_of_minutes() {
    let chat = FakeChat::new();
    // A minute and a half of refused connections (one attempt every 2 s) after the
    // first post.
    chat.fail_calls(&(2..=46).collect::<Vec<u32>>());
    let mut s = ReplyStream::new(chat.clone(), "!r".into(), "t", settings());
    s.push("a");
    s.flush().await.unwrap();
    s.push("b");
    let started = Instant::now();
    s.finish(None).await.unwrap();
    assert!(started.elapsed() >= Duration::from_secs(88));
    assert_eq!(chat.shown("!r"), vec!["ab".to_string()]);
}

#[tokio::test(start_paused = true)]
async fn an_outage_longer_than_the_limit_gives_up() {
    let chat = FakeChat::new();
    chat.fail_calls(&(2..=1000).collect::<Vec<u32>>());
    let mut s = ReplyStream::new(chat.clone(), "!r".into(), "t", settings());
    s.push("a");
    s.flush().await.unwrap();
    s.push("b");
    let started = Instant::now();
    assert!(s.finish(None).await.is_err());
    let waited = started.elapsed();
    assert!(waited >= settings().patience, "{waited:?}");
    assert!(
        waited < settings().patience + Duration::from_secs(10),
        "{waited:?}"
    );
    // What is left for the outbox: the posted message's final text, as an edit.
    let left = s.undelivered();
    assert_eq!(left.len(), 1, "{left:?}");
    assert_eq!(left[0].content.body, "ab");
    assert_eq!(
        left[0].event_id.as_ref().map(|id| id.as_str()),
        Some(s.event_ids()[0].as_str())
    );
}

#[tokio::test(start_paused = true)]
async fn messages_never_posted_are_left_to_post_under_their_transaction_id() {
    let chat = FakeChat::new();
    chat.fail_calls(&(1..=1000).collect::<Vec<u32>>());
    let quick = StreamSettings {
        patience: Duration::from_secs(5),
        ..settings()
    };
    let mut s = ReplyStream::new(chat.clone(), "!r".into(), "t-never", quick);
    s.push("never posted");
    assert!(s.finish(Some("⏹️ Stopped.".into())).await.is_err());
    let left = s.undelivered();
    assert_eq!(left.len(), 1, "{left:?}");
    assert_eq!(left[0].event_id, None);
    assert_eq!(left[0].txn, "t-never-0");
    assert_eq!(left[0].content.body, "never posted\n\n⏹️ Stopped.");
}

#[test]
fn split_keeps_text_and_prefers_boundaries_outside_code() {
    let text = format!(
        "{}\n\n```\n{}\n```\n{}",
        "a".repeat(500),
        "code line\n".repeat(100),
        "tail ".repeat(200)
    );
    let parts = split_reply(&text, 1_000);
    assert_eq!(parts.concat(), text);
    assert!(parts.iter().all(|p| p.len() <= 1_000));
    assert_eq!(parts[0], format!("{}\n\n", "a".repeat(500)));
    // Stable: the first part does not move when more text arrives.
    let longer = format!("{text} and more");
    assert_eq!(split_reply(&longer, 1_000)[0], parts[0]);
}

#[test]
fn boundaries_found_while_streaming_match_splitting_the_whole_text() {
    let text: String = (0..400)
        .map(|i| match i % 7 {
            0 => "```\ncode\n".to_owned(),
            3 => "\n".to_owned(),
            _ => format!("line {i} with some words ü\n"),
        })
        .collect();
    for chunk_size in [1, 7, 64, 5_000] {
        let mut stream = ReplyStream::new(
            FakeChat::new(),
            "!r".into(),
            "t",
            StreamSettings {
                interval: Duration::from_secs(1),
                max_edits: 10,
                max_bytes: 1_000,
                patience: crate::core::view::live::MAX_OUTAGE,
                ..Default::default()
            },
        );
        let chars: Vec<char> = text.chars().collect();
        for chunk in chars.chunks(chunk_size) {
            stream.push(&chunk.iter().collect::<String>());
        }
        let mut parts = Vec::new();
        let mut start = 0;
        for &cut in stream.cuts.iter().chain([text.len()].iter()) {
            parts.push(&text[start..cut]);
            start = cut;
        }
        assert_eq!(parts, split_reply(&text, 1_000), "chunks of {chunk_size}");
    }
}

#[test]
fn split_handles_text_without_breaks_and_multibyte_characters() {
    let text = "é".repeat(1_500);
    let parts = split_reply(&text, 1_001);
    assert_eq!(parts.concat(), text);
    assert!(parts.iter().all(|p| p.len() <= 1_001));
}

#[test]
fn oversized_html_is_dropped_rather_than_sending_an_invalid_event() {
    let text = "<".repeat(10_000);
    let msg = to_message(&text, Default::default());
    assert_eq!(msg.html, None);
    assert_eq!(msg.body, text);
}

/// Whether each request of `log` carried the live marker, in order.
fn live_flags(log: &[Sent]) -> Vec<bool> {
    log.iter()
        .filter_map(|sent| match sent {
            Sent::Send { msg, .. } | Sent::Edit { msg, .. } => Some(msg.live),
            _ => None,
        })
        .collect()
}

#[tokio::test(start_paused = true)]
async fn a_streamed_answer_is_live_on_every_request_but_its_last() {
    let chat = FakeChat::new();
    let mut s = ReplyStream::new(chat.clone(), "!r".into(), "t-live", settings());
    drive(&mut s, &chunks(30), Duration::from_millis(200)).await;
    s.finish(None).await.unwrap();
    let flags = live_flags(&chat.log());
    assert!(flags.len() >= 3, "{flags:?}");
    assert!(
        flags[..flags.len() - 1].iter().all(|live| *live),
        "{flags:?}"
    );
    assert!(!flags[flags.len() - 1], "the final edit drops the marker");
}

#[tokio::test(start_paused = true)]
async fn an_answer_already_shown_whole_gets_one_more_edit_to_drop_the_marker() {
    let chat = FakeChat::new();
    let mut s = ReplyStream::new(chat.clone(), "!r".into(), "t-live2", settings());
    s.push("all of it");
    s.flush().await.unwrap();
    s.finish(None).await.unwrap();
    let log = chat.log();
    assert_eq!(live_flags(&log), vec![true, false], "{log:?}");
    assert_eq!(chat.shown("!r"), vec!["all of it".to_string()]);
    // Once finished, nothing is sent again.
    assert_eq!(s.next_flush_at(), None);
}

#[tokio::test(start_paused = true)]
async fn a_reply_posted_whole_at_its_end_is_never_live() {
    let chat = FakeChat::new();
    let mut s = ReplyStream::new(chat.clone(), "!r".into(), "t-live3", settings());
    s.push("quick");
    s.finish(None).await.unwrap();
    assert_eq!(live_flags(&chat.log()), vec![false]);
}

#[tokio::test(start_paused = true)]
async fn each_full_message_of_a_long_reply_ends_without_the_marker() {
    let chat = FakeChat::new();
    let mut s = ReplyStream::new(chat.clone(), "!r".into(), "t-live4", settings());
    let parts: Vec<String> = (0..300)
        .map(|i| format!("line {i} of the answer\n"))
        .collect();
    drive(&mut s, &parts, Duration::from_millis(20)).await;
    // Every message but the open one is complete and no longer live, even before the end.
    let log = chat.log();
    let mut last_request = std::collections::HashMap::new();
    for sent in &log {
        match sent {
            Sent::Send { event_id, msg, .. } | Sent::Edit { event_id, msg, .. } => {
                last_request.insert(event_id.clone(), msg.live);
            }
            _ => {}
        }
    }
    let ids = s.event_ids();
    assert!(ids.len() >= 3, "{} messages", ids.len());
    for id in &ids[..ids.len() - 1] {
        assert!(!last_request[id.as_str()], "{id} is still live");
    }
    s.finish(None).await.unwrap();
    let log = chat.log();
    let last = log
        .iter()
        .rev()
        .find_map(|sent| match sent {
            Sent::Edit { event_id, msg, .. } if event_id == ids.last().unwrap().as_str() => {
                Some(msg.live)
            }
            _ => None,
        })
        .unwrap();
    assert!(!last, "the last message's final edit drops the marker");
}

#[tokio::test(start_paused = true)]
async fn without_the_setting_no_request_is_live() {
    let chat = FakeChat::new();
    let plain = StreamSettings {
        live: false,
        ..settings()
    };
    let mut s = ReplyStream::new(chat.clone(), "!r".into(), "t-live5", plain);
    drive(&mut s, &chunks(30), Duration::from_millis(200)).await;
    s.push("end");
    s.flush().await.unwrap();
    s.finish(None).await.unwrap();
    let flags = live_flags(&chat.log());
    assert!(
        flags.len() >= 3 && flags.iter().all(|live| !live),
        "{flags:?}"
    );
}

#[tokio::test(start_paused = true)]
async fn a_message_left_live_by_an_outage_is_left_for_the_outbox_without_the_marker() {
    let chat = FakeChat::new();
    chat.fail_calls(&(2..=1000).collect::<Vec<u32>>());
    let quick = StreamSettings {
        patience: Duration::from_secs(5),
        ..settings()
    };
    let mut s = ReplyStream::new(chat.clone(), "!r".into(), "t-live6", quick);
    s.push("shown whole");
    s.flush().await.unwrap();
    assert!(s.finish(None).await.is_err());
    let left = s.undelivered();
    assert_eq!(left.len(), 1, "{left:?}");
    assert_eq!(left[0].content.body, "shown whole");
    assert!(!left[0].content.live);
}

#[tokio::test(start_paused = true)]
async fn the_edit_that_only_drops_the_marker_does_not_wait_an_interval() {
    let chat = FakeChat::new();
    let mut s = ReplyStream::new(chat.clone(), "!r".into(), "t-live7", settings());
    s.push("short");
    s.flush().await.unwrap();
    let started = Instant::now();
    s.finish(None).await.unwrap();
    assert!(
        started.elapsed() < settings().interval,
        "{:?}",
        started.elapsed()
    );
    assert_eq!(live_flags(&chat.log()), vec![true, false]);
    // A rate limit is still waited out.
    let chat = FakeChat::new();
    chat.rate_limit_calls(&[2], Duration::from_secs(3));
    let mut s = ReplyStream::new(chat.clone(), "!r".into(), "t-live8", settings());
    s.push("short");
    s.flush().await.unwrap();
    let started = Instant::now();
    s.finish(None).await.unwrap();
    assert!(
        started.elapsed() >= Duration::from_secs(3),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(chat.shown("!r"), vec!["short".to_string()]);
}

#[tokio::test(start_paused = true)]
async fn what_comes_after_the_work_is_a_new_message_below_it() {
    let chat = FakeChat::new();
    let mut s = ReplyStream::new(chat.clone(), "!r".into(), "t-work", settings());
    // Nothing written yet: the work goes up first, and no message is cut.
    s.break_after_work();
    s.push("Before I answer, I look at the workspace.");
    s.flush().await.unwrap();
    // A card went up below it; the answer follows in a message of its own.
    s.break_after_work();
    s.push("The workspace holds two files.");
    s.finish(Some("⏹️ Stopped".into())).await.unwrap();
    let shown = chat.shown("!r");
    assert_eq!(
        shown,
        [
            "Before I answer, I look at the workspace.",
            "The workspace holds two files.\n\n⏹️ Stopped"
        ]
    );
    assert_eq!(
        s.text(),
        "Before I answer, I look at the workspace.The workspace holds two files."
    );
    assert_eq!(s.event_ids().len(), 2);
    // The first message was posted live and ended without the marker.
    let first = &chat.messages("!r")[0];
    assert!(!first.live, "{first:?}");

    // Work after the last words, and nothing more: the footer ends the message above it.
    let chat = FakeChat::new();
    let mut s = ReplyStream::new(chat.clone(), "!r".into(), "t-work2", settings());
    s.push("Running the tests.");
    s.flush().await.unwrap();
    s.break_after_work();
    s.finish(Some("usage".into())).await.unwrap();
    assert_eq!(chat.shown("!r"), ["Running the tests.\n\nusage"]);
}
