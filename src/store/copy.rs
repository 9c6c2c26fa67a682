//! Moving an installation's state from one database to another (`sidekicks migrate`):
//! every row of every table, row IDs included, in one transaction on the new database,
//! which must be empty; the row counts are checked on both sides before it commits.

use futures::TryStreamExt;
use sqlx::any::AnyTypeInfoKind;
use sqlx::{AssertSqlSafe, Column, Row};

use super::{Backend, Store, StoreError};

/// Every table of the store, parents before the tables that refer to them
/// (`schedule_runs` and `webhook_deliveries` name a schedule). `tests/store_backends.rs`
/// checks that it names every table the migrations make.
pub const TABLES: &[&str] = &[
    "transcript",
    "handled_events",
    "room_members",
    "open_polls",
    "room_settings",
    "pending_inputs",
    "room_positions",
    "unfinished_messages",
    "outbox",
    "sessions",
    "conversation_starts",
    "unfinished_turns",
    "conversation_modes",
    "session_owners",
    "fork_sources",
    "schedules",
    "schedule_runs",
    "webhook_deliveries",
    "turn_refusals",
    "spend",
    "budget_limits",
];

/// Tables whose `id` the database hands out (on PostgreSQL, an identity column whose
/// counter must be moved past the copied IDs).
const NUMBERED: &[&str] = &[
    "transcript",
    "pending_inputs",
    "unfinished_messages",
    "outbox",
    "schedules",
    "spend",
];

/// Why a copy did not happen.
#[derive(Debug, thiserror::Error)]
pub enum CopyError {
    /// The new database already holds state: copying into it would mix two
    /// installations.
    #[error("the target database is not empty: its table {table} has {rows} rows")]
    TargetNotEmpty {
        /// The first table found with rows.
        table: &'static str,
        /// How many.
        rows: i64,
    },
    /// After the copy, a table's row count differs (nothing is committed).
    #[error("table {table}: {from} rows read, {to} in the target")]
    Count {
        /// The table.
        table: &'static str,
        /// Rows in the source.
        from: i64,
        /// Rows in the target.
        to: i64,
    },
    /// The source has a column no store migration makes.
    #[error("table {table}: unexpected column {column:?}")]
    Column {
        /// The table.
        table: String,
        /// The column's name.
        column: String,
    },
    /// A query failed.
    #[error(transparent)]
    Store(#[from] StoreError),
}

impl From<sqlx::Error> for CopyError {
    fn from(e: sqlx::Error) -> Self {
        CopyError::Store(e.into())
    }
}

/// One value read from a row, as the column holds it.
enum Value {
    /// An integer column's value (NULL included).
    Integer(Option<i64>),
    /// A text column's value (NULL included).
    Text(Option<String>),
}

impl Store {
    /// Copies every row of `self` into `to`, which must be empty; returns each table with
    /// its row count. Nothing is written to `to` unless all of it is.
    pub async fn copy_into(&self, to: &Store) -> Result<Vec<(&'static str, i64)>, CopyError> {
        for &table in TABLES {
            let rows = rows_in(&to.pool, table).await?;
            if rows > 0 {
                return Err(CopyError::TargetNotEmpty { table, rows });
            }
        }
        let mut tx = to.pool.begin().await?;
        let mut counts = Vec::new();
        for &table in TABLES {
            let order = if NUMBERED.contains(&table) {
                " ORDER BY id"
            } else {
                ""
            };
            // Table names are this module's own; column names are checked by `insert_for`.
            let select = AssertSqlSafe(format!("SELECT * FROM {table}{order}"));
            let mut rows = sqlx::query(select).fetch(&self.pool);
            let mut insert = None;
            while let Some(row) = rows.try_next().await? {
                let insert = match &insert {
                    Some(insert) => insert,
                    None => insert.insert(insert_for(table, &row)?),
                };
                let mut query = sqlx::query(AssertSqlSafe(insert.as_str()));
                for i in 0..row.columns().len() {
                    query = match read(&row, i)? {
                        Value::Integer(v) => query.bind(v),
                        Value::Text(v) => query.bind(v),
                    };
                }
                query.execute(&mut *tx).await?;
            }
            drop(rows);
            let from = rows_in(&self.pool, table).await?;
            let copied = rows_in(&mut *tx, table).await?;
            if copied != from {
                return Err(CopyError::Count {
                    table,
                    from,
                    to: copied,
                });
            }
            if to.backend == Backend::Postgres && NUMBERED.contains(&table) {
                sqlx::query(AssertSqlSafe(format!(
                    "SELECT setval(pg_get_serial_sequence('{table}', 'id'),
                     COALESCE((SELECT MAX(id) FROM {table}), 0) + 1, false)"
                )))
                .execute(&mut *tx)
                .await?;
            }
            counts.push((table, copied));
        }
        tx.commit().await?;
        Ok(counts)
    }
}

/// How many rows `table` holds, as `executor` (the pool, or the copy's transaction) sees it.
async fn rows_in<'c>(
    executor: impl sqlx::Executor<'c, Database = sqlx::Any>,
    table: &str,
) -> Result<i64, sqlx::Error> {
    sqlx::query_scalar(AssertSqlSafe(format!("SELECT COUNT(*) FROM {table}")))
        .fetch_one(executor)
        .await
}

/// The statement that inserts a row like `row` into `table`, naming its columns. A
/// column name is written into the statement, so one that is not a plain lower-case name
/// (as every column of the store is) stops the copy.
fn insert_for(table: &str, row: &sqlx::any::AnyRow) -> Result<String, CopyError> {
    let names: Vec<&str> = row.columns().iter().map(|c| c.name()).collect();
    if let Some(odd) = names
        .iter()
        .find(|n| n.is_empty() || !n.bytes().all(|b| b.is_ascii_lowercase() || b == b'_'))
    {
        return Err(CopyError::Column {
            table: table.to_owned(),
            column: (*odd).to_owned(),
        });
    }
    let placeholders: Vec<String> = (1..=names.len()).map(|i| format!("${i}")).collect();
    Ok(format!(
        "INSERT INTO {table} ({}) VALUES ({})",
        names.join(", "),
        placeholders.join(", ")
    ))
}

/// Column `i` of `row`, by the column's type: the store has only integer and text columns.
fn read(row: &sqlx::any::AnyRow, i: usize) -> Result<Value, sqlx::Error> {
    let column = &row.columns()[i];
    let integer = matches!(
        column.type_info().kind(),
        AnyTypeInfoKind::BigInt | AnyTypeInfoKind::Integer | AnyTypeInfoKind::SmallInt
    );
    if integer {
        return Ok(Value::Integer(row.try_get(i)?));
    }
    match row.try_get::<Option<String>, _>(i) {
        Ok(text) => Ok(Value::Text(text)),
        // SQLite reports a column's declared type only where it has one.
        Err(_) => Ok(Value::Integer(row.try_get(i)?)),
    }
}
