//! The outbox: final content the homeserver could not take while it was away, kept until
//! it can (see `docs/continuity.md`).

use super::columns::Flag;
use super::{Store, StoreError, now_ms};
use crate::model::ids::{AgentId, EventId, RoomId};

/// One message to bring up to date: edited when it exists, else posted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OutboxItem {
    /// The outbox row.
    pub id: i64,
    /// Its room.
    pub room_id: RoomId,
    /// The root of its thread, for a message of a thread's conversation (posted there).
    pub thread: Option<EventId>,
    /// The message, if it was posted.
    pub event_id: Option<EventId>,
    /// The transaction ID to post it with, if it was not.
    pub txn_id: String,
    /// Plain text to show.
    pub body: String,
    /// HTML to show.
    pub html: Option<String>,
    /// Whether it is an `m.notice`.
    pub notice: bool,
}

type OutboxRow = (
    i64,
    RoomId,
    Option<EventId>,
    String,
    String,
    Option<String>,
    Flag,
    String,
);

impl Store {
    /// Puts `items` (their `id` is ignored) in `agent`'s outbox, in order.
    pub async fn outbox_add(
        &self,
        agent: &AgentId,
        items: &[OutboxItem],
    ) -> Result<(), StoreError> {
        let mut tx = self.pool.begin().await?;
        for item in items {
            sqlx::query(
                "INSERT INTO outbox
                 (room_id, agent_id, event_id, txn_id, body, html, notice, created_at, thread_id)
                 VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)",
            )
            .bind(&item.room_id)
            .bind(agent.as_str())
            .bind(&item.event_id)
            .bind(&item.txn_id)
            .bind(&item.body)
            .bind(&item.html)
            .bind(Flag(item.notice))
            .bind(now_ms())
            .bind(super::thread_column(item.thread.as_ref()))
            .execute(&mut *tx)
            .await?;
        }
        tx.commit().await?;
        Ok(())
    }

    /// What `agent`'s outbox holds, oldest first.
    pub async fn outbox(&self, agent: &AgentId) -> Result<Vec<OutboxItem>, StoreError> {
        let rows: Vec<OutboxRow> = sqlx::query_as(
            "SELECT id, room_id, event_id, txn_id, body, html, notice, thread_id FROM outbox
             WHERE agent_id = $1 ORDER BY id",
        )
        .bind(agent.as_str())
        .fetch_all(&self.pool)
        .await?;
        Ok(rows
            .into_iter()
            .map(
                |(id, room_id, event_id, txn_id, body, html, notice, thread)| OutboxItem {
                    id,
                    room_id,
                    thread: super::thread_of(thread),
                    event_id,
                    txn_id,
                    body,
                    html,
                    notice: notice.into(),
                },
            )
            .collect())
    }

    /// The outbox item `id` was delivered (or can never be).
    pub async fn outbox_done(&self, id: i64) -> Result<(), StoreError> {
        sqlx::query("DELETE FROM outbox WHERE id = $1")
            .bind(id)
            .execute(&self.pool)
            .await?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn the_outbox_keeps_items_in_order_until_done() {
        let store = Store::in_memory().await.unwrap();
        let (a, b) = (AgentId::from("a"), AgentId::from("b"));
        let item = |txn: &str, event: Option<&str>| OutboxItem {
            id: 0,
            room_id: "!r".into(),
            thread: (txn == "t1").then(|| EventId::from("$thread")),
            event_id: event.map(EventId::from),
            txn_id: txn.into(),
            body: format!("final {txn}"),
            html: None,
            notice: false,
        };
        store
            .outbox_add(&a, &[item("t0", Some("$0")), item("t1", None)])
            .await
            .unwrap();
        let items = store.outbox(&a).await.unwrap();
        assert_eq!(items.len(), 2);
        assert_eq!(items[0].event_id.as_ref().map(|id| id.as_str()), Some("$0"));
        assert_eq!(items[1].txn_id, "t1");
        assert_eq!(items[0].thread, None);
        assert_eq!(
            items[1].thread,
            Some(EventId::from("$thread")),
            "kept with its thread"
        );
        assert!(store.outbox(&b).await.unwrap().is_empty());
        store.outbox_done(items[0].id).await.unwrap();
        let left = store.outbox(&a).await.unwrap();
        assert_eq!(left.len(), 1);
        assert_eq!(left[0].body, "final t1");
    }
}
