#![recursion_limit = "256"]
//! The room tools: the built-in MCP server each session gets, called by the demo agent the
//! way a real agent calls MCP tools (over stdio through `sidekicks mcp-stdio`, or over
//! loopback HTTP for an agent that takes it), reaching only the session's own room.

mod support;

use support::{Env, PATIENCE, SynapseOptions, wait_until};

/// The MCP servers the demo agent's session in `room` was given, one line each (`%mcp`).
async fn servers(env: &Env, room: &matrix_sdk::room::Room) -> String {
    env.alice.send(room, "%mcp").await;
    env.reply_where(room, "the servers", |t| t.starts_with("mcp:"))
        .await
}

/// Has the demo agent say `text` in `room`, and waits until it has.
async fn said(env: &Env, room: &matrix_sdk::room::Room, text: &str) {
    env.alice.send(room, &format!("%say {text}")).await;
    env.reply_where(room, &format!("the answer {text:?}"), |t| t == text)
        .await;
}

/// What the demo agent said after fetching the file of message `event` in `room`.
async fn fetch(env: &Env, room: &matrix_sdk::room::Room, event: &str) -> String {
    let json = format!(r#"{{"event_id": "{event}"}}"#);
    env.call_tool(room, "fetch_attachment", &json).await
}

/// Waits for the file named `name` the agent posted in `room`.
async fn agent_file(env: &Env, room: &matrix_sdk::room::Room, name: &str) -> support::person::Seen {
    wait_until(PATIENCE, &format!("the posted file {name}"), || {
        (env.alice.messages_from(room, &env.agent).into_iter())
            .find(|m| m.media.as_ref().is_some_and(|(_, n, _)| n == name))
    })
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_agent_reads_searches_and_lists_its_room_over_stdio() {
    let env = Env::start(SynapseOptions::default(), "").await;
    let room = env.room_with_agent(false).await;
    let servers = servers(&env, &room).await;
    assert!(
        servers.contains("mcp: sidekicks stdio ")
            && servers.contains("mcp-stdio env=SIDEKICKS_MCP_ADDRESS,SIDEKICKS_MCP_TOKEN"),
        "an agent that does not take HTTP gets the room tools over stdio: {servers}"
    );
    said(&env, &room, "Deploy on Friday? It is agreed.").await;

    let recent = env
        .call_tool(&room, "recent_messages", r#"{"limit": 3}"#)
        .await;
    let lines: Vec<&str> = recent.lines().skip(1).collect();
    assert_eq!(lines.len(), 3, "{recent}");
    assert!(
        lines
            .iter()
            .any(|l| l.contains(&format!("({}) [$", env.alice.user_id))
                && l.ends_with(": %say Deploy on Friday? It is agreed.")),
        "Alice's message with her user ID and its event ID: {recent}"
    );
    assert!(
        lines
            .iter()
            .any(|l| l.contains(&env.agent) && l.ends_with(": Deploy on Friday? It is agreed.")),
        "the agent's own answer, as edited to its end: {recent}"
    );
    assert!(
        lines[2].ends_with(r#": %mcp-call sidekicks recent_messages {"limit": 3}"#),
        "{recent}"
    );

    let found = env
        .call_tool(&room, "search_messages", r#"{"query": "FRIDAY"}"#)
        .await;
    assert!(found.contains("Deploy on Friday?"), "{found}");
    let none = env
        .call_tool(
            &room,
            "search_messages",
            r#"{"query": "no such words here"}"#,
        )
        .await;
    // The search itself is the newest message, and it names the words.
    assert_eq!(none.lines().count(), 2, "{none}");

    assert!(
        !support::has_token(&env.gw.log()),
        "the session's token reached the log"
    );
    let members = env.call_tool(&room, "list_members", "{}").await;
    assert!(
        members.contains(&env.alice.user_id) && members.contains(&env.agent),
        "{members}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_agent_fetches_a_file_people_sent_and_posts_one_back_over_http() {
    let env = Env::start_with_demo_args(SynapseOptions::default(), "", &["--mcp-http"]).await;
    let room = env.room_with_agent(false).await;
    let servers = servers(&env, &room).await;
    assert!(
        servers.contains("mcp: sidekicks http http://127.0.0.1:")
            && servers.contains("headers=Authorization"),
        "an agent that takes HTTP gets the room tools over HTTP: {servers}"
    );
    let sent = env
        .alice
        .send_file(
            &room,
            "figures.csv",
            "text/csv",
            b"a,b\n1,2\n".to_vec(),
            Some("%say noted"),
        )
        .await;
    env.reply_where(&room, "the answer to the file", |t| t == "noted")
        .await;

    let fetched = fetch(&env, &room, &sent).await;
    let path = fetched
        .lines()
        .find_map(|l| l.strip_prefix("Saved to "))
        .unwrap_or_else(|| panic!("{fetched}"));
    assert!(
        path.starts_with(env.gw.workspace("demo").to_str().unwrap()),
        "{path}"
    );
    assert_eq!(std::fs::read(path).unwrap(), b"a,b\n1,2\n");

    std::fs::write(env.gw.workspace("demo").join("chart.txt"), "the chart").unwrap();
    let posted = env
        .call_tool(
            &room,
            "post_file",
            r#"{"path": "chart.txt", "caption": "Here is the chart"}"#,
        )
        .await;
    assert!(posted.contains("Posted chart.txt as $"), "{posted}");
    let file = agent_file(&env, &room, "chart.txt").await;
    assert_eq!(file.body, "Here is the chart");
    let (_, _, source) = file.media.clone().unwrap();
    assert_eq!(env.alice.download(&source).await, b"the chart");

    let outside = env.gw.dir.path().join("config.toml");
    let refused = env
        .call_tool(
            &room,
            "post_file",
            &format!(r#"{{"path": "{}"}}"#, outside.display()),
        )
        .await;
    assert!(
        refused.starts_with("mcp-call post_file failed:")
            && refused.contains("outside the workspace"),
        "{refused}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_room_tool_reaches_only_its_own_room() {
    let env = Env::start(SynapseOptions::default(), "").await;
    let here = env.room_with_agent(false).await;
    let elsewhere = env.room_with_agent(false).await;
    let secret = env
        .alice
        .send_file(
            &elsewhere,
            "plans.txt",
            "text/plain",
            b"the other room's plans".to_vec(),
            Some("%say kept"),
        )
        .await;
    env.reply_where(&elsewhere, "the answer in the other room", |t| t == "kept")
        .await;
    said(&env, &here, "only here").await;

    let refused = fetch(&env, &here, &secret).await;
    assert!(
        refused.starts_with("mcp-call fetch_attachment failed:")
            && refused.contains("is not a message of this room"),
        "{refused}"
    );
    let recent = env.call_tool(&here, "recent_messages", "{}").await;
    assert!(recent.contains("only here"), "{recent}");
    assert!(
        !recent.contains("plans") && !recent.contains("kept"),
        "{recent}"
    );
    let found = env
        .call_tool(&here, "search_messages", r#"{"query": "plans"}"#)
        .await;
    assert!(!found.contains(&secret), "{found}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn in_a_thread_the_tools_read_that_thread_and_post_into_it() {
    let env = Env::start(SynapseOptions::default(), "").await;
    let room = env.room_with_agent(false).await;
    let root = env.alice.send(&room, "%say first topic").await;
    env.reply_where(&room, "the root's answer", |t| t == "first topic")
        .await;
    said(&env, &room, "elsewhere in the main timeline").await;
    env.alice.send_in_thread(&room, &root, "%say apple").await;
    env.reply_where(&room, "the thread's answer", |t| t == "apple")
        .await;

    let before = env.alice.messages_from(&room, &env.agent).len();
    env.alice
        .send_in_thread(&room, &root, "%mcp-call sidekicks recent_messages {}")
        .await;
    let recent = wait_until(PATIENCE, "the thread's messages", || {
        (env.alice.messages_from(&room, &env.agent).into_iter())
            .skip(before)
            .filter(|m| m.replaces.is_none() && m.thread.as_deref() == Some(root.as_str()))
            .filter_map(|m| env.alice.current_text(&m.event_id))
            .find(|t| t.starts_with("mcp-call"))
    })
    .await;
    assert!(
        recent.contains(&format!("[{root}]: %say first topic")),
        "the root: {recent}"
    );
    assert!(
        recent.contains(": %say apple") && recent.contains(": apple"),
        "{recent}"
    );
    assert!(
        !recent.contains("elsewhere"),
        "the main timeline is not this thread: {recent}"
    );

    std::fs::write(env.gw.workspace("demo").join("note.txt"), "for the thread").unwrap();
    env.alice
        .send_in_thread(
            &room,
            &root,
            r#"%mcp-call sidekicks post_file {"path": "note.txt"}"#,
        )
        .await;
    let file = agent_file(&env, &room, "note.txt").await;
    assert_eq!(
        file.thread.as_deref(),
        Some(root.as_str()),
        "posted into the thread"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn in_an_encrypted_room_the_tools_read_what_the_agent_can_decrypt() {
    let env = Env::start(SynapseOptions::default(), "").await;
    let room = env.room_with_agent(true).await;
    said(&env, &room, "encrypted words").await;
    let recent = env.call_tool(&room, "recent_messages", "{}").await;
    assert!(
        recent.contains(": %say encrypted words") && recent.contains(": encrypted words"),
        "Alice's message and the answer, decrypted: {recent}"
    );
    assert!(!recent.contains("could not be read"), "{recent}");
}
