#![recursion_limit = "256"]
//! Schedules set from the room (`!every`, `!at`): a run is a prompt of the person who set
//! it, posted in the room and answered in a thread of its own, then summed up; it survives
//! the gateway being killed; it stops when its owner may no longer prompt. Real Synapse, the
//! real binary, the demo agent (`%say TEXT` answers TEXT).

mod support;

use std::time::Duration;

use matrix_sdk::room::Room;
use support::person::Seen;
use support::{Env, PATIENCE, SynapseOptions, wait_until};

/// Schedules as short as a test needs.
const SHORT: &str = "[schedules]\nshortest_interval_secs = 1\n";

/// The messages of run `run` of schedule `id`: the prompt it posted.
fn run_messages(env: &Env, room: &Room, id: u32, run: u32) -> Vec<Seen> {
    let head = format!("⏰ Schedule #{id}, run {run} (set by ");
    (env.alice.messages_from(room, &env.agent).into_iter())
        .filter(|m| m.replaces.is_none() && m.body.starts_with(&head))
        .collect()
}

/// A gateway whose schedules may be as short as a test needs, and a room with its agent.
async fn start() -> (Env, Room) {
    let env = Env::start(SynapseOptions::default(), SHORT).await;
    let room = env.room_with_agent(false).await;
    (env, room)
}

/// Alice sets a schedule with `command`; returns the answer saying it is set.
async fn schedule(env: &Env, room: &Room, command: &str) -> String {
    env.alice.send(room, command).await;
    env.notice_containing(room, "⏰ Scheduled:").await.body
}

/// How many runs of schedule `id` were posted.
fn posted_runs(env: &Env, room: &Room, id: u32) -> usize {
    (1..100)
        .filter(|n| !run_messages(env, room, id, *n).is_empty())
        .count()
}

/// Waits until the scheduler took a run due `secs` from now: a one-off set now (`!at`, a
/// marker's prompt) is answered. A run of any schedule due before it was taken by then: the
/// positive event a test waits for where it asserts that a schedule did not run. Returns
/// the one-off's ID, for `!unschedule`.
async fn scheduler_passed(env: &Env, room: &Room, secs: u64) -> u32 {
    let marker = support::marker();
    env.alice
        .send(room, &format!("!at in {secs}s %say {marker}"))
        .await;
    wait_until(PATIENCE, "the scheduled marker's answer", || {
        env.messages_reading(room, &marker).into_iter().next()
    })
    .await;
    let set = (env.alice.messages_from(room, &env.agent).into_iter())
        .find(|m| m.notice && m.body.starts_with("⏰ Scheduled:") && m.body.contains(&marker))
        .expect("the marker's schedule was set")
        .body;
    let id = set.split_once('#').unwrap().1;
    id.split(|c: char| !c.is_ascii_digit())
        .next()
        .unwrap()
        .parse()
        .unwrap()
}

/// Waits for run `run` of schedule `id` to be posted; returns its message.
async fn run_posted(env: &Env, room: &Room, id: u32, run: u32) -> Seen {
    wait_until(PATIENCE, &format!("run {run} of schedule #{id}"), || {
        run_messages(env, room, id, run).into_iter().next()
    })
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_schedule_runs_as_its_owners_prompt_in_a_thread_per_run_until_removed() {
    let (env, room) = start().await;
    let set = schedule(&env, &room, "!every 4s %say tick from the schedule").await;
    assert!(set.contains("#1 · 4s (UTC)"), "{set}");
    assert!(set.contains("set by alice · a thread per run"), "{set}");
    assert!(set.contains("!unschedule 1"), "{set}");

    // The run's message is the prompt, in the room, mentioning who set it.
    let first = run_posted(&env, &room, 1, 1).await;
    assert!(
        first
            .body
            .ends_with("(set by alice): %say tick from the schedule"),
        "{}",
        first.body
    );
    assert_eq!(first.mentions, vec![env.alice.user_id.to_string()]);
    // Its answer is in the run's own thread, then the summary line.
    let answer = wait_until(PATIENCE, "the run's answer", || {
        env.messages_reading(&room, "tick from the schedule")
            .into_iter()
            .next()
    })
    .await;
    assert_eq!(answer.thread.as_deref(), Some(first.event_id.as_str()));
    let summary = env
        .notice_containing(&room, "⏰ Schedule #1, run 1: answered after")
        .await
        .body;
    assert!(summary.contains("Next run: "), "{summary}");
    let summaries: Vec<Seen> = (env.alice.messages_from(&room, &env.agent).into_iter())
        .filter(|m| m.body.starts_with("⏰ Schedule #1, run 1: answered"))
        .collect();
    assert_eq!(summaries.len(), 1);
    assert_eq!(
        summaries[0].thread.as_deref(),
        Some(first.event_id.as_str())
    );

    // It runs again, in a thread of its own.
    let second = run_posted(&env, &room, 1, 2).await;
    env.notice_containing(&room, "⏰ Schedule #1, run 2: answered")
        .await;
    let second_answers: Vec<Seen> = env
        .messages_reading(&room, "tick from the schedule")
        .into_iter()
        .filter(|m| m.thread.as_deref() == Some(second.event_id.as_str()))
        .collect();
    assert_eq!(second_answers.len(), 1);

    env.alice.send(&room, "!schedules").await;
    let listed = env
        .notice_containing(&room, "⏰ Schedules here:")
        .await
        .body;
    assert!(
        listed.contains("#1 · 4s (UTC) · demo agent · set by alice"),
        "{listed}"
    );
    assert!(listed.contains("“%say tick from the schedule”"), "{listed}");
    assert!(listed.contains("last: answered"), "{listed}");

    env.alice.send(&room, "!unschedule 1").await;
    env.notice_containing(&room, "⏰ Schedule #1 removed").await;
    let runs_then = posted_runs(&env, &room, 1);
    // A run due one period from now: #1's next would have been taken before it.
    let marker = scheduler_passed(&env, &room, 4).await;
    let runs_now = posted_runs(&env, &room, 1);
    assert_eq!(runs_now, runs_then, "a removed schedule ran again");
    env.alice
        .send(&room, &format!("!unschedule {marker}"))
        .await;
    env.notice_containing(&room, &format!("⏰ Schedule #{marker} removed"))
        .await;
    env.alice.send(&room, "!schedules").await;
    env.notice_containing(&room, "No schedules here.").await;
    // Each run once: no run's message twice.
    for n in 1..=runs_now as u32 {
        assert_eq!(run_messages(&env, &room, 1, n).len(), 1, "run {n}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_one_off_due_while_the_gateway_was_killed_runs_once_after_the_restart() {
    let (mut env, room) = start().await;
    schedule(&env, &room, "!at in 5s %say once after the outage").await;
    env.alice
        .send(&room, "!every skip-missed 1h %say should not run now")
        .await;
    env.notice_containing(&room, "#2 · 1h").await;
    // Killed (kill -9) before either is due; the one-off comes due while it is down.
    env.gw.kill();
    tokio::time::sleep(Duration::from_secs(7)).await;
    env.gw.start_again();

    let run = run_posted(&env, &room, 1, 1).await;
    let answer = wait_until(PATIENCE, "the one-off's answer", || {
        env.messages_reading(&room, "once after the outage")
            .into_iter()
            .next()
    })
    .await;
    assert_eq!(answer.thread.as_deref(), Some(run.event_id.as_str()));
    let summary = env
        .notice_containing(&room, "⏰ Schedule #1, run 1: answered")
        .await
        .body;
    assert!(summary.ends_with("No more runs."), "{summary}");
    scheduler_passed(&env, &room, 1).await;
    assert_eq!(run_messages(&env, &room, 1, 1).len(), 1);
    assert_eq!(
        env.messages_reading(&room, "once after the outage").len(),
        1
    );
    // The hourly one was not due: nothing of it yet.
    assert!(run_messages(&env, &room, 2, 1).is_empty());
    env.alice.send(&room, "!schedules").await;
    let listed = env
        .notice_containing(&room, "⏰ Schedules here:")
        .await
        .body;
    assert!(
        listed.contains("no more runs · 1 run, last: answered"),
        "{listed}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_missed_while_down_is_skipped_where_its_schedule_says_so() {
    let (mut env, room) = start().await;
    schedule(&env, &room, "!every skip-missed 10s %say every ten seconds").await;
    env.gw.kill();
    // Down while run 1 comes due.
    tokio::time::sleep(Duration::from_secs(11)).await;
    env.gw.start_again();
    let skipped = env
        .notice_containing(&room, "⏰ Schedule #1, run 1: skipped")
        .await
        .body;
    assert!(
        skipped.contains("due while Sidekicks was down"),
        "{skipped}"
    );
    env.alice.send(&room, "!unschedule 1").await;
    env.notice_containing(&room, "⏰ Schedule #1 removed").await;
    scheduler_passed(&env, &room, 1).await;
    assert!(run_messages(&env, &room, 1, 1).is_empty());
    // Run 2 may have come due before the schedule was removed: only it answers.
    let roots: Vec<String> = (2..4)
        .flat_map(|n| run_messages(&env, &room, 1, n))
        .map(|m| m.event_id)
        .collect();
    for answer in env.messages_reading(&room, "every ten seconds") {
        assert!(
            answer.thread.as_ref().is_some_and(|t| roots.contains(t)),
            "an answer outside a later run: {answer:?}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_schedule_stops_when_its_owner_may_no_longer_prompt() {
    let (env, room) = start().await;
    env.alice.send(&room, "!every 3s %say while allowed").await;
    run_posted(&env, &room, 1, 1).await;
    env.notice_containing(&room, "⏰ Schedule #1, run 1: answered")
        .await;

    // Alice leaves the allow list (SIGHUP reloads it).
    let config = std::fs::read_to_string(&env.gw.config).unwrap();
    let allowed = format!("allowed_users = [\"{}\"]", env.alice.user_id);
    assert!(config.contains(&allowed), "{config}");
    let config = config.replace(&allowed, "allowed_users = [\"@nobody:localhost\"]");
    std::fs::write(&env.gw.config, config).unwrap();
    // SAFETY: kill(2) on the gateway, our child.
    unsafe { libc::kill(env.gw.pid().unwrap() as i32, libc::SIGHUP) };

    let stopped = env
        .notice_containing(&room, "⏰ Schedule #1 stopped")
        .await
        .body;
    assert!(
        stopped.contains("alice, who set it, may no longer prompt"),
        "{stopped}"
    );
    let runs_then = posted_runs(&env, &room, 1);
    tokio::time::sleep(Duration::from_secs(5)).await;
    let runs_now = posted_runs(&env, &room, 1);
    assert_eq!(runs_now, runs_then, "a stopped schedule ran again");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kill_nine_at_moments_around_the_runs_loses_and_doubles_no_run() {
    let (mut env, room) = start().await;
    schedule(&env, &room, "!every 2s %say beat").await;
    // Killed five times at moments spread over the runs' steps (taken, posted, admitted,
    // answered, summed up), each time started again at once.
    for kill in 0..5u64 {
        tokio::time::sleep(Duration::from_millis(1_300 + kill * 450)).await;
        env.gw.kill();
        env.gw.start_again();
    }
    run_posted(&env, &room, 1, 2).await;
    env.alice.send(&room, "!unschedule 1").await;
    env.notice_containing(&room, "⏰ Schedule #1 removed").await;
    let posted: Vec<u32> = (1..40)
        .filter(|n| !run_messages(&env, &room, 1, *n).is_empty())
        .collect();
    assert!(posted.len() >= 2, "{posted:?}");
    // Numbered without a gap, each posted once and answered once, in its own thread.
    assert_eq!(posted, (1..=posted.len() as u32).collect::<Vec<_>>());
    for n in posted {
        let runs = run_messages(&env, &room, 1, n);
        assert_eq!(runs.len(), 1, "run {n} posted {} times", runs.len());
        let root = runs[0].event_id.clone();
        // Summed up once: answered, or (a kill cut its turn) marked as cut like any turn.
        let head = format!("⏰ Schedule #1, run {n}: ");
        let summaries = || -> Vec<Seen> {
            (env.alice.messages_from(&room, &env.agent).into_iter())
                .filter(|m| m.replaces.is_none() && m.body.starts_with(&head))
                .collect()
        };
        let summary = wait_until(PATIENCE, &format!("run {n}'s summary"), || {
            summaries().into_iter().next()
        })
        .await;
        tokio::time::sleep(Duration::from_millis(500)).await;
        assert_eq!(summaries().len(), 1, "run {n} summed up twice");
        let here = env
            .messages_reading(&room, "beat")
            .into_iter()
            .filter(|m| m.thread.as_deref() == Some(root.as_str()))
            .count();
        let answered = summary.body.contains(": answered");
        assert_eq!(here, usize::from(answered), "run {n}: {}", summary.body);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn times_are_read_in_the_zone_the_room_chose() {
    let (env, room) = start().await;
    env.alice.send(&room, "!timezone").await;
    env.notice_containing(&room, "are in UTC").await;
    env.alice.send(&room, "!timezone Mars/Olympus").await;
    env.notice_containing(&room, "“Mars/Olympus” is not a time zone")
        .await;
    env.alice.send(&room, "!timezone europe/paris").await;
    env.notice_containing(&room, "now in Europe/Paris").await;
    let set = schedule(&env, &room, "!every weekdays 09:00 %say good morning").await;
    assert!(set.contains("#1 · weekdays 09:00 (Europe/Paris)"), "{set}");
    // The next run is shown at 09:00 on Paris's clock.
    assert!(set.contains(" 09:00 (Europe/Paris) · no runs"), "{set}");
    env.alice.send(&room, "!every fortnightly %say hi").await;
    let refused = env
        .notice_containing(&room, "is not a time Sidekicks knows")
        .await
        .body;
    assert!(
        refused.contains("weekdays 09:00"),
        "the forms that work: {refused}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_runs_permission_poll_asks_in_its_thread_and_nobody_answering_refuses_it() {
    let config = format!("{SHORT}[permissions]\ntimeout_secs = 5\n");
    let env = Env::start(SynapseOptions::default(), &config).await;
    let room = env.room_with_agent(false).await;
    env.alice
        .send(&room, "!at in 2s %permission bash: ls")
        .await;
    let run = run_posted(&env, &room, 1, 1).await;
    // The poll is in the run's thread and mentions who set the schedule.
    let poll = wait_until(PATIENCE, "the run's poll", || {
        (env.alice.messages_from(&room, &env.agent).into_iter())
            .find(|m| m.replaces.is_none() && m.body.starts_with("🔐"))
    })
    .await;
    assert_eq!(poll.thread.as_deref(), Some(run.event_id.as_str()));
    assert!(
        poll.mentions.contains(&env.alice.user_id),
        "{:?}",
        poll.mentions
    );
    // Nobody answers: refused when the poll's time is up, then the run is summed up.
    wait_until(PATIENCE, "the poll to expire", || {
        (env.alice.current_text(&poll.event_id))
            .filter(|t| t.contains("⌛ Nobody answered in time, so it was refused"))
    })
    .await;
    env.reply_where(&room, "the agent told of the refusal", |t| {
        t.contains("permission: reject")
    })
    .await;
    // The summary says a call was refused, not only that the agent answered.
    let summary = env
        .notice_containing(
            &room,
            "⏰ Schedule #1, run 1: answered; 1 tool call refused",
        )
        .await;
    assert_eq!(summary.thread.as_deref(), Some(run.event_id.as_str()));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn here_answers_in_the_rooms_conversation_and_a_run_still_going_is_not_doubled() {
    let (env, room) = start().await;
    let set = schedule(&env, &room, "!every here 2s %sleep 5000\n%say slow beat").await;
    assert!(set.contains("in the room's conversation"), "{set}");
    run_posted(&env, &room, 1, 1).await;
    // Due again while the first run sleeps: not started, and the room is told.
    let skipped = env
        .notice_containing(&room, "⏰ Schedule #1, run 2: not started")
        .await
        .body;
    assert!(
        skipped.contains("the previous run was still going"),
        "{skipped}"
    );
    let answer = wait_until(PATIENCE, "the first run's answer", || {
        env.messages_reading(&room, "slow beat").into_iter().next()
    })
    .await;
    assert_eq!(answer.thread, None, "answered in the room's conversation");
    assert!(run_messages(&env, &room, 1, 2).is_empty());
    env.alice.send(&room, "!unschedule 1").await;
    env.notice_containing(&room, "⏰ Schedule #1 removed").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_person_has_at_most_max_per_owner_and_a_schedule_stops_when_its_owner_is_kicked() {
    let config = format!("{SHORT}max_per_owner = 2\n");
    let (env, bob) = support::with_bob::start_approving(&config, &[], "", &["alice"]).await;
    let (room, bobs_room) = support::with_bob::room_with_bob(&env, &bob).await;
    schedule(&env, &room, "!every 1h %say one").await;
    env.alice.send(&room, "!every 1h %say two").await;
    env.alice.send(&room, "!every 1h %say three").await;
    let refused = env.notice_containing(&room, "⏰ Not set").await.body;
    assert!(
        refused.contains("you have 2 schedules running already"),
        "{refused}"
    );
    // Bob's own: it runs as him while he is in the room.
    bob.send(&bobs_room, "!every 2s %say from bob").await;
    env.notice_containing(&room, "set by bob").await;
    run_posted(&env, &room, 3, 1).await;
    env.alice.kick(&room, &bob.user_id, "enough").await;
    let stopped = env
        .notice_containing(&room, "⏰ Schedule #3 stopped")
        .await
        .body;
    // (Named by the user ID the room still knows, once they are gone.)
    assert!(
        stopped.contains("bob:localhost, who set it, is no longer in the room"),
        "{stopped}"
    );
    env.alice.send(&room, "!schedules").await;
    let listed = env.notice_containing(&room, "⏰ Schedules here").await.body;
    assert!(
        listed.contains("bob:localhost is no longer in the room"),
        "{listed}"
    );
}
