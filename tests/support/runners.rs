//! Where the demo agent runs, as one table: here in the sandbox, in a container, in a
//! container per room, and on another host over SSH. The tests that hold for every runner
//! (the hostile-agent suite) are written once against [`Runner`] and generated for each, so
//! a runner added here gets them all.
//!
//! A runner this machine cannot offer (no Podman, no `sshd`, not root) is skipped by each
//! of its tests, saying so on stderr: nothing else is checked then.

use std::path::PathBuf;

use tempfile::TempDir;

use super::container::{agent_image, in_container};
use super::sshd::Sshd;
use super::{Env, SynapseOptions};

/// One way to run the agent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Runner {
    /// Here, in bubblewrap (required), a folder per room.
    Local,
    /// One container of the demo agent's image (Podman) for all its rooms.
    Container,
    /// A container per room, each mounting its room's folder and a home of its own.
    ContainerPerRoom,
    /// On another host over SSH (a throwaway `sshd` on loopback), in that host's sandbox.
    Ssh,
}

/// What a test adds to the agent's config, wherever it runs.
#[derive(Debug, Default, Clone, Copy)]
pub struct AgentLines<'a> {
    /// Lines of the agent's own table (`key = value`).
    pub keys: &'a str,
    /// Lines of its `[agents.sandbox]` table.
    pub sandbox: &'a str,
}

/// The gateway and its agent on one runner.
pub struct OnRunner {
    /// The homeserver, the gateway and Alice.
    pub env: Env,
    /// Where the agent runs.
    pub runner: Runner,
    /// The agent's host, for [`Runner::Ssh`].
    pub sshd: Option<Sshd>,
    /// The rooms' folders of a container per room (removed with it).
    _workspaces: Option<TempDir>,
}

impl Runner {
    /// Every runner.
    pub const ALL: [Runner; 4] = [
        Runner::Local,
        Runner::Container,
        Runner::ContainerPerRoom,
        Runner::Ssh,
    ];

    /// Whether each room's agent runs apart from the others' (its own process, folder and
    /// home), so that one room's agent reaches nothing of another's.
    pub fn separates_rooms(self) -> bool {
        self == Runner::ContainerPerRoom
    }

    /// Whether the agent gets the room tools here (the SSH host in these tests has them
    /// off: `tests/ssh_runner.rs` covers them there).
    pub fn has_room_tools(self) -> bool {
        self != Runner::Ssh
    }

    /// Starts a homeserver and a gateway whose demo agent runs here, with `extra_toml` at
    /// the top of its config, `agent` added to the agent's and `envs` in the gateway's
    /// environment; `None` (said on stderr) where this machine cannot run it.
    pub async fn start(
        self,
        extra_toml: &str,
        agent: AgentLines<'_>,
        envs: &[(String, String)],
    ) -> Option<OnRunner> {
        let mut sshd = None;
        let mut workspaces = None;
        // (the agent's keys, its runner table)
        let (keys, runner): (String, String) = match self {
            Runner::Local => (
                "workspace = \"workspace-demo/{room}\"".into(),
                String::new(),
            ),
            Runner::Container => split_runner(&in_container(agent_image()?, "")),
            Runner::ContainerPerRoom => {
                let image = agent_image()?;
                let folders = tempfile::tempdir().unwrap();
                let root = folders.path().canonicalize().unwrap();
                let (keys, runner) = split_runner(&in_container(image, "per_room = true"));
                workspaces = Some(folders);
                (
                    format!("workspace = \"{}/{{room}}\"\n{keys}", root.display()),
                    runner,
                )
            }
            Runner::Ssh => {
                let server = Sshd::start()?;
                let remote = server.remote();
                let (keys, runner) =
                    split_runner(&server.agent_toml(&[server.destination()], &remote));
                sshd = Some(server);
                (keys, runner)
            }
        };
        let agent_toml = format!(
            "{keys}\n{}\n[agents.sandbox]\n{}\n{runner}",
            agent.keys, agent.sandbox
        );
        let top = format!("[sandbox]\nmode = \"bubblewrap\"\n{extra_toml}");
        let env = Env::start_with_envs(SynapseOptions::default(), &top, &agent_toml, envs).await;
        Some(OnRunner {
            env,
            runner: self,
            sshd,
            _workspaces: workspaces,
        })
    }
}

/// An agent's config lines as (its keys, its `[agents.runner]` table and what follows).
fn split_runner(lines: &str) -> (String, String) {
    match lines.find("[agents.runner]") {
        Some(at) => (lines[..at].to_owned(), lines[at..].to_owned()),
        None => (lines.to_owned(), String::new()),
    }
}

impl OnRunner {
    /// The gateway's state folder.
    pub fn state(&self) -> PathBuf {
        self.env.gw.dir.path().join("state")
    }

    /// The agent's Matrix session file, which holds its access token.
    pub fn session_file(&self) -> PathBuf {
        self.state().join("matrix/demo/session.json")
    }
}

/// The tests of `$suite` (a module of `async fn NAME(runner: Runner)`), one per runner and
/// test: `$suite::NAME` becomes `local::NAME`, `container::NAME`, … each its own test.
#[macro_export]
macro_rules! for_every_runner {
    ($suite:ident: $($test:ident),* $(,)?) => {
        $crate::for_every_runner!(@runner $suite, local, Local: $($test),*);
        $crate::for_every_runner!(@runner $suite, container, Container: $($test),*);
        $crate::for_every_runner!(@runner $suite, container_per_room, ContainerPerRoom: $($test),*);
        $crate::for_every_runner!(@runner $suite, ssh, Ssh: $($test),*);
    };
    (@runner $suite:ident, $module:ident, $runner:ident: $($test:ident),*) => {
        mod $module {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $test() {
                    super::$suite::$test(super::support::runners::Runner::$runner).await
                }
            )*
        }
    };
}
