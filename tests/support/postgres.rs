//! A throwaway PostgreSQL cluster on loopback (Debian's `postgresql` package): for the
//! gateway's store on PostgreSQL ([`Postgres::new_database`]), and for a homeserver
//! configured as one is in production (Synapse documents SQLite as fit only for trying it
//! out, and with one writer for every room it is what a burst of 200 rooms waits on). Made
//! in a temporary folder with `initdb`, served by its own `postgres` process, and gone when
//! dropped.

use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use tempfile::TempDir;

use super::ports::free_port;

/// The database role and database made for the homeserver.
pub const DATABASE: &str = "synapse";

/// A running cluster with one database, [`DATABASE`], owned by the role of the same name
/// (trusted on loopback: nothing else can reach it).
pub struct Postgres {
    /// Its port on 127.0.0.1.
    pub port: u16,
    /// Holds its data folder, its socket and its log.
    dir: TempDir,
    /// The server, while it runs.
    child: Option<Child>,
}

/// The folder of Debian's PostgreSQL programs (`/usr/lib/postgresql/<version>/bin`, the
/// newest installed).
fn bin_dir() -> PathBuf {
    let mut versions: Vec<(u32, PathBuf)> = std::fs::read_dir("/usr/lib/postgresql")
        .expect("PostgreSQL is not installed (Debian package `postgresql`)")
        .filter_map(|e| e.ok())
        .filter_map(|e| Some((e.file_name().to_str()?.parse().ok()?, e.path().join("bin"))))
        .collect();
    versions.sort();
    versions.pop().expect("no PostgreSQL version installed").1
}

/// `program` of PostgreSQL, run as the `postgres` user when this process is root (the
/// server refuses to run as root).
fn command(program: &str) -> Command {
    let mut command = Command::new(bin_dir().join(program));
    if let Some((uid, gid)) = postgres_user() {
        command.uid(uid).gid(gid).env("HOME", "/tmp");
    }
    command
}

/// The `postgres` user's ids, when this process is root.
fn postgres_user() -> Option<(u32, u32)> {
    // SAFETY: getuid has no preconditions.
    if unsafe { libc::getuid() } != 0 {
        return None;
    }
    // SAFETY: a NUL-terminated name; the entry is read at once, before any other call.
    let entry = unsafe { libc::getpwnam(c"postgres".as_ptr()) };
    assert!(
        !entry.is_null(),
        "as root, the cluster runs as `postgres`: no such user"
    );
    // SAFETY: checked non-null above.
    Some(unsafe { ((*entry).pw_uid, (*entry).pw_gid) })
}

impl Postgres {
    /// Makes a cluster, starts it and makes the homeserver's database.
    pub async fn start() -> Self {
        let dir = tempfile::Builder::new()
            .prefix("sidekicks-postgres-")
            .tempdir()
            .unwrap();
        let data = dir.path().join("data");
        if let Some((uid, gid)) = postgres_user() {
            std::os::unix::fs::chown(dir.path(), Some(uid), Some(gid)).unwrap();
        }
        let ok = command("initdb")
            .arg("-D")
            .arg(&data)
            .args([
                "-U",
                DATABASE,
                "--auth=trust",
                "--encoding=UTF8",
                "--locale=C",
            ])
            .stdout(Stdio::null())
            .status()
            .unwrap()
            .success();
        assert!(ok, "initdb failed");
        let mut postgres = Self {
            port: free_port(),
            dir,
            child: None,
        };
        postgres.start_again().await;
        postgres.create_database(DATABASE);
        postgres
    }

    /// Serves the cluster (again, after [`Postgres::stop`]) on the same port, and waits
    /// until it takes connections.
    pub async fn start_again(&mut self) {
        let log = (std::fs::OpenOptions::new().create(true).append(true))
            .open(self.dir.path().join("postgres.log"))
            .unwrap();
        let child = command("postgres")
            .arg("-D")
            .arg(self.dir.path().join("data"))
            .args(["-p", &self.port.to_string(), "-k"])
            .arg(self.dir.path())
            .args(["-c", "listen_addresses=127.0.0.1"])
            .stdout(log.try_clone().unwrap())
            .stderr(log)
            .stdin(Stdio::null())
            .spawn()
            .expect("start postgres");
        self.child = Some(child);
        self.wait_ready().await;
    }

    /// Stops the server, as an outage or a restart would: its connections are cut.
    pub fn stop(&mut self) {
        if let Some(mut child) = self.child.take() {
            // SIGINT is PostgreSQL's "fast" shutdown (SIGTERM's "smart" one would wait
            // for the clients' connections).
            // SAFETY: the pid of our own child, not yet reaped.
            unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
            let _ = child.wait();
        }
    }

    /// A client program (`createdb`, `psql`) pointed at this server as [`DATABASE`]'s role.
    fn client(&self, program: &str) -> Command {
        let mut client = command(program);
        (client.args(["-h", "127.0.0.1", "-p", &self.port.to_string()])).args(["-U", DATABASE]);
        client
    }

    /// Makes the database `name` (UTF-8, C collation) owned by [`DATABASE`]'s role.
    fn create_database(&self, name: &str) {
        let ok = self
            .client("createdb")
            .args([
                "-E",
                "UTF8",
                "--lc-collate=C",
                "--lc-ctype=C",
                "-T",
                "template0",
            ])
            .arg(name)
            .status()
            .unwrap()
            .success();
        assert!(ok, "createdb {name} failed:\n{}", self.log_tail());
    }

    /// The first value `sql` gives in database `name`, as `psql` prints it.
    pub fn query(&self, name: &str, sql: &str) -> String {
        let out = self
            .client("psql")
            .args(["-d", name, "-tA", "-c", sql])
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "psql: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).unwrap().trim().to_owned()
    }

    /// Makes an empty database `name` and gives the URL a gateway's `store` names it by.
    pub fn new_database(&self, name: &str) -> String {
        self.create_database(name);
        format!("postgres://{DATABASE}@127.0.0.1:{}/{name}", self.port)
    }

    /// Waits until the server takes connections.
    async fn wait_ready(&self) {
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            let ready = command("pg_isready")
                .args(["-q", "-h", "127.0.0.1", "-p", &self.port.to_string()])
                .status()
                .unwrap()
                .success();
            if ready {
                return;
            }
            assert!(
                Instant::now() < deadline,
                "postgres did not start:\n{}",
                self.log_tail()
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// The end of the server's log.
    pub fn log_tail(&self) -> String {
        let log = std::fs::read_to_string(self.dir.path().join("postgres.log")).unwrap_or_default();
        let start = log.len().saturating_sub(4000);
        log[log.floor_char_boundary(start)..].to_owned()
    }

    /// Synapse's `database` section for this cluster.
    pub fn synapse_database(&self) -> String {
        format!(
            "database:\n  name: psycopg2\n  args:\n    user: {DATABASE}\n    database: {DATABASE}\n    \
             host: 127.0.0.1\n    port: {}\n    cp_min: 5\n    cp_max: 10\n",
            self.port
        )
    }
}

impl Drop for Postgres {
    fn drop(&mut self) {
        self.stop();
    }
}
