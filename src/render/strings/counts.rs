//! Counted things as people write them: "no messages", "1 message", "2 messages", never
//! "message(s)".

/// `n` of a thing: `one` names one of it, `many` several (or none): "no messages",
/// "1 message", "3 messages".
pub fn count(n: usize, one: &str, many: &str) -> String {
    match n {
        0 => format!("no {many}"),
        1 => format!("1 {one}"),
        n => format!("{n} {many}"),
    }
}

/// Like [`count`], but a number even for none ("0 agents"), where "no" would read wrong.
pub fn number(n: usize, one: &str, many: &str) -> String {
    match n {
        1 => format!("1 {one}"),
        n => format!("{n} {many}"),
    }
}

/// The verb that goes with `n` things: `one` for one (`waits`), `many` otherwise (`wait`).
pub fn agree<'a>(n: usize, one: &'a str, many: &'a str) -> &'a str {
    if n == 1 { one } else { many }
}

#[cfg(test)]
mod tests {
    use super::super::{StatusLine, agents_heading, queue_kept_at_shutdown, status, thread_status};
    use super::*;

    #[test]
    fn counts_read_as_people_write_them() {
        for (n, want) in [(0, "no messages"), (1, "1 message"), (2, "2 messages")] {
            assert_eq!(count(n, "message", "messages"), want);
        }
        assert_eq!(number(0, "agent", "agents"), "0 agents");
        assert_eq!(number(1, "agent", "agents"), "1 agent");
        assert_eq!(agree(1, "waits", "wait"), "waits");
        assert_eq!(agree(2, "waits", "wait"), "wait");
    }

    #[test]
    fn status_and_other_sentences_count_in_words_and_status_speaks_of_usage() {
        let line = |queued, polls| StatusLine {
            agent: "demo",
            running: false,
            waiting: false,
            queued,
            has_session: true,
            mode: None,
            polls,
            usage: None,
            title: None,
        };
        let one = status(&line(1, 1));
        assert!(
            one.ends_with("📊 No usage reported by the agent yet."),
            "{one}"
        );
        assert!(one.contains("1 message queued"), "{one}");
        assert!(one.contains("1 permission request waits"), "{one}");
        let none = status(&line(0, 2));
        assert!(none.contains("no messages queued"), "{none}");
        assert!(none.contains("2 permission requests wait"), "{none}");
        let texts = [
            one,
            none,
            thread_status("demo", "link", false, 1),
            queue_kept_at_shutdown(1),
            agents_heading(1, Some(1)),
        ];
        for text in texts {
            assert!(!text.contains("(s)"), "{text}");
        }
    }
}
