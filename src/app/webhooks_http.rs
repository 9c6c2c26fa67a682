//! Serving the webhooks (`docs/schedules.md`, "Webhooks"): `POST /hooks/NAME`, checked
//! (size, rate, signature, JSON), its prompt filled, and stored as a one-off run of the
//! scheduler before it is answered `202`: the agent runs after the answer, never before.

use std::collections::VecDeque;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bytes::Bytes;
use http_body_util::{BodyExt, Full, Limited};
use hyper::body::Incoming;
use hyper::{Method, Request, Response, StatusCode};
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;

use crate::config::{WebhookConfig, WebhookListenerConfig};
use crate::core::metrics::metrics;
use crate::core::webhooks::{signature, template};
use crate::http_server;
use crate::model::Secret;
use crate::model::ids::{AgentId, RoomId, UserId};
use crate::model::schedule::When;
use crate::store::{NewSchedule, Store, now_ms};

/// What the webhook listener lets its clients hold.
const WEBHOOK_LIMITS: http_server::Limits = http_server::Limits {
    connections: 64,
    header_timeout: Duration::from_secs(10),
};

/// One served webhook.
struct Hook {
    /// As configured.
    config: WebhookConfig,
    /// Its secret.
    secret: Secret,
    /// When its last deliveries were taken, for its rate limit.
    taken: Mutex<VecDeque<Instant>>,
}

/// Every served webhook, and where they store what they take.
struct Hooks {
    hooks: Vec<Hook>,
    store: Store,
    /// How far a signature's timestamp may be from now.
    max_age: Duration,
    /// How long a body may take to arrive.
    body_timeout: Duration,
}

/// Binds `address` and serves `webhooks` as `listener` says until `stop`. Returns the
/// address bound. A webhook whose secret cannot be read is left out, with the reason in the
/// log.
pub async fn serve(
    address: &str,
    listener_config: &WebhookListenerConfig,
    webhooks: &[WebhookConfig],
    store: Store,
    stop: CancellationToken,
) -> std::io::Result<SocketAddr> {
    let listener = TcpListener::bind(address).await?;
    let bound = listener.local_addr()?;
    let hooks = (webhooks.iter())
        .filter_map(|config| match config.secret() {
            Ok(secret) => Some(Hook {
                config: config.clone(),
                secret,
                taken: Mutex::new(VecDeque::new()),
            }),
            Err(e) => {
                tracing::error!(webhook = %config.name, error = %e, "webhook not served: its secret cannot be read");
                None
            }
        })
        .collect();
    let hooks = Arc::new(Hooks {
        hooks,
        store,
        max_age: Duration::from_secs(listener_config.max_age_secs),
        body_timeout: Duration::from_secs(listener_config.body_timeout_secs),
    });
    tracing::info!(address = %bound, webhooks = hooks.hooks.len(), "webhooks served");
    let answer = move |request: Request<Incoming>| {
        let hooks = hooks.clone();
        async move { hooks.answer(request).await }
    };
    tokio::spawn(http_server::serve(
        listener,
        "webhooks",
        WEBHOOK_LIMITS,
        stop,
        answer,
    ));
    Ok(bound)
}

/// A plain-text answer.
fn reply(status: StatusCode, text: &str) -> Response<Full<Bytes>> {
    let mut response = Response::new(Full::new(Bytes::from(format!("{text}\n"))));
    *response.status_mut() = status;
    response.headers_mut().insert(
        hyper::header::CONTENT_TYPE,
        hyper::header::HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    response
}

impl Hooks {
    /// The answer to one request.
    async fn answer(&self, request: Request<Incoming>) -> Response<Full<Bytes>> {
        let name = request.uri().path().strip_prefix("/hooks/").unwrap_or("");
        let Some(hook) = self.hooks.iter().find(|h| h.config.name == name) else {
            return reply(StatusCode::NOT_FOUND, "no such webhook");
        };
        let name = hook.config.name.clone();
        let (status, outcome, text) = match self.take(hook, request).await {
            Ok(text) => (StatusCode::ACCEPTED, "accepted", text),
            Err(refused) => refused,
        };
        tracing::info!(webhook = %name, status = status.as_u16(), outcome, "webhook request");
        metrics().webhook_request(&name, outcome);
        let mut response = reply(status, &text);
        // A body not read whole (too slow, too large) leaves the connection in the middle
        // of a request: kept open, it would hold one of the listener's connections while
        // the rest never comes, and a full listener turns real deliveries away.
        if matches!(outcome, "body_timeout" | "too_large") {
            response.headers_mut().insert(
                hyper::header::CONNECTION,
                hyper::header::HeaderValue::from_static("close"),
            );
        }
        response
    }

    /// Checks and stores one request: its status, the outcome as a metric label, and what
    /// to answer.
    async fn take(&self, hook: &Hook, request: Request<Incoming>) -> Answer {
        if request.method() != Method::POST {
            let text = "POST only".into();
            return Err((StatusCode::METHOD_NOT_ALLOWED, "not_post", text));
        }
        let (parts, body) = request.into_parts();
        let body = read_body(hook, &parts.headers, body, self.body_timeout).await?;
        let header = |name: &str| {
            (parts.headers.get(name))
                .and_then(|v| v.to_str().ok())
                .map(str::to_owned)
        };
        let secret = hook.secret.expose().as_bytes();
        let signing = hook.config.signature;
        let checked = signature::check(
            signing,
            secret,
            header,
            &body,
            now_ms() / 1000,
            self.max_age,
        );
        let signature::Delivery {
            id: delivery,
            signed,
        } = checked.map_err(refusal)?;
        // Counted once signed: requests anyone can send do not use up the sender's rate.
        if !hook.admit() {
            let text = format!("more than {} deliveries a minute", hook.config.per_minute);
            return Err((StatusCode::TOO_MANY_REQUESTS, "rate_limited", text));
        }
        let Ok(payload) = serde_json::from_slice::<serde_json::Value>(&body) else {
            return Err((
                StatusCode::BAD_REQUEST,
                "not_json",
                "the body is not JSON".into(),
            ));
        };
        let unprocessable = |outcome, text| (StatusCode::UNPROCESSABLE_ENTITY, outcome, text);
        let prompt = match template::fill(&hook.config.prompt, &payload) {
            Ok(prompt) if !prompt.trim().is_empty() => prompt,
            Ok(_) => return Err(unprocessable("empty_prompt", "the prompt is empty".into())),
            Err(e) => return Err(unprocessable("template_failed", e.to_string())),
        };
        let run = hook.delivery(prompt);
        match self
            .store
            .add_delivery(&hook.config.name, &[&delivery, &signed], &run)
            .await
        {
            Ok(Some(_)) => Ok(format!("accepted: delivery {delivery}")),
            Ok(None) => Err((
                StatusCode::CONFLICT,
                "replayed",
                format!("delivery {delivery} was taken before (its ID or its signed body)"),
            )),
            Err(e) => {
                tracing::error!(webhook = %hook.config.name, error = %e, "could not store a webhook delivery");
                let text = "not stored; send it again".into();
                Err((StatusCode::SERVICE_UNAVAILABLE, "store_failed", text))
            }
        }
    }
}

/// A refused request: its status, the outcome as a metric label, and what to answer.
type Refusal = (StatusCode, &'static str, String);

/// What becomes of a request: stored (`202`, with what to answer), or refused.
type Answer = Result<String, Refusal>;

/// The request's body, within the webhook's size cap and `deadline`.
async fn read_body(
    hook: &Hook,
    headers: &hyper::HeaderMap,
    body: Incoming,
    deadline: Duration,
) -> Result<Bytes, Refusal> {
    let cap = hook.config.max_body_kb * 1024;
    let too_large = || {
        let text = format!("over {} KiB", hook.config.max_body_kb);
        (StatusCode::PAYLOAD_TOO_LARGE, "too_large", text)
    };
    let declared = (headers.get(hyper::header::CONTENT_LENGTH))
        .and_then(|v| v.to_str().ok()?.parse::<usize>().ok());
    if declared.is_some_and(|n| n > cap) {
        return Err(too_large());
    }
    match tokio::time::timeout(deadline, Limited::new(body, cap).collect()).await {
        Ok(Ok(collected)) => Ok(collected.to_bytes()),
        Ok(Err(_)) => Err(too_large()),
        Err(_) => {
            let text = format!("the body did not arrive within {} s", deadline.as_secs());
            Err((StatusCode::REQUEST_TIMEOUT, "body_timeout", text))
        }
    }
}

/// A signature refused, as an answer.
fn refusal(refused: signature::Refused) -> Refusal {
    let status = StatusCode::from_u16(refused.status()).unwrap_or(StatusCode::FORBIDDEN);
    let outcome = match refused {
        signature::Refused::Unsigned(_) => "unsigned",
        signature::Refused::BadSignature => "bad_signature",
        signature::Refused::Stale(_) => "stale",
    };
    (status, outcome, refused.to_string())
}

impl Hook {
    /// Whether one more delivery fits in its rate limit (the last minute's), counted.
    fn admit(&self) -> bool {
        let mut taken = self.taken.lock().expect("rate limit poisoned");
        let now = Instant::now();
        while taken
            .front()
            .is_some_and(|t| now.duration_since(*t) > Duration::from_secs(60))
        {
            taken.pop_front();
        }
        if taken.len() >= self.config.per_minute as usize {
            return false;
        }
        taken.push_back(now);
        true
    }

    /// A delivery of `prompt` as the one-off run the scheduler takes at once.
    fn delivery(&self, prompt: String) -> NewSchedule {
        let now = now_ms();
        NewSchedule {
            room_id: RoomId::new(self.config.room.clone()),
            agent_id: AgentId::new(self.config.agent.clone()),
            owner: UserId::new(self.config.run_as.clone()),
            when: When::Once(now),
            said: "webhook".into(),
            time_zone: "UTC".into(),
            prompt,
            thread_per_run: !self.config.here,
            skip_missed: false,
            next_run: now,
            source: Some(self.config.name.clone()),
        }
    }
}
