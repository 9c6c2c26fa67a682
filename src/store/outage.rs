//! A state database that cannot be reached for a while (PostgreSQL restarting, its host
//! rebooting, SQLite's file locked): which failures are that, and waiting one out where
//! giving up would lose a message.
//!
//! Most callers log a failure and go on ([`super::LogFailure`]): a setting not read or a
//! metric not kept costs little. Taking in a message is different: the chat side moves on
//! once the message was offered, so a message whose admission failed would never be
//! answered. Those calls go through [`until_answered`], which holds the message (and the
//! sync loop behind it) until the database answers.

use std::future::Future;
use std::time::{Duration, Instant};

use super::StoreError;

/// The wait after a first failed call.
const FIRST_WAIT: Duration = Duration::from_millis(250);
/// The longest wait between calls: a database that comes back is used within this.
const MAX_WAIT: Duration = Duration::from_secs(5);

impl StoreError {
    /// Whether asking again later may succeed: the database could not be reached, dropped
    /// the connection, is starting or stopping, or (SQLite) was busy or locked. Anything
    /// else (a constraint, a malformed query, a failed migration) fails the same way again.
    pub fn is_transient(&self) -> bool {
        let StoreError::Db(error) = self else {
            return false;
        };
        match error {
            sqlx::Error::PoolTimedOut | sqlx::Error::Io(_) | sqlx::Error::Tls(_) => true,
            sqlx::Error::Database(db) => db.code().is_some_and(|code| transient_code(&code)),
            _ => false,
        }
    }
}

/// Whether a database error code says "not now" rather than "never": PostgreSQL's
/// connection exceptions (class 08) and shutdowns (57P01–57P03), SQLite's BUSY and LOCKED
/// (their extended codes included).
fn transient_code(code: &str) -> bool {
    if code.starts_with("08") || matches!(code, "57P01" | "57P02" | "57P03") {
        return true;
    }
    // SQLite's codes are numbers of up to four digits (PostgreSQL's are five characters);
    // the primary code is the low byte of the extended one.
    code.len() < 5
        && code
            .parse::<i64>()
            .is_ok_and(|code| matches!(code & 0xff, 5 | 6))
}

/// Runs `call` until the database answers it: a transient failure ([`StoreError::is_transient`])
/// is retried with a growing wait, logged when the wait begins and when it ends; a
/// permanent one is returned. `what` names the call for the log ("admitting a message").
pub async fn until_answered<T, Fut>(
    what: &str,
    mut call: impl FnMut() -> Fut,
) -> Result<T, StoreError>
where
    Fut: Future<Output = Result<T, StoreError>>,
{
    let mut wait = FIRST_WAIT;
    let mut down_since: Option<Instant> = None;
    loop {
        match call().await {
            Err(e) if e.is_transient() => {
                if down_since.is_none() {
                    tracing::warn!(error = %e, "the state database cannot be reached; {what} waits for it");
                    down_since = Some(Instant::now());
                }
                tokio::time::sleep(wait).await;
                wait = (wait * 2).min(MAX_WAIT);
            }
            result => {
                if let Some(since) = down_since {
                    tracing::info!(down_for = ?since.elapsed(), "the state database answers again; {what} goes on");
                }
                return result;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicU32, Ordering};

    fn timed_out() -> StoreError {
        StoreError::Db(sqlx::Error::PoolTimedOut)
    }

    #[test]
    fn unreachable_is_transient_and_a_bad_query_is_not() {
        let refused = std::io::Error::from(std::io::ErrorKind::ConnectionRefused);
        assert!(timed_out().is_transient());
        assert!(StoreError::Db(sqlx::Error::Io(refused)).is_transient());
        assert!(!StoreError::Db(sqlx::Error::RowNotFound).is_transient());
        assert!(!StoreError::Db(sqlx::Error::PoolClosed).is_transient());
        assert!(!StoreError::Url("mysql://x".into()).is_transient());
    }

    #[test]
    fn codes_of_an_unavailable_database_are_transient() {
        for code in ["08006", "08001", "57P01", "57P03", "5", "6", "517", "262"] {
            assert!(transient_code(code), "{code}");
        }
        for code in ["23505", "42P01", "22005", "19", "2067", "1"] {
            assert!(!transient_code(code), "{code}");
        }
    }

    #[tokio::test(start_paused = true)]
    async fn a_transient_failure_is_waited_out() {
        let calls = AtomicU32::new(0);
        let answer = until_answered("a test", || async {
            match calls.fetch_add(1, Ordering::SeqCst) {
                0..3 => Err(timed_out()),
                n => Ok(n),
            }
        })
        .await;
        assert_eq!(answer.unwrap(), 3);
    }

    #[tokio::test(start_paused = true)]
    async fn a_permanent_failure_is_returned_at_once() {
        let calls = AtomicU32::new(0);
        let answer: Result<(), _> = until_answered("a test", || async {
            calls.fetch_add(1, Ordering::SeqCst);
            Err(StoreError::Db(sqlx::Error::RowNotFound))
        })
        .await;
        assert!(answer.is_err());
        assert_eq!(calls.load(Ordering::SeqCst), 1);
    }
}
