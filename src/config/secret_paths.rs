//! Every path the gateway's configuration names that no agent may see: the config itself,
//! the state folder, every password, key, identity, known-hosts, secret and token file, and
//! the store's password file. The sandbox shows an agent an allowlist, so most of these are
//! not there anyway; these are hidden even within what is shown, and a container refuses to
//! mount a folder that holds one.

use std::path::PathBuf;

use super::{Config, RunnerConfig};

impl Config {
    /// The files and folders of the gateway's own that its configuration names (see the
    /// module's doc). The agents' workspaces and homes are not among them: each agent's are
    /// its own.
    pub fn secret_paths(&self) -> Vec<PathBuf> {
        let mut paths = vec![self.state_dir.clone()];
        paths.extend(self.source.clone());
        paths.extend(self.matrix.store_passphrase_file.clone());
        // A webhook's secret would let an agent forge its deliveries.
        paths.extend(self.webhooks.iter().filter_map(|w| w.secret_file.clone()));
        // The speech service's key would let an agent spend on the operator's account.
        paths.extend(self.voice.key_file.clone());
        for agent in &self.agents {
            paths.extend(agent.matrix.password_file.clone());
            paths.extend(agent.matrix.access_token_file.clone());
            paths.extend(agent.matrix.recovery_key_file.clone());
            if let RunnerConfig::Ssh(ssh) = &agent.runner {
                // The key signs in to every build host, where the helper runs what it is
                // asked.
                paths.push(ssh.identity.clone());
                paths.push(ssh.known_hosts.clone());
            }
        }
        paths.extend(self.store_secret_paths());
        paths
    }

    /// The files a PostgreSQL store's client reads a password or a key from: `PGPASSFILE`
    /// (else `~/.pgpass`), `PGSSLKEY`, and the URL's `passfile`, `sslkey`, `sslcert` and
    /// `sslrootcert`. Nothing for SQLite (its file is in the state folder, or named by the
    /// URL: that one too).
    fn store_secret_paths(&self) -> Vec<PathBuf> {
        let Some(url) = self.store.as_deref().and_then(|u| url::Url::parse(u).ok()) else {
            return Vec::new();
        };
        if url.scheme() == "sqlite" {
            let file = url.as_str().trim_start_matches("sqlite://");
            let file = file.split('?').next().unwrap_or(file);
            return vec![PathBuf::from(file)];
        }
        let env = |name: &str| std::env::var_os(name).map(PathBuf::from);
        let mut paths: Vec<PathBuf> = (env("PGPASSFILE"))
            .or_else(|| env("HOME").map(|h| h.join(".pgpass")))
            .into_iter()
            .chain(env("PGSSLKEY"))
            .collect();
        paths.extend(
            (url.query_pairs())
                .filter(|(k, _)| ["passfile", "sslkey", "sslcert", "sslrootcert"].contains(&&**k))
                .map(|(_, v)| PathBuf::from(v.into_owned())),
        );
        paths
    }
}
