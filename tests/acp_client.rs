#![recursion_limit = "256"]
//! Sidekicks as a whole ACP client: what it tells agents about itself and the client
//! methods it serves them, confined to the conversation's folder.

mod support;

use support::{Env, PATIENCE, SynapseOptions, wait_until};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_agent_reads_and_writes_files_of_its_folder_through_the_client_and_nothing_else() {
    let env = Env::start(SynapseOptions::default(), "").await;
    let room = env.room_with_agent(false).await;
    let workspace = env.gw.workspace("demo");
    std::fs::write(workspace.join("notes.txt"), "first line\nsecond line\n").unwrap();
    std::fs::write(env.gw.dir.path().join("outside.txt"), "not yours").unwrap();

    let client = env.client_line(&room).await;
    assert!(
        client.starts_with(&format!("client: sidekicks {}", env!("CARGO_PKG_VERSION"))),
        "{client}"
    );
    assert!(client.contains("fs read: yes, write: yes"), "{client}");

    env.alice
        .send(
            &room,
            "%fs-read notes.txt\n%fs-read ../outside.txt\n%fs-write out/new.txt hello there",
        )
        .await;
    let said = env
        .reply_where(&room, "the file requests", |t| t.contains("fs wrote"))
        .await;
    assert!(
        said.contains("fs read notes.txt: 23 chars: first line"),
        "{said}"
    );
    assert!(said.contains("fs refused ../outside.txt"), "{said}");
    assert_eq!(
        std::fs::read_to_string(workspace.join("out/new.txt")).unwrap(),
        "hello there"
    );
    // A link out of the folder leads nowhere.
    std::os::unix::fs::symlink(
        env.gw.dir.path().join("outside.txt"),
        workspace.join("link.txt"),
    )
    .unwrap();
    env.alice
        .send(&room, "%fs-read link.txt\n%fs-write link.txt overwritten")
        .await;
    let said = env
        .reply_where(&room, "the refusals", |t| {
            t.matches("fs refused").count() == 2
        })
        .await;
    assert!(said.contains("outside the session's folder"), "{said}");
    assert_eq!(
        std::fs::read_to_string(env.gw.dir.path().join("outside.txt")).unwrap(),
        "not yours"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_agent_without_file_access_is_not_offered_it_and_is_refused() {
    let env =
        Env::start_with_agent_toml(SynapseOptions::default(), "", "file_access = false").await;
    let room = env.room_with_agent(false).await;
    std::fs::write(env.gw.workspace("demo").join("notes.txt"), "text").unwrap();
    env.alice.send(&room, "%client\n%fs-read notes.txt").await;
    let said = env
        .reply_where(&room, "the client line", |t| t.contains("fs refused"))
        .await;
    assert!(said.contains("fs read: no, write: no"), "{said}");
    assert!(said.contains("no file access"), "{said}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_agent_that_answers_our_cancel_with_an_error_reads_as_stopped() {
    let env = Env::start(SynapseOptions::default(), "").await;
    let room = env.room_with_agent(false).await;
    env.alice.send(&room, "%say working\n%hang-error").await;
    env.reply_where(&room, "the running turn", |t| t == "working")
        .await;
    env.alice.send(&room, "!stop").await;
    let ended = env
        .reply_where(&room, "the stopped answer", |t| {
            t.starts_with("working") && t.contains("Stopped by")
        })
        .await;
    assert!(!ended.contains("aborted"), "{ended}");
    let failures: Vec<String> = env
        .alice
        .messages_from(&room, &env.agent)
        .into_iter()
        .filter(|m| m.notice && m.body.contains("aborted"))
        .map(|m| m.body)
        .collect();
    assert!(failures.is_empty(), "{failures:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fresh_start_closes_the_old_session_on_an_agent_that_can_close_sessions() {
    let env = Env::start(SynapseOptions::default(), "").await;
    let room = env.room_with_agent(false).await;
    env.prompt_and_wait(&room, "%say first", "first").await;
    env.alice.send(&room, "!new").await;
    env.notice_containing(&room, "Fresh start").await;
    env.alice.send(&room, "%open-sessions").await;
    let said = env
        .reply_where(&room, "the count", |t| t.starts_with("open sessions"))
        .await;
    assert_eq!(
        said.trim(),
        "open sessions: 1",
        "the old session was closed"
    );
    assert!(env.gw.log().contains("session closed"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_started_elsewhere_in_the_workspace_continues_in_the_room() {
    let env =
        Env::start_with_demo_args(SynapseOptions::default(), "", &["--sessions", "sessions"]).await;
    let room = env.room_with_agent(false).await;
    let workspace = env.gw.workspace("demo");
    let dir = workspace.join("sessions");
    std::fs::create_dir_all(&dir).unwrap();
    // A session someone started in a terminal in this workspace, and one elsewhere.
    let saved = |id: &str, cwd: &std::path::Path, prompt: &str| {
        let conversation = serde_json::json!([{"prompt": prompt, "answer": "noted"}]);
        std::fs::write(dir.join(format!("{id}.json")), conversation.to_string()).unwrap();
        let meta = serde_json::json!({"cwd": cwd, "title": prompt});
        std::fs::write(dir.join(format!("{id}.meta")), meta.to_string()).unwrap();
    };
    saved("ext-1", &workspace, "remember the word pineapple");
    saved(
        "other-1",
        std::path::Path::new("/srv/elsewhere"),
        "not this one",
    );
    env.prompt_and_wait(&room, "%say hello", "hello").await;

    env.alice.send(&room, "!sessions").await;
    let list = env
        .notice_containing(&room, "sessions in this workspace")
        .await;
    assert!(
        list.body.contains("ext-1 — remember the word pineapple"),
        "{}",
        list.body
    );
    assert!(list.body.contains("(this conversation)"), "{}", list.body);
    assert!(!list.body.contains("other-1"), "{}", list.body);

    env.alice.send(&room, "!attach other-1").await;
    env.notice_containing(&room, "There is no session other-1 in this workspace")
        .await;
    env.alice.send(&room, "!attach ext-1").await;
    let attached = env
        .notice_containing(&room, "now continues session ext-1")
        .await;
    // What the agent replayed is summed up, not posted again.
    assert!(
        attached
            .body
            .contains("(1 message, 1 answer, 0 tool calls)"),
        "{}",
        attached.body
    );
    env.alice.send(&room, "%history").await;
    let history = env
        .reply_where(&room, "the attached session's history", |t| {
            t.contains("earlier prompt")
        })
        .await;
    assert!(history.contains("pineapple"), "{history}");
    assert!(!history.contains("%say hello"), "{history}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn status_shows_the_sessions_title_and_cost_as_the_agent_gives_them() {
    let env = Env::start(SynapseOptions::default(), "").await;
    let room = env.room_with_agent(false).await;
    env.alice
        .send(
            &room,
            "%usage 1000 200000 0.25 USD\n%title Fixing the parser\n%say ok",
        )
        .await;
    // The answer ends with its usage line once the turn is over.
    let answer = env
        .reply_where(&room, "the answer with its usage", |t| t.contains("📊"))
        .await;
    assert!(
        answer.starts_with("ok") && answer.contains("cost 0.25 USD"),
        "{answer}"
    );
    env.alice.send(&room, "!status").await;
    let status = env.notice_containing(&room, "titled").await;
    assert!(
        status.body.contains("titled “Fixing the parser”"),
        "{}",
        status.body
    );
    assert!(status.body.contains("cost 0.25 USD"), "{}", status.body);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_room_is_told_once_when_the_agent_summarises_its_context_and_what_it_freed() {
    let env = Env::start(SynapseOptions::default(), "").await;
    let room = env.room_with_agent(false).await;
    // Sidekicks asks to be told of summaries (the `session.compaction` capability).
    let client = env.client_line(&room).await;
    assert!(client.contains("compaction: yes"), "{client}");
    // Started, done (reported twice), then the smaller context reported.
    env.alice
        .send(
            &room,
            "%usage 150000 200000\n%compact c1 in_progress\n%compact c1 completed\n\
             %compact c1 completed\n%usage 12000 200000\n%say after the summary",
        )
        .await;
    env.reply_where(&room, "the answer", |t| t.starts_with("after the summary"))
        .await;
    let told = env
        .notice_containing(&room, "summarised the conversation")
        .await;
    let freed = "🗜️ demo agent summarised the conversation so far to free its context: 150k → \
                 12k tokens of 200k.";
    let text = wait_until(PATIENCE, "the notice saying what it freed", || {
        (env.alice.current_text(&told.event_id)).filter(|t| t == freed)
    })
    .await;
    assert_eq!(text, freed);
    // A summary that failed is said too, with why.
    env.alice
        .send(&room, "%compact c2 failed model overloaded\n%say went on")
        .await;
    let failed = env.notice_containing(&room, "could not summarise").await;
    assert_eq!(
        failed.body,
        "🗜️ demo agent could not summarise its context: model overloaded. It goes on as it was."
    );
    // Once each: the repeated report told nothing more.
    let notices = (env.alice.messages_from(&room, &env.agent).into_iter())
        .filter(|m| m.notice && m.body.starts_with("🗜️"))
        .count();
    assert_eq!(notices, 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_agent_that_needs_signing_in_says_how_and_an_admin_signs_it_in() {
    let env = Env::start_with_demo_args(SynapseOptions::default(), "", &["--auth"]).await;
    let room = env.room_with_agent(false).await;
    env.alice.send(&room, "%say hi").await;
    let told = env.notice_containing(&room, "needs to be signed in").await;
    assert!(
        told.body.contains("Demo sign-in (id demo-login)"),
        "{}",
        told.body
    );
    assert!(
        told.body.contains("demo-agent --login` on the host"),
        "the terminal method says what to run: {}",
        told.body
    );
    assert!(!told.body.contains("-32000"), "no raw error: {}", told.body);
    env.alice.send(&room, "!login").await;
    env.notice_containing(&room, "one of: demo-login, demo-terminal")
        .await;
    env.alice.send(&room, "!login demo-terminal").await;
    env.notice_containing(&room, "Signing demo agent in with demo-terminal failed")
        .await;
    env.alice.send(&room, "!login demo-login").await;
    env.notice_containing(&room, "is signed in (demo-login)")
        .await;
    env.prompt_and_wait(&room, "%say now it answers", "now it answers")
        .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn configured_mcp_servers_reach_every_session_and_http_ones_only_agents_that_take_them() {
    let servers = r#"mcp_servers = [{ name = "tools", command = "/usr/bin/true", args = ["--stdio"], env = { TOOL_TOKEN = "s3cret-token-value" } }, { name = "docs", url = "http://127.0.0.1:9/mcp", headers = { Authorization = "Bearer abcdefgh-secret" } }]"#;
    let env = Env::start_with_agent_toml(SynapseOptions::default(), "", servers).await;
    let room = env.room_with_agent(false).await;
    env.alice.send(&room, "%mcp").await;
    let said = env
        .reply_where(&room, "the servers", |t| t.starts_with("mcp:"))
        .await;
    let lines: Vec<&str> = said.lines().collect();
    assert_eq!(
        lines[0],
        "mcp: tools stdio /usr/bin/true --stdio env=TOOL_TOKEN"
    );
    // Then the gateway's own room tools (tests/room_tools.rs), and nothing else.
    assert!(lines[1].starts_with("mcp: sidekicks stdio "), "{said}");
    assert_eq!(lines.len(), 2, "{said}");
    let log = env.gw.log();
    assert!(log.contains("does not take HTTP MCP servers"), "{log}");
    assert!(!log.contains("s3cret-token-value") && !log.contains("abcdefgh-secret"));
}

/// Whether a live process runs `sleep SECONDS` (zombies not counted). Looked up by its
/// command line: in the agent's sandbox a command's own PID is not the machine's.
fn sleeping(seconds: u32) -> bool {
    let wanted = format!("sleep\0{seconds}\0");
    std::fs::read_dir("/proc").unwrap().flatten().any(|entry| {
        let path = entry.path();
        let cmdline = std::fs::read(path.join("cmdline")).unwrap_or_default();
        let stat = std::fs::read_to_string(path.join("stat")).unwrap_or_default();
        cmdline == wanted.as_bytes() && !stat.contains(") Z")
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_command_the_agent_runs_through_the_client_shows_live_in_its_card() {
    let env = Env::start(SynapseOptions::default(), "").await;
    let room = env.room_with_agent(false).await;
    let client = env.client_line(&room).await;
    assert!(client.contains("terminal: yes"), "{client}");

    env.alice
        .send(
            &room,
            "%terminal echo sta\"\"rted; sleep 4; seq 1 20 | sed 's/^/line /'; sleep 0.1; seq 21 40 | sed 's/^/line /'",
        )
        .await;
    let card = support::wait_until(support::PATIENCE, "the terminal's card", || {
        env.alice
            .messages_from(&room, &env.agent)
            .into_iter()
            .find(|m| m.replaces.is_none() && m.body.contains("terminal: echo sta"))
    })
    .await;
    // The output shows while the command still runs (the title says `sta""rted`).
    let live = support::wait_until(support::PATIENCE, "the first line in the card", || {
        env.alice
            .current_text(&card.event_id)
            .filter(|t| t.contains("started"))
    })
    .await;
    assert!(!live.contains("line 40"), "{live}");
    let said = env
        .reply_where(&room, "the command's end", |t| t.contains("terminal exit"))
        .await;
    assert!(
        said.contains("terminal exit 0, signal none, truncated false"),
        "{said}"
    );
    assert!(said.contains("line 40"), "{said}");
    // The last lines came just before the exit: the card has them all the same.
    let ended = support::wait_until(support::PATIENCE, "the card completed", || {
        env.alice
            .current_text(&card.event_id)
            .filter(|t| t.contains("completed"))
    })
    .await;
    assert!(ended.contains("line 40"), "the card's last edit: {ended}");
    // The card shows the end; the whole output is attached to it.
    let file = support::wait_until(support::PATIENCE, "the attached output", || {
        env.alice
            .messages_from(&room, &env.agent)
            .into_iter()
            .find(|m| m.media.is_some() && m.in_reply_to.as_deref() == Some(&card.event_id))
    })
    .await;
    let text = String::from_utf8(env.alice.download(&file.media.unwrap().2).await).unwrap();
    assert!(text.starts_with("started\nline 1\n"), "{text}");
    assert!(text.ends_with("line 40\n"), "{text}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_command_runs_in_the_conversations_folder_with_what_the_agent_asked_and_nowhere_else() {
    let env = Env::start(SynapseOptions::default(), "").await;
    let room = env.room_with_agent(false).await;
    let workspace = env.gw.workspace("demo");
    std::fs::create_dir_all(workspace.join("sub")).unwrap();
    env.alice
        .send(
            &room,
            "%terminal --env GREETING=hi --cwd sub pwd; echo $GREETING\n\
             %terminal --limit 12 seq 1 100\n\
             %terminal --cwd ../.. pwd\n\
             %terminal --cwd /etc pwd\n\
             %say all asked",
        )
        .await;
    let said = env
        .reply_where(&room, "the four commands", |t| t.contains("all asked"))
        .await;
    let sub = workspace.join("sub").canonicalize().unwrap();
    assert!(said.contains(&format!("{}\nhi", sub.display())), "{said}");
    assert!(
        said.contains("truncated true, 12 bytes:\n\n```\n7\n98\n99\n100\n```"),
        "{said}"
    );
    assert!(
        said.contains("terminal refused: ") && said.contains("`..` is not allowed"),
        "{said}"
    );
    assert!(
        said.contains("/etc: outside the session's folder"),
        "{said}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stop_kills_the_agents_commands_and_refuses_new_ones_until_the_next_prompt() {
    let env = Env::start(SynapseOptions::default(), "").await;
    let room = env.room_with_agent(false).await;
    let workspace = env.gw.workspace("demo");
    env.alice.send(&room, "%terminal exec sleep 301").await;
    support::wait_until(support::PATIENCE, "the command running", || {
        sleeping(301).then_some(())
    })
    .await;
    env.alice.send(&room, "!stop").await;
    support::wait_until(support::PATIENCE, "the command killed", || {
        (!sleeping(301)).then_some(())
    })
    .await;
    let after = support::wait_until(support::PATIENCE, "the agent's try after the stop", || {
        std::fs::read_to_string(workspace.join("terminal-after-stop.txt")).ok()
    })
    .await;
    assert!(
        after.contains("refused: the turn was stopped"),
        "a command after !stop: {after}"
    );
    // The next prompt may run commands again.
    env.alice.send(&room, "%terminal echo again").await;
    let said = env
        .reply_where(&room, "the next command", |t| t.contains("terminal exit"))
        .await;
    assert!(
        said.contains("terminal exit 0") && said.contains("again"),
        "{said}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_command_outlives_the_gateway_or_runs_for_an_agent_without_terminals() {
    let mut env = Env::start(SynapseOptions::default(), "").await;
    let room = env.room_with_agent(false).await;
    env.alice.send(&room, "%terminal exec sleep 302").await;
    support::wait_until(support::PATIENCE, "the command running", || {
        sleeping(302).then_some(())
    })
    .await;
    // Killed outright: nothing of the gateway runs its clean-up.
    env.gw.kill();
    support::wait_until(
        support::PATIENCE,
        "the command gone with the gateway",
        || (!sleeping(302)).then_some(()),
    )
    .await;

    let env = Env::start_with_agent_toml(SynapseOptions::default(), "", "terminals = false").await;
    let room = env.room_with_agent(false).await;
    env.alice.send(&room, "%client\n%terminal echo hi").await;
    let said = env
        .reply_where(&room, "the client line", |t| {
            t.contains("terminal not offered")
        })
        .await;
    assert!(said.contains("terminal: no"), "{said}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_file_the_agent_writes_through_the_client_shows_as_a_diff_in_its_card() {
    let env = Env::start(SynapseOptions::default(), "").await;
    let room = env.room_with_agent(false).await;
    std::fs::write(env.gw.workspace("demo").join("notes.txt"), "one\ntwo\n").unwrap();
    let card = |what: &'static str, title: &'static str| {
        let (env, room) = (&env, &room);
        async move {
            let card = support::wait_until(support::PATIENCE, what, || {
                env.alice
                    .messages_from(room, &env.agent)
                    .into_iter()
                    .find(|m| m.replaces.is_none() && m.body.contains(title))
            })
            .await;
            support::wait_until(support::PATIENCE, what, || {
                env.alice.current_text(&card.event_id).filter(|t| {
                    t.contains("completed") && (t.contains("changes") || t.contains("creates"))
                })
            })
            .await
        }
    };
    // Inside the agent's own edit call.
    env.alice.send(&room, "%fs-edit notes.txt uno").await;
    let edited = card("the edit's card", "Edit notes.txt").await;
    assert!(edited.contains("changes notes.txt"), "{edited}");
    assert!(edited.contains("-one\n-two\n+uno"), "{edited}");
    // No edit call open: a card of its own.
    env.alice.send(&room, "%fs-write fresh.txt brand new").await;
    let written = card("the write's card", "Write fresh.txt").await;
    assert!(written.contains("creates fresh.txt"), "{written}");
    assert!(written.contains("+brand new"), "{written}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_missing_file_is_an_error_but_empty_text_for_gemini() {
    // Gemini CLI reads a file before writing it, and fails the write when a missing file is
    // answered with an error; other agents are told the file does not exist.
    let env = Env::start(SynapseOptions::default(), "").await;
    let room = env.room_with_agent(false).await;
    env.alice.send(&room, "%fs-read new.txt").await;
    let said = env
        .reply_where(&room, "the refusal", |t| t.contains("fs refused"))
        .await;
    assert!(said.contains("no such file"), "{said}");

    let env =
        Env::start_with_agent_toml(SynapseOptions::default(), "", "dialect = \"gemini\"").await;
    let room = env.room_with_agent(false).await;
    env.alice
        .send(&room, "%fs-read new.txt\n%fs-write new.txt created")
        .await;
    let said = env
        .reply_where(&room, "the read and the write", |t| t.contains("fs wrote"))
        .await;
    assert!(said.contains("fs read new.txt: 0 chars"), "{said}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_agent_that_crashes_takes_its_commands_with_it() {
    // A mark on the agent's command line, to find its processes among the other tests'.
    let mark = format!("crash-mark-{}.jsonl", std::process::id());
    let env =
        Env::start_with_demo_args(SynapseOptions::default(), "", &["--prompt-log", &mark]).await;
    let room = env.room_with_agent(false).await;
    env.alice.send(&room, "%terminal exec sleep 304").await;
    support::wait_until(support::PATIENCE, "the command running", || {
        sleeping(304).then_some(())
    })
    .await;
    // The agent dies at once, as in a crash: every process of it, sandbox included.
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let cmdline = std::fs::read(entry.path().join("cmdline")).unwrap_or_default();
        let pid = entry.file_name().to_string_lossy().parse::<i32>();
        if let Ok(pid) = pid
            && String::from_utf8_lossy(&cmdline).contains(&mark)
        {
            // SAFETY: kill(2) on a process of this test's agent.
            unsafe {
                libc::kill(pid, libc::SIGKILL);
            }
        }
    }
    support::wait_until(support::PATIENCE, "the command gone with its agent", || {
        (!sleeping(304)).then_some(())
    })
    .await;
}
