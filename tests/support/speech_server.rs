//! A scripted speech-to-text service for the tests: enough of OpenAI's
//! `POST /v1/audio/transcriptions` for the gateway to hear a voice note. It answers every
//! request with the transcript it was given (or the failure), and keeps what it was sent.

use std::sync::{Arc, Mutex};

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::{Request, Response, StatusCode};
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;

/// What the service answers.
#[derive(Debug, Clone)]
pub enum Hears {
    /// `{"text": …}`.
    Text(String),
    /// A 500 with this body.
    Fails(String),
}

/// One request, as received.
#[derive(Debug, Clone)]
pub struct Heard {
    /// Its `Authorization` header, if any.
    pub authorization: Option<String>,
    /// Its whole (multipart) body.
    pub body: Vec<u8>,
}

impl Heard {
    /// Whether the body carries `bytes` (the note's file).
    pub fn carries(&self, bytes: &[u8]) -> bool {
        self.body.windows(bytes.len()).any(|w| w == bytes)
    }
}

/// The running service.
pub struct SpeechServer {
    /// Its endpoint, whole (`http://127.0.0.1:PORT/v1/audio/transcriptions`).
    pub url: String,
    answer: Arc<Mutex<Hears>>,
    received: Arc<Mutex<Vec<Heard>>>,
    _stop: tokio_util::sync::DropGuard,
}

impl SpeechServer {
    /// Starts it on a free loopback port, answering `answer`.
    pub async fn start(answer: Hears) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!(
            "http://{}/v1/audio/transcriptions",
            listener.local_addr().unwrap()
        );
        let answer = Arc::new(Mutex::new(answer));
        let received = Arc::new(Mutex::new(Vec::new()));
        let stop = CancellationToken::new();
        let (a, r) = (answer.clone(), received.clone());
        tokio::spawn(sidekicks::http_server::serve(
            listener,
            "speech",
            Default::default(),
            stop.clone(),
            move |request: Request<hyper::body::Incoming>| {
                let (answer, received) = (a.clone(), r.clone());
                async move { respond(request, &answer, &received).await }
            },
        ));
        Self {
            url,
            answer,
            received,
            _stop: stop.drop_guard(),
        }
    }

    /// Answers `answer` from now on.
    pub fn answer(&self, answer: Hears) {
        *self.answer.lock().unwrap() = answer;
    }

    /// Every request so far.
    pub fn received(&self) -> Vec<Heard> {
        self.received.lock().unwrap().clone()
    }
}

async fn respond(
    request: Request<hyper::body::Incoming>,
    answer: &Mutex<Hears>,
    received: &Mutex<Vec<Heard>>,
) -> Response<Full<Bytes>> {
    let authorization = (request.headers().get("authorization"))
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    let right_path = request.uri().path() == "/v1/audio/transcriptions";
    let body = match request.into_body().collect().await {
        Ok(body) => body.to_bytes().to_vec(),
        Err(_) => Vec::new(),
    };
    received.lock().unwrap().push(Heard {
        authorization,
        body,
    });
    let answer = answer.lock().unwrap().clone();
    let (status, body) = match (right_path, answer) {
        (false, _) => (StatusCode::NOT_FOUND, "no such endpoint".to_owned()),
        (true, Hears::Text(text)) => (
            StatusCode::OK,
            serde_json::json!({ "text": text }).to_string(),
        ),
        (true, Hears::Fails(why)) => (StatusCode::INTERNAL_SERVER_ERROR, why),
    };
    Response::builder()
        .status(status)
        .header("content-type", "application/json")
        .body(Full::new(Bytes::from(body)))
        .unwrap()
}
