-- Permission polls waiting for an answer. A row lives from the moment the poll is posted
-- until it is settled; rows found at start-up belong to turns that died with the previous
-- run, and their polls are marked expired.
CREATE TABLE open_polls (
    event_id    TEXT    NOT NULL PRIMARY KEY,  -- the poll message
    room_id     TEXT    NOT NULL,
    agent_id    TEXT    NOT NULL,
    body        TEXT    NOT NULL,  -- the settled poll's text, shown if it must be expired
    html        TEXT,
    created_at  INTEGER NOT NULL   -- ms since the epoch
);

CREATE INDEX open_polls_by_agent ON open_polls (agent_id);

-- Per-room choices people made with chat commands.
CREATE TABLE room_settings (
    room_id     TEXT    NOT NULL PRIMARY KEY,
    verbosity   TEXT,              -- what `!show` chose: answer, tools or all
    updated_at  INTEGER NOT NULL
);
