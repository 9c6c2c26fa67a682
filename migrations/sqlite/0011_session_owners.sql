-- Which conversation each ACP session the gateway opened or attached belongs to, kept after
-- the conversation moves on (`!new`): in a workspace several rooms share, one room's
-- `!sessions` and `!attach` never reach another room's conversation. The first owner keeps it.
CREATE TABLE session_owners (
    agent_id    TEXT    NOT NULL,
    session_id  TEXT    NOT NULL,
    room_id     TEXT    NOT NULL,
    thread_id   TEXT    NOT NULL DEFAULT '',
    claimed_at  INTEGER NOT NULL,  -- ms since the epoch
    PRIMARY KEY (agent_id, session_id)
);
INSERT OR IGNORE INTO session_owners (agent_id, session_id, room_id, thread_id, claimed_at)
    SELECT agent_id, session_id, room_id, thread_id, created_at FROM sessions;
