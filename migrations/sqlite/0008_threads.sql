-- Threads: a message in a thread belongs to a conversation of its own, with its own session,
-- transcript, fresh starts, running turn and queue. Every table kept per conversation gains
-- `thread_id`: the thread's root event, '' for the room's main timeline (so rows written
-- before threads existed stay the room's conversation). Where (room, agent) was the key,
-- (room, agent, thread) becomes it.

CREATE TABLE sessions_v2 (
    room_id     TEXT    NOT NULL,
    agent_id    TEXT    NOT NULL,
    thread_id   TEXT    NOT NULL DEFAULT '',
    session_id  TEXT    NOT NULL,
    created_at  INTEGER NOT NULL,  -- ms since the epoch
    continuity  TEXT    NOT NULL DEFAULT 'new',
    PRIMARY KEY (room_id, agent_id, thread_id)
);
INSERT INTO sessions_v2 (room_id, agent_id, session_id, created_at, continuity)
    SELECT room_id, agent_id, session_id, created_at, continuity FROM sessions;
DROP TABLE sessions;
ALTER TABLE sessions_v2 RENAME TO sessions;

CREATE TABLE conversation_starts_v2 (
    room_id     TEXT    NOT NULL,
    agent_id    TEXT    NOT NULL,
    thread_id   TEXT    NOT NULL DEFAULT '',
    after_id    INTEGER NOT NULL,  -- transcript.id of the last entry left behind
    started_at  INTEGER NOT NULL,
    PRIMARY KEY (room_id, agent_id, thread_id)
);
INSERT INTO conversation_starts_v2 (room_id, agent_id, after_id, started_at)
    SELECT room_id, agent_id, after_id, started_at FROM conversation_starts;
DROP TABLE conversation_starts;
ALTER TABLE conversation_starts_v2 RENAME TO conversation_starts;

CREATE TABLE unfinished_turns_v2 (
    room_id          TEXT    NOT NULL,
    agent_id         TEXT    NOT NULL,
    thread_id        TEXT    NOT NULL DEFAULT '',
    prompt_event_id  TEXT    NOT NULL,
    started_at       INTEGER NOT NULL,
    rerun            INTEGER NOT NULL DEFAULT 0,
    reply_text       TEXT    NOT NULL DEFAULT '',
    PRIMARY KEY (room_id, agent_id, thread_id)
);
INSERT INTO unfinished_turns_v2 (room_id, agent_id, prompt_event_id, started_at, rerun, reply_text)
    SELECT room_id, agent_id, prompt_event_id, started_at, rerun, reply_text FROM unfinished_turns;
DROP TABLE unfinished_turns;
ALTER TABLE unfinished_turns_v2 RENAME TO unfinished_turns;

ALTER TABLE transcript ADD COLUMN thread_id TEXT NOT NULL DEFAULT '';
DROP INDEX transcript_by_channel;
CREATE INDEX transcript_by_channel ON transcript (room_id, agent_id, thread_id, id);
DROP INDEX transcript_by_event;
CREATE INDEX transcript_by_event ON transcript (room_id, agent_id, thread_id, event_id);

ALTER TABLE unfinished_messages ADD COLUMN thread_id TEXT NOT NULL DEFAULT '';
DROP INDEX unfinished_messages_by_channel;
CREATE INDEX unfinished_messages_by_channel ON unfinished_messages (room_id, agent_id, thread_id);

ALTER TABLE pending_inputs ADD COLUMN thread_id TEXT NOT NULL DEFAULT '';
ALTER TABLE outbox ADD COLUMN thread_id TEXT NOT NULL DEFAULT '';

-- How the room's threads map onto conversations, as `!threads` chose (`separate`, `new`,
-- `one`); NULL follows the config (`rooms.threads`).
ALTER TABLE room_settings ADD COLUMN threads TEXT;
