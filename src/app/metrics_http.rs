//! Serving the metrics and health endpoints (`docs/operations.md`): `/metrics` in the
//! OpenMetrics text format Prometheus reads, `/health/live` (the gateway answers) and
//! `/health/ready` (every agent's Matrix user has synced and caught up).

use std::net::SocketAddr;
use std::sync::Arc;

use bytes::Bytes;
use http_body_util::Full;
use hyper::body::Incoming;
use hyper::{Method, Request, Response, StatusCode};
use tokio::net::TcpListener;

use crate::model::ids::AgentId;
use tokio_util::sync::CancellationToken;

use crate::core::metrics::metrics;
use crate::http_server;

/// What the metrics listener lets its clients hold: a scraper or two and health checks need
/// few connections; the headers of a request, a few seconds.
const METRICS_LIMITS: http_server::Limits = http_server::Limits {
    connections: 64,
    header_timeout: std::time::Duration::from_secs(5),
};

/// Binds `address` and serves the endpoints until `stop`; `agents` are the agents whose
/// first sync makes the gateway ready. Returns the address bound.
pub async fn serve(
    address: &str,
    agents: Vec<AgentId>,
    stop: CancellationToken,
) -> std::io::Result<SocketAddr> {
    let listener = TcpListener::bind(address).await?;
    let bound = listener.local_addr()?;
    tracing::info!(address = %bound, "metrics and health served");
    let agents = Arc::new(agents);
    let answer = move |request: Request<Incoming>| {
        let answered = answer(&request, &agents);
        async move { answered }
    };
    tokio::spawn(http_server::serve(
        listener,
        "metrics",
        METRICS_LIMITS,
        stop,
        answer,
    ));
    Ok(bound)
}

/// The answer to one request.
fn answer(request: &Request<Incoming>, agents: &[AgentId]) -> Response<Full<Bytes>> {
    let reply = |status: StatusCode, kind: &'static str, body: String| {
        let mut response = Response::new(Full::new(Bytes::from(body)));
        *response.status_mut() = status;
        response.headers_mut().insert(
            hyper::header::CONTENT_TYPE,
            hyper::header::HeaderValue::from_static(kind),
        );
        response
    };
    const TEXT: &str = "text/plain; charset=utf-8";
    if request.method() != Method::GET {
        return reply(StatusCode::METHOD_NOT_ALLOWED, TEXT, "GET only\n".into());
    }
    match request.uri().path() {
        "/metrics" => reply(
            StatusCode::OK,
            "application/openmetrics-text; version=1.0.0; charset=utf-8",
            metrics().encode(),
        ),
        "/health/live" => reply(StatusCode::OK, TEXT, "live\n".into()),
        "/health/ready" => match metrics().all_synced(agents.iter()) {
            true => reply(StatusCode::OK, TEXT, "ready\n".into()),
            false => reply(
                StatusCode::SERVICE_UNAVAILABLE,
                TEXT,
                "not ready: not every agent has synced yet\n".into(),
            ),
        },
        _ => reply(StatusCode::NOT_FOUND, TEXT, "not found\n".into()),
    }
}
