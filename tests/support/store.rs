//! The gateway's store in a test: the embedded SQLite file, or a database on a throwaway
//! PostgreSQL cluster, so that a suite can run on both ([`on_both_stores`]).

use super::postgres::Postgres;

/// The database the gateway's store gets on the cluster.
const DATABASE: &str = "sidekicks";

/// Which database the gateway keeps its state in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StoreKind {
    /// The default: `state_dir/sidekicks.db`.
    Sqlite,
    /// A PostgreSQL server (`store = "postgres://…"`).
    Postgres,
}

/// The store of one test's gateway; a PostgreSQL cluster lives as long as this.
pub struct TestStore {
    /// The cluster, for [`StoreKind::Postgres`].
    postgres: Option<Postgres>,
    /// The `store` URL, for [`StoreKind::Postgres`].
    url: Option<String>,
}

impl TestStore {
    /// Makes the store of `kind` (for PostgreSQL, starts a cluster with an empty database).
    pub async fn start(kind: StoreKind) -> Self {
        match kind {
            StoreKind::Sqlite => Self {
                postgres: None,
                url: None,
            },
            StoreKind::Postgres => {
                let postgres = Postgres::start().await;
                let url = postgres.new_database(DATABASE);
                Self {
                    postgres: Some(postgres),
                    url: Some(url),
                }
            }
        }
    }

    /// `extra_toml` for the gateway's config (it goes at the top) with the store in front.
    pub fn config(&self, extra_toml: &str) -> String {
        match &self.url {
            Some(url) => format!("store = {url:?}\n{extra_toml}"),
            None => extra_toml.to_owned(),
        }
    }
}

impl Drop for TestStore {
    /// A test on PostgreSQL that passed must have had the gateway keep its state there (and
    /// not, say, in a SQLite file beside a `store` it ignored).
    fn drop(&mut self) {
        if let Some(postgres) = &self.postgres
            && !std::thread::panicking()
        {
            let handled = postgres.query(DATABASE, "SELECT COUNT(*) FROM handled_events");
            assert_ne!(handled, "0", "the gateway handled nothing in PostgreSQL");
        }
    }
}

/// Declares, for each `async fn NAME(kind: StoreKind)` given, a module `NAME` with two
/// tests: `sqlite` and `postgres`.
#[macro_export]
macro_rules! on_both_stores {
    ($($name:ident),* $(,)?) => {$(
        mod $name {
            use super::support::store::StoreKind;

            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn sqlite() {
                super::$name(StoreKind::Sqlite).await
            }

            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn postgres() {
                super::$name(StoreKind::Postgres).await
            }
        }
    )*};
}
