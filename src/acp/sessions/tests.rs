//! The sessions' bookkeeping, tested without a process.

use super::*;
use crate::acp::dialect::{ACP, CLAUDE_CODE, CODEX, GEMINI};
use crate::model::agent::PermissionRequest;

fn call(id: &str, status: ToolStatus) -> ToolCallFields {
    ToolCallFields::status_only(&id.into(), status)
}

fn drain(rx: &mut mpsc::Receiver<AgentEvent>) -> Vec<AgentEvent> {
    let mut out = Vec::new();
    while let Ok(e) = rx.try_recv() {
        out.push(e);
    }
    out
}

/// A folder for a session whose files the test does not touch.
fn any_folder() -> Arc<Folder> {
    Arc::new(Folder::open(&std::env::temp_dir(), Path::new("")).unwrap())
}

fn sessions(dialect: Dialect) -> (Sessions, mpsc::Receiver<AgentEvent>) {
    let mut s = Sessions::default();
    s.set_dialect(dialect);
    let rx = s.register("s", any_folder());
    (s, rx)
}

#[test]
fn output_reported_beside_a_calls_fields_becomes_its_raw_output_so_far() {
    use crate::model::agent::TerminalOutput;
    let (mut s, mut rx) = sessions(CODEX);
    let printed = |id: &str, status, output| ToolCallFields {
        terminal_output: Some(output),
        ..call(id, status)
    };
    let append = |t: &str| TerminalOutput::Append(t.into());
    s.deliver(
        "s",
        AgentEvent::ToolCall(printed("c", ToolStatus::InProgress, append("one\n"))),
    );
    s.deliver(
        "s",
        AgentEvent::ToolCallUpdate(printed("c", ToolStatus::InProgress, append("two\n"))),
    );
    s.deliver(
        "s",
        AgentEvent::ToolCallUpdate(printed(
            "other",
            ToolStatus::Completed,
            TerminalOutput::Whole("all".into()),
        )),
    );
    // Output of its own wins.
    let own = ToolCallFields {
        content: Some(vec![ToolContent::Text("its own".into())]),
        ..printed("c", ToolStatus::Completed, append("three\n"))
    };
    s.deliver("s", AgentEvent::ToolCallUpdate(own));
    let raw: Vec<Option<String>> = drain(&mut rx)
        .into_iter()
        .map(|e| match e {
            AgentEvent::ToolCall(f) | AgentEvent::ToolCallUpdate(f) => {
                assert!(f.terminal_output.is_none(), "consumed here");
                f.raw_output.map(|v| v.as_str().unwrap().to_owned())
            }
            other => panic!("{other:?}"),
        })
        .collect();
    let some = |t: &str| Some(t.to_owned());
    assert_eq!(raw, [some("one\n"), some("one\ntwo\n"), some("all"), None]);
}

#[test]
fn a_write_shows_in_the_latest_open_edit_call_else_in_a_card_of_its_own() {
    let (mut s, mut rx) = sessions(ACP);
    let edit = |id: &str, status| ToolCallFields {
        kind: Some(ToolKind::Edit),
        ..call(id, status)
    };
    s.deliver(
        "s",
        AgentEvent::ToolCall(edit("e1", ToolStatus::InProgress)),
    );
    s.deliver(
        "s",
        AgentEvent::ToolCall(call("run", ToolStatus::InProgress)),
    );
    drain(&mut rx);
    s.show_write("s", Path::new("a.txt"), Some("old".into()), "new");
    let shown = drain(&mut rx);
    let [AgentEvent::ToolCallUpdate(update)] = &shown[..] else {
        panic!("{shown:?}")
    };
    assert_eq!(update.id, "e1", "the open edit call, not the command");
    assert!(
        matches!(&update.content.as_deref(), Some([ToolContent::Diff { old: Some(o), .. }]) if o == "old")
    );
    s.deliver(
        "s",
        AgentEvent::ToolCallUpdate(edit("e1", ToolStatus::Completed)),
    );
    drain(&mut rx);
    s.show_write("s", Path::new("b.txt"), None, "new");
    let shown = drain(&mut rx);
    let [AgentEvent::ToolCall(card)] = &shown[..] else {
        panic!("{shown:?}")
    };
    assert_eq!(card.title.as_deref(), Some("Write b.txt"));
    assert_eq!(card.status, Some(ToolStatus::Completed));
}

#[test]
fn what_is_kept_for_sessions_nobody_opened_is_bounded_and_forgetting_frees_it() {
    let (mut s, _rx) = sessions(ACP);
    for i in 0..1_000 {
        s.deliver(&format!("stray-{i}"), AgentEvent::MessageChunk("x".into()));
    }
    assert_eq!(s.early.len(), EARLY_SESSIONS);
    assert!(s.facts.len() <= EARLY_SESSIONS + 1, "{}", s.facts.len());
    // An update for an open session still gets through.
    s.deliver("s", AgentEvent::MessageChunk("for s".into()));
    assert_eq!(
        drain(&mut s.register("s", any_folder())).len(),
        0,
        "re-registering starts afresh"
    );
    s.unregister("s");
    assert_eq!(s.count(), 0);
    assert!(!s.facts.contains_key("s"));
}

fn permission(id: &str) -> AgentEvent {
    let (reply, _) = tokio::sync::oneshot::channel();
    AgentEvent::Permission(PermissionRequest {
        tool: ToolCallFields {
            id: id.into(),
            title: Some("bash: ls".into()),
            ..ToolCallFields::default()
        },
        options: vec![],
        resumes_when_allowed: false,
        reply,
    })
}

#[test]
fn canonical_acp_passes_everything_on_unchanged() {
    let (mut s, mut rx) = sessions(ACP);
    s.deliver("s", AgentEvent::MessageChunk(String::new()));
    s.deliver("s", AgentEvent::ToolCall(call("c1", ToolStatus::Pending)));
    s.deliver("s", permission("c1"));
    s.deliver(
        "s",
        AgentEvent::ToolCall(call("c2", ToolStatus::InProgress)),
    );
    assert_eq!(
        s.turn_ended("s", StopReason::Cancelled),
        StopReason::Cancelled
    );
    let events = drain(&mut rx);
    assert_eq!(events.len(), 4, "nothing added, nothing dropped");
}

#[test]
fn open_calls_are_closed_after_a_cancel_and_their_late_updates_dropped() {
    let (mut s, mut rx) = sessions(CLAUDE_CODE);
    s.turn_started("s");
    s.deliver(
        "s",
        AgentEvent::ToolCall(call("done", ToolStatus::InProgress)),
    );
    s.deliver(
        "s",
        AgentEvent::ToolCallUpdate(call("done", ToolStatus::Completed)),
    );
    s.deliver(
        "s",
        AgentEvent::ToolCall(call("left", ToolStatus::InProgress)),
    );
    s.cancel_requested("s");
    drain(&mut rx);
    assert_eq!(
        s.turn_ended("s", StopReason::Cancelled),
        StopReason::Cancelled
    );
    let closing = drain(&mut rx);
    assert_eq!(closing.len(), 1, "{closing:?}");
    assert!(
        matches!(&closing[0], AgentEvent::ToolCallUpdate(f) if f.id == "left" && f.status == Some(ToolStatus::Cancelled))
    );
    s.deliver(
        "s",
        AgentEvent::ToolCallUpdate(call("left", ToolStatus::InProgress)),
    );
    assert!(
        drain(&mut rx).is_empty(),
        "a late update does not reopen it"
    );
}

#[test]
fn a_turn_the_agent_ended_after_a_refusal_is_no_stop_for_any_agent() {
    for dialect in crate::acp::dialect::ALL {
        let (mut s, _rx) = sessions(dialect);
        s.turn_started("s");
        s.refused("s");
        assert_eq!(
            s.turn_ended("s", StopReason::Cancelled),
            StopReason::EndedAfterRefusal,
            "{}",
            dialect.name
        );
        // Without a refusal, or after our cancel, `cancelled` stays what it says.
        s.turn_started("s");
        assert_eq!(
            s.turn_ended("s", StopReason::Cancelled),
            StopReason::Cancelled
        );
    }
    let (mut s, _rx) = sessions(CLAUDE_CODE);
    // A new turn forgets the refusal; a stop asked for stays a stop.
    s.turn_started("s");
    s.refused("s");
    s.cancel_requested("s");
    assert_eq!(
        s.turn_ended("s", StopReason::Cancelled),
        StopReason::Cancelled
    );
}

#[test]
fn a_permission_request_for_an_unannounced_call_is_announced_first_once() {
    for dialect in crate::acp::dialect::ALL {
        let (mut s, mut rx) = sessions(dialect);
        announced_once(&mut s, &mut rx);
    }
}

fn announced_once(s: &mut Sessions, rx: &mut mpsc::Receiver<AgentEvent>) {
    s.deliver("s", permission("c1"));
    s.deliver("s", AgentEvent::ToolCall(call("c2", ToolStatus::Pending)));
    s.deliver("s", permission("c2"));
    let events = drain(rx);
    let kinds: Vec<&str> = events
        .iter()
        .map(|e| match e {
            AgentEvent::ToolCall(f) if f.id == "c1" => "announce c1",
            AgentEvent::ToolCall(_) => "announce other",
            AgentEvent::Permission(p) if p.tool.id == "c1" => "ask c1",
            AgentEvent::Permission(_) => "ask other",
            _ => "?",
        })
        .collect();
    assert_eq!(
        kinds,
        ["announce c1", "ask c1", "announce other", "ask other"]
    );
}

#[test]
fn a_call_marked_running_before_its_permission_is_reported_waiting() {
    let (mut s, mut rx) = sessions(ACP);
    s.turn_started("s");
    s.deliver(
        "s",
        AgentEvent::ToolCall(call("c1", ToolStatus::InProgress)),
    );
    s.deliver("s", permission("c1"));
    // A call announced pending is asked about as it is.
    s.deliver("s", AgentEvent::ToolCall(call("c2", ToolStatus::Pending)));
    s.deliver("s", permission("c2"));
    let asked: Vec<(String, Option<ToolStatus>, bool)> = drain(&mut rx)
        .into_iter()
        .filter_map(|e| match e {
            AgentEvent::Permission(p) => {
                Some((p.tool.id.to_string(), p.tool.status, p.resumes_when_allowed))
            }
            _ => None,
        })
        .collect();
    assert_eq!(
        asked,
        [
            ("c1".into(), Some(ToolStatus::Pending), true),
            ("c2".into(), None, false)
        ],
        "shown waiting while asked, to run again once allowed"
    );
}

#[test]
fn codex_approval_prompt_never_reaches_a_card_or_a_poll() {
    let (mut s, mut rx) = sessions(CODEX);
    let prompt = ToolContent::Text("Available Decisions: Approved Abort".into());
    let (reply, _) = tokio::sync::oneshot::channel();
    s.deliver(
        "s",
        AgentEvent::Permission(PermissionRequest {
            tool: ToolCallFields {
                id: "c1".into(),
                content: Some(vec![prompt]),
                ..ToolCallFields::default()
            },
            options: vec![],
            resumes_when_allowed: false,
            reply,
        }),
    );
    for event in drain(&mut rx) {
        let fields = match &event {
            AgentEvent::ToolCall(f) => f,
            AgentEvent::Permission(p) => &p.tool,
            other => panic!("{other:?}"),
        };
        assert_eq!(fields.content, Some(vec![]), "{event:?}");
    }
}

#[test]
fn a_replay_is_counted_by_messages_not_chunks_and_not_passed_on() {
    let mut s = Sessions::default();
    let user = || AgentEvent::UserMessageChunk("earlier".into());
    let said = |t: &str| AgentEvent::MessageChunk(t.into());
    for event in [
        user(),
        user(),
        said("a"),
        said("b"),
        AgentEvent::ToolCall(call("t1", ToolStatus::Completed)),
        said("c"),
        user(),
        said("d"),
        AgentEvent::Commands(vec![]),
    ] {
        s.deliver("s", event);
    }
    let replayed = s.drop_replay("s");
    assert_eq!(
        replayed,
        Replayed {
            prompts: 2,
            answers: 3,
            tool_calls: 1
        }
    );
    let mut rx = s.register("s", any_folder());
    let kept = drain(&mut rx);
    assert!(matches!(&kept[..], [AgentEvent::Commands(_)]), "{kept:?}");
}

#[test]
fn empty_chunks_are_dropped_for_the_gemini_dialect() {
    let (mut s, mut rx) = sessions(GEMINI);
    s.deliver("s", AgentEvent::MessageChunk(String::new()));
    s.deliver("s", AgentEvent::MessageChunk("hi".into()));
    let events = drain(&mut rx);
    assert!(matches!(&events[..], [AgentEvent::MessageChunk(t)] if t == "hi"));
}

#[test]
fn a_full_queue_drops_updates_and_tells_their_count_before_the_next_one() {
    let (mut s, mut rx) = sessions(ACP);
    let said = |i: usize| AgentEvent::MessageChunk(format!("{i} "));
    let flood = queues::SESSION_UPDATES + 10;
    for i in 0..flood {
        s.deliver("s", said(i));
    }
    let first = drain(&mut rx);
    assert_eq!(first.len(), queues::SESSION_UPDATES, "bounded");
    assert!(matches!(&first[0], AgentEvent::MessageChunk(t) if t == "0 "));
    // Room again: the count of what was dropped comes first, then the update.
    s.deliver("s", said(flood));
    let next = drain(&mut rx);
    assert!(
        matches!(&next[..], [AgentEvent::Dropped { count: 10 }, AgentEvent::MessageChunk(t)] if *t == format!("{flood} ")),
        "{next:?}"
    );
    // A permission request that finds no room is answered `cancelled`: nothing runs unasked.
    for i in 0..queues::SESSION_UPDATES {
        s.deliver("s", said(i));
    }
    let (reply, answer) = tokio::sync::oneshot::channel();
    s.deliver(
        "s",
        AgentEvent::Permission(PermissionRequest {
            tool: call("t9", ToolStatus::Pending),
            options: vec![],
            resumes_when_allowed: false,
            reply,
        }),
    );
    assert!(answer.blocking_recv().is_err(), "the request was dropped");
}
