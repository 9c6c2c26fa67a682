#![recursion_limit = "256"]
//! A message becomes a prompt and the answer streams in as edits of one message.

mod support;

use std::time::Duration;

use support::{Env, PATIENCE, SynapseOptions, wait_until};

/// A few paragraphs of Markdown, long enough to need several chunks and several edits.
fn answer_text() -> String {
    let mut text =
        String::from("## Streamed answer\n\nHere is a list:\n\n- **one**\n- `two`\n- three\n\n");
    for i in 0..12 {
        text.push_str(&format!(
            "Paragraph {i}: the quick brown fox jumps over the lazy dog.\n\n"
        ));
    }
    text.push_str("```rust\nfn main() {}\n```");
    text
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_message_gets_a_streamed_reply_whose_final_edit_holds_everything() {
    let env = Env::start(
        SynapseOptions::default(),
        "[streaming]\nedit_interval_ms = 300",
    )
    .await;
    let room = env.room_with_agent(false).await;
    let text = answer_text();
    // 30 ms per 20-character chunk: ~1.5 s of streaming, several edits at 300 ms.
    let reply = env
        .prompt_and_wait(&room, &format!("%stream 30 20\n{text}"), &text)
        .await;

    let edits = env.alice.edits_of(&reply);
    assert!(
        edits.len() >= 2,
        "expected at least two edits, saw {}",
        edits.len()
    );
    let replies = env.alice.messages_from(&room, &env.agent);
    assert_eq!(replies.len(), 1, "one reply message, edited: {replies:?}");
    assert!(!replies[0].notice, "answers are m.text");
    // The final content is rendered Markdown.
    let html = edits.last().unwrap().html.clone().unwrap_or_default();
    assert!(html.contains("<h2>Streamed answer</h2>"), "{html}");
    assert!(html.contains("<strong>one</strong>"), "{html}");
    assert!(
        html.contains("<pre><code class=\"language-rust\">"),
        "{html}"
    );
}

/// The typing notice says the agent works while nothing of its answer shows; once the
/// reply's first message is up, its live marker says so, and the notice goes (one request
/// fewer per renewal, for every client of the room).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_typing_notice_goes_once_the_reply_shows() {
    let env = Env::start(
        SynapseOptions::default(),
        "[streaming]\nedit_interval_ms = 300",
    )
    .await;
    let room = env.room_with_agent(false).await;
    let text = answer_text();
    // 1.5 s of thought, then ~4 s of streaming at 100 ms per 20-character chunk.
    let reply = env
        .prompt_and_wait(
            &room,
            &format!("%sleep 1500\n%stream 100 20\n{text}"),
            &text,
        )
        .await;
    live_flags_once_done(&env, &room, &reply).await;
    let finished = env.alice.edits_of(&reply).last().unwrap().received;
    assert!(
        env.alice.saw_typing(&env.agent),
        "the agent showed typing while it thought"
    );
    let off = wait_until(PATIENCE, "the notice taken off", || {
        env.alice.stopped_typing_at(&env.agent)
    })
    .await;
    let ahead = finished.duration_since(off).unwrap_or_default();
    assert!(
        ahead > Duration::from_secs(1),
        "the notice was taken off {ahead:?} before the reply was complete: it stayed up while \
         the reply streamed"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn thoughts_and_unknown_updates_stay_out_of_the_reply() {
    let env = Env::start(SynapseOptions::default(), "").await;
    let room = env.room_with_agent(false).await;
    let reply = env
        .prompt_and_wait(
            &room,
            "%think secret reasoning\n%unknown-update\n%say visible answer",
            "visible answer",
        )
        .await;
    // Any stray edit would come before the answer to a later message.
    env.settled(&room).await;
    assert_eq!(
        env.alice.current_text(&reply).as_deref(),
        Some("visible answer")
    );
    for m in env.alice.messages_from(&room, &env.agent) {
        assert!(!m.body.contains("secret reasoning"), "{m:?}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stop_command_cancels_the_turn_and_the_room_sees_it() {
    let env = Env::start(
        SynapseOptions::default(),
        "[streaming]\nedit_interval_ms = 200",
    )
    .await;
    let room = env.room_with_agent(false).await;
    let long = "word ".repeat(400);
    env.alice
        .send(&room, &format!("%stream 100 5\n{long}"))
        .await;
    let reply = env.first_reply(&room).await;
    env.alice.send(&room, "!stop").await;
    // Who stopped it is named as the room shows them.
    wait_until(PATIENCE, "the reply to say it was stopped", || {
        env.alice
            .current_text(&reply)
            .filter(|t| t.contains("Stopped by alice."))
    })
    .await;
    let shown = env.alice.current_text(&reply).unwrap();
    assert!(shown.len() < long.len(), "the turn ended early");
    assert!(
        env.gw.log().contains("stop=\"cancelled\""),
        "the agent reported stopReason cancelled"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stop_reaction_on_the_reply_cancels_the_turn() {
    let env = Env::start(
        SynapseOptions::default(),
        "[streaming]\nedit_interval_ms = 200",
    )
    .await;
    let room = env.room_with_agent(false).await;
    env.alice.send(&room, "%say working on it\n%hang").await;
    let reply = env.first_reply(&room).await;
    env.alice.react(&room, &reply, "🛑").await;
    wait_until(PATIENCE, "the reply to say it was stopped", || {
        env.alice
            .current_text(&reply)
            .filter(|t| t.contains("Stopped by"))
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_agent_error_is_shown_in_the_room() {
    let env = Env::start(SynapseOptions::default(), "").await;
    let room = env.room_with_agent(false).await;
    env.alice
        .send(&room, "%error exceeded maximum tool call iterations (40)")
        .await;
    let notice = env.notice_containing(&room, "could not answer").await;
    assert!(
        notice
            .body
            .contains("exceeded maximum tool call iterations (40)"),
        "{}",
        notice.body
    );
    // The gateway is still fine: the next prompt is answered.
    env.prompt_and_wait(&room, "%say still here", "still here")
        .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn messages_sent_during_a_turn_are_queued_visibly_and_answered_in_order() {
    let env = Env::start(
        SynapseOptions::default(),
        "[streaming]\nedit_interval_ms = 200",
    )
    .await;
    let room = env.room_with_agent(false).await;
    env.alice.send(&room, "%sleep 4000\n%say first").await;
    wait_until(PATIENCE, "the agent to start", || {
        env.alice.saw_typing(&env.agent).then_some(())
    })
    .await;
    let second = env.alice.send(&room, "%say second").await;
    wait_until(PATIENCE, "the queued mark on the second message", || {
        env.alice
            .reactions_on(&second)
            .into_iter()
            .find(|r| r.key == "⏳" && r.sender == env.agent)
    })
    .await;
    let texts = wait_until(PATIENCE, "both answers", || {
        let replies = env.alice.messages_from(&room, &env.agent);
        let texts: Vec<String> = replies
            .iter()
            .filter_map(|m| env.alice.current_text(&m.event_id))
            .collect();
        (texts.len() == 2).then_some(texts)
    })
    .await;
    assert_eq!(texts, vec!["first", "second"]);
}

/// Messages behind turns that end within a moment are answered without a ⏳: the answers
/// are the sign they were seen, and a backlog costs the room no mark and removal each.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn messages_behind_quick_turns_are_answered_without_a_queued_mark() {
    let env = Env::start(SynapseOptions::default(), "").await;
    let room = env.room_with_agent(false).await;
    // The first turn lasts 0.4 s, so the others are sent while it runs and wait behind it.
    let mut sent = vec![env.alice.send(&room, "%sleep 400\n%say quick 0").await];
    for n in 1..6 {
        sent.push(env.alice.send(&room, &format!("%say quick {n}")).await);
    }
    wait_until(PATIENCE, "every answer", || {
        let replies = env.alice.messages_from(&room, &env.agent);
        let texts: Vec<String> = (replies.iter())
            .filter_map(|m| env.alice.current_text(&m.event_id))
            .collect();
        (texts.len() == 6).then_some(texts)
    })
    .await;
    env.settled(&room).await;
    for event in &sent {
        assert!(
            (env.alice.reactions_on(event).iter()).all(|r| r.key != "⏳"),
            "{event} was marked"
        );
    }
    // A mark taken back before Alice's client saw it would show only as its redaction.
    assert_eq!(
        env.alice.redactions_seen(),
        0,
        "marks were put on and taken back"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_demo_turn_shows_its_work_and_asks_before_looking() {
    let env = Env::start(
        SynapseOptions::default(),
        "[streaming]\nedit_interval_ms = 300",
    )
    .await;
    let room = env.room_with_agent(false).await;
    env.alice.send(&room, "hello there").await;
    let poll = env
        .reply_where(&room, "the permission poll", |t| t.starts_with("🔐"))
        .await;
    assert!(poll.contains("1. ✅ Allow\n2. ❌ Reject\n3. 🛑"), "{poll}");
    // What the poll is for was said before it, in a message of the answer posted above it.
    let said = env
        .reply_where(&room, "the reason for the poll", |t| {
            t.starts_with("Before I answer, I would like to look at the workspace")
        })
        .await;
    assert!(said.contains("react ✅ on the poll below"), "{said}");
    let posted: Vec<String> = (env.alice.messages_from(&room, &env.agent).into_iter())
        .map(|m| m.body)
        .collect();
    let reason = posted.iter().position(|b| b.starts_with("Before I answer"));
    let asked = posted.iter().position(|b| b.starts_with("🔐"));
    assert!(reason.is_some() && reason < asked, "{posted:?}");
    // Only the typed answers this poll takes.
    assert!(
        poll.contains("Reply to this message with !allow, !deny or a number."),
        "{poll}"
    );
    let poll_id = env
        .alice
        .messages_from(&room, &env.agent)
        .into_iter()
        .find(|m| m.body.starts_with("🔐"))
        .unwrap()
        .event_id;
    env.alice.react(&room, &poll_id, "✅").await;
    let text = env
        .reply_where(&room, "the demo answer", |t| {
            t.contains("| gateway | Matrix + ACP |")
        })
        .await;
    assert!(text.contains("> hello there"), "{text}");
    assert!(text.contains("The workspace is empty."), "{text}");
    // Read in order: the answer is a message of its own below the poll that led to it; the
    // first words stay above the poll, without the answer.
    let now: Vec<String> = (env.alice.messages_from(&room, &env.agent).into_iter())
        .filter(|m| m.replaces.is_none())
        .filter_map(|m| env.alice.current_text(&m.event_id))
        .collect();
    let reason = now.iter().position(|t| t.starts_with("Before I answer"));
    let asked = now
        .iter()
        .position(|t| t.starts_with("🔐") || t.contains("bash: ls"));
    let answer = now
        .iter()
        .position(|t| t.contains("| gateway | Matrix + ACP |"));
    assert!(reason < asked && asked < answer, "{now:#?}");
    assert!(!now[reason.unwrap()].contains("| gateway |"), "{now:#?}");
    // Every step done once the answer is.
    env.reply_where(&room, "the plan", |t| {
        t == "📋 Plan (3/3 done)\n✅ Read the message\n✅ Look at the workspace\n✅ Answer"
    })
    .await;
    assert!(
        text.contains("Ask me something **slowly**"),
        "an example people can stop: {text}"
    );
    // One message for the call: the poll became its card, with the answer under it.
    let card = env
        .reply_where(&room, "the listing's card", |t| {
            t.starts_with("✅ 💻 bash: ls · completed")
        })
        .await;
    assert!(card.ends_with("✅ Allow, chosen by alice"), "{card}");
    let about_ls = (env.alice.messages_from(&room, &env.agent).into_iter())
        .filter(|m| m.body.contains("bash: ls"))
        .count();
    assert_eq!(about_ls, 1, "the card and the poll are one message");
    env.reply_where(&room, "the folded thinking", |t| {
        t.starts_with("💭 Thought for")
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_demo_answers_slowly_when_asked_so_people_can_try_stopping_it() {
    let env = Env::start(SynapseOptions::default(), "").await;
    let room = env.room_with_agent(false).await;
    env.alice.send(&room, "Tell me slowly, please").await;
    let poll = env
        .reply_where(&room, "the permission poll", |t| t.starts_with("🔐"))
        .await;
    let poll_id = (env.alice.messages_from(&room, &env.agent).into_iter())
        .find(|m| m.body == poll || m.body.starts_with("🔐"))
        .unwrap()
        .event_id;
    env.alice.react(&room, &poll_id, "✅").await;
    let answer = wait_until(PATIENCE, "the slow answer to start", || {
        (env.alice.messages_from(&room, &env.agent).into_iter())
            .filter(|m| m.replaces.is_none())
            .find(|m| {
                env.alice
                    .current_text(&m.event_id)
                    .is_some_and(|t| t.contains("## Hello"))
            })
            .map(|m| m.event_id)
    })
    .await;
    // Still going five seconds later: there is time to stop it.
    tokio::time::sleep(Duration::from_secs(5)).await;
    let so_far = env.alice.current_text(&answer).unwrap();
    assert!(
        !so_far.contains("| gateway |"),
        "not finished yet: {so_far}"
    );
    env.alice.react(&room, &answer, "🛑").await;
    let stopped = wait_until(PATIENCE, "the answer to say it was stopped", || {
        env.alice
            .current_text(&answer)
            .filter(|t| t.contains("Stopped by"))
    })
    .await;
    assert!(!stopped.contains("| gateway |"), "{stopped}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reply_too_large_for_one_message_continues_in_the_next() {
    let env = Env::start(
        SynapseOptions::default(),
        "[streaming]\nedit_interval_ms = 200\nmax_message_bytes = 1000",
    )
    .await;
    let room = env.room_with_agent(false).await;
    let text: String = (0..100)
        .map(|i| format!("Line {i:03} of a reply that is too large.\n"))
        .collect();
    env.alice
        .send(&room, &format!("%stream 5 200\n{text}"))
        .await;
    let joined = wait_until(PATIENCE, "the whole reply across messages", || {
        let parts: Vec<String> = env
            .alice
            .messages_from(&room, &env.agent)
            .iter()
            .filter_map(|m| env.alice.current_text(&m.event_id))
            .collect();
        (parts.concat() == text).then_some(parts)
    })
    .await;
    assert!(joined.len() >= 4, "{} messages", joined.len());
    assert!(joined.iter().all(|p| p.len() <= 1000));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stop_reason_other_than_end_turn_is_shown() {
    let env = Env::start(SynapseOptions::default(), "").await;
    let room = env.room_with_agent(false).await;
    env.alice
        .send(&room, "%say partial answer\n%stop max_tokens")
        .await;
    env.reply_where(&room, "the max-tokens footer", |t| {
        t.starts_with("partial answer") && t.contains("output limit")
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn help_lists_the_chat_commands_and_the_agents_own_slash_commands() {
    let env = Env::start(SynapseOptions::default(), "").await;
    let room = env.room_with_agent(false).await;
    env.prompt_and_wait(&room, "%say hi", "hi").await;
    env.alice.send(&room, "!help").await;
    let help = env.notice_containing(&room, "!stop").await;
    assert!(
        help.body.contains("/echo: Repeat the prompt"),
        "{}",
        help.body
    );
    // Formatted, grouped, and only what applies here: no worktree is configured and one
    // agent is in the room.
    let html = help.html.clone().unwrap_or_default();
    assert!(
        html.contains("<strong>Working with the agent</strong>")
            && html.contains("<code>!stop</code>"),
        "{html}"
    );
    assert!(!help.body.contains("`!worktree"), "{}", help.body);
    assert!(!help.body.contains("`!default"), "{}", help.body);
    // More about one command.
    env.alice.send(&room, "!help attach").await;
    let one = (env.notice_containing(&room, "`!attach ID`: This conversation continues")).await;
    assert!(one.body.contains("session/load"), "{}", one.body);
    env.alice.send(&room, "!status").await;
    env.notice_containing(&room, "idle").await;
}

/// A turn that showed its work (a tool card, a plan) and wrote no answer ends without a
/// notice that reads like a failure; a turn that showed nothing at all still says so.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_turn_that_only_showed_its_work_gets_no_empty_reply_notice() {
    let env = Env::start(SynapseOptions::default(), "").await;
    let room = env.room_with_agent(false).await;
    env.alice.send(&room, "%tool ls\n%plan Look; Answer").await;
    env.reply_where(&room, "the finished tool card", |t| t.contains("ran ls"))
        .await;
    // The conversation answers in order: once the next prompt is answered, the first turn
    // has ended.
    env.prompt_and_wait(&room, "%say next", "next").await;
    let texts = env.texts_from(&room, &env.agent);
    assert!(
        !texts.iter().any(|t| t.contains("finished without a reply")),
        "{texts:?}"
    );
    env.alice.send(&room, "%sleep 10").await;
    env.notice_containing(&room, "(The agent finished without a reply.)")
        .await;
}

/// Waits until `reply` has an edit without the live marker; returns the live flags of the
/// message and of each of its edits, in order.
async fn live_flags_once_done(env: &Env, room: &matrix_sdk::room::Room, reply: &str) -> Vec<bool> {
    wait_until(PATIENCE, "the edit that completes the answer", || {
        let edits = env.alice.edits_of(reply);
        edits.last().filter(|last| !last.live)?;
        let original = env
            .alice
            .messages_from(room, &env.agent)
            .into_iter()
            .find(|m| m.event_id == reply)?;
        Some(
            std::iter::once(original.live)
                .chain(edits.iter().map(|e| e.live))
                .collect(),
        )
    })
    .await
}

/// MSC4357: a streamed answer carries the live marker from its first post through every
/// edit but the last, in an encrypted room too; a room whose
/// `org.matrix.msc4357.live_messaging` state turns live messages off gets none.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_streamed_answer_is_marked_live_until_its_last_edit() {
    let env = Env::start(
        SynapseOptions::default(),
        "[streaming]\nedit_interval_ms = 300",
    )
    .await;
    let room = env.room_with_agent(true).await;
    let text = answer_text();
    let reply = env
        .prompt_and_wait(&room, &format!("%stream 30 20\n{text}"), &text)
        .await;
    let flags = live_flags_once_done(&env, &room, &reply).await;
    assert!(flags.len() >= 3, "{flags:?}");
    assert!(flags[..flags.len() - 1].iter().all(|l| *l), "{flags:?}");
    // Nothing brings the marker back once the answer is complete.
    env.prompt_and_wait(&room, "%say next", "next").await;
    let edits = env.alice.edits_of(&reply);
    assert!(!edits.last().unwrap().live, "{flags:?}");
    assert_eq!(edits.len(), flags.len() - 1, "no edit after the last");

    room.send_state_event_raw(
        "org.matrix.msc4357.live_messaging",
        "",
        serde_json::json!({"enabled": false}),
    )
    .await
    .unwrap();
    let plain = env
        .prompt_and_wait(&room, &format!("%stream 30 20\n{text}"), &text)
        .await;
    let original = env.alice.messages_from(&room, &env.agent);
    let original = original.iter().find(|m| m.event_id == plain).unwrap();
    let edits = env.alice.edits_of(&plain);
    assert!(
        !original.live && !edits.is_empty() && edits.iter().all(|e| !e.live),
        "live messages are off in this room"
    );
}

/// The texts the agent's messages in `room` show now, in order.
fn shown(env: &Env, room: &matrix_sdk::room::Room) -> Vec<String> {
    (env.alice.messages_from(room, &env.agent).into_iter())
        .filter_map(|m| env.alice.current_text(&m.event_id))
        .collect()
}

/// `!queue steer`: a message written while the agent works joins the running turn (↪️)
/// and is answered in it, in one reply; the setting is the room's, and shown.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_message_written_mid_turn_is_steered_in_and_answered_in_the_same_turn() {
    let env = Env::start(
        SynapseOptions::default(),
        "[streaming]\nedit_interval_ms = 200",
    )
    .await;
    let room = env.room_with_agent(false).await;
    env.alice.send(&room, "!queue steer").await;
    env.notice_containing(&room, "join the running turn").await;
    env.alice.send(&room, "!queue").await;
    env.notice_containing(&room, "works here: steer").await;
    env.alice.send(&room, "%say working\n%sleep 4000").await;
    env.reply_where(&room, "the running turn", |t| t == "working")
        .await;
    let added = env.alice.send(&room, "and check the tests too").await;
    wait_until(PATIENCE, "the steered mark", || {
        (env.alice.reactions_on(&added).into_iter())
            .find(|r| r.key == "↪️" && r.sender == env.agent)
    })
    .await;
    let reply = env
        .reply_where(&room, "the steered message answered", |t| {
            t.contains("↪️ You added: and check the tests too")
        })
        .await;
    assert!(reply.starts_with("working"), "{reply}");
    // Once the turn is over (its reply no longer live), a marker is a turn of its own.
    wait_until(PATIENCE, "the steered turn's end", || {
        (env.alice.messages_from(&room, &env.agent).into_iter())
            .find(|m| {
                (env.alice.current_text(&m.event_id))
                    .is_some_and(|t| t.contains("↪️ You added: and check the tests too"))
                    && !env.alice.is_live(&m.event_id)
            })
            .map(|_| ())
    })
    .await;
    env.settled(&room).await;
    let answers: Vec<String> = (shown(&env, &room).into_iter())
        .filter(|t| !t.contains("join the running turn") && !t.contains("works here"))
        .filter(|t| !support::is_marker(t))
        .collect();
    assert_eq!(answers, vec![reply], "one turn, one answer");
    assert!(
        (env.alice.reactions_on(&added).iter()).all(|r| r.key != "⏳"),
        "it never waited"
    );
}

/// Steering set in the config, with an agent that does not offer it: the message waits
/// its turn as usual.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_steering_from_the_agent_a_mid_turn_message_waits_its_turn() {
    let env = Env::start_with_demo_args(
        SynapseOptions::default(),
        "[queue]\nmode = \"steer\"",
        &["--no-steering"],
    )
    .await;
    let room = env.room_with_agent(false).await;
    env.alice.send(&room, "%say working\n%sleep 3000").await;
    env.reply_where(&room, "the running turn", |t| t == "working")
        .await;
    let second = env.alice.send(&room, "%say second").await;
    wait_until(PATIENCE, "the queued mark", || {
        (env.alice.reactions_on(&second).into_iter()).find(|r| r.key == "⏳")
    })
    .await;
    env.reply_where(&room, "the second answer", |t| t == "second")
        .await;
}

/// `!queue interrupt`: a message written while the agent works cuts the running answer,
/// which says so, and is answered at once, the agent told its previous answer was cut.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_interrupting_message_cuts_the_turn_and_is_answered_next() {
    let env = Env::start(
        SynapseOptions::default(),
        "[streaming]\nedit_interval_ms = 200",
    )
    .await;
    let room = env.room_with_agent(false).await;
    env.alice.send(&room, "!queue interrupt").await;
    env.notice_containing(&room, "stop the running turn").await;
    let long: String = (0..200).map(|i| format!("word{i} ")).collect();
    env.alice
        .send(&room, &format!("%stream 100 5\n{long}"))
        .await;
    env.reply_where(&room, "the long answer to start", |t| {
        t.starts_with("word0")
    })
    .await;
    env.alice.send(&room, "%echo").await;
    let cut = env
        .reply_where(&room, "the cut answer", |t| {
            t.contains("✂️ Cut by a new message from alice.")
        })
        .await;
    assert!(!cut.contains("word199"), "{cut}");
    let next = env
        .reply_where(&room, "the interrupting message answered", |t| {
            t.contains("%echo")
        })
        .await;
    assert!(
        next.contains("This message interrupted your previous answer"),
        "{next}"
    );
}

/// `!reactions on`: the agent marks a message 👀 when it takes it, then ✅ once answered,
/// the 👀 taken back; a stopped turn's message ends 🛑.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_status_reactions_on_a_message_shows_where_it_stands() {
    let env = Env::start(SynapseOptions::default(), "").await;
    let room = env.room_with_agent(false).await;
    env.alice.send(&room, "!reactions on").await;
    env.notice_containing(&room, "mark your messages here")
        .await;
    // Long enough for the 👀 to be seen before it is taken back.
    let asked = env.alice.send(&room, "%sleep 2000\n%say hi").await;
    let mark = |key: &'static str, event: &str| {
        (env.alice.reactions_on(event).into_iter()).find(|r| r.key == key && r.sender == env.agent)
    };
    let taken = wait_until(PATIENCE, "the taken mark", || mark("👀", &asked)).await;
    wait_until(PATIENCE, "the answered mark", || mark("✅", &asked)).await;
    wait_until(PATIENCE, "the taken mark to go", || {
        env.alice.is_redacted(&taken.event_id).then_some(())
    })
    .await;
    let long = env.alice.send(&room, "%say working\n%sleep 30000").await;
    env.reply_where(&room, "the running turn", |t| t == "working")
        .await;
    env.alice.send(&room, "!stop").await;
    wait_until(PATIENCE, "the stopped mark", || mark("🛑", &long)).await;
}

/// Waits until the message `event_id` currently shows `text`; returns what it shows.
async fn shows(env: &Env, event_id: &str, text: &str) -> String {
    wait_until(PATIENCE, &format!("the message showing {text:?}"), || {
        (env.alice.current_text(event_id)).filter(|t| t.contains(text))
    })
    .await
}

/// A background task the agent reports gets a card of its own, edited as it goes, which
/// outlives the turn that started it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_background_tasks_card_follows_it_until_it_completes() {
    let env = Env::start(SynapseOptions::default(), "").await;
    let room = env.room_with_agent(false).await;
    env.alice
        .send(&room, "%say building\n%background 3 cargo build")
        .await;
    let card = env.notice_containing(&room, "Background task 1").await;
    assert!(
        card.body
            .starts_with("⚙️ Background task 1: cargo build · running"),
        "{}",
        card.body
    );
    assert!(card.body.contains("!stop task 1"), "{}", card.body);
    env.reply_where(&room, "the turn's answer", |t| {
        t.contains("Started background task task-1: cargo build")
    })
    .await;
    let done = shows(&env, &card.event_id, "· completed").await;
    assert!(done.contains("cargo build finished after 3 s"), "{done}");
    assert!(!done.contains("!stop"), "{done}");
    let cards = (env.texts_from(&room, &env.agent).into_iter())
        .filter(|t| t.contains("Background task"))
        .count();
    assert_eq!(cards, 1, "one card, edited");
}

/// A running background task is stopped by `!stop task N` and by 🛑 on its card, between
/// turns; the agent is asked (`_session/async_task/stop`) and the card says it stopped.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_background_task_stops_by_command_or_by_a_stop_reaction_on_its_card() {
    let env = Env::start(SynapseOptions::default(), "").await;
    let room = env.room_with_agent(false).await;
    env.alice
        .send(&room, "%background 120 npm test\n%background 120 log watch")
        .await;
    let first = env.notice_containing(&room, "Background task 1").await;
    let second = env.notice_containing(&room, "Background task 2").await;
    // Running: progress comes in as edits.
    shows(&env, &first.event_id, "1 of 120 s").await;
    env.alice.send(&room, "!stop task 1").await;
    shows(
        &env,
        &first.event_id,
        "🛑 Background task 1: npm test · stopped",
    )
    .await;
    assert!(
        (env.alice.current_text(&second.event_id).unwrap()).contains("· running"),
        "only task 1 was stopped"
    );
    env.alice.react(&room, &second.event_id, "🛑").await;
    shows(
        &env,
        &second.event_id,
        "🛑 Background task 2: log watch · stopped",
    )
    .await;
    assert_eq!(
        env.gw.log().matches("stopping a background task").count(),
        2,
        "{}",
        env.gw.log()
    );
    // Nothing left to stop.
    env.alice.send(&room, "!stop task").await;
    env.notice_containing(&room, "has no background task running here")
        .await;
}

/// `!queue` lists the prompts that wait, numbered; `!queue drop N` and `!queue clear` take
/// them out (their author's, or anyone's for an admin): a prompt taken out loses its ⏳ and
/// never runs, and the others run as before.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn waiting_prompts_are_listed_and_taken_out_by_their_authors_or_an_admin() {
    // Alice approves, so she is an admin; Bob may only prompt.
    let (env, bob) = support::with_bob::start_approving("", &[], "", &["alice"]).await;
    let (room, bobs) = support::with_bob::room_with_bob(&env, &bob).await;
    env.alice.send(&room, "%say working\n%hang").await;
    env.reply_where(&room, "the running turn", |t| t == "working")
        .await;
    let first = env.alice.send(&room, "%say alice one").await;
    let bobs_prompt = bob.send(&bobs, "%say bob one").await;
    let second = env.alice.send(&room, "%say alice two").await;
    for (what, event) in [
        ("first", &first),
        ("bob's", &bobs_prompt),
        ("second", &second),
    ] {
        wait_until(
            PATIENCE,
            &format!("the {what} prompt marked waiting"),
            || {
                (env.alice.reactions_on(event).into_iter())
                    .find(|r| r.key == "⏳" && r.sender == env.agent)
            },
        )
        .await;
    }
    env.alice.send(&room, "!queue").await;
    let listed = env.notice_containing(&room, "Waiting here").await.body;
    assert!(
        listed.contains(
            "1. @alice:localhost → demo: “%say alice one”\n\
             2. @bob:localhost → demo: “%say bob one”\n\
             3. @alice:localhost → demo: “%say alice two”"
        ),
        "{listed}"
    );
    // Bob may not take Alice's out; he clears his own.
    bob.send(&bobs, "!queue drop 1").await;
    env.notice_containing(
        &room,
        "Number 1 is @alice:localhost's: only they or an admin",
    )
    .await;
    bob.send(&bobs, "!queue clear").await;
    let cleared = env.notice_containing(&room, "🗑️").await.body;
    assert!(
        cleared.ends_with("2. @bob:localhost → demo: “%say bob one”"),
        "{cleared}"
    );
    // An admin takes anyone's out by its number as listed now.
    env.alice.send(&room, "!queue drop 2").await;
    let dropped = wait_until(PATIENCE, "alice's drop", || {
        (env.alice.messages_from(&room, &env.agent).into_iter())
            .find(|m| m.notice && m.body.contains("“%say alice two”") && m.body.starts_with("🗑️"))
    })
    .await;
    assert!(
        dropped
            .body
            .ends_with("2. @alice:localhost → demo: “%say alice two”")
    );
    // Their ⏳ is taken back.
    for event in [&bobs_prompt, &second] {
        wait_until(PATIENCE, "the ⏳ taken back", || {
            (!(env.alice.reactions_on(event).iter()).any(|r| {
                r.key == "⏳" && r.sender == env.agent && !env.alice.is_redacted(&r.event_id)
            }))
            .then_some(())
        })
        .await;
    }
    // Stopped, the turn makes way for what still waits, and nothing taken out runs.
    env.alice.send(&room, "!stop").await;
    env.reply_where(&room, "the prompt still waiting", |t| t == "alice one")
        .await;
    env.prompt_and_wait(&room, "%say after", "after").await;
    for gone in ["bob one", "alice two"] {
        assert!(env.messages_reading(&room, gone).is_empty(), "{gone} ran");
    }
}
