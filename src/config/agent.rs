//! One agent's table in the config (`[[agents]]`): its program, workspace, environment, sandbox,
//! settings policy, MCP servers, worktree mode and Matrix account.

use std::collections::BTreeMap;
use std::path::PathBuf;

use serde::Deserialize;

use super::{SandboxConfig, SandboxMode, yes};

/// The mode an agent's sessions are put in, which of its modes count as asking before it
/// acts, and which modes and option values people who are not admins may choose with
/// `!mode`, `!model` and `!set`; admins may choose anything the agent offers.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct AgentSettingsConfig {
    /// The mode every session is put in when it is opened, loaded, resumed or attached;
    /// unset: the mode its dialect records as asking before acting (Claude Code's
    /// `default`, Codex's `read-only`). Naming a mode that does not ask is an admin's
    /// choice for every room.
    pub initial_mode: Option<String>,
    /// The modes (IDs) that ask an approver before the agent acts; unset: those its
    /// dialect records. Anyone who may prompt may choose these; every other mode, known or
    /// new, is for admins only.
    pub asking_modes: Option<Vec<String>>,
    /// Of the asking modes, the ones they may choose; unset: every asking mode.
    pub modes: Option<Vec<String>>,
    /// No longer used (modes are an allowlist now: `asking_modes`); read only to warn.
    pub admin_only_modes: Option<Vec<String>>,
    /// For each option ID listed, the values they may choose (`model = ["sonnet"]`).
    pub options: BTreeMap<String, Vec<String>>,
}

/// One agent's sandbox: its mode and what it may reach besides its workspace and home.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct AgentSandboxConfig {
    /// Overrides `sandbox.mode` for this agent.
    pub mode: Option<SandboxMode>,
    /// Paths it may read even where they would be hidden (an agent installed in the
    /// gateway's home, credentials it needs).
    pub read_only: Vec<PathBuf>,
    /// Paths it may read and write besides its workspace and home (a shared cache).
    pub read_write: Vec<PathBuf>,
    /// Its network in the sandbox: `host` (the default: it calls its model) or `none` (a
    /// loopback of its own; the room tools still reach it, over a socket file).
    pub network: crate::acp::Network,
}

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

/// One agent: the process to run and the Matrix account it speaks through.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AgentConfig {
    /// Short stable identifier (letters, digits, `-`, `_`), used in the store and in logs.
    pub id: String,
    /// Name shown in rooms; set as the Matrix display name.
    pub display_name: String,
    /// Program to run (a path, or a name looked up in `PATH`).
    pub command: String,
    /// Arguments for the program.
    #[serde(default)]
    pub args: Vec<String>,
    /// Environment given to the agent. Apart from these, the agent only gets `PATH` and `HOME`
    /// and the variables named in `inherit_env`.
    #[serde(default)]
    pub env: BTreeMap<String, Secret>,
    /// Names of gateway environment variables passed through to the agent unchanged.
    #[serde(default)]
    pub inherit_env: Vec<String>,
    /// The agent's working folder: the `cwd` of its process and of every ACP session. With
    /// `{room}` in it, each room works in a folder of its own, made on first use (the part
    /// before `{room}` is the process's `cwd`); `{agent}` stands for the agent's ID.
    pub workspace: PathBuf,
    /// The agent's known deviations from canonical ACP, by dialect name (`acp`, `mm`,
    /// `claude-code`, `codex`, `gemini`). Unset: recognised from the agent's ID or the name
    /// it gives at `initialize`, else canonical ACP.
    pub dialect: Option<String>,
    /// The agent's `HOME`, where it keeps its settings and sign-in. Unset: in the sandbox,
    /// a home of its own in the state folder (`agent-homes/ID`); without one, the
    /// gateway's.
    pub home: Option<PathBuf>,
    /// What its sandbox lets it reach (see [`SandboxConfig`]).
    #[serde(default)]
    pub sandbox: AgentSandboxConfig,
    /// Where its processes run: on this host in the sandbox (the default), in containers,
    /// or on other hosts over SSH.
    #[serde(default)]
    pub runner: RunnerConfig,
    /// Which modes and option values people who are not admins may choose.
    #[serde(default)]
    pub settings: AgentSettingsConfig,
    /// Worktree mode: each room's folder (`workspace` must hold `{room}`) is a `git
    /// worktree` of this repository on a branch of its own.
    pub worktree: Option<WorktreeConfig>,
    /// MCP servers given to every session of the agent (`[[agents.mcp_servers]]`).
    #[serde(default)]
    pub mcp_servers: Vec<McpServerConfig>,
    /// Whether the agent may read and write its conversation's files through Sidekicks
    /// (the ACP client's `fs` methods, confined to the conversation's folder). Some agents
    /// ask before running tools only when the client offers it.
    #[serde(default = "yes")]
    pub file_access: bool,
    /// Whether the agent may run commands through Sidekicks (the ACP client's `terminal`
    /// methods), in its conversation's folder and its sandbox, shown live in tool cards.
    #[serde(default = "yes")]
    pub terminals: bool,
    /// Whether the agent's sessions get the room tools: a built-in MCP server (named
    /// `sidekicks`) to read and search the conversation, fetch files people sent, post
    /// files and list the room's members, reaching only the session's own room.
    #[serde(default = "yes")]
    pub room_tools: bool,
    /// The agent's Matrix account.
    pub matrix: AgentMatrixConfig,
}

/// One MCP server of an agent: a command the agent starts (stdio) or a URL (HTTP).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct McpServerConfig {
    /// Its name, for the agent.
    pub name: String,
    /// For a stdio server: the program the agent starts (reachable inside its sandbox).
    pub command: Option<PathBuf>,
    /// For a stdio server: its arguments.
    #[serde(default)]
    pub args: Vec<String>,
    /// For a stdio server: its environment (values are secrets, masked in the log).
    #[serde(default)]
    pub env: BTreeMap<String, Secret>,
    /// For an HTTP server: its URL.
    pub url: Option<String>,
    /// For an HTTP server: headers sent with each request (values are secrets).
    #[serde(default)]
    pub headers: BTreeMap<String, Secret>,
}

impl McpServerConfig {
    /// The server as agents are given it (`None` for one the validation refuses).
    pub fn spec(&self) -> Option<crate::model::agent::McpServerSpec> {
        let pairs =
            |m: &BTreeMap<String, Secret>| m.iter().map(|(k, v)| (k.clone(), v.clone())).collect();
        match (&self.command, &self.url) {
            (Some(command), None) => Some(crate::model::agent::McpServerSpec::Stdio {
                name: self.name.clone(),
                command: command.clone(),
                args: self.args.clone(),
                env: pairs(&self.env),
            }),
            (None, Some(url)) => Some(crate::model::agent::McpServerSpec::Http {
                name: self.name.clone(),
                url: url.clone(),
                headers: pairs(&self.headers),
            }),
            _ => None,
        }
    }
}

/// Worktree mode: where each room's worktree comes from.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WorktreeConfig {
    /// The git repository whose worktrees the rooms get.
    pub repository: PathBuf,
    /// What a room's new branch starts from (a branch, tag or commit); unset: the
    /// repository's `HEAD` when the room first needs its folder.
    pub base: Option<String>,
    /// The start of each room's branch name, the room's folder name following; unset:
    /// `sidekicks/AGENT/`.
    pub branch_prefix: Option<String>,
}

impl AgentConfig {
    /// Its ID as the rest of the gateway names it. `Config::problems` refuses a config
    /// whose agent ID is not one (`AgentId::parse`), so every running agent's is.
    pub fn agent_id(&self) -> crate::model::ids::AgentId {
        crate::model::ids::AgentId::new(&self.id)
    }

    /// Its Matrix user as the rest of the gateway names it; `Config::problems` refuses a
    /// config whose `matrix.user_id` is not one (`UserId::parse`).
    pub fn user_id(&self) -> crate::model::ids::UserId {
        crate::model::ids::UserId::new(&self.matrix.user_id)
    }

    /// Whether its sessions reach the room tools through a socket file rather than on
    /// loopback: it has them, and has no network, or runs on another host (whose
    /// connection forwards the socket). The gateway serves the socket for such agents.
    pub fn room_tools_by_socket(&self) -> bool {
        self.room_tools
            && (self.sandbox.network == crate::acp::Network::None
                || matches!(self.runner, super::RunnerConfig::Ssh(_)))
    }

    /// The folder its process works in and everything its conversations' folders are in
    /// (the whole `workspace` unless it holds `{room}`).
    pub fn workspace_root(&self) -> PathBuf {
        crate::workspace::Workspace::new(&self.workspace).root()
    }

    /// Its worktree mode, when it has one.
    pub fn worktrees(&self) -> Option<crate::workspace::Worktrees> {
        let w = self.worktree.as_ref()?;
        Some(crate::workspace::Worktrees {
            repository: w.repository.clone(),
            base: w.base.clone(),
            branch_prefix: (w.branch_prefix.clone())
                .unwrap_or_else(|| format!("sidekicks/{}/", self.id)),
            launcher: None,
            remote: None,
        })
    }

    /// Its workspace, in worktree mode when it has one.
    pub fn workspace(&self) -> crate::workspace::Workspace {
        crate::workspace::Workspace::new(&self.workspace).with_worktrees(self.worktrees())
    }

    /// Its sandbox mode: its own, else the gateway's.
    pub fn sandbox_mode(&self, gateway: &SandboxConfig) -> SandboxMode {
        self.sandbox.mode.unwrap_or(gateway.mode)
    }
}

/// An agent's Matrix account.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AgentMatrixConfig {
    /// Full Matrix user ID, e.g. `@claude:example.org`.
    pub user_id: String,
    /// Password given inline (prefer `password_env` or `password_file`).
    pub password: Option<Secret>,
    /// Name of an environment variable holding the password.
    pub password_env: Option<String>,
    /// File whose content (trimmed) is the password.
    pub password_file: Option<PathBuf>,
    /// The agent's recovery key (or passphrase): with it, a lost store does not lose the
    /// agent's identity or the room keys in its key backup. When the file does not exist,
    /// recovery is turned on at the first start and the new key is written there.
    pub recovery_key_file: Option<PathBuf>,
}

pub use crate::model::Secret;

impl AgentMatrixConfig {
    /// Reads the password from wherever the config says it is.
    pub fn password(&self) -> Result<Secret, String> {
        if let Some(p) = &self.password {
            return Ok(p.clone());
        }
        if let Some(var) = &self.password_env {
            return std::env::var(var)
                .map(Secret::new)
                .map_err(|_| format!("environment variable {var} is not set"));
        }
        if let Some(file) = &self.password_file {
            return std::fs::read_to_string(file)
                .map(|s| Secret::new(s.trim()))
                .map_err(|e| format!("cannot read {}: {e}", file.display()));
        }
        Err("no password: set one of password, password_env, password_file".into())
    }
}
