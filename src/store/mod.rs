//! Persistent state in SQLite (sqlx, migrations from `migrations/`): sessions, transcripts,
//! handled events, when each agent joined each room, open permission polls and room settings.

use crate::model::ids::{AgentId, ConversationKey, EventId, RoomId, SessionId, UserId};
use std::path::Path;
use std::time::{SystemTime, UNIX_EPOCH};

use sqlx::AnyPool;
use sqlx::any::AnyPoolOptions;
use sqlx::migrate::Migrator;

mod columns;
mod conversations;
mod copy;
mod forks;
mod inbox;
mod modes;
mod outage;
mod outbox;
mod polls;
mod positions;
mod retention;
mod schedules;
mod session_owners;
mod settings;
mod spend;
mod unfinished;

pub use copy::{CopyError, TABLES};
pub use forks::ForkSource;
pub use inbox::{PendingInput, PendingKind};
pub use outage::until_answered;
pub use outbox::OutboxItem;
pub use polls::StoredPoll;
pub use positions::RoomPosition;
pub use retention::Pruned;
pub use schedules::{NewSchedule, RunProgress, Schedule, ScheduleRun, TurnOutcome};
pub use settings::RoomRouting;
pub use spend::{SpendRecord, UsageRow};
pub use unfinished::{CutMessage, UnfinishedTurn};

use crate::model::errors::Chain;

/// How long a store call waits for a connection before it fails as transient. Short, so
/// that an outage shows in the log within seconds; the calls that taking in a message
/// needs wait it out ([`until_answered`]), the others log what they could not record.
const POOL_WAIT: std::time::Duration = std::time::Duration::from_secs(5);

/// Store failures (each shows its whole cause chain). Most callers log what was not
/// recorded or read and go on ([`LogFailure`]); where that would lose a message, a
/// transient one ([`StoreError::is_transient`]) is waited out ([`until_answered`]).
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// A query or connection failed.
    #[error("database error: {}", Chain(.0))]
    Db(#[from] sqlx::Error),
    /// A migration failed.
    #[error("database migration failed: {}", Chain(.0))]
    Migrate(#[from] sqlx::migrate::MigrateError),
    /// The store URL names no database this gateway can use.
    #[error("the store {0:?} is neither sqlite:PATH nor postgres://…")]
    Url(String),
}

/// Query parameters of a store URL whose values are shown: those known to hold no secret.
/// Any other parameter (`password`, `sslpassword`, one a later driver adds) is shown by its
/// name only.
const SHOWN_PARAMETERS: &[&str] = &[
    "sslmode",
    "sslrootcert",
    "sslcert",
    "application_name",
    "connect_timeout",
    "options",
    "statement-cache-capacity",
    "mode",
    "cache",
];

/// `url` as it may be shown in an error or a log: its password, and the value of every
/// query parameter not known to be harmless ([`SHOWN_PARAMETERS`]), replaced by
/// `REDACTED`; text that is no URL is not shown at all.
pub fn redact_url(url: &str) -> String {
    let Ok(mut parsed) = url::Url::parse(url) else {
        return "(not a URL)".to_owned();
    };
    if parsed.password().is_some() {
        let _ = parsed.set_password(Some("REDACTED"));
    }
    if parsed.query().is_some() {
        let pairs: Vec<(String, String)> = (parsed.query_pairs())
            .map(|(k, v)| {
                let value = match SHOWN_PARAMETERS.contains(&&*k) {
                    true => v.into_owned(),
                    false => "REDACTED".to_owned(),
                };
                (k.into_owned(), value)
            })
            .collect();
        parsed.query_pairs_mut().clear().extend_pairs(pairs);
    }
    parsed.to_string()
}

/// What a caller does with a store failure it can do nothing about but say: the turn, the
/// command or the catch-up goes on, and the log says what was not recorded or read.
pub trait LogFailure<T> {
    /// The value, or `None` once the failure has been logged as `what` (a sentence
    /// starting "could not …").
    fn or_log(self, what: &str) -> Option<T>;
}

impl<T> LogFailure<T> for Result<T, StoreError> {
    fn or_log(self, what: &str) -> Option<T> {
        match self {
            Ok(value) => Some(value),
            Err(e) => {
                tracing::error!(error = %e, "{what}");
                None
            }
        }
    }
}

/// The `thread_id` column of a row of `thread` (as [`ConversationKey::thread_id`]): `""`
/// for the room's main timeline, as the column is part of unique keys, where NULL would
/// match nothing.
fn thread_column(thread: Option<&EventId>) -> &str {
    thread.map_or("", EventId::as_str)
}

/// The thread a `thread_id` column holds (none for the main timeline's `""`).
fn thread_of(column: String) -> Option<EventId> {
    Some(column).filter(|t| !t.is_empty()).map(EventId::new)
}

/// Who wrote a transcript entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// A person's prompt.
    User,
    /// The agent's final reply.
    Agent,
}

impl Role {
    fn as_str(self) -> &'static str {
        match self {
            Role::User => "user",
            Role::Agent => "agent",
        }
    }
}

/// A transcript line to record.
#[derive(Debug, Clone, Copy)]
pub struct TranscriptLine<'a> {
    /// Who wrote it.
    pub role: Role,
    /// Matrix user ID of the author.
    pub sender: &'a UserId,
    /// The Matrix event holding it (a prompt's message, a reply's first message).
    pub event_id: Option<&'a EventId>,
    /// The text.
    pub body: &'a str,
    /// How the turn ended, for replies.
    pub stop_reason: Option<&'a str>,
}

/// One transcript line, as recorded.
#[derive(Debug, Clone, PartialEq, Eq, sqlx::FromRow)]
pub struct TranscriptEntry {
    /// `user` or `agent`.
    pub role: String,
    /// Matrix user ID of the author.
    pub sender: String,
    /// The Matrix event holding it.
    pub event_id: Option<EventId>,
    /// The text.
    pub body: String,
    /// How the turn ended, for replies.
    pub stop_reason: Option<String>,
    /// When, in ms since the epoch.
    pub created_at: i64,
}

/// The gateway's database.
#[derive(Debug, Clone)]
pub struct Store {
    /// Connections to the database: SQLite's file, or a PostgreSQL server.
    pool: AnyPool,
    /// Which of the two it is.
    backend: Backend,
}

/// Milliseconds since the epoch, the time unit of the store.
pub fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or(0)
}

/// The SQLite migrations, in `migrations/sqlite/`.
static SQLITE_MIGRATIONS: Migrator = sqlx::migrate!("./migrations/sqlite");

/// The PostgreSQL migrations, in `migrations/postgres/`: the same schema, kept in step by
/// the store's tests.
static POSTGRES_MIGRATIONS: Migrator = sqlx::migrate!("./migrations/postgres");

/// Which database server a store URL names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backend {
    /// An SQLite file, the embedded default.
    Sqlite,
    /// A PostgreSQL server (`postgres://` or `postgresql://`).
    Postgres,
}

impl Backend {
    /// The backend a store URL names, or `None` for a URL that is neither.
    pub fn of_url(url: &str) -> Option<Self> {
        if url.starts_with("sqlite:") {
            Some(Backend::Sqlite)
        } else if url.starts_with("postgres://") || url.starts_with("postgresql://") {
            Some(Backend::Postgres)
        } else {
            None
        }
    }
}

/// The `sqlite:` URL of the database file at `path` (`%`, `?` and `#` escaped, as the
/// URL's path is percent-decoded), created if missing.
pub fn sqlite_url(path: &Path) -> String {
    let mut escaped = String::new();
    for c in path.to_string_lossy().chars() {
        match c {
            '%' => escaped.push_str("%25"),
            '?' => escaped.push_str("%3F"),
            '#' => escaped.push_str("%23"),
            c => escaped.push(c),
        }
    }
    format!("sqlite://{escaped}?mode=rwc")
}

/// Sets up each new SQLite connection.
///
/// The file is a write-ahead log, and a commit is written to it without waiting for the
/// disk: it survives the gateway crashing or being killed, and a power loss can only take
/// the newest commits, in order (the log is replayed up to where it was synced). Every
/// commit on the way from a message to its answer (admission, transcript, turn mark, reply
/// journal) then costs no disk flush; what a power loss takes is taken in again from the
/// homeserver (see `docs/continuity.md`).
const SQLITE_SETUP: &str =
    "PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL; PRAGMA busy_timeout = 5000;";

impl Store {
    /// Opens (creating if needed) the SQLite database at `path` and applies pending
    /// migrations.
    pub async fn open(path: &Path) -> Result<Self, StoreError> {
        Self::connect(&sqlite_url(path)).await
    }

    /// Opens the database `url` names (`sqlite://PATH` or `postgres://…`) and applies
    /// pending migrations.
    pub async fn connect(url: &str) -> Result<Self, StoreError> {
        let backend = Backend::of_url(url).ok_or_else(|| StoreError::Url(redact_url(url)))?;
        sqlx::any::install_default_drivers();
        let options = AnyPoolOptions::new()
            .max_connections(4)
            .acquire_timeout(POOL_WAIT);
        let pool = match backend {
            Backend::Sqlite => {
                options
                    .after_connect(|connection, _| {
                        Box::pin(async move {
                            sqlx::raw_sql(SQLITE_SETUP).execute(connection).await?;
                            Ok(())
                        })
                    })
                    .connect(url)
                    .await?
            }
            Backend::Postgres => options.connect(url).await?,
        };
        Self::migrated(pool, backend).await
    }

    /// An in-memory SQLite database, for tests.
    pub async fn in_memory() -> Result<Self, StoreError> {
        sqlx::any::install_default_drivers();
        let pool = AnyPoolOptions::new()
            .max_connections(1)
            .connect("sqlite::memory:")
            .await?;
        Self::migrated(pool, Backend::Sqlite).await
    }

    /// The store on `pool`, its migrations applied.
    async fn migrated(pool: AnyPool, backend: Backend) -> Result<Self, StoreError> {
        match backend {
            Backend::Sqlite => SQLITE_MIGRATIONS.run(&pool).await?,
            Backend::Postgres => POSTGRES_MIGRATIONS.run(&pool).await?,
        }
        Ok(Self { pool, backend })
    }

    /// Records when `agent` arrived in `room`, unless already known; returns the time kept.
    pub async fn member_since(
        &self,
        conversation: &ConversationKey,
        since: i64,
    ) -> Result<i64, StoreError> {
        let (room_id, agent_id) = (conversation.room.as_str(), conversation.agent.as_str());
        sqlx::query(
            "INSERT INTO room_members (room_id, agent_id, since) VALUES ($1, $2, $3)
             ON CONFLICT DO NOTHING",
        )
        .bind(room_id)
        .bind(agent_id)
        .bind(since)
        .execute(&self.pool)
        .await?;
        let (since,): (i64,) =
            sqlx::query_as("SELECT since FROM room_members WHERE room_id = $1 AND agent_id = $2")
                .bind(room_id)
                .bind(agent_id)
                .fetch_one(&self.pool)
                .await?;
        Ok(since)
    }

    /// Records that `agent` arrives in `room` now (an accepted invite), replacing any
    /// earlier record: everything before is history.
    pub async fn set_member_since(
        &self,
        conversation: &ConversationKey,
        since: i64,
    ) -> Result<(), StoreError> {
        let (room_id, agent_id) = (conversation.room.as_str(), conversation.agent.as_str());
        sqlx::query(
            "INSERT INTO room_members (room_id, agent_id, since) VALUES ($1, $2, $3)
             ON CONFLICT (room_id, agent_id) DO UPDATE SET since = excluded.since",
        )
        .bind(room_id)
        .bind(agent_id)
        .bind(since)
        .execute(&self.pool)
        .await?;
        Ok(())
    }

    /// Forgets the membership record, when the agent leaves a room.
    pub async fn forget_member(&self, conversation: &ConversationKey) -> Result<(), StoreError> {
        let (room_id, agent_id) = (conversation.room.as_str(), conversation.agent.as_str());
        sqlx::query("DELETE FROM room_members WHERE room_id = $1 AND agent_id = $2")
            .bind(room_id)
            .bind(agent_id)
            .execute(&self.pool)
            .await?;
        Ok(())
    }

    /// The agents recorded as members of `room_id` (invited, or seen there), by ID.
    pub async fn room_agents(&self, room: &RoomId) -> Result<Vec<AgentId>, StoreError> {
        let rows: Vec<(AgentId,)> = sqlx::query_as(
            "SELECT agent_id FROM room_members WHERE room_id = $1 ORDER BY agent_id",
        )
        .bind(room.as_str())
        .fetch_all(&self.pool)
        .await?;
        Ok(rows.into_iter().map(|r| r.0).collect())
    }

    /// Saves the ACP session of (room, agent), and records it as that conversation's unless
    /// another has it already ([`Store::claim_session`]).
    pub async fn save_session(
        &self,
        conversation: &ConversationKey,
        session_id: &SessionId,
    ) -> Result<(), StoreError> {
        let (room_id, agent_id) = (conversation.room.as_str(), conversation.agent.as_str());
        sqlx::query(
            "INSERT INTO sessions (room_id, agent_id, thread_id, session_id, created_at)
             VALUES ($1, $2, $3, $4, $5)
             ON CONFLICT (room_id, agent_id, thread_id) DO UPDATE SET
             session_id = excluded.session_id, created_at = excluded.created_at,
             continuity = 'new'",
        )
        .bind(room_id)
        .bind(agent_id)
        .bind(conversation.thread_id())
        .bind(session_id)
        .bind(now_ms())
        .execute(&self.pool)
        .await?;
        self.claim_session(conversation, session_id).await?;
        Ok(())
    }

    /// The last ACP session saved for (room, agent).
    pub async fn session(
        &self,
        conversation: &ConversationKey,
    ) -> Result<Option<SessionId>, StoreError> {
        let (room_id, agent_id) = (conversation.room.as_str(), conversation.agent.as_str());
        let row: Option<(SessionId,)> = sqlx::query_as(
            "SELECT session_id FROM sessions WHERE room_id = $1 AND agent_id = $2 AND thread_id = $3",
        )
        .bind(room_id)
        .bind(agent_id)
        .bind(conversation.thread_id())
        .fetch_optional(&self.pool)
        .await?;
        Ok(row.map(|r| r.0))
    }

    /// Appends a transcript line. A prompt is recorded once: a prompt run again after a
    /// restart (it had not begun) is not recorded a second time.
    pub async fn append_transcript(
        &self,
        conversation: &ConversationKey,
        line: TranscriptLine<'_>,
    ) -> Result<(), StoreError> {
        insert_transcript(&self.pool, conversation, &line).await
    }

    /// The transcript of (room, agent), oldest first.
    pub async fn transcript(
        &self,
        conversation: &ConversationKey,
    ) -> Result<Vec<TranscriptEntry>, StoreError> {
        let (room_id, agent_id) = (conversation.room.as_str(), conversation.agent.as_str());
        Ok(sqlx::query_as(
            "SELECT role, sender, event_id, body, stop_reason, created_at FROM transcript
             WHERE room_id = $1 AND agent_id = $2 AND thread_id = $3 ORDER BY id",
        )
        .bind(room_id)
        .bind(agent_id)
        .bind(conversation.thread_id())
        .fetch_all(&self.pool)
        .await?)
    }
}

/// Inserts a transcript line (a prompt with an event ID only once), in one statement:
/// a write transaction that begins with a read could fail at once on a busy database.
async fn insert_transcript<'c>(
    executor: impl sqlx::Executor<'c, Database = sqlx::Any>,
    conversation: &ConversationKey,
    line: &TranscriptLine<'_>,
) -> Result<(), StoreError> {
    sqlx::query(
        "INSERT INTO transcript
         (room_id, agent_id, role, sender, event_id, body, stop_reason, created_at, thread_id)
         SELECT $1, $2, $3, $4, $5, $6, $7, $8, $9
         WHERE $3 <> 'user' OR $5 IS NULL OR NOT EXISTS (
             SELECT 1 FROM transcript
             WHERE room_id = $1 AND agent_id = $2 AND thread_id = $9 AND event_id = $5
             AND role = 'user')",
    )
    .bind(conversation.room.as_str())
    .bind(conversation.agent.as_str())
    .bind(line.role.as_str())
    .bind(line.sender)
    .bind(line.event_id)
    .bind(line.body)
    .bind(line.stop_reason)
    .bind(now_ms())
    .bind(conversation.thread_id())
    .execute(executor)
    .await?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::ids::EventId;

    #[test]
    fn a_store_url_is_shown_with_only_what_is_known_to_be_no_secret() {
        for (url, shown) in [
            (
                "postgres://gw:hunter2@db/sk?sslmode=require&password=hunter3",
                "postgres://gw:REDACTED@db/sk?sslmode=require&password=REDACTED",
            ),
            // A parameter nobody listed as harmless keeps its name, not its value.
            (
                "postgres://gw@db/sk?sslpassword=k3y&application_name=gw",
                "postgres://gw@db/sk?sslpassword=REDACTED&application_name=gw",
            ),
            (
                "sqlite:///var/lib/sidekicks/sidekicks.db",
                "sqlite:///var/lib/sidekicks/sidekicks.db",
            ),
        ] {
            assert_eq!(redact_url(url), shown);
        }
        // Not a URL at all: nothing of it is shown.
        assert_eq!(redact_url("postgres//gw:hunter2@"), "(not a URL)");
    }

    #[tokio::test]
    async fn events_are_handled_once_per_agent() {
        let key = ConversationKey::new("!r", "a");
        let store = Store::in_memory().await.unwrap();
        assert!(store.admit(&EventId::from("$e"), &key, None).await.unwrap());
        assert!(!store.admit(&EventId::from("$e"), &key, None).await.unwrap());
        assert!(
            store
                .admit(&EventId::from("$e"), &ConversationKey::new("!r", "b"), None)
                .await
                .unwrap()
        );
    }

    /// Commits on the way from a message to its answer wait for no disk flush: the log
    /// is written ahead and synced only when SQLite checkpoints it.
    #[tokio::test]
    async fn the_database_file_is_a_write_ahead_log_synced_at_checkpoints() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(&dir.path().join("sidekicks.db")).await.unwrap();
        let journal: String = sqlx::query_scalar("PRAGMA journal_mode")
            .fetch_one(&store.pool)
            .await
            .unwrap();
        assert_eq!(journal, "wal");
        // Every connection of the pool, not only the first one.
        let mut connections = Vec::new();
        for _ in 0..4 {
            let mut connection = store.pool.acquire().await.unwrap();
            let synchronous: i64 = sqlx::query_scalar("PRAGMA synchronous")
                .fetch_one(&mut *connection)
                .await
                .unwrap();
            assert_eq!(synchronous, 1, "NORMAL");
            connections.push(connection);
        }
    }

    #[tokio::test]
    async fn membership_keeps_the_first_time() {
        let key = ConversationKey::new("!r", "a");
        let store = Store::in_memory().await.unwrap();
        assert_eq!(store.member_since(&key, 10).await.unwrap(), 10);
        assert_eq!(store.member_since(&key, 20).await.unwrap(), 10);
        store.forget_member(&key).await.unwrap();
        assert_eq!(store.member_since(&key, 30).await.unwrap(), 30);
        store.set_member_since(&key, 40).await.unwrap();
        assert_eq!(store.member_since(&key, 50).await.unwrap(), 40);
        store
            .set_member_since(&ConversationKey::new("!r", "b"), 40)
            .await
            .unwrap();
        store
            .set_member_since(&ConversationKey::new("!other", "c"), 40)
            .await
            .unwrap();
        assert_eq!(
            store.room_agents(&RoomId::from("!r")).await.unwrap(),
            vec!["a", "b"]
        );
    }

    #[tokio::test]
    async fn sessions_and_transcripts_round_trip() {
        let key = ConversationKey::new("!r", "a");
        let store = Store::in_memory().await.unwrap();
        assert_eq!(store.session(&key).await.unwrap(), None);
        store.save_session(&key, &"s1".into()).await.unwrap();
        store.save_session(&key, &"s2".into()).await.unwrap();
        assert_eq!(
            store.session(&key).await.unwrap(),
            Some(SessionId::from("s2"))
        );
        let prompt = TranscriptLine {
            role: Role::User,
            sender: &"@p:x".into(),
            event_id: Some(&"$1".into()),
            body: "hi",
            stop_reason: None,
        };
        store.append_transcript(&key, prompt).await.unwrap();
        // The same prompt again (run again after a restart): recorded once.
        store.append_transcript(&key, prompt).await.unwrap();
        let reply = TranscriptLine {
            role: Role::Agent,
            sender: &"@a:x".into(),
            event_id: Some(&"$2".into()),
            body: "hello",
            stop_reason: Some("end_turn"),
        };
        store.append_transcript(&key, reply).await.unwrap();
        let t = store.transcript(&key).await.unwrap();
        assert_eq!(t.len(), 2);
        assert_eq!((t[0].role.as_str(), t[1].body.as_str()), ("user", "hello"));
    }
}
