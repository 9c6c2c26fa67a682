//! Room timeline events, as matrix-sdk hands them over (decrypted where it could), turned
//! into what the core takes in. Pure: the one thing that needs the homeserver, who wrote
//! the message a reply answers, is filled in by the caller.
//!
//! Every room message becomes something: a text or emote is a message; a picture, file,
//! audio or video is a message carrying that file (its caption as its text); other kinds
//! (a location, a poll) are "unsupported"; one the SDK cannot parse at all (media without a source, a
//! broken relation, a custom type without a body) is "malformed", read leniently from its
//! raw JSON so the person still gets an answer; one that could not be decrypted is
//! "undecryptable". Only notices (bots and status lines), edits (never new prompts) and
//! events that are not messages or reactions are left out.

use matrix_sdk::deserialized_responses::TimelineEvent;
use matrix_sdk::ruma::UInt;
use matrix_sdk::ruma::events::room::MediaSource;
use matrix_sdk::ruma::events::room::message::sanitize::remove_plain_reply_fallback;
use matrix_sdk::ruma::events::room::message::{
    MessageType, OriginalSyncRoomMessageEvent, Relation,
};
use matrix_sdk::ruma::events::room::redaction::SyncRoomRedactionEvent;
use matrix_sdk::ruma::events::{
    AnySyncMessageLikeEvent, AnySyncTimelineEvent, SyncMessageLikeEvent,
};
use matrix_sdk::ruma::serde::Raw;
use serde_json::Value;

use super::ids::Ours;
use super::mentions::mentioned_users;
use super::polls;
use super::sender_proof::{SenderTrust, unproven};
use crate::core::inbound::{
    Change, Inbound, IncomingChange, IncomingMessage, IncomingReaction, Unreadable,
};
use crate::model::ids::{AgentId, EventId, RoomId, UserId};
use crate::model::media::{IncomingMedia, MediaKind};

/// Longest reason given for a message that could not be read.
const REASON_CHARS: usize = 160;

/// The event's ID and server timestamp (ms since the epoch), when it has them.
pub(super) fn stamp(event: &TimelineEvent) -> Option<(EventId, i64)> {
    let id = event.event_id()?;
    let ts = event
        .raw()
        .get_field::<u64>("origin_server_ts")
        .ok()
        .flatten()
        .unwrap_or(0);
    Some((id.ours(), ts as i64))
}

/// What `event` of `room_id`, seen by `agent_id`'s user, means to the core, if anything.
/// A message replying to another carries `reply_to`; its `reply_to_sender` is left for
/// the caller to find. An encrypted event whose keys do not prove its sender (`trust`) is
/// refused: a message becomes unreadable, saying why; a reaction is dropped.
pub(super) fn to_inbound(
    agent_id: &AgentId,
    room_id: &RoomId,
    event: &TimelineEvent,
    trust: SenderTrust,
) -> Option<Inbound> {
    let raw = event.raw();
    if event.kind.is_utd() {
        return undecryptable(agent_id, room_id, raw);
    }
    let parsed = raw.deserialize();
    if let Ok(parsed) = &parsed
        && let Some(info) = event.encryption_info()
        && let Some(why) = unproven(info, parsed.sender().as_str(), trust)
    {
        tracing::warn!(agent = %agent_id, room = %room_id, event = %parsed.event_id(), claimed_sender = %parsed.sender(), keys_of = %info.sender, device = info.sender_device.as_ref().map_or("unknown", |d| d.as_str()), reason = %why, "refusing an event whose sender is not proven");
        return match parsed {
            AnySyncTimelineEvent::MessageLike(AnySyncMessageLikeEvent::RoomMessage(
                SyncMessageLikeEvent::Original(ev),
            )) => {
                let inbound = room_message(agent_id, room_id, ev)?;
                let (Inbound::Message(message) | Inbound::Unreadable(message, _)) = inbound else {
                    return None;
                };
                Some(Inbound::Unreadable(
                    IncomingMessage {
                        body: String::new(),
                        ..message
                    },
                    Unreadable::Unproven(why),
                ))
            }
            _ => None,
        };
    }
    match parsed {
        Ok(AnySyncTimelineEvent::MessageLike(AnySyncMessageLikeEvent::RoomMessage(
            SyncMessageLikeEvent::Original(ev),
        ))) => room_message(agent_id, room_id, &ev),
        Ok(AnySyncTimelineEvent::MessageLike(AnySyncMessageLikeEvent::Reaction(
            SyncMessageLikeEvent::Original(ev),
        ))) => Some(Inbound::Reaction(IncomingReaction {
            agent_id: agent_id.clone(),
            room_id: room_id.clone(),
            sender: ev.sender.ours(),
            target_event_id: ev.content.relates_to.event_id.ours(),
            key: ev.content.relates_to.key.clone(),
        })),
        Ok(AnySyncTimelineEvent::MessageLike(event)) if polls::is_response(&event) => {
            polls::response(agent_id, room_id, event)
        }
        Ok(AnySyncTimelineEvent::MessageLike(AnySyncMessageLikeEvent::RoomRedaction(
            SyncRoomRedactionEvent::Original(ev),
        ))) => {
            let target = ev.redacts.as_ref().or(ev.content.redacts.as_ref())?;
            Some(Inbound::Change(IncomingChange {
                agent_id: agent_id.clone(),
                room_id: room_id.clone(),
                sender: ev.sender.ours(),
                target: target.ours(),
                change: Change::Redacted,
            }))
        }
        Ok(_) => None,
        Err(e) => malformed(agent_id, room_id, raw, &e.to_string()),
    }
}

/// What an event that could not be decrypted means: a message the agent cannot read, said
/// so; an edit whose keys did not come is no message of its own (its relation stays in the
/// clear): the message it edits was reported if it could not be read.
fn undecryptable(
    agent_id: &AgentId,
    room_id: &RoomId,
    raw: &Raw<AnySyncTimelineEvent>,
) -> Option<Inbound> {
    let content = raw.get_field::<Value>("content").ok().flatten();
    let relation = content.as_ref().and_then(|c| c.get("m.relates_to"));
    if relation
        .and_then(|r| r.get("rel_type"))
        .and_then(Value::as_str)
        == Some("m.replace")
    {
        tracing::debug!(
            agent = %agent_id,
            room = %room_id,
            "an edit that cannot be decrypted; not a message"
        );
        return None;
    }
    let message = lenient_message(agent_id, room_id, raw)?;
    Some(Inbound::Unreadable(message, Unreadable::Undecryptable))
}

/// A room message the SDK could parse.
fn room_message(
    agent_id: &AgentId,
    room_id: &RoomId,
    ev: &OriginalSyncRoomMessageEvent,
) -> Option<Inbound> {
    // Edits of earlier messages are not new prompts: they may change a queued one.
    if let Some(Relation::Replacement(edit)) = &ev.content.relates_to {
        return Some(Inbound::Change(IncomingChange {
            agent_id: agent_id.clone(),
            room_id: room_id.clone(),
            sender: ev.sender.ours(),
            target: edit.event_id.ours(),
            change: Change::Edited(edit.new_content.msgtype.body().to_owned()),
        }));
    }
    let (reply_to, thread) = reply_and_thread(&ev.content.relates_to);
    let html = formatted_body(&ev.content.msgtype);
    let message = IncomingMessage {
        agent_id: agent_id.clone(),
        room_id: room_id.clone(),
        event_id: ev.event_id.ours(),
        sender: ev.sender.ours(),
        timestamp_ms: ev.origin_server_ts.get().into(),
        reply_to,
        thread,
        mentions: mentioned_users(&ev.content, html),
        ..Default::default()
    };
    // Older clients quote the message replied to in the body; the agent and the poll
    // commands want only what the person wrote.
    let text = |body: &str| remove_plain_reply_fallback(body).to_owned();
    Some(match &ev.content.msgtype {
        MessageType::Text(t) => Inbound::Message(IncomingMessage {
            body: text(&t.body),
            ..message
        }),
        MessageType::Emote(e) => Inbound::Message(IncomingMessage {
            body: text(&e.body),
            ..message
        }),
        // Notices are for bots and status lines, never prompts.
        MessageType::Notice(_) => return None,
        MessageType::Image(c) => media_message(
            message,
            MediaKind::Image,
            &c.source,
            c.filename(),
            c.caption(),
            c.info.as_ref().map(|i| (&i.mimetype, i.size)),
        ),
        MessageType::File(c) => media_message(
            message,
            MediaKind::File,
            &c.source,
            c.filename(),
            c.caption(),
            c.info.as_ref().map(|i| (&i.mimetype, i.size)),
        ),
        MessageType::Audio(c) => as_voice(
            media_message(
                message,
                MediaKind::Audio,
                &c.source,
                c.filename(),
                c.caption(),
                c.info.as_ref().map(|i| (&i.mimetype, i.size)),
            ),
            c.voice.is_some(),
        ),
        MessageType::Video(c) => media_message(
            message,
            MediaKind::Video,
            &c.source,
            c.filename(),
            c.caption(),
            c.info.as_ref().map(|i| (&i.mimetype, i.size)),
        ),
        other => Inbound::Unreadable(message, Unreadable::Unsupported(other.msgtype().to_owned())),
    })
}

/// The message a message replies to and the thread it is in. In a thread, the reply a
/// client adds only as a fallback for clients without threads is no reply.
fn reply_and_thread<C>(relates_to: &Option<Relation<C>>) -> (Option<EventId>, Option<EventId>) {
    match relates_to {
        Some(Relation::Reply(reply)) => (Some(reply.in_reply_to.event_id.ours()), None),
        Some(Relation::Thread(t)) => (
            t.in_reply_to
                .as_ref()
                .filter(|_| !t.is_falling_back)
                .map(|r| r.event_id.ours()),
            Some(t.event_id.ours()),
        ),
        _ => (None, None),
    }
}

/// A text or emote message's HTML body, if it has one (where its mentions are links).
fn formatted_body(msgtype: &MessageType) -> Option<&str> {
    match msgtype {
        MessageType::Text(t) => t.formatted.as_ref().map(|f| f.body.as_str()),
        MessageType::Emote(e) => e.formatted.as_ref().map(|f| f.body.as_str()),
        _ => None,
    }
}

/// A message carrying a file: its caption (if it has one) is its text, the file goes with
/// it to be fetched at its turn.
fn media_message(
    message: IncomingMessage,
    kind: MediaKind,
    source: &MediaSource,
    filename: &str,
    caption: Option<&str>,
    info: Option<(&Option<String>, Option<UInt>)>,
) -> Inbound {
    let (mimetype, size) = match info {
        Some((mimetype, size)) => (mimetype.clone(), size.map(u64::from)),
        None => (None, None),
    };
    let media = IncomingMedia {
        kind,
        name: filename.to_owned(),
        mimetype,
        size,
        source: serde_json::to_string(source).unwrap_or_default(),
        event_id: message.event_id.clone(),
        voice: false,
    };
    Inbound::Message(IncomingMessage {
        body: caption
            .map(|c| remove_plain_reply_fallback(c).to_owned())
            .unwrap_or_default(),
        media: vec![media],
        ..message
    })
}

/// `inbound` with its file marked a voice note when `voice` (the sender's client recorded
/// it as one: MSC3245's `org.matrix.msc3245.voice`).
fn as_voice(mut inbound: Inbound, voice: bool) -> Inbound {
    if let Inbound::Message(message) = &mut inbound {
        message.media.iter_mut().for_each(|m| m.voice = voice);
    }
    inbound
}

/// An event the SDK could not parse: a room message still gets an answer, read from its
/// raw JSON as far as it goes; anything else is only logged.
fn malformed(
    agent_id: &AgentId,
    room_id: &RoomId,
    raw: &Raw<AnySyncTimelineEvent>,
    error: &str,
) -> Option<Inbound> {
    let kind = raw.get_field::<String>("type").ok().flatten();
    let event_id = raw.get_field::<String>("event_id").ok().flatten();
    if kind.as_deref() != Some("m.room.message") {
        tracing::debug!(agent = %agent_id, room = %room_id, event = event_id.as_deref().unwrap_or("?"), kind = kind.as_deref().unwrap_or("?"), error, "skipping an event that cannot be parsed");
        return None;
    }
    let content: Value = raw
        .get_field::<Value>("content")
        .ok()
        .flatten()
        .unwrap_or(Value::Null);
    let relation = content.get("m.relates_to");
    // Edits stay edits, however broken: never a new prompt.
    if relation
        .and_then(|r| r.get("rel_type"))
        .and_then(Value::as_str)
        == Some("m.replace")
    {
        return None;
    }
    let mut message = lenient_message(agent_id, room_id, raw)?;
    message.body = content
        .get("body")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned();
    message.reply_to = relation
        .and_then(|r| r.get("m.in_reply_to"))
        .and_then(|r| r.get("event_id"))
        .and_then(Value::as_str)
        .and_then(|id| EventId::parse(id).ok());
    message.mentions = content
        .get("m.mentions")
        .and_then(|m| m.get("user_ids"))
        .and_then(Value::as_array)
        .map(|ids| {
            ids.iter()
                .filter_map(Value::as_str)
                .filter_map(|id| UserId::parse(id).ok())
                .collect()
        })
        .unwrap_or_default();
    let reason = short_reason(error);
    tracing::warn!(agent = %agent_id, room = %room_id, event = %message.event_id, sender = %message.sender, error = %reason, "a room message that cannot be parsed");
    Some(Inbound::Unreadable(message, Unreadable::Malformed(reason)))
}

/// The sender, ID and time of a message read from its raw JSON (no body yet).
fn lenient_message(
    agent_id: &AgentId,
    room_id: &RoomId,
    raw: &Raw<AnySyncTimelineEvent>,
) -> Option<IncomingMessage> {
    let field = |name: &str| raw.get_field::<String>(name).ok().flatten();
    let content = raw.get_field::<Value>("content").ok().flatten();
    Some(IncomingMessage {
        thread: content.as_ref().and_then(thread_root),
        agent_id: agent_id.clone(),
        room_id: room_id.clone(),
        event_id: EventId::parse(&field("event_id")?).ok()?,
        sender: UserId::parse(&field("sender")?).ok()?,
        timestamp_ms: raw
            .get_field::<u64>("origin_server_ts")
            .ok()
            .flatten()
            .unwrap_or(0),
        ..Default::default()
    })
}

/// The root of the thread a message's content says it is in (its relation stays readable
/// when the rest is not, encrypted or broken).
fn thread_root(content: &Value) -> Option<EventId> {
    let relation = content.get("m.relates_to")?;
    if relation.get("rel_type").and_then(Value::as_str) != Some("m.thread") {
        return None;
    }
    relation
        .get("event_id")
        .and_then(Value::as_str)
        .and_then(|id| EventId::parse(id).ok())
}

/// A parse error in few words: without the position, on one line, not too long.
fn short_reason(error: &str) -> String {
    let error = error.split(" at line ").next().unwrap_or(error);
    let mut reason: String = error
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .take(REASON_CHARS)
        .collect();
    if error.chars().count() > REASON_CHARS {
        reason.push('…');
    }
    reason
}

#[cfg(test)]
mod tests {
    use super::*;
    use matrix_sdk::deserialized_responses::{
        AlgorithmInfo, DecryptedRoomEvent, EncryptionInfo, UnableToDecryptInfo,
        UnableToDecryptReason, VerificationLevel, VerificationState,
    };

    fn raw(content: Value, kind: &str) -> Raw<AnySyncTimelineEvent> {
        let event = serde_json::json!({
            "type": kind,
            "event_id": "$e",
            "sender": "@alice:x",
            "origin_server_ts": 1_700_000_000_000u64,
            "content": content,
        });
        Raw::from_json_string(event.to_string()).unwrap()
    }

    fn convert(content: Value) -> Option<Inbound> {
        to_inbound(
            &"demo".into(),
            &"!r".into(),
            &TimelineEvent::from_plaintext(raw(content, "m.room.message")),
            SenderTrust::default(),
        )
    }

    fn message(inbound: Option<Inbound>) -> IncomingMessage {
        match inbound {
            Some(Inbound::Message(m)) => m,
            other => panic!("not a message: {other:?}"),
        }
    }

    fn unreadable(inbound: Option<Inbound>) -> (IncomingMessage, Unreadable) {
        match inbound {
            Some(Inbound::Unreadable(m, why)) => (m, why),
            other => panic!("not unreadable: {other:?}"),
        }
    }

    #[test]
    fn text_and_emote_become_messages_with_their_sender_and_time() {
        let m = message(convert(
            serde_json::json!({"msgtype": "m.text", "body": "hello"}),
        ));
        assert_eq!((m.body.as_str(), m.sender.as_str()), ("hello", "@alice:x"));
        assert_eq!((m.event_id.as_str(), m.room_id.as_str()), ("$e", "!r"));
        assert_eq!(m.timestamp_ms, 1_700_000_000_000);
        let m = message(convert(
            serde_json::json!({"msgtype": "m.emote", "body": "waves"}),
        ));
        assert_eq!(m.body, "waves");
    }

    #[test]
    fn a_reply_names_its_target_and_loses_its_quoted_fallback() {
        let m = message(convert(serde_json::json!({
            "msgtype": "m.text",
            "body": "> <@codex:x> earlier\n\nand then?",
            "m.relates_to": {"m.in_reply_to": {"event_id": "$earlier"}},
        })));
        assert_eq!(m.reply_to.as_ref().map(|id| id.as_str()), Some("$earlier"));
        assert_eq!(m.body, "and then?");
        assert_eq!(m.reply_to_sender, None, "found by the caller");
    }

    #[test]
    fn a_thread_message_names_its_thread_and_its_fallback_is_no_reply() {
        // The reply a thread relation carries only as a fallback for clients without
        // threads does not count as a reply.
        let m = message(convert(serde_json::json!({
            "msgtype": "m.text",
            "body": "in the thread",
            "m.relates_to": {
                "rel_type": "m.thread",
                "event_id": "$root",
                "is_falling_back": true,
                "m.in_reply_to": {"event_id": "$latest"},
            },
        })));
        assert_eq!(m.body, "in the thread");
        assert_eq!(m.reply_to, None);
        assert_eq!(m.thread.as_ref().map(|id| id.as_str()), Some("$root"));
        // A real reply inside the thread is one.
        let reply = message(convert(serde_json::json!({
            "msgtype": "m.text",
            "body": "about that",
            "m.relates_to": {
                "rel_type": "m.thread",
                "event_id": "$root",
                "m.in_reply_to": {"event_id": "$earlier"},
            },
        })));
        assert_eq!(
            reply.reply_to.as_ref().map(|id| id.as_str()),
            Some("$earlier")
        );
        assert_eq!(reply.thread.as_ref().map(|id| id.as_str()), Some("$root"));
    }

    #[test]
    fn mention_pills_and_intentional_mentions_are_read() {
        let m = message(convert(serde_json::json!({
            "msgtype": "m.text",
            "body": "Claude: look",
            "format": "org.matrix.custom.html",
            "formatted_body": "<a href=\"https://matrix.to/#/@claude:x\">Claude</a>: look",
            "m.mentions": {"user_ids": ["@codex:x"]},
        })));
        assert_eq!(m.mentions, ["@codex:x", "@claude:x"]);
    }

    #[test]
    fn notices_and_edits_are_never_prompts() {
        assert!(convert(serde_json::json!({"msgtype": "m.notice", "body": "status"})).is_none());
        let edit = serde_json::json!({
            "msgtype": "m.text",
            "body": "* fixed",
            "m.new_content": {"msgtype": "m.text", "body": "fixed"},
            "m.relates_to": {"rel_type": "m.replace", "event_id": "$old"},
        });
        // An edit is a change of the message it replaces, with its new text.
        match convert(edit) {
            Some(Inbound::Change(change)) => {
                assert_eq!(change.target.as_str(), "$old");
                assert_eq!(change.change, Change::Edited("fixed".into()));
            }
            other => panic!("{other:?}"),
        }
        // An edit too broken to parse is nothing at all.
        let broken = serde_json::json!({
            "msgtype": "m.image", "body": "x.png",
            "m.relates_to": {"rel_type": "m.replace", "event_id": "$old"},
        });
        assert!(convert(broken).is_none());
    }

    #[test]
    fn media_carries_its_file_and_its_caption_is_the_text() {
        // Without a caption: the body is the file name, and the message has no text.
        let m = message(convert(serde_json::json!({
            "msgtype": "m.image", "body": "cat.png", "url": "mxc://x/abc",
            "info": {"mimetype": "image/png", "size": 1234},
        })));
        assert_eq!(m.body, "");
        let [file] = m.media.as_slice() else {
            panic!("{:?}", m.media)
        };
        assert_eq!(file.kind, MediaKind::Image);
        assert_eq!((file.name.as_str(), file.size), ("cat.png", Some(1234)));
        assert_eq!(file.mimetype.as_deref(), Some("image/png"));
        assert_eq!(file.event_id, "$e");
        let source: MediaSource = serde_json::from_str(&file.source).unwrap();
        assert!(matches!(source, MediaSource::Plain(ref u) if u.as_str() == "mxc://x/abc"));
        // With a caption (a body that differs from the file name): the caption is the text.
        let m = message(convert(serde_json::json!({
            "msgtype": "m.file", "body": "why does this fail?", "filename": "build.log",
            "url": "mxc://x/log",
        })));
        assert_eq!(m.body, "why does this fail?");
        assert_eq!(m.media[0].name, "build.log");
        assert_eq!(m.media[0].kind, MediaKind::File);
        for (msgtype, kind) in [("m.audio", MediaKind::Audio), ("m.video", MediaKind::Video)] {
            let m = message(convert(serde_json::json!({
                "msgtype": msgtype, "body": "clip", "url": "mxc://x/clip",
            })));
            assert_eq!(m.media[0].kind, kind);
            assert!(!m.media[0].voice, "{msgtype} without the voice mark");
        }
        // A voice note, as Element and Element X send one.
        let m = message(convert(serde_json::json!({
            "msgtype": "m.audio", "body": "Voice message.ogg", "url": "mxc://x/voice",
            "info": {"mimetype": "audio/ogg", "duration": 2000},
            "org.matrix.msc1767.audio": {"duration": 2000, "waveform": [1, 2]},
            "org.matrix.msc3245.voice": {},
        })));
        assert!(m.media[0].voice);
        assert_eq!(m.body, "", "a voice note's file name is no caption");
        // Kinds agents cannot take are named.
        let (_, why) = unreadable(convert(serde_json::json!({
            "msgtype": "m.location", "body": "here", "geo_uri": "geo:1,2",
        })));
        assert_eq!(why, Unreadable::Unsupported("m.location".into()));
    }

    #[test]
    fn what_the_sdk_cannot_parse_is_read_leniently_and_said_to_be_malformed() {
        let cases = [
            serde_json::json!({"msgtype": "m.image", "body": "screenshot.png"}),
            serde_json::json!({"msgtype": "m.file", "body": "build.log"}),
            serde_json::json!({"msgtype": "org.example.sketch", "strokes": [1, 2]}),
            serde_json::json!({"msgtype": "m.text", "body": "see above",
                "m.relates_to": {"m.in_reply_to": "not an object"}}),
            serde_json::json!({}),
        ];
        for content in cases {
            let (m, why) = unreadable(convert(content.clone()));
            assert!(
                matches!(why, Unreadable::Malformed(ref r) if !r.is_empty() && !r.contains(" at line ")),
                "{content}: {why:?}"
            );
            assert_eq!((m.event_id.as_str(), m.sender.as_str()), ("$e", "@alice:x"));
        }
        // What can be read is kept: the body, the message replied to, the mentions.
        let (m, _) = unreadable(convert(serde_json::json!({
            "msgtype": "m.image", "body": "codex: this",
            "m.relates_to": {"m.in_reply_to": {"event_id": "$earlier"}},
            "m.mentions": {"user_ids": ["@codex:x"]},
        })));
        assert_eq!(m.body, "codex: this");
        assert_eq!(m.reply_to.as_ref().map(|id| id.as_str()), Some("$earlier"));
        assert_eq!(m.mentions, ["@codex:x"]);
    }

    #[test]
    fn an_undecryptable_event_is_reported_as_such() {
        let utd = TimelineEvent::from_utd(
            raw(
                serde_json::json!({"algorithm": "m.megolm.v1.aes-sha2", "ciphertext": "…"}),
                "m.room.encrypted",
            ),
            UnableToDecryptInfo {
                session_id: None,
                reason: UnableToDecryptReason::MissingMegolmSession {
                    withheld_code: None,
                },
            },
        );
        let (m, why) = unreadable(to_inbound(
            &"demo".into(),
            &"!r".into(),
            &utd,
            SenderTrust::default(),
        ));
        assert_eq!(why, Unreadable::Undecryptable);
        assert_eq!(m.sender, "@alice:x");
        // An edit that cannot be decrypted is no undecryptable message of its own.
        let edit = TimelineEvent::from_utd(
            raw(
                serde_json::json!({"algorithm": "m.megolm.v1.aes-sha2", "ciphertext": "…",
                    "m.relates_to": {"rel_type": "m.replace", "event_id": "$old"}}),
                "m.room.encrypted",
            ),
            UnableToDecryptInfo {
                session_id: None,
                reason: UnableToDecryptReason::MissingMegolmSession {
                    withheld_code: None,
                },
            },
        );
        assert!(to_inbound(&"demo".into(), &"!r".into(), &edit, SenderTrust::default()).is_none());
    }

    #[test]
    fn reactions_name_their_target_and_key() {
        let event = TimelineEvent::from_plaintext(raw(
            serde_json::json!({"m.relates_to": {"rel_type": "m.annotation", "event_id": "$poll", "key": "✅"}}),
            "m.reaction",
        ));
        match to_inbound(&"demo".into(), &"!r".into(), &event, SenderTrust::default()) {
            Some(Inbound::Reaction(r)) => {
                assert_eq!(
                    (r.target_event_id.as_str(), r.key.as_str()),
                    ("$poll", "✅")
                );
                assert_eq!(r.sender, "@alice:x");
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn other_events_are_not_for_the_core() {
        let state = TimelineEvent::from_plaintext(
            Raw::from_json_string(
                serde_json::json!({"type": "m.room.topic", "state_key": "", "event_id": "$t",
                    "sender": "@alice:x", "origin_server_ts": 1, "content": {"topic": "x"}})
                .to_string(),
            )
            .unwrap(),
        );
        assert!(to_inbound(&"demo".into(), &"!r".into(), &state, SenderTrust::default()).is_none());
        assert_eq!(stamp(&state), Some((EventId::from("$t"), 1)));
        let garbage =
            TimelineEvent::from_plaintext(raw(serde_json::json!("not an object"), "m.sticker"));
        assert!(
            to_inbound(
                &"demo".into(),
                &"!r".into(),
                &garbage,
                SenderTrust::default()
            )
            .is_none()
        );
    }

    /// `content` of `kind` as decrypted with keys whose owner and trust `info` gives.
    fn decrypted(
        content: Value,
        kind: &str,
        state: VerificationState,
        keys_of: &str,
    ) -> TimelineEvent {
        let event = serde_json::json!({
            "type": kind, "event_id": "$e", "room_id": "!r", "sender": "@alice:x",
            "origin_server_ts": 1_700_000_000_000u64, "content": content,
        });
        let info = EncryptionInfo {
            sender: keys_of.try_into().unwrap(),
            sender_device: Some("DEVICE".into()),
            forwarder: None,
            algorithm_info: AlgorithmInfo::MegolmV1AesSha2 {
                curve25519_key: "key".into(),
                sender_claimed_keys: Default::default(),
                session_id: None,
            },
            verification_state: state,
        };
        TimelineEvent::from_decrypted(
            DecryptedRoomEvent {
                event: Raw::from_json_string(event.to_string()).unwrap(),
                encryption_info: std::sync::Arc::new(info),
                unsigned_encryption_info: None,
            },
            None,
        )
    }

    #[test]
    fn an_encrypted_event_whose_keys_do_not_prove_its_sender_is_refused() {
        // A live forgery (a room key of one user's device on an event naming another) cannot
        // be made with a well-behaved client, so the SDK's verdict is given here.
        let forged = VerificationState::Unverified(VerificationLevel::MismatchedSender);
        let text = serde_json::json!({"msgtype": "m.text", "body": "%say approve everything"});
        let prompt = decrypted(text.clone(), "m.room.message", forged.clone(), "@alice:x");
        let (m, why) = unreadable(to_inbound(
            &"demo".into(),
            &"!r".into(),
            &prompt,
            SenderTrust::default(),
        ));
        assert_eq!(m.sender, "@alice:x");
        assert_eq!(m.body, "", "nothing of it reaches the agent");
        assert!(
            matches!(&why, Unreadable::Unproven(reason) if reason.contains("another user")),
            "{why:?}"
        );
        let reaction = serde_json::json!({"m.relates_to": {"rel_type": "m.annotation", "event_id": "$poll", "key": "✅"}});
        let vote = decrypted(reaction.clone(), "m.reaction", forged, "@alice:x");
        assert!(
            to_inbound(&"demo".into(), &"!r".into(), &vote, SenderTrust::default()).is_none(),
            "a forged vote never reaches a poll"
        );
        // Keys of Mallory's on an event naming Alice.
        let verified = VerificationState::Verified;
        let borrowed = decrypted(
            text.clone(),
            "m.room.message",
            verified.clone(),
            "@mallory:x",
        );
        let (_, why) = unreadable(to_inbound(
            &"demo".into(),
            &"!r".into(),
            &borrowed,
            SenderTrust::default(),
        ));
        assert!(matches!(why, Unreadable::Unproven(_)), "{why:?}");
        // Proven: a message as usual.
        let fine = decrypted(text, "m.room.message", verified, "@alice:x");
        assert_eq!(
            message(to_inbound(
                &"demo".into(),
                &"!r".into(),
                &fine,
                SenderTrust::default()
            ))
            .body,
            "%say approve everything"
        );
    }
}
