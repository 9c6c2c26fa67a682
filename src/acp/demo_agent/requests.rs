//! Every request the demo agent takes, routed to its handler (`handlers.rs`): one match on
//! the SDK's `ClientRequest`, so the connection registers one request handler and a new
//! method is one arm here.

use std::sync::Arc;

use agent_client_protocol::Client;
use agent_client_protocol::v1::schema::{
    AgentCapabilities, AuthMethod, AuthenticateRequest, AuthenticateResponse, ClientRequest,
    CloseSessionResponse, ListSessionsResponse,
};
use agent_client_protocol::v1::{ConnectionTo, Responder};

use super::{State, initialize_response};

type Result = std::result::Result<(), agent_client_protocol::Error>;

/// What the demo agent says of itself at `initialize`, as its options ask.
pub(super) struct Advertised {
    pub capabilities: AgentCapabilities,
    pub auth_methods: Vec<AuthMethod>,
    /// Whether it takes `_session/steering` (not with `--no-steering`).
    pub steering: bool,
}

impl State {
    /// Serves one request from the client.
    pub(super) fn request(
        self: &Arc<Self>,
        request: ClientRequest,
        responder: Responder<serde_json::Value>,
        cx: ConnectionTo<Client>,
        advertised: &Advertised,
    ) -> Result {
        match request {
            ClientRequest::InitializeRequest(req) => {
                self.note_client(&req);
                let response =
                    initialize_response(advertised.capabilities.clone(), advertised.steering);
                responder
                    .cast()
                    .respond(response.auth_methods(advertised.auth_methods.clone()))
            }
            ClientRequest::AuthenticateRequest(req) => self.authenticate(req, responder.cast()),
            ClientRequest::NewSessionRequest(req) => self.new_session(req, responder.cast(), &cx),
            ClientRequest::LoadSessionRequest(req) => self.load_session(req, responder.cast(), &cx),
            ClientRequest::ResumeSessionRequest(req) => {
                self.resume_session(req, responder.cast(), &cx)
            }
            ClientRequest::ForkSessionRequest(req) => self.fork_session(req, responder.cast(), &cx),
            ClientRequest::ListSessionsRequest(req) => {
                (responder.cast()).respond(ListSessionsResponse::new(self.list(req.cwd.as_deref())))
            }
            ClientRequest::CloseSessionRequest(req) => {
                self.close(&req.session_id.0);
                responder.cast().respond(CloseSessionResponse::new())
            }
            ClientRequest::PromptRequest(req) => {
                self.prompt(req, responder.cast(), cx);
                Ok(())
            }
            ClientRequest::SetSessionModeRequest(req) => self.set_mode(req, responder.cast(), &cx),
            ClientRequest::SetSessionConfigOptionRequest(req) => {
                self.set_config_option(req, responder.cast())
            }
            ClientRequest::ExtMethodRequest(ext) => {
                let params = serde_json::from_str(ext.params.get()).unwrap_or_default();
                self.extension(&ext.method, &params, responder, advertised.steering)
            }
            _ => responder.respond_with_error(agent_client_protocol::Error::method_not_found()),
        }
    }

    /// `authenticate`: only the demo's own sign-in (`--auth`) can be done here.
    fn authenticate(
        &self,
        req: AuthenticateRequest,
        responder: Responder<AuthenticateResponse>,
    ) -> Result {
        if req.method_id.0.as_ref() == "demo-login" {
            (self.needs_sign_in).store(false, std::sync::atomic::Ordering::SeqCst);
            responder.respond(AuthenticateResponse::new())
        } else {
            responder.respond_with_error(
                agent_client_protocol::Error::invalid_params()
                    .data(format!("{} cannot be done here", req.method_id.0)),
            )
        }
    }
}
