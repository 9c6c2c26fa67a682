//! A person's Matrix client (matrix-sdk, with its own encrypted store), separate from the
//! gateway, recording everything it sees.

use std::collections::HashSet;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use matrix_sdk::config::SyncSettings;
use matrix_sdk::deserialized_responses::EncryptionInfo;
use matrix_sdk::encryption::EncryptionSettings;
use matrix_sdk::event_handler::RawEvent;
use matrix_sdk::room::Room;
use matrix_sdk::ruma::events::poll::unstable_end::OriginalSyncUnstablePollEndEvent;
use matrix_sdk::ruma::events::poll::unstable_response::UnstablePollResponseEventContent;
use matrix_sdk::ruma::events::poll::unstable_start::OriginalSyncUnstablePollStartEvent;
use matrix_sdk::ruma::events::reaction::{OriginalSyncReactionEvent, ReactionEventContent};
use matrix_sdk::ruma::events::relation::Annotation;
use matrix_sdk::ruma::events::room::MediaSource;
use matrix_sdk::ruma::events::room::message::{
    MessageType, OriginalSyncRoomMessageEvent, Relation, ReplacementMetadata,
    RoomMessageEventContent, RoomMessageEventContentWithoutRelation,
};
use matrix_sdk::ruma::events::room::redaction::OriginalSyncRoomRedactionEvent;
use matrix_sdk::ruma::events::typing::SyncTypingEvent;
use matrix_sdk::ruma::{OwnedEventId, OwnedRoomId, OwnedUserId, UserId};
use matrix_sdk::{Client, RoomMemberships};
pub use matrix_sdk_base::crypto::CollectStrategy;
use tempfile::TempDir;

/// One message event the person's client saw.
#[derive(Debug, Clone)]
pub struct Seen {
    /// Event ID.
    pub event_id: String,
    /// Room.
    pub room_id: String,
    /// Author.
    pub sender: String,
    /// Plain body (for an edit: the fallback `* …`).
    pub body: String,
    /// HTML body, if any (for an edit: of the new content).
    pub html: Option<String>,
    /// Whether it is an `m.notice`.
    pub notice: bool,
    /// For an edit: the event it replaces and its new body.
    pub replaces: Option<(String, String)>,
    /// The users it mentions intentionally (`m.mentions`).
    pub mentions: Vec<String>,
    /// Whether it carries `m.mentions` at all (an empty one says "nobody").
    pub declares_mentions: bool,
    /// The message it replies to (`m.in_reply_to`), if any (in a thread: the reply its
    /// thread relation carries, fallback or not).
    pub in_reply_to: Option<String>,
    /// The root of the thread it was posted in (`m.thread`), if any.
    pub thread: Option<String>,
    /// Whether its thread relation's reply is only a fallback for clients without threads.
    pub thread_fallback: bool,
    /// Whether it arrived encrypted.
    pub encrypted: bool,
    /// When this client received it (wall clock, comparable across processes).
    pub received: std::time::SystemTime,
    /// When the homeserver took it in (`origin_server_ts`, milliseconds since 1970).
    pub server_ts: u64,
    /// For a picture or a file: its message type (`m.image`, `m.file`), its file name and
    /// where it is.
    pub media: Option<(String, String, MediaSource)>,
    /// Whether it carries MSC4357's live marker (for an edit: in its new content).
    pub live: bool,
}

/// A reaction the person's client saw.
#[derive(Debug, Clone)]
pub struct SeenReaction {
    /// The reaction's own event ID.
    pub event_id: String,
    /// Author.
    pub sender: String,
    /// Target event.
    pub target: String,
    /// Key.
    pub key: String,
}

/// A native poll (MSC3381) the person's client saw.
#[derive(Debug, Clone)]
pub struct SeenPoll {
    /// Event ID.
    pub event_id: String,
    /// Author.
    pub sender: String,
    /// Its question.
    pub question: String,
    /// Its answers: ID and text each.
    pub answers: Vec<(String, String)>,
    /// Its text for clients without polls.
    pub fallback: String,
    /// The root of the thread it was posted in, if any.
    pub thread: Option<String>,
    /// The users it mentions intentionally.
    pub mentions: Vec<String>,
}

/// The end of a native poll the person's client saw.
#[derive(Debug, Clone)]
pub struct SeenPollEnd {
    /// Who ended it.
    pub sender: String,
    /// The poll ended.
    pub poll: String,
    /// What its end says.
    pub text: String,
}

#[derive(Default)]
struct Log {
    messages: Vec<Seen>,
    polls: Vec<SeenPoll>,
    poll_ends: Vec<SeenPollEnd>,
    reactions: Vec<SeenReaction>,
    redacted: HashSet<String>,
    typing: HashSet<String>,
    /// Each typing notice received, when, with who it says is typing.
    typing_changes: Vec<(std::time::SystemTime, HashSet<String>)>,
}

/// Whether a message event carries MSC4357's live marker where clients read it: in the
/// new content of an edit, else in its own content.
fn live_marker(raw: &RawEvent) -> bool {
    const MARKER: &str = "org.matrix.msc4357.live";
    let event: serde_json::Value = serde_json::from_str(raw.get()).unwrap_or_default();
    let content = &event["content"];
    match content.get("m.new_content") {
        Some(new) => new.get(MARKER).is_some(),
        None => content.get(MARKER).is_some(),
    }
}

/// A logged-in person, syncing in the background.
pub struct Person {
    /// Their client.
    pub client: Client,
    /// Their user ID.
    pub user_id: String,
    log: Arc<Mutex<Log>>,
    sync: tokio::task::JoinHandle<()>,
    _store: TempDir,
}

impl Drop for Person {
    fn drop(&mut self) {
        self.sync.abort();
    }
}

impl Person {
    /// Logs `name` in on `homeserver` and starts syncing.
    pub async fn login(homeserver: &str, user_id: &str, password: &str) -> Self {
        Self::login_sharing_keys(homeserver, user_id, password, CollectStrategy::AllDevices).await
    }

    /// Like [`Person::login`], choosing which devices the client shares room keys with.
    pub async fn login_sharing_keys(
        homeserver: &str,
        user_id: &str,
        password: &str,
        strategy: CollectStrategy,
    ) -> Self {
        Self::login_with(homeserver, user_id, password, strategy, true).await
    }

    /// Like [`Person::login`], on a device its owner does not sign (cross-sign): a second
    /// session of someone who never verified it.
    pub async fn login_unsigned(homeserver: &str, user_id: &str, password: &str) -> Self {
        Self::login_with(
            homeserver,
            user_id,
            password,
            CollectStrategy::AllDevices,
            false,
        )
        .await
    }

    async fn login_with(
        homeserver: &str,
        user_id: &str,
        password: &str,
        strategy: CollectStrategy,
        cross_signing: bool,
    ) -> Self {
        let store = tempfile::Builder::new()
            .prefix("sidekicks-person-")
            .tempdir()
            .unwrap();
        let client = Client::builder()
            .homeserver_url(homeserver)
            .with_room_key_recipient_strategy(strategy)
            .with_encryption_settings(EncryptionSettings {
                auto_enable_cross_signing: cross_signing,
                ..Default::default()
            })
            .sqlite_store(store.path(), None)
            .build()
            .await
            .unwrap();
        client
            .matrix_auth()
            .login_username(user_id, password)
            .await
            .unwrap();
        client
            .encryption()
            .wait_for_e2ee_initialization_tasks()
            .await;
        let log = Arc::new(Mutex::new(Log::default()));

        let l = log.clone();
        client.add_event_handler(
            move |ev: OriginalSyncRoomMessageEvent,
                  room: Room,
                  enc: Option<EncryptionInfo>,
                  raw: RawEvent| {
                let l = l.clone();
                async move {
                    let live = live_marker(&raw);
                    let (notice, html) = match &ev.content.msgtype {
                        MessageType::Notice(n) => {
                            (true, n.formatted.as_ref().map(|f| f.body.clone()))
                        }
                        MessageType::Text(t) => {
                            (false, t.formatted.as_ref().map(|f| f.body.clone()))
                        }
                        _ => (false, None),
                    };
                    let mut seen = Seen {
                        event_id: ev.event_id.to_string(),
                        room_id: room.room_id().to_string(),
                        sender: ev.sender.to_string(),
                        body: ev.content.body().to_owned(),
                        html,
                        notice,
                        replaces: None,
                        mentions: ev
                            .content
                            .mentions
                            .iter()
                            .flat_map(|m| m.user_ids.iter().map(|u| u.to_string()))
                            .collect(),
                        declares_mentions: ev.content.mentions.is_some(),
                        in_reply_to: match &ev.content.relates_to {
                            Some(Relation::Reply(r)) => Some(r.in_reply_to.event_id.to_string()),
                            Some(Relation::Thread(t)) => {
                                t.in_reply_to.as_ref().map(|r| r.event_id.to_string())
                            }
                            _ => None,
                        },
                        thread: match &ev.content.relates_to {
                            Some(Relation::Thread(t)) => Some(t.event_id.to_string()),
                            _ => None,
                        },
                        thread_fallback: matches!(
                            &ev.content.relates_to,
                            Some(Relation::Thread(t)) if t.is_falling_back
                        ),
                        encrypted: enc.is_some(),
                        received: std::time::SystemTime::now(),
                        server_ts: ev.origin_server_ts.get().into(),
                        media: match &ev.content.msgtype {
                            MessageType::Image(i) => {
                                Some(("m.image".into(), i.filename().to_owned(), i.source.clone()))
                            }
                            MessageType::File(f) => {
                                Some(("m.file".into(), f.filename().to_owned(), f.source.clone()))
                            }
                            _ => None,
                        },
                        live,
                    };
                    if let Some(Relation::Replacement(r)) = &ev.content.relates_to {
                        seen.replaces = Some((
                            r.event_id.to_string(),
                            r.new_content.msgtype.body().to_owned(),
                        ));
                        seen.html = match &r.new_content.msgtype {
                            MessageType::Text(t) => t.formatted.as_ref().map(|f| f.body.clone()),
                            MessageType::Notice(n) => n.formatted.as_ref().map(|f| f.body.clone()),
                            _ => None,
                        };
                    }
                    l.lock().unwrap().messages.push(seen);
                }
            },
        );
        let l = log.clone();
        client.add_event_handler(move |ev: OriginalSyncReactionEvent| {
            let l = l.clone();
            async move {
                l.lock().unwrap().reactions.push(SeenReaction {
                    event_id: ev.event_id.to_string(),
                    sender: ev.sender.to_string(),
                    target: ev.content.relates_to.event_id.to_string(),
                    key: ev.content.relates_to.key.clone(),
                });
            }
        });
        let l = log.clone();
        client.add_event_handler(
            move |ev: OriginalSyncUnstablePollStartEvent, raw: RawEvent| {
                let l = l.clone();
                async move {
                    let event: serde_json::Value =
                        serde_json::from_str(raw.get()).unwrap_or_default();
                    let content = &event["content"];
                    let block = ev.content.poll_start();
                    let text = |v: &serde_json::Value| v.as_str().unwrap_or_default().to_owned();
                    l.lock().unwrap().polls.push(SeenPoll {
                        event_id: ev.event_id.to_string(),
                        sender: ev.sender.to_string(),
                        question: block.question.text.clone(),
                        answers: (block.answers.iter())
                            .map(|a| (a.id.clone(), a.text.clone()))
                            .collect(),
                        fallback: text(&content["org.matrix.msc1767.text"]),
                        thread: (content["m.relates_to"]["rel_type"] == "m.thread")
                            .then(|| text(&content["m.relates_to"]["event_id"])),
                        mentions: (content["m.mentions"]["user_ids"].as_array().into_iter())
                            .flatten()
                            .map(text)
                            .collect(),
                    });
                }
            },
        );
        let l = log.clone();
        client.add_event_handler(move |ev: OriginalSyncUnstablePollEndEvent| {
            let l = l.clone();
            async move {
                l.lock().unwrap().poll_ends.push(SeenPollEnd {
                    sender: ev.sender.to_string(),
                    poll: ev.content.relates_to.event_id.to_string(),
                    text: ev.content.text.clone(),
                });
            }
        });
        let l = log.clone();
        client.add_event_handler(move |ev: OriginalSyncRoomRedactionEvent| {
            let l = l.clone();
            async move {
                if let Some(target) = ev.redacts.or(ev.content.redacts) {
                    l.lock().unwrap().redacted.insert(target.to_string());
                }
            }
        });
        let l = log.clone();
        client.add_event_handler(move |ev: SyncTypingEvent| {
            let l = l.clone();
            async move {
                let typing: HashSet<String> =
                    ev.content.user_ids.iter().map(|u| u.to_string()).collect();
                let mut l = l.lock().unwrap();
                l.typing.extend(typing.iter().cloned());
                (l.typing_changes).push((std::time::SystemTime::now(), typing));
            }
        });
        let c = client.clone();
        let sync = tokio::spawn(async move {
            loop {
                let _ = c
                    .sync(
                        SyncSettings::default()
                            .timeout(Duration::from_secs(5))
                            .filter(full_timeline()),
                    )
                    .await;
                tokio::time::sleep(Duration::from_millis(200)).await;
            }
        });
        Self {
            client,
            user_id: user_id.to_owned(),
            log,
            sync,
            _store: store,
        }
    }

    /// Creates a private room, encrypted or not, and waits until the client knows it.
    pub async fn create_room(&self, encrypted: bool) -> Room {
        let response = self.client.create_room(Default::default()).await.unwrap();
        let room_id = response.room_id().to_owned();
        let room = wait_until(Duration::from_secs(30), "the new room to sync", || {
            self.client.get_room(&room_id)
        })
        .await;
        if encrypted {
            room.enable_encryption().await.unwrap();
        }
        room
    }

    /// A room this person is in.
    pub fn room(&self, room_id: &str) -> Room {
        self.client
            .get_room(&OwnedRoomId::try_from(room_id).unwrap())
            .unwrap()
    }

    /// Invites `user_id` into `room`.
    pub async fn invite(&self, room: &Room, user_id: &str) {
        room.invite_user_by_id(&OwnedUserId::try_from(user_id).unwrap())
            .await
            .unwrap();
    }

    /// Kicks `user_id` out of `room`, saying `reason`.
    pub async fn kick(&self, room: &Room, user_id: &str, reason: &str) {
        let user = matrix_sdk::ruma::UserId::parse(user_id).unwrap();
        room.kick_user(&user, Some(reason)).await.unwrap();
    }

    /// Sends a plain text message; returns its event ID.
    pub async fn send(&self, room: &Room, text: &str) -> String {
        send_content(room, RoomMessageEventContent::text_plain(text)).await
    }

    /// Sends a message event of type `m.room.message` with exactly `content` (which the
    /// SDK's own types may refuse: media without a source, odd relations); returns its
    /// event ID. In an encrypted room it is encrypted like any other message.
    pub async fn send_raw(&self, room: &Room, content: serde_json::Value) -> String {
        room.send_raw("m.room.message", content)
            .await
            .unwrap()
            .response
            .event_id
            .to_string()
    }

    /// Sends a file as Element does (uploaded, encrypted in an encrypted room; a picture,
    /// audio, video or file by its MIME type), with `caption` as its text if given; returns
    /// its event ID.
    pub async fn send_file(
        &self,
        room: &Room,
        name: &str,
        mime: &str,
        data: Vec<u8>,
        caption: Option<&str>,
    ) -> String {
        use matrix_sdk::attachment::AttachmentConfig;
        use matrix_sdk::ruma::events::room::message::TextMessageEventContent;
        let mime: mime_guess::mime::Mime = mime.parse().unwrap();
        let config = AttachmentConfig::new().caption(caption.map(TextMessageEventContent::plain));
        room.send_attachment(name, &mime, data, config)
            .await
            .unwrap()
            .event_id
            .to_string()
    }

    /// Sends a voice note as Element X records one (an `m.audio` marked
    /// `org.matrix.msc3245.voice`, with its waveform); returns its event ID.
    pub async fn send_voice(&self, room: &Room, data: Vec<u8>) -> String {
        use matrix_sdk::attachment::{AttachmentConfig, AttachmentInfo, BaseAudioInfo};
        let info = AttachmentInfo::Voice(BaseAudioInfo {
            duration: Some(std::time::Duration::from_secs(2)),
            size: Some((data.len() as u32).into()),
            waveform: Some(vec![0.1, 0.5, 0.9]),
        });
        let config = AttachmentConfig::new().info(info);
        room.send_attachment(
            "Voice message.ogg",
            &"audio/ogg".parse().unwrap(),
            data,
            config,
        )
        .await
        .unwrap()
        .event_id
        .to_string()
    }

    /// The bytes of a picture or file this person saw (decrypted where it was encrypted).
    pub async fn download(&self, source: &MediaSource) -> Vec<u8> {
        use matrix_sdk::media::{MediaFormat, MediaRequestParameters};
        let request = MediaRequestParameters {
            source: source.clone(),
            format: MediaFormat::File,
        };
        self.client
            .media()
            .get_media_content(&request, false)
            .await
            .unwrap()
    }

    /// Sends `text` in the thread whose root is `root`, as Element does (with the reply
    /// fallback to the thread's latest message, here its root); returns its event ID.
    pub async fn send_in_thread(&self, room: &Room, root: &str, text: &str) -> String {
        let content = serde_json::json!({
            "msgtype": "m.text",
            "body": text,
            "m.relates_to": {
                "rel_type": "m.thread",
                "event_id": root,
                "is_falling_back": true,
                "m.in_reply_to": {"event_id": root},
            },
        });
        self.send_raw(room, content).await
    }

    /// Sends `text` after a mention pill of `user_id` shown as `name` (HTML link and
    /// intentional mention, as Element sends it); returns its event ID.
    pub async fn send_mention(&self, room: &Room, user_id: &str, name: &str, text: &str) -> String {
        let plain = format!("{name}: {text}");
        let html = format!("<a href=\"https://matrix.to/#/{user_id}\">{name}</a>: {text}");
        let user = matrix_sdk::ruma::OwnedUserId::try_from(user_id).unwrap();
        let content = RoomMessageEventContent::text_html(plain, html)
            .add_mentions(matrix_sdk::ruma::events::Mentions::with_user_ids([user]));
        send_content(room, content).await
    }

    /// Edits an earlier message of this person's to say `text` (an `m.replace`).
    pub async fn send_edit(&self, room: &Room, event_id: &str, text: &str) {
        let content = RoomMessageEventContentWithoutRelation::text_plain(text).make_replacement(
            ReplacementMetadata::new(OwnedEventId::try_from(event_id).unwrap(), None),
        );
        room.send(content).await.unwrap();
    }

    /// Sends a plain text message as a reply to `in_reply_to`; returns its event ID.
    pub async fn send_reply(&self, room: &Room, text: &str, in_reply_to: &str) -> String {
        let mut content = RoomMessageEventContent::text_plain(text);
        content.relates_to = Some(Relation::Reply(
            matrix_sdk::ruma::events::relation::Reply::with_event_id(
                OwnedEventId::try_from(in_reply_to).unwrap(),
            ),
        ));
        send_content(room, content).await
    }

    /// Joins a room this person was invited to, and waits until the client knows it.
    pub async fn join(&self, room_id: &str) -> Room {
        let id = OwnedRoomId::try_from(room_id).unwrap();
        wait_until(Duration::from_secs(30), "the invite to sync", || {
            self.client.get_room(&id)
        })
        .await;
        self.client.join_room_by_id(&id).await.unwrap();
        self.room(room_id)
    }

    /// Reacts to an event.
    pub async fn react(&self, room: &Room, event_id: &str, key: &str) {
        let target = OwnedEventId::try_from(event_id).unwrap();
        room.send(ReactionEventContent::new(Annotation::new(
            target,
            key.to_owned(),
        )))
        .await
        .unwrap();
    }

    /// Answers native poll `poll` with the answer whose ID is `answer`, as a client with
    /// polls does (an `org.matrix.msc3381.poll.response`).
    pub async fn answer_poll(&self, room: &Room, poll: &str, answer: &str) {
        let poll = OwnedEventId::try_from(poll).unwrap();
        room.send(UnstablePollResponseEventContent::new(
            vec![answer.to_owned()],
            poll,
        ))
        .await
        .unwrap();
    }

    /// The native polls `sender` posted, as this person's client saw them.
    pub fn polls_from(&self, sender: &str) -> Vec<SeenPoll> {
        let log = self.log.lock().unwrap();
        (log.polls.iter())
            .filter(|p| p.sender == sender)
            .cloned()
            .collect()
    }

    /// The ends of native poll `poll` this person's client saw.
    pub fn ends_of_poll(&self, poll: &str) -> Vec<SeenPollEnd> {
        let log = self.log.lock().unwrap();
        (log.poll_ends.iter())
            .filter(|e| e.poll == poll)
            .cloned()
            .collect()
    }

    /// Whether `user_id`'s membership in `room` is one of `states`, per this person's view.
    pub async fn membership_is(&self, room: &Room, user_id: &str, states: RoomMemberships) -> bool {
        let user: &UserId = <&UserId>::try_from(user_id).unwrap();
        room.members_no_sync(states)
            .await
            .unwrap()
            .iter()
            .any(|m| m.user_id() == user)
    }

    /// Waits until `user_id`'s membership in `room` is one of `states`.
    pub async fn wait_membership(&self, room: &Room, user_id: &str, states: RoomMemberships) {
        let deadline = Instant::now() + Duration::from_secs(60);
        while !self.membership_is(room, user_id, states).await {
            assert!(
                Instant::now() < deadline,
                "{user_id} never reached {states:?}"
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// The device IDs this person's client knows for `user_id`.
    pub async fn device_ids(&self, user_id: &str) -> Vec<String> {
        let user: &UserId = <&UserId>::try_from(user_id).unwrap();
        let devices = self
            .client
            .encryption()
            .get_user_devices(user)
            .await
            .unwrap();
        devices
            .devices()
            .map(|d| d.device_id().to_string())
            .collect()
    }

    /// Messages (not edits) by `sender` in `room`, in order.
    pub fn messages_from(&self, room: &Room, sender: &str) -> Vec<Seen> {
        let room_id = room.room_id().to_string();
        self.log
            .lock()
            .unwrap()
            .messages
            .iter()
            .filter(|m| m.room_id == room_id && m.sender == sender && m.replaces.is_none())
            .cloned()
            .collect()
    }

    /// The edits of `event_id`, in order.
    pub fn edits_of(&self, event_id: &str) -> Vec<Seen> {
        self.log
            .lock()
            .unwrap()
            .messages
            .iter()
            .filter(|m| {
                m.replaces
                    .as_ref()
                    .is_some_and(|(target, _)| target == event_id)
            })
            .cloned()
            .collect()
    }

    /// What `event_id` shows now: its last edit's new body, else its own body.
    pub fn current_text(&self, event_id: &str) -> Option<String> {
        if let Some(last) = self.edits_of(event_id).last() {
            return last.replaces.as_ref().map(|(_, body)| body.clone());
        }
        let log = self.log.lock().unwrap();
        log.messages
            .iter()
            .find(|m| m.event_id == event_id)
            .map(|m| m.body.clone())
    }

    /// Whether `event_id` is still being written: the live marker (MSC4357) is on its
    /// last edit, or on itself while it has none.
    pub fn is_live(&self, event_id: &str) -> bool {
        if let Some(last) = self.edits_of(event_id).last() {
            return last.live;
        }
        let log = self.log.lock().unwrap();
        (log.messages.iter()).any(|m| m.event_id == event_id && m.live)
    }

    /// The HTML `event_id` shows now (its last edit's, if edited), if any.
    pub fn current_html(&self, event_id: &str) -> Option<String> {
        if let Some(last) = self.edits_of(event_id).last() {
            return last.html.clone();
        }
        let log = self.log.lock().unwrap();
        (log.messages.iter())
            .find(|m| m.event_id == event_id)
            .and_then(|m| m.html.clone())
    }

    /// Reactions seen on `event_id`.
    pub fn reactions_on(&self, event_id: &str) -> Vec<SeenReaction> {
        self.log
            .lock()
            .unwrap()
            .reactions
            .iter()
            .filter(|r| r.target == event_id)
            .cloned()
            .collect()
    }

    /// Whether `event_id` was redacted (e.g. a reaction taken back).
    pub fn is_redacted(&self, event_id: &str) -> bool {
        self.log.lock().unwrap().redacted.contains(event_id)
    }

    /// How many redactions were seen (in every room).
    pub fn redactions_seen(&self) -> usize {
        self.log.lock().unwrap().redacted.len()
    }

    /// Whether `user_id` was ever seen typing.
    pub fn saw_typing(&self, user_id: &str) -> bool {
        self.log.lock().unwrap().typing.contains(user_id)
    }

    /// When this client first saw `user_id` stop typing, having seen them typing.
    pub fn stopped_typing_at(&self, user_id: &str) -> Option<std::time::SystemTime> {
        let log = self.log.lock().unwrap();
        let changes = log.typing_changes.iter();
        let first_on = changes.clone().position(|(_, who)| who.contains(user_id))?;
        let mut after = changes.skip(first_on);
        after
            .find(|(_, who)| !who.contains(user_id))
            .map(|(at, _)| *at)
    }
}

/// Sends a message; returns its event ID.
async fn send_content(room: &Room, content: RoomMessageEventContent) -> String {
    room.send(content)
        .await
        .unwrap()
        .response
        .event_id
        .to_string()
}

/// Polls `probe` until it returns `Some`, or panics after `timeout` naming `what`.
pub async fn wait_until<T>(
    timeout: Duration,
    what: &str,
    mut probe: impl FnMut() -> Option<T>,
) -> T {
    let deadline = Instant::now() + timeout;
    loop {
        if let Some(v) = probe() {
            return v;
        }
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// A sync filter that does not truncate room timelines: a busy agent (a poll, its
/// reactions, cards and edits) can post more events between two syncs than the server's
/// default of 10, and a test must see every one of them.
fn full_timeline() -> matrix_sdk::ruma::api::client::sync::sync_events::v3::Filter {
    use matrix_sdk::ruma::api::client::filter::FilterDefinition;
    let mut filter = FilterDefinition::default();
    filter.room.timeline.limit = Some(matrix_sdk::ruma::UInt::from(500u32));
    matrix_sdk::ruma::api::client::sync::sync_events::v3::Filter::FilterDefinition(filter)
}
