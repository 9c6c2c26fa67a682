-- Schedules set from a room (`!every`, `!at`): what to ask which agent, when, for whom.
-- `next_run` is the due time of the next run (ms since the epoch), NULL once it will not
-- run again (a one-off that ran, a stopped or removed schedule). A schedule runs with the
-- rights of its owner: `stopped` says why it stopped when they lost them.
CREATE TABLE schedules (
    id              INTEGER PRIMARY KEY AUTOINCREMENT,
    room_id         TEXT    NOT NULL,
    agent_id        TEXT    NOT NULL,
    owner           TEXT    NOT NULL,
    kind            TEXT    NOT NULL CHECK (kind IN ('cron', 'every', 'once')),
    spec            TEXT    NOT NULL,  -- the cron pattern, the interval's seconds, the one-off's ms
    said            TEXT    NOT NULL,  -- when, as the person wrote it
    time_zone       TEXT    NOT NULL,
    prompt          TEXT    NOT NULL,
    thread_per_run  INTEGER NOT NULL,  -- 1: each run answers in a thread of its own
    skip_missed     INTEGER NOT NULL,  -- 1: a run due while the gateway was down is skipped
    set_at          INTEGER NOT NULL,
    next_run        INTEGER,
    runs            INTEGER NOT NULL DEFAULT 0,
    last_outcome    TEXT,
    stopped         TEXT,
    removed         INTEGER NOT NULL DEFAULT 0,
    source          TEXT               -- NULL: set in the room; `webhook:NAME`: a delivery
);
CREATE INDEX schedules_by_room ON schedules (room_id, id);
CREATE INDEX schedules_due ON schedules (next_run) WHERE next_run IS NOT NULL;

-- Each run of a schedule, taken once per due time (the key): a run is written, in the
-- transaction that moves the schedule's `next_run` on, before anything is posted; its
-- message (`event_id`, the prompt the agent answers) is posted under a transaction ID made
-- from the key, so a run cut by a crash is posted once and admitted once at the next start.
-- `outcome` is NULL while the run goes on.
CREATE TABLE schedule_runs (
    schedule_id  INTEGER NOT NULL REFERENCES schedules (id),
    due_at       INTEGER NOT NULL,
    number       INTEGER NOT NULL,
    event_id     TEXT,
    outcome      TEXT,
    taken_at     INTEGER NOT NULL,
    ended_at     INTEGER,
    PRIMARY KEY (schedule_id, due_at)
);
CREATE INDEX schedule_runs_open ON schedule_runs (schedule_id) WHERE outcome IS NULL;

-- The time zone of the times written in the room's `!every` and `!at`, as `!timezone` chose;
-- NULL follows the config (`schedules.time_zone`).
ALTER TABLE room_settings ADD COLUMN time_zone TEXT;

-- Webhook deliveries taken, keyed by the sender's delivery ID: a delivery is stored, as a
-- one-off schedule the scheduler runs, in the transaction that writes this row, and a
-- replay of its ID is refused.
CREATE TABLE webhook_deliveries (
    webhook      TEXT    NOT NULL,
    delivery_id  TEXT    NOT NULL,
    schedule_id  INTEGER NOT NULL REFERENCES schedules (id),
    received_at  INTEGER NOT NULL,
    PRIMARY KEY (webhook, delivery_id)
);

-- How many tool calls a turn's permission polls refused (a refusal, or nobody answering in
-- time), for the turns that had any: a scheduled run's summary says so.
CREATE TABLE turn_refusals (
    agent_id         TEXT    NOT NULL,
    prompt_event_id  TEXT    NOT NULL,
    refused          INTEGER NOT NULL,
    noted_at         INTEGER NOT NULL,
    PRIMARY KEY (agent_id, prompt_event_id)
);
