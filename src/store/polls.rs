//! Open permission polls, kept so a restart can close the polls of turns that died with it.

use super::columns::Flag;
use super::{Store, StoreError, now_ms};
use crate::model::ids::{AgentId, EventId, RoomId};

/// A poll that was open when it was stored.
#[derive(Debug, Clone, PartialEq, Eq, sqlx::FromRow)]
pub struct StoredPoll {
    /// The poll message.
    pub event_id: EventId,
    /// Its room.
    pub room_id: RoomId,
    /// The text to show once it is expired.
    pub body: String,
    /// The same as HTML.
    pub html: Option<String>,
    /// Whether it is a native poll: ended with `body`, not edited to it.
    #[sqlx(try_from = "Flag")]
    pub native: bool,
}

impl Store {
    /// Records an open poll of `agent_id`, with the text it should show if it expires
    /// because the gateway stopped.
    pub async fn save_poll(&self, agent: &AgentId, poll: &StoredPoll) -> Result<(), StoreError> {
        sqlx::query(
            "INSERT INTO open_polls (event_id, room_id, agent_id, body, html, native, created_at)
             VALUES ($1, $2, $3, $4, $5, $6, $7)
             ON CONFLICT (event_id) DO UPDATE SET room_id = excluded.room_id,
             agent_id = excluded.agent_id, body = excluded.body, html = excluded.html,
             native = excluded.native, created_at = excluded.created_at",
        )
        .bind(poll.event_id.as_str())
        .bind(poll.room_id.as_str())
        .bind(agent.as_str())
        .bind(&poll.body)
        .bind(&poll.html)
        .bind(Flag(poll.native))
        .bind(now_ms())
        .execute(&self.pool)
        .await?;
        Ok(())
    }

    /// Forgets a poll once it is settled.
    pub async fn forget_poll(&self, event: &EventId) -> Result<(), StoreError> {
        sqlx::query("DELETE FROM open_polls WHERE event_id = $1")
            .bind(event.as_str())
            .execute(&self.pool)
            .await?;
        Ok(())
    }

    /// The polls of `agent_id` still recorded as open.
    pub async fn open_polls(&self, agent: &AgentId) -> Result<Vec<StoredPoll>, StoreError> {
        Ok(sqlx::query_as(
            "SELECT event_id, room_id, body, html, native FROM open_polls WHERE agent_id = $1 ORDER BY created_at",
        )
        .bind(agent.as_str())
        .fetch_all(&self.pool)
        .await?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn polls_are_kept_until_forgotten_and_per_agent() {
        let store = Store::in_memory().await.unwrap();
        let (demo, other) = (AgentId::from("demo"), AgentId::from("other"));
        let poll = StoredPoll {
            event_id: "$p".into(),
            room_id: "!r".into(),
            body: "expired".into(),
            html: None,
            native: true,
        };
        store.save_poll(&demo, &poll).await.unwrap();
        assert_eq!(store.open_polls(&demo).await.unwrap(), vec![poll]);
        assert!(store.open_polls(&other).await.unwrap().is_empty());
        store.forget_poll(&EventId::from("$p")).await.unwrap();
        assert!(store.open_polls(&demo).await.unwrap().is_empty());
    }
}
