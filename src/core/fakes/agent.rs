//! The fake agent side: follows a script for every prompt and records what it received.

use std::collections::{HashMap, HashSet};
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use tokio::sync::mpsc;

use crate::core::agent::{AgentPort, AgentSession, NewSession, PlaceWait, PlaceWaits, SessionPort};
use crate::model::agent::{
    AgentError, AgentEvent, ConfigChoice, ConfigOption, ConfigValue, PermissionAnswer,
    PermissionKind, PermissionOption, PermissionRequest, ProcessState, Reopen, SessionSettings,
    SessionTools, SlashCommand, Steered, StopReason, TaskReport, ToolCallFields, ToolKind,
    ToolStatus, TurnEnd,
};
use crate::model::ids::{SessionId, ToolCallId};
use crate::model::media::{PromptBlock, PromptSupport};
use crate::model::modes::KnownModes;

/// What the fake agent does with one prompt.
#[derive(Debug, Clone)]
pub enum Script {
    /// Sends these chunks, `every` apart, then ends the turn.
    Chunks(Vec<String>, Duration),
    /// Says this once, after a moment's thought, and ends the turn 2 ms behind it (as an
    /// agent's connection delivers its last update and then its response).
    Says(String),
    /// Answers with a JSON-RPC error.
    Error(String),
    /// Streams until cancelled, then ends with `cancelled`.
    UntilCancelled,
    /// This many times: announces a tool call, asks permission for it with the four usual
    /// options and says `permission: <optionId>` (or `cancelled`); then ends. A cancel ends
    /// it at once.
    AskPermission(u32),
    /// Says "partial", then its process dies with this status (the session dies with it).
    Exit(String),
}

/// The four options real agents offer, with the ids one of them uses.
pub fn usual_options() -> Vec<PermissionOption> {
    let option = |id: &str, name: &str, kind| PermissionOption {
        id: id.into(),
        name: name.into(),
        kind,
    };
    vec![
        option("allow", "Allow", PermissionKind::AllowOnce),
        option(
            "allow_always",
            "Allow bash for this session",
            PermissionKind::AllowAlways,
        ),
        option("reject", "Reject", PermissionKind::RejectOnce),
        option(
            "never",
            "Never allow bash in this session",
            PermissionKind::RejectAlways,
        ),
    ]
}

#[derive(Default)]
struct AgentState {
    sessions: HashMap<String, mpsc::Sender<AgentEvent>>,
    cancels: HashMap<String, Arc<tokio::sync::Notify>>,
    prompts: Vec<(String, String)>,
    script: Option<Script>,
    dead: HashSet<String>,
    reopen: Option<Reopen>,
    reopened: Vec<String>,
    stderr: String,
    /// Whether the "process" is not running (stopped, or not started yet).
    not_running: bool,
    /// How many times it was stopped.
    stops: usize,
    /// The modes and options of every new session.
    settings: SessionSettings,
    /// Every mode or option change asked for: (session, what, value).
    changes: Vec<(String, String, String)>,
    /// The slash commands advertised right after `session/new`.
    commands: Vec<SlashCommand>,
    /// What it takes besides text.
    support: PromptSupport,
    /// Every prompt's blocks, in order.
    blocks: Vec<Vec<PromptBlock>>,
    /// What its "dialect" knows of its modes (`None`: [`ASK_ASKS`]).
    known_modes: Option<KnownModes>,
    /// The options its permission requests offer (`None`: [`usual_options`]).
    options: Option<Vec<PermissionOption>>,
    /// Whether it takes messages into a running turn, and what it answers when asked to
    /// (`None`: it does not steer).
    steering: Option<Steered>,
    /// The messages steered into its turns: (session, text).
    steered: Vec<(String, String)>,
    /// Whether it forks sessions (`session/fork`).
    forks: bool,
    /// The background tasks it was asked to stop: (session, task).
    stopped_tasks: Vec<(String, String)>,
    /// The sessions it forked: (source, fork).
    forked: Vec<(String, String)>,
    /// Whether starting its process for a folder waits for a place, as a container per
    /// room does at `max_rooms`: it says so, then starts.
    waits_for_place: Option<PlaceWait>,
    /// How long such a wait lasts.
    place_after: Duration,
    /// How many such waits were given up.
    places_given_up: usize,
    /// Whether its answers to `session/new`, load and resume leave its modes out (as some
    /// agents' do), though it has them.
    hides_modes: bool,
    /// Modes `session/set_mode` fails to switch to.
    refused_modes: Vec<String>,
}

impl AgentState {
    /// The settings its answers carry: its own, without the modes when it hides them.
    fn answered_settings(&self) -> SessionSettings {
        let mut settings = self.settings.clone();
        if self.hides_modes {
            settings.modes.clear();
            settings.current_mode = None;
        }
        settings
    }
}

/// What the fake agent's "dialect" knows by default, as the demo agent's does: `ask` asks
/// before acting, `code` does not, sessions start in `ask`.
pub const ASK_ASKS: KnownModes = KnownModes {
    decide_asking: true,
    asking: &["ask"],
    not_asking: &["code"],
    initial: Some("ask"),
    option_modes: &[],
    ..KnownModes::UNKNOWN
};

/// An agent that follows a [`Script`] for every prompt and records what it received.
#[derive(Default, Clone)]
pub struct FakeAgent {
    state: Arc<Mutex<AgentState>>,
}

impl FakeAgent {
    /// A fake agent following `script`.
    pub fn new(script: Script) -> Arc<Self> {
        let agent = Self::default();
        agent.state.lock().unwrap().script = Some(script);
        Arc::new(agent)
    }

    /// Makes `session_id` dead, as if its process had crashed.
    pub fn kill_session(&self, session_id: &str) {
        self.state.lock().unwrap().dead.insert(session_id.into());
    }

    /// Makes the agent able to get its sessions back the way `how` says.
    pub fn with_reopen(self: Arc<Self>, how: Reopen) -> Arc<Self> {
        self.state.lock().unwrap().reopen = Some(how);
        self
    }

    /// Makes the agent fork sessions (`session/fork`).
    pub fn with_forks(self: Arc<Self>) -> Arc<Self> {
        self.state.lock().unwrap().forks = true;
        self
    }

    /// Makes each start of its process for a folder wait for a place first, saying so.
    /// The place comes after `after`, unless the wait is given up.
    pub fn waiting_for_place(self: Arc<Self>, max_rooms: usize, after: Duration) -> Arc<Self> {
        let mut state = self.state.lock().unwrap();
        state.waits_for_place = Some(PlaceWait { max_rooms });
        state.place_after = after;
        drop(state);
        self
    }

    /// How many waits for a place were given up.
    pub fn places_given_up(&self) -> usize {
        self.state.lock().unwrap().places_given_up
    }

    /// The sessions it forked, in order: (source, fork).
    pub fn forked(&self) -> Vec<(String, String)> {
        self.state.lock().unwrap().forked.clone()
    }

    /// Makes the agent take messages into its running turns (`_session/steering`).
    pub fn with_steering(self: Arc<Self>) -> Arc<Self> {
        self.with_steering_answer(Steered::Injected)
    }

    /// Makes the agent advertise steering and answer every steered message `answer`.
    pub fn with_steering_answer(self: Arc<Self>, answer: Steered) -> Arc<Self> {
        self.state.lock().unwrap().steering = Some(answer);
        self
    }

    /// The messages steered into its turns: (session, text), in order.
    pub fn steered(&self) -> Vec<(String, String)> {
        self.state.lock().unwrap().steered.clone()
    }

    /// Sets what the agent "wrote to stderr".
    pub fn set_stderr(&self, text: &str) {
        self.state.lock().unwrap().stderr = text.into();
    }

    /// The sessions got back by `reopen_session`, in order.
    pub fn reopened(&self) -> Vec<String> {
        self.state.lock().unwrap().reopened.clone()
    }

    /// Every (session, prompt text) received, in order.
    pub fn prompts(&self) -> Vec<(String, String)> {
        self.state.lock().unwrap().prompts.clone()
    }

    /// The text of every prompt received, in order.
    pub fn prompt_texts(&self) -> Vec<String> {
        self.prompts().into_iter().map(|(_, text)| text).collect()
    }

    /// Says whether the "process" runs (a new session starts it).
    pub fn set_running(&self, running: bool) {
        self.state.lock().unwrap().not_running = !running;
    }

    /// How many times it was stopped.
    pub fn stops(&self) -> usize {
        self.state.lock().unwrap().stops
    }

    /// Gives every new session these modes and options.
    pub fn with_settings(self: Arc<Self>, settings: SessionSettings) -> Arc<Self> {
        self.state.lock().unwrap().settings = settings;
        self
    }

    /// Advertises these slash commands (name, description) after `session/new`.
    pub fn with_commands(self: Arc<Self>, commands: &[(&str, &str)]) -> Arc<Self> {
        self.state.lock().unwrap().commands = commands
            .iter()
            .map(|(n, d)| SlashCommand::new(*n, *d))
            .collect();
        self
    }

    /// Advertises that it takes these kinds of content.
    pub fn with_prompt_support(self: Arc<Self>, support: PromptSupport) -> Arc<Self> {
        self.state.lock().unwrap().support = support;
        self
    }

    /// The blocks of every prompt received, in order.
    pub fn prompt_blocks(&self) -> Vec<Vec<PromptBlock>> {
        self.state.lock().unwrap().blocks.clone()
    }

    /// Every mode or option change asked for: (session, mode or option ID, value).
    pub fn changes(&self) -> Vec<(String, String, String)> {
        self.state.lock().unwrap().changes.clone()
    }

    /// Makes its permission requests offer `options` instead of the usual four.
    pub fn with_options(self: Arc<Self>, options: Vec<PermissionOption>) -> Arc<Self> {
        self.state.lock().unwrap().options = Some(options);
        self
    }

    /// Makes its answers to `session/new`, load and resume leave its modes out, though it
    /// has them (and switches between them).
    pub fn hiding_modes(self: Arc<Self>) -> Arc<Self> {
        self.state.lock().unwrap().hides_modes = true;
        self
    }

    /// Makes `session/set_mode` to `mode` fail, as an agent that cannot switch a session
    /// does.
    pub fn refusing_mode(self: Arc<Self>, mode: &str) -> Arc<Self> {
        self.state.lock().unwrap().refused_modes.push(mode.into());
        self
    }

    /// Makes its "dialect" know `known` of its modes.
    pub fn with_known_modes(self: Arc<Self>, known: KnownModes) -> Arc<Self> {
        self.state.lock().unwrap().known_modes = Some(known);
        self
    }

    /// Reports that session `session_id` is now in `mode` (`current_mode_update`), as an
    /// agent switching its own mode does.
    pub fn report_mode(&self, session_id: &str, mode: &str) {
        let s = self.state.lock().unwrap();
        if let Some(tx) = s.sessions.get(session_id) {
            let _ = tx.try_send(AgentEvent::ModeChanged(mode.into()));
        }
    }

    /// Reports that session `session_id`'s config options are now `options`
    /// (`config_option_update`), as an agent changing one on its own (or at a prompt's
    /// command) does; its own settings follow.
    pub fn report_options(&self, session_id: &str, options: Vec<ConfigOption>) {
        let mut s = self.state.lock().unwrap();
        s.settings.options = options.clone();
        if let Some(tx) = s.sessions.get(session_id) {
            let _ = tx.try_send(AgentEvent::Options(options));
        }
    }

    /// Reports `report` about a background task of session `session_id`, as Claude's
    /// adapter does, in a turn or between turns.
    pub fn report_task(&self, session_id: &str, report: TaskReport) {
        let s = self.state.lock().unwrap();
        if let Some(tx) = s.sessions.get(session_id) {
            let _ = tx.try_send(AgentEvent::Task(report));
        }
    }

    /// The background tasks it was asked to stop, in order: (session, task).
    pub fn stopped_tasks(&self) -> Vec<(String, String)> {
        self.state.lock().unwrap().stopped_tasks.clone()
    }
}

#[async_trait]
impl AgentPort for FakeAgent {
    async fn ensure_running(&self, _folder: &Path, waits: PlaceWaits) -> Result<(), AgentError> {
        let wait = self.state.lock().unwrap().waits_for_place;
        if let Some(wait) = wait {
            let _ = waits.tell.send(wait);
            // The place comes a moment later (as when another room's turn ends), unless
            // the wait is given up first.
            let place = tokio::time::sleep(self.state.lock().unwrap().place_after);
            tokio::select! {
                _ = place => {}
                _ = waits.give_up.cancelled() => {
                    self.state.lock().unwrap().places_given_up += 1;
                    return Err(AgentError::Failed("gave up waiting for a place".into()));
                }
            }
        }
        Ok(())
    }

    fn known_modes(&self) -> KnownModes {
        self.state.lock().unwrap().known_modes.unwrap_or(ASK_ASKS)
    }

    async fn new_session(
        &self,
        _folder: &Arc<crate::workspace::folder::Folder>,
        _tools: Option<&SessionTools>,
    ) -> Result<NewSession, AgentError> {
        let (tx, rx) = mpsc::channel(crate::core::queues::SESSION_UPDATES);
        let mut s = self.state.lock().unwrap();
        let id = format!("session-{}", s.sessions.len());
        s.sessions.insert(id.clone(), tx);
        s.cancels.insert(id.clone(), Arc::default());
        s.not_running = false;
        if !s.commands.is_empty() {
            let _ = s.sessions[&id].try_send(AgentEvent::Commands(s.commands.clone()));
        }
        Ok(NewSession {
            session: self.handle(&id),
            settings: s.answered_settings(),
            events: rx,
            replayed: Default::default(),
        })
    }

    fn reopen_support(&self) -> Option<Reopen> {
        self.state.lock().unwrap().reopen
    }

    fn forks(&self) -> bool {
        self.state.lock().unwrap().forks
    }

    async fn fork_session(
        &self,
        id: &SessionId,
        _folder: &Arc<crate::workspace::folder::Folder>,
        _tools: Option<&SessionTools>,
    ) -> Result<NewSession, AgentError> {
        let session_id = id.as_str();
        let (tx, rx) = mpsc::channel(crate::core::queues::SESSION_UPDATES);
        let mut s = self.state.lock().unwrap();
        if !s.forks || !s.sessions.contains_key(session_id) {
            return Err(AgentError::Rpc {
                code: -32002,
                message: format!("cannot fork session {session_id}"),
            });
        }
        let id = format!("fork-{}", s.sessions.len());
        s.sessions.insert(id.clone(), tx);
        s.cancels.insert(id.clone(), Arc::default());
        s.forked.push((session_id.into(), id.clone()));
        Ok(NewSession {
            session: self.handle(&id),
            settings: s.answered_settings(),
            events: rx,
            replayed: Default::default(),
        })
    }

    async fn reopen_session(
        &self,
        id: &SessionId,
        _folder: &Arc<crate::workspace::folder::Folder>,
        _tools: Option<&SessionTools>,
    ) -> Result<NewSession, AgentError> {
        let session_id = id.as_str();
        let (tx, rx) = mpsc::channel(crate::core::queues::SESSION_UPDATES);
        let mut s = self.state.lock().unwrap();
        if s.reopen.is_none() || !s.sessions.contains_key(session_id) {
            return Err(AgentError::Rpc {
                code: -32002,
                message: format!("unknown session {session_id}"),
            });
        }
        s.dead.remove(session_id);
        s.sessions.insert(session_id.into(), tx);
        s.reopened.push(session_id.into());
        s.not_running = false;
        Ok(NewSession {
            session: self.handle(session_id),
            settings: s.answered_settings(),
            events: rx,
            replayed: Default::default(),
        })
    }

    fn prompt_support(&self) -> PromptSupport {
        self.state.lock().unwrap().support
    }

    fn steers(&self) -> bool {
        self.state.lock().unwrap().steering.is_some()
    }

    fn stderr_tail(&self) -> String {
        self.state.lock().unwrap().stderr.clone()
    }

    fn process_state(&self) -> ProcessState {
        let s = self.state.lock().unwrap();
        match s.not_running {
            true => ProcessState::Stopped,
            false => ProcessState::Running {
                uptime: Duration::from_secs(60),
                sessions: s.sessions.len() - s.dead.len().min(s.sessions.len()),
            },
        }
    }

    async fn stop(&self) {
        let mut s = self.state.lock().unwrap();
        s.not_running = true;
        s.stops += 1;
        let ids: Vec<String> = s.sessions.keys().cloned().collect();
        s.dead.extend(ids);
    }
}

/// A session of the fake agent: what is done to it is recorded by its agent.
pub struct FakeSession {
    agent: FakeAgent,
    id: SessionId,
}

/// A session named `id` of an agent that does nothing with it, for what only holds one.
pub fn idle_session(id: &str) -> AgentSession {
    FakeAgent::default().handle(id)
}

impl FakeAgent {
    /// The handle of session `id`, just opened.
    fn handle(&self, id: &str) -> AgentSession {
        Arc::new(FakeSession {
            agent: self.clone(),
            id: SessionId::new(id),
        })
    }
}

#[async_trait]
impl SessionPort for FakeSession {
    fn id(&self) -> &SessionId {
        &self.id
    }

    fn forget(&self) {}

    async fn close(&self) {}

    async fn stop_task(&self, task_id: &str) -> Result<bool, AgentError> {
        let session_id = self.id.as_str();
        let mut s = self.agent.state.lock().unwrap();
        (s.stopped_tasks).push((session_id.into(), task_id.into()));
        Ok(true)
    }

    async fn prompt(&self, blocks: Vec<PromptBlock>) -> Result<TurnEnd, AgentError> {
        let session_id = self.id.as_str();
        let (tx, cancel, script, options) = {
            let mut s = self.agent.state.lock().unwrap();
            s.prompts
                .push((session_id.into(), PromptBlock::text_of(&blocks)));
            s.blocks.push(blocks);
            (
                s.sessions[session_id].clone(),
                s.cancels[session_id].clone(),
                s.script.clone().unwrap(),
                s.options.clone().unwrap_or_else(usual_options),
            )
        };
        match script {
            Script::Chunks(chunks, every) => {
                for c in chunks {
                    tokio::time::sleep(every).await;
                    let _ = tx.try_send(AgentEvent::MessageChunk(c));
                }
                Ok(StopReason::EndTurn.into())
            }
            Script::Says(text) => {
                tokio::time::sleep(Duration::from_millis(5)).await;
                let _ = tx.try_send(AgentEvent::MessageChunk(text));
                tokio::time::sleep(Duration::from_millis(2)).await;
                Ok(StopReason::EndTurn.into())
            }
            Script::Exit(status) => {
                let _ = tx.try_send(AgentEvent::MessageChunk("partial".into()));
                self.agent.kill_session(session_id);
                Err(AgentError::Exited { status })
            }
            Script::Error(message) => Err(AgentError::Rpc {
                code: -32603,
                message,
            }),
            Script::UntilCancelled => {
                let _ = tx.try_send(AgentEvent::MessageChunk("working".into()));
                cancel.notified().await;
                Ok(StopReason::Cancelled.into())
            }
            Script::AskPermission(times) => ask_permissions(&tx, &cancel, &options, times).await,
        }
    }

    async fn steer(&self, blocks: Vec<PromptBlock>) -> Result<Steered, AgentError> {
        let session_id = self.id.as_str();
        let mut s = self.agent.state.lock().unwrap();
        s.steered
            .push((session_id.into(), PromptBlock::text_of(&blocks)));
        s.steering
            .ok_or_else(|| AgentError::Failed("no steering".into()))
    }

    async fn cancel(&self) -> Result<(), AgentError> {
        let session_id = self.id.as_str();
        let n = self.agent.state.lock().unwrap().cancels[session_id].clone();
        n.notify_one();
        Ok(())
    }

    fn alive(&self) -> bool {
        let session_id = self.id.as_str();
        !self.agent.state.lock().unwrap().dead.contains(session_id)
    }

    async fn set_mode(&self, mode_id: &str) -> Result<(), AgentError> {
        let session_id = self.id.as_str();
        let mut s = self.agent.state.lock().unwrap();
        // An agent without modes has no such method.
        if s.settings.modes.is_empty() {
            return Err(AgentError::Rpc {
                code: -32601,
                message: "method not found".into(),
            });
        }
        if s.refused_modes.iter().any(|m| m == mode_id) {
            return Err(AgentError::Rpc {
                code: -32603,
                message: format!("cannot switch to {mode_id} now"),
            });
        }
        if !s.settings.modes.iter().any(|(id, _)| id == mode_id) {
            return Err(AgentError::Rpc {
                code: -32602,
                message: format!("no mode {mode_id}"),
            });
        }
        s.changes
            .push((session_id.into(), "mode".into(), mode_id.into()));
        Ok(())
    }

    async fn set_option(
        &self,
        option_id: &str,
        value: ConfigChoice,
    ) -> Result<Vec<ConfigOption>, AgentError> {
        let session_id = self.id.as_str();
        let mut s = self.agent.state.lock().unwrap();
        let Some(option) = s.settings.options.iter_mut().find(|o| o.id == option_id) else {
            return Err(AgentError::Rpc {
                code: -32602,
                message: format!("no option {option_id}"),
            });
        };
        let said = match (&mut option.value, value) {
            (ConfigValue::Choice { current, .. }, ConfigChoice::Value(v)) => {
                *current = v.clone();
                v
            }
            (ConfigValue::Toggle(on), ConfigChoice::Toggle(v)) => {
                *on = v;
                v.to_string()
            }
            _ => {
                return Err(AgentError::Rpc {
                    code: -32602,
                    message: "wrong kind of value".into(),
                });
            }
        };
        s.changes.push((session_id.into(), option_id.into(), said));
        Ok(s.settings.options.clone())
    }
}

/// Settings like those of the demo agent with `--settings`: modes `ask` and `code`, a
/// model choice `small` / `large`.
pub fn ask_code_and_model() -> SessionSettings {
    SessionSettings {
        modes: vec![("ask".into(), "Ask".into()), ("code".into(), "Code".into())],
        current_mode: Some("ask".into()),
        options: vec![ConfigOption {
            id: "model".into(),
            name: "Model".into(),
            category: Some("model".into()),
            value: ConfigValue::Choice {
                current: "small".into(),
                choices: vec![
                    ("small".into(), "Small".into()),
                    ("large".into(), "Large".into()),
                ],
            },
        }],
    }
}

/// The script that asks: `times` tool calls, each announced, asked about and ended as the
/// answer says (allowed: completed; anything else: failed); a cancel ends the turn.
async fn ask_permissions(
    tx: &mpsc::Sender<AgentEvent>,
    cancel: &tokio::sync::Notify,
    options: &[PermissionOption],
    times: u32,
) -> Result<TurnEnd, AgentError> {
    for i in 0..times {
        let tool = ToolCallFields {
            id: ToolCallId::new(format!("t{i}")),
            title: Some("bash: ls".into()),
            kind: Some(ToolKind::Execute),
            status: Some(ToolStatus::Pending),
            raw_input: Some(serde_json::json!({"command": "ls"})),
            ..Default::default()
        };
        let _ = tx.try_send(AgentEvent::ToolCall(tool.clone()));
        let (reply, answer) = tokio::sync::oneshot::channel();
        let _ = tx.try_send(AgentEvent::Permission(PermissionRequest {
            tool,
            options: options.to_vec(),
            resumes_when_allowed: false,
            reply,
        }));
        // A cancel wins over an answer that arrives with it: `session/cancel`
        // comes first.
        let answer = tokio::select! {
            biased;
            _ = cancel.notified() => return Ok(StopReason::Cancelled.into()),
            answer = answer => answer.unwrap_or(PermissionAnswer::Cancelled),
        };
        let said = match &answer {
            PermissionAnswer::Selected(id) => id.to_string(),
            PermissionAnswer::Cancelled => "cancelled".into(),
        };
        let allowed = said.starts_with("allow");
        let _ = tx.try_send(AgentEvent::ToolCallUpdate(ToolCallFields {
            id: ToolCallId::new(format!("t{i}")),
            status: Some(if allowed {
                ToolStatus::Completed
            } else {
                ToolStatus::Failed
            }),
            ..Default::default()
        }));
        let _ = tx.try_send(AgentEvent::MessageChunk(format!(
            "{}permission: {said}",
            if i > 0 { "\n" } else { "" }
        )));
    }
    Ok(StopReason::EndTurn.into())
}
