//! The speech-to-text service voice notes are heard by (`[voice]`): any server that speaks
//! OpenAI's `POST /v1/audio/transcriptions` (whisper.cpp's server, faster-whisper-server,
//! a provider). The only module that knows its HTTP; the core sees
//! [`crate::core::hearing::Transcriber`].

use std::time::Duration;

use async_trait::async_trait;
use reqwest::multipart::{Form, Part};

use crate::core::hearing::{HearingError, Transcriber};
use crate::model::Secret;

/// Most characters of a service's error kept for the log and the room.
const ERROR_CHARS: usize = 200;

/// Most bytes of a service's answer read: a transcript of the largest note taken is far
/// smaller, and a hostile server must not fill the gateway's memory.
const ANSWER_BYTES: usize = 1024 * 1024;

/// A transcription service over HTTP.
pub struct HttpTranscriber {
    client: reqwest::Client,
    /// The endpoint, whole (`…/v1/audio/transcriptions`).
    url: String,
    /// Its bearer token, if it wants one: sent only to it, never logged.
    key: Option<Secret>,
    /// The `model` field (`whisper-1` for most servers).
    model: String,
    /// The `language` field, if set (ISO-639-1): spares the service a guess.
    language: Option<String>,
    /// How long one note may take, whole.
    timeout: Duration,
}

impl HttpTranscriber {
    /// A client for the service at `url`.
    pub fn new(
        url: String,
        key: Option<Secret>,
        model: String,
        language: Option<String>,
        timeout: Duration,
    ) -> Self {
        Self {
            // Redirects are not followed: the key goes to the configured server only.
            client: reqwest::Client::builder()
                .redirect(reqwest::redirect::Policy::none())
                .build()
                .unwrap_or_default(),
            url,
            key,
            model,
            language,
            timeout,
        }
    }

    async fn send(&self, name: &str, mime: &str, data: Vec<u8>) -> Result<String, HearingError> {
        // A type the sender gave that is no MIME type is sent as bytes, never the file
        // dropped (a failed `mime_str` would consume the part and its data).
        let mime = (mime.parse::<mime_guess::mime::Mime>())
            .map_or_else(|_| "application/octet-stream".to_owned(), |m| m.to_string());
        let file = Part::bytes(data)
            .file_name(name.to_owned())
            .mime_str(&mime)
            .map_err(|e| HearingError::Unreachable(e.to_string()))?;
        let mut form = Form::new()
            .part("file", file)
            .text("model", self.model.clone())
            .text("response_format", "json");
        if let Some(language) = &self.language {
            form = form.text("language", language.clone());
        }
        let mut request = self.client.post(&self.url).multipart(form);
        if let Some(key) = &self.key {
            request = request.bearer_auth(key.expose());
        }
        let mut response = request
            .send()
            .await
            .map_err(|e| HearingError::Unreachable(without_url(e)))?;
        let status = response.status();
        let mut body = Vec::new();
        while let Some(chunk) = response
            .chunk()
            .await
            .map_err(|e| HearingError::Unreachable(without_url(e)))?
        {
            body.extend_from_slice(&chunk);
            if body.len() > ANSWER_BYTES {
                return Err(HearingError::NoText("its answer is too long".into()));
            }
        }
        let text = String::from_utf8_lossy(&body);
        if !status.is_success() {
            return Err(HearingError::Refused {
                status: status.as_u16(),
                message: short(&text),
            });
        }
        transcript(&text)
    }
}

#[async_trait]
impl Transcriber for HttpTranscriber {
    async fn transcribe(
        &self,
        name: &str,
        mime: &str,
        data: Vec<u8>,
    ) -> Result<String, HearingError> {
        match tokio::time::timeout(self.timeout, self.send(name, mime, data)).await {
            Ok(result) => result,
            Err(_) => Err(HearingError::TimedOut(self.timeout.as_secs())),
        }
    }
}

/// The transcript in a service's JSON answer (`{"text": "…"}`); an empty one is no text.
fn transcript(body: &str) -> Result<String, HearingError> {
    #[derive(serde::Deserialize)]
    struct Answer {
        text: String,
    }
    match serde_json::from_str::<Answer>(body) {
        Ok(Answer { text }) if !text.trim().is_empty() => Ok(text.trim().to_owned()),
        Ok(_) => Err(HearingError::NoText("the transcript is empty".into())),
        Err(_) => Err(HearingError::NoText(short(body))),
    }
}

/// An HTTP error without its URL: the configured URL may carry a key in its query.
fn without_url(e: reqwest::Error) -> String {
    let mut text = match (e.is_connect(), e.is_timeout()) {
        (true, _) => "connection refused or unreachable".to_owned(),
        (_, true) => "timed out".to_owned(),
        _ => e.without_url().to_string(),
    };
    text.truncate(ERROR_CHARS);
    text
}

/// `text` on one line, at most [`ERROR_CHARS`] characters.
fn short(text: &str) -> String {
    let line: String = text.split_whitespace().collect::<Vec<_>>().join(" ");
    line.chars().take(ERROR_CHARS).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_transcript_is_the_text_of_the_answer() {
        assert_eq!(
            transcript(r#"{"text": " run the tests "}"#),
            Ok("run the tests".into())
        );
        assert!(matches!(
            transcript(r#"{"text": "  "}"#),
            Err(HearingError::NoText(_))
        ));
        assert!(
            matches!(transcript("<html>502</html>"), Err(HearingError::NoText(m)) if m == "<html>502</html>")
        );
    }

    /// A service on loopback that answers one request with the body it got, as text.
    async fn echoing_service() -> String {
        use http_body_util::{BodyExt, Full};
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!(
            "http://{}/v1/audio/transcriptions",
            listener.local_addr().unwrap()
        );
        tokio::spawn(async move {
            let (stream, _) = listener.accept().await.unwrap();
            let echo = hyper::service::service_fn(
                |request: hyper::Request<hyper::body::Incoming>| async move {
                    let body = request.into_body().collect().await?.to_bytes();
                    let text = serde_json::json!({ "text": String::from_utf8_lossy(&body) });
                    Ok::<_, hyper::Error>(hyper::Response::new(Full::new(bytes::Bytes::from(
                        text.to_string(),
                    ))))
                },
            );
            let io = hyper_util::rt::TokioIo::new(stream);
            let _ = hyper::server::conn::http1::Builder::new()
                .serve_connection(io, echo)
                .await;
        });
        url
    }

    #[tokio::test]
    async fn a_note_whose_type_is_no_mime_type_is_still_sent_whole() {
        let url = echoing_service().await;
        let service =
            HttpTranscriber::new(url, None, "whisper-1".into(), None, Duration::from_secs(10));
        let sent = service
            .transcribe("note.ogg", "not a type", b"OggS-bytes".to_vec())
            .await
            .unwrap();
        assert!(sent.contains("OggS-bytes"), "{sent}");
        assert!(sent.contains("application/octet-stream"), "{sent}");
    }

    #[test]
    fn errors_are_one_short_line() {
        let long = "word\n".repeat(100);
        let s = short(&long);
        assert!(!s.contains('\n') && s.chars().count() <= ERROR_CHARS);
    }
}
