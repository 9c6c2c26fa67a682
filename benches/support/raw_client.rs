//! A minimal Matrix client made of plain HTTP requests: password login, `/sync` long-polls,
//! joins and sends. The benchmark's second client implementation, so that no latency figure
//! rests on matrix-sdk's client alone, and the plain echo bot of the bot floor.
//!
//! It keeps every `m.room.message` it receives with the wall-clock time its `/sync`
//! response arrived. Nothing is stored on disk and nothing is decrypted: it is for
//! unencrypted rooms.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

/// A message as the raw client received it.
#[derive(Clone, Debug)]
pub struct RawEvent {
    /// The room it was sent in.
    pub room_id: String,
    /// Its event ID.
    pub event_id: String,
    /// Who sent it.
    pub sender: String,
    /// Its `body` (for an edit, the `m.new_content` body).
    pub body: String,
    /// When the `/sync` response holding it arrived.
    pub received: SystemTime,
    /// The homeserver's timestamp, in milliseconds.
    pub server_ts: u64,
    /// The event an edit replaces.
    pub replaces: Option<String>,
}

/// A logged-in raw client, syncing in the background until dropped.
pub struct RawClient {
    /// What it sends with, shared with its sync loop.
    sender: Sender,
    /// The Matrix user it is logged in as.
    pub user_id: String,
    seen: Arc<Mutex<Vec<RawEvent>>>,
    sync: tokio::task::JoinHandle<()>,
}

impl Drop for RawClient {
    fn drop(&mut self) {
        self.sync.abort();
    }
}

/// What the sync loop does with each new message besides keeping it.
#[derive(Clone)]
enum Reaction {
    /// Nothing: a person's client.
    Watch,
    /// Answers every message starting with `echo ` from someone else at once, with the
    /// same text after `echoed: `: the plain bot of the bot floor.
    Echo,
}

impl RawClient {
    /// Logs `user_id` in (a new device) and starts syncing from now.
    pub async fn login(base: &str, user_id: &str, password: &str) -> Self {
        Self::start(base, user_id, password, Reaction::Watch).await
    }

    /// Logs `user_id` in as the plain echo bot (see [`Reaction::Echo`]).
    pub async fn echo_bot(base: &str, user_id: &str, password: &str) -> Self {
        Self::start(base, user_id, password, Reaction::Echo).await
    }

    async fn start(base: &str, user_id: &str, password: &str, reaction: Reaction) -> Self {
        let http = reqwest::Client::new();
        let login = serde_json::json!({
            "type": "m.login.password",
            "identifier": {"type": "m.id.user", "user": user_id},
            "password": password,
        });
        let reply = post(
            &http,
            &format!("{base}/_matrix/client/v3/login"),
            None,
            &login,
        )
        .await;
        let token = reply["access_token"]
            .as_str()
            .expect("a login token")
            .to_owned();
        // The first sync only finds where "now" is; what came before is not kept.
        let first = get(&http, &sync_url(base, None, 0), &token).await;
        let since = first["next_batch"].as_str().unwrap().to_owned();
        let seen = Arc::new(Mutex::new(Vec::new()));
        let sender = Sender {
            http,
            base: base.to_owned(),
            token,
            txn: Arc::new(AtomicU64::new(0)),
        };
        let sync = tokio::spawn(sync_loop(
            sender.clone(),
            since,
            user_id.to_owned(),
            seen.clone(),
            reaction,
        ));
        Self {
            sender,
            user_id: user_id.to_owned(),
            seen,
            sync,
        }
    }

    /// Joins `room_id` (it must be invited).
    pub async fn join(&self, room_id: &str) {
        let s = &self.sender;
        let url = format!("{}/_matrix/client/v3/join/{}", s.base, encode(room_id));
        post(&s.http, &url, Some(&s.token), &serde_json::json!({})).await;
    }

    /// Sends a text message; returns its event ID once the homeserver has it.
    pub async fn send(&self, room_id: &str, body: &str) -> String {
        self.sender.send(room_id, body).await
    }

    /// Every message received so far.
    pub fn events(&self) -> Vec<RawEvent> {
        self.seen.lock().unwrap().clone()
    }
}

/// What sending needs, shared with the sync loop (the echo bot sends from it).
#[derive(Clone)]
struct Sender {
    http: reqwest::Client,
    base: String,
    token: String,
    /// The next transaction ID.
    txn: Arc<AtomicU64>,
}

impl Sender {
    /// Sends a text message; returns its event ID once the homeserver has it.
    async fn send(&self, room_id: &str, body: &str) -> String {
        let txn = self.txn.fetch_add(1, Ordering::Relaxed);
        send_text(&self.http, &self.base, &self.token, room_id, body, txn).await
    }
}

async fn sync_loop(
    sender: Sender,
    mut since: String,
    me: String,
    seen: Arc<Mutex<Vec<RawEvent>>>,
    reaction: Reaction,
) {
    loop {
        let url = sync_url(&sender.base, Some(&since), 30_000);
        let reply = match sender
            .http
            .get(&url)
            .bearer_auth(&sender.token)
            .send()
            .await
        {
            Ok(r) => r.bytes().await.ok(),
            Err(_) => None,
        };
        let received = SystemTime::now();
        let Some(body) = reply else {
            tokio::time::sleep(Duration::from_millis(100)).await;
            continue;
        };
        let Ok(json) = serde_json::from_slice::<serde_json::Value>(&body) else {
            tokio::time::sleep(Duration::from_millis(100)).await;
            continue;
        };
        if let Some(next) = json["next_batch"].as_str() {
            since = next.to_owned();
        }
        let mut new = Vec::new();
        if let Some(rooms) = json["rooms"]["join"].as_object() {
            for (room_id, room) in rooms {
                for event in room["timeline"]["events"].as_array().into_iter().flatten() {
                    if let Some(e) = message(room_id, event, received) {
                        new.push(e);
                    }
                }
            }
        }
        if let Reaction::Echo = reaction {
            for e in &new {
                if e.sender != me && e.replaces.is_none() && e.body.starts_with("echo ") {
                    let s = sender.clone();
                    let (room, body) = (e.room_id.clone(), format!("echoed: {}", e.body));
                    tokio::spawn(async move { s.send(&room, &body).await });
                }
            }
        }
        seen.lock().unwrap().extend(new);
    }
}

/// An `m.room.message` of a sync timeline, or `None` for any other event.
fn message(room_id: &str, event: &serde_json::Value, received: SystemTime) -> Option<RawEvent> {
    if event["type"] != "m.room.message" {
        return None;
    }
    let content = &event["content"];
    let replaces = (content["m.relates_to"]["rel_type"] == "m.replace")
        .then(|| {
            content["m.relates_to"]["event_id"]
                .as_str()
                .map(str::to_owned)
        })
        .flatten();
    let body = match replaces {
        Some(_) => content["m.new_content"]["body"].as_str(),
        None => content["body"].as_str(),
    };
    Some(RawEvent {
        room_id: room_id.to_owned(),
        event_id: event["event_id"].as_str()?.to_owned(),
        sender: event["sender"].as_str()?.to_owned(),
        body: body.unwrap_or_default().to_owned(),
        received,
        server_ts: event["origin_server_ts"].as_u64().unwrap_or(0),
        replaces,
    })
}

fn sync_url(base: &str, since: Option<&str>, timeout_ms: u64) -> String {
    // Timelines are not cut short, and nothing but rooms is asked for.
    let filter = r#"{"room":{"timeline":{"limit":200},"state":{"lazy_load_members":true}},"presence":{"types":[]},"account_data":{"types":[]}}"#;
    let mut url = format!(
        "{base}/_matrix/client/v3/sync?timeout={timeout_ms}&filter={}",
        encode(filter)
    );
    if let Some(since) = since {
        url.push_str(&format!("&since={}", encode(since)));
    }
    url
}

async fn send_text(
    http: &reqwest::Client,
    base: &str,
    token: &str,
    room_id: &str,
    body: &str,
    txn: u64,
) -> String {
    let url = format!(
        "{base}/_matrix/client/v3/rooms/{}/send/m.room.message/raw{txn}",
        encode(room_id)
    );
    let content = serde_json::json!({"msgtype": "m.text", "body": body});
    let reply = http
        .put(&url)
        .bearer_auth(token)
        .header("content-type", "application/json")
        .body(content.to_string())
        .send()
        .await
        .expect("the homeserver to answer");
    let json: serde_json::Value = serde_json::from_slice(&reply.bytes().await.unwrap()).unwrap();
    json["event_id"]
        .as_str()
        .unwrap_or_else(|| panic!("no event ID in {json}"))
        .to_owned()
}

async fn post(
    http: &reqwest::Client,
    url: &str,
    token: Option<&str>,
    body: &serde_json::Value,
) -> serde_json::Value {
    let mut request = http
        .post(url)
        .header("content-type", "application/json")
        .body(body.to_string());
    if let Some(token) = token {
        request = request.bearer_auth(token);
    }
    let reply = request.send().await.expect("the homeserver to answer");
    serde_json::from_slice(&reply.bytes().await.unwrap()).unwrap()
}

async fn get(http: &reqwest::Client, url: &str, token: &str) -> serde_json::Value {
    let reply = http
        .get(url)
        .bearer_auth(token)
        .send()
        .await
        .expect("the homeserver to answer");
    serde_json::from_slice(&reply.bytes().await.unwrap()).unwrap()
}

/// Percent-encodes everything but unreserved characters (RFC 3986), for paths and queries.
fn encode(s: &str) -> String {
    s.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}
