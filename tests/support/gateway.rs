//! The gateway under test: the real `sidekicks` binary with a generated config, running the
//! real demo agent (`sidekicks demo-agent`) as its agent process.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use tempfile::TempDir;

/// One agent of the generated config.
#[derive(Debug, Clone)]
pub struct AgentSpec {
    /// Agent ID.
    pub id: String,
    /// Its Matrix user ID (registered beforehand).
    pub user_id: String,
    /// Its password.
    pub password: String,
    /// Arguments for the demo agent after `demo-agent` (run in its workspace).
    pub demo_args: Vec<String>,
    /// Extra lines for the agent's `[[agents]]` table (e.g. `dialect = "mm"`); a
    /// `workspace = …` line replaces the default workspace; lines starting with `matrix.`
    /// go into its `[agents.matrix]` table; a `command = …` line (with its own `args`)
    /// runs that program instead of the demo agent.
    pub agent_toml: String,
}

impl AgentSpec {
    /// The demo agent `demo`, logging in as `user_id` with `demo-password`.
    pub fn demo(user_id: &str) -> Self {
        Self {
            id: "demo".into(),
            user_id: user_id.to_owned(),
            password: "demo-password".into(),
            demo_args: vec![],
            agent_toml: String::new(),
        }
    }
}

/// A running `sidekicks run`.
pub struct GatewayProcess {
    child: Option<Child>,
    /// Config, state and log.
    pub dir: TempDir,
    /// The config file.
    pub config: PathBuf,
    /// The agents it runs (their passwords are in files beside the config).
    agents: Vec<AgentSpec>,
    /// Variables set for it beyond the test's own environment.
    envs: Vec<(String, String)>,
}

/// The gateway's log filter: `SIDEKICKS_GATEWAY_LOG` when set (e.g. with
/// `matrix_sdk::http_client=debug` to see each request's timing), else the gateway at debug
/// level and the SDK's warnings.
fn log_filter() -> String {
    std::env::var("SIDEKICKS_GATEWAY_LOG").unwrap_or_else(|_| {
        "info,sidekicks=debug,matrix_sdk=warn,matrix_sdk_base=warn,matrix_sdk_crypto=error".into()
    })
}

/// A new folder for a gateway's config, state and log. Outside /tmp, which the agent
/// sandbox replaces with an empty folder: what an agent cannot see of the state, config and
/// password files here is hidden on purpose.
fn gateway_dir() -> TempDir {
    tempfile::Builder::new()
        .prefix("sidekicks-gateway-")
        .tempdir_in(env!("CARGO_TARGET_TMPDIR"))
        .unwrap()
}

/// A secret every gateway under test has in its environment, as a service's
/// `EnvironmentFile` puts passwords and keys there: no agent, command, room or log may ever
/// show its value.
pub const CANARY: (&str, &str) = (
    "SIDEKICKS_GATEWAY_CANARY",
    "canary-of-the-gateways-env-7c1e",
);

/// The `sidekicks` binary built for these tests.
pub fn binary() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_sidekicks"))
}

impl GatewayProcess {
    /// Writes a config for `agents` (allowing `allowed`) and starts the gateway. `extra_toml`
    /// goes at the top of the config, but for its lines starting with `access.` or `matrix.`,
    /// which go into that table.
    pub fn start(
        homeserver: &str,
        allowed: &[&str],
        agents: &[AgentSpec],
        extra_toml: &str,
    ) -> Self {
        Self::start_with_approvers(homeserver, allowed, None, agents, extra_toml)
    }

    /// Like [`GatewayProcess::start`], with `access.approvers` set when given.
    pub fn start_with_approvers(
        homeserver: &str,
        allowed: &[&str],
        approvers: Option<&[&str]>,
        agents: &[AgentSpec],
        extra_toml: &str,
    ) -> Self {
        Self::start_full(homeserver, allowed, approvers, agents, extra_toml, &[])
    }

    /// Like [`GatewayProcess::start`], with `envs` set in the gateway's environment (as a
    /// service's `EnvironmentFile` sets them).
    pub fn start_with_envs(
        homeserver: &str,
        allowed: &[&str],
        agents: &[AgentSpec],
        extra_toml: &str,
        envs: &[(String, String)],
    ) -> Self {
        Self::start_full(homeserver, allowed, None, agents, extra_toml, envs)
    }

    fn start_full(
        homeserver: &str,
        allowed: &[&str],
        approvers: Option<&[&str]>,
        agents: &[AgentSpec],
        extra_toml: &str,
        envs: &[(String, String)],
    ) -> Self {
        let dir = gateway_dir();
        // Lines of `extra_toml` that start with `access.` or `matrix.` belong in that table.
        let table = |prefix: &str| -> String {
            extra_toml
                .lines()
                .filter_map(|l| l.strip_prefix(prefix))
                .map(|l| format!("{l}\n"))
                .collect()
        };
        let (access, matrix) = (table("access."), table("matrix."));
        let top: Vec<&str> = extra_toml
            .lines()
            .filter(|l| !l.starts_with("access.") && !l.starts_with("matrix."))
            .collect();
        let top = top.join("\n");
        let mut toml = format!(
            "state_dir = \"state\"\n{top}\n[matrix]\nhomeserver = \"{homeserver}\"\n{matrix}[access]\nallowed_users = {allowed:?}\n{access}"
        );
        if let Some(approvers) = approvers {
            toml.push_str(&format!("approvers = {approvers:?}\n"));
        }
        for a in agents {
            let ws = dir.path().join(format!("workspace-{}", a.id));
            // Keep in step with [`GatewayProcess::workspace`].
            std::fs::create_dir_all(&ws).unwrap();
            let password_file = dir.path().join(format!("{}.password", a.id));
            std::fs::write(&password_file, &a.password).unwrap();
            let (matrix, extra): (Vec<&str>, Vec<&str>) =
                a.agent_toml.lines().partition(|l| l.starts_with("matrix."));
            let matrix: String = matrix
                .iter()
                .map(|l| format!("{}\n", &l["matrix.".len()..]))
                .collect();
            let extra = extra.join("\n");
            // A `command = …` line of the agent's own runs another agent than the demo.
            let program = if a.agent_toml.lines().any(|l| l.starts_with("command =")) {
                String::new()
            } else {
                format!(
                    "command = {:?}\nargs = {:?}\n",
                    binary(),
                    std::iter::once("demo-agent".to_owned())
                        .chain(a.demo_args.iter().cloned())
                        .collect::<Vec<_>>()
                )
            };
            toml.push_str(&format!(
                "[[agents]]\nid = \"{id}\"\ndisplay_name = \"{id} agent\"\n{program}{workspace}{extra}\n[agents.matrix]\nuser_id = \"{user}\"\npassword_file = {password_file:?}\n{matrix}",
                id = a.id,
                // A `workspace` line of the agent's own replaces the default one.
                workspace = if a.agent_toml.lines().any(|l| l.starts_with("workspace =")) {
                    String::new()
                } else {
                    format!("workspace = {ws:?}\n")
                },
                user = a.user_id,
            ));
        }
        Self::launched(dir, &toml, agents.to_vec(), envs.to_vec())
    }

    /// Starts the gateway with a config of the test's own, made for the gateway's folder
    /// (for its state and workspaces), and `envs` set: how a config we ship is run.
    pub fn start_from_config(
        config_for: impl FnOnce(&std::path::Path) -> String,
        envs: &[(&str, &str)],
    ) -> Self {
        let dir = gateway_dir();
        let toml = config_for(dir.path());
        let envs = envs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        Self::launched(dir, &toml, Vec::new(), envs)
    }

    /// Writes `toml` as the config in `dir` and starts the gateway with it.
    fn launched(
        dir: TempDir,
        toml: &str,
        agents: Vec<AgentSpec>,
        envs: Vec<(String, String)>,
    ) -> Self {
        let config = dir.path().join("sidekicks.toml");
        std::fs::write(&config, toml).unwrap();
        let mut gw = Self {
            child: None,
            dir,
            config,
            agents,
            envs,
        };
        gw.launch();
        gw
    }

    /// Starts the gateway again after [`GatewayProcess::stop`], with the same config and state.
    pub fn restart(&mut self) {
        self.stop();
        self.launch();
    }

    fn launch(&mut self) {
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(self.log_path())
            .unwrap();
        let mut cmd = Command::new(binary());
        cmd.args(["run", "--config"])
            .arg(&self.config)
            .env("RUST_LOG", log_filter())
            .env(CANARY.0, CANARY.1)
            .envs(self.envs.iter().map(|(k, v)| (k, v)))
            .stdin(Stdio::null())
            .stdout(log.try_clone().unwrap())
            .stderr(log);
        self.child = Some(cmd.spawn().expect("start sidekicks"));
    }

    /// The workspace of agent `agent_id` (the `cwd` of its process).
    pub fn workspace(&self, agent_id: &str) -> PathBuf {
        self.dir.path().join(format!("workspace-{agent_id}"))
    }

    /// The gateway's process ID while it runs.
    pub fn pid(&self) -> Option<u32> {
        self.child.as_ref().map(|c| c.id())
    }

    /// Where the gateway logs.
    pub fn log_path(&self) -> PathBuf {
        self.dir.path().join("gateway.log")
    }

    /// The gateway's log so far.
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.log_path()).unwrap_or_default()
    }

    /// Waits up to `timeout` for the gateway to exit by itself; returns its status.
    pub fn wait_exit(&mut self, timeout: Duration) -> Option<std::process::ExitStatus> {
        let child = self.child.as_mut()?;
        let deadline = std::time::Instant::now() + timeout;
        while std::time::Instant::now() < deadline {
            if let Some(status) = child.try_wait().unwrap() {
                return Some(status);
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        None
    }

    /// Kills the gateway with SIGKILL, as a crash or power loss would: no clean-up runs.
    pub fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Starts the gateway again after [`GatewayProcess::kill`] or [`GatewayProcess::stop`].
    pub fn start_again(&mut self) {
        self.launch();
    }

    /// Stops the gateway with SIGTERM and waits for it.
    pub fn stop(&mut self) {
        if let Some(mut child) = self.child.take() {
            // SAFETY: kill(2) on our own child's PID.
            unsafe {
                libc::kill(child.id() as i32, libc::SIGTERM);
            }
            for _ in 0..300 {
                if child.try_wait().unwrap().is_some() {
                    return;
                }
                std::thread::sleep(Duration::from_millis(50));
            }
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

impl Drop for GatewayProcess {
    fn drop(&mut self) {
        self.stop();
        if std::thread::panicking() {
            eprintln!("---- gateway log ----\n{}", self.log());
        }
    }
}

/// `sidekicks check` of a config with one agent, `demo`, given by `agent` (its config lines
/// but its ID, name and Matrix account; a relative `ws` folder is there for it): (success,
/// what it said on stdout and stderr).
pub fn check_agent(agent: &str) -> (bool, String) {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("ws")).unwrap();
    let path = dir.path().join("sidekicks.toml");
    std::fs::write(
        &path,
        format!(
            "state_dir = \"state\"\n[matrix]\nhomeserver = \"http://127.0.0.1:9\"\n\
             [access]\nallowed_users = [\"@alice:localhost\"]\n[[agents]]\nid = \"demo\"\n\
             display_name = \"Demo\"\n{agent}\n[agents.matrix]\n\
             user_id = \"@demo:localhost\"\npassword = \"unused\"\n"
        ),
    )
    .unwrap();
    check_config(&path)
}

/// `sidekicks check` on the config at `path`: (success, what it said on stdout and stderr).
pub fn check_config(path: &Path) -> (bool, String) {
    let out = std::process::Command::new(binary())
        .args(["check", "--config"])
        .arg(path)
        .output()
        .unwrap();
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.success(), said)
}
