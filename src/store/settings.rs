//! Per-room settings people choose with chat commands.

use super::columns::Flag;
use super::{Store, StoreError, now_ms};
use crate::model::ids::{AgentId, RoomId};

impl Store {
    /// The verbosity chosen for `room` with `!show`, if any (as its word).
    pub async fn room_verbosity(&self, room: &RoomId) -> Result<Option<String>, StoreError> {
        self.room_setting(
            "SELECT verbosity FROM room_settings WHERE room_id = $1",
            room,
        )
        .await
    }

    /// Records the verbosity chosen for `room`.
    pub async fn set_room_verbosity(&self, room: &RoomId, word: &str) -> Result<(), StoreError> {
        self.set_room_setting(
            "INSERT INTO room_settings (room_id, verbosity, updated_at) VALUES ($1, $2, $3)
             ON CONFLICT (room_id) DO UPDATE SET verbosity = excluded.verbosity,
             updated_at = excluded.updated_at",
            room.as_str(),
            word,
        )
        .await
    }

    /// What a message written during a turn does in `room`, as `!queue` chose, if it did
    /// (as its word).
    pub async fn room_queue_mode(&self, room: &RoomId) -> Result<Option<String>, StoreError> {
        self.room_setting(
            "SELECT queue_mode FROM room_settings WHERE room_id = $1",
            room,
        )
        .await
    }

    /// Records what a message written during a turn does in `room`.
    pub async fn set_room_queue_mode(&self, room: &RoomId, word: &str) -> Result<(), StoreError> {
        self.set_room_setting(
            "INSERT INTO room_settings (room_id, queue_mode, updated_at) VALUES ($1, $2, $3)
             ON CONFLICT (room_id) DO UPDATE SET queue_mode = excluded.queue_mode,
             updated_at = excluded.updated_at",
            room.as_str(),
            word,
        )
        .await
    }

    /// The time zone of `room`'s schedules, as `!timezone` chose, if it did.
    pub async fn room_time_zone(&self, room: &RoomId) -> Result<Option<String>, StoreError> {
        self.room_setting(
            "SELECT time_zone FROM room_settings WHERE room_id = $1",
            room,
        )
        .await
    }

    /// Records the time zone of `room`'s schedules.
    pub async fn set_room_time_zone(&self, room: &RoomId, zone: &str) -> Result<(), StoreError> {
        self.set_room_setting(
            "INSERT INTO room_settings (room_id, time_zone, updated_at) VALUES ($1, $2, $3)
             ON CONFLICT (room_id) DO UPDATE SET time_zone = excluded.time_zone,
             updated_at = excluded.updated_at",
            room.as_str(),
            zone,
        )
        .await
    }

    /// Whether agents mark people's messages in `room` with status reactions, as
    /// `!reactions` chose, if it did.
    pub async fn room_status_reactions(&self, room: &RoomId) -> Result<Option<bool>, StoreError> {
        let on: Option<Flag> = self
            .room_setting(
                "SELECT status_reactions FROM room_settings WHERE room_id = $1",
                room,
            )
            .await?;
        Ok(on.map(bool::from))
    }

    /// Records whether agents mark people's messages in `room` with status reactions.
    pub async fn set_room_status_reactions(
        &self,
        room: &RoomId,
        on: bool,
    ) -> Result<(), StoreError> {
        self.set_room_setting(
            "INSERT INTO room_settings (room_id, status_reactions, updated_at) VALUES ($1, $2, $3)
             ON CONFLICT (room_id) DO UPDATE SET status_reactions = excluded.status_reactions,
             updated_at = excluded.updated_at",
            room.as_str(),
            Flag(on),
        )
        .await
    }

    /// Records how `room`'s threads map onto conversations.
    pub async fn set_room_threads(&self, room: &RoomId, word: &str) -> Result<(), StoreError> {
        self.set_room_setting(
            "INSERT INTO room_settings (room_id, threads, updated_at) VALUES ($1, $2, $3)
             ON CONFLICT (room_id) DO UPDATE SET threads = excluded.threads,
             updated_at = excluded.updated_at",
            room.as_str(),
            word,
        )
        .await
    }

    /// Runs `select`, the query of one column of `room`'s settings; `None` when the room
    /// has no settings or that one is not set.
    async fn room_setting<T>(
        &self,
        select: &'static str,
        room: &RoomId,
    ) -> Result<Option<T>, StoreError>
    where
        T: Send + Unpin + for<'r> sqlx::Decode<'r, sqlx::Any> + sqlx::Type<sqlx::Any>,
    {
        let row: Option<(Option<T>,)> = sqlx::query_as(select)
            .bind(room.as_str())
            .fetch_optional(&self.pool)
            .await?;
        Ok(row.and_then(|r| r.0))
    }

    /// Runs `upsert`, the statement that sets one column of `room`'s settings to
    /// `value` (its parameters: room, value, time).
    async fn set_room_setting<'q, T>(
        &self,
        upsert: &'static str,
        room_id: &'q str,
        value: T,
    ) -> Result<(), StoreError>
    where
        T: 'q + Send + sqlx::Encode<'q, sqlx::Any> + sqlx::Type<sqlx::Any>,
    {
        sqlx::query(upsert)
            .bind(room_id)
            .bind(value)
            .bind(now_ms())
            .execute(&self.pool)
            .await?;
        Ok(())
    }
}

/// How a room routes messages between its agents.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RoomRouting {
    /// The agent unaddressed messages go to, when the room has several.
    pub default_agent: Option<AgentId>,
    /// Whether agents may hand work to each other here (`None`: as configured).
    pub handoff: Option<bool>,
    /// How threads map onto conversations here, as `!threads` chose (its word; `None`:
    /// as configured).
    pub threads: Option<String>,
}

impl Store {
    /// The routing choices made for `room`.
    pub async fn room_routing(&self, room: &RoomId) -> Result<RoomRouting, StoreError> {
        let row: Option<(Option<AgentId>, Option<Flag>, Option<String>)> = sqlx::query_as(
            "SELECT default_agent, handoff, threads FROM room_settings WHERE room_id = $1",
        )
        .bind(room.as_str())
        .fetch_optional(&self.pool)
        .await?;
        Ok(row
            .map(|(default_agent, handoff, threads)| RoomRouting {
                default_agent,
                handoff: handoff.map(bool::from),
                threads,
            })
            .unwrap_or_default())
    }

    /// Sets (or with `None` clears) the room's default agent.
    pub async fn set_default_agent(
        &self,
        room: &RoomId,
        agent: Option<&AgentId>,
    ) -> Result<(), StoreError> {
        self.set_room_setting(
            "INSERT INTO room_settings (room_id, default_agent, updated_at) VALUES ($1, $2, $3)
             ON CONFLICT (room_id) DO UPDATE SET default_agent = excluded.default_agent,
             updated_at = excluded.updated_at",
            room.as_str(),
            agent.map(AgentId::as_str),
        )
        .await
    }

    /// Turns hand-offs between the room's agents on or off.
    pub async fn set_handoff(&self, room: &RoomId, on: bool) -> Result<(), StoreError> {
        self.set_room_setting(
            "INSERT INTO room_settings (room_id, handoff, updated_at) VALUES ($1, $2, $3)
             ON CONFLICT (room_id) DO UPDATE SET handoff = excluded.handoff,
             updated_at = excluded.updated_at",
            room.as_str(),
            Flag(on),
        )
        .await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_room_queue_mode_is_remembered_beside_its_other_settings() {
        let store = Store::in_memory().await.unwrap();
        let room = RoomId::from("!r");
        assert_eq!(store.room_queue_mode(&room).await.unwrap(), None);
        store.set_room_verbosity(&room, "tools").await.unwrap();
        store.set_room_queue_mode(&room, "steer").await.unwrap();
        assert_eq!(store.room_status_reactions(&room).await.unwrap(), None);
        store.set_room_status_reactions(&room, true).await.unwrap();
        assert_eq!(
            store.room_status_reactions(&room).await.unwrap(),
            Some(true)
        );
        assert_eq!(
            store.room_queue_mode(&room).await.unwrap().as_deref(),
            Some("steer")
        );
        assert_eq!(
            store.room_verbosity(&room).await.unwrap().as_deref(),
            Some("tools")
        );
    }

    #[tokio::test]
    async fn a_room_verbosity_is_remembered_and_replaced() {
        let store = Store::in_memory().await.unwrap();
        let room = RoomId::from("!r");
        assert_eq!(store.room_verbosity(&room).await.unwrap(), None);
        store.set_room_verbosity(&room, "tools").await.unwrap();
        store.set_room_verbosity(&room, "answer").await.unwrap();
        assert_eq!(
            store.room_verbosity(&room).await.unwrap().as_deref(),
            Some("answer")
        );
    }

    #[tokio::test]
    async fn routing_choices_are_kept_apart_from_the_verbosity() {
        let store = Store::in_memory().await.unwrap();
        let room = RoomId::from("!r");
        assert_eq!(
            store.room_routing(&room).await.unwrap(),
            RoomRouting::default()
        );
        store.set_room_verbosity(&room, "tools").await.unwrap();
        store
            .set_default_agent(&room, Some(&"codex".into()))
            .await
            .unwrap();
        store.set_handoff(&room, true).await.unwrap();
        store.set_room_threads(&room, "new").await.unwrap();
        assert_eq!(
            store.room_routing(&room).await.unwrap(),
            RoomRouting {
                default_agent: Some("codex".into()),
                handoff: Some(true),
                threads: Some("new".into()),
            }
        );
        store.set_default_agent(&room, None).await.unwrap();
        assert_eq!(store.room_routing(&room).await.unwrap().default_agent, None);
        assert_eq!(
            store.room_verbosity(&room).await.unwrap().as_deref(),
            Some("tools")
        );
    }
}
