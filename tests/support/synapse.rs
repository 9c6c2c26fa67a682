//! A real Synapse homeserver for the tests: installed from PyPI into a cached virtualenv,
//! started on a free loopback port with a throwaway SQLite database, or a throwaway
//! PostgreSQL cluster as in production ([`SynapseOptions::postgres`]).

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use hmac::{Hmac, KeyInit, Mac};
use tempfile::TempDir;

use super::ports::{free_port, lost_port};
use super::postgres::Postgres;

const SHARED_SECRET: &str = "sidekicks-test-registration-secret";
/// A fixed signing key: this server never federates, so the key needs no secrecy.
const SIGNING_KEY: &str = "ed25519 a_test AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA\n";

/// The server name of every test homeserver (set in `scripts/synapse/homeserver.yaml.in`).
pub const SERVER_NAME: &str = "localhost";

/// How many times Synapse is started before a lost port fails the test.
const ATTEMPTS: usize = 5;

/// How the homeserver is configured.
#[derive(Debug, Clone, Copy, Default)]
pub struct SynapseOptions {
    /// Keep Synapse's default message rate limit (0.2/s, burst 10) instead of relaxing it.
    pub default_rate_limits: bool,
    /// A config of the test's own, made for Synapse's folder and port, instead of the
    /// harness's (which is what [`Synapse::register`] needs: its shared secret): how a
    /// config we ship, like the compose demo's, is run as it is.
    pub config_from: Option<fn(dir: &Path, port: u16) -> String>,
    /// Its database in a PostgreSQL cluster of its own (as Synapse is run in production)
    /// instead of SQLite, whose one writer every room's events wait on.
    pub postgres: bool,
    /// Hash passwords as deployed (bcrypt, 2^12 rounds) instead of the tests' 2^4: each
    /// registration and password sign-in then costs a few hundred milliseconds of the two
    /// cores, as it does in production (the benchmark's cold start counts one).
    pub deployed_password_hashing: bool,
}

/// A running Synapse.
pub struct Synapse {
    /// Base URL of the client API.
    pub url: String,
    /// Its port.
    pub port: u16,
    /// Holds its config, database and log.
    pub dir: TempDir,
    child: Option<Child>,
    options: SynapseOptions,
    /// Its database server, when it has one (dropped after Synapse is stopped).
    db: Option<Postgres>,
}

/// The cached virtualenv with Synapse, created on first use (a file lock keeps parallel
/// test binaries from installing it twice).
pub fn venv() -> PathBuf {
    let venv = std::env::var_os("SIDEKICKS_SYNAPSE_VENV")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            let home = std::env::var_os("HOME")
                .map(PathBuf::from)
                .unwrap_or_else(|| "/tmp".into());
            home.join(".cache/sidekicks/synapse-venv")
        });
    let marker = venv.join(".sidekicks-installed");
    if marker.exists() {
        return venv;
    }
    std::fs::create_dir_all(venv.parent().unwrap()).unwrap();
    let lock = std::fs::File::create(venv.with_extension("lock")).unwrap();
    lock.lock().unwrap();
    if !marker.exists() {
        eprintln!("installing Synapse into {} (once)…", venv.display());
        let ok = Command::new("python3")
            .arg("-m")
            .arg("venv")
            .arg(&venv)
            .status()
            .unwrap()
            .success();
        assert!(ok, "python3 -m venv failed");
        let ok = Command::new(venv.join("bin/pip"))
            .args([
                "install",
                "--quiet",
                "--disable-pip-version-check",
                "matrix-synapse",
            ])
            .status()
            .unwrap()
            .success();
        assert!(ok, "pip install matrix-synapse failed");
        std::fs::write(&marker, "").unwrap();
    }
    venv
}

/// Installs Synapse's PostgreSQL driver into `venv` (once; only runs that ask for a
/// PostgreSQL database need it).
fn with_postgres_driver(venv: &Path) {
    let marker = venv.join(".sidekicks-psycopg2");
    if marker.exists() {
        return;
    }
    let lock = std::fs::File::create(venv.with_extension("lock")).unwrap();
    lock.lock().unwrap();
    if !marker.exists() {
        let ok = Command::new(venv.join("bin/pip"))
            .args(["install", "--quiet", "--disable-pip-version-check"])
            .arg("psycopg2-binary")
            .status()
            .unwrap()
            .success();
        assert!(ok, "pip install psycopg2-binary failed");
        std::fs::write(&marker, "").unwrap();
    }
}

fn relaxed_limits() -> &'static str {
    r#"
rc_message: {per_second: 10000, burst_count: 10000}
rc_registration: {per_second: 10000, burst_count: 10000}
rc_login:
  address: {per_second: 10000, burst_count: 10000}
  account: {per_second: 10000, burst_count: 10000}
  failed_attempts: {per_second: 10000, burst_count: 10000}
rc_joins:
  local: {per_second: 10000, burst_count: 10000}
  remote: {per_second: 10000, burst_count: 10000}
rc_invites:
  per_room: {per_second: 10000, burst_count: 10000}
  per_user: {per_second: 10000, burst_count: 10000}
  per_issuer: {per_second: 10000, burst_count: 10000}
rc_key_requests: {per_second: 10000, burst_count: 10000}
rc_room_creation: {per_second: 10000, burst_count: 10000}
"#
}

impl Synapse {
    /// Starts a fresh homeserver and waits until it answers.
    pub async fn start(options: SynapseOptions) -> Self {
        let venv = venv();
        let db = match options.postgres {
            true => {
                with_postgres_driver(&venv);
                Some(Postgres::start().await)
            }
            false => None,
        };
        let dir = tempfile::Builder::new()
            .prefix("sidekicks-synapse-")
            .tempdir()
            .unwrap();
        let d = dir.path();
        std::fs::write(d.join("signing.key"), SIGNING_KEY).unwrap();
        let mut synapse = Self {
            url: String::new(),
            port: 0,
            dir,
            child: None,
            options,
            db,
        };
        // Another test may take the chosen port before Synapse binds it: choose again.
        for _ in 0..ATTEMPTS {
            synapse.configure(free_port());
            match synapse.launch(&venv).await {
                Ok(()) => return synapse,
                Err(log) if lost_port(&log) => eprintln!("synapse lost port {}", synapse.port),
                Err(log) => panic!("synapse exited:\n{log}"),
            }
        }
        panic!("synapse lost its port {ATTEMPTS} times in a row");
    }

    /// Writes the config for `port`.
    fn configure(&mut self, port: u16) {
        let d = self.dir.path();
        self.port = port;
        self.url = format!("http://127.0.0.1:{port}");
        if let Some(config_from) = self.options.config_from {
            std::fs::write(d.join("homeserver.yaml"), config_from(d, port)).unwrap();
            return;
        }
        let template = include_str!("../../scripts/synapse/homeserver.yaml.in");
        let limits = if self.options.default_rate_limits {
            ""
        } else {
            relaxed_limits()
        };
        let mut config = template
            .replace("@DIR@", &d.display().to_string())
            .replace("@PORT@", &port.to_string())
            .replace("@SECRET@", SHARED_SECRET)
            + limits;
        if !self.options.deployed_password_hashing {
            // Every test registers and signs in several users; nothing it checks depends
            // on how hard a password is to guess.
            config += "bcrypt_rounds: 4\n";
        }
        if let Some(db) = &self.db {
            let sqlite = config.find("database:\n  name: sqlite3").unwrap();
            let end = config[sqlite..].find(".db\n").unwrap() + sqlite + ".db\n".len();
            config.replace_range(sqlite..end, &db.synapse_database());
        }
        std::fs::write(d.join("homeserver.yaml"), config).unwrap();
    }

    /// Starts the process and waits until it answers; if it exits first, what it logged
    /// since it was started.
    async fn launch(&mut self, venv: &Path) -> Result<(), String> {
        let d = self.dir.path();
        let log_path = d.join("synapse.log");
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&log_path)
            .unwrap();
        let logged_before = log.metadata().unwrap().len() as usize;
        let child = Command::new(venv.join("bin/python"))
            .args(["-m", "synapse.app.homeserver", "-c"])
            .arg(d.join("homeserver.yaml"))
            .stdout(log.try_clone().unwrap())
            .stderr(log)
            .stdin(Stdio::null())
            .spawn()
            .expect("start synapse");
        self.child = Some(child);
        let deadline = Instant::now() + Duration::from_secs(60);
        let http = reqwest::Client::new();
        loop {
            let versions = http
                .get(format!("{}/_matrix/client/versions", self.url))
                .send()
                .await;
            if versions.is_ok_and(|r| r.status().is_success()) {
                return Ok(());
            }
            if let Some(status) = self.child.as_mut().unwrap().try_wait().unwrap() {
                self.child = None;
                let log = std::fs::read(&log_path).unwrap_or_default();
                let since = String::from_utf8_lossy(&log[logged_before.min(log.len())..]);
                return Err(format!("({status}) {since}"));
            }
            assert!(
                Instant::now() < deadline,
                "synapse did not start:\n{}",
                self.log_tail()
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// Whether the homeserver was started with Synapse's default rate limits.
    pub fn default_rate_limits(&self) -> bool {
        self.options.default_rate_limits
    }

    /// Synapse's whole log so far, its access log (each request's line) included.
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("synapse.log")).unwrap_or_default()
    }

    /// The end of Synapse's log, for failure messages.
    pub fn log_tail(&self) -> String {
        let log = self.log();
        let lines: Vec<&str> = log.lines().collect();
        lines[lines.len().saturating_sub(30)..].join("\n")
    }

    /// Registers a user with the shared secret; returns the full user ID.
    pub async fn register(&self, name: &str, password: &str) -> String {
        let http = reqwest::Client::new();
        let url = format!("{}/_synapse/admin/v1/register", self.url);
        let nonce: serde_json::Value =
            serde_json::from_str(&http.get(&url).send().await.unwrap().text().await.unwrap())
                .unwrap();
        let nonce = nonce["nonce"].as_str().unwrap().to_owned();
        let mut mac = Hmac::<sha1::Sha1>::new_from_slice(SHARED_SECRET.as_bytes()).unwrap();
        mac.update(format!("{nonce}\0{name}\0{password}\0notadmin").as_bytes());
        let body = serde_json::json!({
            "nonce": nonce,
            "username": name,
            "password": password,
            "admin": false,
            "mac": hex::encode(mac.finalize().into_bytes()),
        });
        let response = http
            .post(&url)
            .header("content-type", "application/json")
            .body(body.to_string())
            .send()
            .await
            .unwrap();
        let status = response.status();
        let text = response.text().await.unwrap();
        assert!(status.is_success(), "register {name}: {status} {text}");
        format!("@{name}:{SERVER_NAME}")
    }

    /// Starts the homeserver again after [`Synapse::stop`], on the same port and database.
    /// Its port is its own while it is down unless some other test happens to choose it
    /// too: then this waits for that to pass.
    pub async fn restart(&mut self) {
        self.stop();
        for _ in 0..ATTEMPTS {
            match self.launch(&venv()).await {
                Ok(()) => return,
                Err(log) if lost_port(&log) => {
                    eprintln!("synapse's port {} is taken; waiting", self.port);
                    tokio::time::sleep(Duration::from_secs(1)).await;
                }
                Err(log) => panic!("synapse exited:\n{log}"),
            }
        }
        panic!("synapse's port {} stayed taken", self.port);
    }

    /// Stops the homeserver (as if it went away).
    pub fn stop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

impl Drop for Synapse {
    fn drop(&mut self) {
        self.stop();
    }
}
