#![recursion_limit = "256"]
//! The container runner (`[agents.runner] kind = "container"`) with Podman, through a real
//! homeserver: the demo agent runs from an image of its own (this build's binary on the
//! Debian base the container image test uses), answers, streams, asks permission, runs its
//! commands inside its container, writes only its mounted workspace, cannot see the
//! gateway's state, gets the configured limits, and leaves no container behind; a command
//! stopped with `!stop` ends inside the container; with a container per room, each room's
//! agent sees its own folder and no other room's.
//!
//! Where Podman is not installed or cannot run a container here, the tests say so and check
//! nothing else (as the container image test does).

mod support;

use std::time::Duration;

use support::container::{BASE, agent_image, containers, in_container, inspect, label, podman};
use support::procs::{running, running_as};
use support::{Env, PATIENCE, SynapseOptions, wait_until};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_container_agent_answers_asks_runs_inside_and_writes_only_its_workspace() {
    let Some(image) = agent_image() else { return };
    let env =
        Env::start_with_agent_toml(SynapseOptions::default(), "", &in_container(image, "")).await;
    let state = env.gw.dir.path().join("state");
    let room = env.room_with_agent(false).await;
    let workspace = env.gw.workspace("demo").canonicalize().unwrap();
    let session = state.join("matrix/demo/session.json");
    assert!(session.exists());
    let outside = env.gw.dir.path().join("escaped.txt");
    let before = env.posted(&room);
    env.alice
        .send(
            &room,
            &format!(
                "%pwd\n\
                 %write note.txt written-inside\n\
                 %write {outside} escaped\n\
                 %read {session}\n\
                 %fs-read note.txt\n\
                 %terminal test -f /run/.containerenv && echo in-a-container; cat note.txt\n\
                 %say done trying",
                outside = outside.display(),
                session = session.display(),
            ),
        )
        .await;
    let said = env
        .answer_since(&room, before, "the agent's report", |t| {
            t.contains("done trying")
        })
        .await;
    // It works in its workspace, at the same path as outside, with its home mounted.
    assert!(
        said.contains(&format!("folder: {}", workspace.display())),
        "{said}"
    );
    let home = state.join("agent-homes/demo").canonicalize().unwrap();
    assert!(
        said.contains(&format!("home: {}", home.display())),
        "{said}"
    );
    // What it writes in its workspace is there for the gateway, and the gateway reads it
    // back for it (`fs/read_text_file`).
    assert!(said.contains("wrote note.txt"), "{said}");
    assert_eq!(
        std::fs::read_to_string(workspace.join("note.txt")).unwrap(),
        "written-inside"
    );
    assert!(
        said.contains("fs read note.txt: 14 chars: written-inside"),
        "{said}"
    );
    // Nothing outside its workspace is written, and the gateway's state is not there.
    assert!(
        !outside.exists(),
        "the agent wrote outside its workspace: {said}"
    );
    assert!(
        said.contains(&format!("cannot read {}", session.display())),
        "{said}"
    );
    // Its commands run inside its container, in its workspace.
    assert!(
        said.contains("```\nin-a-container\nwritten-inside\n```"),
        "{said}"
    );

    // One container, with the configured limits, and as the gateway's own user.
    let names = containers(&state);
    assert_eq!(names.len(), 1, "{names:?}");
    let name = &names[0];
    assert_eq!(
        inspect(
            name,
            "{{.HostConfig.Memory}} {{.HostConfig.NanoCpus}} {{.HostConfig.PidsLimit}}"
        ),
        "805306368 1500000000 300"
    );
    // SAFETY: getuid(2) cannot fail.
    let uid = unsafe { libc::getuid() };
    assert_eq!(inspect(name, "{{.Config.User}}"), format!("{uid}:{uid}"));

    // It asks before a tool runs, and runs it when allowed.
    env.alice.send(&room, "%permission bash: ls").await;
    let poll = env.open_poll(&room, "🔐", 0, 5).await;
    env.alice.react(&room, &poll, "✅").await;
    env.reply_where(&room, "the tool allowed", |t| {
        t.contains("permission: allow")
    })
    .await;

    // Its answer streams in as edits of one message.
    let text = "streamed from inside a container, ten characters at a time, over two seconds \
                or so, to its very end";
    env.alice
        .send(&room, &format!("%stream 200 10\n{text}"))
        .await;
    let reply = wait_until(PATIENCE, "the streamed answer", || {
        env.alice
            .messages_from(&room, &env.agent)
            .into_iter()
            .filter(|m| m.replaces.is_none())
            .find(|m| {
                env.alice.current_text(&m.event_id).as_deref() == Some(text)
                    && !env.alice.is_live(&m.event_id)
            })
            .map(|m| m.event_id)
    })
    .await;
    let edits = env.alice.edits_of(&reply).len();
    assert!(edits >= 2, "{edits} edits");

    // A command stopped with `!stop` ends inside the container, with what it started there
    // in the background: those are the engine's children, not the gateway's.
    env.alice
        .send(&room, "%terminal sleep 3022 & exec sleep 3023")
        .await;
    // (The processes themselves: the engine's client names them before they run.)
    wait_until(PATIENCE, "the command's processes in the container", || {
        (running_as("sleep 3022") > 0 && running_as("sleep 3023") > 0).then_some(())
    })
    .await;
    env.alice.send(&room, "!stop").await;
    wait_until(
        Duration::from_secs(15),
        "the command's processes ended",
        || (running_as("sleep 3022") + running_as("sleep 3023") == 0).then_some(()),
    )
    .await;
    // Stopped the moment it begins, while the engine is still starting it, a command ends
    // too: the engine starts what its client asked even once that client is gone.
    env.alice.send(&room, "%terminal exec sleep 3026").await;
    wait_until(PATIENCE, "the engine's client for the command", || {
        (running("exec sleep 3026") > 0).then_some(())
    })
    .await;
    env.alice.send(&room, "!stop").await;
    wait_until(
        Duration::from_secs(15),
        "the command stopped at once ended",
        || (running_as("sleep 3026") == 0).then_some(()),
    )
    .await;
    // The agent's container is still there, and it still answers; what was stopped has not
    // started since.
    assert_eq!(containers(&state), names);
    env.prompt_and_wait(&room, "%say after the stop", "after the stop")
        .await;
    assert_eq!(
        running_as("sleep 3026"),
        0,
        "a stopped command started late"
    );

    // Stopped, the gateway leaves no container behind.
    stop_leaving_no_container(env, &state).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn containers_a_killed_gateway_left_are_removed_at_its_next_start() {
    let Some(image) = agent_image() else { return };
    let mut env =
        Env::start_with_agent_toml(SynapseOptions::default(), "", &in_container(image, "")).await;
    let state = env.gw.dir.path().join("state");
    let room = env.room_with_agent(false).await;
    env.prompt_and_wait(&room, "%say before the kill", "before the kill")
        .await;
    let first = containers(&state);
    assert_eq!(first.len(), 1, "{first:?}");
    // kill -9: the engine's client goes with the gateway and its container with it.
    env.gw.kill();
    wait_until(
        Duration::from_secs(30),
        "the killed gateway's container gone",
        || containers(&state).is_empty().then_some(()),
    )
    .await;
    // One that outlived it anyway (the engine's client killed too) is removed at start.
    let left_name = format!("sidekicks-demo-left-{}", std::process::id());
    podman(&[
        "run",
        "-d",
        "--label",
        &label(&state),
        "--name",
        &left_name,
        BASE,
        "sleep",
        "600",
    ]);
    env.gw.start_again();
    env.prompt_and_wait(&room, "%say after the restart", "after the restart")
        .await;
    let now = containers(&state);
    assert_eq!(now.len(), 1, "{now:?}");
    assert!(!now.contains(&left_name));
    assert!(!now.contains(&first[0]));
    assert!(
        env.gw
            .log()
            .contains("removed containers a stopped gateway left running")
    );
    env.gw.stop();
}

/// The agent's table with a container per room (and `extra` runner lines), its rooms'
/// folders below a folder of the test's own (returned with it, to keep until the test ends).
fn per_room_with(image: &str, extra: &str) -> (tempfile::TempDir, String) {
    let workspaces = tempfile::tempdir().unwrap();
    let root = workspaces.path().canonicalize().unwrap();
    let agent = format!(
        "workspace = \"{}/{{room}}\"\n{}",
        root.display(),
        in_container(image, &format!("per_room = true\n{extra}"))
    );
    (workspaces, agent)
}

/// The agent's table with a container per room; see [`per_room_with`].
fn per_room(image: &str) -> (tempfile::TempDir, String) {
    per_room_with(image, "")
}

/// Stops the gateway, and waits until none of its containers is left.
async fn stop_leaving_no_container(mut env: Env, state: &std::path::Path) {
    env.gw.stop();
    wait_until(PATIENCE, "every container removed", || {
        containers(state).is_empty().then_some(())
    })
    .await;
}

/// `sidekicks check` of a config whose one agent runs in `image`: (success, what it said).
fn check(image: &str) -> (bool, String) {
    support::gateway::check_agent(&format!("workspace = \"ws\"\n{}", in_container(image, "")))
}

#[test]
fn check_runs_the_agent_in_its_container_and_names_a_missing_image() {
    let Some(image) = agent_image() else { return };
    let (ok, said) = check(image);
    assert!(ok, "{said}");
    assert!(said.contains("sandbox: container ("), "{said}");
    assert!(
        said.contains(&format!("image {image}): sees its image")),
        "{said}"
    );
    assert!(
        said.contains("limits: 1.5 CPUs, 768m memory, 300 processes"),
        "{said}"
    );
    assert!(said.contains("session/new: ok"), "{said}");
    let (ok, said) = check("localhost/no-such-agent-image:0");
    assert!(!ok, "{said}");
    assert!(
        said.contains("has no image `localhost/no-such-agent-image:0` (pull or build it first)"),
        "{said}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_a_container_per_room_each_rooms_agent_sees_its_rooms_folder_and_no_other() {
    let Some(image) = agent_image() else { return };
    let (workspaces, agent) = per_room(image);
    let root = workspaces.path().canonicalize().unwrap();
    let env = Env::start_with_agent_toml(SynapseOptions::default(), "", &agent).await;
    let state = env.gw.dir.path().join("state");
    // No room has spoken: no container runs.
    assert!(containers(&state).is_empty());
    let pwd = |said: &str| {
        let folder = said.lines().find_map(|l| l.strip_prefix("folder: "));
        folder.unwrap_or_else(|| panic!("{said}")).to_owned()
    };

    let first = env.room_with_agent(false).await;
    let before = env.posted(&first);
    env.alice
        .send(
            &first,
            "%pwd\n%write mine.txt the first room's\n%say first done",
        )
        .await;
    let said = env
        .answer_since(&first, before, "the first room's agent", |t| {
            t.contains("first done")
        })
        .await;
    let first_folder = pwd(&said);
    assert!(said.contains("wrote mine.txt"), "{said}");
    assert_eq!(containers(&state).len(), 1);

    let second = env.room_with_agent(false).await;
    let before = env.posted(&second);
    env.alice
        .send(
            &second,
            &format!(
                "%pwd\n%read {first_folder}/mine.txt\n%terminal ls {root}\n%say second done",
                root = root.display()
            ),
        )
        .await;
    let said = env
        .answer_since(&second, before, "the second room's agent", |t| {
            t.contains("second done")
        })
        .await;
    let second_folder = pwd(&said);
    assert_ne!(first_folder, second_folder);
    // The first room's file is not there for the second room's agent, nor is the first
    // room's folder: of the rooms' root, its container has its own folder only.
    assert!(
        said.contains(&format!("cannot read {first_folder}/mine.txt")),
        "{said}"
    );
    let own = std::path::Path::new(&second_folder).file_name().unwrap();
    assert!(
        said.contains(&format!("```\n{}\n```", own.to_string_lossy())),
        "{said}"
    );
    // Each room has a container of its own, mounting its own folder and not the root.
    let names = containers(&state);
    assert_eq!(names.len(), 2, "{names:?}");
    let mounts: Vec<String> = (names.iter())
        .map(|n| inspect(n, "{{range .Mounts}}{{.Source}} {{end}}"))
        .collect();
    for folder in [&first_folder, &second_folder] {
        let holding: Vec<&String> = (mounts.iter())
            .filter(|m| m.split(' ').any(|s| s == folder.as_str()))
            .collect();
        assert_eq!(holding.len(), 1, "{folder}: {mounts:?}");
    }
    let root_text = root.display().to_string();
    assert!(
        mounts.iter().all(|m| !m.split(' ').any(|s| s == root_text)),
        "{mounts:?}"
    );
    // The first room's agent still answers from its own container.
    env.prompt_and_wait(&first, "%say first again", "first again")
        .await;
    assert_eq!(containers(&state).len(), 2);

    stop_leaving_no_container(env, &state).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_a_container_per_room_an_idle_rooms_container_stops_while_a_busy_one_goes_on() {
    let Some(image) = agent_image() else { return };
    let (_workspaces, agent) = per_room(image);
    let pool = "[pool]\nidle_stop_secs = 3\n";
    let env = Env::start_with_agent_toml(SynapseOptions::default(), pool, &agent).await;
    let state = env.gw.dir.path().join("state");
    let idle = env.room_with_agent(false).await;
    let before = env.posted(&idle);
    env.alice.send(&idle, "%pwd").await;
    let said = env
        .answer_since(&idle, before, "the idle room's folder", |t| {
            t.contains("folder: ")
        })
        .await;
    let idle_folder = said.lines().find_map(|l| l.strip_prefix("folder: "));
    let idle_folder = idle_folder.unwrap_or_else(|| panic!("{said}")).to_owned();
    // Another room's turn runs for a while: the agent as a whole is busy.
    let busy = env.room_with_agent(false).await;
    env.alice
        .send(&busy, "%terminal sleep 3024\n%say slept")
        .await;
    wait_until(PATIENCE, "both rooms' containers", || {
        (containers(&state).len() == 2 && running_as("sleep 3024") > 0).then_some(())
    })
    .await;
    // The idle room's container stops; the busy room's goes on.
    wait_until(
        Duration::from_secs(30),
        "the idle room's container stopped",
        || (containers(&state).len() == 1).then_some(()),
    )
    .await;
    let left = containers(&state);
    let mounts = inspect(&left[0], "{{range .Mounts}}{{.Source}} {{end}}");
    assert!(
        !mounts.split(' ').any(|s| s == idle_folder),
        "{idle_folder}: {mounts}"
    );
    assert!(
        running_as("sleep 3024") > 0,
        "the busy room's command was stopped"
    );
    assert!(
        env.gw
            .log()
            .contains("a room's agent process had no use; stopping it")
    );
    // The idle room's next message starts its container again, and is answered.
    env.prompt_and_wait(&idle, "%say back again", "back again")
        .await;
    env.alice.send(&busy, "!stop").await;
    stop_leaving_no_container(env, &state).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_max_rooms_the_room_used_least_recently_makes_way_and_a_busy_one_is_waited_for() {
    let Some(image) = agent_image() else { return };
    let (_workspaces, agent) = per_room_with(image, "max_rooms = 1");
    let env = Env::start_with_agent_toml(SynapseOptions::default(), "", &agent).await;
    let state = env.gw.dir.path().join("state");
    let first = env.room_with_agent(false).await;
    env.prompt_and_wait(&first, "%say first here", "first here")
        .await;
    assert_eq!(containers(&state).len(), 1);
    // A second room's turn: the first room's container, running no turn, makes way.
    let second = env.room_with_agent(false).await;
    env.prompt_and_wait(&second, "%say second here", "second here")
        .await;
    one_container(&state).await;
    let log = env.gw.log();
    assert!(
        log.contains("stopping the room's agent process used least recently"),
        "{log}"
    );
    // While the second room runs a turn, the first room's next message waits for it to end
    // rather than stop it; then it is answered, its session back.
    env.alice
        .send(&second, "%terminal sleep 3025\n%say slept")
        .await;
    wait_until(PATIENCE, "the second room's command", || {
        (running_as("sleep 3025") > 0).then_some(())
    })
    .await;
    let waits = || {
        (env.gw.log())
            .matches("every room's agent process runs a turn or was just used: this room waits")
            .count()
    };
    let (before, waited) = (env.alice.messages_from(&first, &env.agent).len(), waits());
    env.alice.send(&first, "%say first again").await;
    wait_until(PATIENCE, "the first room waiting", || {
        (waits() > waited).then_some(())
    })
    .await;
    // The room is told why its answer is late, and nothing else comes meanwhile.
    let told = env.notice_containing(&first, "waits for a free slot").await;
    assert!(
        told.body.contains("at most 1 room's process"),
        "{}",
        told.body
    );
    one_container(&state).await;
    assert!(running_as("sleep 3025") > 0, "the busy room's turn goes on");
    assert_eq!(
        env.alice.messages_from(&first, &env.agent).len(),
        before + 1
    );
    // `!stop` there gives the wait up, as for the pool's: no container starts for it, and
    // the busy room's command goes on.
    env.alice.send(&first, "!stop").await;
    env.notice_containing(&first, "before it started").await;
    let log = env.gw.log();
    assert!(
        log.contains("a room's wait for a place was given up"),
        "{log}"
    );
    one_container(&state).await;
    assert!(running_as("sleep 3025") > 0, "the busy room's turn goes on");
    // Asked again, it waits again; once the busy room's turn is stopped, it is answered,
    // its session back.
    env.alice.send(&first, "%say first at last").await;
    wait_until(PATIENCE, "the first room waiting again", || {
        (waits() > waited + 1).then_some(())
    })
    .await;
    env.alice.send(&second, "!stop").await;
    env.reply_where(&first, "the first room's answer", |t| {
        t.contains("first at last")
    })
    .await;
    assert!(
        !(env.alice.messages_from(&first, &env.agent).iter())
            .any(|m| m.body.contains("first again")),
        "the prompt given up is never answered"
    );
    one_container(&state).await;
    stop_leaving_no_container(env, &state).await;
}

/// Waits until the gateway has one container (a stopped one is removed a moment after).
async fn one_container(state: &std::path::Path) {
    wait_until(Duration::from_secs(30), "one room's container", || {
        (containers(state).len() == 1).then_some(())
    })
    .await;
}
