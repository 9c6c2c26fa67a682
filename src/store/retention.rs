//! Keeping the database from growing without end: handled-event markers are pruned once
//! they are older than anything a catch-up could bring back, and transcripts after the
//! configured number of days (by default they are kept).

use super::{Store, StoreError};

/// What one pruning pass removed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Pruned {
    /// Handled-event markers.
    pub handled: u64,
    /// Transcript lines.
    pub transcript: u64,
}

impl Store {
    /// Removes handled-event markers recorded before `handled_before` and, when given,
    /// transcript lines written before `transcript_before` (ms since the epoch). A
    /// transcript line a conversation's fresh start points at stays findable: the start is
    /// kept by ID, not by line.
    pub async fn prune(
        &self,
        handled_before: i64,
        transcript_before: Option<i64>,
    ) -> Result<Pruned, StoreError> {
        let handled = sqlx::query("DELETE FROM handled_events WHERE handled_at < $1")
            .bind(handled_before)
            .execute(&self.pool)
            .await?
            .rows_affected();
        // Ended runs and turns' refusals, with the handled markers: what `!schedules`
        // shows is on the schedule's own row. (Webhook deliveries are kept: their IDs
        // refuse replays.)
        for forget in [
            "DELETE FROM schedule_runs WHERE outcome IS NOT NULL AND ended_at < $1",
            "DELETE FROM turn_refusals WHERE noted_at < $1",
        ] {
            sqlx::query(forget)
                .bind(handled_before)
                .execute(&self.pool)
                .await?;
        }
        let transcript = match transcript_before {
            Some(before) => sqlx::query("DELETE FROM transcript WHERE created_at < $1")
                .bind(before)
                .execute(&self.pool)
                .await?
                .rows_affected(),
            None => 0,
        };
        Ok(Pruned {
            handled,
            transcript,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::ids::ConversationKey;
    use crate::model::ids::{AgentId, EventId};
    use crate::store::{Role, TranscriptLine, now_ms};

    #[tokio::test]
    async fn old_markers_go_and_transcripts_stay_unless_asked() {
        let key = ConversationKey::new("!r", "a");
        let store = Store::in_memory().await.unwrap();
        store
            .admit(&EventId::from("$old"), &key, None)
            .await
            .unwrap();
        let line = TranscriptLine {
            role: Role::User,
            sender: &"@p:x".into(),
            event_id: None,
            body: "hi",
            stop_reason: None,
        };
        store.append_transcript(&key, line).await.unwrap();
        let later = now_ms() + 1_000;
        let pruned = store.prune(later, None).await.unwrap();
        assert_eq!(
            pruned,
            Pruned {
                handled: 1,
                transcript: 0
            }
        );
        assert!(
            !store
                .is_handled(&AgentId::from("a"), &EventId::from("$old"))
                .await
                .unwrap()
        );
        assert_eq!(store.transcript(&key).await.unwrap().len(), 1);
        let pruned = store.prune(later, Some(later)).await.unwrap();
        assert_eq!(pruned.transcript, 1);
        // Nothing newer than the bounds goes.
        store
            .admit(&EventId::from("$new"), &key, None)
            .await
            .unwrap();
        store
            .prune(now_ms() - 60_000, Some(now_ms() - 60_000))
            .await
            .unwrap();
        assert!(
            store
                .is_handled(&AgentId::from("a"), &EventId::from("$new"))
                .await
                .unwrap()
        );
    }
}
