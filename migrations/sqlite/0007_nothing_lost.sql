-- Every input admitted for a channel (a prompt, a chat command) and not yet settled, in the
-- order it was admitted. A row is written in the same transaction as the input's
-- `handled_events` row, and removed when the input is settled: a prompt when its turn
-- begins (in the same transaction as its `unfinished_turns` row), a command once it was
-- carried out. Rows found at start-up were admitted by a run that stopped before settling
-- them: prompts run in their order, commands are reported as not carried out. A `rerun`
-- is a prompt whose turn a crash cut, queued again (`continuity.rerun_interrupted`) in the
-- transaction that marked the cut turn; it goes before the others.
CREATE TABLE pending_inputs (
    id               INTEGER PRIMARY KEY AUTOINCREMENT,
    room_id          TEXT    NOT NULL,
    agent_id         TEXT    NOT NULL,
    event_id         TEXT    NOT NULL,  -- the message (or, for a hand-off, the answer handed on)
    kind             TEXT    NOT NULL CHECK (kind IN ('prompt', 'command', 'rerun')),
    sender           TEXT    NOT NULL,
    body             TEXT    NOT NULL,  -- as the agent gets it (addresses in front taken off)
    reply_to         TEXT,              -- the message it replies to, if any
    sent_at          INTEGER NOT NULL,  -- the message's server timestamp, ms since the epoch
    queued_reaction  TEXT,              -- the ⏳ reaction put on it, removed when its turn starts
    admitted_at      INTEGER NOT NULL,
    UNIQUE (event_id, agent_id)
);
CREATE INDEX pending_inputs_by_agent ON pending_inputs (agent_id, id);

-- The newest event of each room each agent has taken in: catching up on a gap in the
-- timeline (at every start, and when a sync is `limited`) pages back to it, and no further.
-- It moves on only once every event of a sync response was taken in, so a crash in between
-- is healed by the next start's catch-up.
CREATE TABLE room_positions (
    room_id     TEXT    NOT NULL,
    agent_id    TEXT    NOT NULL,
    event_id    TEXT    NOT NULL,
    event_ts    INTEGER NOT NULL,  -- its server timestamp, ms since the epoch
    updated_at  INTEGER NOT NULL,
    PRIMARY KEY (room_id, agent_id)
);

-- What a cut turn's messages should show, now also for a message whose send was asked for
-- but not confirmed: it is known by its transaction ID until its event ID is, so the next
-- start can send it again under the same ID (the homeserver answers with the event it
-- already has) and mark it.
CREATE TABLE unfinished_messages_v2 (
    id          INTEGER PRIMARY KEY AUTOINCREMENT,
    txn_id      TEXT,
    event_id    TEXT UNIQUE,
    room_id     TEXT    NOT NULL,
    agent_id    TEXT    NOT NULL,
    kind        TEXT    NOT NULL CHECK (kind IN ('reply', 'card')),
    body        TEXT    NOT NULL,
    html        TEXT,
    notice      INTEGER NOT NULL,
    CHECK (txn_id IS NOT NULL OR event_id IS NOT NULL)
);
INSERT INTO unfinished_messages_v2 (event_id, room_id, agent_id, kind, body, html, notice)
    SELECT event_id, room_id, agent_id, kind, body, html, notice FROM unfinished_messages
    ORDER BY rowid;
DROP TABLE unfinished_messages;
ALTER TABLE unfinished_messages_v2 RENAME TO unfinished_messages;
CREATE INDEX unfinished_messages_by_channel ON unfinished_messages (room_id, agent_id);
CREATE UNIQUE INDEX unfinished_messages_by_txn ON unfinished_messages (txn_id);

-- Retention: handled markers and transcripts are pruned by age.
CREATE INDEX handled_events_by_time ON handled_events (handled_at);
CREATE INDEX transcript_by_time ON transcript (created_at);
-- A prompt is looked up by its event (re-runs, recording a prompt only once).
CREATE INDEX transcript_by_event ON transcript (room_id, agent_id, event_id);

-- The outbox: the final content of messages (a reply, its cards) that could not be
-- delivered while the homeserver stayed away longer than a turn waits
-- (`streaming.outage_patience_secs`). Delivered in order once the homeserver is back, then
-- removed; an edit when the message exists, else a post under its transaction ID.
CREATE TABLE outbox (
    id          INTEGER PRIMARY KEY AUTOINCREMENT,
    room_id     TEXT    NOT NULL,
    agent_id    TEXT    NOT NULL,
    event_id    TEXT,
    txn_id      TEXT    NOT NULL,
    body        TEXT    NOT NULL,
    html        TEXT,
    notice      INTEGER NOT NULL,
    created_at  INTEGER NOT NULL
);
CREATE INDEX outbox_by_agent ON outbox (agent_id, id);
