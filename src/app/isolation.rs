//! What each agent process can reach: whether it runs in the sandbox (or why not), what the
//! sandbox hides from it, and its `HOME`.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::acp::{Container, Sandbox};
use crate::config::{
    AgentConfig, Config, ContainerRunnerConfig, RunnerConfig, SandboxMode, SshRunnerConfig,
};
use crate::remote::wire::{Boxing, SandboxWish};
use crate::remote::{Link, SshSettings};
use crate::state_dir;

/// Where one agent runs.
#[derive(Debug)]
pub struct Isolation {
    /// Its sandbox; `None`: it sees what the gateway's Unix user sees, or it runs in a
    /// container.
    pub sandbox: Option<Sandbox>,
    /// Its container, when its runner is `container`.
    pub container: Option<Container>,
    /// Its way to its hosts, when its runner is `ssh`.
    pub remote: Option<Arc<Link>>,
    /// Its `HOME`; `None`: the gateway's.
    pub home: Option<PathBuf>,
    /// One line for `sidekicks check` and the start-up log.
    pub summary: String,
    /// What it sees of the host, a line each, for `sidekicks check` (the network last).
    pub sees: Vec<String>,
}

/// Whether bubblewrap works here, asked once per run.
#[derive(Debug, Default)]
pub struct Probe(Option<Result<(), String>>);

impl Probe {
    fn result(&mut self, program: &Path) -> Result<(), String> {
        self.0
            .get_or_insert_with(|| Sandbox::probe(program))
            .clone()
    }
}

/// How `agent` runs. `Err` when it must be sandboxed and cannot be, or its home cannot be
/// made.
pub fn isolation(
    config: &Config,
    agent: &AgentConfig,
    probe: &mut Probe,
) -> Result<Isolation, String> {
    match &agent.runner {
        RunnerConfig::Container(runner) => return in_container(config, agent, runner),
        RunnerConfig::Ssh(runner) => return on_hosts(config, agent, runner),
        RunnerConfig::Local => {}
    }
    let mode = agent.sandbox_mode(&config.sandbox);
    // An agent without a network has it from the sandbox only: it must have one.
    let mode = match (mode, agent.sandbox.network) {
        (SandboxMode::Auto, crate::acp::Network::None) => SandboxMode::Bubblewrap,
        (mode, _) => mode,
    };
    let unavailable = match mode {
        SandboxMode::Off => {
            return Ok(Isolation {
                sandbox: None,
                container: None,
                remote: None,
                home: agent.home.clone(),
                summary: "off (sandbox.mode = \"off\"): the agent can read whatever the gateway's user can".into(),
                sees: vec![UNBOXED.into()],
            });
        }
        _ => match Sandbox::locate(&config.sandbox.bwrap) {
            Ok(program) => probe.result(&program).err(),
            Err(why) => Some(why),
        },
    };
    if let Some(why) = unavailable {
        return match mode {
            SandboxMode::Bubblewrap => Err(format!(
                "the sandbox is required (sandbox.mode = \"bubblewrap\") but {why}"
            )),
            _ => Ok(Isolation {
                sandbox: None,
                container: None,
                remote: None,
                home: agent.home.clone(),
                summary: format!(
                    "none: {why}; the agent can read whatever the gateway's user can, the \
                     state folder with every access token included"
                ),
                sees: vec![UNBOXED.into()],
            }),
        };
    }
    let home = agent_home(config, agent)?;
    let sandbox = sandbox(config, agent, &home)?;
    let mut sees = sandbox.seen();
    sees.push(format!("network: {}", network_words(agent.sandbox.network)));
    Ok(Isolation {
        sandbox: Some(sandbox),
        container: None,
        remote: None,
        home: Some(home.clone()),
        summary: format!(
            "bubblewrap: sees the system, its program's folders, its workspace and {} \
             (writable) and nothing else of the host; network: {}",
            home.display(),
            network_words(agent.sandbox.network),
        ),
        sees,
    })
}

/// What an agent without a box sees, for `sidekicks check`.
const UNBOXED: &str = "whatever the gateway's user can read and write";

/// How the log and `sidekicks check` name a boxed agent's network.
fn network_words(network: crate::acp::Network) -> &'static str {
    match network {
        crate::acp::Network::Host => "the host's",
        crate::acp::Network::None => "none (loopback only)",
    }
}

/// The home of a boxed agent (configured, else its own in the state folder), made private
/// if it is not there.
fn agent_home(config: &Config, agent: &AgentConfig) -> Result<PathBuf, String> {
    let home = agent.home.clone().unwrap_or_else(|| {
        config
            .state_dir
            .join(state_dir::AGENT_HOMES)
            .join(&agent.id)
    });
    state_dir::create_private(&home)
        .map_err(|e| format!("cannot create the agent's home {}: {e}", home.display()))?;
    Ok(home)
}

/// In worktree mode, the repository's git folder, which the agent writes when it commits.
fn git_folder(agent: &AgentConfig) -> Result<Option<PathBuf>, String> {
    agent
        .worktrees()
        .map(|w| {
            w.git_folder().map_err(|e| {
                format!(
                    "cannot find the git folder of {}: {e}",
                    w.repository.display()
                )
            })
        })
        .transpose()
}

/// Without a network, the room tools come through their socket file, bound in.
fn room_tools_bind(config: &Config, agent: &AgentConfig) -> Vec<(PathBuf, PathBuf)> {
    match (agent.sandbox.network, agent.room_tools) {
        (crate::acp::Network::None, true) => vec![(
            room_tools_socket(&config.state_dir),
            PathBuf::from(crate::model::agent::ROOM_TOOLS_SOCKET),
        )],
        _ => vec![],
    }
}

/// How `agent` runs in containers of `runner`'s image: its workspace, its home, the paths
/// its sandbox settings add and (without network) the room tools' socket mounted; the
/// gateway's own program mounted read-only where it is, for the room tools' stdio bridge.
/// `Err` when the engine or the image is missing, or a path cannot be mounted.
fn in_container(
    config: &Config,
    agent: &AgentConfig,
    runner: &ContainerRunnerConfig,
) -> Result<Isolation, String> {
    let engine = Container::locate(&runner.engine)?;
    let home = agent_home(config, agent)?;
    let read_write: Vec<PathBuf> = [agent.workspace_root(), home.clone()]
        .into_iter()
        .chain(git_folder(agent)?)
        .chain(agent.sandbox.read_write.iter().cloned())
        .collect();
    let read_only: Vec<PathBuf> = (agent.sandbox.read_only.iter().cloned())
        .chain(std::env::current_exe().ok().filter(|_| agent.room_tools))
        .collect();
    let binds = room_tools_bind(config, agent);
    let paths =
        (read_write.iter().chain(&read_only)).chain(binds.iter().map(|(outside, _)| outside));
    let paths: Vec<&PathBuf> = paths.collect();
    if let Some(why) = paths.iter().find_map(|p| Container::unmountable(p)) {
        return Err(why);
    }
    // A container shows all of a mounted folder: one holding what the sandbox would hide
    // (the state folder, the config, a password file, another agent's files) is refused.
    let secrets = hidden(config, agent);
    if let Some((mount, secret)) = exposed(&paths, &secrets) {
        return Err(format!(
            "{} would be mounted in the agent's container, and it holds {}, which a container \
             cannot hide: give the agent a folder without it",
            mount.display(),
            secret.display()
        ));
    }
    Container::probe(&engine, &runner.image)?;
    // SAFETY: getuid(2) and getgid(2) cannot fail and touch no memory.
    let user = unsafe { (libc::getuid(), libc::getgid()) };
    let container = Container {
        engine,
        image: runner.image.clone(),
        network: agent.sandbox.network,
        cpus: runner.cpus,
        memory: runner.memory.clone(),
        pids_limit: runner.pids_limit,
        read_write,
        read_only,
        binds,
        state: config.state_dir.clone(),
        user,
        name: None,
        room_home: None,
    };
    let summary = format!(
        "container ({} image {}): sees its image, {} and {} only; network: {}; \
         limits: {} CPUs, {} memory, {} processes",
        container.engine.display(),
        container.image,
        match runner.per_room {
            true => "a container per room, each with its room's folder",
            false => "its workspace",
        },
        home.display(),
        network_words(agent.sandbox.network),
        runner.cpus.map_or("no limit on".into(), |c| c.to_string()),
        runner.memory.as_deref().unwrap_or("no limit on"),
        runner.pids_limit,
    );
    let sees = container_sees(&container, agent, runner.per_room, &home);
    Ok(Isolation {
        sandbox: None,
        container: Some(container),
        remote: None,
        home: Some(home),
        summary,
        sees,
    })
}

/// How `agent` runs on other hosts over SSH: the `ssh` client found here; its home and
/// workspace paths there; the sandbox there as `sandbox.mode` asks (`auto`: where the host
/// has bubblewrap), hiding what it would hide here too (the other agents' workspaces; the
/// gateway's state and keys, should a host be this one). `Err` when `ssh` is missing.
fn on_hosts(
    config: &Config,
    agent: &AgentConfig,
    runner: &SshRunnerConfig,
) -> Result<Isolation, String> {
    let ssh = crate::acp::locate_program(&runner.ssh, "Debian package `openssh-client`")?;
    let home = match &agent.home {
        Some(home) => home.to_string_lossy().into_owned(),
        None => format!("~/{}/{}", crate::remote::AGENT_HOMES, agent.id),
    };
    let sandbox = match agent.sandbox_mode(&config.sandbox) {
        // The helper there sandboxes wherever it can; the config refuses to ask otherwise.
        SandboxMode::Off => {
            return Err(
                "an agent on other hosts runs in their sandbox: sandbox.mode \
                        \"off\" cannot be kept"
                    .into(),
            );
        }
        SandboxMode::Bubblewrap => SandboxWish::Required,
        // Without a network the sandbox is the only way to have none; the room tools come
        // through a socket only the sandbox can bind in.
        SandboxMode::Auto
            if agent.sandbox.network == crate::acp::Network::None || agent.room_tools =>
        {
            SandboxWish::Required
        }
        SandboxMode::Auto => SandboxWish::Auto,
    };
    // What is the gateway's stays hidden there too, should the host be this one.
    let hide = hidden(config, agent);
    let ssh_state = config.state_dir.join("ssh");
    let settings = SshSettings {
        ssh,
        hosts: runner.hosts.clone(),
        known_hosts: runner.known_hosts.clone(),
        identity: runner.identity.clone(),
        program: runner.program.clone(),
        connect_timeout: std::time::Duration::from_secs(runner.connect_timeout_secs),
        boxing: Boxing {
            home: home.clone(),
            workspace: agent.workspace_root(),
            repository: agent.worktree.as_ref().map(|w| w.repository.clone()),
            sandbox,
            offline: agent.sandbox.network == crate::acp::Network::None,
            hide,
        },
        room_tools: agent
            .room_tools
            .then(|| room_tools_socket(&config.state_dir)),
        // The runner's own folder in the state: the host each agent ran on, the sockets.
        remembered: Some(ssh_state.join(format!("{}.host", agent.id))),
        sockets: Some(ssh_state),
    };
    let summary = format!(
        "ssh (hosts {}): its workspace {} and home {} are there; sandbox there: {}; network: {}",
        runner.hosts.join(", "),
        agent.workspace.display(),
        home,
        match sandbox {
            SandboxWish::Auto => "bubblewrap where the host has it",
            SandboxWish::Required => "bubblewrap (required)",
        },
        network_words(agent.sandbox.network),
    );
    let sees = remote_sees(agent, sandbox, &home);
    Ok(Isolation {
        sandbox: None,
        container: None,
        remote: Some(Link::new(&agent.id, settings)),
        home: None,
        summary,
        sees,
    })
}

/// What an agent in `container` sees, for `sidekicks check`: its mounts, each room's own
/// in place of the workspace and `home` with a container `per_room`, and its network.
fn container_sees(
    container: &Container,
    agent: &AgentConfig,
    per_room: bool,
    home: &Path,
) -> Vec<String> {
    let mut sees = container.seen();
    if per_room {
        sees.push(format!(
            "with a container per room: its room's folder in place of {}, and a home of the \
             room's own (made from {}) in place of it",
            agent.workspace_root().display(),
            home.display()
        ));
    }
    sees.push(format!("network: {}", network_words(agent.sandbox.network)));
    sees
}

/// What an agent on other hosts sees there, for `sidekicks check`: the host's sandbox
/// (`sandbox`), its workspace and `home` there, its network.
fn remote_sees(agent: &AgentConfig, sandbox: SandboxWish, home: &str) -> Vec<String> {
    let boxed = match sandbox {
        SandboxWish::Auto => "where the host has bubblewrap",
        SandboxWish::Required => "required",
    };
    vec![
        format!(
            "on its host, in the host's sandbox ({boxed}): the host's system and its program's \
             folders there, read-only"
        ),
        format!("read-write: {} there", agent.workspace_root().display()),
        format!("read-write: {home} there"),
        format!("network: {}", network_words(agent.sandbox.network)),
    ]
}

/// The first of `mounts` that holds one of `secrets` (or is one), with it: compared as the
/// files they are, links resolved where they exist.
fn exposed(mounts: &[&PathBuf], secrets: &[PathBuf]) -> Option<(PathBuf, PathBuf)> {
    let real = |p: &Path| std::fs::canonicalize(p).unwrap_or_else(|_| p.to_owned());
    mounts.iter().find_map(|mount| {
        let mount = real(mount);
        (secrets.iter())
            .map(|s| real(s))
            .find(|secret| secret.starts_with(&mount))
            .map(|secret| (mount.clone(), secret))
    })
}

/// The bubblewrap sandbox `agent` runs in, with `home` as its home: it writes only to its
/// workspace, its home, the repository's git folder in worktree mode and what the config
/// adds; it reads its program's folder and what the config adds; the room tools' socket
/// is bound in when it has no network.
fn sandbox(config: &Config, agent: &AgentConfig, home: &Path) -> Result<Sandbox, String> {
    let program = Sandbox::locate(&config.sandbox.bwrap)?;
    Ok(Sandbox {
        program,
        hide: hidden(config, agent),
        // In worktree mode the agent commits: it writes to the repository's git folder.
        read_write: [agent.workspace_root(), home.to_owned()]
            .into_iter()
            .chain(git_folder(agent)?)
            .chain(agent.sandbox.read_write.iter().cloned())
            .collect(),
        read_only: (agent.sandbox.read_only.iter().cloned())
            .chain(program_folders(agent))
            .collect(),
        network: agent.sandbox.network,
        binds: room_tools_bind(config, agent),
    })
}

/// The room tools' socket file, in the state folder (agents without a network get it bound
/// in at [`crate::model::agent::ROOM_TOOLS_SOCKET`]).
pub fn room_tools_socket(state_dir: &Path) -> PathBuf {
    state_dir.join("room-tools.sock")
}

/// What `agent` must not see even where what it is shown holds it: every path the
/// gateway's configuration names ([`Config::secret_paths`]) and, for a file among them, the
/// folder it is in unless that is the system's or holds what the agent is shown (an
/// operator's `/etc/sidekicks` holds the key beside the config); the other agents'
/// workspaces and homes (unless shared with this one); and `sandbox.hide`.
fn hidden(config: &Config, agent: &AgentConfig) -> Vec<PathBuf> {
    let shown: Vec<PathBuf> = [agent.workspace_root()]
        .into_iter()
        .chain(agent.home.clone())
        .chain(agent.sandbox.read_write.iter().cloned())
        .chain(agent.sandbox.read_only.iter().cloned())
        .map(|p| real(&p))
        .collect();
    let mut hide = Vec::new();
    for secret in config.secret_paths() {
        let folder = (!secret.is_dir())
            .then(|| real(&secret).parent().map(Path::to_owned))
            .flatten()
            .filter(|f| f.components().count() > 2)
            .filter(|f| !shown.iter().any(|s| s.starts_with(f)));
        hide.extend(folder);
        hide.push(secret);
    }
    for other in &config.agents {
        if other.id != agent.id {
            // Its workspace, unless the two share one (hiding it would hide this one's).
            hide.extend(
                Some(other.workspace_root()).filter(|w| real(w) != real(&agent.workspace_root())),
            );
            // Its sign-ins and API keys (a home of its own in the state folder is hidden
            // with it), unless the two share one.
            hide.extend(
                other
                    .home
                    .clone()
                    .filter(|h| agent.home.as_ref() != Some(h)),
            );
        }
    }
    hide.extend(config.sandbox.hide.iter().cloned());
    hide
}

/// `path` as the file it is, links resolved where it exists.
fn real(path: &Path) -> PathBuf {
    std::fs::canonicalize(path).unwrap_or_else(|_| path.to_owned())
}

/// The folders `agent`'s program needs, shown read-only ([`crate::acp::program_folders`]):
/// found from its command, its arguments and its `PATH` (its own, else the gateway's); and
/// the gateway's own program where the agent runs the room tools' bridge (`sidekicks
/// mcp-stdio`).
fn program_folders(agent: &AgentConfig) -> Vec<PathBuf> {
    let path = (agent
        .env
        .get("PATH")
        .map(|p| std::ffi::OsString::from(p.expose())))
    .or_else(|| std::env::var_os("PATH"));
    let mut folders = crate::acp::program_folders(&agent.command, &agent.args, path.as_deref());
    folders.extend(std::env::current_exe().ok().filter(|_| agent.room_tools));
    folders
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(dir: &Path, sandbox: &str) -> Config {
        for ws in ["ws-a", "ws-b"] {
            std::fs::create_dir_all(dir.join(ws)).unwrap();
        }
        std::fs::write(dir.join("b.password"), "pw").unwrap();
        let text = format!(
            r#"
state_dir = "state"
[matrix]
homeserver = "http://127.0.0.1:9"
[access]
allowed_users = ["@alice:localhost"]
[sandbox]
{sandbox}
hide = ["/srv/secrets"]
[[agents]]
id = "a"
display_name = "A"
command = "true"
workspace = "ws-a"
[agents.matrix]
user_id = "@a:localhost"
password = "pw"
[[agents]]
id = "b"
display_name = "B"
command = "true"
workspace = "ws-b"
[agents.matrix]
user_id = "@b:localhost"
password_file = "b.password"
"#
        );
        Config::from_toml(&text, &dir.join("sidekicks.toml")).unwrap()
    }

    #[test]
    fn an_agent_is_kept_from_the_gateways_secrets_and_the_other_agents_work() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        let mut config = config(d, "mode = \"bubblewrap\"\nbwrap = \"/bin/true\"");
        config.webhooks.push(crate::config::WebhookConfig {
            name: "ci".into(),
            room: "!r:localhost".into(),
            agent: "a".into(),
            run_as: "@alice:localhost".into(),
            signature: crate::core::webhooks::signature::Signing::GitHub,
            secret_file: Some(d.join("ci.secret")),
            secret_env: None,
            prompt: "CI failed".into(),
            here: false,
            max_body_kb: 1,
            per_minute: 1,
        });
        let chosen = isolation(&config, &config.agents[0], &mut Probe::default()).unwrap();
        let sandbox = chosen.sandbox.unwrap();
        let home = d.join("state/agent-homes/a");
        assert_eq!(chosen.home.as_deref(), Some(home.as_path()));
        assert!(home.is_dir(), "its home is made");
        for hidden in [
            d.join("state"),
            d.join("sidekicks.toml"),
            d.join("b.password"),
            d.join("ci.secret"),
            d.join("ws-b"),
            PathBuf::from("/srv/secrets"),
        ] {
            assert!(
                sandbox.hide.contains(&hidden),
                "{hidden:?} in {:?}",
                sandbox.hide
            );
        }
        assert!(!sandbox.hide.contains(&d.join("ws-a")));
        assert_eq!(sandbox.read_write, vec![d.join("ws-a"), home]);
        // The program's folder is the system's (`true` is in /usr/bin), shown anyway: not
        // a mount of its own.
        assert!(
            !(sandbox.read_only.iter()).any(|p| p.starts_with("/usr")),
            "{:?}",
            sandbox.read_only
        );
    }

    #[test]
    fn every_key_identity_and_password_file_the_config_names_is_hidden_with_its_folder() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path().canonicalize().unwrap();
        let mut config = config(&d, "mode = \"bubblewrap\"\nbwrap = \"/bin/true\"");
        let keys = d.join("etc-sidekicks");
        std::fs::create_dir_all(&keys).unwrap();
        for file in [
            "id_ed25519",
            "known_hosts",
            "pgpass",
            "speech.key",
            "b.token",
        ] {
            std::fs::write(keys.join(file), "x").unwrap();
        }
        // The speech service's key is there too, and the other agent's issued token.
        config.voice.key_file = Some(keys.join("speech.key"));
        config.agents[1].matrix.access_token_file = Some(keys.join("b.token"));
        // Another agent signs in to build hosts with a key beside the config's; the store's
        // password is in a pgpass file.
        config.agents[1].runner = toml::from_str(&format!(
            "kind = \"ssh\"\nhosts = [\"build1\"]\nknown_hosts = {:?}\nidentity = {:?}",
            keys.join("known_hosts"),
            keys.join("id_ed25519")
        ))
        .unwrap();
        config.store = Some(format!(
            "postgres://sidekicks@127.0.0.1/sidekicks?passfile={}",
            keys.join("pgpass").display()
        ));
        let chosen = isolation(&config, &config.agents[0], &mut Probe::default()).unwrap();
        let hide = chosen.sandbox.unwrap().hide;
        for hidden in [
            "id_ed25519",
            "known_hosts",
            "pgpass",
            "speech.key",
            "b.token",
        ] {
            assert!(hide.contains(&keys.join(hidden)), "{hidden}: {hide:?}");
        }
        assert!(hide.contains(&keys), "the folder that holds them: {hide:?}");
        // A folder that holds what the agent is shown is not hidden whole: the password file
        // beside its workspace is, alone.
        assert!(hide.contains(&d.join("b.password")));
        assert!(!hide.contains(&d), "{hide:?}");
        // Two agents that share a workspace: neither hides it from the other.
        config.agents[1].workspace = config.agents[0].workspace.clone();
        let shared = isolation(&config, &config.agents[0], &mut Probe::default()).unwrap();
        let hide = shared.sandbox.unwrap().hide;
        assert!(!hide.contains(&d.join("ws-a")), "{hide:?}");
    }

    #[test]
    fn a_container_mounts_its_folders_and_refuses_one_that_holds_a_secret() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path().canonicalize().unwrap();
        let mut config = config(&d, "");
        // `true` stands in for the engine: it "has" every image.
        config.agents[0].runner = toml::from_str(
            "kind = \"container\"\nengine = \"/bin/true\"\nimage = \"agent:1\"\nmemory = \"1g\"",
        )
        .unwrap();
        let chosen = isolation(&config, &config.agents[0], &mut Probe::default()).unwrap();
        assert!(chosen.sandbox.is_none());
        let container = chosen.container.unwrap();
        let home = d.join("state/agent-homes/a");
        assert_eq!(container.read_write, vec![d.join("ws-a"), home]);
        assert_eq!(container.state, d.join("state"));
        assert!(
            chosen.summary.starts_with("container ("),
            "{}",
            chosen.summary
        );
        // Its own folder holding the state folder, the config or another agent's workspace:
        // refused, naming both.
        config.agents[0].sandbox.read_only = vec![d.clone()];
        let why = isolation(&config, &config.agents[0], &mut Probe::default()).unwrap_err();
        assert!(
            why.starts_with(&format!("{} would be mounted", d.display())) && why.contains("holds"),
            "{why}"
        );
        config.agents[0].sandbox.read_only = vec![];
        config.agents[0].sandbox.read_write = vec![d.join("ws-b")];
        let why = isolation(&config, &config.agents[0], &mut Probe::default()).unwrap_err();
        assert!(
            why.contains(&format!("holds {}", d.join("ws-b").display())),
            "{why}"
        );
    }

    #[test]
    fn an_agent_on_other_hosts_is_boxed_there_and_kept_from_the_gateways_secrets_too() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        let mut config = config(d, "");
        config.agents[0].runner = toml::from_str(
            "kind = \"ssh\"\nssh = \"/bin/true\"\nhosts = [\"build1\"]\n\
             known_hosts = \"/k\"\nidentity = \"/i\"",
        )
        .unwrap();
        // The room tools come through a socket only its sandbox there can bind in.
        let chosen = isolation(&config, &config.agents[0], &mut Probe::default()).unwrap();
        let settings = chosen.remote.unwrap().settings().clone();
        assert_eq!(settings.boxing.sandbox, SandboxWish::Required);
        assert_eq!(settings.room_tools, Some(d.join("state/room-tools.sock")));
        // What the runner keeps is in the state folder, which every sandbox hides.
        assert_eq!(settings.remembered, Some(d.join("state/ssh/a.host")));
        assert_eq!(settings.sockets, Some(d.join("state/ssh")));
        config.agents[0].room_tools = false;
        let chosen = isolation(&config, &config.agents[0], &mut Probe::default()).unwrap();
        assert!(chosen.sandbox.is_none() && chosen.container.is_none());
        assert_eq!(chosen.home, None, "its home is a path there, not made here");
        assert!(!d.join("state/agent-homes/a").exists());
        let link = chosen.remote.unwrap();
        assert_eq!(link.settings().room_tools, None);
        let settings = &link.settings().boxing;
        assert_eq!(settings.home, "~/.sidekicks/agent-homes/a");
        assert_eq!(settings.sandbox, SandboxWish::Auto);
        for hidden in [d.join("state"), d.join("b.password"), d.join("ws-b")] {
            assert!(settings.hide.contains(&hidden), "{hidden:?}");
        }
        assert!(
            chosen.summary.starts_with("ssh (hosts build1)"),
            "{}",
            chosen.summary
        );
        // Without a network, the sandbox there is required: it is the only way to have none.
        config.agents[0].sandbox.network = crate::acp::Network::None;
        let chosen = isolation(&config, &config.agents[0], &mut Probe::default()).unwrap();
        let settings = chosen.remote.unwrap().settings().boxing.clone();
        assert_eq!(
            (settings.sandbox, settings.offline),
            (SandboxWish::Required, true)
        );
    }

    #[test]
    fn without_bubblewrap_auto_runs_unsandboxed_and_bubblewrap_refuses() {
        let dir = tempfile::tempdir().unwrap();
        let missing = "bwrap = \"/nonexistent/bwrap\"";
        let auto = config(dir.path(), missing);
        let chosen = isolation(&auto, &auto.agents[0], &mut Probe::default()).unwrap();
        assert!(chosen.sandbox.is_none());
        assert_eq!(chosen.home, None, "the gateway's home, as before");
        assert!(
            chosen
                .summary
                .starts_with("none: /nonexistent/bwrap is not installed")
        );
        let required = config(dir.path(), &format!("mode = \"bubblewrap\"\n{missing}"));
        let refused = isolation(&required, &required.agents[0], &mut Probe::default());
        assert!(refused.unwrap_err().starts_with("the sandbox is required"));
        let off = config(dir.path(), &format!("mode = \"off\"\n{missing}"));
        assert!(
            isolation(&off, &off.agents[0], &mut Probe::default())
                .unwrap()
                .sandbox
                .is_none()
        );
    }
}
