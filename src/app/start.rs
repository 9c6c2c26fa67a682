//! Starting the agents: each one's isolation decided, its Matrix user logged in and its
//! process started (or left for its first prompt when the pool is full). One agent that
//! cannot start (bad password, broken command, a sandbox it cannot have) is skipped with
//! the reason in the log; the gateway stops only when none can.

use std::sync::Arc;

use anyhow::Result;

use super::isolation::{Isolation, Probe, isolation};
use super::{process_spec, workspace};
use crate::acp::{AcpAgent, PerRoomAgent, RoomLimits, Supervised, SupervisedAgent};
use crate::config::{AgentConfig, Config, RunnerConfig};
use crate::core::chat::ChatPort;
use crate::core::masking::MaskedChat;
use crate::matrix::{MatrixAgent, MatrixSecurity};
use crate::state_dir;
use crate::workspace::Workspace;

/// One agent that started: what the gateway needs of it next.
pub(super) struct StartedAgent<'a> {
    /// Its table in the config.
    pub(super) config: &'a AgentConfig,
    /// Its Matrix user, logged in, whose sync loop the gateway runs.
    pub(super) user: MatrixAgent,
    /// How it posts: its user's chat port, with its secrets masked.
    pub(super) chat: Arc<dyn ChatPort>,
    /// Its process, running or started at its first prompt.
    pub(super) process: Arc<dyn Supervised>,
    /// Where its conversations work.
    pub(super) workspace: Workspace,
}

/// Starts every agent of `config`; at most `max_running` processes start now (the others
/// at their first prompt). `Err` when no agent could start, naming why for each.
pub(super) async fn start_agents<'a>(
    config: &'a Config,
    security: &MatrixSecurity,
    max_running: Option<usize>,
) -> Result<Vec<StartedAgent<'a>>> {
    reserve_recovery_key_files(config);
    // Every agent's isolation (its home made) before any agent starts: each sandbox hides
    // the other agents' homes as they are then.
    let mut probe = Probe::default();
    let isolations: Vec<_> = (config.agents.iter())
        .map(|agent| isolation(config, agent, &mut probe))
        .collect();
    remove_leftover_containers(config, &isolations);
    let mut started = Vec::new();
    let mut problems = Vec::new();
    for (agent, isolation) in config.agents.iter().zip(isolations) {
        let eager = max_running.is_none_or(|max| started.len() < max);
        match start_agent(config, agent, isolation, security, eager).await {
            Ok(agent) => started.push(agent),
            Err(problem) => problems.push(format!("{}: {problem}", agent.id)),
        }
    }
    if started.is_empty() {
        anyhow::bail!("no agent could be started: {}", problems.join("; "));
    }
    Ok(started)
}

/// Removes the containers of this gateway's agents that a gateway killed before it could
/// remove them left running, before any agent starts.
fn remove_leftover_containers(config: &Config, isolations: &[Result<Isolation, String>]) {
    let mut engines: Vec<&std::path::Path> = (isolations.iter().flatten())
        .filter_map(|i| i.container.as_ref().map(|c| c.engine.as_path()))
        .collect();
    engines.sort();
    engines.dedup();
    for engine in engines {
        match crate::acp::Container::remove_leftovers(engine, &config.state_dir) {
            Ok(0) => {}
            Ok(n) => {
                tracing::warn!(engine = %engine.display(), removed = n, "removed containers a stopped gateway left running")
            }
            Err(e) => {
                tracing::warn!(engine = %engine.display(), error = %e, "could not look for containers a stopped gateway left running")
            }
        }
    }
}

/// Every recovery key file exists before any agent starts: each sandbox hides them as they
/// are then (so a key written on the first start is hidden too).
fn reserve_recovery_key_files(config: &Config) {
    for file in config
        .agents
        .iter()
        .filter_map(|a| a.matrix.recovery_key_file.as_ref())
    {
        if let Err(e) = state_dir::reserve_private_file(file) {
            tracing::warn!(file = %file.display(), error = %e, "could not make the recovery key file before the agents start");
        }
    }
}

/// Starts `agent`: its isolation must hold (decided before it logs in), its Matrix user
/// logs in, and its process starts now when `eager`. `Err` says why it is skipped (also
/// logged).
async fn start_agent<'a>(
    config: &'a Config,
    agent: &'a AgentConfig,
    isolation: Result<Isolation, String>,
    security: &MatrixSecurity,
    eager: bool,
) -> Result<StartedAgent<'a>, String> {
    let isolation = isolation.map_err(|e| {
        tracing::error!(agent = %agent.id, error = %e, "the agent cannot run as configured; agent skipped");
        e
    })?;
    let user = MatrixAgent::connect(
        &config.matrix.homeserver,
        &config.state_dir,
        agent,
        security,
    )
    .await
    .map_err(|e| {
        tracing::error!(agent = %agent.id, error = %e, "the agent's Matrix user could not log in; agent skipped");
        e.to_string()
    })?;
    match isolation.sandbox.is_some() || isolation.container.is_some() {
        true => tracing::info!(agent = %agent.id, "sandbox: {}", isolation.summary),
        false => tracing::warn!(agent = %agent.id, "sandbox: {}", isolation.summary),
    }
    let spec = process_spec(agent, &config.timeouts, isolation);
    let workspace = workspace(agent, &spec);
    // What it posts is masked with the same values its stderr is.
    let chat = MaskedChat::wrap(user.chat(), spec.secret_values());
    let per_room = match &agent.runner {
        RunnerConfig::Container(c) if c.per_room => Some(c.max_rooms),
        _ => None,
    };
    let process: Arc<dyn Supervised> = match (per_room, eager) {
        // Each room's process starts at the room's first session.
        (Some(max_rooms), _) => {
            let idle = (config.pool.idle_stop_secs > 0)
                .then(|| std::time::Duration::from_secs(config.pool.idle_stop_secs));
            let limits = RoomLimits {
                idle_stop: idle,
                max_running: max_rooms,
            };
            PerRoomAgent::new(spec, agent.workspace_root(), limits)
        }
        (None, false) => SupervisedAgent::new(spec, None),
        (None, true) => match AcpAgent::start(&spec).await {
            Ok(p) => SupervisedAgent::new(spec, Some(p)),
            Err(e) => {
                tracing::error!(agent = %agent.id, error = %e, "the agent process did not start; agent skipped");
                return Err(e.to_string());
            }
        },
    };
    Ok(StartedAgent {
        config: agent,
        user,
        chat,
        process,
        workspace,
    })
}
