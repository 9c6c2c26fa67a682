//! Forks whose agent session may be forked too (`session/fork`): the session a fork's
//! conversation starts as a copy of, taken once, by its first message.

use super::{Store, StoreError};
use crate::model::ids::{ConversationKey, SessionId};

/// The session a fork's conversation may start as a copy of.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ForkSource {
    /// The source conversation's session at the fork.
    pub session_id: SessionId,
    /// Whether the source conversation is still where it was at the fork: only then is a
    /// copy of its session a copy of what the fork copied. A reply recorded since, with no
    /// prompt, still is: it is the answer of the turn that was ending when `!fork` came
    /// (its last edit shows before its line is recorded), which the person saw.
    pub current: bool,
}

/// The ID of the last transcript line of conversation `?1, ?2, ?3` (0 for none).
macro_rules! last_line {
    () => {
        "SELECT COALESCE(MAX(id), 0) FROM transcript
         WHERE room_id = $1 AND agent_id = $2 AND thread_id = $3"
    };
}

impl Store {
    /// Notes that conversation `to`, a fork of `from`, may start as a copy of `from`'s
    /// session `session_id`, as `from` stands now.
    pub async fn note_fork_source(
        &self,
        from: &ConversationKey,
        to: &ConversationKey,
        session_id: &SessionId,
    ) -> Result<(), StoreError> {
        sqlx::query(concat!(
            "INSERT INTO fork_sources
             (room_id, agent_id, thread_id, from_thread_id, session_id, transcript_at)
             VALUES ($1, $2, $4, $3, $5, (",
            last_line!(),
            "))
             ON CONFLICT (room_id, agent_id, thread_id) DO UPDATE SET
             from_thread_id = excluded.from_thread_id, session_id = excluded.session_id,
             transcript_at = excluded.transcript_at"
        ))
        .bind(from.room.as_str())
        .bind(from.agent.as_str())
        .bind(from.thread_id())
        .bind(to.thread_id())
        .bind(session_id)
        .execute(&self.pool)
        .await?;
        Ok(())
    }

    /// Takes the session conversation `to` may start as a copy of, if one was noted: it is
    /// taken once, whatever comes of it.
    pub async fn take_fork_source(
        &self,
        to: &ConversationKey,
    ) -> Result<Option<ForkSource>, StoreError> {
        // Taken (deleted) first: the transaction writes from its first statement, so it
        // never has to turn a read into a write, which SQLite refuses at once (`database is
        // locked`, whatever the busy timeout) when another connection wrote meanwhile.
        let mut tx = self.pool.begin().await?;
        let row: Option<(String, SessionId, i64)> = sqlx::query_as(
            "DELETE FROM fork_sources WHERE room_id = $1 AND agent_id = $2 AND thread_id = $3
             RETURNING from_thread_id, session_id, transcript_at",
        )
        .bind(to.room.as_str())
        .bind(to.agent.as_str())
        .bind(to.thread_id())
        .fetch_optional(&mut *tx)
        .await?;
        let Some((from_thread, session_id, at)) = row else {
            return Ok(None);
        };
        // What the source wrote since: people's lines, and the agent's.
        let (prompts, replies): (i64, i64) = sqlx::query_as(
            "SELECT COALESCE(SUM(CASE WHEN role = 'user' THEN 1 ELSE 0 END), 0),
                    COALESCE(SUM(CASE WHEN role = 'agent' THEN 1 ELSE 0 END), 0)
             FROM transcript
             WHERE room_id = $1 AND agent_id = $2 AND thread_id = $3 AND id > $4",
        )
        .bind(to.room.as_str())
        .bind(to.agent.as_str())
        .bind(from_thread)
        .bind(at)
        .fetch_one(&mut *tx)
        .await?;
        tx.commit().await?;
        Ok(Some(ForkSource {
            session_id,
            current: prompts == 0 && replies <= 1,
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::ids::{EventId, UserId};
    use crate::store::{Role, TranscriptLine};

    #[tokio::test]
    async fn a_fork_source_is_taken_once_and_is_current_only_while_its_source_stands_still() {
        let store = Store::in_memory().await.unwrap();
        let alice = UserId::from("@alice:x");
        let add = |key: &ConversationKey, body: &'static str| {
            let (store, key, alice) = (store.clone(), key.clone(), alice.clone());
            async move {
                let line = TranscriptLine {
                    role: Role::User,
                    sender: &alice,
                    event_id: None,
                    body,
                    stop_reason: None,
                };
                store.append_transcript(&key, line).await.unwrap()
            }
        };
        let from = ConversationKey::new("!r", "demo");
        let to = from.clone().in_thread(Some(EventId::from("$root")));
        let other = from.clone().in_thread(Some(EventId::from("$other")));
        add(&from, "hello").await;
        store
            .note_fork_source(&from, &to, &"s1".into())
            .await
            .unwrap();
        store
            .note_fork_source(&from, &other, &"s1".into())
            .await
            .unwrap();
        // The fork's own lines do not move its source.
        add(&to, "in the fork").await;
        let taken = store.take_fork_source(&to).await.unwrap();
        assert_eq!(
            taken,
            Some(ForkSource {
                session_id: "s1".into(),
                current: true
            })
        );
        assert_eq!(
            store.take_fork_source(&to).await.unwrap(),
            None,
            "taken once"
        );
        // The source went on: a copy of its session now would hold more than the fork.
        add(&from, "later").await;
        let stale = store.take_fork_source(&other).await.unwrap().unwrap();
        assert!(!stale.current);
    }

    #[tokio::test]
    async fn the_answer_of_the_turn_ending_at_the_fork_keeps_its_source_current() {
        let store = Store::in_memory().await.unwrap();
        let (alice, agent) = (UserId::from("@alice:x"), UserId::from("@demo:x"));
        let line = |role, sender, body| TranscriptLine {
            role,
            sender,
            event_id: None,
            body,
            stop_reason: None,
        };
        let from = ConversationKey::new("!r", "demo");
        let forks: Vec<ConversationKey> = ["$a", "$b"]
            .into_iter()
            .map(|root| from.clone().in_thread(Some(EventId::from(root))))
            .collect();
        let append = |l| store.append_transcript(&from, l);
        append(line(Role::User, &alice, "build it")).await.unwrap();
        for fork in &forks {
            (store.note_fork_source(&from, fork, &"s1".into()).await).unwrap();
        }
        // `!fork` came as the answer's last edit showed, before its line was recorded.
        append(line(Role::Agent, &agent, "built")).await.unwrap();
        let source = store.take_fork_source(&forks[0]).await.unwrap().unwrap();
        assert!(
            source.current,
            "the answer the person saw is the fork's too"
        );
        // A prompt after it: the source went on.
        append(line(Role::User, &alice, "now test it"))
            .await
            .unwrap();
        let source = store.take_fork_source(&forks[1]).await.unwrap().unwrap();
        assert!(!source.current);
    }

    #[tokio::test]
    async fn a_fork_started_afresh_forks_nothing() {
        let store = Store::in_memory().await.unwrap();
        let from = ConversationKey::new("!r", "demo");
        let to = from.clone().in_thread(Some(EventId::from("$root")));
        store
            .note_fork_source(&from, &to, &"s1".into())
            .await
            .unwrap();
        // `!new` in the fork's thread before its first prompt.
        store.start_conversation(&to).await.unwrap();
        assert_eq!(store.take_fork_source(&to).await.unwrap(), None);
    }
}
