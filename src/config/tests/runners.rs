//! Where an agent runs (`[agents.runner]`): each kind's settings checked.

use super::*;

/// Asserts that `loaded` was refused with a problem at the first agent's `key` that says
/// `says`; `what` names the case.
fn refused_at(loaded: Result<Config, ConfigError>, key: &str, says: &str, what: &str) {
    match loaded {
        Err(ConfigError::Invalid { problems, .. }) => assert!(
            problems
                .iter()
                .any(|p| p.key == format!("agents[0].{key}") && p.problem.contains(says)),
            "{what}: {problems:?}"
        ),
        other => panic!("{what}: {other:?}"),
    }
}

#[test]
fn an_agents_runner_is_local_by_default_and_a_container_runner_is_checked_field_by_field() {
    let tmp = tmp();
    let dir = tmp.path();
    let with = |runner: &str| {
        valid(dir).replace(
            "[agents.matrix]",
            &format!("[agents.runner]\n{runner}\n[agents.matrix]"),
        )
    };
    let load = |text: &str| Config::from_toml(text, &dir.join("c.toml"));
    let plain = load(&valid(dir)).unwrap();
    assert_eq!(plain.agents[0].runner, RunnerConfig::Local);
    let container = load(&with("kind = \"container\"\nimage = \"agent:1\"")).unwrap();
    match &container.agents[0].runner {
        RunnerConfig::Container(c) => {
            assert_eq!(c.engine, PathBuf::from("podman"));
            assert_eq!(c.image, "agent:1");
            assert_eq!(c.pids_limit, crate::acp::Container::DEFAULT_PIDS_LIMIT);
            assert_eq!((c.cpus, c.memory.as_deref()), (None, None));
        }
        other => panic!("{other:?}"),
    }
    // A network of none needs no bubblewrap sandbox in a container: the container is its box.
    let offline = with("kind = \"container\"\nimage = \"agent:1\"").replace(
        "[agents.runner]",
        "[agents.sandbox]\nnetwork = \"none\"\nmode = \"off\"\n[agents.runner]",
    );
    assert!(load(&offline).is_ok());
    for (runner, key, says) in [
        ("image = \"\"", "runner.image", "not an image name"),
        (
            "image = \"--privileged\"",
            "runner.image",
            "not an image name",
        ),
        ("image = \"a\"\ncpus = 0", "runner.cpus", "above 0"),
        (
            "image = \"a\"\nmemory = \"lots\"",
            "runner.memory",
            "`lots`",
        ),
        ("image = \"a\"\nmemory = \"2gb\"", "runner.memory", "`2gb`"),
        (
            "image = \"a\"\npids_limit = 0",
            "runner.pids_limit",
            "at least 1",
        ),
        // A container per room mounts each room's folder: the workspace must have them.
        (
            "image = \"a\"\nper_room = true",
            "runner.per_room",
            "needs {room} in workspace",
        ),
        (
            "image = \"a\"\nmax_rooms = 2",
            "runner.max_rooms",
            "per_room = true, which is not set",
        ),
    ] {
        let loaded = load(&with(&format!("kind = \"container\"\n{runner}")));
        refused_at(loaded, key, says, runner);
    }
    let per_room = with("kind = \"container\"\nimage = \"a\"\nper_room = true\nmax_rooms = 3")
        .replace(
            &format!("workspace = \"{}\"", dir.display()),
            &format!("workspace = \"{}/{{room}}\"", dir.display()),
        );
    match &load(&per_room).unwrap().agents[0].runner {
        RunnerConfig::Container(c) => assert!(c.per_room && c.max_rooms == 3),
        other => panic!("{other:?}"),
    }
    // In worktree mode every room's worktree shares the repository's git folder, which a
    // container per room would have to mount: refused, saying why.
    let repository = dir.join("repo");
    std::fs::create_dir_all(repository.join(".git")).unwrap();
    let with_worktrees = per_room.replace(
        "[agents.runner]",
        &format!(
            "[agents.worktree]\nrepository = \"{}\"\n[agents.runner]",
            repository.display()
        ),
    );
    refused_at(
        load(&with_worktrees),
        "runner.per_room",
        "shares the repository's git folder",
        "per_room in worktree mode",
    );
    assert!(!matches!(&container.agents[0].runner, RunnerConfig::Container(c) if c.per_room));
    // Kinds not offered, and unknown fields, are parse errors.
    assert!(load(&with("kind = \"kubernetes\"")).is_err());
    assert!(
        load(&with(
            "kind = \"container\"\nimage = \"a\"\nprivileged = true"
        ))
        .is_err()
    );
    assert!(
        load(&with("kind = \"container\"")).is_err(),
        "the image is needed"
    );
}

#[test]
fn an_ssh_runner_takes_paths_on_its_hosts_and_refuses_what_cannot_reach_them() {
    let tmp = tmp();
    let dir = tmp.path();
    for key in ["known_hosts", "id"] {
        std::fs::write(dir.join(key), "x").unwrap();
    }
    let runner = "[agents.runner]\nkind = \"ssh\"\nhosts = [\"agent@build1\", \"ssh://b:2222\"]\n\
                  known_hosts = \"known_hosts\"\nidentity = \"id\"\n";
    // Its workspace is a path on the hosts: it need not exist here, nor is it made
    // relative to the config; its keys are files here.
    let text = valid(Path::new("/srv/work/{agent}/{room}")).replace(
        "[agents.matrix]",
        &format!("room_tools = false\nhome = \"~/agents/demo\"\n{runner}[agents.matrix]"),
    );
    let load = |text: &str| Config::from_toml(text, &dir.join("c.toml"));
    let config = load(&text).unwrap();
    let agent = &config.agents[0];
    assert!(load(&text.replace("room_tools = false", "room_tools = true")).is_ok());
    assert_eq!(agent.workspace, PathBuf::from("/srv/work/demo/{room}"));
    assert_eq!(agent.home, Some(PathBuf::from("~/agents/demo")));
    match &agent.runner {
        RunnerConfig::Ssh(ssh) => {
            assert_eq!(ssh.hosts, ["agent@build1", "ssh://b:2222"]);
            assert_eq!(ssh.known_hosts, dir.join("known_hosts"));
            assert_eq!(ssh.identity, dir.join("id"));
            assert_eq!(ssh.ssh, PathBuf::from("ssh"));
            assert_eq!(ssh.program, "sidekicks");
            assert_eq!(ssh.connect_timeout_secs, 10);
        }
        other => panic!("{other:?}"),
    }
    for (from, to, key, says) in [
        // The room tools come through a socket bound into its sandbox there.
        (
            "room_tools = false",
            "room_tools = true\nsandbox = { mode = \"off\" }",
            "sandbox.mode",
            "\"off\" cannot be asked of it",
        ),
        (
            "room_tools = false",
            "sandbox = { mode = \"off\" }",
            "sandbox.mode",
            "\"off\" cannot be asked of it",
        ),
        (
            "hosts = [\"agent@build1\", \"ssh://b:2222\"]",
            "hosts = []",
            "runner.hosts",
            "names no host",
        ),
        (
            "\"agent@build1\"",
            "\"-oProxyCommand=x\"",
            "runner.hosts",
            "not an ssh destination",
        ),
        (
            "known_hosts = \"known_hosts\"",
            "known_hosts = \"missing\"",
            "runner.known_hosts",
            "is not a file",
        ),
        (
            "identity = \"id\"",
            "identity = \"missing\"",
            "runner.identity",
            "is not a file",
        ),
        (
            "home = \"~/agents/demo\"",
            "home = \"agents/demo\"",
            "home",
            "absolute path on the agent's hosts",
        ),
        (
            "\"/srv/work/{agent}",
            "\"srv/work/{agent}",
            "workspace",
            "absolute path on the agent's hosts",
        ),
    ] {
        refused_at(load(&text.replace(from, to)), key, says, to);
    }
    // Worktree mode: its repository is on the hosts too (absolute, not looked for here).
    let worktree = |repository: &str| {
        text.replace(
            "[agents.matrix]",
            &format!("[agents.worktree]\nrepository = \"{repository}\"\n[agents.matrix]"),
        )
    };
    let config = load(&worktree("/srv/repo")).unwrap();
    let repository = &config.agents[0].worktree.as_ref().unwrap().repository;
    assert_eq!(repository, &PathBuf::from("/srv/repo"));
    refused_at(
        load(&worktree("repo")),
        "worktree.repository",
        "absolute path on the agent's hosts",
        "a relative repository",
    );
}
