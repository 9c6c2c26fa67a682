//! Turns in progress and what their messages should show if the turn is cut, so a start
//! after a crash can mark what the previous run left unfinished.

use super::{Store, StoreError, now_ms};

/// A message of an unfinished turn and the content it should show once the turn is cut.
#[derive(Debug, Clone, PartialEq, Eq, sqlx::FromRow)]
pub struct CutMessage {
    /// The message.
    pub event_id: String,
    /// `reply` or `card`.
    pub kind: String,
    /// Plain text to show.
    pub body: String,
    /// HTML to show.
    pub html: Option<String>,
    /// Whether it is an `m.notice`.
    pub notice: bool,
}

/// A turn the previous run did not finish.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnfinishedTurn {
    /// Its room.
    pub room_id: String,
    /// The prompt it was answering.
    pub prompt_event_id: String,
    /// Whether it was already the re-run of a prompt a crash had cut.
    pub rerun: bool,
    /// The answer text it had received (empty when none).
    pub reply_text: String,
    /// The messages it had posted.
    pub messages: Vec<CutMessage>,
}

impl Store {
    /// Records that (room, agent) started answering `prompt_event_id` (`rerun`: again,
    /// after a crash had cut its first run).
    pub async fn begin_turn(
        &self,
        room_id: &str,
        agent_id: &str,
        prompt_event_id: &str,
        rerun: bool,
    ) -> Result<(), StoreError> {
        sqlx::query(
            "INSERT OR REPLACE INTO unfinished_turns (room_id, agent_id, prompt_event_id, started_at, rerun)
             VALUES (?, ?, ?, ?, ?)",
        )
        .bind(room_id)
        .bind(agent_id)
        .bind(prompt_event_id)
        .bind(now_ms())
        .bind(rerun)
        .execute(&self.pool)
        .await?;
        Ok(())
    }

    /// Records what `message` should show if the running turn of (room, agent) is cut.
    pub async fn save_cut_message(
        &self,
        room_id: &str,
        agent_id: &str,
        message: &CutMessage,
    ) -> Result<(), StoreError> {
        sqlx::query(
            "INSERT OR REPLACE INTO unfinished_messages (event_id, room_id, agent_id, kind, body, html, notice)
             VALUES (?, ?, ?, ?, ?, ?, ?)",
        )
        .bind(&message.event_id)
        .bind(room_id)
        .bind(agent_id)
        .bind(&message.kind)
        .bind(&message.body)
        .bind(&message.html)
        .bind(message.notice)
        .execute(&self.pool)
        .await?;
        Ok(())
    }

    /// Records the answer text the running turn of (room, agent) has received so far.
    pub async fn save_reply_text(
        &self,
        room_id: &str,
        agent_id: &str,
        text: &str,
    ) -> Result<(), StoreError> {
        sqlx::query(
            "UPDATE unfinished_turns SET reply_text = ? WHERE room_id = ? AND agent_id = ?",
        )
        .bind(text)
        .bind(room_id)
        .bind(agent_id)
        .execute(&self.pool)
        .await?;
        Ok(())
    }

    /// Forgets the turn of (room, agent) and its messages: it ended.
    pub async fn end_turn(&self, room_id: &str, agent_id: &str) -> Result<(), StoreError> {
        let mut tx = self.pool.begin().await?;
        sqlx::query("DELETE FROM unfinished_messages WHERE room_id = ? AND agent_id = ?")
            .bind(room_id)
            .bind(agent_id)
            .execute(&mut *tx)
            .await?;
        sqlx::query("DELETE FROM unfinished_turns WHERE room_id = ? AND agent_id = ?")
            .bind(room_id)
            .bind(agent_id)
            .execute(&mut *tx)
            .await?;
        tx.commit().await?;
        Ok(())
    }

    /// The prompt `event_id` of (room, agent) as the transcript recorded it: its sender
    /// and text (to run it again).
    pub async fn prompt(
        &self,
        room_id: &str,
        agent_id: &str,
        event_id: &str,
    ) -> Result<Option<(String, String)>, StoreError> {
        Ok(sqlx::query_as(
            "SELECT sender, body FROM transcript
             WHERE room_id = ? AND agent_id = ? AND event_id = ? AND role = 'user'
             ORDER BY id DESC LIMIT 1",
        )
        .bind(room_id)
        .bind(agent_id)
        .bind(event_id)
        .fetch_optional(&self.pool)
        .await?)
    }

    /// The turns of `agent_id` that were still running when the previous run stopped.
    pub async fn unfinished_turns(
        &self,
        agent_id: &str,
    ) -> Result<Vec<UnfinishedTurn>, StoreError> {
        let turns: Vec<(String, String, bool, String)> = sqlx::query_as(
            "SELECT room_id, prompt_event_id, rerun, reply_text FROM unfinished_turns
             WHERE agent_id = ? ORDER BY started_at",
        )
        .bind(agent_id)
        .fetch_all(&self.pool)
        .await?;
        let mut out = Vec::new();
        for (room_id, prompt_event_id, rerun, reply_text) in turns {
            let messages = sqlx::query_as(
                "SELECT event_id, kind, body, html, notice FROM unfinished_messages
                 WHERE room_id = ? AND agent_id = ? ORDER BY rowid",
            )
            .bind(&room_id)
            .bind(agent_id)
            .fetch_all(&self.pool)
            .await?;
            out.push(UnfinishedTurn {
                room_id,
                prompt_event_id,
                rerun,
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

    #[tokio::test]
    async fn an_unfinished_turn_keeps_its_messages_until_it_ends() {
        let store = Store::in_memory().await.unwrap();
        store
            .begin_turn("!r", "demo", "$prompt", true)
            .await
            .unwrap();
        let reply = CutMessage {
            event_id: "$reply".into(),
            kind: "reply".into(),
            body: "partial".into(),
            html: None,
            notice: false,
        };
        store.save_cut_message("!r", "demo", &reply).await.unwrap();
        let newer = CutMessage {
            body: "partial, longer".into(),
            ..reply.clone()
        };
        store.save_cut_message("!r", "demo", &newer).await.unwrap();
        store
            .save_reply_text("!r", "demo", "partial, longer")
            .await
            .unwrap();
        let turns = store.unfinished_turns("demo").await.unwrap();
        assert_eq!(
            turns,
            vec![UnfinishedTurn {
                room_id: "!r".into(),
                prompt_event_id: "$prompt".into(),
                rerun: true,
                reply_text: "partial, longer".into(),
                messages: vec![newer],
            }]
        );
        assert!(store.unfinished_turns("other").await.unwrap().is_empty());
        store.end_turn("!r", "demo").await.unwrap();
        assert!(store.unfinished_turns("demo").await.unwrap().is_empty());
    }
}
