//! The demo agent, which is also the scriptable agent of the tests: a real ACP agent on the
//! SDK's agent side that needs no model and no API key (`sidekicks demo-agent`).
//!
//! A prompt without instructions gets a demo turn: a thought, a plan, a tool call that asks
//! permission, and a streamed Markdown answer. A prompt with lines starting with `%` follows
//! them in order (see `docs/demo-agent.md`):
//!
//! | line | effect |
//! |---|---|
//! | `%say TEXT` | one answer chunk |
//! | `%stream MS SIZE` | the rest of the prompt after this line, in chunks of SIZE characters, MS apart |
//! | `%echo` | the whole prompt text back, exactly, as one chunk |
//! | `%think TEXT` | a thought chunk |
//! | `%tool TITLE` | a tool call: pending → in progress → completed, with output |
//! | `%tool-open TITLE` | a tool call left in progress |
//! | `%permission TITLE` | announces an `execute` tool call, asks permission, runs it if allowed |
//! | `%permission-edit PATH` | the same for an `edit` of PATH, with a diff |
//! | `%permission-early TITLE` | asks permission before announcing the tool call |
//! | `%permission-unannounced TITLE` | asks permission for a tool call never announced |
//! | `%plan A; B; C` | a plan |
//! | `%usage USED SIZE` | a usage update |
//! | `%tokens IN OUT` | token counts in the prompt result |
//! | `%unknown-update` | an update kind no client knows |
//! | `%sleep MS` | waits |
//! | `%hang` | waits until cancelled |
//! | `%error MESSAGE` | ends the turn with a JSON-RPC error |
//! | `%crash CODE` | exits the process |
//! | `%stderr TEXT` | writes TEXT to stderr |
//! | `%stop REASON` | ends with that stop reason (`max_tokens`, `refusal`, …) |
//! | `%now` | one chunk: the wall-clock time in microseconds since 1970, then a line break (benchmarks) |
//! | `%history` | lists the earlier prompts of the session, as the agent remembers them |
//! | `%garbage N` | writes N lines that are not JSON-RPC to stdout |
//! | `%binary` | writes a line that is not UTF-8 text to stdout |
//! | `%stderr-binary` | writes a line that is not UTF-8 text to stderr |
//! | `%stderr-flood BYTES` | writes one line of BYTES characters to stderr |
//!
//! A turn that is cancelled ends with `stopReason: cancelled` within one chunk interval.
//!
//! With `--sessions DIR` it keeps every session's conversation in DIR, advertises
//! `loadSession`, and answers `session/load` by replaying the conversation, as agents that
//! can reload sessions do; with `--resume` as well, it offers `session/resume` instead.
//!
//! It offers the slash commands `/demo` (the demo turn) and `/echo` (answers
//! `received: ` and the prompt exactly as it arrived). With `--settings` its sessions have
//! two modes (`ask`, `code`) and a model choice (config option `model`: `small`, `large`),
//! which `session/set_mode` and `session/set_config_option` change and `%settings` tells.
//! With `--prompt-log FILE` it appends every prompt it receives to FILE (one JSON string a
//! line), so a test can tell whether a message reached it twice.

use std::collections::HashMap;
use std::io::Write as _;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use agent_client_protocol::schema::ProtocolVersion;
use agent_client_protocol::v1::ConnectionTo;
use agent_client_protocol::v1::schema::{
    AgentCapabilities, AvailableCommand, AvailableCommandsUpdate, CancelNotification, ContentBlock,
    ContentChunk, CurrentModeUpdate, Diff, Implementation, InitializeRequest, InitializeResponse,
    LoadSessionRequest, LoadSessionResponse, NewSessionRequest, NewSessionResponse,
    PermissionOption, PermissionOptionKind, Plan, PlanEntry, PlanEntryPriority, PlanEntryStatus,
    PromptRequest, PromptResponse, RequestPermissionOutcome, RequestPermissionRequest,
    ResumeSessionRequest, ResumeSessionResponse, SessionCapabilities, SessionConfigOption,
    SessionConfigOptionCategory, SessionConfigSelectOption, SessionMode, SessionModeState,
    SessionNotification, SessionResumeCapabilities, SessionUpdate, SetSessionConfigOptionRequest,
    SetSessionConfigOptionResponse, SetSessionModeRequest, SetSessionModeResponse, StopReason,
    TextContent, ToolCall, ToolCallLocation, ToolCallStatus, ToolCallUpdate, ToolCallUpdateFields,
    ToolKind, Usage, UsageUpdate,
};
use agent_client_protocol::{Client, Stdio, UntypedMessage};
use tokio::sync::Notify;

/// Per-session cancellation state.
#[derive(Default)]
struct Cancel {
    /// Set by `session/cancel`, cleared when a new turn starts.
    flag: AtomicBool,
    /// Wakes a turn that is sleeping or hanging.
    notify: Notify,
}

/// One exchange of a session's conversation, as the agent remembers it.
#[derive(Clone, serde::Serialize, serde::Deserialize)]
struct Exchange {
    /// The prompt text.
    prompt: String,
    /// What the agent answered.
    answer: String,
}

#[derive(Default)]
struct State {
    /// Cancellation state by session ID.
    sessions: Mutex<HashMap<String, Arc<Cancel>>>,
    /// Each session's conversation.
    history: Mutex<HashMap<String, Vec<Exchange>>>,
    /// Where conversations are kept across restarts (`--sessions`), if anywhere.
    saved: Option<PathBuf>,
    /// Numbers new session IDs.
    next: AtomicU64,
    /// Whether sessions have modes and a model choice (`--settings`).
    with_settings: bool,
    /// Each session's (mode, model), with `--settings`.
    settings: Mutex<HashMap<String, (String, String)>>,
    /// Where every prompt received is appended (`--prompt-log`).
    prompt_log: Option<PathBuf>,
}

/// The modes offered with `--settings`.
const MODES: [(&str, &str); 2] = [("ask", "Ask"), ("code", "Code")];
/// The models offered with `--settings`.
const MODELS: [(&str, &str); 2] = [("small", "Small model"), ("large", "Large model")];

impl State {
    /// A session's (mode, model), the defaults until changed.
    fn settings_of(&self, session: &str) -> (String, String) {
        self.settings
            .lock()
            .unwrap()
            .get(session)
            .cloned()
            .unwrap_or_else(|| (MODES[0].0.to_owned(), MODELS[0].0.to_owned()))
    }

    /// The config options of a session, as the protocol describes them.
    fn config_options(&self, session: &str) -> Vec<SessionConfigOption> {
        let (_, model) = self.settings_of(session);
        let choices: Vec<SessionConfigSelectOption> = MODELS
            .iter()
            .map(|(id, name)| SessionConfigSelectOption::new(*id, *name))
            .collect();
        vec![
            SessionConfigOption::select("model", "Model", model, choices)
                .category(SessionConfigOptionCategory::Model),
        ]
    }

    /// The modes of a session, as the protocol describes them.
    fn modes(&self, session: &str) -> SessionModeState {
        let (mode, _) = self.settings_of(session);
        SessionModeState::new(
            mode,
            MODES
                .iter()
                .map(|(id, name)| SessionMode::new(*id, *name))
                .collect(),
        )
    }
}

impl State {
    /// Appends `text` to the prompt log (`--prompt-log`), if there is one.
    fn log_prompt(&self, text: &str) {
        let Some(path) = &self.prompt_log else {
            return;
        };
        let line = format!("{}\n", serde_json::to_string(text).unwrap_or_default());
        let written = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
            .and_then(|mut file| file.write_all(line.as_bytes()));
        if let Err(e) = written {
            eprintln!(
                "demo agent: cannot log the prompt to {}: {e}",
                path.display()
            );
        }
    }

    /// The file holding a session's conversation; `None` for an ID that is not a plain name.
    fn file(&self, session: &str) -> Option<PathBuf> {
        let plain = session
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-');
        self.saved
            .as_ref()
            .filter(|_| plain)
            .map(|dir| dir.join(format!("{session}.json")))
    }

    /// Adds an exchange to a session's conversation and saves it.
    fn remember(&self, session: &str, exchange: Exchange) {
        let mut history = self.history.lock().unwrap();
        let conversation = history.entry(session.to_owned()).or_default();
        conversation.push(exchange);
        if let Some(file) = self.file(session)
            && let Err(e) =
                std::fs::write(&file, serde_json::to_vec(conversation).unwrap_or_default())
        {
            eprintln!("demo agent: cannot save {}: {e}", file.display());
        }
    }

    /// Takes a saved session back after a restart (load or resume): its conversation is
    /// remembered again and returned, or the session is unknown.
    fn restore(&self, session: &str) -> Result<Vec<Exchange>, agent_client_protocol::Error> {
        let conversation: Vec<Exchange> = self
            .file(session)
            .and_then(|file| std::fs::read(file).ok())
            .and_then(|bytes| serde_json::from_slice(&bytes).ok())
            .ok_or_else(|| {
                agent_client_protocol::Error::new(-32002, format!("unknown session {session}"))
            })?;
        self.history
            .lock()
            .unwrap()
            .insert(session.to_owned(), conversation.clone());
        self.sessions
            .lock()
            .unwrap()
            .insert(session.to_owned(), Arc::default());
        Ok(conversation)
    }
}

/// How the demo agent keeps its sessions.
#[derive(Debug, Clone, Default)]
pub struct DemoOptions {
    /// Where conversations are kept across restarts; `None`: nowhere, like most agents.
    pub sessions: Option<PathBuf>,
    /// With `sessions`: offer `session/resume` (no replay) instead of `session/load`.
    pub resume: bool,
    /// Give sessions modes and a model choice.
    pub settings: bool,
    /// Where every prompt received is appended (one JSON string a line), if anywhere.
    pub prompt_log: Option<PathBuf>,
}

/// Runs the demo agent on stdin/stdout until the client goes away. With
/// `options.sessions`, it keeps conversations in that folder and can load them back
/// (`loadSession`), or resume them (`options.resume`).
pub async fn run_stdio(options: DemoOptions) -> Result<(), agent_client_protocol::Error> {
    if let Some(dir) = &options.sessions {
        std::fs::create_dir_all(dir).map_err(|e| {
            agent_client_protocol::Error::internal_error().data(format!("{}: {e}", dir.display()))
        })?;
    }
    let capabilities = match (&options.sessions, options.resume) {
        (None, _) => AgentCapabilities::new(),
        (Some(_), false) => AgentCapabilities::new().load_session(true),
        (Some(_), true) => AgentCapabilities::new().session_capabilities(
            SessionCapabilities::new().resume(SessionResumeCapabilities::new()),
        ),
    };
    let state = Arc::new(State {
        saved: options.sessions,
        with_settings: options.settings,
        prompt_log: options.prompt_log,
        ..State::default()
    });
    let (s1, s2, s3, s4, s5, s6, s7) = (
        state.clone(),
        state.clone(),
        state.clone(),
        state.clone(),
        state.clone(),
        state.clone(),
        state,
    );
    agent_client_protocol::Agent
        .v1()
        .name("sidekicks-demo-agent")
        .on_receive_request(
            async move |_req: InitializeRequest, responder, _cx| {
                responder.respond(
                    InitializeResponse::new(ProtocolVersion::V1)
                        .agent_capabilities(capabilities.clone())
                        .agent_info(
                            Implementation::new("sidekicks-demo-agent", env!("CARGO_PKG_VERSION"))
                                .title("Sidekicks demo agent".to_string()),
                        ),
                )
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |_req: NewSessionRequest, responder, cx: ConnectionTo<Client>| {
                // Unique across restarts, so a saved session is never confused with a new one.
                let id = format!(
                    "demo-{}-{}",
                    std::process::id(),
                    s1.next.fetch_add(1, Ordering::Relaxed)
                );
                s1.sessions
                    .lock()
                    .unwrap()
                    .insert(id.clone(), Arc::default());
                let mut response = NewSessionResponse::new(id.clone());
                if s1.with_settings {
                    response = response
                        .modes(s1.modes(&id))
                        .config_options(s1.config_options(&id));
                }
                responder.respond(response)?;
                send_commands(&cx, id)
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |req: LoadSessionRequest, responder, cx: ConnectionTo<Client>| {
                let id = req.session_id.0.to_string();
                let conversation = match s4.restore(&id) {
                    Ok(conversation) => conversation,
                    Err(e) => return responder.respond_with_error(e),
                };
                // Replay the conversation before answering, as the protocol asks.
                for exchange in &conversation {
                    let chunk =
                        |text: &str| ContentChunk::new(ContentBlock::Text(TextContent::new(text)));
                    cx.send_notification(SessionNotification::new(
                        id.clone(),
                        SessionUpdate::UserMessageChunk(chunk(&exchange.prompt)),
                    ))?;
                    cx.send_notification(SessionNotification::new(
                        id.clone(),
                        SessionUpdate::AgentMessageChunk(chunk(&exchange.answer)),
                    ))?;
                }
                responder.respond(LoadSessionResponse::new())?;
                send_commands(&cx, id)
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |req: ResumeSessionRequest, responder, cx: ConnectionTo<Client>| {
                let id = req.session_id.0.to_string();
                // Resuming replays nothing: the agent simply carries on.
                if let Err(e) = s5.restore(&id) {
                    return responder.respond_with_error(e);
                }
                responder.respond(ResumeSessionResponse::new())?;
                send_commands(&cx, id)
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |req: PromptRequest, responder, cx: ConnectionTo<Client>| {
                let session = req.session_id.0.to_string();
                let cancel = s2
                    .sessions
                    .lock()
                    .unwrap()
                    .entry(session.clone())
                    .or_default()
                    .clone();
                cancel.flag.store(false, Ordering::SeqCst);
                let text: String = req
                    .prompt
                    .iter()
                    .filter_map(|b| match b {
                        ContentBlock::Text(t) => Some(t.text.as_str()),
                        _ => None,
                    })
                    .collect::<Vec<_>>()
                    .join("\n");
                s2.log_prompt(&text);
                // The turn runs outside the dispatch loop so `session/cancel` gets through.
                let state = s2.clone();
                tokio::spawn(async move {
                    let earlier = state
                        .history
                        .lock()
                        .unwrap()
                        .get(&session)
                        .cloned()
                        .unwrap_or_default();
                    let settings = state.settings_of(&session);
                    let turn = Turn {
                        settings,
                        cx,
                        session,
                        cancel,
                        tools: AtomicU64::new(0),
                        tokens: Mutex::new(None),
                        said: Mutex::new(String::new()),
                        earlier,
                    };
                    let result = turn.run(&text).await;
                    let answer = std::mem::take(&mut *turn.said.lock().unwrap());
                    state.remember(
                        &turn.session,
                        Exchange {
                            prompt: text,
                            answer,
                        },
                    );
                    let _ = match result {
                        Ok(reason) => {
                            let usage = turn.tokens.lock().unwrap().take();
                            responder.respond(PromptResponse::new(reason).usage(usage))
                        }
                        Err(e) => responder.respond_with_error(e),
                    };
                });
                Ok(())
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |req: SetSessionModeRequest, responder, cx: ConnectionTo<Client>| {
                let session = req.session_id.0.to_string();
                let mode = req.mode_id.0.to_string();
                if !s6.with_settings || !MODES.iter().any(|(id, _)| *id == mode) {
                    return responder.respond_with_error(
                        agent_client_protocol::Error::invalid_params()
                            .data(format!("no mode {mode}")),
                    );
                }
                let (_, model) = s6.settings_of(&session);
                s6.settings
                    .lock()
                    .unwrap()
                    .insert(session.clone(), (mode.clone(), model));
                responder.respond(SetSessionModeResponse::new())?;
                cx.send_notification(SessionNotification::new(
                    session,
                    SessionUpdate::CurrentModeUpdate(CurrentModeUpdate::new(mode)),
                ))
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |req: SetSessionConfigOptionRequest, responder, _cx| {
                let session = req.session_id.0.to_string();
                let model = req.value.as_value_id().map(|v| v.0.to_string());
                let known = model
                    .as_deref()
                    .is_some_and(|m| MODELS.iter().any(|(id, _)| *id == m));
                if !s7.with_settings || &*req.config_id.0 != "model" || !known {
                    return responder.respond_with_error(
                        agent_client_protocol::Error::invalid_params()
                            .data(format!("cannot set {} to {model:?}", req.config_id.0)),
                    );
                }
                let (mode, _) = s7.settings_of(&session);
                s7.settings
                    .lock()
                    .unwrap()
                    .insert(session.clone(), (mode, model.unwrap_or_default()));
                responder.respond(SetSessionConfigOptionResponse::new(
                    s7.config_options(&session),
                ))
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_notification(
            async move |n: CancelNotification, _cx| {
                if let Some(c) = s3.sessions.lock().unwrap().get(&*n.session_id.0) {
                    c.flag.store(true, Ordering::SeqCst);
                    c.notify.notify_waiters();
                }
                Ok(())
            },
            agent_client_protocol::on_receive_notification!(),
        )
        .connect_to(Stdio::new())
        .await
}

/// Writes `bytes` straight to stdout, outside the protocol (`%garbage`, `%binary`), after
/// letting what is queued go out first so they are not mixed into a message.
async fn write_raw_stdout(bytes: Vec<u8>) {
    tokio::time::sleep(Duration::from_millis(200)).await;
    let mut out = std::io::stdout().lock();
    let _ = out.write_all(&bytes);
    let _ = out.flush();
}

/// Tells the client the agent's slash commands (after a session is opened or loaded).
fn send_commands(
    cx: &ConnectionTo<Client>,
    session: String,
) -> Result<(), agent_client_protocol::Error> {
    let commands = vec![
        AvailableCommand::new("demo", "Run the demo turn"),
        AvailableCommand::new("echo", "Repeat the prompt"),
    ];
    cx.send_notification(SessionNotification::new(
        session,
        SessionUpdate::AvailableCommandsUpdate(AvailableCommandsUpdate::new(commands)),
    ))
}

/// One prompt being answered.
struct Turn {
    /// The connection to the client, for updates and permission requests.
    cx: ConnectionTo<Client>,
    /// The session the prompt belongs to.
    session: String,
    /// Its cancellation state.
    cancel: Arc<Cancel>,
    /// Numbers the turn's tool calls.
    tools: AtomicU64,
    /// Token counts to put in the prompt result (`%tokens`).
    tokens: Mutex<Option<Usage>>,
    /// The answer text sent so far, remembered with the prompt when the turn ends.
    said: Mutex<String>,
    /// The session's conversation before this turn (`%history`).
    earlier: Vec<Exchange>,
    /// The session's (mode, model) when the turn started (`%settings`).
    settings: (String, String),
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
}

type TurnResult = Result<StopReason, agent_client_protocol::Error>;

impl Turn {
    fn cancelled(&self) -> bool {
        self.cancel.flag.load(Ordering::SeqCst)
    }

    fn update(&self, update: SessionUpdate) -> Result<(), agent_client_protocol::Error> {
        self.cx
            .send_notification(SessionNotification::new(self.session.clone(), update))
    }

    fn say(&self, text: &str) -> Result<(), agent_client_protocol::Error> {
        self.said.lock().unwrap().push_str(text);
        self.update(SessionUpdate::AgentMessageChunk(ContentChunk::new(
            ContentBlock::Text(TextContent::new(text)),
        )))
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

    async fn run(&self, text: &str) -> TurnResult {
        if let Some(command) = text.trim_start().strip_prefix('/') {
            let name = command.split_whitespace().next().unwrap_or("");
            return match name {
                "demo" => self.demo(text).await,
                "echo" => {
                    self.say(&format!("received: {text}"))?;
                    Ok(StopReason::EndTurn)
                }
                other => {
                    self.say(&format!("(unknown command /{other})"))?;
                    Ok(StopReason::EndTurn)
                }
            };
        }
        if !text.lines().any(|l| l.starts_with('%')) {
            return self.demo(text).await;
        }
        // Each line with the byte offset where the next one starts, so `%stream` can take
        // the rest of the prompt exactly as sent.
        let mut offset = 0;
        let lines: Vec<(&str, usize)> = text
            .split_inclusive('\n')
            .map(|l| {
                offset += l.len();
                (l.trim_end_matches(['\n', '\r']), offset)
            })
            .collect();
        for (line, next) in lines {
            let Some(directive) = line.strip_prefix('%') else {
                continue;
            };
            let (word, arg) = directive.split_once(' ').unwrap_or((directive, ""));
            let mut args = arg.split_whitespace();
            let mut num =
                |default: u64| args.next().and_then(|a| a.parse().ok()).unwrap_or(default);
            match word {
                "say" => self.say(arg)?,
                "echo" => self.say(text)?,
                "think" => self.think(arg)?,
                "stream" => {
                    let (ms, size) = (num(50), num(20).max(1) as usize);
                    return self.stream(&text[next..], ms, size).await;
                }
                "tool" => self.tool(arg).await?,
                "tool-open" => {
                    let id = self.tool_id();
                    self.update(SessionUpdate::ToolCall(
                        ToolCall::new(id, arg)
                            .kind(ToolKind::Execute)
                            .status(ToolCallStatus::InProgress),
                    ))?;
                }
                "permission" => {
                    let call = execute(&self.tool_id(), arg);
                    self.permission(call, Ask::AfterAnnouncing).await?;
                }
                "permission-edit" => {
                    let call = edit(&self.tool_id(), arg);
                    self.permission(call, Ask::AfterAnnouncing).await?
                }
                "permission-early" => {
                    let call = execute(&self.tool_id(), arg);
                    self.permission(call, Ask::BeforeAnnouncing).await?
                }
                "permission-unannounced" => {
                    let call = execute(&self.tool_id(), arg);
                    self.permission(call, Ask::Unannounced).await?
                }
                "tokens" => {
                    let (input, output) = (num(0), num(0));
                    *self.tokens.lock().unwrap() = Some(Usage::new(input + output, input, output));
                }
                "plan" => self.plan(arg.split(';').map(str::trim).collect())?,
                "usage" => {
                    let (used, size) = (num(0), num(0));
                    self.update(SessionUpdate::UsageUpdate(UsageUpdate::new(used, size)))?;
                }
                "unknown-update" => {
                    let raw = serde_json::json!({"sessionId": self.session, "update": {"sessionUpdate": "hologram", "intensity": 11}});
                    self.cx
                        .send_notification(UntypedMessage::new("session/update", raw)?)?;
                }
                "sleep" => {
                    if self.pause(num(100)).await {
                        return Ok(StopReason::Cancelled);
                    }
                }
                "hang" => {
                    while !self.pause(60_000).await {}
                    return Ok(StopReason::Cancelled);
                }
                "error" => return Err(agent_client_protocol::Error::new(-32603, arg.to_owned())),
                "crash" => {
                    eprintln!("demo agent: crashing as asked");
                    std::process::exit(num(3) as i32);
                }
                "stderr" => eprintln!("{arg}"),
                "stderr-binary" => {
                    let mut err = std::io::stderr().lock();
                    let _ = err.write_all(b"demo agent: \xff\xfe not text \xc3\n");
                    let _ = err.flush();
                }
                "stderr-flood" => {
                    let mut line = "x".repeat(num(1_000) as usize);
                    line.push('\n');
                    let mut err = std::io::stderr().lock();
                    let _ = err.write_all(line.as_bytes());
                    let _ = err.flush();
                }
                "now" => {
                    let micros = std::time::SystemTime::now()
                        .duration_since(std::time::UNIX_EPOCH)
                        .unwrap_or_default()
                        .as_micros();
                    self.say(&format!("{micros}\n"))?;
                }
                "settings" => {
                    let (mode, model) = self.settings.clone();
                    self.say(&format!("mode: {mode}, model: {model}"))?;
                }
                "history" => {
                    let mut listing = format!("{} earlier prompts", self.earlier.len());
                    for exchange in &self.earlier {
                        listing.push_str(&format!("\n- {}", exchange.prompt.replace('\n', " ")));
                    }
                    self.say(&listing)?;
                }
                "binary" => write_raw_stdout(b"\xff\xfe not text\n".to_vec()).await,
                "garbage" => {
                    let lines: String = (0..num(1))
                        .map(|i| format!("demo agent: this line {i} is not JSON-RPC\n"))
                        .collect();
                    write_raw_stdout(lines.into_bytes()).await;
                }
                "stop" => {
                    return Ok(match arg.trim() {
                        "max_tokens" => StopReason::MaxTokens,
                        "max_turn_requests" => StopReason::MaxTurnRequests,
                        "refusal" => StopReason::Refusal,
                        "cancelled" => StopReason::Cancelled,
                        _ => StopReason::EndTurn,
                    });
                }
                _ => self.say(&format!("(unknown instruction %{word})"))?,
            }
            if self.cancelled() {
                return Ok(StopReason::Cancelled);
            }
        }
        Ok(StopReason::EndTurn)
    }

    async fn stream(&self, text: &str, ms: u64, size: usize) -> TurnResult {
        let chars: Vec<char> = text.chars().collect();
        for chunk in chars.chunks(size) {
            if self.pause(ms).await {
                return Ok(StopReason::Cancelled);
            }
            self.say(&chunk.iter().collect::<String>())?;
        }
        Ok(StopReason::EndTurn)
    }

    fn plan(&self, entries: Vec<&str>) -> Result<(), agent_client_protocol::Error> {
        let entries = entries
            .into_iter()
            .enumerate()
            .map(|(i, e)| {
                let status = if i == 0 {
                    PlanEntryStatus::Completed
                } else {
                    PlanEntryStatus::Pending
                };
                PlanEntry::new(e, PlanEntryPriority::Medium, status)
            })
            .collect();
        self.update(SessionUpdate::Plan(Plan::new(entries)))
    }

    fn tool_id(&self) -> String {
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

    /// Asks permission for `call`, with the four options real agents offer, and runs it
    /// (completed) if allowed or fails it if not; then says `permission: <optionId>`.
    async fn permission(
        &self,
        call: ToolCall,
        ask: Ask,
    ) -> Result<(), agent_client_protocol::Error> {
        let id = call.tool_call_id.0.to_string();
        let title = call.title.clone();
        if ask == Ask::AfterAnnouncing {
            self.update(SessionUpdate::ToolCall(call.clone()))?;
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
        let request =
            RequestPermissionRequest::new(self.session.clone(), call.clone().into(), options);
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
        Ok(())
    }

    /// The turn a person trying the demo sees.
    async fn demo(&self, text: &str) -> TurnResult {
        self.think("Reading the request and planning a short answer.")?;
        self.plan(vec!["Read the message", "Look at the workspace", "Answer"])?;
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
            let mut names: Vec<String> = std::fs::read_dir(".")
                .map(|d| {
                    d.filter_map(|e| e.ok())
                        .map(|e| e.file_name().to_string_lossy().into_owned())
                        .collect()
                })
                .unwrap_or_default();
            names.sort();
            names.truncate(10);
            self.set_status(
                &id,
                ToolCallUpdateFields::new()
                    .status(ToolCallStatus::Completed)
                    .content(vec![names.join("\n").into()]),
            )?;
            if names.is_empty() {
                "The workspace is empty.".to_owned()
            } else {
                format!(
                    "The workspace holds: {}.",
                    names
                        .iter()
                        .map(|n| format!("`{n}`"))
                        .collect::<Vec<_>>()
                        .join(", ")
                )
            }
        } else {
            self.set_status(
                &id,
                ToolCallUpdateFields::new().status(ToolCallStatus::Failed),
            )?;
            "You did not let me list the workspace, so I will not look.".to_owned()
        };
        let quoted: String = text.lines().map(|l| format!("> {l}\n")).collect();
        let answer = format!(
            "## Hello from the demo agent\n\nYou wrote:\n\n{quoted}\n{listing}\n\n\
             This answer is **streamed**: it arrives in pieces, and Sidekicks edits one Matrix \
             message as they come. Things to try:\n\n\
             1. Send a long message and watch the edits.\n\
             2. Write `!stop` (or react 🛑 to this message) while I answer.\n\
             3. Write `%echo` to get your prompt back exactly.\n\n\
             ```rust\nfn main() {{\n    println!(\"streamed through ACP\");\n}}\n```\n\n\
             | part | speaks |\n|---|---|\n| gateway | Matrix + ACP |\n| me | ACP over stdio |\n"
        );
        let words: Vec<&str> = answer.split_inclusive(' ').collect();
        for chunk in words.chunks(4) {
            if self.pause(80).await {
                return Ok(StopReason::Cancelled);
            }
            self.say(&chunk.concat())?;
        }
        Ok(StopReason::EndTurn)
    }
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
