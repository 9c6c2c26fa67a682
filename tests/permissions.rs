#![recursion_limit = "256"]
//! Permission polls, tool cards, plans, thinking and usage, against a real homeserver and
//! the real demo agent. Alice may prompt and approve; Bob may prompt but not approve.

mod support;

use matrix_sdk::room::Room;
use support::with_bob::{AGENT, room_with_bob, start_approving};
use support::{Env, PATIENCE, Person, SynapseOptions, wait_until};

/// A homeserver, a gateway whose only approver is Alice, and Bob (allowed, not approver).
async fn start(extra_toml: &str) -> (Env, Person) {
    start_with(extra_toml, &[]).await
}

/// Like [`start`], with `demo_args` after `demo-agent` on the agent's command line.
async fn start_with(extra_toml: &str, demo_args: &[&str]) -> (Env, Person) {
    start_configured(extra_toml, demo_args, "").await
}

/// Like [`start_with`], with `agent_toml` in the agent's `[[agents]]` table.
async fn start_configured(extra_toml: &str, demo_args: &[&str], agent_toml: &str) -> (Env, Person) {
    start_approving(extra_toml, demo_args, agent_toml, &["alice"]).await
}

/// Whether poll `id` still waits for an answer.
fn still_open(env: &Env, id: &str) -> bool {
    env.alice
        .current_text(id)
        .is_some_and(|t| t.contains("React to answer"))
}

/// Waits for the `n`-th poll (from 0) in `room`, with all its choices pre-reacted by the
/// agent; returns its event ID.
async fn poll(env: &Env, room: &Room, n: usize) -> String {
    env.open_poll(room, "🔐", n, 5).await
}

/// Waits until the poll `id` shows a text containing `text`; returns it.
async fn poll_shows(env: &Env, id: &str, text: &str) -> String {
    wait_until(PATIENCE, &format!("the poll to show {text:?}"), || {
        env.alice.current_text(id).filter(|t| t.contains(text))
    })
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_approvers_reaction_answers_with_its_option_and_a_non_approvers_does_not() {
    let (env, bob) = start("").await;
    let (room, bobs_room) = room_with_bob(&env, &bob).await;
    env.alice.send(&room, "%permission bash: ls").await;
    let poll_id = poll(&env, &room, 0).await;
    let posted = env
        .alice
        .messages_from(&room, &env.agent)
        .into_iter()
        .find(|m| m.event_id == poll_id)
        .unwrap();
    assert_eq!(
        posted.mentions,
        vec![env.alice.user_id.clone()],
        "Alice, who prompted and may approve, is notified"
    );
    let text = env.alice.current_text(&poll_id).unwrap();
    assert!(
        text.starts_with("🔐 demo agent asks to use a tool: 💻 bash: ls (execute)\n$ ls"),
        "{text}"
    );
    for line in [
        "1. ✅ Allow",
        "2. 🔁 Allow for this session",
        "3. ✋ Reject",
        "4. ❌ Never allow in this session",
        "5. 🛑 Stop the agent",
    ] {
        assert!(text.contains(line), "{line:?} in {text}");
    }
    // Bob may prompt but not approve: his reaction changes nothing.
    bob.react(&bobs_room, &poll_id, "✅").await;
    wait_until(PATIENCE, "Bob's reaction read and refused", || {
        env.gw.log().contains("may not approve").then_some(())
    })
    .await;
    assert!(still_open(&env, &poll_id), "the poll is still open");
    env.alice.react(&room, &poll_id, "✅").await;
    env.reply_where(&room, "the agent saying what it got", |t| {
        t.contains("permission: allow")
    })
    .await;
    let settled = poll_shows(&env, &poll_id, "chosen by").await;
    // Who chose is named as people see them, not by user ID, and the choice said once.
    assert!(settled.ends_with("✅ Allow, chosen by alice"), "{settled}");
    // The agent's own reactions are withdrawn: the answered poll shows only Alice's ✅.
    wait_until(PATIENCE, "the agent's reactions withdrawn", || {
        let reactions = env.alice.reactions_on(&poll_id);
        let agents: Vec<_> = reactions.iter().filter(|r| r.sender == env.agent).collect();
        (agents.len() == 5 && agents.iter().all(|r| env.alice.is_redacted(&r.event_id)))
            .then_some(())
    })
    .await;
    // The tool call ran: its card ends completed, with its output.
    let card = env
        .reply_where(&room, "the completed tool card", |t| {
            t.starts_with("✅ 💻 bash: ls · completed")
        })
        .await;
    assert!(card.contains("ran bash: ls"), "{card}");

    // A request that comes before its tool call, and one for a call never announced, still
    // get proper polls: described from the request itself.
    let before = env.posted(&room);
    env.alice
        .send(
            &room,
            "%permission-early bash: pwd\n%permission-unannounced bash: id",
        )
        .await;
    let early = poll(&env, &room, 1).await;
    assert!(
        env.alice
            .current_text(&early)
            .unwrap()
            .contains("bash: pwd (execute)\n$ pwd")
    );
    // Answered by a typed reply this time.
    env.alice.send_reply(&room, "!allow", &early).await;
    let unannounced = poll(&env, &room, 2).await;
    assert!(
        env.alice
            .current_text(&unannounced)
            .unwrap()
            .contains("$ id")
    );
    env.alice.send_reply(&room, "1", &unannounced).await;
    env.answer_since(&room, before, "both answers", |t| {
        t.contains("permission: allow\npermission: allow")
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_reject_emoji_sends_reject_always_and_the_work_is_shown() {
    let (env, _bob) = start("").await;
    let room = env.room_with_agent(false).await;
    env.alice
        .send(
            &room,
            "%think Let me check the build first.\n%plan Read; Build; Report\n\
             %permission bash: rm -rf build\n%tool-open bash: sleep 100\n\
             %usage 5000 200000\n%tokens 120 30\n%say done",
        )
        .await;
    let poll_id = poll(&env, &room, 0).await;
    env.alice.react(&room, &poll_id, "❌").await;
    let reply = env
        .reply_where(&room, "the final reply with usage", |t| t.contains("📊"))
        .await;
    assert!(reply.starts_with("permission: never\ndone"), "{reply}");
    assert!(
        reply.ends_with("📊 context 5.0k/200k (2%) · 120 in · 30 out"),
        "{reply}"
    );
    poll_shows(
        &env,
        &poll_id,
        "❌ Never allow in this session, chosen by alice",
    )
    .await;
    // Cards end in a final state: the refused call failed, the one left open is closed.
    env.reply_where(&room, "the refused call's card", |t| {
        t.starts_with("❌ 💻 bash: rm -rf build · failed")
    })
    .await;
    env.reply_where(&room, "the open call's card, closed", |t| {
        t.starts_with("❔ 💻 bash: sleep 100 · ended without a status")
    })
    .await;
    env.reply_where(&room, "the plan", |t| {
        t == "📋 Plan (1/3 done)\n✅ Read\n⬜ Build\n⬜ Report"
    })
    .await;
    let thinking = env
        .reply_where(&room, "the folded thinking", |t| {
            t.starts_with("💭 Thought for")
        })
        .await;
    assert!(!thinking.contains("check the build"), "folded: {thinking}");
    assert!(!reply.contains("check the build"), "never in the answer");
    let status = {
        env.alice.send(&room, "!status").await;
        env.notice_containing(&room, "📊 context").await
    };
    assert!(status.body.contains("120 in · 30 out"), "{}", status.body);

    // An answer-only room sees no cards, and no usage line.
    env.alice.send(&room, "!show answer").await;
    env.notice_containing(&room, "From now on this room shows: answer")
        .await;
    let before = env.alice.messages_from(&room, &env.agent).len();
    env.prompt_and_wait(&room, "%tool bash: true\n%usage 1 2\n%say quiet", "quiet")
        .await;
    env.settled(&room).await;
    let after: Vec<String> = env
        .alice
        .messages_from(&room, &env.agent)
        .into_iter()
        .skip(before)
        .map(|m| m.body)
        .filter(|body| !support::is_marker(body))
        .collect();
    assert_eq!(after, vec!["quiet"], "only the answer");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unanswered_poll_expires_into_a_reject() {
    let (env, _bob) = start("[permissions]\ntimeout_secs = 5\n").await;
    let room = env.room_with_agent(false).await;
    env.alice.send(&room, "%permission bash: ls").await;
    let poll_id = poll(&env, &room, 0).await;
    env.reply_where(&room, "the refusal after the timeout", |t| {
        t.contains("permission: reject")
    })
    .await;
    poll_shows(
        &env,
        &poll_id,
        "⌛ Nobody answered in time, so it was refused: Reject",
    )
    .await;
    env.reply_where(&room, "the refused call's card", |t| {
        t.starts_with("❌ 💻 bash: ls · failed")
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn refusals_lead_to_a_stop_proposal_and_stop_on_a_poll_cancels_the_turn() {
    let (env, _bob) = start("[permissions]\npropose_stop_after = 2\n").await;
    let room = env.room_with_agent(false).await;
    let before = env.posted(&room);
    env.alice
        .send(
            &room,
            "%permission bash: a\n%permission bash: b\n%permission bash: c\n%say not reached",
        )
        .await;
    for n in 0..2 {
        let id = poll(&env, &room, n).await;
        env.alice.react(&room, &id, "✋").await;
    }
    env.notice_containing(&room, "2 tool calls were refused")
        .await;
    let third = poll(&env, &room, 2).await;
    env.alice.react(&room, &third, "🛑").await;
    // Each answer below the poll it followed, read as one.
    let reply = env
        .answer_since(&room, before, "the stopped reply", |t| {
            t.contains("Stopped by")
        })
        .await;
    assert_eq!(
        reply,
        "permission: reject\npermission: reject\npermission: cancelled\n\n\
         ⏹️ Stopped by alice."
    );
    poll_shows(&env, &third, "🛑 alice stopped the turn.").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn polls_in_two_rooms_are_answered_independently() {
    let (env, _bob) = start("").await;
    let first = env.room_with_agent(false).await;
    let second = env.room_with_agent(true).await;
    env.alice.send(&first, "%permission bash: one").await;
    env.alice.send(&second, "%permission bash: two").await;
    let p1 = poll(&env, &first, 0).await;
    let p2 = poll(&env, &second, 0).await;
    env.alice.react(&second, &p2, "✅").await;
    env.reply_where(&second, "the second room's answer", |t| {
        t.contains("permission: allow")
    })
    .await;
    assert!(still_open(&env, &p1), "the first poll is still open");
    env.alice.react(&first, &p1, "❌").await;
    env.reply_where(&first, "the first room's answer", |t| {
        t.contains("permission: never")
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_restart_closes_open_polls() {
    let (mut env, _bob) = start("").await;
    let room = env.room_with_agent(false).await;

    // A graceful stop cancels the turn: the agent gets `cancelled`, the poll says so.
    env.alice.send(&room, "%permission bash: ls").await;
    let first = poll(&env, &room, 0).await;
    env.gw.stop();
    poll_shows(&env, &first, "⏹️ Cancelled: the turn was stopped.").await;
    env.reply_where(&room, "the agent's answer to the cancelled poll", |t| {
        t.contains("permission: cancelled")
    })
    .await;
    env.gw.start_again();

    // A crash leaves the poll open; the next start marks it expired.
    env.alice.send(&room, "%permission bash: pwd").await;
    let second = poll(&env, &room, 1).await;
    env.gw.kill();
    assert!(still_open(&env, &second), "nothing closed it at the crash");
    env.gw.start_again();
    poll_shows(&env, &second, "⌛ Expired: Sidekicks restarted").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn only_an_admin_switches_to_a_mode_that_acts_without_asking_and_agent_messages_mention_nobody()
 {
    // Admins default to the approvers: Alice. Bob may prompt and choose within the agent's
    // settings policy: the demo agent's `code` is a mode that acts without asking.
    let (env, bob) = start_configured("", &["--settings"], "").await;
    let (room, bobs_room) = room_with_bob(&env, &bob).await;
    bob.send(&bobs_room, "!mode code").await;
    env.notice_containing(&room, "only admins may switch").await;
    // Looking is not changing.
    bob.send(&bobs_room, "!mode").await;
    env.notice_containing(&room, "(`ask`) ← current").await;
    // A model is his to choose.
    bob.send(&bobs_room, "!model large").await;
    env.notice_containing(&room, "model is now").await;
    // Bob's mode change was not made; Alice's is.
    env.prompt_and_wait(&room, "%settings", "mode: ask, model: large")
        .await;
    env.alice.send(&room, "!mode code").await;
    env.notice_containing(&room, "mode is now Code").await;
    env.prompt_and_wait(&room, "%settings", "mode: code, model: large")
        .await;
    // No message or edit of the agent may set off a keyword or name notification.
    let agents = env.alice.messages_from(&room, AGENT);
    assert!(!agents.is_empty());
    for m in &agents {
        assert!(m.declares_mentions, "no m.mentions on {:?}", m.body);
        assert!(
            m.mentions.is_empty(),
            "{:?} mentions {:?}",
            m.body,
            m.mentions
        );
    }
}

#[tokio::test]
async fn the_sandboxed_agent_reaches_its_workspace_and_home_but_none_of_the_gateways_secrets() {
    let env = Env::start(
        SynapseOptions::default(),
        "[sandbox]\nmode = \"bubblewrap\"",
    )
    .await;
    let room = env.room_with_agent(false).await;
    let dir = env.gw.dir.path().display().to_string();
    let home = format!("{dir}/state/agent-homes/demo");
    let secrets = [
        format!("{dir}/state/sidekicks.db"),
        format!("{dir}/state/matrix/demo/session.json"),
        format!("{dir}/sidekicks.toml"),
        format!("{dir}/demo.password"),
    ];
    for path in &secrets {
        assert!(std::path::Path::new(path).exists(), "{path} exists outside");
    }
    let mut prompt: String = secrets.iter().map(|p| format!("%read {p}\n")).collect();
    prompt.push_str(&format!(
        "%write notes.txt from the agent\n%read notes.txt\n%write {home}/settings mine\n%pwd\n"
    ));
    env.alice.send(&room, &prompt).await;
    let answer = wait_until(PATIENCE, "the agent's report", || {
        env.texts_from(&room, &env.agent)
            .into_iter()
            .find(|t| t.contains("home:"))
    })
    .await;
    for path in &secrets {
        assert!(
            answer.contains(&format!("cannot read {path}")),
            "{path}: {answer}"
        );
    }
    assert!(answer.contains("read notes.txt: 14 bytes"), "{answer}");
    assert!(
        answer.contains(&format!("wrote {home}/settings")),
        "{answer}"
    );
    assert!(answer.contains(&format!("home: {home}")), "{answer}");
    let ws = env.gw.workspace("demo");
    assert_eq!(
        std::fs::read_to_string(ws.join("notes.txt")).unwrap(),
        "from the agent"
    );
    assert_eq!(
        std::fs::read_to_string(format!("{home}/settings")).unwrap(),
        "mine"
    );
    assert!(
        env.gw.log().contains("sandbox: bubblewrap"),
        "the log says so"
    );
}

#[tokio::test]
async fn the_agents_api_key_never_reaches_the_room_whole_or_cut() {
    const KEY: &str = "sk-test-9876543210";
    let env = Env::start_with_agent_toml(
        SynapseOptions::default(),
        "[streaming]\nedit_interval_ms = 100",
        &format!("env = {{ DEMO_API_KEY = \"{KEY}\" }}"),
    )
    .await;
    let room = env.room_with_agent(false).await;
    // Streamed four characters at a time, the key is cut by many edits.
    env.alice
        .send(&room, &format!("%stream 150 4\nmy key is {KEY}, keep it"))
        .await;
    let id = env
        .message_from(&room, &env.agent, "my key is [redacted], keep it")
        .await;
    env.alice
        .send(&room, &format!("%error upstream refused {KEY}"))
        .await;
    env.notice_from(&room, &env.agent, "upstream refused [redacted]")
        .await;
    let mut seen: Vec<String> = env
        .alice
        .edits_of(&id)
        .into_iter()
        .map(|e| e.body)
        .collect();
    assert!(
        seen.len() >= 3,
        "the reply was edited as it streamed: {seen:?}"
    );
    seen.extend(
        env.alice
            .messages_from(&room, &env.agent)
            .into_iter()
            .map(|m| m.body),
    );
    for body in &seen {
        assert!(!body.contains("sk-test-9"), "the key shows in {body:?}");
    }
}

#[tokio::test]
async fn an_approver_below_the_power_level_asked_cannot_answer_a_poll() {
    // Both approve; the config asks approvers for moderator power too. Alice created the
    // room (the highest power there); Bob has the default 0.
    let (env, bob) =
        start_approving("access.approver_min_power = 50", &[], "", &["alice", "bob"]).await;
    let (room, bobs_room) = room_with_bob(&env, &bob).await;
    env.alice.send(&room, "%permission bash: ls").await;
    let poll_id = poll(&env, &room, 0).await;
    bob.react(&bobs_room, &poll_id, "✅").await;
    wait_until(PATIENCE, "the refusal in the log", || {
        env.gw
            .log()
            .contains("without the power level the config asks for")
            .then_some(())
    })
    .await;
    assert!(still_open(&env, &poll_id), "the poll is still open");
    env.alice.react(&room, &poll_id, "✅").await;
    poll_shows(&env, &poll_id, "✅ Allow, chosen by alice").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_agent_that_ends_its_turn_when_a_tool_is_refused_is_not_shown_as_stopped() {
    let (env, _bob) = start("").await;
    let room = env.room_with_agent(false).await;
    // As Codex does with its `abort` option: the refusal ends the turn `cancelled`.
    env.alice
        .send(
            &room,
            "%say checking\n%permission-abort bash: rm -rf build\n%say never said",
        )
        .await;
    let poll_id = poll(&env, &room, 0).await;
    env.alice.react(&room, &poll_id, "❌").await;
    let reply = env
        .reply_where(&room, "the reply's ending", |t| {
            t.contains("ended its turn")
        })
        .await;
    assert!(
        reply.contains("⏹️ demo agent ended its turn after the tool was refused."),
        "{reply}"
    );
    assert!(!reply.contains("Stopped"), "{reply}");
    assert!(!reply.contains("never said"), "{reply}");
}

/// The card of the agent's tool call titled `title`, as it reads now, once it reads `status`
/// (a card of its own, or the poll about the call once it became the card).
async fn card_reading(env: &Env, room: &Room, title: &str, status: &str) -> String {
    let wanted = format!("{title} · {status}");
    wait_until(PATIENCE, &format!("the card to read {wanted:?}"), || {
        env.alice
            .messages_from(room, &env.agent)
            .into_iter()
            .filter(|m| m.replaces.is_none() && m.body.contains(title))
            .find_map(|m| {
                env.alice
                    .current_text(&m.event_id)
                    .filter(|t| t.contains(&wanted))
            })
    })
    .await
}

/// Waits until no message of the agent shows the call titled `title` running: while its
/// poll is open, its card (if it has one besides the poll) reads pending.
async fn not_shown_running(env: &Env, room: &Room, title: &str) {
    let running = format!("{title} · in progress");
    wait_until(PATIENCE, &format!("nothing to read {running:?}"), || {
        let calm = (env.alice.messages_from(room, &env.agent).into_iter())
            .filter_map(|m| env.alice.current_text(&m.event_id))
            .all(|t| !t.contains(&running));
        calm.then_some(())
    })
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_marked_running_before_it_is_asked_about_reads_waiting_until_allowed() {
    // OpenCode and Mistral Vibe mark the call in progress, then ask.
    let (env, _bob) = start("").await;
    let room = env.room_with_agent(false).await;
    env.alice
        .send(&room, "%permission-running bash: make\n%say built")
        .await;
    let poll_id = poll(&env, &room, 0).await;
    not_shown_running(&env, &room, "bash: make").await;
    env.alice.react(&room, &poll_id, "✅").await;
    env.reply_where(&room, "the answer", |t| t.contains("built"))
        .await;
    card_reading(&env, &room, "bash: make", "completed").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_call_the_agent_says_nothing_more_of_reads_failed() {
    // Gemini CLI and Qwen Code announce such a call only in the request, and send nothing
    // for it once refused.
    let (env, _bob) = start("").await;
    let room = env.room_with_agent(false).await;
    env.alice
        .send(
            &room,
            "%permission-unannounced bash: rm -rf /\n%say carried on",
        )
        .await;
    let poll_id = poll(&env, &room, 0).await;
    env.alice.react(&room, &poll_id, "❌").await;
    env.reply_where(&room, "the answer", |t| t.contains("carried on"))
        .await;
    let card = card_reading(&env, &room, "bash: rm -rf /", "failed").await;
    assert!(card.starts_with("❌"), "{card}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn codex_approval_prompt_is_not_shown_as_the_commands_output() {
    let (env, _bob) = start_configured("", &[], "dialect = \"codex\"").await;
    let room = env.room_with_agent(false).await;
    env.alice.send(&room, "%permission-codex bash: ls").await;
    let poll_id = poll(&env, &room, 0).await;
    let poll_text = env.alice.current_text(&poll_id).unwrap();
    assert!(!poll_text.contains("Available Decisions"), "{poll_text}");
    assert!(poll_text.contains("$ ls"), "{poll_text}");
    env.alice.react(&room, &poll_id, "✅").await;
    let card = card_reading(&env, &room, "bash: ls", "completed").await;
    assert!(!card.contains("Available Decisions"), "{card}");
    assert!(card.contains("$ ls"), "{card}");
}

/// Waits for the agent's `n`-th question (from 0) in `room`, with its `keys` choices
/// pre-reacted by the agent; returns its event ID.
async fn question(env: &Env, room: &Room, n: usize, keys: usize) -> String {
    env.open_poll(room, "❓", n, keys).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_agents_question_with_choices_is_a_poll_only_approvers_answer() {
    let (env, bob) = start("").await;
    let (room, bobs) = room_with_bob(&env, &bob).await;
    let client = env.client_line(&room).await;
    assert!(client.contains("elicitation: yes (form, url)"), "{client}");

    env.alice
        .send(&room, "%ask-choice Which colour? | red, green, blue")
        .await;
    // 1️⃣ 2️⃣ 3️⃣, ❌ Decline, 🛑 Stop.
    let asked = question(&env, &room, 0, 5).await;
    let text = env.alice.current_text(&asked).unwrap();
    assert!(
        text.starts_with("❓ demo agent asks: Which colour?"),
        "{text}"
    );
    assert!(
        text.contains("2. 2️⃣ green") && text.contains("4. ❌ Decline"),
        "{text}"
    );
    // Bob may prompt but not approve: his pick is not taken.
    bob.react(&bobs, &asked, "3️⃣").await;
    env.alice.react(&room, &asked, "2️⃣").await;
    let said = env
        .reply_where(&room, "the agent's answer", |t| {
            t.contains("elicitation: accept")
        })
        .await;
    assert_eq!(said.trim(), r#"elicitation: accept {"choice":"green"}"#);
    poll_shows(&env, &asked, "2️⃣ Answered by alice: green").await;

    // Yes or no, declined.
    env.alice.send(&room, "%ask-yes Deploy now?").await;
    let asked = question(&env, &room, 1, 4).await;
    env.alice.react(&room, &asked, "❌").await;
    env.reply_where(&room, "the decline", |t| t.contains("elicitation: decline"))
        .await;
    poll_shows(&env, &asked, "❌ Declined by alice.").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_agents_form_is_answered_by_a_typed_reply_read_into_its_fields() {
    let (env, _bob) = start("").await;
    let room = env.room_with_agent(false).await;
    env.alice
        .send(&room, "%ask-form Tell me about the run")
        .await;
    // ❌ Decline, 🛑 Stop.
    let asked = question(&env, &room, 0, 2).await;
    let text = env.alice.current_text(&asked).unwrap();
    assert!(
        text.contains("Reply to this message with one line per field: `count: …` (a whole number from 1 to 100)"),
        "{text}"
    );
    env.alice
        .send_reply(&room, "name: Ada\ncount: many", &asked)
        .await;
    env.notice_containing(&room, "“count” should be a whole number from 1 to 100")
        .await;
    assert!(
        env.alice
            .current_text(&asked)
            .unwrap()
            .contains("Reply to this message")
    );
    env.alice
        .send_reply(&room, "name: Ada Lovelace\ncount: 3", &asked)
        .await;
    let said = env
        .reply_where(&room, "the agent's answer", |t| t.contains("elicitation:"))
        .await;
    assert_eq!(
        said.trim(),
        r#"elicitation: accept {"count":3,"name":"Ada Lovelace"}"#
    );
    poll_shows(
        &env,
        &asked,
        "✍️ Answered by alice: name: Ada Lovelace count: 3",
    )
    .await;

    // Stopped while a question is open: the agent hears it was cancelled.
    env.alice.send(&room, "%ask-text What now?").await;
    let asked = question(&env, &room, 1, 2).await;
    env.alice.send(&room, "!stop").await;
    poll_shows(&env, &asked, "Cancelled: the turn was stopped").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_question_nobody_answers_in_time_is_declined() {
    let (env, _bob) = start("[permissions]\ntimeout_secs = 5\n").await;
    let room = env.room_with_agent(false).await;
    env.alice.send(&room, "%ask-yes Shall I go on?").await;
    let asked = question(&env, &room, 0, 4).await;
    env.reply_where(&room, "the decline", |t| t.contains("elicitation: decline"))
        .await;
    poll_shows(
        &env,
        &asked,
        "⌛ Nobody answered in time, so it was declined.",
    )
    .await;
}
