//! Which conversation owns each session the gateway opened or attached (`session_owners`):
//! in a workspace several rooms share, the agent lists every room's sessions; only the
//! conversation's own, and sessions the gateway never took up (started in an editor), may be
//! listed and attached there.

use std::collections::HashSet;

use super::{Store, StoreError, now_ms};
use crate::model::ids::{ConversationKey, SessionId};

impl Store {
    /// Records `session` as `conversation`'s, unless another conversation has it already.
    /// Says whether it is `conversation`'s now.
    pub async fn claim_session(
        &self,
        conversation: &ConversationKey,
        session: &SessionId,
    ) -> Result<bool, StoreError> {
        sqlx::query(
            "INSERT INTO session_owners (agent_id, session_id, room_id, thread_id, claimed_at)
             VALUES ($1, $2, $3, $4, $5)
             ON CONFLICT DO NOTHING",
        )
        .bind(conversation.agent.as_str())
        .bind(session)
        .bind(conversation.room.as_str())
        .bind(conversation.thread_id())
        .bind(now_ms())
        .execute(&self.pool)
        .await?;
        Ok(!self.others_sessions(conversation).await?.contains(session))
    }

    /// The sessions of `conversation`'s agent that belong to other conversations.
    pub async fn others_sessions(
        &self,
        conversation: &ConversationKey,
    ) -> Result<HashSet<SessionId>, StoreError> {
        let rows: Vec<(SessionId,)> = sqlx::query_as(
            "SELECT session_id FROM session_owners
             WHERE agent_id = $1 AND NOT (room_id = $2 AND thread_id = $3)",
        )
        .bind(conversation.agent.as_str())
        .bind(conversation.room.as_str())
        .bind(conversation.thread_id())
        .fetch_all(&self.pool)
        .await?;
        Ok(rows.into_iter().map(|r| r.0).collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::ids::EventId;

    #[tokio::test]
    async fn a_session_belongs_to_the_conversation_that_took_it_up_first() {
        let store = Store::in_memory().await.unwrap();
        let a = ConversationKey::new("!a", "demo");
        let b = ConversationKey::new("!b", "demo");
        let thread = a.clone().in_thread(Some(EventId::from("$root")));
        let other_agent = ConversationKey::new("!b", "codex");
        store.save_session(&a, &"s1".into()).await.unwrap();
        assert!(store.others_sessions(&a).await.unwrap().is_empty());
        assert_eq!(
            store.others_sessions(&b).await.unwrap(),
            HashSet::from([SessionId::from("s1")])
        );
        assert!(
            store
                .others_sessions(&thread)
                .await
                .unwrap()
                .contains(&SessionId::from("s1"))
        );
        assert!(
            store
                .others_sessions(&other_agent)
                .await
                .unwrap()
                .is_empty()
        );
        assert!(!store.claim_session(&b, &"s1".into()).await.unwrap(), "a's");
        assert!(
            store
                .claim_session(&b, &"from-an-editor".into())
                .await
                .unwrap()
        );
        assert!(
            store
                .claim_session(&b, &"from-an-editor".into())
                .await
                .unwrap()
        );
        assert!(
            store
                .others_sessions(&a)
                .await
                .unwrap()
                .contains(&SessionId::from("from-an-editor"))
        );
        // A fresh start moves a's conversation on; its old session stays its own.
        store.save_session(&a, &"s2".into()).await.unwrap();
        assert_eq!(
            store.others_sessions(&b).await.unwrap(),
            HashSet::from([SessionId::from("s1"), SessionId::from("s2")])
        );
    }
}
