//! Starting an agent, or one of its commands, on the agent's host (the SSH runner): `ssh`
//! to the `sidekicks remote` helper there, which reads on its stdin what to run and with
//! which environment. The agent's host is chosen (asking each in turn, off the async
//! threads) just before its process starts.

use super::launch::{Launch, ends_with_gateway, own_session};
use super::process::{AgentProcess, ProcessSpec, Spawned};
use crate::model::agent::AgentError;
use crate::remote::wire::{Request, RunRequest};

/// Starts the agent's process: on a host chosen now when it runs on other hosts (its
/// request written first on its stdin), else here.
pub(super) async fn spawn(spec: &ProcessSpec) -> Result<Spawned, AgentError> {
    let failed = |e: std::io::Error| AgentError::start(&spec.command, e);
    // One room's container: its home is made (a copy of the agent's) before its first start.
    if let Some(home) = (spec.container.as_ref()).and_then(|c| c.room_home.clone()) {
        let made = tokio::task::spawn_blocking(move || home.make()).await;
        made.map_err(std::io::Error::other)
            .and_then(|r| r)
            .map_err(failed)?;
    }
    if let Some(link) = spec.remote.clone() {
        let chosen = tokio::task::spawn_blocking(move || link.choose()).await;
        let chosen = chosen.map_err(|e| failed(std::io::Error::other(e)))?;
        chosen.map_err(|e| failed(std::io::Error::other(e)))?;
    }
    let mut spawned = AgentProcess::spawn(spec).map_err(failed)?;
    if let Some(header) = spawned.stdin_header.take() {
        use tokio::io::AsyncWriteExt as _;
        spawned.stdin.write_all(&header).await.map_err(failed)?;
    }
    Ok(spawned)
}

impl ProcessSpec {
    /// The command that runs `program args` on the agent's current host (`agent`: the
    /// agent itself): `ssh` to the helper there, which reads on its stdin what to run and
    /// with which environment (the configured values, those passed through, and `inner_env`),
    /// out of sight of every command line.
    pub(super) fn on_host(
        &self,
        link: &crate::remote::Link,
        program: &str,
        args: &[String],
        cwd: &std::path::Path,
        inner_env: &[(String, String)],
        agent: bool,
    ) -> std::io::Result<Launch> {
        let host = link.current().ok_or_else(|| {
            std::io::Error::other("the agent's host is not chosen yet (its process is not running)")
        })?;
        let settings = link.settings();
        let passed = (self.inherit_env.iter())
            .filter_map(|name| Some((name.clone(), std::env::var(name).ok()?)));
        let env = passed
            .chain(
                self.env
                    .iter()
                    .map(|(k, v)| (k.clone(), v.expose().to_owned())),
            )
            .chain(inner_env.iter().cloned())
            .collect();
        // The agent's own connection brings it the room tools, if it has them.
        let (mut cmd, room_tools) = match agent {
            true => link.agent_command(&host),
            false => (link.command(&host), None),
        };
        let request = Request::Run(RunRequest {
            program: program.to_owned(),
            args: args.to_vec(),
            cwd: cwd.to_owned(),
            env,
            boxing: settings.boxing.clone(),
            room_tools,
        });
        let mut header = Vec::new();
        crate::remote::wire::write_line(&mut header, &request).map_err(std::io::Error::other)?;
        own_session(&mut cmd);
        if agent {
            // The ssh client going with the gateway ends the connection, and the helper
            // there stops the agent.
            ends_with_gateway(&mut cmd);
        }
        Ok(Launch {
            command: cmd,
            env_pipe: None,
            stdin_header: Some(header),
        })
    }
}
