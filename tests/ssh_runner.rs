#![recursion_limit = "256"]
//! The SSH runner (`[agents.runner] kind = "ssh"`) through a real homeserver and a real
//! `sshd` on loopback (Debian's `openssh-server`, a throwaway host key and user key): the
//! demo agent runs on the "remote" host through `sidekicks remote`, a host that is down is
//! skipped, and everything the gateway does with the agent's files (`fs/*`, `!file`, the
//! inbox) and its commands (`terminal/*`, stopped with `!stop`) happens there, by handle (a
//! link the agent plants there leads nowhere). With no host left, the room is told; a host
//! whose key is not on record is refused. The room tools reach an agent there through a
//! socket its connection forwards, which no agent on that host can find but its own.
//!
//! The remote host is this machine seen through a mount namespace of its own: the agent's
//! workspace and home are in a folder that is empty for the gateway, so a file the gateway
//! reached by itself instead of through the host would be missed. The tests look at the
//! host's disk and processes directly.

mod support;

use std::path::Path;
use std::time::Duration;

use support::gateway::binary;
use support::ports::free_port;
use support::procs::{running, running_as, working_in};
use support::sshd::Sshd;
use support::{Env, PATIENCE, SynapseOptions, wait_until};

/// The name of the room's folder below `remote`'s `work`, from the agent's `%pwd` in `said`.
fn room_folder(said: &str, remote: &Path) -> String {
    let folder = said.lines().find_map(|l| l.strip_prefix("folder: "));
    let folder = folder.unwrap_or_else(|| panic!("{said}"));
    let name = Path::new(folder).strip_prefix(remote.join("work"));
    let name = name.unwrap_or_else(|_| panic!("{said}"));
    name.to_str().unwrap().to_owned()
}

/// A destination on loopback where nothing listens.
fn down_host() -> String {
    format!("ssh://nobody@127.0.0.1:{}", free_port())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_agent_on_another_host_works_there_and_a_host_that_is_down_is_skipped() {
    let Some(sshd) = Sshd::start() else { return };
    let (remote, disk) = (sshd.remote(), sshd.disk());
    // A file of the host's, outside the agent's workspace.
    std::fs::write(disk.join("host-secret.txt"), "the host's").unwrap();
    let dead = down_host();
    let hosts = [dead.clone(), sshd.destination()];
    let agent = sshd.agent_toml(&hosts, &remote);
    let env = Env::start_with_agent_toml(SynapseOptions::default(), "", &agent).await;
    let state = env.gw.dir.path().join("state");
    let session = state.join("matrix/demo/session.json");
    let room = env.room_with_agent(false).await;
    assert!(session.exists());
    let before = env.posted(&room);
    env.alice
        .send(
            &room,
            &format!(
                "%pwd\n\
                 %write note.txt written-remote\n\
                 %read {session}\n\
                 %fs-read note.txt\n\
                 %fs-write via-fs.txt sent-through-ssh\n\
                 %terminal cat via-fs.txt; echo; echo home=$HOME; ln -s {secret} leak\n\
                 %say done trying",
                session = session.display(),
                secret = remote.join("host-secret.txt").display(),
            ),
        )
        .await;
    let said = env
        .answer_since(&room, before, "the agent's report", |t| {
            t.contains("done trying")
        })
        .await;
    // It works in its room's folder on the host, with its home there.
    let name = room_folder(&said, &remote);
    // Its files as the host has them.
    let folder = disk.join("work").join(name);
    assert!(folder.join("note.txt").is_file(), "{said}");
    let home = remote.join("home");
    assert!(
        said.contains(&format!("home: {}", home.display())),
        "{said}"
    );
    // What it wrote there the gateway read back for it, through the host (`fs/*`).
    assert!(
        said.contains("fs read note.txt: 14 chars: written-remote"),
        "{said}"
    );
    assert!(said.contains("fs wrote via-fs.txt"), "{said}");
    assert_eq!(
        std::fs::read_to_string(folder.join("via-fs.txt")).unwrap(),
        "sent-through-ssh"
    );
    // Its commands run there, in its folder, with its home.
    assert!(
        said.contains(&format!("sent-through-ssh\nhome={}", home.display())),
        "{said}"
    );
    // In the host's sandbox, what is the gateway's is hidden (should the host be this one).
    assert!(
        said.contains(&format!("cannot read {}", session.display())),
        "{said}"
    );
    // The host that is down was skipped, and said so; the other signed in with its key.
    let log = env.gw.log();
    let port = dead.rsplit(':').next().unwrap();
    assert!(
        log.lines()
            .any(|l| l.contains("agent host does not answer; skipped") && l.contains(port)),
        "{log}"
    );
    assert!(log.contains("agent host chosen"), "{log}");
    assert!(sshd.log().contains("Accepted publickey"), "{}", sshd.log());

    // From here on the file operations (`!file`, the inbox) share the connection the
    // agent's earlier ones opened: each is a session in it, not another sign-in.
    let sign_ins = || sshd.log().matches("Accepted publickey").count();
    let signed_in = sign_ins();

    // `!file` posts a file of its folder there, and nothing outside it.
    env.alice.send(&room, "!file note.txt").await;
    let file = wait_until(PATIENCE, "the agent's file note.txt", || {
        (env.alice.messages_from(&room, &env.agent).into_iter())
            .find(|m| m.media.as_ref().is_some_and(|(_, n, _)| n == "note.txt"))
    })
    .await;
    let (_, _, source) = file.media.clone().unwrap();
    assert_eq!(env.alice.download(&source).await, b"written-remote");
    // A link the agent planted there leads nowhere.
    assert!(folder.join("leak").is_symlink(), "{said}");
    env.alice.send(&room, "!file leak").await;
    env.notice_containing(&room, "outside the workspace").await;

    // A file someone shares is saved in the folder's inbox there.
    env.alice
        .send_file(
            &room,
            "shared.txt",
            "text/plain",
            b"from alice".to_vec(),
            Some("%say got the file"),
        )
        .await;
    env.reply_where(&room, "the shared file", |t| t.contains("got the file"))
        .await;
    assert_eq!(
        std::fs::read(folder.join("sidekicks-inbox/shared.txt")).unwrap(),
        b"from alice"
    );
    assert_eq!(sign_ins(), signed_in, "no sign-in more: {}", sshd.log());

    // A command stopped with `!stop` ends there, with everything it started.
    env.alice.send(&room, "%terminal sleep 3021").await;
    wait_until(PATIENCE, "the remote sleep", || {
        (running_as("sleep 3021") > 0).then_some(())
    })
    .await;
    env.alice.send(&room, "!stop").await;
    wait_until(Duration::from_secs(15), "the remote sleep ended", || {
        (running("sleep 3021") == 0).then_some(())
    })
    .await;

    // Stopped, the gateway leaves nothing running on the host.
    assert!(
        working_in(&remote) > 0,
        "the agent runs in its workspace there"
    );
    let mut env = env;
    env.gw.stop();
    wait_until(
        Duration::from_secs(15),
        "nothing left in the workspace",
        || (working_in(&remote) == 0).then_some(()),
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_room_tools_reach_an_agent_on_another_host_and_post_its_files_from_there() {
    let Some(sshd) = Sshd::start() else { return };
    let (remote, disk) = (sshd.remote(), sshd.disk());
    let agent = (sshd.agent_toml(&[sshd.destination()], &remote))
        .replace("room_tools = false", "room_tools = true");
    let env = Env::start_with_agent_toml(SynapseOptions::default(), "", &agent).await;
    let room = env.room_with_agent(false).await;
    // A file the agent makes on its host, and one of the gateway's it names.
    let outside = env.gw.dir.path().join("config.toml");
    let before = env.posted(&room);
    env.alice
        .send(&room, "%write chart.txt the remote chart\n%mcp\n%pwd")
        .await;
    let said = env
        .answer_since(&room, before, "the agent's servers", |t| {
            t.contains("folder: ")
        })
        .await;
    // Its session has the room tools over stdio, the host's program speaking for them
    // there (through the socket its connection forwards, bound into its sandbox).
    assert!(
        said.contains(&format!(
            "mcp: sidekicks stdio {} mcp-stdio",
            support::gateway::binary().display()
        )),
        "{said}"
    );
    let name = room_folder(&said, &remote);
    let json = r#"{"path": "chart.txt", "caption": "From the build host"}"#;
    let posted = env.call_tool(&room, "post_file", json).await;
    assert!(posted.contains("Posted chart.txt as $"), "{posted}");
    let file = wait_until(PATIENCE, "the posted file", || {
        (env.alice.messages_from(&room, &env.agent).into_iter())
            .find(|m| m.media.as_ref().is_some_and(|(_, n, _)| n == "chart.txt"))
    })
    .await;
    assert_eq!(file.body, "From the build host");
    let (_, _, source) = file.media.clone().unwrap();
    // Read on the host, where the agent wrote it.
    assert_eq!(env.alice.download(&source).await, b"the remote chart");
    assert!(disk.join("work").join(name).join("chart.txt").is_file());
    // A file outside its folder is refused there too.
    let json = format!(r#"{{"path": "{}"}}"#, outside.display());
    let refused = env.call_tool(&room, "post_file", &json).await;
    assert!(
        refused.starts_with("mcp-call post_file failed:")
            && refused.contains("outside the workspace"),
        "{refused}"
    );
    // The forwarded socket is the agent's own, and goes with it.
    let forwarded = || -> Vec<std::path::PathBuf> {
        (std::fs::read_dir("/tmp").unwrap().filter_map(|e| e.ok()))
            .filter(|e| {
                let name = e.file_name();
                let name = name.to_string_lossy();
                name.starts_with("sidekicks-room-tools-") && name.ends_with(".sock")
            })
            .map(|e| e.path())
            .collect()
    };
    assert!(!forwarded().is_empty(), "the socket on the host");
    // An agent on that host that knows a forwarded socket's name there (its own, or another
    // agent's: `/proc/net/unix` lists them) cannot open it: its sandbox has a `/tmp` of its
    // own, and only its own socket is bound in, where the room tools are found. Its commands
    // find none either.
    let socket = forwarded().swap_remove(0);
    let before = env.posted(&room);
    env.alice
        .send(
            &room,
            &format!(
                "%read {}\n%read /run/sidekicks/room-tools.sock\n\
                 %terminal echo seen=$(ls -d /tmp/sidekicks-room-tools-* 2>/dev/null | wc -l)\n\
                 %say done looking",
                socket.display()
            ),
        )
        .await;
    let looked = env
        .answer_since(&room, before, "the agent's look", |t| {
            t.contains("done looking")
        })
        .await;
    assert!(
        looked.contains(&format!(
            "cannot read {}: No such file or directory",
            socket.display()
        )),
        "{looked}"
    );
    // Its own is there (a socket cannot be read as a file).
    assert!(
        looked.contains("cannot read /run/sidekicks/room-tools.sock: No such device or address"),
        "{looked}"
    );
    assert!(looked.contains("seen=0\n"), "{looked}");
    for socket in forwarded() {
        let mode = socket.metadata().unwrap().permissions();
        let mode = std::os::unix::fs::PermissionsExt::mode(&mode) & 0o777;
        assert_eq!(mode, 0o600, "{}: only the remote user's", socket.display());
    }
    let mut env = env;
    env.gw.stop();
    wait_until(
        Duration::from_secs(15),
        "the forwarded socket removed",
        || forwarded().is_empty().then_some(()),
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn after_a_restart_the_agent_goes_back_to_the_host_it_ran_on() {
    let Some(sshd) = Sshd::start() else { return };
    // Two names of the one host: the agent's rooms' files are on the one it ran on.
    let first = sshd.destination();
    let port = first.rsplit(':').next().unwrap();
    let second = format!("ssh://127.0.0.1:{port}");
    let dead = down_host();
    let agent = sshd.agent_toml(&[dead.clone(), second.clone()], &sshd.remote());
    let mut env = Env::start_with_agent_toml(SynapseOptions::default(), "", &agent).await;
    let room = env.room_with_agent(false).await;
    env.prompt_and_wait(&room, "%say before", "before").await;
    let chosen = |log: String| -> Vec<String> {
        (log.lines())
            .filter(|l| l.contains("agent host chosen"))
            .map(str::to_owned)
            .collect()
    };
    let on = chosen(env.gw.log());
    assert!(
        on.len() == 1 && on[0].contains(&format!("host={second} ")),
        "{on:?}"
    );
    // The first host answers again (in the down one's place) when the gateway restarts.
    env.gw.stop();
    let config = env.gw.dir.path().join("sidekicks.toml");
    let text = std::fs::read_to_string(&config).unwrap();
    std::fs::write(&config, text.replace(&dead, &first)).unwrap();
    env.gw.start_again();
    let on = wait_until(PATIENCE, "the agent's host chosen again", || {
        let on = chosen(env.gw.log());
        (on.len() == 2).then_some(on)
    })
    .await;
    assert!(on[1].contains(&format!("host={second} ")), "{on:?}");
    env.prompt_and_wait(&room, "%say after", "after").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_no_host_answering_the_room_is_told_which_and_why() {
    let Some(sshd) = Sshd::start() else { return };
    let dead = down_host();
    let agent = sshd.agent_toml(&[sshd.destination(), dead.clone()], &sshd.remote());
    let env = Env::start_with_agent_toml(SynapseOptions::default(), "", &agent).await;
    let room = env.room_with_agent(false).await;
    env.alice.send(&room, "%say hello").await;
    env.reply_where(&room, "the first answer", |t| t.contains("hello"))
        .await;
    // Its host goes down, and the agent with it: the next start finds no host.
    let live = sshd.destination();
    drop(sshd);
    env.alice.send(&room, "%crash").await;
    env.alice.send(&room, "%say again").await;
    let told = env
        .notice_containing(&room, "no host of agent demo answers")
        .await;
    for host in [&live, &dead] {
        assert!(told.body.contains(host.as_str()), "{}", told.body);
    }
    assert!(told.body.contains("Connection refused"), "{}", told.body);
}

/// `sidekicks check` of a config whose one agent runs on `sshd`, its host key checked
/// against `known_hosts`: (success, what it said).
fn check(sshd: &Sshd, known_hosts: &Path) -> (bool, String) {
    let agent = sshd
        .agent_toml(&[sshd.destination()], &sshd.remote())
        .replace(
            &format!("known_hosts = {:?}", sshd.known_hosts()),
            &format!("known_hosts = {known_hosts:?}"),
        );
    let program = format!("command = {:?}\nargs = [\"demo-agent\"]\n", binary());
    support::gateway::check_agent(&format!("{program}{agent}"))
}

#[test]
fn check_runs_the_agent_on_its_host_and_a_host_whose_key_is_not_known_is_refused() {
    let Some(sshd) = Sshd::start() else { return };
    let (ok, said) = check(&sshd, &sshd.known_hosts());
    assert!(ok, "{said}");
    assert!(said.contains("sandbox: ssh (hosts ssh://"), "{said}");
    assert!(said.contains("session/new: ok"), "{said}");
    // How long a file operation takes there, measured (a slow remote shell shows in it).
    let took = (said.lines())
        .find_map(|l| l.trim().strip_prefix("file operations on its host: "))
        .and_then(|rest| rest.split_once(" ms each"))
        .and_then(|(ms, _)| ms.parse::<u64>().ok());
    assert!(took.is_some_and(|ms| ms > 0), "{said}");
    // The workspace was made there, and nothing here.
    assert!(sshd.disk().join("work").is_dir());
    assert!(!sshd.remote().join("work").exists());
    // The same host with another key on record: refused, not trusted on first use.
    let other = tempfile::tempdir().unwrap();
    let key = other.path().join("key");
    let made = std::process::Command::new("ssh-keygen")
        .args(["-q", "-t", "ed25519", "-N", "", "-f"])
        .arg(&key)
        .status()
        .unwrap();
    assert!(made.success());
    let public = std::fs::read_to_string(key.with_extension("pub")).unwrap();
    let mut parts = public.split_whitespace();
    let known = other.path().join("known_hosts");
    std::fs::write(
        &known,
        format!(
            "[127.0.0.1]:{} {} {}\n",
            sshd.port,
            parts.next().unwrap(),
            parts.next().unwrap()
        ),
    )
    .unwrap();
    let signed_in = |log: String| log.matches("Accepted publickey").count();
    let before = signed_in(sshd.log());
    let (ok, said) = check(&sshd, &known);
    assert!(!ok, "{said}");
    assert!(said.contains("no host of agent demo answers"), "{said}");
    assert!(said.contains("Host key verification failed"), "{said}");
    assert_eq!(signed_in(sshd.log()), before, "{}", sshd.log());
}

/// Runs git in `folder` on the host's disk; its output.
fn git(folder: &Path, args: &[&str]) -> String {
    let out = std::process::Command::new("git")
        .arg("-C")
        .arg(folder)
        .args(["-c", "user.name=t", "-c", "user.email=t@example.org"])
        .args(args)
        .output()
        .unwrap();
    assert!(out.status.success(), "git {args:?}: {out:?}");
    String::from_utf8(out.stdout).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn worktree_mode_on_another_host_makes_shows_and_removes_each_rooms_worktree_there() {
    let Some(sshd) = Sshd::start() else { return };
    let (remote, disk) = (sshd.remote(), sshd.disk());
    let repo = disk.join("repo");
    std::fs::create_dir(&repo).unwrap();
    git(&repo, &["init", "-q", "-b", "main"]);
    std::fs::write(repo.join("README"), "hello\n").unwrap();
    git(&repo, &["add", "README"]);
    git(&repo, &["commit", "-q", "-m", "first"]);
    let agent = format!(
        "{}[agents.worktree]\nrepository = \"{}/repo\"\n",
        sshd.agent_toml(&[sshd.destination()], &remote),
        remote.display()
    );
    let env = Env::start_with_agent_toml(SynapseOptions::default(), "", &agent).await;
    let room = env.room_with_agent(false).await;
    let before = env.posted(&room);
    env.alice
        .send(
            &room,
            "%pwd\n\
             %terminal git branch --show-current; cat README; \
             git -c user.name=a -c user.email=a@example.org commit -q --allow-empty -m by-the-agent \
             && echo committed\n\
             %say done",
        )
        .await;
    let said = env
        .answer_since(&room, before, "the agent's report", |t| t.contains("done"))
        .await;
    let name = room_folder(&said, &remote);
    let branch = format!("sidekicks/demo/{name}");
    // The room's folder is a worktree of the host's repository, on a branch of its own, and
    // the agent commits there (the repository's git folder is writable in its sandbox).
    assert!(
        said.contains(&format!("{branch}\nhello\ncommitted")),
        "{said}"
    );
    assert!(disk.join("work").join(&name).join(".git").is_file());
    assert_eq!(
        git(&repo, &["log", "-1", "--format=%s", &branch]).trim(),
        "by-the-agent"
    );
    // `!worktree` reads it there.
    env.alice.send(&room, "!worktree").await;
    let status = env.notice_containing(&room, &format!("`{branch}`")).await;
    assert!(status.body.contains("1 commit ahead"), "{}", status.body);
    // `!worktree remove` takes it away there, the branch kept.
    env.alice.send(&room, "!worktree remove").await;
    env.notice_containing(&room, "The worktree is removed")
        .await;
    assert!(!disk.join("work").join(&name).exists());
    assert!(git(&repo, &["branch", "--list", &branch]).contains(&branch));
}
