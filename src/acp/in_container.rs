//! Starting an agent, or one of its commands, in its container (the container runner): the
//! engine's client, run with an environment of its own that holds nothing of the gateway's
//! but what an engine needs to find its storage and runtime, and the agent's configured
//! values, which reach the container by name only.

use super::container::{Container, Invocation};
use super::launch::{Launch, ends_with_gateway, own_session, read_on_fd3};
use super::process::ProcessSpec;

/// The gateway's variables the engine's client gets, if set: where it finds its storage,
/// configuration, runtime folder and daemon. Nothing else of the gateway's environment
/// (its agents' passwords, webhook secrets, `PGPASSWORD`, whatever a service's
/// `EnvironmentFile` holds) reaches the engine, so nothing the agent names can be copied
/// from it into a container.
pub const ENGINE_ENV: &[&str] = &[
    "PATH",
    "HOME",
    "USER",
    "LOGNAME",
    "LANG",
    "TMPDIR",
    "XDG_RUNTIME_DIR",
    "XDG_CONFIG_HOME",
    "XDG_DATA_HOME",
    "XDG_CACHE_HOME",
    "DBUS_SESSION_BUS_ADDRESS",
    "CONTAINER_HOST",
    "CONTAINER_CONNECTION",
    "CONTAINERS_CONF",
    "CONTAINERS_CONF_OVERRIDE",
    "CONTAINERS_STORAGE_CONF",
    "CONTAINERS_REGISTRIES_CONF",
    "STORAGE_DRIVER",
    "STORAGE_OPTS",
    "DOCKER_HOST",
    "DOCKER_CONTEXT",
    "DOCKER_CONFIG",
    "DOCKER_CERT_PATH",
    "DOCKER_TLS_VERIFY",
];

impl ProcessSpec {
    /// The command that runs `program args` in the agent's container (`agent`: the agent
    /// itself): the engine, with [`ENGINE_ENV`] of the gateway's environment, the variables
    /// the agent inherits and its configured values (which reach the container by name
    /// only), and nothing else.
    pub(super) fn in_container(
        &self,
        container: &Container,
        program: &str,
        args: &[String],
        cwd: &std::path::Path,
        inner_env: &[(String, String)],
        agent: bool,
    ) -> std::io::Result<Launch> {
        let mut cmd = std::process::Command::new(&container.engine);
        let env_pipe = match inner_env.is_empty() {
            true => None,
            false => {
                let file = Container::env_file(inner_env).map_err(std::io::Error::other)?;
                Some(read_on_fd3(&mut cmd, &file)?)
            }
        };
        let inherited: Vec<(String, std::ffi::OsString)> = (self.inherit_env.iter())
            .filter_map(|n| Some((n.clone(), std::env::var_os(n)?)))
            .collect();
        let names: Vec<String> = (self.env.keys().cloned())
            .chain(inherited.iter().map(|(n, _)| n.clone()))
            .collect();
        let call = Invocation {
            command: program,
            args,
            cwd,
            env_names: if agent { &names[..] } else { &[] },
            home: self.home.as_deref(),
            env_file: env_pipe.is_some(),
            interactive: agent,
        };
        let engine_env = (ENGINE_ENV.iter()).filter_map(|n| Some((*n, std::env::var_os(n)?)));
        cmd.args(container.command_line(&call, agent))
            .current_dir(cwd)
            .env_clear()
            .envs(engine_env)
            .envs(inherited)
            .envs(self.env.iter().map(|(k, v)| (k, v.expose())));
        own_session(&mut cmd);
        if agent {
            // The engine's client going with the gateway stops its container (the signal is
            // passed on, and the container is removed when its process ends): no agent
            // outlives a killed gateway.
            ends_with_gateway(&mut cmd);
        }
        Ok(Launch {
            command: cmd,
            env_pipe,
            stdin_header: None,
        })
    }
}

#[cfg(test)]
mod tests {
    use crate::model::Secret;

    #[test]
    fn the_engine_gets_what_it_needs_and_the_agents_values_and_nothing_else_of_the_gateways() {
        let dir = tempfile::tempdir().unwrap();
        // A stand-in engine that writes down the environment it was started with.
        let engine = dir.path().join("engine");
        let seen = dir.path().join("seen");
        std::fs::write(&engine, format!("#!/bin/sh\nenv > {}\n", seen.display())).unwrap();
        use std::os::unix::fs::PermissionsExt as _;
        std::fs::set_permissions(&engine, std::fs::Permissions::from_mode(0o755)).unwrap();
        // SAFETY: set before spawning; no other test reads these variables.
        unsafe {
            std::env::set_var("SIDEKICKS_TEST_ENGINE_SECRET", "gateway-only-value");
            std::env::set_var("SIDEKICKS_TEST_ENGINE_PASSED", "passed-value");
        }
        let mut spec = super::super::process::tests::spec("true");
        spec.env
            .insert("API_KEY".into(), Secret::new("configured-value"));
        spec.inherit_env = vec!["SIDEKICKS_TEST_ENGINE_PASSED".into()];
        let mut container = super::super::container::tests::container(dir.path());
        container.engine = engine;
        spec.container = Some(container);
        let spec = spec.for_process();
        let mut launch = (spec.in_container(
            spec.container.as_ref().unwrap(),
            "agent",
            &[],
            dir.path(),
            &[],
            true,
        ))
        .unwrap();
        assert!(launch.command.status().unwrap().success());
        let env = std::fs::read_to_string(&seen).unwrap();
        assert!(env.contains("API_KEY=configured-value"), "{env}");
        assert!(
            env.contains("SIDEKICKS_TEST_ENGINE_PASSED=passed-value"),
            "{env}"
        );
        assert!(env.contains("PATH="), "{env}");
        assert!(!env.contains("gateway-only-value"), "{env}");
    }
}
