//! One agent's table in the config (`[[agents]]`): its program, workspace, environment, sandbox,
//! settings policy, MCP servers, worktree mode and Matrix account.

use std::collections::BTreeMap;
use std::path::PathBuf;

use serde::Deserialize;

use super::problems::Problems;
use super::{RunnerConfig, SandboxConfig, SandboxMode, yes};
use crate::model::ids::{AgentId, UserId};

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
    pub fn agent_id(&self) -> AgentId {
        AgentId::new(&self.id)
    }

    /// Its Matrix user as the rest of the gateway names it; `Config::problems` refuses a
    /// config whose `matrix.user_id` is not one (`UserId::parse`).
    pub fn user_id(&self) -> UserId {
        UserId::new(&self.matrix.user_id)
    }

    /// Whether its sessions reach the room tools through a socket file rather than on
    /// loopback: it has them, and has no network, or runs on another host (whose
    /// connection forwards the socket). The gateway serves the socket for such agents.
    pub fn room_tools_by_socket(&self) -> bool {
        self.room_tools
            && (self.sandbox.network == crate::acp::Network::None
                || matches!(self.runner, RunnerConfig::Ssh(_)))
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
    /// File whose content (trimmed) is an access token the homeserver issued for this
    /// user's device (a Matrix Authentication Service compatibility token): the agent signs
    /// in with it instead of a password, and it is read again at each start.
    pub access_token_file: Option<PathBuf>,
    /// The device the access token belongs to (with `access_token_file`).
    pub device_id: Option<String>,
    /// The agent's recovery key (or passphrase): with it, a lost store does not lose the
    /// agent's identity or the room keys in its key backup. When the file does not exist,
    /// recovery is turned on at the first start and the new key is written there.
    pub recovery_key_file: Option<PathBuf>,
}

pub use crate::model::Secret;

/// How an agent's Matrix user signs in.
#[derive(Debug, Clone)]
pub enum SignIn {
    /// With its password: a new device at the first start, the session kept after.
    Password(Secret),
    /// With an access token issued for `device_id`, read from `file` at each start.
    Token {
        /// The token.
        token: Secret,
        /// Its device.
        device_id: String,
        /// Where it was read from (named in errors; never its content).
        file: PathBuf,
    },
}

impl AgentMatrixConfig {
    /// How the agent signs in, its secret read from wherever the config says it is.
    pub fn sign_in(&self) -> Result<SignIn, String> {
        let Some(file) = &self.access_token_file else {
            return self.password().map(SignIn::Password);
        };
        let device_id = (self.device_id.clone())
            .ok_or("access_token_file needs the device_id the token was issued for")?;
        match std::fs::read_to_string(file) {
            Ok(text) if !text.trim().is_empty() => Ok(SignIn::Token {
                token: Secret::new(text.trim()),
                device_id,
                file: file.clone(),
            }),
            Ok(_) => Err(format!("{} is empty", file.display())),
            Err(e) => Err(format!("cannot read {}: {e}", file.display())),
        }
    }

    /// How it signs in, in words for `sidekicks check`.
    pub fn sign_in_words(&self) -> String {
        match (&self.access_token_file, &self.device_id) {
            (Some(file), Some(device)) => {
                format!("access token from {} (device {device})", file.display())
            }
            _ => "password (a device of its own, its session kept)".into(),
        }
    }

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

impl AgentConfig {
    /// Checks one agent's table; `gateway` is `[sandbox]`, whose mode it takes unless it
    /// has its own. (Whether its ID and user are another agent's is `Config::problems`'.)
    pub(super) fn check(&self, gateway: &SandboxConfig, problems: &mut Problems) {
        if AgentId::parse(&self.id).is_err() {
            problems.bad(
                "id",
                format!("`{}` must be letters, digits, - or _", self.id),
            );
        }
        if self.display_name.trim().is_empty() {
            problems.bad("display_name", "is empty");
        }
        if self.command.trim().is_empty() {
            problems.bad("command", "is empty");
        }
        self.check_mcp_servers(problems);
        self.check_workspace(problems);
        if let Some(worktree) = &self.worktree {
            self.check_worktree(worktree, problems);
        }
        if let Some(name) = &self.dialect
            && crate::acp::dialect::named(name).is_none()
        {
            let known: Vec<&str> = crate::acp::dialect::ALL.iter().map(|d| d.name).collect();
            problems.bad(
                "dialect",
                format!("`{name}` is not a known dialect ({})", known.join(", ")),
            );
        }
        self.check_runner(gateway, problems);
        problems.within("settings", |p| self.settings.check(p));
        for name in self.env.keys().chain(self.inherit_env.iter()) {
            if let Err(why) = crate::model::variable::check_name(name) {
                problems.bad("env", why);
            }
        }
        problems.within("matrix", |p| self.matrix.check(p));
    }

    /// Its MCP servers: each named once, and not with the room tools' name.
    fn check_mcp_servers(&self, problems: &mut Problems) {
        let mut names = std::collections::HashSet::new();
        for (j, server) in self.mcp_servers.iter().enumerate() {
            problems.within(format!("mcp_servers[{j}]"), |p| {
                if server.name.trim().is_empty() {
                    p.bad("name", "is empty");
                } else if !names.insert(server.name.clone()) {
                    p.bad("name", format!("`{}` is used twice", server.name));
                } else if self.room_tools && server.name == crate::mcp::SERVER_NAME {
                    p.bad(
                        "name",
                        format!(
                            "`{}` is the name of the room tools (room_tools = true)",
                            server.name
                        ),
                    );
                }
                server.check(p);
            });
        }
    }

    /// Its workspace: placeholders it knows, a plain path, a folder that exists here (on
    /// another host, the helper there says).
    fn check_workspace(&self, problems: &mut Problems) {
        let workspace = crate::workspace::Workspace::new(&self.workspace);
        if let Some(unknown) = crate::workspace::unknown_placeholder(&self.workspace) {
            problems.bad(
                "workspace",
                format!("`{unknown}` is not a placeholder (use {{room}} or {{agent}})"),
            );
        } else if workspace.per_room() && !crate::workspace::is_plain(&self.workspace) {
            problems.bad(
                "workspace",
                format!("{} must not contain `..`", self.workspace.display()),
            );
        } else if !self.workspace_root().is_dir() && !matches!(self.runner, RunnerConfig::Ssh(_)) {
            problems.bad(
                "workspace",
                format!(
                    "{} is not an existing folder",
                    self.workspace_root().display()
                ),
            );
        }
    }

    /// Worktree mode: a folder per room, a repository, a prefix git takes.
    fn check_worktree(&self, worktree: &WorktreeConfig, problems: &mut Problems) {
        if !crate::workspace::Workspace::new(&self.workspace).per_room() {
            problems.bad(
                "worktree",
                "needs {room} in workspace: each room's worktree is a folder of its own",
            );
        }
        let repository = &worktree.repository;
        if matches!(self.runner, RunnerConfig::Ssh(_)) {
            // On the agent's hosts: git there says when it is no repository.
        } else if !repository.join(".git").exists() && !repository.join("HEAD").is_file() {
            problems.bad(
                "worktree.repository",
                format!("{} is not a git repository", repository.display()),
            );
        }
        if let Some(prefix) = &worktree.branch_prefix
            && (prefix.is_empty() || prefix.contains("..") || prefix.contains(' '))
        {
            problems.bad(
                "worktree.branch_prefix",
                format!("`{prefix}` cannot start a git branch name"),
            );
        }
    }

    /// Its runner's table, and what that runner cannot have of the agent's others.
    fn check_runner(&self, gateway: &SandboxConfig, problems: &mut Problems) {
        let per_room_folders = crate::workspace::Workspace::new(&self.workspace).per_room();
        match &self.runner {
            RunnerConfig::Container(container) => {
                problems.within("runner", |p| container.check(p));
                if container.per_room && !per_room_folders {
                    problems.bad(
                        "runner.per_room",
                        "needs {room} in workspace: each room's container mounts its own folder",
                    );
                }
                // Every room's worktree shares the repository's git folder: a container per
                // room would let one room's agent plant what runs in another's (a hook,
                // `core.fsmonitor`) and read its work.
                if container.per_room && self.worktree.is_some() {
                    problems.bad(
                        "runner.per_room",
                        "cannot keep rooms apart in worktree mode: every room's worktree \
                         shares the repository's git folder, which each room's container \
                         would mount; use {room} folders without worktree, or one container \
                         for the agent",
                    );
                }
            }
            RunnerConfig::Ssh(ssh) => {
                problems.within("runner", |p| ssh.check(p));
                self.check_on_other_hosts(problems);
                // The helper there sandboxes every command wherever the host can: a client
                // cannot ask it off.
                if self.sandbox_mode(gateway) == SandboxMode::Off {
                    problems.bad(
                        "sandbox.mode",
                        "an agent on other hosts runs in the sandbox of its host wherever the \
                         host has bubblewrap; \"off\" cannot be asked of it (use \"auto\", or \
                         \"bubblewrap\" to require it)",
                    );
                }
            }
            RunnerConfig::Local => {
                if self.sandbox.network == crate::acp::Network::None
                    && self.sandbox_mode(gateway) == SandboxMode::Off
                {
                    problems.bad(
                        "sandbox.network",
                        "`none` needs the sandbox, which is off for this agent",
                    );
                }
            }
        }
    }

    /// The paths an agent on other hosts names are paths there: absolute, or in its home.
    fn check_on_other_hosts(&self, problems: &mut Problems) {
        if !self.workspace.is_absolute() {
            problems.bad(
                "workspace",
                format!(
                    "{} must be an absolute path on the agent's hosts",
                    self.workspace.display()
                ),
            );
        }
        let home = self
            .home
            .as_deref()
            .map(|h| h.to_string_lossy().into_owned());
        if home.is_some_and(|h| !(h.starts_with('/') || h.starts_with("~/"))) {
            problems.bad(
                "home",
                "must be an absolute path on the agent's hosts, or start with `~/`",
            );
        }
        if (self.worktree.as_ref()).is_some_and(|w| !w.repository.is_absolute()) {
            problems.bad(
                "worktree.repository",
                "must be an absolute path on the agent's hosts",
            );
        }
    }
}

impl McpServerConfig {
    /// Checks one MCP server: a command (stdio) or a URL (HTTP), with only its own keys.
    fn check(&self, problems: &mut Problems) {
        match (&self.command, &self.url) {
            (Some(_), Some(_)) | (None, None) => problems.bad(
                "",
                "needs either `command` (stdio) or `url` (HTTP), not both",
            ),
            (Some(_), None) if !self.headers.is_empty() => {
                problems.bad("headers", "only for an HTTP server (`url`)")
            }
            (None, Some(url)) => {
                if !(url.starts_with("http://") || url.starts_with("https://")) {
                    problems.bad("url", format!("`{url}` is no http(s) URL"));
                }
                if !self.args.is_empty() || !self.env.is_empty() {
                    problems.bad("", "`args` and `env` are only for a stdio server");
                }
            }
            _ => {}
        }
    }
}

impl AgentSettingsConfig {
    /// Checks `[agents.settings]`: no mode named by an empty ID.
    fn check(&self, problems: &mut Problems) {
        if (self.initial_mode.as_deref()).is_some_and(|m| m.trim().is_empty()) {
            problems.bad(
                "initial_mode",
                "is empty; name one of the agent's modes (`sidekicks check` lists them)",
            );
        }
        let listed = [&self.asking_modes, &self.modes];
        let empty = |m: &String| m.trim().is_empty();
        if listed.iter().copied().flatten().flatten().any(empty) {
            problems.bad("", "a mode list holds an empty mode ID");
        }
    }
}

impl AgentMatrixConfig {
    /// Checks `[agents.matrix]`: a user ID, one password source that can be read, a
    /// recovery key file in a folder that exists.
    fn check(&self, problems: &mut Problems) {
        let uid = &self.user_id;
        if UserId::parse(uid).is_err() {
            problems.bad(
                "user_id",
                format!("`{uid}` is not a Matrix user ID like `@name:example.org`"),
            );
        }
        let sources = [
            self.password.is_some(),
            self.password_env.is_some(),
            self.password_file.is_some(),
            self.access_token_file.is_some(),
        ];
        if sources.iter().filter(|given| **given).count() != 1 {
            problems.bad(
                "",
                "give exactly one of password, password_env, password_file, access_token_file",
            );
        } else if self.device_id.is_some() && self.access_token_file.is_none() {
            problems.bad("device_id", "only with access_token_file");
        } else if let Err(e) = self.sign_in() {
            problems.unreadable_secret("", e);
        }
        if let Some(file) = &self.recovery_key_file
            && !file.parent().is_some_and(std::path::Path::is_dir)
        {
            problems.bad(
                "recovery_key_file",
                format!("{} is not in an existing folder", file.display()),
            );
        }
    }
}
