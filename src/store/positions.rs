//! Where each agent's handling of each room's timeline stands: the newest event taken in.
//! A restart, a long sync back-off or a `limited` timeline is caught up to exactly there
//! (see `docs/continuity.md`).

use super::{Store, StoreError, now_ms};
use crate::model::ids::{AgentId, ConversationKey, EventId, RoomId};

/// The newest event of a room an agent has taken in.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RoomPosition {
    /// The room.
    pub room_id: RoomId,
    /// The event.
    pub event_id: EventId,
    /// Its server timestamp, ms since the epoch.
    pub event_ts: i64,
}

impl Store {
    /// The newest event of `room_id` that `agent_id` has taken in.
    pub async fn room_position(
        &self,
        conversation: &ConversationKey,
    ) -> Result<Option<RoomPosition>, StoreError> {
        let row: Option<(EventId, i64)> = sqlx::query_as(
            "SELECT event_id, event_ts FROM room_positions WHERE room_id = $1 AND agent_id = $2",
        )
        .bind(&conversation.room)
        .bind(&conversation.agent)
        .fetch_optional(&self.pool)
        .await?;
        Ok(row.map(|(event_id, event_ts)| RoomPosition {
            room_id: conversation.room.clone(),
            event_id,
            event_ts,
        }))
    }

    /// Records, in one transaction, the newest event of each room `agent_id` took in (a
    /// whole sync response, or a catch-up).
    pub async fn save_positions(
        &self,
        agent_id: &AgentId,
        rooms: &[RoomPosition],
    ) -> Result<(), StoreError> {
        let now = now_ms();
        let mut tx = self.pool.begin().await?;
        for room in rooms {
            sqlx::query(
                "INSERT INTO room_positions (room_id, agent_id, event_id, event_ts, updated_at)
                 VALUES ($1, $2, $3, $4, $5)
                 ON CONFLICT (room_id, agent_id) DO UPDATE SET event_id = excluded.event_id,
                 event_ts = excluded.event_ts, updated_at = excluded.updated_at",
            )
            .bind(&room.room_id)
            .bind(agent_id)
            .bind(&room.event_id)
            .bind(room.event_ts)
            .bind(now)
            .execute(&mut *tx)
            .await?;
        }
        tx.commit().await?;
        Ok(())
    }

    /// When `agent_id` last took in an event of `room_id`, if ever.
    pub async fn last_handled_at(
        &self,
        conversation: &ConversationKey,
    ) -> Result<Option<i64>, StoreError> {
        let (room_id, agent_id) = (conversation.room.as_str(), conversation.agent.as_str());
        let row: (Option<i64>,) = sqlx::query_as(
            "SELECT MAX(handled_at) FROM handled_events WHERE room_id = $1 AND agent_id = $2",
        )
        .bind(room_id)
        .bind(agent_id)
        .fetch_one(&self.pool)
        .await?;
        Ok(row.0)
    }

    /// When `agent_id` arrived in `room_id` (its accepted invite), if known: what came
    /// before is history, never a prompt. Unlike [`Store::member_since`], records nothing.
    pub async fn member_floor(
        &self,
        conversation: &ConversationKey,
    ) -> Result<Option<i64>, StoreError> {
        let (room_id, agent_id) = (conversation.room.as_str(), conversation.agent.as_str());
        let row: Option<(i64,)> =
            sqlx::query_as("SELECT since FROM room_members WHERE room_id = $1 AND agent_id = $2")
                .bind(room_id)
                .bind(agent_id)
                .fetch_optional(&self.pool)
                .await?;
        Ok(row.map(|r| r.0))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::ids::EventId;

    #[tokio::test]
    async fn positions_move_forward() {
        let key = ConversationKey::new("!r", "a");
        let store = Store::in_memory().await.unwrap();
        assert_eq!(store.room_position(&key).await.unwrap(), None);
        let at = |id: &str, ts| RoomPosition {
            room_id: "!r".into(),
            event_id: id.into(),
            event_ts: ts,
        };
        store
            .save_positions(&AgentId::from("a"), &[at("$1", 10)])
            .await
            .unwrap();
        store
            .save_positions(&AgentId::from("a"), &[])
            .await
            .unwrap();
        assert_eq!(store.room_position(&key).await.unwrap(), Some(at("$1", 10)));
        store
            .save_positions(&AgentId::from("a"), &[at("$2", 20)])
            .await
            .unwrap();
        assert_eq!(store.room_position(&key).await.unwrap(), Some(at("$2", 20)));
        assert_eq!(
            store
                .room_position(&ConversationKey::new("!r", "b"))
                .await
                .unwrap(),
            None
        );
        assert_eq!(store.member_floor(&key).await.unwrap(), None);
        store.set_member_since(&key, 5).await.unwrap();
        assert_eq!(store.member_floor(&key).await.unwrap(), Some(5));
        assert_eq!(store.last_handled_at(&key).await.unwrap(), None);
        store.admit(&EventId::from("$e"), &key, None).await.unwrap();
        assert!(store.last_handled_at(&key).await.unwrap().is_some());
    }
}
