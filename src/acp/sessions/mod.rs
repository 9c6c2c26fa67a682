//! Where each session's updates go, with the agent's dialect applied on the way: the
//! per-session facts a dialect hook needs (announced and open tool calls, a cancel asked
//! for, a refusal given) are kept here, by shared code, and the hooks only compute.

use std::collections::{HashMap, HashSet};
use std::path::Path;
use std::sync::Arc;

use crate::workspace::folder::Folder;

use tokio::sync::mpsc;
use tokio::sync::mpsc::error::TrySendError;

use super::dialect::{CancelledTurn, Dialect};
use crate::core::queues;
use crate::model::agent::{
    AgentEvent, Replayed, StopReason, ToolCallFields, ToolContent, ToolKind, ToolStatus,
};
use crate::model::ids::ToolCallId;

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

/// What a replayed update retells, for counting a replay by messages.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Said {
    /// A person's message (a run of prompt chunks).
    Prompt,
    /// The agent's answer (a run of answer chunks).
    Answer,
    /// A tool call.
    Tool,
}

/// What the connection tracks about one session for its dialect.
#[derive(Default)]
struct Facts {
    /// Tool calls announced so far.
    announced: HashSet<ToolCallId>,
    /// Tool calls announced and not finished, in announcement order.
    open: Vec<ToolCallId>,
    /// Tool calls the dialect closed: later updates for them are dropped.
    closed: HashSet<ToolCallId>,
    /// Whether `session/cancel` was sent during the running turn.
    cancel_requested: bool,
    /// Whether a permission request of the running turn was refused.
    refused: bool,
    /// Tool calls announced as edits, which a write through the client shows in.
    edits: HashSet<ToolCallId>,
    /// Numbers the cards made for writes no edit call was open for.
    writes: u64,
    /// Open calls the agent last reported in progress.
    running: HashSet<ToolCallId>,
    /// What each call's command printed so far, as reported beside its fields
    /// (`_meta.terminal_output`).
    printed: HashMap<ToolCallId, String>,
}

/// Every session's queue, with the agent's dialect.
#[derive(Default)]
pub struct Sessions {
    /// How this agent deviates from canonical ACP (set once it has said who it is).
    dialect: Dialect,
    /// The queue of each registered session.
    senders: HashMap<String, Queue>,
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
            // OpenCode and Mistral Vibe mark the call running before asking: it waits
            // all the same, and the core runs it again once allowed.
            let facts = self.facts.entry(session.to_owned()).or_default();
            let running = facts.running.remove(&request.tool.id);
            if running || request.tool.status == Some(ToolStatus::InProgress) {
                request.resumes_when_allowed = true;
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
        match self.senders.get_mut(session) {
            Some(queue) => queue.push(session, event),
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
                    id: ToolCallId::new(format!("sidekicks-write-{}", facts.writes)),
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

    /// A person refused a call of `session`'s running turn: a `cancelled` end the agent
    /// gives the turn next is its own, no stop (see [`Self::turn_ended`]).
    pub fn refused(&mut self, session: &str) {
        self.facts.entry(session.to_owned()).or_default().refused = true;
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
            let mut last = None;
            for event in held.iter() {
                let said = match event {
                    AgentEvent::UserMessageChunk(_) => Said::Prompt,
                    AgentEvent::MessageChunk(_) => Said::Answer,
                    AgentEvent::ToolCall(_) => Said::Tool,
                    AgentEvent::ThoughtChunk(_)
                    | AgentEvent::File(_)
                    | AgentEvent::ToolCallUpdate(_)
                    | AgentEvent::Plan(_)
                    | AgentEvent::Usage { .. }
                    | AgentEvent::Title(_)
                    | AgentEvent::Commands(_)
                    | AgentEvent::ModeChanged(_)
                    | AgentEvent::Options(_)
                    | AgentEvent::Permission(_)
                    | AgentEvent::Question(_)
                    | AgentEvent::Task(_)
                    | AgentEvent::Compaction(_)
                    | AgentEvent::Dropped { .. }
                    | AgentEvent::Unused { .. } => continue,
                };
                match said {
                    Said::Prompt if last != Some(Said::Prompt) => replayed.prompts += 1,
                    Said::Answer if last != Some(Said::Answer) => replayed.answers += 1,
                    Said::Tool => replayed.tool_calls += 1,
                    Said::Prompt | Said::Answer => {}
                }
                last = Some(said);
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
    pub fn register(&mut self, session: &str, folder: Arc<Folder>) -> mpsc::Receiver<AgentEvent> {
        self.folders.insert(session.to_owned(), folder);
        let (tx, rx) = mpsc::channel(queues::SESSION_UPDATES);
        let mut queue = Queue { tx, dropped: 0 };
        for event in self.early.remove(session).unwrap_or_default() {
            queue.push(session, event);
        }
        self.senders.insert(session.to_owned(), queue);
        rx
    }
}

/// A registered session's queue of updates (bounded: `core::queues::SESSION_UPDATES`).
struct Queue {
    /// Where the session's channel reads them.
    tx: mpsc::Sender<AgentEvent>,
    /// Updates dropped because the queue was full, not yet told to the channel.
    dropped: u64,
}

impl Queue {
    /// Queues `event`, or drops and counts it when the queue is full; the count goes to the
    /// channel ([`AgentEvent::Dropped`]) before the next update that finds room. A dropped
    /// permission request or question is answered `cancelled` (its reply is dropped), so
    /// nothing runs unapproved.
    fn push(&mut self, session: &str, event: AgentEvent) {
        if self.dropped > 0 {
            let told = AgentEvent::Dropped {
                count: self.dropped,
            };
            match self.tx.try_send(told) {
                Ok(()) => self.dropped = 0,
                Err(TrySendError::Full(_)) => {
                    self.dropped += 1;
                    return;
                }
                Err(TrySendError::Closed(_)) => return,
            }
        }
        if let Err(TrySendError::Full(_)) = self.tx.try_send(event) {
            tracing::warn!(
                session,
                "the agent sends updates faster than its room takes them; dropping them"
            );
            self.dropped += 1;
        }
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
mod tests;
