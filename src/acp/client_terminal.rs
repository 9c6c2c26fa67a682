//! The client's terminal methods (`terminal/create`, `output`, `wait_for_exit`, `kill`,
//! `release`): an agent runs commands through Sidekicks, in its session's folder, the way the
//! agent itself runs (its sandbox, its environment; `terminal.rs`). A tool call that embeds a
//! terminal shows its output live in its card. `!stop` kills a session's commands and refuses
//! new ones until the next prompt; closing a session or stopping the agent ends them all, so
//! none outlives its session. See `docs/acp-client.md`.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use agent_client_protocol::Error;
use agent_client_protocol::v1::Responder;
use agent_client_protocol::v1::schema::{
    Content, ContentBlock, CreateTerminalRequest, CreateTerminalResponse, EnvVariable,
    KillTerminalRequest, KillTerminalResponse, ReleaseTerminalRequest, ReleaseTerminalResponse,
    SessionUpdate, TerminalExitStatus, TerminalOutputRequest, TerminalOutputResponse, TextContent,
    ToolCallContent, ToolCallUpdate, ToolCallUpdateFields, WaitForTerminalExitRequest,
    WaitForTerminalExitResponse,
};

use super::client_fs;
use super::events;
use super::process::ProcessSpec;
use super::sessions::Sessions;
use super::terminal::{Exit, Terminal};
use crate::model::ids::AgentId;

/// How often a card following a command's output is refreshed at most (the room's edit
/// pacing coalesces further).
const CARD_REFRESH: Duration = Duration::from_millis(400);
/// Released terminals whose last output is kept for cards that still name them.
const RELEASED_KEPT: usize = 32;
/// Commands one session may have at once (running or not yet released).
const PER_SESSION: usize = 16;

/// A terminal and the session that created it.
struct Owned {
    /// The session it belongs to: only that session's requests reach it.
    session: String,
    /// The command.
    terminal: Arc<Terminal>,
}

#[derive(Default)]
struct State {
    /// Numbers terminal IDs.
    next: u64,
    /// Every terminal not yet released, by ID.
    terminals: HashMap<String, Owned>,
    /// Tool calls that embed a terminal, by (session, tool call): their content as the agent
    /// sent it, to show again with the terminal's output in place.
    cards: HashMap<(String, String), Vec<ToolCallContent>>,
    /// The last card text of released terminals (bounded, oldest first).
    released: VecDeque<(String, String)>,
}

/// The terminals of one agent process.
pub struct Terminals {
    /// The agent's ID, for logs.
    agent_id: AgentId,
    /// How the agent runs, which its commands share.
    spec: ProcessSpec,
    /// Its sessions: folders, cancels, and where card updates go.
    sessions: Arc<Mutex<Sessions>>,
    /// The terminals and the cards that show them.
    state: Mutex<State>,
    /// Whether the agent may run commands through us at all (`agents[].terminals`).
    enabled: bool,
}

/// The environment a command asked for, checked: set inside the sandbox only, so a
/// variable the loader reads (`LD_PRELOAD`…) is refused outright, as is a NUL character or
/// more than the sandbox's inner environment holds.
fn requested_env(asked: &[EnvVariable]) -> Result<Vec<(String, String)>, Error> {
    let env: Vec<(String, String)> = asked
        .iter()
        .map(|v| (v.name.clone(), v.value.clone()))
        .collect();
    for (name, value) in &env {
        super::process::requested_variable(name).map_err(refused)?;
        if value.contains('\0') {
            return Err(refused(format!("`{name}` holds a NUL character")));
        }
    }
    let size: usize = env.iter().map(|(k, v)| k.len() + v.len() + 12).sum();
    if size > super::launch::MAX_INNER_ENV {
        return Err(refused(format!(
            "the environment asked for is over {} bytes",
            super::launch::MAX_INNER_ENV
        )));
    }
    Ok(env)
}

/// The error an agent gets for a terminal request refused.
fn refused(why: impl std::fmt::Display) -> Error {
    Error::invalid_params().data(why.to_string())
}

impl Terminals {
    /// No terminals yet, for an agent run as `spec`.
    pub fn new(spec: &ProcessSpec, sessions: Arc<Mutex<Sessions>>) -> Arc<Self> {
        Arc::new(Self {
            agent_id: spec.agent_id.clone(),
            spec: spec.clone(),
            sessions,
            state: Mutex::new(State::default()),
            enabled: spec.terminals,
        })
    }

    /// Whether terminals are offered to the agent.
    pub fn enabled(&self) -> bool {
        self.enabled
    }

    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().expect("terminals poisoned")
    }

    /// `terminal/create`: starts the command in the session's folder (or a folder inside
    /// it), unless the session is not open here or its turn was stopped.
    fn create(self: &Arc<Self>, request: CreateTerminalRequest) -> Result<String, Error> {
        let session = request.session_id.0.to_string();
        if !self.enabled {
            return Err(refused("terminals are not offered to this agent"));
        }
        let (folder, stopped) = {
            let sessions = self.sessions.lock().expect("sessions poisoned");
            (
                sessions.folder(&session),
                sessions.cancel_was_requested(&session),
            )
        };
        let Some(folder) = folder else {
            return Err(refused("no such session open on this agent"));
        };
        if stopped {
            return Err(refused(
                "the turn was stopped: no new command runs until the next prompt",
            ));
        }
        // A folder of the session's, reached without a link (the command then runs in it
        // inside the sandbox, where a link swapped in later leads nowhere of the gateway's).
        let cwd = match &request.cwd {
            Some(cwd) => client_fs::inside_dir(&folder, cwd)?,
            None => folder.path().to_owned(),
        };
        if self
            .state()
            .terminals
            .values()
            .filter(|t| t.session == session)
            .count()
            >= PER_SESSION
        {
            return Err(refused(format!(
                "at most {PER_SESSION} terminals per session: release one first"
            )));
        }
        let env = requested_env(&request.env)?;
        let limit = request
            .output_byte_limit
            .map(|l| usize::try_from(l).unwrap_or(usize::MAX));
        let terminal = Terminal::start(
            &self.spec,
            &request.command,
            &request.args,
            &cwd,
            &env,
            limit,
        )
        .map_err(|e| {
            Error::internal_error().data(format!("cannot start `{}`: {e}", request.command))
        })?;
        let terminal = Arc::new(terminal);
        let id = {
            let mut state = self.state();
            state.next += 1;
            let id = format!("term-{}", state.next);
            state.terminals.insert(
                id.clone(),
                Owned {
                    session: session.clone(),
                    terminal: terminal.clone(),
                },
            );
            id
        };
        // The program only: its arguments may carry what the agent was told in confidence.
        tracing::info!(agent = %self.agent_id, session, terminal = %id, program = %request.command, cwd = %cwd.display(), "the agent started a command through the client");
        self.follow(id.clone(), &terminal);
        Ok(id)
    }

    /// Refreshes the cards that show terminal `id` as its output grows, until it exits.
    fn follow(self: &Arc<Self>, id: String, terminal: &Terminal) {
        let this = Arc::downgrade(self);
        let (mut changes, mut exit) = (terminal.changes(), terminal.exit_watch());
        tokio::spawn(async move {
            loop {
                let ended = tokio::select! {
                    changed = changes.changed() => changed.is_err(),
                    _ = exit.wait_for(|e| e.is_some()) => true,
                };
                let Some(this) = this.upgrade() else { return };
                if ended || exit.borrow().is_some() {
                    this.refresh(&id);
                    return;
                }
                this.refresh(&id);
                drop(this);
                tokio::time::sleep(CARD_REFRESH).await;
            }
        });
    }

    /// Sends every card that embeds terminal `id` again, with its output as it is now.
    fn refresh(&self, id: &str) {
        let updates: Vec<(String, SessionUpdate)> = {
            let state = self.state();
            state
                .cards
                .iter()
                .filter(|(_, content)| content.iter().any(|c| names(c, id)))
                .map(|((session, tool), content)| {
                    let fields = ToolCallUpdateFields::new().content(state.show(content));
                    let update = ToolCallUpdate::new(tool.clone(), fields);
                    (session.clone(), SessionUpdate::ToolCallUpdate(update))
                })
                .collect()
        };
        let mut sessions = self.sessions.lock().expect("sessions poisoned");
        for (session, update) in updates {
            sessions.deliver(&session, events::session_update(update));
        }
    }

    /// Puts the output of the terminals a tool call embeds in their place, remembering
    /// the call so its card follows them.
    pub fn embed(&self, session: &str, update: &mut SessionUpdate) {
        let (id, content) = match update {
            SessionUpdate::ToolCall(call) => (call.tool_call_id.0.to_string(), &mut call.content),
            SessionUpdate::ToolCallUpdate(call) => match &mut call.fields.content {
                Some(content) => (call.tool_call_id.0.to_string(), content),
                None => return,
            },
            _ => return,
        };
        let mut state = self.state();
        let key = (session.to_owned(), id);
        if content
            .iter()
            .any(|c| matches!(c, ToolCallContent::Terminal(_)))
        {
            state.cards.insert(key, content.clone());
            *content = state.show(content);
        } else {
            state.cards.remove(&key);
        }
    }

    /// The terminal `id` of `session`.
    fn get(&self, session: &str, id: &str) -> Result<Arc<Terminal>, Error> {
        match self.state().terminals.get(id) {
            Some(owned) if owned.session == session => Ok(owned.terminal.clone()),
            _ => Err(refused(format!("no terminal {id} in this session"))),
        }
    }

    /// `!stop`: kills the session's commands (they stay readable until released).
    pub fn stop_session(&self, session: &str) {
        for owned in self.state().terminals.values() {
            if owned.session == session {
                owned.terminal.kill();
            }
        }
    }

    /// The session is closed or forgotten: its commands are killed and released.
    pub fn end_session(&self, session: &str) {
        let mut state = self.state();
        // Killed, not just dropped: a waiting request may hold one a while longer.
        state.terminals.retain(|_, t| {
            let theirs = t.session == session;
            if theirs {
                t.terminal.kill();
            }
            !theirs
        });
        state.cards.retain(|(s, _), _| s != session);
    }

    /// The agent stops: every command goes with it.
    pub fn end_all(&self) {
        let mut state = self.state();
        for owned in state.terminals.values() {
            owned.terminal.kill();
        }
        state.terminals.clear();
        state.cards.clear();
    }

    /// `terminal/release`: kills the command and frees it; a card that shows it keeps its
    /// last output.
    fn release(&self, session: &str, id: &str) -> Result<(), Error> {
        let terminal = self.get(session, id)?;
        terminal.kill();
        self.refresh(id);
        let mut state = self.state();
        state.terminals.remove(id);
        if state.released.len() == RELEASED_KEPT {
            state.released.pop_front();
        }
        state
            .released
            .push_back((id.to_owned(), terminal.card_text()));
        Ok(())
    }
}

impl State {
    /// `content` with each terminal replaced by its output so far.
    fn show(&self, content: &[ToolCallContent]) -> Vec<ToolCallContent> {
        content
            .iter()
            .map(|c| match c {
                ToolCallContent::Terminal(t) => {
                    let id = t.terminal_id.0.as_ref();
                    let text = match self.terminals.get(id) {
                        Some(owned) => owned.terminal.card_text(),
                        None => self
                            .released
                            .iter()
                            .find(|(r, _)| r == id)
                            .map(|(_, text)| text.clone())
                            .unwrap_or_default(),
                    };
                    ToolCallContent::Content(Content::new(ContentBlock::Text(TextContent::new(
                        text,
                    ))))
                }
                other => other.clone(),
            })
            .collect()
    }
}

/// Whether `content` embeds terminal `id`.
fn names(content: &ToolCallContent, id: &str) -> bool {
    matches!(content, ToolCallContent::Terminal(t) if t.terminal_id.0.as_ref() == id)
}

/// Answers a request with its result, or with the error that refused it.
fn reply<T: agent_client_protocol::JsonRpcResponse>(
    responder: Responder<T>,
    answer: Result<T, Error>,
) {
    let _ = match answer {
        Ok(response) => responder.respond(response),
        Err(e) => responder.respond_with_error(e),
    };
}

fn exit_status(exit: Exit) -> TerminalExitStatus {
    TerminalExitStatus::new()
        .exit_code(exit.code)
        .signal(exit.signal)
}

/// Answers `terminal/create`.
pub fn serve_create(
    terminals: &Arc<Terminals>,
    request: CreateTerminalRequest,
    responder: Responder<CreateTerminalResponse>,
) {
    let answer = terminals.create(request).map(CreateTerminalResponse::new);
    if let Err(e) = &answer {
        tracing::info!(agent = %terminals.agent_id, error = %e, "refused a terminal");
    }
    reply(responder, answer);
}

/// Answers `terminal/output`.
pub fn serve_output(
    terminals: &Terminals,
    request: TerminalOutputRequest,
    responder: Responder<TerminalOutputResponse>,
) {
    let answer = terminals
        .get(&request.session_id.0, &request.terminal_id.0)
        .map(|t| {
            let (output, truncated, exit) = t.output();
            // An agent that polls rather than waits learns of the exit here.
            if exit.is_some() {
                terminals.refresh(&request.terminal_id.0);
            }
            TerminalOutputResponse::new(output, truncated).exit_status(exit.map(exit_status))
        });
    reply(responder, answer);
}

/// Answers `terminal/wait_for_exit` once the command has exited, off the dispatch loop.
/// Its cards show all its output before the agent hears of the exit (and ends the call or
/// the turn, after which a card no longer changes).
pub fn serve_wait(
    terminals: &Arc<Terminals>,
    request: WaitForTerminalExitRequest,
    responder: Responder<WaitForTerminalExitResponse>,
) {
    match terminals.get(&request.session_id.0, &request.terminal_id.0) {
        Ok(terminal) => {
            let terminals = terminals.clone();
            tokio::spawn(async move {
                let exit = terminal.wait().await;
                terminals.refresh(&request.terminal_id.0);
                let _ = responder.respond(WaitForTerminalExitResponse::new(exit_status(exit)));
            });
        }
        Err(e) => {
            let _ = responder.respond_with_error(e);
        }
    }
}

/// Answers `terminal/kill`.
pub fn serve_kill(
    terminals: &Terminals,
    request: KillTerminalRequest,
    responder: Responder<KillTerminalResponse>,
) {
    let answer = terminals
        .get(&request.session_id.0, &request.terminal_id.0)
        .map(|t| {
            t.kill();
            KillTerminalResponse::new()
        });
    reply(responder, answer);
}

/// Answers `terminal/release`.
pub fn serve_release(
    terminals: &Terminals,
    request: ReleaseTerminalRequest,
    responder: Responder<ReleaseTerminalResponse>,
) {
    let answer = terminals
        .release(&request.session_id.0, &request.terminal_id.0)
        .map(|()| ReleaseTerminalResponse::new());
    reply(responder, answer);
}

#[cfg(test)]
mod tests {
    use super::*;
    use agent_client_protocol::v1::schema::{EnvVariable, Terminal as Embedded, ToolCall};

    /// Terminals of one open session `s` in a fresh folder.
    fn open() -> (tempfile::TempDir, Arc<Terminals>) {
        let dir = tempfile::tempdir().unwrap();
        let sessions = Arc::new(Mutex::new(Sessions::default()));
        let folder = crate::workspace::folder::Folder::open(dir.path(), std::path::Path::new(""));
        drop(
            sessions
                .lock()
                .unwrap()
                .register("s", Arc::new(folder.unwrap())),
        );
        let spec = crate::acp::process::tests::spec("true");
        (dir, Terminals::new(&spec, sessions))
    }

    fn run(terminals: &Arc<Terminals>, script: &str) -> String {
        let mut request = CreateTerminalRequest::new("s", "sh");
        request.args = vec!["-c".into(), script.into()];
        request.env = vec![EnvVariable::new("X", "1")];
        terminals.create(request).unwrap()
    }

    fn text(content: &[ToolCallContent]) -> Vec<String> {
        content
            .iter()
            .map(|c| match c {
                ToolCallContent::Content(c) => match &c.content {
                    ContentBlock::Text(t) => t.text.clone(),
                    _ => "?".into(),
                },
                ToolCallContent::Terminal(_) => "terminal".into(),
                _ => "other".into(),
            })
            .collect()
    }

    #[tokio::test]
    async fn a_tool_call_embedding_a_terminal_shows_its_output_in_its_place() {
        let (_dir, terminals) = open();
        let id = run(&terminals, "echo out");
        terminals.get("s", &id).unwrap().wait().await;
        let mut update = SessionUpdate::ToolCall(
            ToolCall::new("call", "run")
                .content(vec![ToolCallContent::Terminal(Embedded::new(id.clone()))]),
        );
        terminals.embed("s", &mut update);
        let SessionUpdate::ToolCall(call) = &update else {
            unreachable!()
        };
        assert_eq!(text(&call.content), ["out\n"]);
        assert!(
            terminals
                .state()
                .cards
                .contains_key(&("s".into(), "call".into()))
        );
        // Released, its card keeps the last output.
        terminals.release("s", &id).unwrap();
        let shown = terminals
            .state()
            .show(&[ToolCallContent::Terminal(Embedded::new(id))]);
        assert_eq!(text(&shown), ["out\n"]);
        // New content without a terminal: the card no longer follows one.
        let mut update = SessionUpdate::ToolCallUpdate(ToolCallUpdate::new(
            "call",
            ToolCallUpdateFields::new().content(vec![]),
        ));
        terminals.embed("s", &mut update);
        assert!(terminals.state().cards.is_empty());
    }

    #[tokio::test]
    async fn a_terminal_answers_only_its_own_session_and_goes_with_it() {
        let (_dir, terminals) = open();
        let id = run(&terminals, "exec sleep 303");
        assert!(
            terminals.get("other", &id).is_err(),
            "another session's terminal"
        );
        let terminal = terminals.get("s", &id).unwrap();
        terminals.end_session("s");
        assert!(
            terminals.get("s", &id).is_err(),
            "released with its session"
        );
        drop(terminals);
        let exit = tokio::time::timeout(Duration::from_secs(5), terminal.wait())
            .await
            .expect("killed with its session");
        assert_eq!(exit.signal.as_deref(), Some("SIGKILL"));
    }

    #[tokio::test]
    async fn a_command_outside_the_folder_or_of_a_session_not_open_is_refused() {
        let (_dir, terminals) = open();
        let mut request = CreateTerminalRequest::new("s", "pwd");
        request.cwd = Some("/".into());
        let e = terminals.create(request).unwrap_err();
        assert!(
            format!("{e:?}").contains("outside the session's folder"),
            "{e:?}"
        );
        let e = terminals
            .create(CreateTerminalRequest::new("nobody", "pwd"))
            .unwrap_err();
        assert!(format!("{e:?}").contains("no such session"), "{e:?}");
    }

    proptest::proptest! {
        /// No variable name outside the grammar reaches a launcher or a container's env
        /// file: what `requested_env` lets through is names only, and the env file made of
        /// it has one `NAME=VALUE` line per variable.
        #[test]
        fn no_name_outside_the_grammar_reaches_a_launcher_or_an_env_file(
            vars in proptest::collection::vec(
                ("[A-Za-z_][A-Za-z0-9_]{0,6}|\\PC{0,8}|[A-Z_\n\r*= -]{0,8}", "[a-z \n]{0,6}"),
                0..4,
            )
        ) {
            let asked: Vec<EnvVariable> =
                vars.iter().map(|(n, v)| EnvVariable::new(n.clone(), v.clone())).collect();
            if let Ok(env) = requested_env(&asked) {
                for (name, _) in &env {
                    proptest::prop_assert!(crate::model::variable::is_name(name), "{name:?}");
                }
                if let Ok(file) = crate::acp::Container::env_file(&env) {
                    let text = String::from_utf8(file).unwrap();
                    proptest::prop_assert_eq!(text.lines().count(), env.len());
                    for line in text.lines() {
                        let (name, _) = line.split_once('=').unwrap();
                        proptest::prop_assert!(crate::model::variable::is_name(name), "{line:?}");
                    }
                }
            }
        }
    }
}
