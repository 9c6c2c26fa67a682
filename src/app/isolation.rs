//! What each agent process can reach: whether it runs in the sandbox (or why not), what the
//! sandbox hides from it, and its `HOME`.

use std::path::{Path, PathBuf};

use crate::acp::Sandbox;
use crate::config::{AgentConfig, Config, SandboxMode};
use crate::state_dir;

/// Where one agent runs.
#[derive(Debug)]
pub struct Isolation {
    /// Its sandbox; `None`: it sees what the gateway's Unix user sees.
    pub sandbox: Option<Sandbox>,
    /// Its `HOME`; `None`: the gateway's.
    pub home: Option<PathBuf>,
    /// One line for `sidekicks check` and the start-up log.
    pub summary: String,
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
pub fn isolation(config: &Config, agent: &AgentConfig, probe: &mut Probe) -> Result<Isolation, String> {
    let mode = agent.sandbox_mode(&config.sandbox);
    let unavailable = match mode {
        SandboxMode::Off => {
            return Ok(Isolation {
                sandbox: None,
                home: agent.home.clone(),
                summary: "off (sandbox.mode = \"off\"): the agent can read whatever the gateway's user can".into(),
            });
        }
        _ => match probe.result(&config.sandbox.bwrap) {
            Ok(()) => None,
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
                home: agent.home.clone(),
                summary: format!(
                    "none: {why}; the agent can read whatever the gateway's user can, the \
                     state folder with every access token included"
                ),
            }),
        };
    }
    let home = agent
        .home
        .clone()
        .unwrap_or_else(|| config.state_dir.join(state_dir::AGENT_HOMES).join(&agent.id));
    state_dir::create_private(&home)
        .map_err(|e| format!("cannot create the agent's home {}: {e}", home.display()))?;
    let sandbox = Sandbox {
        program: config.sandbox.bwrap.clone(),
        hide: hidden(config, agent),
        read_write: [agent.workspace.clone(), home.clone()]
            .into_iter()
            .chain(agent.sandbox.read_write.iter().cloned())
            .collect(),
        read_only: agent
            .sandbox
            .read_only
            .iter()
            .cloned()
            .chain(program_folder(&agent.command))
            .collect(),
    };
    Ok(Isolation {
        sandbox: Some(sandbox),
        home: Some(home.clone()),
        summary: format!(
            "bubblewrap: writes only to its workspace and {}; the state folder, the config, \
             password files and the gateway's home are hidden",
            home.display()
        ),
    })
}

/// What no agent may see: the gateway's state (tokens, crypto stores, transcripts), its
/// config and password files, its own home, the other agents' workspaces, and the paths
/// the config adds.
fn hidden(config: &Config, agent: &AgentConfig) -> Vec<PathBuf> {
    let gateway_home = std::env::var_os("HOME")
        .map(PathBuf::from)
        .filter(|h| h.parent().is_some());
    let mut hide = vec![config.state_dir.clone()];
    hide.extend(config.source.clone());
    hide.extend(gateway_home);
    for other in &config.agents {
        hide.extend(other.matrix.password_file.clone());
        if other.id != agent.id {
            hide.push(other.workspace.clone());
        }
    }
    hide.extend(config.sandbox.hide.iter().cloned());
    hide
}

/// The folder the agent's program really lives in, so the program stays runnable when it
/// is installed somewhere hidden (the gateway's home, for example).
fn program_folder(command: &str) -> Option<PathBuf> {
    let path = if command.contains('/') {
        PathBuf::from(command)
    } else {
        std::env::split_paths(&std::env::var_os("PATH")?)
            .map(|dir| dir.join(command))
            .find(|p| p.is_file())?
    };
    Some(std::fs::canonicalize(path).ok()?.parent()?.to_owned())
}
