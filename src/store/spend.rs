//! What turns spent, and the limits admins set in rooms (`spend`, `budget_limits`): the
//! durable half of budgets (`model::budget`, `docs/budgets.md`). A turn's spend is written
//! when it ends, so a restart loses none of what was counted.

use super::{Store, StoreError, now_ms};
use crate::model::budget::{Amount, Limit, Period, Scope, Unit};
use crate::model::ids::{AgentId, EventId, RoomId, SessionId, UserId};

/// What one turn spent, as its agent reported it.
#[derive(Debug, Clone)]
pub struct SpendRecord<'a> {
    /// Where.
    pub room: &'a RoomId,
    /// Whose prompt it answered.
    pub sender: &'a UserId,
    /// Which agent.
    pub agent: &'a AgentId,
    /// In which session (the agent reports cost per session, cumulative).
    pub session: &'a SessionId,
    /// The prompt.
    pub prompt: &'a EventId,
    /// What this turn cost (what the session's reported cost grew by), when the agent
    /// reports cost.
    pub cost: Option<Amount>,
    /// The session's cost as last reported, in the same unit (0 without a cost).
    pub session_total: i64,
    /// The turn's tokens, when its result counted them (0 otherwise).
    pub tokens: u64,
}

/// Spend in a room over a while, by person, agent and unit (`!usage`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UsageRow {
    /// Whose prompts.
    pub sender: UserId,
    /// Which agent.
    pub agent: AgentId,
    /// The cost, when the agent reported one.
    pub cost: Option<Amount>,
    /// Tokens counted.
    pub tokens: u64,
    /// Turns.
    pub turns: u64,
}

impl Store {
    /// Records what a turn spent, now.
    pub async fn record_spend(&self, record: &SpendRecord<'_>) -> Result<(), StoreError> {
        let (unit, amount) = match &record.cost {
            Some(cost) => (Some(cost.unit.key().to_owned()), cost.value),
            None => (None, 0),
        };
        sqlx::query(
            "INSERT INTO spend (room_id, sender, agent_id, session_id, prompt_event_id, unit,
                                amount, session_total, tokens, spent_at)
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)",
        )
        .bind(record.room.as_str())
        .bind(record.sender.as_str())
        .bind(record.agent.as_str())
        .bind(record.session)
        .bind(record.prompt.as_str())
        .bind(unit)
        .bind(amount)
        .bind(record.session_total)
        .bind(i64::try_from(record.tokens).unwrap_or(i64::MAX))
        .bind(now_ms())
        .execute(&self.pool)
        .await?;
        Ok(())
    }

    /// The cost of `session` as last recorded in `unit` (what its next turn's reported
    /// total is counted from), if a turn of it reported one.
    pub async fn session_total(
        &self,
        agent: &AgentId,
        session: &SessionId,
        unit: &Unit,
    ) -> Result<Option<i64>, StoreError> {
        let row: Option<(i64,)> = sqlx::query_as(
            "SELECT session_total FROM spend
             WHERE agent_id = $1 AND session_id = $2 AND unit = $3
             ORDER BY id DESC LIMIT 1",
        )
        .bind(agent.as_str())
        .bind(session)
        .bind(unit.key())
        .fetch_optional(&self.pool)
        .await?;
        Ok(row.map(|r| r.0))
    }

    /// What was spent in `room` (by `sender` only, when given) in `unit` since `since_ms`.
    pub async fn spent_since(
        &self,
        room: &RoomId,
        sender: Option<&UserId>,
        unit: &Unit,
        since_ms: i64,
    ) -> Result<i64, StoreError> {
        // Tokens are counted from every turn; a currency from the turns that cost in it.
        let sender = sender.map_or("", UserId::as_str);
        let query = match unit {
            Unit::Tokens => sqlx::query_as(
                "SELECT CAST(COALESCE(SUM(tokens), 0) AS BIGINT) FROM spend
                 WHERE room_id = $1 AND spent_at >= $2 AND ($3 = '' OR sender = $3)",
            )
            .bind(room.as_str())
            .bind(since_ms)
            .bind(sender),
            Unit::Currency(code) => sqlx::query_as(
                "SELECT CAST(COALESCE(SUM(amount), 0) AS BIGINT) FROM spend
                 WHERE room_id = $1 AND spent_at >= $2 AND ($3 = '' OR sender = $3)
                   AND unit = $4",
            )
            .bind(room.as_str())
            .bind(since_ms)
            .bind(sender)
            .bind(code.as_str()),
        };
        let (spent,): (i64,) = query.fetch_one(&self.pool).await?;
        Ok(spent)
    }

    /// What was spent in `room` since `since_ms`, by person, agent and unit.
    pub async fn usage_since(
        &self,
        room: &RoomId,
        since_ms: i64,
    ) -> Result<Vec<UsageRow>, StoreError> {
        type Row = (String, String, Option<String>, i64, i64, i64);
        let rows: Vec<Row> = sqlx::query_as(
            "SELECT sender, agent_id, unit,
                    CAST(SUM(amount) AS BIGINT), CAST(SUM(tokens) AS BIGINT),
                    CAST(COUNT(*) AS BIGINT)
             FROM spend WHERE room_id = $1 AND spent_at >= $2
             GROUP BY sender, agent_id, unit
             ORDER BY sender, agent_id, COALESCE(unit, '')",
        )
        .bind(room.as_str())
        .bind(since_ms)
        .fetch_all(&self.pool)
        .await?;
        Ok((rows.into_iter())
            .map(|(sender, agent, unit, amount, tokens, turns)| UsageRow {
                sender: UserId::new(sender),
                agent: AgentId::new(agent),
                cost: unit.map(|u| Amount {
                    value: amount,
                    unit: Unit::from_key(&u),
                }),
                tokens: u64::try_from(tokens).unwrap_or(0),
                turns: u64::try_from(turns).unwrap_or(0),
            })
            .collect())
    }

    /// Sets `room`'s limit for `scope` and `period` in `limit`'s unit, for `by`.
    pub async fn set_budget_limit(
        &self,
        room: &RoomId,
        scope: Scope,
        period: Period,
        limit: &Amount,
        by: &UserId,
    ) -> Result<(), StoreError> {
        sqlx::query(
            "INSERT INTO budget_limits (room_id, scope, period, unit, amount, set_by, set_at)
             VALUES ($1, $2, $3, $4, $5, $6, $7)
             ON CONFLICT (room_id, scope, period, unit) DO UPDATE SET
                amount = excluded.amount, set_by = excluded.set_by, set_at = excluded.set_at",
        )
        .bind(room.as_str())
        .bind(scope.word())
        .bind(period.word())
        .bind(limit.unit.key())
        .bind(limit.value)
        .bind(by.as_str())
        .bind(now_ms())
        .execute(&self.pool)
        .await?;
        Ok(())
    }

    /// Takes `room`'s own limits for `scope` and `period` away (the config's apply again);
    /// says how many there were.
    pub async fn clear_budget_limits(
        &self,
        room: &RoomId,
        scope: Scope,
        period: Period,
    ) -> Result<u64, StoreError> {
        let done = sqlx::query(
            "DELETE FROM budget_limits WHERE room_id = $1 AND scope = $2 AND period = $3",
        )
        .bind(room.as_str())
        .bind(scope.word())
        .bind(period.word())
        .execute(&self.pool)
        .await?;
        Ok(done.rows_affected())
    }

    /// The limits admins set in `room`.
    pub async fn budget_limits(&self, room: &RoomId) -> Result<Vec<Limit>, StoreError> {
        let rows: Vec<(String, String, String, i64, String)> = sqlx::query_as(
            "SELECT scope, period, unit, amount, set_by FROM budget_limits
             WHERE room_id = $1 ORDER BY scope, period, unit",
        )
        .bind(room.as_str())
        .fetch_all(&self.pool)
        .await?;
        Ok((rows.into_iter())
            .filter_map(|(scope, period, unit, amount, by)| {
                Some(Limit {
                    scope: Scope::parse(&scope)?,
                    period: Period::parse(&period)?,
                    amount: Amount {
                        value: amount,
                        unit: Unit::from_key(&unit),
                    },
                    set_by: Some(by),
                })
            })
            .collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record<'a>(
        (room, sender, agent, session, prompt): (
            &'a RoomId,
            &'a UserId,
            &'a AgentId,
            &'a SessionId,
            &'a EventId,
        ),
        cost: Option<&str>,
        total: i64,
        tokens: u64,
    ) -> SpendRecord<'a> {
        SpendRecord {
            room,
            sender,
            agent,
            session,
            prompt,
            cost: cost.map(|c| Amount::parse(c).unwrap()),
            session_total: total,
            tokens,
        }
    }

    #[tokio::test]
    async fn spend_is_summed_by_room_person_and_unit_and_limits_are_kept() {
        let store = Store::in_memory().await.unwrap();
        let (room, other) = (RoomId::from("!r"), RoomId::from("!o"));
        let (alice, bob) = (UserId::new("@alice:x"), UserId::new("@bob:x"));
        let (agent, session, prompt) = (
            AgentId::new("demo"),
            SessionId::from("s1"),
            EventId::from("$p"),
        );
        let usd = Unit::Currency("USD".into());
        let at = |r, s| (r, s, &agent, &session, &prompt);
        store
            .record_spend(&record(at(&room, &alice), Some("0.30 USD"), 300_000, 100))
            .await
            .unwrap();
        store
            .record_spend(&record(at(&room, &bob), Some("0.25 USD"), 550_000, 50))
            .await
            .unwrap();
        store
            .record_spend(&record(at(&room, &bob), None, 0, 7))
            .await
            .unwrap();
        store
            .record_spend(&record(at(&other, &alice), Some("9 USD"), 9_000_000, 1))
            .await
            .unwrap();
        assert_eq!(
            store.spent_since(&room, None, &usd, 0).await.unwrap(),
            550_000
        );
        assert_eq!(
            store.spent_since(&room, Some(&bob), &usd, 0).await.unwrap(),
            250_000
        );
        assert_eq!(
            store
                .spent_since(&room, None, &Unit::Tokens, 0)
                .await
                .unwrap(),
            157
        );
        assert_eq!(
            store
                .spent_since(&room, None, &Unit::Currency("EUR".into()), 0)
                .await
                .unwrap(),
            0
        );
        let later = now_ms() + 1_000;
        assert_eq!(
            store.spent_since(&room, None, &usd, later).await.unwrap(),
            0
        );
        // The session's total counts the next turn from where the last left it.
        assert_eq!(
            store.session_total(&agent, &session, &usd).await.unwrap(),
            Some(9_000_000)
        );
        assert_eq!(
            store
                .session_total(&agent, &"s2".into(), &usd)
                .await
                .unwrap(),
            None
        );
        let usage = store.usage_since(&room, 0).await.unwrap();
        assert_eq!(usage.len(), 3, "{usage:?}");
        assert_eq!(usage[0].sender, alice);
        assert_eq!(usage[0].cost.as_ref().unwrap().to_string(), "0.30 USD");

        let limit = Amount::parse("2 USD").unwrap();
        store
            .set_budget_limit(&room, Scope::Room, Period::Day, &limit, &alice)
            .await
            .unwrap();
        let raised = Amount::parse("3 USD").unwrap();
        store
            .set_budget_limit(&room, Scope::Room, Period::Day, &raised, &bob)
            .await
            .unwrap();
        let limits = store.budget_limits(&room).await.unwrap();
        assert_eq!(limits.len(), 1);
        assert_eq!(
            (limits[0].amount.value, limits[0].set_by.as_deref()),
            (3_000_000, Some("@bob:x"))
        );
        assert_eq!(
            store
                .clear_budget_limits(&room, Scope::Room, Period::Day)
                .await
                .unwrap(),
            1
        );
        assert!(store.budget_limits(&room).await.unwrap().is_empty());
    }
}
