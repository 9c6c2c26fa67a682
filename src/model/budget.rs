//! Budgets: what agents may spend in a room, per room and per person, per day and per month
//! (`[budgets]`, `!budget`, `!usage`; `docs/budgets.md`). Amounts are whole numbers of a
//! unit's smallest part (a currency's millionths, or tokens), so sums are exact. Everything
//! here is pure: the clock and the store are the caller's.

use std::fmt;

use jiff::tz::TimeZone;
use jiff::{Timestamp, ToSpan, Zoned};

/// Millionths in one unit of a currency.
const MICROS: i64 = 1_000_000;

/// What a limit counts: a currency the agents report cost in, or tokens (for agents that
/// report none).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Unit {
    /// A currency, by its ISO 4217 code (`USD`), in millionths.
    Currency(String),
    /// Tokens, counted whole.
    Tokens,
}

impl Unit {
    /// The name the store keeps: the currency's code, or `tokens`.
    pub fn key(&self) -> &str {
        match self {
            Unit::Currency(code) => code,
            Unit::Tokens => "tokens",
        }
    }

    /// Back from [`Unit::key`].
    pub fn from_key(key: &str) -> Self {
        match key {
            "tokens" => Unit::Tokens,
            code => Unit::Currency(code.to_owned()),
        }
    }
}

/// An amount of a unit: `0.30 USD`, `120000 tokens`.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Amount {
    /// How much, in the unit's smallest part (a currency's millionths; tokens).
    pub value: i64,
    /// Of what.
    pub unit: Unit,
}

impl Amount {
    /// `amount` of `currency`, as an agent reports it (rounded to a millionth).
    pub fn money(amount: f64, currency: &str) -> Self {
        Self {
            value: (amount * MICROS as f64).round() as i64,
            unit: Unit::Currency(currency.trim().to_ascii_uppercase()),
        }
    }

    /// `count` tokens.
    pub fn tokens(count: u64) -> Self {
        Self {
            value: i64::try_from(count).unwrap_or(i64::MAX),
            unit: Unit::Tokens,
        }
    }

    /// Reads `0.50 USD`, `5 eur`, `2M tokens`, `500k tokens`, `120000 tokens`.
    pub fn parse(text: &str) -> Result<Self, String> {
        let mut words = text.split_whitespace();
        let (Some(number), Some(unit), None) = (words.next(), words.next(), words.next()) else {
            return Err(format!(
                "`{text}` is not an amount: write it as `0.50 USD` or `2M tokens`"
            ));
        };
        if unit.eq_ignore_ascii_case("tokens") {
            let (digits, times) = match number.to_ascii_lowercase() {
                n if n.ends_with('m') => (n[..n.len() - 1].to_owned(), 1_000_000.0),
                n if n.ends_with('k') => (n[..n.len() - 1].to_owned(), 1_000.0),
                n => (n, 1.0),
            };
            return match digits.parse::<f64>() {
                Ok(n) if n.is_finite() && n >= 0.0 && n * times < 1e15 => {
                    Ok(Self::tokens((n * times).round() as u64))
                }
                _ => Err(format!("`{number}` is not a number of tokens")),
            };
        }
        let code_ok = unit.len() == 3 && unit.chars().all(|c| c.is_ascii_alphabetic());
        if !code_ok {
            return Err(format!(
                "`{unit}` is neither a currency code (USD, EUR…) nor `tokens`"
            ));
        }
        match number.parse::<f64>() {
            Ok(n) if (0.0..1e12).contains(&n) => Ok(Self::money(n, unit)),
            _ => Err(format!("`{number}` is not an amount of {unit}")),
        }
    }
}

impl fmt::Display for Amount {
    /// `0.30 USD` (two decimals, more when the amount has them), `12,500 tokens`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.unit {
            Unit::Currency(code) => {
                let (whole, part) = (self.value / MICROS, (self.value % MICROS).abs());
                let mut digits = format!("{part:06}");
                while digits.len() > 2 && digits.ends_with('0') {
                    digits.pop();
                }
                let sign = if self.value < 0 && whole == 0 {
                    "-"
                } else {
                    ""
                };
                write!(f, "{sign}{whole}.{digits} {code}")
            }
            Unit::Tokens => write!(f, "{} tokens", grouped(self.value)),
        }
    }
}

/// `12500` as `12,500`.
fn grouped(n: i64) -> String {
    let digits = n.unsigned_abs().to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    match n < 0 {
        true => format!("-{out}"),
        false => out,
    }
}

/// Whose spend a limit bounds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Scope {
    /// Everyone's in the room, together.
    Room,
    /// Each person's in the room, apart.
    Person,
}

/// Over how long a limit counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Period {
    /// A calendar day of the room's time zone.
    Day,
    /// A calendar month of the room's time zone.
    Month,
}

impl Scope {
    /// Its word in commands and the store.
    pub fn word(self) -> &'static str {
        match self {
            Scope::Room => "room",
            Scope::Person => "person",
        }
    }

    /// Back from [`Scope::word`].
    pub fn parse(word: &str) -> Option<Self> {
        match word {
            "room" => Some(Scope::Room),
            "person" | "people" | "each" => Some(Scope::Person),
            _ => None,
        }
    }
}

impl Period {
    /// Its word in commands and the store.
    pub fn word(self) -> &'static str {
        match self {
            Period::Day => "day",
            Period::Month => "month",
        }
    }

    /// Back from [`Period::word`].
    pub fn parse(word: &str) -> Option<Self> {
        match word {
            "day" | "daily" => Some(Period::Day),
            "month" | "monthly" => Some(Period::Month),
            _ => None,
        }
    }

    /// When the period that holds `now` began and when it ends (the next one begins), in
    /// `zone`, as milliseconds since the epoch.
    pub fn bounds(self, now_ms: i64, zone: &TimeZone) -> (i64, i64) {
        let now = Timestamp::from_millisecond(now_ms)
            .unwrap_or(Timestamp::UNIX_EPOCH)
            .to_zoned(zone.clone());
        let start: Zoned = match self {
            Period::Day => now.start_of_day(),
            Period::Month => now.first_of_month().and_then(|d| d.start_of_day()),
        }
        .unwrap_or(now.clone());
        let next = match self {
            Period::Day => start.checked_add(1.day()),
            Period::Month => start.checked_add(1.month()),
        }
        .and_then(|z| z.start_of_day())
        .unwrap_or(now);
        (
            start.timestamp().as_millisecond(),
            next.timestamp().as_millisecond(),
        )
    }
}

/// One limit: at most `amount` per `period` for `scope`, set by `set_by` (`None`: the
/// operator, in the config).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Limit {
    /// Whose spend.
    pub scope: Scope,
    /// Over how long.
    pub period: Period,
    /// How much.
    pub amount: Amount,
    /// Who set it: an admin with `!budget`, or the operator (`None`).
    pub set_by: Option<String>,
}

/// A limit with what was spent against it in its current period.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Standing {
    /// The limit.
    pub limit: Limit,
    /// Spent so far in its period, in its unit.
    pub spent: i64,
    /// When its period ends (ms since the epoch).
    pub resets_at: i64,
}

impl Standing {
    /// Whether the limit is reached: no more prompts but admins'.
    pub fn reached(&self) -> bool {
        self.spent >= self.limit.amount.value
    }

    /// Whether `spent` is at or past `percent` of the limit.
    fn at_percent(&self, spent: i64, percent: u8) -> bool {
        (spent as i128) * 100 >= (self.limit.amount.value as i128) * (percent as i128)
    }

    /// Whether a turn that spent `this_turn` crossed `percent` of the limit: it was below
    /// before and is at or past it now. Crossing happens once a period, so the room is told
    /// once (unless the limit is raised, and crossed again).
    pub fn crossed(&self, this_turn: i64, percent: u8) -> bool {
        this_turn > 0
            && self.at_percent(self.spent, percent)
            && !self.at_percent(self.spent - this_turn, percent)
    }

    /// The limit's amount as spent so far: `0.60 USD of 0.50 USD`.
    pub fn spent_amount(&self) -> Amount {
        Amount {
            value: self.spent,
            unit: self.limit.amount.unit.clone(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn amounts_are_read_and_shown_exactly() {
        let half = Amount::parse("0.50 usd").unwrap();
        assert_eq!(
            half,
            Amount {
                value: 500_000,
                unit: Unit::Currency("USD".into())
            }
        );
        assert_eq!(half.to_string(), "0.50 USD");
        assert_eq!(Amount::money(0.1 + 0.2, "USD").to_string(), "0.30 USD");
        assert_eq!(Amount::money(0.0125, "EUR").to_string(), "0.0125 EUR");
        assert_eq!(
            Amount::parse("2M tokens").unwrap(),
            Amount::tokens(2_000_000)
        );
        assert_eq!(
            Amount::parse("500k tokens").unwrap().to_string(),
            "500,000 tokens"
        );
        for bad in [
            "",
            "5",
            "five USD",
            "5 dollars",
            "-1 USD",
            "1 USD more",
            "NaN USD",
        ] {
            assert!(Amount::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn a_day_and_a_month_begin_at_midnight_in_the_zone() {
        let utc = TimeZone::UTC;
        // 2026-12-08T13:30:00Z
        let now = 1_796_736_600_000;
        let (start, end) = Period::Day.bounds(now, &utc);
        assert_eq!(start, 1_796_688_000_000, "2026-12-08T00:00Z");
        assert_eq!(end, 1_796_774_400_000, "2026-12-09T00:00Z");
        let (start, end) = Period::Month.bounds(now, &utc);
        assert_eq!(start, 1_796_083_200_000, "2026-12-01T00:00Z");
        assert_eq!(end, 1_798_761_600_000, "2027-01-01T00:00Z");
        // In Tokyo (UTC+9) that instant is already the 8th's evening; its day began at 15:00Z
        // the day before.
        let tokyo = TimeZone::get("Asia/Tokyo").unwrap();
        assert_eq!(Period::Day.bounds(now, &tokyo).0, 1_796_655_600_000);
        // A new day: yesterday's last millisecond and today's first are in two periods.
        let (today, _) = Period::Day.bounds(now, &utc);
        assert_eq!(Period::Day.bounds(today - 1, &utc).1, today);
    }

    fn standing(limit: &str, spent: i64) -> Standing {
        Standing {
            limit: Limit {
                scope: Scope::Room,
                period: Period::Day,
                amount: Amount::parse(limit).unwrap(),
                set_by: None,
            },
            spent,
            resets_at: 0,
        }
    }

    #[test]
    fn the_warning_is_crossed_once_and_the_limit_reached_at_its_amount() {
        // 0.50 USD a day: 0.30 then 0.30.
        let after_first = standing("0.50 USD", 300_000);
        assert!(!after_first.crossed(300_000, 80) && !after_first.reached());
        let after_second = standing("0.50 USD", 600_000);
        assert!(after_second.crossed(300_000, 80) && after_second.reached());
        let after_third = standing("0.50 USD", 900_000);
        assert!(!after_third.crossed(300_000, 80), "told once");
        assert!(standing("0.50 USD", 500_000).reached());
        assert!(!standing("0.50 USD", 499_999).reached());
    }
}
