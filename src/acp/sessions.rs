//! Where each session's updates go, with the agent's dialect applied on the way: the
//! per-session facts a dialect hook needs (announced and open tool calls, a cancel asked
//! for, a refusal given) are kept here, by shared code, and the hooks only compute.

use std::collections::{HashMap, HashSet};
use std::path::Path;
use std::sync::Arc;

use crate::workspace::folder::Folder;

use tokio::sync::mpsc;

use super::dialect::{CancelledTurn, Dialect};
use crate::model::agent::{
    AgentEvent, Replayed, StopReason, ToolCallFields, ToolContent, ToolKind, ToolStatus,
};

/// Most of a call's printed output kept (the card shows its tail).
const PRINTED_BYTES: usize = 256 * 1024;

/// Turns the output a call's update reports beside its fields into its raw output (all of
/// it so far), unless the update carries output of its own.
fn take_printed(facts: &mut Facts, fields: &mut ToolCallFields) {
    let Some(output) = fields.terminal_output.take() else {
        return;
    };
    let printed = facts.printed.entry(fields.id.clone()).or_default();
    match output {
        crate::model::agent::TerminalOutput::Append(more) => printed.push_str(&more),
        crate::model::agent::TerminalOutput::Whole(all) => *printed = all,
    }
    if printed.len() > PRINTED_BYTES {
        let mut cut = printed.len() - PRINTED_BYTES;
        while !printed.is_char_boundary(cut) {
            cut += 1;
        }
        printed.replace_range(..cut, "");
    }
    let has_own = fields.raw_output.is_some()
        || (fields.content.as_ref()).is_some_and(|c| c.iter().any(|c| !is_empty_text(c)));
    if !has_own {
        fields.raw_output = Some(serde_json::Value::String(printed.clone()));
    }
}

/// Whether `content` is an empty text (Codex announces a command with one).
fn is_empty_text(content: &ToolContent) -> bool {
    matches!(content, ToolContent::Text(t) if t.trim().is_empty())
}

/// Updates kept for a session nobody listens to yet (they arrive right after `session/new`).
const EARLY_EVENTS: usize = 1_000;
/// Sessions whose updates are held before they are registered. Session IDs are the
/// agent's to choose: an agent sending updates for ever new ones must not fill memory.
const EARLY_SESSIONS: usize = 16;

/// What the connection tracks about one session for its dialect.
#[derive(Default)]
struct Facts {
    /// Tool calls announced so far.
    announced: HashSet<String>,
    /// Tool calls announced and not finished, in announcement order.
    open: Vec<String>,
    /// Tool calls the dialect closed: later updates for them are dropped.
    closed: HashSet<String>,
    /// Whether `session/cancel` was sent during the running turn.
    cancel_requested: bool,
    /// Whether a permission request of the running turn was refused.
    refused: bool,
    /// Tool calls announced as edits, which a write through the client shows in.
    edits: HashSet<String>,
    /// Numbers the cards made for writes no edit call was open for.
    writes: u64,
    /// Open calls the agent last reported in progress.
    running: HashSet<String>,
    /// Calls reported running that are shown waiting while their permission is asked.
    held: HashSet<String>,
    /// What each call's command printed so far, as reported beside its fields
    /// (`_meta.terminal_output`).
    printed: HashMap<String, String>,
}

/// Every session's queue, with the agent's dialect.
#[derive(Default)]
pub struct Sessions {
    /// How this agent deviates from canonical ACP (set once it has said who it is).
    dialect: Dialect,
    /// The queue of each registered session.
    senders: HashMap<String, mpsc::UnboundedSender<AgentEvent>>,
    /// Updates that arrived before their session was registered (bounded).
    early: HashMap<String, Vec<AgentEvent>>,
    /// Per-session facts for the dialect.
    facts: HashMap<String, Facts>,
    /// Each registered session's folder, held open: the only place its file requests reach.
    folders: HashMap<String, Arc<Folder>>,
}

impl Sessions {
    /// Applies `dialect` from now on.
    pub fn set_dialect(&mut self, dialect: Dialect) {
        self.dialect = dialect;
    }

    /// Passes an update on to its session, normalised by the dialect. An update for a
    /// session neither registered nor already held is held only while few are.
    pub fn deliver(&mut self, session: &str, event: AgentEvent) {
        if self.dialect.skip_update.is_some_and(|skip| skip(&event)) {
            return;
        }
        if !self.senders.contains_key(session)
            && !self.early.contains_key(session)
            && self.early.len() >= EARLY_SESSIONS
        {
            tracing::debug!(session, "dropping an update for a session nobody opened");
            return;
        }
        let mut event = event;
        if let Some(shown) = self.dialect.tool_fields {
            match &mut event {
                AgentEvent::ToolCall(f) | AgentEvent::ToolCallUpdate(f) => {
                    *f = shown(std::mem::take(f))
                }
                AgentEvent::Permission(r) => r.tool = shown(std::mem::take(&mut r.tool)),
                _ => {}
            }
        }
        let facts = self.facts.entry(session.to_owned()).or_default();
        if let AgentEvent::Permission(request) = &mut event {
            // Codex asks before announcing the call, Gemini and Qwen Code announce it only
            // in the request: the call gets its card (from the request) before the poll.
            if !facts.announced.contains(&request.tool.id) {
                let announcement = announcement_from_request(&request.tool);
                self.deliver(session, AgentEvent::ToolCall(announcement));
            }
            // OpenCode and Mistral Vibe mark the call running before asking: it waits.
            let facts = self.facts.entry(session.to_owned()).or_default();
            let running = facts.running.remove(&request.tool.id);
            if running || request.tool.status == Some(ToolStatus::InProgress) {
                facts.held.insert(request.tool.id.clone());
                request.tool.status = Some(ToolStatus::Pending);
            }
        }
        let facts = self.facts.entry(session.to_owned()).or_default();
        if let AgentEvent::ToolCall(fields) | AgentEvent::ToolCallUpdate(fields) = &mut event {
            take_printed(facts, fields);
        }
        if let AgentEvent::ToolCall(fields) | AgentEvent::ToolCallUpdate(fields) = &event {
            if facts.closed.contains(&fields.id) {
                tracing::debug!(session, tool = %fields.id, "dropping an update for a tool call closed at cancel");
                return;
            }
            if matches!(event, AgentEvent::ToolCall(_)) {
                facts.announced.insert(fields.id.clone());
            }
            if fields.kind == Some(ToolKind::Edit) {
                facts.edits.insert(fields.id.clone());
            }
            track_open(facts, fields);
        }
        self.send(session, event);
    }

    fn send(&mut self, session: &str, event: AgentEvent) {
        debug_assert!(
            !matches!(&event, AgentEvent::ToolCall(f) | AgentEvent::ToolCallUpdate(f) if f.terminal_output.is_some()),
            "output reported beside a call's fields reaches the core as its raw output"
        );
        match self.senders.get(session) {
            Some(tx) => {
                let _ = tx.send(event);
            }
            None => {
                let held = self.early.entry(session.to_owned()).or_default();
                if held.len() < EARLY_EVENTS {
                    held.push(event);
                }
            }
        }
    }

    /// The agent wrote `path` through the client (`fs/write_text_file`): the diff shows in
    /// the edit call it has open (the latest), else in a card of its own.
    pub fn show_write(&mut self, session: &str, path: &Path, old: Option<String>, new: &str) {
        let facts = self.facts.entry(session.to_owned()).or_default();
        let diff = vec![ToolContent::Diff {
            path: path.display().to_string(),
            old,
            new: new.to_owned(),
        }];
        let open_edit = facts.open.iter().rev().find(|id| facts.edits.contains(*id));
        let event = match open_edit {
            Some(id) => AgentEvent::ToolCallUpdate(ToolCallFields {
                id: id.clone(),
                content: Some(diff),
                ..ToolCallFields::default()
            }),
            None => {
                facts.writes += 1;
                AgentEvent::ToolCall(ToolCallFields {
                    id: format!("sidekicks-write-{}", facts.writes),
                    title: Some(format!("Write {}", path.display())),
                    kind: Some(ToolKind::Edit),
                    status: Some(ToolStatus::Completed),
                    locations: Some(vec![path.display().to_string()]),
                    content: Some(diff),
                    ..ToolCallFields::default()
                })
            }
        };
        self.deliver(session, event);
    }

    /// A prompt starts: the facts of the previous turn no longer count (its open calls
    /// belong to it, not to the turn a cancel may end).
    pub fn turn_started(&mut self, session: &str) {
        let facts = self.facts.entry(session.to_owned()).or_default();
        facts.cancel_requested = false;
        facts.refused = false;
        facts.open.clear();
        facts.running.clear();
        facts.held.clear();
    }

    /// `session/cancel` was sent.
    pub fn cancel_requested(&mut self, session: &str) {
        self.facts
            .entry(session.to_owned())
            .or_default()
            .cancel_requested = true;
    }

    /// Whether `session/cancel` was sent during `session`'s running turn.
    pub fn cancel_was_requested(&self, session: &str) -> bool {
        self.facts.get(session).is_some_and(|f| f.cancel_requested)
    }

    /// A person answered the permission request about `tool`, with a reject option when
    /// `refused`. Before the agent hears it, the call's card reads right whatever the
    /// agent does next: a refused call still open is failed (Gemini and Qwen Code send
    /// nothing more for it), and an allowed one held as waiting runs again.
    pub fn answered(&mut self, session: &str, tool: &str, refused: bool) {
        let facts = self.facts.entry(session.to_owned()).or_default();
        let held = facts.held.remove(tool);
        let open = facts.open.iter().any(|id| id == tool);
        if refused {
            facts.refused = true;
        }
        let status = match (refused, open, held) {
            (true, true, _) => ToolStatus::Failed,
            (false, true, true) => ToolStatus::InProgress,
            _ => return,
        };
        self.deliver(
            session,
            AgentEvent::ToolCallUpdate(ToolCallFields::status_only(tool, status)),
        );
    }

    /// The agent ended a turn with `reason`: how it really ended. A cancelled turn's open
    /// tool calls are closed first when the dialect says the agent leaves them open; one it
    /// ended itself after a refusal is no stop.
    pub fn turn_ended(&mut self, session: &str, reason: StopReason) -> StopReason {
        if reason != StopReason::Cancelled {
            return reason;
        }
        let facts = self.facts.entry(session.to_owned()).or_default();
        let turn = CancelledTurn {
            cancel_requested: facts.cancel_requested,
            refused: facts.refused,
        };
        if let Some(close) = self.dialect.close_after_cancel {
            let open = std::mem::take(&mut facts.open);
            facts.closed.extend(open.iter().cloned());
            for id in open {
                self.send(session, AgentEvent::ToolCallUpdate(close(&id)));
            }
        }
        // Some agents (Codex, with its `abort` option) end the turn `cancelled` when a tool
        // is refused, though nobody asked them to stop: that is no stop.
        match (turn.cancel_requested, turn.refused) {
            (false, true) => StopReason::EndedAfterRefusal,
            _ => reason,
        }
    }

    /// A JSON-RPC error that ended a prompt, in words for the room when the dialect knows
    /// it.
    pub fn explain_error(&self, code: i64, message: &str) -> Option<String> {
        self.dialect
            .prompt_error
            .and_then(|hook| hook(code, message))
    }

    /// Stops delivering to `session` and forgets what was kept for it; until it is
    /// registered again, what arrives for it is held (within the bound of held sessions).
    pub fn unregister(&mut self, session: &str) {
        self.senders.remove(session);
        self.folders.remove(session);
        self.early.remove(session);
        self.facts.remove(session);
    }

    /// Drops what a reopened session replayed before it was registered: the room has shown
    /// it already. The agent's command list, mode and options are kept (they are state, not
    /// history).
    pub fn drop_replay(&mut self, session: &str) -> Replayed {
        let mut replayed = Replayed::default();
        if let Some(held) = self.early.get_mut(session) {
            // A run of chunks is one message.
            let mut last = "";
            for event in held.iter() {
                let kind = match event {
                    AgentEvent::Other(kind) if kind == "user_message_chunk" => "prompt",
                    AgentEvent::MessageChunk(_) => "answer",
                    AgentEvent::ToolCall(_) => "tool",
                    _ => continue,
                };
                match kind {
                    "prompt" if last != "prompt" => replayed.prompts += 1,
                    "answer" if last != "answer" => replayed.answers += 1,
                    "tool" => replayed.tool_calls += 1,
                    _ => {}
                }
                last = kind;
            }
            let before = held.len();
            held.retain(|e| {
                matches!(
                    e,
                    AgentEvent::Commands(_) | AgentEvent::ModeChanged(_) | AgentEvent::Options(_)
                )
            });
            tracing::debug!(
                session,
                replayed = before - held.len(),
                "replayed updates not shown again"
            );
        }
        // What the replay announced belongs to earlier turns.
        self.facts.remove(session);
        replayed
    }

    /// Whether a read of a missing file answers empty text (the dialect says so).
    pub fn missing_file_reads_empty(&self) -> bool {
        self.dialect.missing_file_reads_empty
    }

    /// The folder of registered session `session`.
    pub fn folder(&self, session: &str) -> Option<Arc<Folder>> {
        self.folders.get(session).cloned()
    }

    /// How many sessions are registered (open on this process).
    pub fn count(&self) -> usize {
        self.senders.len()
    }

    /// Starts delivering `session`'s updates (those held first) to the returned queue;
    /// its file requests may reach `folder`.
    pub fn register(
        &mut self,
        session: &str,
        folder: Arc<Folder>,
    ) -> mpsc::UnboundedReceiver<AgentEvent> {
        self.folders.insert(session.to_owned(), folder);
        let (tx, rx) = mpsc::unbounded_channel();
        for event in self.early.remove(session).unwrap_or_default() {
            let _ = tx.send(event);
        }
        self.senders.insert(session.to_owned(), tx);
        rx
    }
}

/// The announcement of a call first heard of in a permission request: the request's own
/// fields, pending.
fn announcement_from_request(tool: &ToolCallFields) -> ToolCallFields {
    ToolCallFields {
        title: tool.title.clone().or_else(|| Some("Tool call".to_owned())),
        kind: tool.kind.or(Some(ToolKind::Other)),
        status: Some(ToolStatus::Pending),
        ..tool.clone()
    }
}

/// Keeps the open-call list in step with a tool call's status.
fn track_open(facts: &mut Facts, fields: &ToolCallFields) {
    let finished = matches!(
        fields.status,
        Some(ToolStatus::Completed | ToolStatus::Failed | ToolStatus::Cancelled)
    );
    let known = facts.open.contains(&fields.id);
    match fields.status {
        Some(ToolStatus::InProgress) => {
            facts.running.insert(fields.id.clone());
        }
        Some(_) => {
            facts.running.remove(&fields.id);
        }
        None => {}
    }
    if finished {
        facts.open.retain(|id| id != &fields.id);
    } else if !known && facts.announced.contains(&fields.id) {
        facts.open.push(fields.id.clone());
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::acp::dialect::{ACP, CLAUDE_CODE, CODEX, GEMINI};
    use crate::model::agent::PermissionRequest;

    fn call(id: &str, status: ToolStatus) -> ToolCallFields {
        ToolCallFields::status_only(id, status)
    }

    fn drain(rx: &mut mpsc::UnboundedReceiver<AgentEvent>) -> Vec<AgentEvent> {
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

    fn sessions(dialect: Dialect) -> (Sessions, mpsc::UnboundedReceiver<AgentEvent>) {
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
            s.answered("s", "t1", true);
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
        s.answered("s", "t1", true);
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

    fn announced_once(s: &mut Sessions, rx: &mut mpsc::UnboundedReceiver<AgentEvent>) {
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
    fn a_call_marked_running_before_its_permission_waits_until_allowed() {
        let (mut s, mut rx) = sessions(ACP);
        s.turn_started("s");
        s.deliver(
            "s",
            AgentEvent::ToolCall(call("c1", ToolStatus::InProgress)),
        );
        s.deliver("s", permission("c1"));
        let events = drain(&mut rx);
        let statuses: Vec<Option<ToolStatus>> = events
            .iter()
            .filter_map(|e| match e {
                AgentEvent::ToolCall(f) | AgentEvent::ToolCallUpdate(f) => Some(f.status),
                AgentEvent::Permission(p) => Some(p.tool.status),
                _ => None,
            })
            .collect();
        assert_eq!(
            statuses,
            [Some(ToolStatus::InProgress), Some(ToolStatus::Pending)],
            "shown waiting while asked"
        );
        s.answered("s", "c1", false);
        let events = drain(&mut rx);
        assert!(
            matches!(&events[..], [AgentEvent::ToolCallUpdate(f)] if f.status == Some(ToolStatus::InProgress)),
            "running again once allowed: {events:?}"
        );
        // A call announced pending and allowed is the agent's to start.
        s.deliver("s", AgentEvent::ToolCall(call("c2", ToolStatus::Pending)));
        s.deliver("s", permission("c2"));
        drain(&mut rx);
        s.answered("s", "c2", false);
        assert!(drain(&mut rx).is_empty());
    }

    #[test]
    fn a_refused_call_left_open_is_failed_and_one_the_agent_closed_is_left_alone() {
        let (mut s, mut rx) = sessions(GEMINI);
        s.turn_started("s");
        s.deliver("s", permission("c1"));
        drain(&mut rx);
        s.answered("s", "c1", true);
        let events = drain(&mut rx);
        assert!(
            matches!(&events[..], [AgentEvent::ToolCallUpdate(f)] if f.id == "c1" && f.status == Some(ToolStatus::Failed)),
            "{events:?}"
        );
        s.deliver("s", AgentEvent::ToolCall(call("c2", ToolStatus::Pending)));
        s.deliver("s", permission("c2"));
        s.deliver(
            "s",
            AgentEvent::ToolCallUpdate(call("c2", ToolStatus::Failed)),
        );
        drain(&mut rx);
        s.answered("s", "c2", true);
        assert!(drain(&mut rx).is_empty(), "already closed by the agent");
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
        let user = || AgentEvent::Other("user_message_chunk".into());
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
}
