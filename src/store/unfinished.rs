//! Turns in progress and what their messages should show if the turn is cut, so a start
//! after a crash can mark what the previous run left unfinished.

use super::columns::Flag;
use super::{PendingInput, Store, StoreError, TranscriptLine, now_ms};
use crate::model::ids::{AgentId, ConversationKey, EventId, RoomId, UserId};

/// A message of an unfinished turn and the content it should show once the turn is cut.
#[derive(Debug, Clone, PartialEq, Eq, sqlx::FromRow)]
pub struct CutMessage {
    /// The message, once the homeserver confirmed it.
    pub event_id: Option<EventId>,
    /// The transaction ID it was sent with, while its event ID is not known: sending again
    /// under the same ID gets the event the homeserver already has (or posts it now).
    pub txn_id: Option<String>,
    /// `reply` or `card`.
    pub kind: String,
    /// Plain text to show.
    pub body: String,
    /// HTML to show.
    pub html: Option<String>,
    /// Whether it is an `m.notice`.
    #[sqlx(try_from = "Flag")]
    pub notice: bool,
}

/// A turn the previous run did not finish.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnfinishedTurn {
    /// Its room.
    pub room_id: RoomId,
    /// Its thread's root, for a turn of a thread's conversation.
    pub thread: Option<EventId>,
    /// The prompt it was answering.
    pub prompt_event_id: EventId,
    /// Whether it was already the re-run of a prompt a crash had cut.
    pub rerun: bool,
    /// The answer text it had received (empty when none).
    pub reply_text: String,
    /// The messages it had posted.
    pub messages: Vec<CutMessage>,
}

impl Store {
    /// Records that (room, agent) started answering `prompt_event` (`rerun`: again,
    /// after a crash had cut its first run). In the same transaction the prompt stops
    /// waiting (`pending_inputs`): from now on a crash marks the turn as cut instead of
    /// running the prompt again.
    pub async fn begin_turn(
        &self,
        conversation: &ConversationKey,
        prompt_event: &EventId,
        rerun: bool,
    ) -> Result<(), StoreError> {
        let (room_id, agent_id) = (conversation.room.as_str(), conversation.agent.as_str());
        let mut tx = self.pool.begin().await?;
        sqlx::query(
            "INSERT INTO unfinished_turns
             (room_id, agent_id, prompt_event_id, started_at, rerun, thread_id)
             VALUES ($1, $2, $3, $4, $5, $6)
             ON CONFLICT (room_id, agent_id, thread_id) DO UPDATE SET
             prompt_event_id = excluded.prompt_event_id, started_at = excluded.started_at,
             rerun = excluded.rerun, reply_text = ''",
        )
        .bind(room_id)
        .bind(agent_id)
        .bind(prompt_event.as_str())
        .bind(now_ms())
        .bind(Flag(rerun))
        .bind(conversation.thread_id())
        .execute(&mut *tx)
        .await?;
        sqlx::query("DELETE FROM pending_inputs WHERE agent_id = $1 AND event_id = $2")
            .bind(agent_id)
            .bind(prompt_event.as_str())
            .execute(&mut *tx)
            .await?;
        tx.commit().await?;
        Ok(())
    }

    /// Records, before a message of the running turn of (room, agent) is sent with
    /// transaction ID `txn_id`, what it should show if the turn is cut before the send is
    /// confirmed (see [`Store::confirm_cut_message`]).
    pub async fn intend_cut_message(
        &self,
        conversation: &ConversationKey,
        txn_id: &str,
        message: &CutMessage,
    ) -> Result<(), StoreError> {
        let (room_id, agent_id) = (conversation.room.as_str(), conversation.agent.as_str());
        sqlx::query(
            "INSERT INTO unfinished_messages
             (txn_id, room_id, agent_id, kind, body, html, notice, thread_id)
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
             ON CONFLICT (txn_id) DO UPDATE SET room_id = excluded.room_id,
             agent_id = excluded.agent_id, kind = excluded.kind, body = excluded.body,
             html = excluded.html, notice = excluded.notice, thread_id = excluded.thread_id",
        )
        .bind(txn_id)
        .bind(room_id)
        .bind(agent_id)
        .bind(&message.kind)
        .bind(&message.body)
        .bind(&message.html)
        .bind(Flag(message.notice))
        .bind(conversation.thread_id())
        .execute(&self.pool)
        .await?;
        Ok(())
    }

    /// The send made with `txn_id` was confirmed as `event_id`.
    pub async fn confirm_cut_message(
        &self,
        txn_id: &str,
        event_id: &EventId,
    ) -> Result<(), StoreError> {
        sqlx::query(
            "UPDATE unfinished_messages SET event_id = $1, txn_id = NULL WHERE txn_id = $2",
        )
        .bind(event_id)
        .bind(txn_id)
        .execute(&self.pool)
        .await?;
        Ok(())
    }

    /// Records what the posted message `message.event_id` should show if the running turn
    /// of (room, agent) is cut.
    pub async fn save_cut_message(
        &self,
        conversation: &ConversationKey,
        message: &CutMessage,
    ) -> Result<(), StoreError> {
        let (room_id, agent_id) = (conversation.room.as_str(), conversation.agent.as_str());
        sqlx::query(
            "INSERT INTO unfinished_messages
             (event_id, room_id, agent_id, kind, body, html, notice, thread_id)
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
             ON CONFLICT (event_id) DO UPDATE SET kind = excluded.kind, body = excluded.body,
             html = excluded.html, notice = excluded.notice",
        )
        .bind(&message.event_id)
        .bind(room_id)
        .bind(agent_id)
        .bind(&message.kind)
        .bind(&message.body)
        .bind(&message.html)
        .bind(Flag(message.notice))
        .bind(conversation.thread_id())
        .execute(&self.pool)
        .await?;
        Ok(())
    }

    /// Appends `more` to the answer text the running turn of (room, agent) has received
    /// so far: only what is new is written, however long the answer grows.
    pub async fn append_reply_text(
        &self,
        conversation: &ConversationKey,
        more: &str,
    ) -> Result<(), StoreError> {
        let (room_id, agent_id) = (conversation.room.as_str(), conversation.agent.as_str());
        sqlx::query(
            "UPDATE unfinished_turns SET reply_text = reply_text || $1
             WHERE room_id = $2 AND agent_id = $3 AND thread_id = $4",
        )
        .bind(more)
        .bind(room_id)
        .bind(agent_id)
        .bind(conversation.thread_id())
        .execute(&self.pool)
        .await?;
        Ok(())
    }

    /// Forgets the turn of (room, agent) and its messages (it ended, or was marked as cut),
    /// records `reply` in the transcript, queues `rerun` (its prompt, to run again) and
    /// settles the inputs `answered` besides its prompt (messages steered into it), all in
    /// one transaction: a crash leaves either the unfinished turn, with those inputs still
    /// waiting, or what replaced it.
    pub async fn end_turn(
        &self,
        conversation: &ConversationKey,
        reply: Option<TranscriptLine<'_>>,
        rerun: Option<&PendingInput>,
        answered: &[EventId],
    ) -> Result<(), StoreError> {
        let (room_id, agent_id) = (conversation.room.as_str(), conversation.agent.as_str());
        let thread_id = conversation.thread_id();
        let mut tx = self.pool.begin().await?;
        for delete in [
            "DELETE FROM unfinished_messages WHERE room_id = $1 AND agent_id = $2 AND thread_id = $3",
            "DELETE FROM unfinished_turns WHERE room_id = $1 AND agent_id = $2 AND thread_id = $3",
        ] {
            sqlx::query(delete)
                .bind(room_id)
                .bind(agent_id)
                .bind(thread_id)
                .execute(&mut *tx)
                .await?;
        }
        if let Some(line) = reply {
            super::insert_transcript(&mut *tx, conversation, &line).await?;
        }
        if let Some(pending) = rerun {
            super::inbox::insert_pending(&mut tx, pending).await?;
        }
        for event in answered {
            sqlx::query("DELETE FROM pending_inputs WHERE agent_id = $1 AND event_id = $2")
                .bind(agent_id)
                .bind(event.as_str())
                .execute(&mut *tx)
                .await?;
        }
        tx.commit().await?;
        Ok(())
    }

    /// The prompt `event_id` of (room, agent) as the transcript recorded it: its sender
    /// and text (to run it again).
    pub async fn prompt(
        &self,
        conversation: &ConversationKey,
        event_id: &EventId,
    ) -> Result<Option<(UserId, String)>, StoreError> {
        let (room_id, agent_id) = (conversation.room.as_str(), conversation.agent.as_str());
        Ok(sqlx::query_as(
            "SELECT sender, body FROM transcript
             WHERE room_id = $1 AND agent_id = $2 AND thread_id = $3 AND event_id = $4 AND role = 'user'
             ORDER BY id DESC LIMIT 1",
        )
        .bind(room_id)
        .bind(agent_id)
        .bind(conversation.thread_id())
        .bind(event_id)
        .fetch_optional(&self.pool)
        .await?)
    }

    /// The turns of `agent_id` that were still running when the previous run stopped.
    pub async fn unfinished_turns(
        &self,
        agent_id: &AgentId,
    ) -> Result<Vec<UnfinishedTurn>, StoreError> {
        let turns: Vec<(RoomId, String, EventId, Flag, String)> = sqlx::query_as(
            "SELECT room_id, thread_id, prompt_event_id, rerun, reply_text FROM unfinished_turns
             WHERE agent_id = $1 ORDER BY started_at",
        )
        .bind(agent_id)
        .fetch_all(&self.pool)
        .await?;
        let mut out = Vec::new();
        for (room_id, thread_id, prompt_event_id, rerun, reply_text) in turns {
            let messages = sqlx::query_as(
                "SELECT event_id, txn_id, kind, body, html, notice FROM unfinished_messages
                 WHERE room_id = $1 AND agent_id = $2 AND thread_id = $3 ORDER BY id",
            )
            .bind(&room_id)
            .bind(agent_id)
            .bind(&thread_id)
            .fetch_all(&self.pool)
            .await?;
            out.push(UnfinishedTurn {
                room_id,
                thread: super::thread_of(thread_id),
                prompt_event_id,
                rerun: rerun.into(),
                reply_text,
                messages,
            });
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::ids::{AgentId, EventId};

    #[tokio::test]
    async fn an_unfinished_turn_keeps_its_messages_until_it_ends() {
        let key = ConversationKey::new("!r", "demo");
        let store = Store::in_memory().await.unwrap();
        store
            .begin_turn(&key, &EventId::from("$prompt"), true)
            .await
            .unwrap();
        let reply = CutMessage {
            event_id: Some("$reply".into()),
            txn_id: None,
            kind: "reply".into(),
            body: "partial".into(),
            html: None,
            notice: false,
        };
        store.save_cut_message(&key, &reply).await.unwrap();
        let newer = CutMessage {
            body: "partial, longer".into(),
            ..reply.clone()
        };
        store.save_cut_message(&key, &newer).await.unwrap();
        // A second message, sent but never confirmed: known by its transaction ID.
        let unconfirmed = CutMessage {
            event_id: None,
            txn_id: Some("txn-1".into()),
            body: "more".into(),
            ..reply.clone()
        };
        store
            .intend_cut_message(&key, "txn-1", &unconfirmed)
            .await
            .unwrap();
        for part in ["partial", ", longer"] {
            store.append_reply_text(&key, part).await.unwrap();
        }
        let turns = store.unfinished_turns(&"demo".into()).await.unwrap();
        assert_eq!(
            turns,
            vec![UnfinishedTurn {
                room_id: "!r".into(),
                thread: None,
                prompt_event_id: "$prompt".into(),
                rerun: true,
                reply_text: "partial, longer".into(),
                messages: vec![newer, unconfirmed.clone()],
            }]
        );
        store
            .confirm_cut_message("txn-1", &EventId::from("$second"))
            .await
            .unwrap();
        let turns = store.unfinished_turns(&"demo".into()).await.unwrap();
        assert_eq!(
            turns[0].messages[1].event_id.as_ref().map(|id| id.as_str()),
            Some("$second")
        );
        assert_eq!(turns[0].messages[1].txn_id, None);
        assert!(
            store
                .unfinished_turns(&"other".into())
                .await
                .unwrap()
                .is_empty()
        );
        let reply = TranscriptLine {
            role: crate::store::Role::Agent,
            sender: &"@demo:x".into(),
            event_id: Some(&"$reply".into()),
            body: "partial, longer",
            stop_reason: Some("interrupted"),
        };
        store.end_turn(&key, Some(reply), None, &[]).await.unwrap();
        assert!(
            store
                .unfinished_turns(&"demo".into())
                .await
                .unwrap()
                .is_empty()
        );
        let transcript = store.transcript(&key).await.unwrap();
        assert_eq!(transcript.len(), 1);
        assert_eq!(transcript[0].stop_reason.as_deref(), Some("interrupted"));
    }

    #[tokio::test]
    async fn a_turn_that_begins_takes_its_prompt_off_the_pending_inputs() {
        let key = ConversationKey::new("!r", "demo");
        let store = Store::in_memory().await.unwrap();
        let pending = crate::store::PendingInput {
            room_id: "!r".into(),
            thread: None,
            agent_id: "demo".into(),
            event_id: "$p".into(),
            kind: crate::store::PendingKind::Prompt,
            sender: "@a:x".into(),
            body: "hi".into(),
            reply_to: None,
            sent_at: 1,
            queued_reaction: None,
            media: Vec::new(),
        };
        store
            .admit(&EventId::from("$p"), &key, Some(&pending))
            .await
            .unwrap();
        store
            .begin_turn(&key, &EventId::from("$p"), false)
            .await
            .unwrap();
        assert!(
            store
                .pending_inputs(&AgentId::from("demo"))
                .await
                .unwrap()
                .is_empty()
        );
        assert_eq!(
            store.unfinished_turns(&"demo".into()).await.unwrap().len(),
            1
        );
    }
}
