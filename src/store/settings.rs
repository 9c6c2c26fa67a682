//! Per-room settings people choose with chat commands.

use super::{Store, StoreError, now_ms};

impl Store {
    /// The verbosity chosen for `room_id` with `!show`, if any (as its word).
    pub async fn room_verbosity(&self, room_id: &str) -> Result<Option<String>, StoreError> {
        let row: Option<(Option<String>,)> =
            sqlx::query_as("SELECT verbosity FROM room_settings WHERE room_id = ?")
                .bind(room_id)
                .fetch_optional(&self.pool)
                .await?;
        Ok(row.and_then(|r| r.0))
    }

    /// Records the verbosity chosen for `room_id`.
    pub async fn set_room_verbosity(&self, room_id: &str, word: &str) -> Result<(), StoreError> {
        sqlx::query(
            "INSERT INTO room_settings (room_id, verbosity, updated_at) VALUES (?, ?, ?)
             ON CONFLICT (room_id) DO UPDATE SET verbosity = excluded.verbosity,
             updated_at = excluded.updated_at",
        )
        .bind(room_id)
        .bind(word)
        .bind(now_ms())
        .execute(&self.pool)
        .await?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_room_verbosity_is_remembered_and_replaced() {
        let store = Store::in_memory().await.unwrap();
        assert_eq!(store.room_verbosity("!r").await.unwrap(), None);
        store.set_room_verbosity("!r", "tools").await.unwrap();
        store.set_room_verbosity("!r", "answer").await.unwrap();
        assert_eq!(
            store.room_verbosity("!r").await.unwrap().as_deref(),
            Some("answer")
        );
    }
}
