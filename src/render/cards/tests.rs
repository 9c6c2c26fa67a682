//! Cards, polls and plans as people see them.

use super::*;

fn ls() -> ToolCallFields {
    ToolCallFields {
        id: "t1".into(),
        title: Some("bash: ls".into()),
        kind: Some(ToolKind::Execute),
        status: Some(ToolStatus::Pending),
        raw_input: Some(serde_json::json!({"command": "ls -la"})),
        ..Default::default()
    }
}

#[test]
fn a_card_shows_status_kind_title_command_and_output_tail() {
    let mut tool = ls();
    let card = tool_card(&tool, CardStatus::Reported(ToolStatus::Pending));
    assert!(card.notice);
    assert_eq!(card.body, "🕓 💻 bash: ls · pending\n$ ls -la");
    tool.content = Some(vec![ToolContent::Text(
        (1..=20).map(|i| format!("line {i}\n")).collect(),
    )]);
    let card = tool_card(&tool, CardStatus::Reported(ToolStatus::Completed));
    assert!(card.body.starts_with("✅ 💻 bash: ls · completed"));
    assert!(
        card.body.contains("… 12 lines before\nline 13"),
        "{}",
        card.body
    );
    assert!(card.body.ends_with("line 20"));
    let closed = tool_card(&tool, CardStatus::Cancelled);
    assert!(closed.body.starts_with("⏹️ 💻 bash: ls · cancelled"));
}

#[test]
fn a_card_escapes_what_the_agent_wrote() {
    let tool = ToolCallFields {
        id: "t".into(),
        title: Some("<script>x</script>".into()),
        ..Default::default()
    };
    let html = tool_card(&tool, CardStatus::Unknown).html.unwrap();
    assert!(html.contains("&lt;script&gt;"), "{html}");
    assert!(!html.contains("<script>"));
}

#[test]
fn an_edit_shows_a_short_diff() {
    let tool = ToolCallFields {
        id: "t".into(),
        title: Some("edit_file: a.rs".into()),
        kind: Some(ToolKind::Edit),
        content: Some(vec![ToolContent::Diff {
            path: "/w/a.rs".into(),
            old: Some("one\ntwo\nthree\n".into()),
            new: "one\n2\nthree\n".into(),
        }]),
        ..Default::default()
    };
    let card = tool_card(&tool, CardStatus::Reported(ToolStatus::Pending));
    assert!(card.body.contains("changes /w/a.rs"), "{}", card.body);
    assert!(card.body.contains("-two\n+2"), "{}", card.body);
    assert!(card.html.unwrap().contains("language-diff"));
}

fn poll_of(tool: &ToolCallFields) -> OutMessage {
    poll(&PollView {
        agent: "Demo",
        tool,
        choices: &[],
        typed: &[],
        prefix: "!",
        timeout: Duration::from_secs(60),
    })
}

#[test]
fn a_poll_shows_hidden_characters() {
    // "rm -rf ~" reads "rm -rf ~/tmp-cleanup" with a right-to-left override.
    let tool = ToolCallFields {
        id: "t".into(),
        title: Some("clean\u{202E}puekaelc-pmt\u{200B}".into()),
        kind: Some(ToolKind::Execute),
        raw_input: Some(serde_json::json!({"command": "echo ok\u{2066} && rm -rf ~\u{2069}"})),
        ..Default::default()
    };
    let shown = poll_of(&tool);
    for text in [&shown.body, shown.html.as_ref().unwrap()] {
        assert!(
            !text.contains('\u{202E}') && !text.contains('\u{2066}'),
            "{text}"
        );
        assert!(
            text.contains("<U+202E>") || text.contains("&lt;U+202E&gt;"),
            "{text}"
        );
        assert!(text.contains("U+200B") && text.contains("U+2069"), "{text}");
    }
    // Ordinary text is left alone, tool cards too.
    assert_eq!(
        reveal("plain ✅ text\n\tindented"),
        "plain ✅ text\n\tindented"
    );
    let card = tool_card(&tool, CardStatus::Reported(ToolStatus::Pending));
    assert!(card.body.contains('\u{202E}'));
}

#[test]
fn a_poll_shows_the_whole_diff_folded() {
    let old: String = (0..200).map(|i| format!("line {i}\n")).collect();
    // Every tenth line changes: far more diff than a card shows.
    let new: String = (0..200)
        .map(|i| match i {
            5 => "line five\n".to_string(),
            150 => "gone\n".to_string(),
            i if i % 10 == 0 => format!("changed {i}\n"),
            i => format!("line {i}\n"),
        })
        .collect();
    let tool = ToolCallFields {
        id: "t".into(),
        title: Some("edit".into()),
        kind: Some(ToolKind::Edit),
        content: Some(vec![ToolContent::Diff {
            path: "/w/a.rs".into(),
            old: Some(old.clone()),
            new,
        }]),
        ..Default::default()
    };
    let shown = poll_of(&tool);
    // Both changes, far apart, are in the poll: nothing approved goes unseen.
    assert!(
        shown.body.contains("+line five") && shown.body.contains("+gone"),
        "{}",
        shown.body
    );
    let html = shown.html.unwrap();
    assert!(
        html.contains("<details><summary>The whole change"),
        "{html}"
    );
    assert!(html.contains("+gone"), "{html}");
    // A change too long for one message says how much is not shown.
    let huge = ToolCallFields {
        content: Some(vec![ToolContent::Diff {
            path: "/w/b.rs".into(),
            old: None,
            new: format!("{}\n", "<x>".repeat(20)).repeat(2000),
        }]),
        ..tool
    };
    let shown = poll_of(&huge);
    assert!(
        shown
            .body
            .contains("do not fit in a message and are not shown"),
        "{}",
        &shown.body[..200]
    );
    assert!(shown.body.len() + shown.html.unwrap().len() < 60_000);
}

#[test]
fn raw_input_is_summarised_when_there_is_no_command_or_diff() {
    let tool = ToolCallFields {
        id: "t".into(),
        title: Some("fetch".into()),
        kind: Some(ToolKind::Fetch),
        raw_input: Some(serde_json::json!({"url": "https://example.org", "big": "x".repeat(500)})),
        ..Default::default()
    };
    let body = tool_card(&tool, CardStatus::Reported(ToolStatus::Pending)).body;
    assert!(body.contains("\"url\":\"https://example.org\""), "{body}");
    assert!(body.ends_with('…'), "{body}");
}

#[test]
fn a_confirmation_shows_its_message_as_text_not_json() {
    let tool = ToolCallFields {
        id: "t".into(),
        title: Some("confirm".into()),
        kind: Some(ToolKind::Other),
        raw_input: Some(serde_json::json!({
            "title": "Delete the branch?",
            "message": "This removes `old-work` for good."
        })),
        ..Default::default()
    };
    let body = tool_card(&tool, CardStatus::Reported(ToolStatus::Pending)).body;
    assert!(
        body.ends_with("Delete the branch?: This removes `old-work` for good."),
        "{body}"
    );
    assert!(!body.contains('{'), "no JSON: {body}");
    // The poll that asks for it, too.
    let outcome = PollOutcome::TurnEnded;
    let poll = poll_settled("pi", &tool, &outcome).body;
    assert!(poll.contains("Delete the branch?: This removes"), "{poll}");
    assert!(!poll.contains('{'), "no JSON: {poll}");
}

#[test]
fn a_plan_is_a_checklist() {
    let entries = vec![
        PlanEntry {
            text: "Read".into(),
            status: PlanStatus::Completed,
        },
        PlanEntry {
            text: "Write".into(),
            status: PlanStatus::InProgress,
        },
        PlanEntry {
            text: "Test".into(),
            status: PlanStatus::Pending,
        },
    ];
    let m = plan(&entries);
    assert_eq!(m.body, "📋 Plan (1/3 done)\n✅ Read\n▶️ Write\n⬜ Test");
    assert!(m.html.unwrap().contains("<li>▶️ Write</li>"));
}

#[test]
fn usage_line_table() {
    let u = TokenUsage {
        input: 1234,
        output: 56,
        thought: None,
        cached_read: Some(0),
        total: 1290,
    };
    let cost = |amount: f64| Cost {
        amount,
        currency: "USD".into(),
    };
    let (dear, cheap) = (cost(0.256), cost(0.0042));
    type Row<'a> = (
        Option<(u64, u64)>,
        Option<&'a TokenUsage>,
        Option<&'a Cost>,
        Option<&'a str>,
    );
    let table: &[Row] = &[
        (None, None, None, None),
        (Some((500, 0)), None, None, Some("📊 context 500 tokens")),
        (
            Some((12_345, 200_000)),
            Some(&u),
            None,
            Some("📊 context 12k/200k (6%) · 1.2k in · 56 out"),
        ),
        (
            Some((500, 0)),
            None,
            Some(&dear),
            Some("📊 context 500 tokens · cost 0.26 USD"),
        ),
        (None, None, Some(&cheap), Some("📊 cost 0.0042 USD")),
    ];
    for (context, counts, cost, expected) in table {
        assert_eq!(usage_line(*context, *counts, *cost).as_deref(), *expected);
    }
}

#[test]
fn thinking_is_short_then_folded() {
    assert_eq!(thinking(None, "").body, "💭 Thinking…");
    let done = thinking(Some(Duration::from_secs(4)), "a <b>\nplan");
    assert_eq!(done.body, "💭 Thought for 4 s");
    let html = done.html.unwrap();
    assert!(html.starts_with("<details><summary>"), "{html}");
    assert!(html.contains("a &lt;b&gt;<br>plan"), "{html}");
}

proptest::proptest! {
    /// Whatever a tool's title holds, a poll shows no invisible or direction-changing
    /// character as such.
    #[test]
    fn nothing_stays_hidden_in_revealed_text(text in "\\PC*|[\u{200B}-\u{200F}\u{202A}-\u{202E}\u{2066}-\u{2069}a ]*") {
        let shown = reveal(&text);
        let hidden = |c: char| {
            matches!(c, '\u{200B}'..='\u{200F}' | '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}')
        };
        proptest::prop_assert!(!shown.chars().any(hidden), "{:?}", shown);
    }
}
