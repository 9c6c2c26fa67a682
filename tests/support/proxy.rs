//! A homeserver proxy for one person's client that can hold back the room keys it sends:
//! every request is passed on to the homeserver, except, while holding, the to-device
//! messages (`PUT …/sendToDevice/…`), which are acknowledged at once and delivered only on
//! [`KeyProxy::release`]. So the key of a message arrives after the message, as it does
//! when federation lags.
//!
//! HTTP/1.1 with `Content-Length` bodies, which is what the Matrix client sends; one task
//! per connection, requests answered in turn.

use std::sync::{Arc, Mutex};

use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::{TcpListener, TcpStream};

/// A request held back.
struct Held {
    method: String,
    path: String,
    headers: Vec<(String, String)>,
    body: Vec<u8>,
}

/// The proxy; it runs until the test ends.
#[derive(Clone)]
pub struct KeyProxy {
    /// Its URL, to give the client as its homeserver.
    pub url: String,
    upstream: String,
    holding: Arc<Mutex<bool>>,
    held: Arc<Mutex<Vec<Held>>>,
}

impl KeyProxy {
    /// Starts a proxy to the homeserver at `upstream`.
    pub async fn start(upstream: &str) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let proxy = Self {
            url: format!("http://{}", listener.local_addr().unwrap()),
            upstream: upstream.trim_end_matches('/').to_owned(),
            holding: Arc::default(),
            held: Arc::default(),
        };
        let serving = proxy.clone();
        tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                tokio::spawn(serving.clone().serve(stream));
            }
        });
        proxy
    }

    /// From now on, to-device messages are held back.
    pub fn hold(&self) {
        *self.holding.lock().unwrap() = true;
    }

    /// How many to-device messages are held back.
    pub fn held(&self) -> usize {
        self.held.lock().unwrap().len()
    }

    /// Delivers what was held back, and holds nothing more.
    pub async fn release(&self) {
        *self.holding.lock().unwrap() = false;
        let held = std::mem::take(&mut *self.held.lock().unwrap());
        for request in held {
            let (status, _, body) = self.forward(&request).await;
            assert!(
                status < 300,
                "{} {}: {status} {}",
                request.method,
                request.path,
                String::from_utf8_lossy(&body)
            );
        }
    }

    async fn serve(self, stream: TcpStream) {
        let (read, mut write) = stream.into_split();
        let mut read = BufReader::new(read);
        loop {
            let Some(request) = read_request(&mut read).await else {
                return;
            };
            let hold = *self.holding.lock().unwrap()
                && request.method == "PUT"
                && request.path.contains("/sendToDevice/");
            let (status, content_type, body) = if hold {
                self.held.lock().unwrap().push(request);
                (200, "application/json".to_owned(), b"{}".to_vec())
            } else {
                self.forward(&request).await
            };
            let head = format!(
                "HTTP/1.1 {status} X\r\ncontent-type: {content_type}\r\ncontent-length: {}\r\n\r\n",
                body.len()
            );
            if write.write_all(head.as_bytes()).await.is_err()
                || write.write_all(&body).await.is_err()
            {
                return;
            }
        }
    }

    /// Passes `request` on to the homeserver; its status, content type and body.
    async fn forward(&self, request: &Held) -> (u16, String, Vec<u8>) {
        let client = reqwest::Client::new();
        let method = reqwest::Method::from_bytes(request.method.as_bytes()).unwrap();
        let mut builder = client.request(method, format!("{}{}", self.upstream, request.path));
        for (name, value) in &request.headers {
            if !matches!(name.as_str(), "host" | "content-length" | "connection") {
                builder = builder.header(name, value);
            }
        }
        match builder.body(request.body.clone()).send().await {
            Ok(response) => {
                let status = response.status().as_u16();
                let content_type = response
                    .headers()
                    .get("content-type")
                    .and_then(|v| v.to_str().ok())
                    .unwrap_or("application/json")
                    .to_owned();
                let body = response
                    .bytes()
                    .await
                    .map(|b| b.to_vec())
                    .unwrap_or_default();
                (status, content_type, body)
            }
            Err(e) => (502, "text/plain".to_owned(), e.to_string().into_bytes()),
        }
    }
}

/// Reads one request; `None` when the connection ends.
async fn read_request(read: &mut BufReader<tokio::net::tcp::OwnedReadHalf>) -> Option<Held> {
    let mut line = String::new();
    if read.read_line(&mut line).await.ok()? == 0 {
        return None;
    }
    let mut parts = line.split_whitespace();
    let (method, path) = (parts.next()?.to_owned(), parts.next()?.to_owned());
    let mut headers = Vec::new();
    let mut length = 0;
    loop {
        let mut header = String::new();
        read.read_line(&mut header).await.ok()?;
        let header = header.trim_end();
        if header.is_empty() {
            break;
        }
        let (name, value) = header.split_once(':')?;
        let (name, value) = (name.trim().to_lowercase(), value.trim().to_owned());
        if name == "content-length" {
            length = value.parse().ok()?;
        }
        headers.push((name, value));
    }
    let mut body = vec![0; length];
    read.read_exact(&mut body).await.ok()?;
    Some(Held {
        method,
        path,
        headers,
        body,
    })
}
