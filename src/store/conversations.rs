//! Where each conversation starts, and how each session got it back.

use super::{Store, StoreError, TranscriptEntry, now_ms};
use crate::model::ids::ConversationKey;

impl Store {
    /// The transcript of (room, agent) since its conversation started (everything, unless
    /// someone asked for a fresh start), oldest first.
    pub async fn conversation(
        &self,
        conversation: &ConversationKey,
    ) -> Result<Vec<TranscriptEntry>, StoreError> {
        let (room_id, agent_id) = (conversation.room.as_str(), conversation.agent.as_str());
        Ok(sqlx::query_as(
            "SELECT role, sender, event_id, body, stop_reason, created_at FROM transcript
             WHERE room_id = $1 AND agent_id = $2 AND thread_id = $3 AND id > COALESCE(
                 (SELECT after_id FROM conversation_starts
                  WHERE room_id = $1 AND agent_id = $2 AND thread_id = $3), 0)
             ORDER BY id",
        )
        .bind(room_id)
        .bind(agent_id)
        .bind(conversation.thread_id())
        .fetch_all(&self.pool)
        .await?)
    }

    /// Copies the conversation `from` (what [`Store::conversation`] gives) into the
    /// conversation `to`, a fork's new thread; returns how many lines were copied.
    pub async fn copy_conversation(
        &self,
        from: &ConversationKey,
        to: &ConversationKey,
    ) -> Result<u64, StoreError> {
        let done = sqlx::query(
            "INSERT INTO transcript
             (room_id, agent_id, thread_id, role, sender, event_id, body, stop_reason, created_at)
             SELECT $4, $5, $6, role, sender, event_id, body, stop_reason, created_at
             FROM transcript
             WHERE room_id = $1 AND agent_id = $2 AND thread_id = $3 AND id > COALESCE(
                 (SELECT after_id FROM conversation_starts
                  WHERE room_id = $1 AND agent_id = $2 AND thread_id = $3), 0)
             ORDER BY id",
        )
        .bind(from.room.as_str())
        .bind(from.agent.as_str())
        .bind(from.thread_id())
        .bind(to.room.as_str())
        .bind(to.agent.as_str())
        .bind(to.thread_id())
        .execute(&self.pool)
        .await?;
        Ok(done.rows_affected())
    }

    /// Starts a fresh conversation for (room, agent): what the transcript holds so far is
    /// never re-injected again, the saved session is forgotten so it is not loaded back
    /// either (nor, for a fork, the original's session forked), and so is the mode it kept
    /// (the next session starts in the initial mode).
    pub async fn start_conversation(
        &self,
        conversation: &ConversationKey,
    ) -> Result<(), StoreError> {
        let (room_id, agent_id) = (conversation.room.as_str(), conversation.agent.as_str());
        let mut tx = self.pool.begin().await?;
        let thread_id = conversation.thread_id();
        sqlx::query("DELETE FROM sessions WHERE room_id = $1 AND agent_id = $2 AND thread_id = $3")
            .bind(room_id)
            .bind(agent_id)
            .bind(thread_id)
            .execute(&mut *tx)
            .await?;
        sqlx::query(
            "DELETE FROM conversation_modes WHERE room_id = $1 AND agent_id = $2 AND thread_id = $3",
        )
        .bind(room_id)
        .bind(agent_id)
        .bind(thread_id)
        .execute(&mut *tx)
        .await?;
        // A fork asked to start afresh does not take the original's session either.
        sqlx::query(
            "DELETE FROM fork_sources WHERE room_id = $1 AND agent_id = $2 AND thread_id = $3",
        )
        .bind(room_id)
        .bind(agent_id)
        .bind(thread_id)
        .execute(&mut *tx)
        .await?;
        sqlx::query(
            "INSERT INTO conversation_starts (room_id, agent_id, after_id, started_at, thread_id)
             VALUES ($1, $2, COALESCE((SELECT MAX(id) FROM transcript
                 WHERE room_id = $1 AND agent_id = $2 AND thread_id = $4), 0), $3, $4)
             ON CONFLICT (room_id, agent_id, thread_id) DO UPDATE SET
             after_id = excluded.after_id, started_at = excluded.started_at",
        )
        .bind(room_id)
        .bind(agent_id)
        .bind(now_ms())
        .bind(thread_id)
        .execute(&mut *tx)
        .await?;
        tx.commit().await?;
        Ok(())
    }

    /// Records how the session of (room, agent) got its conversation back.
    pub async fn set_continuity(
        &self,
        conversation: &ConversationKey,
        how: &str,
    ) -> Result<(), StoreError> {
        let (room_id, agent_id) = (conversation.room.as_str(), conversation.agent.as_str());
        sqlx::query(
            "UPDATE sessions SET continuity = $1 WHERE room_id = $2 AND agent_id = $3 AND thread_id = $4",
        )
        .bind(how)
        .bind(room_id)
        .bind(agent_id)
        .bind(conversation.thread_id())
            .execute(&self.pool)
            .await?;
        Ok(())
    }

    /// How the session of (room, agent) got its conversation back, if there is a session.
    pub async fn continuity(
        &self,
        conversation: &ConversationKey,
    ) -> Result<Option<String>, StoreError> {
        let (room_id, agent_id) = (conversation.room.as_str(), conversation.agent.as_str());
        let row: Option<(String,)> = sqlx::query_as(
            "SELECT continuity FROM sessions WHERE room_id = $1 AND agent_id = $2 AND thread_id = $3",
        )
        .bind(room_id)
        .bind(agent_id)
        .bind(conversation.thread_id())
        .fetch_optional(&self.pool)
        .await?;
        Ok(row.map(|r| r.0))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::ids::{SessionId, UserId};
    use crate::store::{Role, TranscriptLine};

    /// The person who writes in these tests.
    static PERSON: std::sync::LazyLock<UserId> = std::sync::LazyLock::new(|| UserId::from("@a:x"));

    /// A line of the transcript a person wrote.
    fn said(body: &str) -> TranscriptLine<'_> {
        TranscriptLine {
            role: Role::User,
            sender: &PERSON,
            event_id: None,
            body,
            stop_reason: None,
        }
    }

    #[tokio::test]
    async fn a_fresh_start_leaves_the_earlier_transcript_behind() {
        let key = ConversationKey::new("!r", "demo");
        let store = Store::in_memory().await.unwrap();
        let add = |body: &'static str| {
            let (store, key) = (store.clone(), key.clone());
            async move { store.append_transcript(&key, said(body)).await.unwrap() }
        };
        add("one").await;
        add("two").await;
        let bodies = |v: Vec<TranscriptEntry>| v.into_iter().map(|e| e.body).collect::<Vec<_>>();
        assert_eq!(
            bodies(store.conversation(&key).await.unwrap()),
            ["one", "two"]
        );
        store.start_conversation(&key).await.unwrap();
        assert!(store.conversation(&key).await.unwrap().is_empty());
        add("three").await;
        assert_eq!(bodies(store.conversation(&key).await.unwrap()), ["three"]);
        // Other channels are untouched.
        assert!(
            store
                .conversation(&ConversationKey::new("!r", "other"))
                .await
                .unwrap()
                .is_empty()
        );
    }

    #[tokio::test]
    async fn a_fork_copies_the_conversation_since_its_start_and_nothing_flows_back() {
        let room = ConversationKey::new("!r", "demo");
        let fork = room
            .clone()
            .in_thread(Some(crate::model::ids::EventId::from("$root")));
        let store = Store::in_memory().await.unwrap();
        store
            .append_transcript(&room, said("before"))
            .await
            .unwrap();
        store.start_conversation(&room).await.unwrap();
        store.append_transcript(&room, said("one")).await.unwrap();
        store.append_transcript(&room, said("two")).await.unwrap();
        assert_eq!(store.copy_conversation(&room, &fork).await.unwrap(), 2);
        let bodies = |v: Vec<TranscriptEntry>| v.into_iter().map(|e| e.body).collect::<Vec<_>>();
        assert_eq!(
            bodies(store.conversation(&fork).await.unwrap()),
            ["one", "two"]
        );
        store
            .append_transcript(&fork, said("fork only"))
            .await
            .unwrap();
        store.append_transcript(&room, said("three")).await.unwrap();
        assert_eq!(
            bodies(store.conversation(&room).await.unwrap()),
            ["one", "two", "three"]
        );
        assert_eq!(
            bodies(store.conversation(&fork).await.unwrap()),
            ["one", "two", "fork only"]
        );
    }

    #[tokio::test]
    async fn continuity_is_recorded_per_session() {
        let key = ConversationKey::new("!r", "demo");
        let store = Store::in_memory().await.unwrap();
        assert_eq!(store.continuity(&key).await.unwrap(), None);
        store.save_session(&key, &"s1".into()).await.unwrap();
        assert_eq!(
            store.continuity(&key).await.unwrap().as_deref(),
            Some("new")
        );
        store.set_continuity(&key, "reinjected").await.unwrap();
        assert_eq!(
            store.continuity(&key).await.unwrap().as_deref(),
            Some("reinjected")
        );
    }

    #[tokio::test]
    async fn a_threads_conversation_is_kept_apart_from_the_rooms() {
        use crate::model::ids::EventId;
        let store = Store::in_memory().await.unwrap();
        let room = ConversationKey::new("!r", "demo");
        let thread = room.clone().in_thread(Some(EventId::from("$root")));
        store.save_session(&room, &"s-room".into()).await.unwrap();
        store
            .save_session(&thread, &"s-thread".into())
            .await
            .unwrap();
        assert_eq!(
            store.session(&room).await.unwrap(),
            Some(SessionId::from("s-room"))
        );
        assert_eq!(
            store.session(&thread).await.unwrap(),
            Some(SessionId::from("s-thread"))
        );
        for (key, body) in [(&room, "in the room"), (&thread, "in the thread")] {
            store.append_transcript(key, said(body)).await.unwrap();
        }
        let bodies = |entries: Vec<crate::store::TranscriptEntry>| {
            entries.into_iter().map(|e| e.body).collect::<Vec<_>>()
        };
        assert_eq!(
            bodies(store.conversation(&thread).await.unwrap()),
            ["in the thread"]
        );
        // A fresh start in the thread leaves the room's conversation and session alone.
        store.start_conversation(&thread).await.unwrap();
        assert!(store.conversation(&thread).await.unwrap().is_empty());
        assert_eq!(store.session(&thread).await.unwrap(), None);
        assert_eq!(
            bodies(store.conversation(&room).await.unwrap()),
            ["in the room"]
        );
        assert_eq!(
            store.session(&room).await.unwrap(),
            Some(SessionId::from("s-room"))
        );
    }
}
