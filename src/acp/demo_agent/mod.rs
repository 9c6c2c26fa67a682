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
//! | `%tool-long N` | a tool call (`long output`) whose output is N lines |
//! | `%permission TITLE` | announces an `execute` tool call, asks permission, runs it if allowed |
//! | `%permission-abort TITLE` | the same, but a refusal ends the turn `cancelled` (as Codex does) |
//! | `%permission-edit PATH` | the same for an `edit` of PATH, with a diff |
//! | `%permission-early TITLE` | asks permission before announcing the tool call |
//! | `%permission-unannounced TITLE` | asks permission for a tool call never announced, and sends nothing for it after the answer (as Gemini CLI does) |
//! | `%permission-running TITLE` | announces the call in progress, then asks (as OpenCode does) |
//! | `%permission-codex TITLE` | asks first, with Codex's approval prompt as the call's content |
//! | `%plan A; B; C` | a plan |
//! | `%usage USED SIZE [COST CURRENCY]` | a usage update, with the session's cost if given |
//! | `%compact ID STATE [ERROR]` | a report of a summary of its context (`compaction_update`; STATE `in_progress`, `completed`, `failed`, `cancelled`) where the client asked for them, else says `compaction not offered` |
//! | `%title TEXT` | a session info update giving the session a title |
//! | `%tokens IN OUT` | token counts in the prompt result |
//! | `%unknown-update` | an update kind no client knows |
//! | `%sleep MS` | waits |
//! | `%hang` | waits until cancelled |
//! | `%hang-error` | waits until cancelled, then ends with a JSON-RPC error (as Qwen Code does) |
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
//! | `%read PATH` | reads PATH (relative to the session's folder) and says whether it could |
//! | `%write PATH TEXT` | writes TEXT to PATH and says whether it could |
//! | `%pwd` | says the session's folder and the process's `HOME` |
//! | `%client` | who the client said it is and what it offers (`fs`, `terminal`, `elicitation`, `compaction`) |
//! | `%fs-read PATH` | reads PATH through the client (`fs/read_text_file`) and says what came back |
//! | `%fs-write PATH TEXT` | writes TEXT to PATH through the client (`fs/write_text_file`) |
//! | `%ask-choice TEXT \| A, B` | asks the room to pick one of A, B (`elicitation/create`, a form of one field `choice`) and says `elicitation: accept {…}`, `decline` or `cancel` |
//! | `%ask-yes TEXT` | the same for a yes/no field `ok` |
//! | `%ask-text TEXT` | the same for a text field `answer` |
//! | `%ask-form TEXT` | the same for a form: `name` (text), `count` (1 to 100), `fast` (yes/no, optional) |
//! | `%ask-url URL TEXT` | asks the room to open URL |
//! | `%fs-edit PATH TEXT` | the same inside an `edit` tool call (in progress, the write, completed) |
//! | `%terminal [--limit N] [--cwd DIR] [--env K=V]… SCRIPT` | runs `sh -c SCRIPT` through the client's terminal in a tool call that embeds it; says its exit, whether its output was cut, and the output. Stopped (or its command killed by a signal, as a stop kills it), it tries another command and writes the client's answer to `terminal-after-stop.txt` |
//! | `%open-sessions` | how many sessions it holds open (`session/close` frees one) |
//! | `%mcp` | one line per MCP server the session was given (name, kind, command or URL, variable names) |
//! | `%mcp-call SERVER TOOL [JSON]` | calls TOOL of the MCP server SERVER the session was given (over stdio or HTTP, as given) with the JSON object's arguments and says what it answered (`-` as TOOL lists the tools) |
//! | `%blocks` | one line per content block of the prompt: kind, MIME type, size, name |
//! | `%image` | a picture (a 1×1 PNG) in the answer |
//! | `%link PATH` | a link to PATH (relative to the session's folder) in the answer |
//! | `%background SECONDS NAME` | starts a background task NAME that reports each second and completes after SECONDS (stoppable with `_session/async_task/stop`), where the client offered `asyncTasks`; says its ID |
//!
//! A turn that is cancelled ends with `stopReason: cancelled` within one chunk interval.
//!
//! With `--sessions DIR` it keeps every session's conversation in DIR (with `ID.meta`: its
//! folder and title, which `session/list` reports), advertises `loadSession` and
//! `session/list`, and answers `session/load` by replaying the conversation, as agents that
//! can reload sessions do; with `--resume` as well, it offers `session/resume` instead.
//!
//! It offers the slash commands `/demo` (the demo turn) and `/echo` (answers
//! `received: ` and the prompt exactly as it arrived). With `--settings` its sessions have
//! two modes (`ask`, `code`) and a model choice (config option `model`: `small`, `large`),
//! which `session/set_mode` and `session/set_config_option` change and `%settings` tells;
//! `--modes a,b,c` offers other modes and `--start-mode M` starts sessions in M. Only in
//! `ask` and `plan` does it ask before a tool runs: in any other mode `%permission` runs
//! the tool unasked, as real agents' auto modes do.
//! With `--auth` it offers two sign-in methods (`demo-login`, done by `authenticate`, and
//! `demo-terminal`, a terminal method) and refuses `session/new` with `auth_required` until
//! `authenticate` with `demo-login` came.
//! With `--prompt-capabilities image,audio,embedded` it advertises taking those kinds of
//! content in prompts (`promptCapabilities`); by default, text and links only.
//! With `--prompt-log FILE` it appends every prompt it receives to FILE (one JSON string a
//! line), so a test can tell whether a message reached it twice.
//! It advertises steering (`_meta.steering.supported`) and takes `_session/steering` into
//! a running turn, answered at its end (`↪️ You added: …`); an idle session answers
//! `promptRequired`. `--no-steering` turns this off.
//! It advertises `sessionCapabilities.fork` and answers `session/fork` with a new session
//! whose conversation (`%history`) starts as the source's; `--no-fork` stops advertising it.

use std::collections::HashMap;
use std::io::Write as _;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use agent_client_protocol::schema::ProtocolVersion;
use agent_client_protocol::v1::ConnectionTo;
use agent_client_protocol::v1::schema::{
    AgentCapabilities, AuthMethod, AuthMethodAgent, AuthMethodTerminal, AvailableCommand,
    AvailableCommandsUpdate, CancelNotification, ClientRequest, Implementation, InitializeResponse,
    McpCapabilities, PromptCapabilities, SessionCapabilities, SessionCloseCapabilities,
    SessionConfigOption, SessionConfigOptionCategory, SessionConfigSelectOption,
    SessionForkCapabilities, SessionInfo, SessionListCapabilities, SessionMode, SessionModeState,
    SessionNotification, SessionResumeCapabilities, SessionUpdate,
};
use agent_client_protocol::{Client, Stdio};
use tokio::sync::Notify;

use requests::Advertised;

use crate::model::media::PromptSupport;

/// Per-session cancellation state.
#[derive(Default)]
struct Cancel {
    /// Set by `session/cancel`, cleared when a new turn starts.
    flag: AtomicBool,
    /// Wakes a turn that is sleeping or hanging.
    notify: Notify,
    /// While a turn runs, the messages steered into it (`_session/steering`), answered at
    /// its end; `None` while the session is idle.
    steered: Mutex<Option<Vec<String>>>,
}

/// One exchange of a session's conversation, as the agent remembers it.
#[derive(Clone, serde::Serialize, serde::Deserialize)]
struct Exchange {
    /// The prompt text.
    prompt: String,
    /// What the agent answered.
    answer: String,
}

/// What `session/list` says of a saved session, kept beside its conversation
/// (`ID.meta`); a test may write one for a session "started elsewhere".
#[derive(serde::Serialize, serde::Deserialize)]
struct SavedMeta {
    /// Its working folder.
    cwd: PathBuf,
    /// Its title.
    title: String,
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
    /// The modes sessions offer (ID, name), with `--settings`.
    modes: Vec<(String, String)>,
    /// The mode new sessions start in.
    start_mode: String,
    /// Whether its answers leave its modes out though it has them (`--hide-modes`).
    hide_modes: bool,
    /// A mode `session/set_mode` fails to switch to (`--refuse-mode`).
    refused_mode: Option<String>,
    /// Whether sessions have the approval switch `allow_all` (`--allow-all`), and the
    /// sessions where it is on (then tools run unasked, whatever the mode).
    allow_all: Option<Mutex<std::collections::HashSet<String>>>,
    /// Each session's (mode, model), with `--settings`.
    settings: Mutex<HashMap<String, (String, String)>>,
    /// Where every prompt received is appended (`--prompt-log`).
    prompt_log: Option<PathBuf>,
    /// Each session's working folder, as the client gave it (`%read`, `%write`, `%pwd`).
    cwds: Mutex<HashMap<String, PathBuf>>,
    /// Who the client said it is and what it offers, from `initialize` (`%client`).
    client: Mutex<String>,
    /// Whether sessions wait for a sign-in (`--auth`) that has not happened yet.
    needs_sign_in: AtomicBool,
    /// The MCP servers each session was given (`%mcp`, `%mcp-call`).
    mcp: Mutex<HashMap<String, Vec<agent_client_protocol::v1::schema::McpServer>>>,
    /// The background tasks (`%background`), and whether the client takes them.
    background: background::Background,
}

/// The modes offered with `--settings` unless `--modes` names others.
const MODES: [(&str, &str); 2] = [("ask", "Ask"), ("code", "Code")];
/// The modes in which the demo agent asks before a tool runs.
const ASKING_MODES: [&str; 2] = ["ask", "plan"];
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
            .unwrap_or_else(|| (self.start_mode.clone(), MODELS[0].0.to_owned()))
    }

    /// Whether session `session` asks before a tool runs: in `ask` or `plan`, or always
    /// when it has no modes.
    fn asks(&self, session: &str) -> bool {
        !self.allows_all(session)
            && (!self.with_settings || ASKING_MODES.contains(&self.settings_of(session).0.as_str()))
    }

    /// Switches session `session` to `mode` (whatever it was), keeping its model.
    fn switch_mode(&self, session: &str, mode: &str) {
        let (_, model) = self.settings_of(session);
        self.settings
            .lock()
            .unwrap()
            .insert(session.to_owned(), (mode.to_owned(), model));
    }

    /// The config options of a session, as the protocol describes them.
    fn config_options(&self, session: &str) -> Vec<SessionConfigOption> {
        let (_, model) = self.settings_of(session);
        let choices: Vec<SessionConfigSelectOption> = MODELS
            .iter()
            .map(|(id, name)| SessionConfigSelectOption::new(*id, *name))
            .collect();
        let mut options = vec![
            SessionConfigOption::select("model", "Model", model, choices)
                .category(SessionConfigOptionCategory::Model),
        ];
        options.extend(self.allow_all_option(session));
        options
    }

    /// The modes a session's answers carry: none with `--hide-modes`.
    fn shown_modes(&self, session: &str) -> Option<SessionModeState> {
        (!self.hide_modes).then(|| self.modes(session))
    }

    /// The modes of a session, as the protocol describes them.
    fn modes(&self, session: &str) -> SessionModeState {
        let (mode, _) = self.settings_of(session);
        SessionModeState::new(
            mode,
            self.modes
                .iter()
                .map(|(id, name)| SessionMode::new(id.clone(), name.clone()))
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

    /// Adds an exchange to a session's conversation and saves it, with what `session/list`
    /// says of it (its folder, its first prompt as its title).
    fn remember(&self, session: &str, exchange: Exchange) {
        let mut history = self.history.lock().unwrap();
        let conversation = history.entry(session.to_owned()).or_default();
        conversation.push(exchange);
        if let Some(file) = self.file(session) {
            let title: String = (conversation[0].prompt.lines().next().unwrap_or_default())
                .chars()
                .take(40)
                .collect();
            let cwd = self.cwds.lock().unwrap().get(session).cloned();
            let meta = SavedMeta {
                cwd: cwd.unwrap_or_default(),
                title,
            };
            let _ = std::fs::write(
                file.with_extension("meta"),
                serde_json::to_vec(&meta).unwrap_or_default(),
            );
        }
        if let Some(file) = self.file(session)
            && let Err(e) =
                std::fs::write(&file, serde_json::to_vec(conversation).unwrap_or_default())
        {
            eprintln!("demo agent: cannot save {}: {e}", file.display());
        }
    }

    /// The saved sessions (`--sessions`) whose folder is `cwd` (all of them without one).
    fn list(&self, cwd: Option<&std::path::Path>) -> Vec<SessionInfo> {
        let Some(dir) = &self.saved else {
            return Vec::new();
        };
        let Ok(entries) = std::fs::read_dir(dir) else {
            return Vec::new();
        };
        let mut listed: Vec<SessionInfo> = entries
            .flatten()
            .filter_map(|entry| {
                let path = entry.path();
                if path.extension()? != "meta" {
                    return None;
                }
                let id = path.file_stem()?.to_string_lossy().into_owned();
                let meta: SavedMeta = serde_json::from_slice(&std::fs::read(&path).ok()?).ok()?;
                cwd.is_none_or(|c| c == meta.cwd)
                    .then(|| SessionInfo::new(id, meta.cwd).title(Some(meta.title)))
            })
            .collect();
        listed.sort_by(|a, b| a.session_id.0.cmp(&b.session_id.0));
        listed
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
    /// With `settings`: the modes sessions offer, by ID (empty: `ask` and `code`).
    pub modes: Vec<String>,
    /// With `settings`: the mode new sessions start in (`None`: the first).
    pub start_mode: Option<String>,
    /// With `settings`: leave the modes out of the answers to `session/new`, load and
    /// resume, though it has them (as some agents' answers do).
    pub hide_modes: bool,
    /// With `settings`: `session/set_mode` to this mode fails (-32603).
    pub refuse_mode: Option<String>,
    /// Give sessions the approval switch `allow_all` (a config option of category
    /// `permissions`, as Copilot's; implies `settings`), flipped by `/allow-all on|off` and
    /// `%allow-all on|off`.
    pub allow_all: bool,
    /// Where every prompt received is appended (one JSON string a line), if anywhere.
    pub prompt_log: Option<PathBuf>,
    /// What it advertises taking besides text (`promptCapabilities`).
    pub prompt_support: PromptSupport,
    /// Whether it must be signed in (`authenticate` with `demo-login`) before it opens
    /// sessions; it also offers a terminal method, `demo-terminal`.
    pub auth: bool,
    /// Whether it takes MCP servers over HTTP (`mcpCapabilities.http`).
    pub mcp_http: bool,
    /// Whether it advertises steering (`_meta.steering.supported`) and takes messages into
    /// a running turn (`_session/steering`).
    pub steering: bool,
    /// Whether it advertises forking sessions (`sessionCapabilities.fork`). It answers
    /// `session/fork` either way, as adapters that do not advertise it may.
    pub fork: bool,
}

/// The demo agent's state at its start, as `options` ask.
fn state(options: DemoOptions) -> State {
    let modes: Vec<(String, String)> = match options.modes.is_empty() {
        true => (MODES.iter())
            .map(|(id, name)| (id.to_string(), name.to_string()))
            .collect(),
        false => (options.modes.iter())
            .map(|id| (id.clone(), content::mode_name(id)))
            .collect(),
    };
    let start_mode = (options.start_mode.clone())
        .or_else(|| modes.first().map(|(id, _)| id.clone()))
        .unwrap_or_default();
    State {
        needs_sign_in: AtomicBool::new(options.auth),
        saved: options.sessions,
        with_settings: options.settings || !options.modes.is_empty() || options.allow_all,
        modes,
        start_mode,
        hide_modes: options.hide_modes,
        refused_mode: options.refuse_mode,
        allow_all: options.allow_all.then(Mutex::default),
        prompt_log: options.prompt_log,
        ..State::default()
    }
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
    let advertised = Advertised {
        capabilities: capabilities(&options),
        auth_methods: auth_methods(options.auth),
        steering: options.steering,
    };
    let state = Arc::new(state(options));
    let cancels = state.clone();
    agent_client_protocol::Agent
        .v1()
        .name("sidekicks-demo-agent")
        .on_receive_request(
            async move |request: ClientRequest, responder, cx| {
                state.request(request, responder.erase_to_json(), cx, &advertised)
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_notification(
            async move |n: CancelNotification, _cx| {
                cancels.cancel(&n.session_id.0);
                Ok(())
            },
            agent_client_protocol::on_receive_notification!(),
        )
        .connect_to(Stdio::new())
        .await
}

/// What the demo agent advertises at `initialize`, as `options` ask.
fn capabilities(options: &DemoOptions) -> AgentCapabilities {
    // Every demo agent can close sessions; kept ones can be loaded or resumed.
    let sessions = SessionCapabilities::new().close(SessionCloseCapabilities::new());
    let sessions = match options.fork {
        true => sessions.fork(SessionForkCapabilities::new()),
        false => sessions,
    };
    // Kept sessions can be listed.
    let sessions = match options.sessions {
        Some(_) => sessions.list(SessionListCapabilities::new()),
        None => sessions,
    };
    let capabilities = match (&options.sessions, options.resume) {
        (None, _) => AgentCapabilities::new().session_capabilities(sessions),
        (Some(_), false) => AgentCapabilities::new()
            .load_session(true)
            .session_capabilities(sessions),
        (Some(_), true) => AgentCapabilities::new()
            .session_capabilities(sessions.resume(SessionResumeCapabilities::new())),
    };
    let support = options.prompt_support;
    capabilities
        .mcp_capabilities(McpCapabilities::new().http(options.mcp_http))
        .prompt_capabilities(
            PromptCapabilities::new()
                .image(support.image)
                .audio(support.audio)
                .embedded_context(support.embedded_context),
        )
}

/// The sign-in methods offered with `--auth` (none without).
fn auth_methods(auth: bool) -> Vec<AuthMethod> {
    match auth {
        true => vec![
            AuthMethod::Agent(
                AuthMethodAgent::new("demo-login", "Demo sign-in")
                    .description("Signs the demo agent in at once".to_string()),
            ),
            AuthMethod::Terminal(
                AuthMethodTerminal::new("demo-terminal", "Sign in in a terminal")
                    .args(vec!["demo-agent".into(), "--login".into()]),
            ),
        ],
        false => Vec::new(),
    }
}

/// The answer to `initialize`: the protocol version, `capabilities`, whether it takes
/// steering (in `_meta`, as Claude's adapter says so) and who the agent is.
fn initialize_response(capabilities: AgentCapabilities, steering: bool) -> InitializeResponse {
    let mut meta = serde_json::Map::new();
    if steering {
        meta.insert("steering".into(), serde_json::json!({"supported": true}));
    }
    InitializeResponse::new(ProtocolVersion::V1)
        .agent_capabilities(capabilities)
        .meta(meta)
        .agent_info(
            Implementation::new("sidekicks-demo-agent", env!("CARGO_PKG_VERSION"))
                .title("Sidekicks demo agent".to_string()),
        )
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
    allow_all: bool,
) -> Result<(), agent_client_protocol::Error> {
    let mut commands = vec![
        AvailableCommand::new("demo", "Run the demo turn"),
        AvailableCommand::new("echo", "Repeat the prompt"),
    ];
    if allow_all {
        commands.push(AvailableCommand::new("allow-all", "Enable all permissions"));
    }
    cx.send_notification(SessionNotification::new(
        session,
        SessionUpdate::AvailableCommandsUpdate(AvailableCommandsUpdate::new(commands)),
    ))
}

mod allow_all;
mod ask;
mod background;
mod content;
mod handlers;
mod mcp_call;
mod requests;
mod terminal;
mod turn;
