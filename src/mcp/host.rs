//! Serving the room tools: two listeners on loopback, shared by every session of every
//! agent, and the grants that say which session a token opens. HTTP requests carry the
//! token as a bearer token; the stdio command sends it as its first line. A token opens
//! one session's room tools and stops working when the session ends (its [`Grant`] is
//! dropped): whatever was connected with it is cut.

use std::collections::HashMap;
use std::convert::Infallible;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Full, combinators::BoxBody};
use hyper::body::Incoming;
use hyper::{Request, Response, StatusCode};
use rmcp::ServiceExt;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, BufReader};
use tokio::net::{TcpListener, UnixListener};
use tokio_util::sync::CancellationToken;

use super::tools::RoomToolsServer;
use super::{ADDRESS_VAR, SERVER_NAME, TOKEN_VAR};
use crate::core::room_tools::{Grant, RoomScope, RoomToolHost};
use crate::http_server::{self, Accept, Gate, Limits, next_connection};
use crate::model::Secret;
use crate::model::agent::{McpServerSpec, SessionTools};

/// How long a stdio command may take to send its token.
const TOKEN_WAIT: Duration = Duration::from_secs(10);
/// The longest first line a stdio command may send (a token is 64 characters).
const TOKEN_LINE_MAX: u64 = 256;

/// The room tools' server: where agents reach it, and the sessions it is open to.
#[derive(Clone)]
pub struct McpHost {
    inner: Arc<Inner>,
}

struct Inner {
    /// The open grants, by token.
    grants: Mutex<HashMap<String, Arc<Opened>>>,
    /// Where the HTTP listener is.
    http: SocketAddr,
    /// Where the stdio command connects.
    bridge: SocketAddr,
    /// The socket file the stdio command of an agent without network connects to (bound
    /// into its sandbox), if there is one.
    socket: Option<PathBuf>,
    /// The gateway's own program, which agents run as the stdio command.
    program: PathBuf,
    /// Stops the listeners once the host is gone.
    stopped: CancellationToken,
}

impl Drop for Inner {
    fn drop(&mut self) {
        self.stopped.cancel();
        if let Some(socket) = &self.socket {
            let _ = std::fs::remove_file(socket);
        }
    }
}

/// One session's open room tools.
struct Opened {
    /// What they reach.
    scope: Arc<RoomScope>,
    /// Their HTTP endpoint (MCP sessions of its own).
    http: StreamableHttpService<RoomToolsServer, LocalSessionManager>,
    /// Cut every connection made with the token when the grant ends.
    closed: CancellationToken,
}

impl McpHost {
    /// Starts both listeners on loopback ports the system picks, and one on the socket file
    /// `socket` when given (for agents without network, which get it bound into their
    /// sandbox); agents run `program` (`sidekicks mcp-stdio`) to reach the tools over stdio.
    pub async fn start(program: PathBuf, socket: Option<PathBuf>) -> std::io::Result<Self> {
        let http = TcpListener::bind("127.0.0.1:0").await?;
        let bridge = TcpListener::bind("127.0.0.1:0").await?;
        let local = match &socket {
            Some(path) => Some(bind_socket(path)?),
            None => None,
        };
        let inner = Arc::new(Inner {
            grants: Mutex::new(HashMap::new()),
            http: http.local_addr()?,
            bridge: bridge.local_addr()?,
            socket,
            program,
            stopped: CancellationToken::new(),
        });
        let limits = Limits::default();
        // One gate for the stdio commands, whichever way they come.
        let gate = Arc::new(Gate::new(limits.connections, "room tools stdio"));
        if let Some(local) = local {
            tokio::spawn(serve_bridge(
                local,
                Arc::downgrade(&inner),
                gate.clone(),
                inner.stopped.clone(),
            ));
        }
        tracing::info!(http = %inner.http, stdio_bridge = %inner.bridge, "room tools served on loopback");
        let weak = Arc::downgrade(&inner);
        let answer = move |request| {
            let inner = weak.clone();
            async move { route(&inner, request).await }
        };
        tokio::spawn(http_server::serve(
            http,
            "room tools http",
            limits,
            inner.stopped.clone(),
            answer,
        ));
        tokio::spawn(serve_bridge(
            bridge,
            Arc::downgrade(&inner),
            gate,
            inner.stopped.clone(),
        ));
        Ok(Self { inner })
    }

    /// How many sessions the tools are open to.
    pub fn open_grants(&self) -> usize {
        self.inner.grants.lock().expect("grants poisoned").len()
    }
}

impl RoomToolHost for McpHost {
    fn grant(&self, scope: RoomScope) -> Grant {
        let token = new_token();
        let scope = Arc::new(scope);
        let closed = self.inner.stopped.child_token();
        let config = StreamableHttpServerConfig::default().with_cancellation_token(closed.clone());
        let tools = RoomToolsServer::new(scope.clone());
        let http = StreamableHttpService::new(
            move || Ok(tools.clone()),
            Arc::new(LocalSessionManager::default()),
            config,
        );
        let opened = Arc::new(Opened {
            scope,
            http,
            closed,
        });
        (self.inner.grants.lock().expect("grants poisoned")).insert(token.clone(), opened);
        let stdio = |address: String| McpServerSpec::Stdio {
            name: SERVER_NAME.into(),
            command: self.inner.program.clone(),
            args: vec!["mcp-stdio".into()],
            env: vec![
                (ADDRESS_VAR.into(), Secret::new(address)),
                (TOKEN_VAR.into(), Secret::new(token.clone())),
            ],
        };
        let server = SessionTools {
            stdio: stdio(self.inner.bridge.to_string()),
            local: stdio(format!("unix:{}", crate::model::agent::ROOM_TOOLS_SOCKET)),
            http: McpServerSpec::Http {
                name: SERVER_NAME.into(),
                url: format!("http://{}/mcp", self.inner.http),
                headers: vec![(
                    "Authorization".into(),
                    Secret::new(format!("Bearer {token}")),
                )],
            },
        };
        let inner = Arc::downgrade(&self.inner);
        Grant::new(server, move || {
            let Some(inner) = inner.upgrade() else { return };
            let gone = inner.grants.lock().expect("grants poisoned").remove(&token);
            if let Some(opened) = gone {
                opened.closed.cancel();
            }
        })
    }
}

/// A new token: 32 random bytes, as hex.
fn new_token() -> String {
    crate::model::random::hex(32)
}

/// The grant `token` opens, if any.
fn opened(inner: &Weak<Inner>, token: &str) -> Option<Arc<Opened>> {
    let inner = inner.upgrade()?;
    let grants = inner.grants.lock().expect("grants poisoned");
    grants.get(token).cloned()
}

/// Answers one HTTP request: the grant its bearer token opens serves it; without one, 401.
async fn route(
    inner: &Weak<Inner>,
    request: Request<Incoming>,
) -> Response<BoxBody<Bytes, Infallible>> {
    let token = (request.headers().get(hyper::header::AUTHORIZATION))
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .map(str::trim);
    let Some(opened) = token.and_then(|t| opened(inner, t)) else {
        tracing::warn!(path = %request.uri().path(), "room tools: an HTTP request without a valid token was refused");
        let mut refused = Response::new(Full::new(Bytes::from_static(b"no valid token\n")).boxed());
        *refused.status_mut() = StatusCode::UNAUTHORIZED;
        return refused;
    };
    opened.http.handle(request).await
}

/// Takes connections of stdio commands on `listener` (the loopback port, or the socket file
/// of agents without network) until the host is gone, as many at once as `gate` lets in
/// (one gate for both).
async fn serve_bridge<L>(
    listener: L,
    inner: Weak<Inner>,
    gate: Arc<Gate>,
    stopped: CancellationToken,
) where
    L: Accept,
    L::Stream: tokio::io::AsyncRead + tokio::io::AsyncWrite + Send + 'static,
{
    while let Some(stream) = next_connection(&listener, &stopped, "room tools stdio").await {
        let Some(open) = gate.admit() else {
            continue;
        };
        let (read, write) = tokio::io::split(stream);
        let inner = inner.clone();
        tokio::spawn(async move {
            let _open = open;
            serve_bridged(read, write, inner).await
        });
    }
}

/// Listens on the socket file `path`, made afresh, only its owner may connect (the agents'
/// sandboxes get it bound in).
fn bind_socket(path: &std::path::Path) -> std::io::Result<UnixListener> {
    use std::os::unix::fs::PermissionsExt as _;
    match std::fs::remove_file(path) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => return Err(e),
        _ => {}
    }
    let listener = UnixListener::bind(path)?;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600))?;
    Ok(listener)
}

/// Serves the room tools to one stdio command, once its first line is a token of an open
/// grant; until the grant ends or the command goes.
async fn serve_bridged<R, W>(read: R, write: W, inner: Weak<Inner>)
where
    R: tokio::io::AsyncRead + Unpin + Send + 'static,
    W: tokio::io::AsyncWrite + Unpin + Send + 'static,
{
    let mut reader = BufReader::new(read);
    let mut line = String::new();
    let mut first_line = (&mut reader).take(TOKEN_LINE_MAX);
    let read_token = first_line.read_line(&mut line);
    if !matches!(tokio::time::timeout(TOKEN_WAIT, read_token).await, Ok(Ok(n)) if n > 0) {
        tracing::warn!("room tools: a stdio connection sent no token");
        return;
    }
    let Some(opened) = opened(&inner, line.trim()) else {
        tracing::warn!("room tools: a stdio connection with no valid token was refused");
        return;
    };
    let tools = RoomToolsServer::new(opened.scope.clone());
    // A token of its own: the SDK cancels it when this connection ends, and the grant's
    // must stay open for the next one.
    let connection = opened.closed.child_token();
    match tools.serve_with_ct((reader, write), connection).await {
        Ok(running) => {
            let _ = running.waiting().await;
        }
        Err(e) => {
            tracing::debug!(error = %e, "room tools: a stdio connection ended before it began")
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::fakes::FakeChat;
    use crate::mcp::client::{Endpoint, call_tool};

    fn scope(chat: Arc<FakeChat>) -> RoomScope {
        RoomScope {
            agent_id: "demo".into(),
            chat,
            room: "!a".into(),
            thread: None,
            folder: std::sync::Arc::new(
                crate::workspace::folder::Folder::open(
                    &std::env::temp_dir(),
                    std::path::Path::new(""),
                )
                .unwrap(),
            ),
            max_bytes: 1000,
        }
    }

    /// The HTTP endpoint a grant gives, with `token` in place of its own when given.
    fn http(grant: &Grant, token: Option<&str>) -> Endpoint {
        let McpServerSpec::Http { url, headers, .. } = &grant.server.http else {
            panic!("{:?}", grant.server.http)
        };
        let value = match token {
            Some(token) => format!("Bearer {token}"),
            None => headers[0].1.expose().to_owned(),
        };
        Endpoint::Http {
            url: url.clone(),
            headers: vec![("Authorization".into(), value)],
        }
    }

    #[tokio::test]
    async fn a_token_opens_its_own_session_s_tools_until_the_session_ends() {
        let host = McpHost::start("/bin/false".into(), None).await.unwrap();
        let chat = FakeChat::new();
        chat.set_members(&["@alice:hs"]);
        let grant = host.grant(scope(chat));
        let answer = call_tool(&http(&grant, None), "list_members", serde_json::json!({}))
            .await
            .unwrap();
        assert_eq!(answer.text, "@alice:hs");
        let tools = call_tool(&http(&grant, None), "", serde_json::Value::Null)
            .await
            .unwrap();
        assert_eq!(
            tools.text,
            "fetch_attachment, list_members, post_file, recent_messages, search_messages"
        );

        let forged = "0".repeat(64);
        let refused = call_tool(
            &http(&grant, Some(&forged)),
            "list_members",
            serde_json::json!({}),
        )
        .await;
        assert!(refused.is_err(), "{refused:?}");

        let ended = http(&grant, None);
        assert_eq!(host.open_grants(), 1);
        drop(grant);
        assert_eq!(host.open_grants(), 0);
        let refused = call_tool(&ended, "list_members", serde_json::json!({})).await;
        assert!(refused.is_err(), "a token of an ended session: {refused:?}");
    }

    #[test]
    fn tokens_are_long_and_never_repeat() {
        let (a, b) = (new_token(), new_token());
        assert_eq!(a.len(), 64);
        assert!(a.chars().all(|c| c.is_ascii_hexdigit()));
        assert_ne!(a, b);
    }
}
