//! What the demo agent does with each request: open, load, resume and fork sessions, run a
//! prompt, change settings, cancel. `requests.rs` routes each request here.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use agent_client_protocol::Client;
use agent_client_protocol::v1::schema::{
    ContentBlock, ContentChunk, CurrentModeUpdate, ForkSessionRequest, ForkSessionResponse,
    LoadSessionRequest, LoadSessionResponse, NewSessionRequest, NewSessionResponse, PromptRequest,
    PromptResponse, ResumeSessionRequest, ResumeSessionResponse, SessionConfigOption,
    SessionModeState, SessionNotification, SessionUpdate, SetSessionConfigOptionRequest,
    SetSessionConfigOptionResponse, SetSessionModeRequest, SetSessionModeResponse, TextContent,
};
use agent_client_protocol::v1::{ConnectionTo, Responder};

use super::turn::Turn;
use super::{Exchange, MODELS, State, send_commands};

type Result = std::result::Result<(), agent_client_protocol::Error>;

impl State {
    /// Records what a session opened, loaded or resumed was given: its folder (`%read`,
    /// `%write`, `%pwd`) and its MCP servers (`%mcp`).
    fn opened(
        &self,
        id: &str,
        cwd: std::path::PathBuf,
        servers: &[agent_client_protocol::v1::schema::McpServer],
    ) {
        self.mcp
            .lock()
            .unwrap()
            .insert(id.to_owned(), servers.to_vec());
        self.cwds.lock().unwrap().insert(id.to_owned(), cwd);
    }

    /// `session/new`: a fresh session, with its settings when `--settings` is on, then the
    /// slash commands.
    pub(super) fn new_session(
        &self,
        req: NewSessionRequest,
        responder: Responder<NewSessionResponse>,
        cx: &ConnectionTo<Client>,
    ) -> Result {
        if self.needs_sign_in.load(Ordering::SeqCst) {
            return responder.respond_with_error(agent_client_protocol::Error::auth_required());
        }
        let id = self.open_new(req.cwd, &req.mcp_servers);
        let (modes, options) = self.advertised_settings(&id);
        let response = NewSessionResponse::new(id.clone())
            .modes(modes)
            .config_options(options);
        responder.respond(response)?;
        send_commands(cx, id, self.allow_all.is_some())
    }

    /// Opens a new session in `cwd` with `servers`; returns its ID.
    fn open_new(
        &self,
        cwd: std::path::PathBuf,
        servers: &[agent_client_protocol::v1::schema::McpServer],
    ) -> String {
        let id = self.fresh_id();
        self.opened(&id, cwd, servers);
        self.sessions
            .lock()
            .unwrap()
            .insert(id.clone(), Arc::default());
        id
    }

    /// The modes and config options session `id` reports when it opens: with `--settings`
    /// only.
    fn advertised_settings(
        &self,
        id: &str,
    ) -> (Option<SessionModeState>, Option<Vec<SessionConfigOption>>) {
        match self.with_settings {
            true => (self.shown_modes(id), Some(self.config_options(id))),
            false => (None, None),
        }
    }

    /// A new session's ID: unique across restarts, so a saved session is never confused
    /// with a new one (the process ID is not: in a sandbox with its own PID namespace it is
    /// always the same).
    fn fresh_id(&self) -> String {
        let started = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap_or_default()
            .as_micros();
        let n = self.next.fetch_add(1, Ordering::Relaxed);
        format!("demo-{started}-{n}")
    }

    /// `session/fork`: a new session whose conversation starts as a copy of the source's
    /// (the source goes on untouched), with its settings when `--settings` is on, then the
    /// slash commands.
    pub(super) fn fork_session(
        &self,
        req: ForkSessionRequest,
        responder: Responder<ForkSessionResponse>,
        cx: &ConnectionTo<Client>,
    ) -> Result {
        let source = req.session_id.0.to_string();
        if !self.sessions.lock().unwrap().contains_key(&source) {
            return responder.respond_with_error(
                agent_client_protocol::Error::invalid_params()
                    .data(format!("no session {source} to fork")),
            );
        }
        let id = self.open_new(req.cwd, &req.mcp_servers);
        let copy = self.history.lock().unwrap().get(&source).cloned();
        if let Some(copy) = copy {
            self.history.lock().unwrap().insert(id.clone(), copy);
        }
        let (modes, options) = self.advertised_settings(&id);
        let response = ForkSessionResponse::new(id.clone())
            .modes(modes)
            .config_options(options);
        responder.respond(response)?;
        send_commands(cx, id, self.allow_all.is_some())
    }

    /// `session/load`: replays the saved conversation before answering, as the protocol
    /// asks.
    pub(super) fn load_session(
        &self,
        req: LoadSessionRequest,
        responder: Responder<LoadSessionResponse>,
        cx: &ConnectionTo<Client>,
    ) -> Result {
        let id = req.session_id.0.to_string();
        self.opened(&id, req.cwd, &req.mcp_servers);
        let conversation = match self.restore(&id) {
            Ok(conversation) => conversation,
            Err(e) => return responder.respond_with_error(e),
        };
        let chunk = |text: &str| ContentChunk::new(ContentBlock::Text(TextContent::new(text)));
        for exchange in &conversation {
            cx.send_notification(SessionNotification::new(
                id.clone(),
                SessionUpdate::UserMessageChunk(chunk(&exchange.prompt)),
            ))?;
            cx.send_notification(SessionNotification::new(
                id.clone(),
                SessionUpdate::AgentMessageChunk(chunk(&exchange.answer)),
            ))?;
        }
        // A session got back starts in the agent's own default again, as real agents'
        // loaded sessions may.
        let mut response = LoadSessionResponse::new();
        if self.with_settings {
            self.settings.lock().unwrap().remove(&id);
            response = response
                .modes(self.shown_modes(&id))
                .config_options(self.config_options(&id));
        }
        responder.respond(response)?;
        send_commands(cx, id, self.allow_all.is_some())
    }

    /// `session/resume`: replays nothing, the agent simply carries on.
    pub(super) fn resume_session(
        &self,
        req: ResumeSessionRequest,
        responder: Responder<ResumeSessionResponse>,
        cx: &ConnectionTo<Client>,
    ) -> Result {
        let id = req.session_id.0.to_string();
        self.opened(&id, req.cwd, &req.mcp_servers);
        if let Err(e) = self.restore(&id) {
            return responder.respond_with_error(e);
        }
        let mut response = ResumeSessionResponse::new();
        if self.with_settings {
            self.settings.lock().unwrap().remove(&id);
            response = response
                .modes(self.shown_modes(&id))
                .config_options(self.config_options(&id));
        }
        responder.respond(response)?;
        send_commands(cx, id, self.allow_all.is_some())
    }

    /// `session/prompt`: the turn runs in a task of its own, outside the dispatch loop, so
    /// `session/cancel` gets through while it runs.
    pub(super) fn prompt(
        self: &Arc<Self>,
        req: PromptRequest,
        responder: Responder<PromptResponse>,
        cx: ConnectionTo<Client>,
    ) {
        let session = req.session_id.0.to_string();
        let cancel = self
            .sessions
            .lock()
            .unwrap()
            .entry(session.clone())
            .or_default()
            .clone();
        cancel.flag.store(false, Ordering::SeqCst);
        *cancel.steered.lock().unwrap() = Some(Vec::new());
        let text: String = req
            .prompt
            .iter()
            .filter_map(|b| match b {
                ContentBlock::Text(t) => Some(t.text.as_str()),
                _ => None,
            })
            .collect::<Vec<_>>()
            .join("\n");
        self.log_prompt(&text);
        let blocks: Vec<String> = req.prompt.iter().map(super::content::describe).collect();
        let state = self.clone();
        tokio::spawn(async move {
            let earlier = state
                .history
                .lock()
                .unwrap()
                .get(&session)
                .cloned()
                .unwrap_or_default();
            let cwd = state.cwds.lock().unwrap().get(&session).cloned();
            let mcp = (state.mcp.lock().unwrap().get(&session).cloned()).unwrap_or_default();
            let turn = Turn {
                state: state.clone(),
                settings: state.settings_of(&session),
                cwd: cwd.unwrap_or_else(|| ".".into()),
                cx,
                session,
                cancel,
                tools: AtomicU64::new(0),
                tokens: Mutex::new(None),
                said: Mutex::new(String::new()),
                earlier,
                blocks,
                client: state.client.lock().unwrap().clone(),
                open_sessions: state.sessions.lock().unwrap().len(),
                mcp,
            };
            let result = turn.run(&text).await;
            let (result, steered) = turn.answer_steered(result);
            let answer = std::mem::take(&mut *turn.said.lock().unwrap());
            let prompt = std::iter::once(text).chain(steered).collect::<Vec<_>>();
            state.remember(
                &turn.session,
                Exchange {
                    prompt: prompt.join("\n"),
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
    }

    /// `session/set_mode` (with `--settings`): changes the mode and says so; fails for the
    /// mode `--refuse-mode` names; without `--settings` there is no such method.
    pub(super) fn set_mode(
        &self,
        req: SetSessionModeRequest,
        responder: Responder<SetSessionModeResponse>,
        cx: &ConnectionTo<Client>,
    ) -> Result {
        let session = req.session_id.0.to_string();
        let mode = req.mode_id.0.to_string();
        // Without modes there is no such method, as for agents that have none.
        if !self.with_settings {
            return responder.respond_with_error(agent_client_protocol::Error::method_not_found());
        }
        if self.refused_mode.as_deref() == Some(mode.as_str()) {
            return responder.respond_with_error(
                agent_client_protocol::Error::internal_error()
                    .data(format!("cannot switch to {mode} now")),
            );
        }
        if !self.modes.iter().any(|(id, _)| *id == mode) {
            return responder.respond_with_error(
                agent_client_protocol::Error::invalid_params().data(format!("no mode {mode}")),
            );
        }
        self.switch_mode(&session, &mode);
        responder.respond(SetSessionModeResponse::new())?;
        cx.send_notification(SessionNotification::new(
            session,
            SessionUpdate::CurrentModeUpdate(CurrentModeUpdate::new(mode)),
        ))
    }

    /// `session/set_config_option` (with `--settings`): changes the model.
    pub(super) fn set_config_option(
        &self,
        req: SetSessionConfigOptionRequest,
        responder: Responder<SetSessionConfigOptionResponse>,
    ) -> Result {
        let session = req.session_id.0.to_string();
        let model = req.value.as_value_id().map(|v| v.0.to_string());
        if &*req.config_id.0 == "allow_all" && self.allow_all.is_some() {
            let on = model.as_deref() == Some("on");
            self.set_allow_all(&session, on);
            return responder.respond(SetSessionConfigOptionResponse::new(
                self.config_options(&session),
            ));
        }
        let known = model
            .as_deref()
            .is_some_and(|m| MODELS.iter().any(|(id, _)| *id == m));
        if !self.with_settings || &*req.config_id.0 != "model" || !known {
            return responder.respond_with_error(
                agent_client_protocol::Error::invalid_params()
                    .data(format!("cannot set {} to {model:?}", req.config_id.0)),
            );
        }
        let (mode, _) = self.settings_of(&session);
        self.settings
            .lock()
            .unwrap()
            .insert(session.clone(), (mode, model.unwrap_or_default()));
        responder.respond(SetSessionConfigOptionResponse::new(
            self.config_options(&session),
        ))
    }

    /// `session/cancel`: the session's running turn stops at its next step.
    /// `session/close`: forgets the session (its saved conversation stays on disk).
    pub(super) fn close(&self, session: &str) {
        self.sessions.lock().unwrap().remove(session);
        self.history.lock().unwrap().remove(session);
        self.cwds.lock().unwrap().remove(session);
    }

    pub(super) fn cancel(&self, session: &str) {
        if let Some(c) = self.sessions.lock().unwrap().get(session) {
            c.flag.store(true, Ordering::SeqCst);
            c.notify.notify_waiters();
        }
    }

    /// Notes who the client of `req` is and what it offers (`%client`, `%background`).
    pub(super) fn note_client(&self, req: &agent_client_protocol::v1::schema::InitializeRequest) {
        *self.client.lock().unwrap() = super::content::client_line(req);
        self.background.note_client(req);
    }

    /// An extension method: steering (unless `--no-steering`), stopping a background task;
    /// any other is not found.
    pub(super) fn extension(
        &self,
        method: &str,
        params: &serde_json::Value,
        responder: Responder<serde_json::Value>,
        steering: bool,
    ) -> Result {
        match method {
            "_session/steering" if steering => responder.respond(self.steer(params)),
            "_session/async_task/stop" => responder.respond(self.background.stop(params)),
            _ => responder.respond_with_error(agent_client_protocol::Error::method_not_found()),
        }
    }

    /// `_session/steering` (the contract of Claude's adapter): the prompt's text joins the
    /// turn running in the session, answered at its end (`injected`); an idle session
    /// answers `promptRequired`, as a client that opts into it asks.
    pub(super) fn steer(&self, params: &serde_json::Value) -> serde_json::Value {
        let session = params["sessionId"].as_str().unwrap_or_default();
        let text: Vec<&str> = (params["prompt"].as_array().into_iter().flatten())
            .filter_map(|b| b["text"].as_str())
            .collect();
        let cancel = self.sessions.lock().unwrap().get(session).cloned();
        let mut steered = cancel.as_ref().map(|c| c.steered.lock().unwrap());
        match steered.as_deref_mut() {
            Some(Some(running)) => {
                running.push(text.join("\n"));
                serde_json::json!({"outcome": "injected"})
            }
            _ => serde_json::json!({"outcome": "promptRequired", "reason": "noRunningTurn"}),
        }
    }
}
