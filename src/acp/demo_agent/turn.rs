//! One prompt answered by the demo agent: the demo turn, a slash command, or the `%` lines
//! of a script (`acp/demo_agent/turn/script.rs`).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use agent_client_protocol::v1::ConnectionTo;
use agent_client_protocol::v1::schema::{
    ContentBlock, ContentChunk, Diff, PermissionOption, PermissionOptionKind, Plan, PlanEntry,
    PlanEntryPriority, PlanEntryStatus, RequestPermissionOutcome, RequestPermissionRequest,
    SessionNotification, SessionUpdate, StopReason, TextContent, ToolCall, ToolCallLocation,
    ToolCallStatus, ToolCallUpdate, ToolCallUpdateFields, ToolKind, Usage,
};
use agent_client_protocol::{Client, UntypedMessage};

use super::{Cancel, Exchange, State};

mod script;

/// One prompt being answered.
pub(super) struct Turn {
    /// The agent's state: the session's live mode (`%mode`, and whether it asks).
    pub(super) state: Arc<State>,
    /// The connection to the client, for updates and permission requests.
    pub(super) cx: ConnectionTo<Client>,
    /// The session the prompt belongs to.
    pub(super) session: String,
    /// Its cancellation state.
    pub(super) cancel: Arc<Cancel>,
    /// Numbers the turn's tool calls.
    pub(super) tools: AtomicU64,
    /// Token counts to put in the prompt result (`%tokens`).
    pub(super) tokens: Mutex<Option<Usage>>,
    /// The answer text sent so far, remembered with the prompt when the turn ends.
    pub(super) said: Mutex<String>,
    /// The session's conversation before this turn (`%history`).
    pub(super) earlier: Vec<Exchange>,
    /// The session's (mode, model) when the turn started (`%settings`).
    pub(super) settings: (String, String),
    /// The session's working folder (`%read`, `%write`, `%pwd`).
    pub(super) cwd: std::path::PathBuf,
    /// A line about each content block of the prompt (`%blocks`).
    pub(super) blocks: Vec<String>,
    /// Who the client is and what it offers (`%client`).
    pub(super) client: String,
    /// How many sessions the agent holds open (`%open-sessions`).
    pub(super) open_sessions: usize,
    /// The MCP servers the session was given (`%mcp`, `%mcp-call`).
    pub(super) mcp: Vec<agent_client_protocol::v1::schema::McpServer>,
}

/// How a permission request is placed relative to the tool call it concerns.
#[derive(Clone, Copy, PartialEq)]
enum Ask {
    /// Announce the tool call first, as agents usually do.
    AfterAnnouncing,
    /// Ask first, announce after the answer.
    BeforeAnnouncing,
    /// Never announce it.
    Unannounced,
    /// Announce it in progress, then ask (as OpenCode and Mistral Vibe do).
    WhileRunning,
}

pub(super) type TurnResult = Result<StopReason, agent_client_protocol::Error>;

impl Turn {
    pub(super) fn cancelled(&self) -> bool {
        self.cancel.flag.load(Ordering::SeqCst)
    }

    pub(super) fn update(&self, update: SessionUpdate) -> Result<(), agent_client_protocol::Error> {
        self.cx
            .send_notification(SessionNotification::new(self.session.clone(), update))
    }

    pub(super) fn say(&self, text: &str) -> Result<(), agent_client_protocol::Error> {
        self.said.lock().unwrap().push_str(text);
        self.update(SessionUpdate::AgentMessageChunk(ContentChunk::new(
            ContentBlock::Text(TextContent::new(text)),
        )))
    }

    /// `%unknown-update`: an update of a kind no client knows.
    fn unknown_update(&self) -> Result<(), agent_client_protocol::Error> {
        let update = serde_json::json!({"sessionUpdate": "hologram", "intensity": 11});
        let raw = serde_json::json!({"sessionId": self.session, "update": update});
        (self.cx).send_notification(UntypedMessage::new("session/update", raw)?)
    }

    fn think(&self, text: &str) -> Result<(), agent_client_protocol::Error> {
        self.update(SessionUpdate::AgentThoughtChunk(ContentChunk::new(
            ContentBlock::Text(TextContent::new(text)),
        )))
    }

    /// Sleeps, waking early when the turn is cancelled. Returns whether it was cancelled.
    async fn pause(&self, ms: u64) -> bool {
        if self.cancelled() {
            return true;
        }
        let notified = self.cancel.notify.notified();
        tokio::select! {
            _ = notified => {}
            _ = tokio::time::sleep(Duration::from_millis(ms)) => {}
        }
        self.cancelled()
    }

    /// Ends the turn's taking of steered messages (from now on the session is idle and
    /// steering asks for a prompt) and, after a turn that ended normally, answers each of
    /// them; returns the turn's result and the messages.
    pub(super) fn answer_steered(&self, result: TurnResult) -> (TurnResult, Vec<String>) {
        let steered = (self.cancel.steered.lock().unwrap().take()).unwrap_or_default();
        let mut result = result;
        if matches!(result, Ok(StopReason::EndTurn)) {
            for added in &steered {
                if let Err(e) = self.say(&format!("\n\n↪️ You added: {added}")) {
                    result = Err(e);
                }
            }
        }
        (result, steered)
    }

    /// A prompt that is a slash command (`command`, after the `/`; `text`, the whole
    /// prompt): `/demo`, `/echo`, and with `--allow-all` `/allow-all on|off`.
    async fn run_slash(&self, command: &str, text: &str) -> TurnResult {
        let name = command.split_whitespace().next().unwrap_or("");
        match name {
            "demo" => self.demo(text).await,
            "echo" => {
                self.say(&format!("received: {text}"))?;
                Ok(StopReason::EndTurn)
            }
            "allow-all" if self.state.allow_all.is_some() => {
                self.allow_all(command)?;
                Ok(StopReason::EndTurn)
            }
            other => {
                self.say(&format!("(unknown command /{other})"))?;
                Ok(StopReason::EndTurn)
            }
        }
    }

    pub(super) async fn run(&self, text: &str) -> TurnResult {
        if let Some(command) = text.trim_start().strip_prefix('/') {
            return self.run_slash(command, text).await;
        }
        if !text.lines().any(|l| l.starts_with('%')) {
            return self.demo(text).await;
        }
        self.run_script(text).await
    }

    /// A plan of `entries` whose first `done` are completed, the rest pending.
    fn plan(&self, entries: &[&str], done: usize) -> Result<(), agent_client_protocol::Error> {
        let entries = entries
            .iter()
            .enumerate()
            .map(|(i, e)| {
                let status = if i < done {
                    PlanEntryStatus::Completed
                } else {
                    PlanEntryStatus::Pending
                };
                PlanEntry::new(*e, PlanEntryPriority::Medium, status)
            })
            .collect();
        self.update(SessionUpdate::Plan(Plan::new(entries)))
    }

    pub(super) fn tool_id(&self) -> String {
        format!(
            "tool-{}-{}",
            self.session,
            self.tools.fetch_add(1, Ordering::Relaxed)
        )
    }

    fn set_status(
        &self,
        id: &str,
        fields: ToolCallUpdateFields,
    ) -> Result<(), agent_client_protocol::Error> {
        self.update(SessionUpdate::ToolCallUpdate(ToolCallUpdate::new(
            id.to_owned(),
            fields,
        )))
    }

    async fn tool(&self, title: &str) -> Result<(), agent_client_protocol::Error> {
        let id = self.tool_id();
        self.update(SessionUpdate::ToolCall(
            ToolCall::new(id.clone(), title)
                .kind(ToolKind::Execute)
                .status(ToolCallStatus::Pending),
        ))?;
        self.pause(100).await;
        self.set_status(
            &id,
            ToolCallUpdateFields::new().status(ToolCallStatus::InProgress),
        )?;
        self.pause(100).await;
        self.set_status(&id, completed(title))
    }

    /// Switches the session's mode on its own and tells the client (`current_mode_update`),
    /// as an agent leaving plan mode does.
    fn switch_mode(&self, mode: &str) -> Result<(), agent_client_protocol::Error> {
        self.state.switch_mode(&self.session, mode);
        self.update(SessionUpdate::CurrentModeUpdate(
            agent_client_protocol::v1::schema::CurrentModeUpdate::new(mode.to_owned()),
        ))
    }

    /// Asks permission for `call` with a choice that also switches the session to `mode`
    /// (as Claude Code's "Yes, and use auto mode" does), besides allow and reject; switches
    /// if that is chosen, then runs the call or fails it and says `permission: <optionId>`.
    async fn permission_switching(
        &self,
        call: ToolCall,
        mode: &str,
    ) -> Result<String, agent_client_protocol::Error> {
        let id = call.tool_call_id.0.to_string();
        let title = call.title.clone();
        self.update(SessionUpdate::ToolCall(call.clone()))?;
        let options = vec![
            PermissionOption::new(
                mode.to_owned(),
                format!("Yes, and switch to {mode}"),
                PermissionOptionKind::AllowAlways,
            ),
            PermissionOption::new("allow", "Allow", PermissionOptionKind::AllowOnce),
            PermissionOption::new("reject", "Reject", PermissionOptionKind::RejectOnce),
        ];
        let request = RequestPermissionRequest::new(self.session.clone(), call.into(), options);
        let response = self.cx.send_request(request).block_task().await?;
        let chosen = match response.outcome {
            RequestPermissionOutcome::Selected(s) => s.option_id.0.to_string(),
            _ => "cancelled".into(),
        };
        if chosen == mode {
            self.switch_mode(mode)?;
        }
        let status = match chosen == mode || chosen == "allow" {
            true => completed(&title),
            false => ToolCallUpdateFields::new().status(ToolCallStatus::Failed),
        };
        self.set_status(&id, status)?;
        self.say(&format!("permission: {chosen}\n"))?;
        if chosen == "cancelled" {
            self.cancel.flag.store(true, Ordering::SeqCst);
        }
        Ok(chosen)
    }

    /// Asks permission for `call`, with the four options real agents offer, and runs it
    /// (completed) if allowed or fails it if not; then says `permission: <optionId>`. In a
    /// mode that does not ask (any but `ask` and `plan`) it runs the call unasked and says
    /// `permission: unasked`.
    async fn permission(
        &self,
        call: ToolCall,
        ask: Ask,
    ) -> Result<String, agent_client_protocol::Error> {
        let id = call.tool_call_id.0.to_string();
        let title = call.title.clone();
        if !self.state.asks(&self.session) {
            self.update(SessionUpdate::ToolCall(call.clone()))?;
            self.set_status(&id, completed(&title))?;
            self.say("permission: unasked\n")?;
            return Ok("unasked".into());
        }
        match ask {
            Ask::AfterAnnouncing => self.update(SessionUpdate::ToolCall(call.clone()))?,
            Ask::WhileRunning => self.update(SessionUpdate::ToolCall(
                call.clone().status(ToolCallStatus::InProgress),
            ))?,
            _ => {}
        }
        let options = vec![
            PermissionOption::new("allow", "Allow", PermissionOptionKind::AllowOnce),
            PermissionOption::new(
                "allow_always",
                "Allow for this session",
                PermissionOptionKind::AllowAlways,
            ),
            PermissionOption::new("reject", "Reject", PermissionOptionKind::RejectOnce),
            PermissionOption::new(
                "never",
                "Never allow in this session",
                PermissionOptionKind::RejectAlways,
            ),
        ];
        // Asked about while running, the call says so in the request too.
        let asked = match ask {
            Ask::WhileRunning => call.clone().status(ToolCallStatus::InProgress),
            _ => call.clone(),
        };
        let request = RequestPermissionRequest::new(self.session.clone(), asked.into(), options);
        let response = self.cx.send_request(request).block_task().await?;
        let chosen = match response.outcome {
            RequestPermissionOutcome::Selected(s) => s.option_id.0.to_string(),
            _ => "cancelled".into(),
        };
        if ask == Ask::BeforeAnnouncing {
            self.update(SessionUpdate::ToolCall(call))?;
        }
        if ask != Ask::Unannounced {
            if chosen.starts_with("allow") {
                self.set_status(
                    &id,
                    ToolCallUpdateFields::new().status(ToolCallStatus::InProgress),
                )?;
                self.pause(50).await;
                self.set_status(&id, completed(&title))?;
            } else {
                self.set_status(
                    &id,
                    ToolCallUpdateFields::new().status(ToolCallStatus::Failed),
                )?;
            }
        }
        self.say(&format!("permission: {chosen}\n"))?;
        // A `cancelled` outcome means the client cancelled the turn.
        if chosen == "cancelled" {
            self.cancel.flag.store(true, Ordering::SeqCst);
        }
        Ok(chosen)
    }

    /// The turn a person trying the demo sees.
    async fn demo(&self, text: &str) -> TurnResult {
        self.think("Reading the request and planning a short answer.")?;
        let steps = ["Read the message", "Look at the workspace", "Answer"];
        self.plan(&steps, 1)?;
        // A newcomer is told what the poll is for before it asks.
        self.say(DEMO_ASKS)?;
        let id = self.tool_id();
        let call = execute(&id, "bash: ls");
        self.update(SessionUpdate::ToolCall(call.clone()))?;
        let request = RequestPermissionRequest::new(
            self.session.clone(),
            call.into(),
            vec![
                PermissionOption::new("allow", "Allow", PermissionOptionKind::AllowOnce),
                PermissionOption::new("reject", "Reject", PermissionOptionKind::RejectOnce),
            ],
        );
        let response = self.cx.send_request(request).block_task().await?;
        let allowed = matches!(&response.outcome,
            RequestPermissionOutcome::Selected(s) if &*s.option_id.0 == "allow");
        let listing = if allowed {
            let names = workspace_names();
            self.set_status(
                &id,
                ToolCallUpdateFields::new()
                    .status(ToolCallStatus::Completed)
                    .content(vec![names.join("\n").into()]),
            )?;
            workspace_sentence(&names)
        } else {
            self.set_status(
                &id,
                ToolCallUpdateFields::new().status(ToolCallStatus::Failed),
            )?;
            "You did not let me list the workspace, so I will not look.".to_owned()
        };
        self.plan(&steps, 2)?;
        // Asked to take its time, it answers a word every half second: long enough to try
        // stopping it.
        let slowly = text.to_lowercase().contains("slowly");
        let (pause, words_per_chunk) = if slowly { (500, 1) } else { (80, 4) };
        let quoted: String = text.lines().map(|l| format!("> {l}\n")).collect();
        let answer = format!(
            "## Hello from the demo agent\n\nYou wrote:\n\n{quoted}\n{listing}\n\n\
             This answer is **streamed**: it arrives in pieces, and Sidekicks edits one Matrix \
             message as they come. Things to try:\n\n\
             1. Send a long message and watch the edits.\n\
             2. Ask me something **slowly** (any message with that word): I answer one word \
             every half second, so you can stop me with `!stop` or by reacting 🛑 to my \
             answer.\n\
             3. Write `%echo` to get your prompt back exactly.\n\n\
             ```rust\nfn main() {{\n    println!(\"streamed through ACP\");\n}}\n```\n\n\
             | part | speaks |\n|---|---|\n| gateway | Matrix + ACP |\n| me | ACP over stdio |\n"
        );
        let words: Vec<&str> = answer.split_inclusive(' ').collect();
        for chunk in words.chunks(words_per_chunk) {
            if self.pause(pause).await {
                return Ok(StopReason::Cancelled);
            }
            self.say(&chunk.concat())?;
        }
        self.plan(&steps, steps.len())?;
        Ok(StopReason::EndTurn)
    }
}

/// What the demo says before its poll: what it asks for, how to answer, and that it waits.
const DEMO_ASKS: &str = "Before I answer, I would like to look at the workspace (`ls`). \
    Sidekicks asks you before any tool of mine runs: react ✅ on the poll below to let me, \
    or ❌ to refuse. Until someone answers I wait, and your next messages wait their \
    turn.\n\n";

/// The first ten names in the workspace (the demo's `ls`), sorted.
fn workspace_names() -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(".")
        .map(|d| {
            d.filter_map(|e| e.ok())
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    names.sort();
    names.truncate(10);
    names
}

/// What the demo's answer says of the workspace's `names`.
fn workspace_sentence(names: &[String]) -> String {
    if names.is_empty() {
        return "The workspace is empty.".to_owned();
    }
    let names: Vec<String> = names.iter().map(|n| format!("`{n}`")).collect();
    format!("The workspace holds: {}.", names.join(", "))
}

/// An `execute` tool call `id` for `title` (`bash: ls` runs `ls`).
fn execute(id: &str, title: &str) -> ToolCall {
    let command = title.split_once(": ").map_or(title, |(_, c)| c);
    ToolCall::new(id.to_owned(), title)
        .kind(ToolKind::Execute)
        .status(ToolCallStatus::Pending)
        .raw_input(serde_json::json!({ "command": command }))
}

/// An `edit` tool call `id` that rewrites the file at `path`, with its diff.
fn edit(id: &str, path: &str) -> ToolCall {
    ToolCall::new(id.to_owned(), format!("edit_file: {path}"))
        .kind(ToolKind::Edit)
        .status(ToolCallStatus::Pending)
        .locations(vec![ToolCallLocation::new(path)])
        .content(vec![
            Diff::new(path, "fn main() {\n    println!(\"hello, Matrix\");\n}\n")
                .old_text("fn main() {\n    println!(\"hello\");\n}\n".to_string())
                .into(),
        ])
        .raw_input(serde_json::json!({ "path": path }))
}

/// A completion update whose output names what ran.
fn completed(title: &str) -> ToolCallUpdateFields {
    ToolCallUpdateFields::new()
        .status(ToolCallStatus::Completed)
        .content(vec![format!("ran {title}").into()])
}
