//! Budgets applied: the limits that hold in a room (the config's, and those an admin set
//! there with `!budget`), what was spent against each in its period, and whether a prompt
//! may run. The amounts and periods are `model::budget`'s; the spend is the store's. See
//! `docs/budgets.md`.

use jiff::tz::TimeZone;

use crate::model::budget::{Limit, Standing};
use crate::model::ids::{RoomId, UserId};
use crate::model::schedule;
use crate::store::{Store, StoreError};

/// The operator's budgets (`[budgets]`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct BudgetPolicy {
    /// The limits every room has unless an admin set its own.
    pub limits: Vec<Limit>,
    /// At what share of a limit the room is told, in percent.
    pub warn_percent: u8,
    /// The time zone days and months begin in, where the room chose none (`!timezone`).
    pub time_zone: String,
}

/// The limits that hold in a room: its own (set with `!budget`) and the config's, a room's
/// own taking the place of the config's for the same scope, period and unit.
pub fn merged(config: &[Limit], room: Vec<Limit>) -> Vec<Limit> {
    let mut limits = room;
    for limit in config {
        let replaced = limits.iter().any(|l| {
            (l.scope, l.period, &l.amount.unit) == (limit.scope, limit.period, &limit.amount.unit)
        });
        if !replaced {
            limits.push(limit.clone());
        }
    }
    limits.sort_by_key(|l| (l.scope, l.period));
    limits
}

/// The first limit a prompt from someone who is not an admin would go past: it is refused.
pub fn refusing(standings: &[Standing]) -> Option<&Standing> {
    standings.iter().find(|s| s.reached())
}

impl BudgetPolicy {
    /// The time zone `room`'s days and months begin in: the one `!timezone` chose there,
    /// else the configured one.
    pub async fn zone(&self, store: &Store, room: &RoomId) -> Result<TimeZone, StoreError> {
        let chosen = store.room_time_zone(room).await?;
        Ok(schedule::zone_or_utc(
            chosen.as_deref().unwrap_or(&self.time_zone),
        ))
    }

    /// Every limit that holds in `room` with what was spent against it in its period as of
    /// `now_ms` (the per-person ones counting `person`'s spend).
    pub async fn standings(
        &self,
        store: &Store,
        room: &RoomId,
        person: &UserId,
        now_ms: i64,
    ) -> Result<Vec<Standing>, StoreError> {
        let limits = merged(&self.limits, store.budget_limits(room).await?);
        if limits.is_empty() {
            return Ok(Vec::new());
        }
        let zone = self.zone(store, room).await?;
        let mut standings = Vec::with_capacity(limits.len());
        for limit in limits {
            let (start, resets_at) = limit.period.bounds(now_ms, &zone);
            let whose = (limit.scope == crate::model::budget::Scope::Person).then_some(person);
            let spent = (store.spent_since(room, whose, &limit.amount.unit, start)).await?;
            standings.push(Standing {
                limit,
                spent,
                resets_at,
            });
        }
        Ok(standings)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::budget::{Amount, Period, Scope};

    fn limit(scope: Scope, period: Period, amount: &str, by: Option<&str>) -> Limit {
        Limit {
            scope,
            period,
            amount: Amount::parse(amount).unwrap(),
            set_by: by.map(str::to_owned),
        }
    }

    #[test]
    fn a_rooms_own_limit_takes_the_place_of_the_configs_of_its_kind() {
        let config = vec![
            limit(Scope::Room, Period::Day, "1 USD", None),
            limit(Scope::Room, Period::Day, "1M tokens", None),
            limit(Scope::Person, Period::Month, "5 USD", None),
        ];
        let room = vec![limit(Scope::Room, Period::Day, "3 USD", Some("@admin:x"))];
        let held = merged(&config, room);
        assert_eq!(held.len(), 3);
        let usd_day: Vec<_> = (held.iter())
            .filter(|l| l.period == Period::Day && l.amount.unit.key() == "USD")
            .collect();
        assert_eq!(usd_day.len(), 1);
        assert_eq!(usd_day[0].set_by.as_deref(), Some("@admin:x"));
    }

    #[tokio::test]
    async fn spend_counts_in_its_period_and_a_new_day_starts_from_nothing() {
        use crate::model::ids::{AgentId, EventId, SessionId};
        let store = Store::in_memory().await.unwrap();
        let policy = BudgetPolicy {
            limits: vec![
                limit(Scope::Room, Period::Day, "0.50 USD", None),
                limit(Scope::Person, Period::Month, "10 USD", None),
            ],
            warn_percent: 80,
            time_zone: "UTC".into(),
        };
        let (room, alice) = (RoomId::from("!r"), UserId::new("@alice:x"));
        let (agent, session, prompt) = (
            AgentId::new("demo"),
            SessionId::from("s"),
            EventId::from("$p"),
        );
        let record = crate::store::SpendRecord {
            room: &room,
            sender: &alice,
            agent: &agent,
            session: &session,
            prompt: &prompt,
            cost: Some(Amount::parse("0.60 USD").unwrap()),
            session_total: 600_000,
            tokens: 0,
        };
        store.record_spend(&record).await.unwrap();
        // The clock the test controls: now, and the same time tomorrow.
        let now = crate::store::now_ms();
        let today = policy.standings(&store, &room, &alice, now).await.unwrap();
        assert_eq!(refusing(&today).map(|s| s.limit.period), Some(Period::Day));
        let tomorrow = policy
            .standings(&store, &room, &alice, now + 86_400_000)
            .await
            .unwrap();
        assert!(refusing(&tomorrow).is_none(), "{tomorrow:?}");
        let month = tomorrow
            .iter()
            .find(|s| s.limit.period == Period::Month)
            .unwrap();
        // The same month (or the next, on the last day): either way what a month counts.
        assert!(month.spent == 600_000 || month.spent == 0);
    }
}
