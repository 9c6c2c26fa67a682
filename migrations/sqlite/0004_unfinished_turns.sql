-- The turn each (room, agent) is running, from its start to its end. A row found at start-up
-- belongs to a turn the previous run did not finish (a crash): its messages are marked.
CREATE TABLE unfinished_turns (
    room_id          TEXT    NOT NULL,
    agent_id         TEXT    NOT NULL,
    prompt_event_id  TEXT    NOT NULL,
    started_at       INTEGER NOT NULL,
    PRIMARY KEY (room_id, agent_id)
);

-- For every message a running turn has posted (its reply, its tool cards): what it should
-- show if the turn is cut.
CREATE TABLE unfinished_messages (
    event_id    TEXT    NOT NULL PRIMARY KEY,
    room_id     TEXT    NOT NULL,
    agent_id    TEXT    NOT NULL,
    kind        TEXT    NOT NULL CHECK (kind IN ('reply', 'card')),
    body        TEXT    NOT NULL,
    html        TEXT,
    notice      INTEGER NOT NULL
);
CREATE INDEX unfinished_messages_by_channel ON unfinished_messages (room_id, agent_id);
