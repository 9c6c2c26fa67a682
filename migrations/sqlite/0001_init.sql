-- The ACP session of each (room, agent). A session ID is only valid while the agent
-- process that created it runs; it is kept for `session/load` and for the record.
CREATE TABLE sessions (
    room_id     TEXT    NOT NULL,
    agent_id    TEXT    NOT NULL,
    session_id  TEXT    NOT NULL,
    created_at  INTEGER NOT NULL,  -- ms since the epoch
    PRIMARY KEY (room_id, agent_id)
);

-- Every prompt and every final reply, in order.
CREATE TABLE transcript (
    id           INTEGER PRIMARY KEY AUTOINCREMENT,
    room_id      TEXT    NOT NULL,
    agent_id     TEXT    NOT NULL,
    role         TEXT    NOT NULL CHECK (role IN ('user', 'agent')),
    sender       TEXT    NOT NULL,   -- Matrix user ID of the author
    event_id     TEXT,               -- the prompt's event, or the reply's first message
    body         TEXT    NOT NULL,
    stop_reason  TEXT,               -- for replies: end_turn, cancelled, error, ...
    created_at   INTEGER NOT NULL
);
CREATE INDEX transcript_by_channel ON transcript (room_id, agent_id, id);

-- Matrix events already taken in by an agent, so none is prompted twice.
CREATE TABLE handled_events (
    event_id    TEXT    NOT NULL,
    agent_id    TEXT    NOT NULL,
    room_id     TEXT    NOT NULL,
    handled_at  INTEGER NOT NULL,
    PRIMARY KEY (event_id, agent_id)
);

-- When each agent was first invited into (or first saw) each room: messages older than
-- this are history, never prompts.
CREATE TABLE room_members (
    room_id     TEXT    NOT NULL,
    agent_id    TEXT    NOT NULL,
    since       INTEGER NOT NULL,
    PRIMARY KEY (room_id, agent_id)
);
