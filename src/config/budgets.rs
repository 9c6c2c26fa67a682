//! `[budgets]`: what agents may spend in each room, per room and per person, per day and
//! per month (`docs/budgets.md`). Each limit is an amount in a currency the agents report
//! cost in (`"5 USD"`), or in tokens (`"2M tokens"`), or a list of them where agents report
//! different currencies.

use serde::Deserialize;

use super::problems::Problems;
use crate::core::budget::BudgetPolicy;
use crate::model::budget::{Amount, Limit, Period, Scope};

/// One limit or several (one per unit).
#[derive(Debug, Clone, Deserialize)]
#[serde(untagged)]
pub enum Amounts {
    /// `"5 USD"`.
    One(String),
    /// `["5 USD", "4 EUR"]`.
    Several(Vec<String>),
}

impl Amounts {
    fn texts(&self) -> Vec<&str> {
        match self {
            Amounts::One(text) => vec![text],
            Amounts::Several(texts) => texts.iter().map(String::as_str).collect(),
        }
    }
}

/// Where spend is bounded.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct BudgetsConfig {
    /// What everyone in a room may spend together in a day.
    pub room_per_day: Option<Amounts>,
    /// … in a month.
    pub room_per_month: Option<Amounts>,
    /// What each person may spend in a room in a day.
    pub person_per_day: Option<Amounts>,
    /// … in a month.
    pub person_per_month: Option<Amounts>,
    /// At what share of a limit the room is told, in percent.
    pub warn_percent: u8,
}

impl Default for BudgetsConfig {
    fn default() -> Self {
        Self {
            room_per_day: None,
            room_per_month: None,
            person_per_day: None,
            person_per_month: None,
            warn_percent: 80,
        }
    }
}

impl BudgetsConfig {
    /// Each key with its scope and period.
    fn keys(&self) -> [(&'static str, Scope, Period, Option<&Amounts>); 4] {
        [
            (
                "room_per_day",
                Scope::Room,
                Period::Day,
                self.room_per_day.as_ref(),
            ),
            (
                "room_per_month",
                Scope::Room,
                Period::Month,
                self.room_per_month.as_ref(),
            ),
            (
                "person_per_day",
                Scope::Person,
                Period::Day,
                self.person_per_day.as_ref(),
            ),
            (
                "person_per_month",
                Scope::Person,
                Period::Month,
                self.person_per_month.as_ref(),
            ),
        ]
    }

    /// The limits as the core applies them, days and months in `time_zone` (where a room
    /// chose none).
    pub fn policy(&self, time_zone: &str) -> BudgetPolicy {
        let mut limits = Vec::new();
        for (_, scope, period, amounts) in self.keys() {
            let texts = amounts.map(Amounts::texts).unwrap_or_default();
            limits.extend(
                texts
                    .into_iter()
                    .filter_map(|t| Amount::parse(t).ok())
                    .map(|amount| Limit {
                        scope,
                        period,
                        amount,
                        set_by: None,
                    }),
            );
        }
        BudgetPolicy {
            limits,
            warn_percent: self.warn_percent,
            time_zone: time_zone.to_owned(),
        }
    }

    /// Checks `[budgets]`.
    pub(super) fn check(&self, problems: &mut Problems) {
        for (key, _, _, amounts) in self.keys() {
            let texts = amounts.map(Amounts::texts).unwrap_or_default();
            let mut units = Vec::new();
            for text in texts {
                match Amount::parse(text) {
                    Ok(amount) if units.contains(&amount.unit) => problems.bad(
                        key,
                        format!("two limits in {}: give one per unit", amount.unit.key()),
                    ),
                    Ok(amount) => units.push(amount.unit),
                    Err(e) => problems.bad(key, e),
                }
            }
        }
        if !(1..=100).contains(&self.warn_percent) {
            problems.bad("warn_percent", "a share from 1 to 100");
        }
    }
}
