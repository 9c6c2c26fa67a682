//! The mode each conversation keeps across its sessions and restarts (`conversation_modes`).

use super::columns::Flag;
use super::{Store, StoreError, now_ms};
use crate::model::ids::ConversationKey;
use crate::model::modes::KeptMode;

impl Store {
    /// The mode `conversation` keeps, if one was recorded since its last fresh start.
    pub async fn kept_mode(
        &self,
        conversation: &ConversationKey,
    ) -> Result<Option<KeptMode>, StoreError> {
        let row: Option<(String, Flag)> = sqlx::query_as(
            "SELECT mode, by_admin FROM conversation_modes
             WHERE room_id = $1 AND agent_id = $2 AND thread_id = $3",
        )
        .bind(conversation.room.as_str())
        .bind(conversation.agent.as_str())
        .bind(conversation.thread_id())
        .fetch_optional(&self.pool)
        .await?;
        Ok(row.map(|(mode, by_admin)| KeptMode {
            mode,
            by_admin: by_admin.0,
        }))
    }

    /// Records the mode `conversation` keeps from now on.
    pub async fn keep_mode(
        &self,
        conversation: &ConversationKey,
        kept: &KeptMode,
    ) -> Result<(), StoreError> {
        sqlx::query(
            "INSERT INTO conversation_modes (room_id, agent_id, thread_id, mode, by_admin, set_at)
             VALUES ($1, $2, $3, $4, $5, $6)
             ON CONFLICT (room_id, agent_id, thread_id) DO UPDATE SET
             mode = excluded.mode, by_admin = excluded.by_admin, set_at = excluded.set_at",
        )
        .bind(conversation.room.as_str())
        .bind(conversation.agent.as_str())
        .bind(conversation.thread_id())
        .bind(&kept.mode)
        .bind(Flag(kept.by_admin))
        .bind(now_ms())
        .execute(&self.pool)
        .await?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::ids::EventId;

    #[tokio::test]
    async fn a_conversation_keeps_its_mode_until_a_fresh_start() {
        let store = Store::in_memory().await.unwrap();
        let room = ConversationKey::new("!r", "claude");
        let thread = room.clone().in_thread(Some(EventId::from("$root")));
        assert_eq!(store.kept_mode(&room).await.unwrap(), None);
        let admins = KeptMode {
            mode: "bypassPermissions".into(),
            by_admin: true,
        };
        store.keep_mode(&room, &admins).await.unwrap();
        let plan = KeptMode {
            mode: "plan".into(),
            by_admin: false,
        };
        store.keep_mode(&thread, &plan).await.unwrap();
        assert_eq!(store.kept_mode(&room).await.unwrap(), Some(admins));
        assert_eq!(store.kept_mode(&thread).await.unwrap(), Some(plan.clone()));
        let default = KeptMode {
            mode: "default".into(),
            by_admin: false,
        };
        store.keep_mode(&room, &default).await.unwrap();
        assert_eq!(store.kept_mode(&room).await.unwrap(), Some(default));
        // `!new` forgets it: the next session starts in the initial mode again.
        store.start_conversation(&room).await.unwrap();
        assert_eq!(store.kept_mode(&room).await.unwrap(), None);
        assert_eq!(store.kept_mode(&thread).await.unwrap(), Some(plan));
    }
}
