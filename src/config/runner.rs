//! `[agents.runner]`: where an agent's processes run (on this host, in containers, on other
//! hosts over SSH), each runner's table with its check.

use std::path::PathBuf;

use serde::Deserialize;

use super::problems::Problems;

/// Where an agent's processes run (`[agents.runner]`, chosen by `kind`).
#[derive(Debug, Clone, Default, Deserialize, PartialEq)]
#[serde(tag = "kind", rename_all = "lowercase")]
pub enum RunnerConfig {
    /// A child of the gateway on its own host, in the bubblewrap sandbox (`[sandbox]`).
    #[default]
    Local,
    /// A container of its own per agent process, started with Podman or Docker.
    Container(ContainerRunnerConfig),
    /// On another host, over SSH; its `workspace` and `home` are paths there.
    Ssh(SshRunnerConfig),
}

/// The SSH runner: the hosts an agent may run on and how the gateway signs in there. Each
/// host needs `sidekicks` installed (its `remote` helper runs the agent and does the file
/// work there) and, for the sandbox, bubblewrap.
#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct SshRunnerConfig {
    /// The hosts, as `ssh` destinations: `build1`, `agent@build1`,
    /// `ssh://agent@build1:2222`. A process starts on the least loaded one that answers.
    pub hosts: Vec<String>,
    /// The known-hosts file each host's key is checked against (required: a host whose key
    /// is not in it is refused).
    pub known_hosts: PathBuf,
    /// The private key the gateway signs in with.
    pub identity: PathBuf,
    /// The `ssh` client: a name in the gateway's `PATH` or a path.
    #[serde(default = "ssh")]
    pub ssh: PathBuf,
    /// The `sidekicks` program on the hosts: a path there, or a name in the remote user's
    /// `PATH`.
    #[serde(default = "sidekicks")]
    pub program: String,
    /// Seconds connecting to a host may take before it counts as down.
    #[serde(default = "connect_timeout_secs")]
    pub connect_timeout_secs: u64,
}

fn ssh() -> PathBuf {
    "ssh".into()
}

fn sidekicks() -> String {
    "sidekicks".into()
}

fn connect_timeout_secs() -> u64 {
    10
}

/// The container runner: the engine, the image and the container's limits. Its network is
/// `[agents.sandbox] network`; its mounts are its workspace, its home and
/// `[agents.sandbox] read_write`/`read_only`.
#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct ContainerRunnerConfig {
    /// The engine: `podman` (the default) or `docker`, by name in the gateway's `PATH`, or
    /// a path.
    #[serde(default = "podman")]
    pub engine: PathBuf,
    /// The image the agent runs from; it must hold the agent's `command`. The engine must
    /// already have it (the gateway pulls nothing).
    pub image: String,
    /// CPUs each container may use (`1.5`); unset: no limit.
    pub cpus: Option<f64>,
    /// Memory each container may use (`512m`, `2g`); unset: no limit.
    pub memory: Option<String>,
    /// Processes each container may run at once.
    #[serde(default = "pids_limit")]
    pub pids_limit: u32,
    /// One agent process, in a container of its own, per room (with `{room}` in the
    /// workspace): each room's container mounts only that room's folder, so one
    /// conversation's agent cannot see another's files. `false`: one container serves all
    /// the agent's rooms.
    #[serde(default)]
    pub per_room: bool,
    /// With `per_room`, the most room containers of this agent running at once (0: no
    /// limit): a room's container holds a whole agent process, and a team's rooms can be
    /// many more than the host has memory for.
    #[serde(default)]
    pub max_rooms: usize,
}

fn podman() -> PathBuf {
    "podman".into()
}

fn pids_limit() -> u32 {
    crate::acp::Container::DEFAULT_PIDS_LIMIT
}

impl ContainerRunnerConfig {
    /// Checks a container runner's own settings (how they fit the agent's other tables is
    /// `AgentConfig::check`'s).
    pub(super) fn check(&self, problems: &mut Problems) {
        let image = &self.image;
        if image.trim().is_empty() || image.starts_with('-') || image.contains(char::is_whitespace)
        {
            problems.bad(
                "image",
                format!("`{image}` is not an image name (such as `registry.example/agent:1`)"),
            );
        }
        if self.cpus.is_some_and(|n| !(n.is_finite() && n > 0.0)) {
            problems.bad("cpus", "must be a number of CPUs above 0, such as 1.5");
        }
        if let Some(m) = self.memory.as_deref().filter(|m| !is_memory_amount(m)) {
            problems.bad(
                "memory",
                format!("`{m}` is not an amount of memory (such as `512m` or `2g`)"),
            );
        }
        problems.at_least("pids_limit", self.pids_limit.into(), 1);
        if self.max_rooms > 0 && !self.per_room {
            problems.bad(
                "max_rooms",
                "bounds the containers of per_room = true, which is not set",
            );
        }
    }
}

/// Digits and at most one unit letter, as the engines read `--memory`.
fn is_memory_amount(m: &str) -> bool {
    let digits = m.trim_end_matches(['b', 'k', 'm', 'g', 'B', 'K', 'M', 'G']);
    !digits.is_empty() && digits.chars().all(|c| c.is_ascii_digit()) && m.len() - digits.len() <= 1
}

impl SshRunnerConfig {
    /// Checks an SSH runner's own settings.
    pub(super) fn check(&self, problems: &mut Problems) {
        if self.hosts.is_empty() {
            problems.bad("hosts", "names no host");
        }
        for host in &self.hosts {
            if host.is_empty() || host.starts_with('-') || host.contains(char::is_whitespace) {
                problems.bad(
                    "hosts",
                    format!("`{host}` is not an ssh destination (such as `agent@build1`)"),
                );
            }
        }
        for (key, file) in [
            ("known_hosts", &self.known_hosts),
            ("identity", &self.identity),
        ] {
            if !file.is_file() {
                problems.bad(key, format!("{} is not a file", file.display()));
            }
        }
        if self.program.trim().is_empty() || self.connect_timeout_secs == 0 {
            problems.bad(
                "program",
                "program must name sidekicks on the hosts, and connect_timeout_secs be at least 1",
            );
        }
    }
}
