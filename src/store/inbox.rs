//! Admission and the inputs waiting to be settled: the durable side of every channel's queue.
//!
//! An input is admitted once per agent (`handled_events`, unique per event and agent) and,
//! in the same transaction, written to `pending_inputs` with its order. The channel's
//! in-memory queue is a cache of those rows: a prompt's row goes when its turn begins (see
//! [`Store::begin_turn`]), a command's once it was carried out. What is left at start-up was
//! admitted by a run that stopped first.

use super::{Store, StoreError, now_ms};
use crate::model::ids::{AgentId, ConversationKey, EventId, RoomId, UserId};
use crate::model::media::IncomingMedia;

/// What kind of input waits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PendingKind {
    /// A prompt: run at the next start if it never began.
    Prompt,
    /// A chat command: reported at the next start if it was never carried out (its meaning
    /// depends on the moment: a `!stop` for a turn that no longer runs).
    Command,
    /// A prompt whose turn a crash cut, to run once more (`continuity.rerun_interrupted`);
    /// it goes before everything else that waits.
    Rerun,
}

impl PendingKind {
    fn as_str(self) -> &'static str {
        match self {
            PendingKind::Prompt => "prompt",
            PendingKind::Command => "command",
            PendingKind::Rerun => "rerun",
        }
    }

    fn parse(word: &str) -> Self {
        match word {
            "command" => PendingKind::Command,
            "rerun" => PendingKind::Rerun,
            _ => PendingKind::Prompt,
        }
    }
}

/// One admitted input that is not settled yet.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PendingInput {
    /// Its room.
    pub room_id: RoomId,
    /// The root of its thread, for an input of a thread's conversation.
    pub thread: Option<EventId>,
    /// The agent it is for.
    pub agent_id: AgentId,
    /// The message carrying it (for a hand-off: the answer handed on).
    pub event_id: EventId,
    /// Prompt or command.
    pub kind: PendingKind,
    /// Who sent it.
    pub sender: UserId,
    /// The text, as the agent gets it.
    pub body: String,
    /// The message it replies to, if any.
    pub reply_to: Option<EventId>,
    /// The message's server timestamp (ms since the epoch).
    pub sent_at: i64,
    /// The ⏳ reaction put on it while it waited, to take back when its turn starts.
    pub queued_reaction: Option<EventId>,
    /// The files that go with it (fetched at its turn).
    pub media: Vec<IncomingMedia>,
}

type PendingRow = (
    RoomId,
    AgentId,
    EventId,
    String,
    UserId,
    String,
    Option<EventId>,
    i64,
    Option<EventId>,
    String,
    Option<String>,
);

impl Store {
    /// Records that `agent_id` took in `event_id`, and, when given, the input it carries as
    /// pending, in one transaction. Returns `false` when the event was taken in before: the
    /// caller must then not act on it again.
    pub async fn admit(
        &self,
        event_id: &EventId,
        conversation: &ConversationKey,
        pending: Option<&PendingInput>,
    ) -> Result<bool, StoreError> {
        let (room_id, agent_id) = (conversation.room.as_str(), conversation.agent.as_str());
        let mut tx = self.pool.begin().await?;
        let done = sqlx::query(
            "INSERT INTO handled_events (event_id, agent_id, room_id, handled_at) VALUES ($1, $2, $3, $4)
             ON CONFLICT DO NOTHING",
        )
        .bind(event_id.as_str())
        .bind(agent_id)
        .bind(room_id)
        .bind(now_ms())
        .execute(&mut *tx)
        .await?;
        if done.rows_affected() == 0 {
            return Ok(false);
        }
        if let Some(p) = pending {
            insert_pending(&mut tx, p).await?;
        }
        tx.commit().await?;
        Ok(true)
    }

    /// Forgets that `agent` took in `event`, so it can be taken in again: only for a message
    /// taken in as undecryptable whose room key arrived since.
    pub async fn unmark_handled(&self, agent: &AgentId, event: &EventId) -> Result<(), StoreError> {
        sqlx::query("DELETE FROM handled_events WHERE event_id = $1 AND agent_id = $2")
            .bind(event.as_str())
            .bind(agent.as_str())
            .execute(&self.pool)
            .await?;
        Ok(())
    }

    /// Whether `agent` has taken in `event` already.
    pub async fn is_handled(&self, agent: &AgentId, event: &EventId) -> Result<bool, StoreError> {
        let row: Option<(i64,)> =
            sqlx::query_as("SELECT 1 FROM handled_events WHERE event_id = $1 AND agent_id = $2")
                .bind(event.as_str())
                .bind(agent.as_str())
                .fetch_optional(&self.pool)
                .await?;
        Ok(row.is_some())
    }

    /// Remembers the ⏳ reaction put on a waiting input.
    pub async fn set_queued_reaction(
        &self,
        agent: &AgentId,
        event: &EventId,
        reaction: &EventId,
    ) -> Result<(), StoreError> {
        sqlx::query(
            "UPDATE pending_inputs SET queued_reaction = $1 WHERE agent_id = $2 AND event_id = $3",
        )
        .bind(reaction)
        .bind(agent.as_str())
        .bind(event.as_str())
        .execute(&self.pool)
        .await?;
        Ok(())
    }

    /// The waiting input `event` of `agent` was edited: it runs with `body`.
    pub async fn update_pending_body(
        &self,
        agent: &AgentId,
        event: &EventId,
        body: &str,
    ) -> Result<(), StoreError> {
        sqlx::query("UPDATE pending_inputs SET body = $1 WHERE agent_id = $2 AND event_id = $3")
            .bind(body)
            .bind(agent.as_str())
            .bind(event.as_str())
            .execute(&self.pool)
            .await?;
        Ok(())
    }

    /// Puts `pending` back among the waiting inputs (a prompt to run again, with the text
    /// it now has).
    pub async fn requeue(&self, pending: &PendingInput) -> Result<(), StoreError> {
        let mut tx = self.pool.begin().await?;
        insert_pending(&mut tx, pending).await?;
        tx.commit().await?;
        Ok(())
    }

    /// The waiting input `event` of `agent` goes with `media` (files its sender sent just
    /// before it, without a question).
    pub async fn set_pending_media(
        &self,
        agent: &AgentId,
        event: &EventId,
        media: &[IncomingMedia],
    ) -> Result<(), StoreError> {
        sqlx::query("UPDATE pending_inputs SET media = $1 WHERE agent_id = $2 AND event_id = $3")
            .bind(media_column(media))
            .bind(agent.as_str())
            .bind(event.as_str())
            .execute(&self.pool)
            .await?;
        Ok(())
    }

    /// The input `event` of `agent` is settled (carried out, answered otherwise, or given
    /// up on purpose): it no longer waits.
    pub async fn settle(&self, agent: &AgentId, event: &EventId) -> Result<(), StoreError> {
        sqlx::query("DELETE FROM pending_inputs WHERE agent_id = $1 AND event_id = $2")
            .bind(agent.as_str())
            .bind(event.as_str())
            .execute(&self.pool)
            .await?;
        Ok(())
    }

    /// The inputs of `agent` still waiting: re-runs first, then in the order they were
    /// admitted.
    pub async fn pending_inputs(&self, agent: &AgentId) -> Result<Vec<PendingInput>, StoreError> {
        let rows: Vec<PendingRow> = sqlx::query_as(
            "SELECT room_id, agent_id, event_id, kind, sender, body, reply_to, sent_at, queued_reaction,
             thread_id, media FROM pending_inputs WHERE agent_id = $1 ORDER BY kind <> 'rerun', id",
        )
        .bind(agent.as_str())
        .fetch_all(&self.pool)
        .await?;
        Ok(rows
            .into_iter()
            .map(
                |(
                    room_id,
                    agent_id,
                    event_id,
                    kind,
                    sender,
                    body,
                    reply_to,
                    sent_at,
                    reaction,
                    thread,
                    media,
                )| {
                    PendingInput {
                        room_id,
                        thread: super::thread_of(thread),
                        agent_id,
                        event_id,
                        kind: PendingKind::parse(&kind),
                        sender,
                        body,
                        reply_to,
                        sent_at,
                        queued_reaction: reaction,
                        media: media_of(media.as_deref()),
                    }
                },
            )
            .collect())
    }
}

/// The `media` column for `media`: JSON, or nothing when there are none.
fn media_column(media: &[IncomingMedia]) -> Option<String> {
    (!media.is_empty()).then(|| serde_json::to_string(media).unwrap_or_default())
}

/// The files a `media` column holds (none when it cannot be read: the text still runs).
fn media_of(column: Option<&str>) -> Vec<IncomingMedia> {
    column
        .and_then(|json| serde_json::from_str(json).ok())
        .unwrap_or_default()
}

/// Writes `p` as waiting, within `tx` (nothing if it waits already).
pub(super) async fn insert_pending(
    tx: &mut sqlx::Transaction<'_, sqlx::Any>,
    p: &PendingInput,
) -> Result<(), StoreError> {
    sqlx::query(
        "INSERT INTO pending_inputs
         (room_id, agent_id, event_id, kind, sender, body, reply_to, sent_at, queued_reaction,
          admitted_at, thread_id, media)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)
             ON CONFLICT DO NOTHING",
    )
    .bind(p.room_id.as_str())
    .bind(p.agent_id.as_str())
    .bind(p.event_id.as_str())
    .bind(p.kind.as_str())
    .bind(p.sender.as_str())
    .bind(&p.body)
    .bind(p.reply_to.as_ref().map(EventId::as_str))
    .bind(p.sent_at)
    .bind(&p.queued_reaction)
    .bind(now_ms())
    .bind(super::thread_column(p.thread.as_ref()))
    .bind(media_column(&p.media))
    .execute(&mut **tx)
    .await?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn prompt(event_id: &str, body: &str) -> PendingInput {
        PendingInput {
            room_id: "!r".into(),
            thread: None,
            agent_id: "a".into(),
            event_id: event_id.into(),
            kind: PendingKind::Prompt,
            sender: "@p:x".into(),
            body: body.into(),
            reply_to: None,
            sent_at: 1,
            queued_reaction: None,
            media: Vec::new(),
        }
    }

    #[tokio::test]
    async fn the_files_of_a_waiting_prompt_are_kept_for_a_restart() {
        use crate::model::media::MediaKind;
        let key = ConversationKey::new("!r", "a");
        let store = Store::in_memory().await.unwrap();
        let file = |name: &str| IncomingMedia {
            kind: MediaKind::Image,
            name: name.into(),
            mimetype: Some("image/png".into()),
            size: Some(12),
            source: "{\"url\":\"mxc://x/y\"}".into(),
            event_id: "$pic".into(),
            voice: false,
        };
        let with_picture = PendingInput {
            media: vec![file("a.png")],
            ..prompt("$1", "look")
        };
        store
            .admit(&EventId::from("$1"), &key, Some(&with_picture))
            .await
            .unwrap();
        store
            .admit(&EventId::from("$2"), &key, Some(&prompt("$2", "and?")))
            .await
            .unwrap();
        // A question takes the pictures its sender left waiting.
        store
            .set_pending_media(
                &key.agent,
                &EventId::from("$2"),
                &[file("a.png"), file("b.png")],
            )
            .await
            .unwrap();
        let waiting = store.pending_inputs(&key.agent).await.unwrap();
        assert_eq!(waiting[0].media, [file("a.png")]);
        assert_eq!(waiting[1].media, [file("a.png"), file("b.png")]);
        // Put back after a turn began (an edited prompt run again), files and all.
        store
            .begin_turn(&key, &EventId::from("$1"), false)
            .await
            .unwrap();
        store.requeue(&with_picture).await.unwrap();
        let waiting = store.pending_inputs(&key.agent).await.unwrap();
        assert!(
            waiting
                .iter()
                .any(|p| p.event_id == "$1" && p.media == [file("a.png")])
        );
    }

    #[tokio::test]
    async fn an_input_is_admitted_once_and_waits_in_order_until_settled() {
        let key = ConversationKey::new("!r", "a");
        let other = AgentId::from("b");
        let store = Store::in_memory().await.unwrap();
        for (id, body) in [("$2", "second"), ("$1", "first"), ("$3", "third")] {
            assert!(
                store
                    .admit(&EventId::from(id), &key, Some(&prompt(id, body)))
                    .await
                    .unwrap()
            );
        }
        // Admitted again (a sync replayed, a catch-up overlapping): refused, nothing added.
        assert!(
            !store
                .admit(&EventId::from("$1"), &key, Some(&prompt("$1", "again")))
                .await
                .unwrap()
        );
        assert!(
            store
                .is_handled(&key.agent, &EventId::from("$1"))
                .await
                .unwrap()
        );
        assert!(
            !store
                .is_handled(&other, &EventId::from("$1"))
                .await
                .unwrap()
        );
        store
            .set_queued_reaction(&key.agent, &EventId::from("$3"), &EventId::from("$r3"))
            .await
            .unwrap();
        store
            .settle(&key.agent, &EventId::from("$1"))
            .await
            .unwrap();
        // A re-run queued later still goes first.
        let rerun = PendingInput {
            kind: PendingKind::Rerun,
            ..prompt("$0", "cut")
        };
        store.end_turn(&key, None, Some(&rerun), &[]).await.unwrap();
        let waiting = store.pending_inputs(&key.agent).await.unwrap();
        let bodies: Vec<&str> = waiting.iter().map(|p| p.body.as_str()).collect();
        assert_eq!(
            bodies,
            ["cut", "second", "third"],
            "re-run, then admission order"
        );
        assert_eq!(waiting[2].queued_reaction, Some(EventId::from("$r3")));
        assert!(store.pending_inputs(&other).await.unwrap().is_empty());
    }

    #[tokio::test]
    async fn an_event_admitted_without_an_input_waits_for_nothing() {
        let key = ConversationKey::new("!r", "a");
        let store = Store::in_memory().await.unwrap();
        assert!(store.admit(&EventId::from("$1"), &key, None).await.unwrap());
        assert!(store.pending_inputs(&key.agent).await.unwrap().is_empty());
        assert!(!store.admit(&EventId::from("$1"), &key, None).await.unwrap());
    }
}
