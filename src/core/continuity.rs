//! Getting a conversation back when its ACP session is gone (gateway restart, agent
//! restart). Most agents cannot `session/load`, so the new session's first prompt carries the
//! earlier conversation from the transcript: the most recent exchanges that fit a size
//! budget, clearly labelled, with the new message last. Pure functions; the channel decides
//! when to use them. See `docs/continuity.md`.

use crate::store::TranscriptEntry;

/// The label that opens a re-injected conversation.
pub const PREAMBLE_HEADER: &str = "[Earlier conversation in this room, restored by Sidekicks \
because your previous session ended. It is context only: do not answer it again.]";

/// The label between the earlier conversation and the new message.
pub const NEW_MESSAGE_HEADER: &str = "[New message]";

/// The earlier conversation as text for a new session, or `None` when there is none.
///
/// Takes the most recent entries whose rendering fits in `budget` characters (whole entries
/// only, oldest first in the result), each quoted line by line so nothing in it can be read
/// as an instruction of its own. Replies that were stopped or cut by an error are kept (the
/// agent did say that much) and marked as incomplete.
pub fn preamble(entries: &[TranscriptEntry], agent_name: &str, budget: usize) -> Option<String> {
    let mut kept: Vec<String> = Vec::new();
    let mut used = 0;
    for entry in entries.iter().rev() {
        if entry.body.trim().is_empty() {
            continue;
        }
        let block = render(entry, agent_name);
        let size = block.chars().count();
        if used + size > budget {
            break;
        }
        used += size;
        kept.push(block);
    }
    if kept.is_empty() {
        return None;
    }
    kept.reverse();
    Some(format!("{PREAMBLE_HEADER}\n\n{}", kept.join("\n")))
}

/// The first prompt of a new session: the earlier conversation, then the new message as the
/// person wrote it.
pub fn compose(preamble: &str, message: &str) -> String {
    format!("{preamble}\n{NEW_MESSAGE_HEADER}\n{message}")
}

fn render(entry: &TranscriptEntry, agent_name: &str) -> String {
    let who = if entry.role == "agent" {
        format!("{agent_name} (you) answered")
    } else {
        format!("{} wrote", entry.sender)
    };
    let quoted: String = entry.body.lines().map(|l| format!("> {l}\n")).collect();
    let cut = match entry.stop_reason.as_deref() {
        Some("cancelled") => " (the answer was stopped before it was complete)",
        Some("error") => " (the answer was cut short by an error)",
        Some("interrupted") => " (the answer was cut short when Sidekicks stopped)",
        _ => "",
    };
    format!("{who}{cut}:\n{quoted}")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(role: &str, body: &str, stop: Option<&str>) -> TranscriptEntry {
        TranscriptEntry {
            role: role.into(),
            sender: if role == "agent" {
                "@demo:x".into()
            } else {
                "@alice:x".into()
            },
            event_id: None,
            body: body.into(),
            stop_reason: stop.map(str::to_owned),
            created_at: 0,
        }
    }

    #[test]
    fn nothing_to_restore_gives_no_preamble() {
        assert_eq!(preamble(&[], "Demo", 1000), None);
        assert_eq!(preamble(&[entry("user", "  ", None)], "Demo", 1000), None);
    }

    #[test]
    fn entries_are_labelled_and_quoted_oldest_first() {
        let p = preamble(
            &[
                entry("user", "%say hi\nsecond line", None),
                entry("agent", "hi", Some("end_turn")),
            ],
            "Demo",
            1000,
        )
        .unwrap();
        assert_eq!(
            p,
            format!(
                "{PREAMBLE_HEADER}\n\n@alice:x wrote:\n> %say hi\n> second line\n\nDemo (you) answered:\n> hi\n"
            )
        );
        assert!(
            !p.lines().any(|l| l.starts_with('%')),
            "no line can be taken for an instruction"
        );
        assert_eq!(
            compose(&p, "next"),
            format!("{p}\n{NEW_MESSAGE_HEADER}\nnext")
        );
    }

    #[test]
    fn the_budget_keeps_the_most_recent_whole_entries() {
        let entries: Vec<TranscriptEntry> = (0..10)
            .map(|i| entry("user", &format!("message {i}"), None))
            .collect();
        // Each rendered entry is "@alice:x wrote:\n> message N\n" = 30 characters.
        let p = preamble(&entries, "Demo", 95).unwrap();
        assert!(p.contains("message 7") && p.contains("message 9"), "{p}");
        assert!(!p.contains("message 6"), "{p}");
        assert!(p.find("message 7") < p.find("message 9"));
    }

    #[test]
    fn incomplete_replies_are_kept_and_marked() {
        let p = preamble(
            &[
                entry("agent", "", Some("error")),
                entry("agent", "a third of", Some("error")),
                entry("agent", "half an answ", Some("cancelled")),
                entry("agent", "cut by a cra", Some("interrupted")),
            ],
            "Demo",
            1000,
        )
        .unwrap();
        assert!(p.contains(
            "Demo (you) answered (the answer was cut short when Sidekicks stopped):\n> cut by a cra"
        ));
        assert!(
            p.contains("Demo (you) answered (the answer was cut short by an error):\n> a third of")
        );
        assert!(p.contains("Demo (you) answered (the answer was stopped before it was complete):"));
        assert_eq!(
            p.matches("answered").count(),
            3,
            "an empty reply is left out"
        );
    }
}
