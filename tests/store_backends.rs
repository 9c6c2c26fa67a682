#![recursion_limit = "256"]
//! The store keeps the same promises on PostgreSQL as on SQLite: the two schemas are one
//! (same tables, columns, keys and indexes), and the same steps give the same results,
//! exactly-once guarantees included. PostgreSQL is a throwaway cluster the harness starts
//! on loopback (Debian's `postgresql`).

mod support;

use std::collections::BTreeSet;
use std::time::Duration;

use sidekicks::model::ids::{AgentId, ConversationKey, EventId, RoomId, SessionId, UserId};
use sidekicks::model::schedule::When;
use sidekicks::store::{
    CutMessage, NewSchedule, OutboxItem, PendingInput, PendingKind, Role, RoomPosition, Store,
    StoredPoll, TABLES, TranscriptLine, sqlite_url,
};
use sqlx::Row;
use support::postgres::Postgres;
use support::{Env, PATIENCE, SynapseOptions};

/// One row per column: (table, column, type, nullable), types named as PostgreSQL names
/// them (SQLite's INTEGER is a 64-bit integer, as BIGINT).
type Columns = BTreeSet<(String, String, String, bool)>;

/// The columns, unique keys (as `table(col, …)`) and other index names of the SQLite
/// database at `url`.
async fn sqlite_schema(url: &str) -> (Columns, BTreeSet<String>, BTreeSet<String>) {
    let pool = sqlx::SqlitePool::connect(url).await.unwrap();
    let tables: Vec<String> = sqlx::query_scalar(
        "SELECT name FROM sqlite_master WHERE type = 'table'
         AND name NOT LIKE 'sqlite_%' AND name NOT LIKE '_sqlx%'",
    )
    .fetch_all(&pool)
    .await
    .unwrap();
    let (mut columns, mut unique, mut indexes) = (Columns::new(), BTreeSet::new(), BTreeSet::new());
    for table in &tables {
        let rows = sqlx::query("SELECT name, type, \"notnull\", pk FROM pragma_table_info($1)")
            .bind(table)
            .fetch_all(&pool)
            .await
            .unwrap();
        let mut key: Vec<(i64, String)> = Vec::new();
        for row in rows {
            let (name, ty): (String, String) = (row.get(0), row.get(1));
            let ty = match ty.as_str() {
                "INTEGER" => "bigint",
                "TEXT" => "text",
                other => panic!("{table}.{name}: a column of type {other}"),
            };
            let pk: i64 = row.get(3);
            // A primary key is never NULL (SQLite would allow it for a non-integer key).
            let not_null = row.get::<i64, _>(2) == 1 || pk > 0;
            columns.insert((table.clone(), name.clone(), ty.to_owned(), !not_null));
            if pk > 0 {
                key.push((pk, name));
            }
        }
        key.sort();
        let key: Vec<String> = key.into_iter().map(|(_, name)| name).collect();
        unique.insert(format!("{table}({})", key.join(", ")));
        let listed = sqlx::query("SELECT name, \"unique\", origin FROM pragma_index_list($1)")
            .bind(table)
            .fetch_all(&pool)
            .await
            .unwrap();
        for index in listed {
            let (name, is_unique, origin): (String, i64, String) =
                (index.get(0), index.get(1), index.get(2));
            if is_unique == 1 && origin != "pk" {
                let cols: Vec<String> =
                    sqlx::query_scalar("SELECT name FROM pragma_index_info($1) ORDER BY seqno")
                        .bind(&name)
                        .fetch_all(&pool)
                        .await
                        .unwrap();
                unique.insert(format!("{table}({})", cols.join(", ")));
            }
            if origin == "c" {
                indexes.insert(name);
            }
        }
    }
    (columns, unique, indexes)
}

/// The same for the PostgreSQL database at `url`.
async fn postgres_schema(url: &str) -> (Columns, BTreeSet<String>, BTreeSet<String>) {
    let pool = sqlx::PgPool::connect(url).await.unwrap();
    let rows = sqlx::query(
        "SELECT table_name::text, column_name::text, data_type::text, is_nullable = 'YES'
         FROM information_schema.columns
         WHERE table_schema = 'public' AND table_name NOT LIKE '\\_sqlx%'",
    )
    .fetch_all(&pool)
    .await
    .unwrap();
    let columns = rows
        .iter()
        .map(|r| (r.get(0), r.get(1), r.get(2), r.get(3)))
        .collect();
    let unique = sqlx::query_scalar(
        "SELECT t.relname || '(' || string_agg(a.attname, ', ' ORDER BY k.ord) || ')'
         FROM pg_index i
         JOIN pg_class t ON t.oid = i.indrelid
         JOIN pg_namespace n ON n.oid = t.relnamespace AND n.nspname = 'public'
         CROSS JOIN LATERAL unnest(i.indkey) WITH ORDINALITY AS k(attnum, ord)
         JOIN pg_attribute a ON a.attrelid = t.oid AND a.attnum = k.attnum
         WHERE i.indisunique AND t.relname NOT LIKE '\\_sqlx%'
         GROUP BY i.indexrelid, t.relname",
    )
    .fetch_all(&pool)
    .await
    .unwrap()
    .into_iter()
    .collect();
    // Indexes made by CREATE INDEX: those no constraint owns.
    let indexes = sqlx::query_scalar(
        "SELECT c.relname::text FROM pg_index i
         JOIN pg_class c ON c.oid = i.indexrelid
         JOIN pg_class t ON t.oid = i.indrelid
         JOIN pg_namespace n ON n.oid = t.relnamespace AND n.nspname = 'public'
         WHERE t.relname NOT LIKE '\\_sqlx%'
         AND NOT EXISTS (SELECT 1 FROM pg_constraint k WHERE k.conindid = i.indexrelid)",
    )
    .fetch_all(&pool)
    .await
    .unwrap()
    .into_iter()
    .collect();
    (columns, unique, indexes)
}

/// A new SQLite file's URL in `dir`, and the directory kept alive.
fn sqlite_in(dir: &tempfile::TempDir) -> String {
    sqlite_url(&dir.path().join("sidekicks.db"))
}

#[tokio::test]
async fn the_postgres_schema_is_the_sqlite_schema() {
    let postgres = Postgres::start().await;
    let dir = tempfile::tempdir().unwrap();
    let (lite, pg) = (sqlite_in(&dir), postgres.new_database("schema"));
    drop(Store::connect(&lite).await.unwrap());
    drop(Store::connect(&pg).await.unwrap());
    let (lite_columns, lite_unique, lite_indexes) = sqlite_schema(&lite).await;
    let (pg_columns, pg_unique, pg_indexes) = postgres_schema(&pg).await;
    assert!(lite_columns.len() > 100, "{lite_columns:?}");
    let only = |a: &Columns, b: &Columns| a.difference(b).cloned().collect::<Vec<_>>();
    assert!(
        lite_columns == pg_columns,
        "columns only in SQLite: {:?}\ncolumns only in PostgreSQL: {:?}",
        only(&lite_columns, &pg_columns),
        only(&pg_columns, &lite_columns)
    );
    assert_eq!(lite_unique, pg_unique, "unique keys");
    assert!(lite_unique.contains("pending_inputs(event_id, agent_id)"));
    assert_eq!(lite_indexes, pg_indexes, "indexes");
    assert!(lite_indexes.contains("schedules_due"));
    // `sidekicks migrate` copies every table.
    let tables: BTreeSet<&str> = lite_columns.iter().map(|c| c.0.as_str()).collect();
    assert_eq!(tables, TABLES.iter().copied().collect());
}

/// The test's conversation.
fn conversation() -> ConversationKey {
    ConversationKey::new(RoomId::new("!room"), AgentId::new("demo"))
}

/// A prompt waiting for its turn.
fn pending(event: &str, body: &str) -> PendingInput {
    PendingInput {
        room_id: RoomId::new("!room"),
        thread: None,
        agent_id: AgentId::new("demo"),
        event_id: EventId::new(event),
        kind: PendingKind::Prompt,
        sender: UserId::new("@alice:x"),
        body: body.into(),
        reply_to: None,
        sent_at: 1_000,
        queued_reaction: None,
        media: Vec::new(),
    }
}

/// A line of the transcript.
fn line<'a>(role: Role, event: &'a EventId, body: &'a str) -> TranscriptLine<'a> {
    static SENDER: std::sync::LazyLock<UserId> =
        std::sync::LazyLock::new(|| UserId::new("@alice:x"));
    TranscriptLine {
        role,
        sender: &SENDER,
        event_id: Some(event),
        body,
        stop_reason: (role == Role::Agent).then_some("end_turn"),
    }
}

/// Admission, turns, the crash journal and the outbox, each written twice where a
/// restart or a race would: what is seen, as text, for comparison.
async fn admission_and_turns(store: &Store) -> Vec<String> {
    let (key, agent) = (conversation(), AgentId::new("demo"));
    let mut seen = Vec::new();
    let first = EventId::new("$first");
    for _ in 0..2 {
        let admitted = store
            .admit(&first, &key, Some(&pending("$first", "hello")))
            .await
            .unwrap();
        seen.push(format!("admitted: {admitted}"));
    }
    store
        .admit(
            &EventId::new("$second"),
            &key,
            Some(&pending("$second", "more")),
        )
        .await
        .unwrap();
    let waiting = store.pending_inputs(&agent).await.unwrap();
    seen.push(format!(
        "{:?}",
        waiting.iter().map(|p| &p.body).collect::<Vec<_>>()
    ));
    store.begin_turn(&key, &first, false).await.unwrap();
    store.begin_turn(&key, &first, true).await.unwrap();
    store
        .append_transcript(&key, line(Role::User, &first, "hello"))
        .await
        .unwrap();
    store
        .append_transcript(&key, line(Role::User, &first, "hello"))
        .await
        .unwrap();
    store.append_reply_text(&key, "Hi ").await.unwrap();
    store.append_reply_text(&key, "there").await.unwrap();
    let message = CutMessage {
        event_id: None,
        txn_id: Some("txn1".into()),
        kind: "reply".into(),
        body: "Hi".into(),
        html: None,
        notice: true,
    };
    store
        .intend_cut_message(&key, "txn1", &message)
        .await
        .unwrap();
    let again = CutMessage {
        body: "Hi there".into(),
        ..message
    };
    store
        .intend_cut_message(&key, "txn1", &again)
        .await
        .unwrap();
    store
        .confirm_cut_message("txn1", &EventId::new("$reply"))
        .await
        .unwrap();
    store.note_refusals(&key, 2).await.unwrap();
    store.note_refusals(&key, 3).await.unwrap();
    seen.push(format!(
        "{:?}",
        store.unfinished_turns(&agent).await.unwrap()
    ));
    let reply = EventId::new("$reply");
    store
        .end_turn(
            &key,
            Some(line(Role::Agent, &reply, "Hi there")),
            None,
            std::slice::from_ref(&first),
        )
        .await
        .unwrap();
    seen.push(format!(
        "{:?}",
        store.unfinished_turns(&agent).await.unwrap()
    ));
    seen.push(format!(
        "{:?}",
        store.run_progress(&agent, &first).await.unwrap()
    ));
    let transcript = store.transcript(&key).await.unwrap();
    seen.push(format!(
        "{:?}",
        (transcript.iter())
            .map(|e| (&e.role, &e.body, &e.stop_reason))
            .collect::<Vec<_>>()
    ));
    let remaining = store.pending_inputs(&agent).await.unwrap();
    seen.push(format!(
        "{:?}",
        remaining.iter().map(|p| &p.body).collect::<Vec<_>>()
    ));
    let item = |txn: &str| OutboxItem {
        id: 0,
        room_id: RoomId::new("!room"),
        thread: None,
        event_id: None,
        txn_id: txn.into(),
        body: format!("final {txn}"),
        html: None,
        notice: false,
    };
    store
        .outbox_add(&agent, &[item("a"), item("b")])
        .await
        .unwrap();
    let outbox = store.outbox(&agent).await.unwrap();
    store.outbox_done(outbox[0].id).await.unwrap();
    let outbox = store.outbox(&agent).await.unwrap();
    seen.push(format!(
        "{:?}",
        outbox
            .iter()
            .map(|i| (&i.txn_id, i.notice))
            .collect::<Vec<_>>()
    ));
    seen
}

/// Sessions, forks, modes, polls, room settings and positions.
async fn conversations_and_settings(store: &Store) -> Vec<String> {
    let (key, agent) = (conversation(), AgentId::new("demo"));
    let other = ConversationKey::new(RoomId::new("!other"), AgentId::new("demo"));
    let mut seen = Vec::new();
    store
        .save_session(&key, &SessionId::new("s1"))
        .await
        .unwrap();
    seen.push(format!(
        "claimed: {}",
        store
            .claim_session(&other, &SessionId::new("s1"))
            .await
            .unwrap()
    ));
    seen.push(format!(
        "{:?}",
        store.others_sessions(&other).await.unwrap()
    ));
    seen.push(format!("{:?}", store.member_since(&key, 5).await.unwrap()));
    seen.push(format!("{:?}", store.member_since(&key, 9).await.unwrap()));
    let fork = ConversationKey::new(RoomId::new("!room"), AgentId::new("demo"))
        .in_thread(Some(EventId::new("$root")));
    store
        .note_fork_source(&key, &fork, &SessionId::new("s1"))
        .await
        .unwrap();
    store
        .note_fork_source(&key, &fork, &SessionId::new("s2"))
        .await
        .unwrap();
    seen.push(format!(
        "{:?}",
        store.take_fork_source(&fork).await.unwrap()
    ));
    seen.push(format!(
        "{:?}",
        store.take_fork_source(&fork).await.unwrap()
    ));
    let poll = StoredPoll {
        event_id: EventId::new("$poll"),
        room_id: RoomId::new("!room"),
        body: "Allow?".into(),
        html: None,
        native: true,
    };
    store.save_poll(&agent, &poll).await.unwrap();
    store.save_poll(&agent, &poll).await.unwrap();
    seen.push(format!("{:?}", store.open_polls(&agent).await.unwrap()));
    let room = key.room.clone();
    store.set_room_status_reactions(&room, false).await.unwrap();
    store.set_handoff(&room, true).await.unwrap();
    store.set_room_verbosity(&room, "all").await.unwrap();
    seen.push(format!(
        "{:?} {:?} {:?}",
        store.room_status_reactions(&room).await.unwrap(),
        store.room_routing(&room).await.unwrap(),
        store.room_verbosity(&room).await.unwrap()
    ));
    let position = RoomPosition {
        room_id: room.clone(),
        event_id: EventId::new("$seen"),
        event_ts: 77,
    };
    store
        .save_positions(&agent, std::slice::from_ref(&position))
        .await
        .unwrap();
    store.save_positions(&agent, &[position]).await.unwrap();
    seen.push(format!("{:?}", store.room_position(&key).await.unwrap()));
    store.start_conversation(&key).await.unwrap();
    seen.push(format!("{:?}", store.session(&key).await.unwrap()));
    seen
}

/// Spend and budgets: sums by room, person and unit, a session's last total, the limits an
/// admin set.
async fn spend(store: &Store) -> Vec<String> {
    use sidekicks::model::budget::{Amount, Period, Scope, Unit};
    use sidekicks::store::SpendRecord;
    let (room, agent, session, prompt) = (
        RoomId::new("!room"),
        AgentId::new("demo"),
        SessionId::new("s1"),
        EventId::new("$p"),
    );
    let (alice, bob) = (UserId::new("@alice:x"), UserId::new("@bob:x"));
    for (sender, cost, total, tokens) in [
        (&alice, Some("0.30 USD"), 300_000, 120),
        (&bob, Some("0.25 USD"), 550_000, 80),
        (&bob, None, 0, 5),
    ] {
        let record = SpendRecord {
            room: &room,
            sender,
            agent: &agent,
            session: &session,
            prompt: &prompt,
            cost: cost.map(|c| Amount::parse(c).unwrap()),
            session_total: total,
            tokens,
        };
        store.record_spend(&record).await.unwrap();
    }
    let usd = Unit::Currency("USD".into());
    let limit = Amount::parse("2 USD").unwrap();
    (store.set_budget_limit(&room, Scope::Person, Period::Month, &limit, &alice))
        .await
        .unwrap();
    vec![
        format!(
            "{:?}",
            store.spent_since(&room, None, &usd, 0).await.unwrap()
        ),
        format!(
            "{:?}",
            store.spent_since(&room, Some(&bob), &usd, 0).await.unwrap()
        ),
        format!(
            "{:?}",
            store
                .spent_since(&room, None, &Unit::Tokens, 0)
                .await
                .unwrap()
        ),
        format!(
            "{:?}",
            store.session_total(&agent, &session, &usd).await.unwrap()
        ),
        format!("{:?}", store.usage_since(&room, 0).await.unwrap()),
        format!("{:?}", store.budget_limits(&room).await.unwrap()),
    ]
}

/// Schedules: a due run is taken once, a webhook delivery is stored once.
async fn schedules(store: &Store) -> Vec<String> {
    let hourly = NewSchedule {
        room_id: RoomId::new("!room"),
        agent_id: AgentId::new("demo"),
        owner: UserId::new("@alice:x"),
        when: When::Every(Duration::from_secs(3600)),
        said: "1h".into(),
        time_zone: "UTC".into(),
        prompt: "run the tests".into(),
        thread_per_run: true,
        skip_missed: false,
        next_run: 1_000,
        source: None,
    };
    let mut seen = Vec::new();
    let id = store.add_schedule(&hourly).await.unwrap();
    let first = store.take_run(id, 1_000, Some(2_000), None).await.unwrap();
    let again = store.take_run(id, 1_000, Some(2_000), None).await.unwrap();
    seen.push(format!(
        "{:?} {:?}",
        first.map(|r| r.number),
        again.map(|r| r.number)
    ));
    seen.push(format!(
        "running: {}",
        store.schedule_is_running(id).await.unwrap()
    ));
    let schedule = store.schedule(id).await.unwrap().unwrap();
    seen.push(format!(
        "{:?} {} {} {}",
        schedule.next_run, schedule.runs, schedule.set.thread_per_run, schedule.set.skip_missed
    ));
    for _ in 0..2 {
        let delivered = (store
            .add_delivery("ci", &["d1", "signed:d1"], &hourly)
            .await
            .unwrap())
        .is_some();
        seen.push(format!("delivered: {delivered}"));
    }
    seen.push(format!(
        "removed: {}",
        store
            .remove_schedule(&RoomId::new("!room"), id)
            .await
            .unwrap()
    ));
    seen.push(format!("{:?}", store.next_schedule_run().await.unwrap()));
    seen
}

/// Every step on PostgreSQL gives what it gives on SQLite, and what that is is checked.
#[tokio::test]
async fn the_same_steps_give_the_same_results_on_both_stores() {
    let postgres = Postgres::start().await;
    let dir = tempfile::tempdir().unwrap();
    let lite = Store::connect(&sqlite_in(&dir)).await.unwrap();
    let pg = Store::connect(&postgres.new_database("steps"))
        .await
        .unwrap();
    assert_eq!(
        admission_and_turns(&lite).await,
        admission_and_turns(&pg).await
    );
    assert_eq!(
        conversations_and_settings(&lite).await,
        conversations_and_settings(&pg).await
    );
    assert_eq!(schedules(&lite).await, schedules(&pg).await);
    let spent = spend(&lite).await;
    assert_eq!(spent, spend(&pg).await);
    assert_eq!(spent[..4], ["550000", "250000", "205", "Some(550000)"]);
    let seen = admission_and_turns(
        &Store::connect(&postgres.new_database("again"))
            .await
            .unwrap(),
    )
    .await;
    // Admitted once; the prompt recorded once; the turn's journal gone with its end.
    assert_eq!(seen[..2], ["admitted: true", "admitted: false"]);
    assert!(
        seen[3].contains("rerun: true") && seen[3].contains("Hi there"),
        "{}",
        seen[3]
    );
    assert_eq!(seen[4], "[]");
    assert!(seen[5].contains("refused: 3"), "{}", seen[5]);
    assert!(
        seen[6].contains("(\"user\", \"hello\", None), (\"agent\""),
        "{}",
        seen[6]
    );
    assert_eq!(seen[7], "[\"more\"]");
    assert_eq!(seen[8], "[(\"b\", false)]");
    let seen = schedules(
        &Store::connect(&postgres.new_database("runs"))
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(seen[0], "Some(1) None");
    assert_eq!(seen[3..5], ["delivered: true", "delivered: false"]);
}

/// Every row moves from SQLite to PostgreSQL, row IDs and order included, and the copy
/// goes on where the old database left off; a target that already holds state is refused.
#[tokio::test]
async fn a_copy_to_postgres_keeps_every_row_and_goes_on_from_it() {
    let postgres = Postgres::start().await;
    let dir = tempfile::tempdir().unwrap();
    let lite = Store::connect(&sqlite_in(&dir)).await.unwrap();
    admission_and_turns(&lite).await;
    conversations_and_settings(&lite).await;
    schedules(&lite).await;
    let key = conversation();
    let pg = Store::connect(&postgres.new_database("copy"))
        .await
        .unwrap();
    let counts = lite.copy_into(&pg).await.unwrap();
    assert_eq!(counts.len(), TABLES.len());
    let rows = |table: &str| counts.iter().find(|(t, _)| *t == table).unwrap().1;
    assert_eq!((rows("transcript"), rows("schedules")), (2, 2));
    assert_eq!(
        lite.transcript(&key).await.unwrap(),
        pg.transcript(&key).await.unwrap()
    );
    assert_eq!(
        lite.schedule(1)
            .await
            .unwrap()
            .map(|s| (s.set.prompt, s.runs)),
        pg.schedule(1)
            .await
            .unwrap()
            .map(|s| (s.set.prompt, s.runs))
    );
    // New rows get IDs after the copied ones.
    let more = EventId::new("$later");
    for store in [&lite, &pg] {
        store
            .append_transcript(&key, line(Role::User, &more, "later"))
            .await
            .unwrap();
    }
    let lines = |entries: Vec<sidekicks::store::TranscriptEntry>| {
        (entries.into_iter())
            .map(|e| (e.role, e.body, e.event_id))
            .collect::<Vec<_>>()
    };
    let after = lines(pg.transcript(&key).await.unwrap());
    assert_eq!(lines(lite.transcript(&key).await.unwrap()), after);
    assert_eq!(after[2].1, "later");
    // Once the target holds state, a second copy is refused and writes nothing.
    let refused = lite.copy_into(&pg).await.unwrap_err().to_string();
    assert!(refused.contains("not empty"), "{refused}");
    assert_eq!(pg.transcript(&key).await.unwrap().len(), 3);
}

/// An installation moved with `sidekicks migrate` from its SQLite file to PostgreSQL goes on
/// where it was: the agent gets its session back and the transcript goes on.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn after_sidekicks_migrate_the_gateway_goes_on_from_postgres() {
    let postgres = Postgres::start().await;
    // `--sessions`: the demo agent keeps its conversations and can load them.
    let mut env =
        Env::start_with_demo_args(SynapseOptions::default(), "", &["--sessions", "s"]).await;
    let room = env.room_with_agent(false).await;
    env.prompt_and_wait(&room, "%say first answer", "first answer")
        .await;
    env.gw.stop();

    let sqlite = env.gw.dir.path().join("state/sidekicks.db");
    let url = postgres.new_database("moved");
    let out = std::process::Command::new(support::gateway::binary())
        .args(["migrate", "--from", &sqlite_url(&sqlite), "--to", &url])
        .output()
        .unwrap();
    let printed = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{printed}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        printed.contains("transcript: 2\nhandled_events:"),
        "{printed}"
    );
    // A second run finds the target holding state and refuses, saying so.
    let again = std::process::Command::new(support::gateway::binary())
        .args(["migrate", "--from", &sqlite_url(&sqlite), "--to", &url])
        .output()
        .unwrap();
    assert!(!again.status.success());
    assert!(String::from_utf8_lossy(&again.stderr).contains("not empty"));

    let config = std::fs::read_to_string(&env.gw.config).unwrap();
    std::fs::write(&env.gw.config, format!("store = {url:?}\n{config}")).unwrap();
    env.gw.start_again();
    env.alice.send(&room, "%history").await;
    let listing = env
        .reply_where(&room, "the agent's memory", |t| {
            t.contains("earlier prompts")
        })
        .await;
    assert_eq!(listing, "1 earlier prompts\n- %say first answer");
    let key = ConversationKey::new(RoomId::new(room.room_id().as_str()), AgentId::new("demo"));
    let moved = Store::connect(&url).await.unwrap();
    let bodies: Vec<String> = (moved.transcript(&key).await.unwrap().into_iter())
        .map(|e| e.body)
        .collect();
    assert_eq!(
        bodies,
        [
            "%say first answer",
            "first answer",
            "%history",
            listing.as_str()
        ]
    );
}

/// The database server going away for longer than a store call waits for a connection
/// (5 s: a fail-over, a host reboot) loses no message: the store call that meets the
/// outage waits for the database (so does everything behind it, the admission of the
/// message sent meanwhile among them), and the message is answered once the server is
/// back, once. The log says what waited.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_database_outage_loses_no_message() {
    let mut postgres = Postgres::start().await;
    let url = postgres.new_database("outage");
    let env = Env::start(SynapseOptions::default(), &format!("store = {url:?}")).await;
    let room = env.room_with_agent(false).await;
    env.prompt_and_wait(&room, "%say before", "before").await;
    postgres.stop();
    env.alice.send(&room, "%say during the outage").await;
    // Down until a store call has failed after its 5 s wait for a connection and waits
    // for the database: without the waiting, that call fails and the message is lost.
    support::wait_until(PATIENCE, "a store call waiting for the database", || {
        (env.gw.log().lines())
            .find(|l| l.contains("the state database cannot be reached"))
            .map(str::to_owned)
    })
    .await;
    postgres.start_again().await;
    env.reply_where(&room, "the answer to what was sent meanwhile", |t| {
        t == "during the outage"
    })
    .await;
    env.prompt_and_wait(&room, "%say after", "after").await;
    assert_eq!(
        env.texts_when_settled(&room).await,
        ["before", "during the outage", "after"]
    );
    assert!(
        env.gw.log().contains("the state database answers again"),
        "the end of the wait is logged"
    );
}
