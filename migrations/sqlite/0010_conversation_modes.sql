-- The mode each conversation keeps across its sessions and restarts: the last one accepted
-- (an asking mode, or one an admin chose), put back whenever a session is opened, loaded,
-- resumed or attached. A fresh start (`!new`) forgets it.
CREATE TABLE conversation_modes (
    room_id    TEXT    NOT NULL,
    agent_id   TEXT    NOT NULL,
    thread_id  TEXT    NOT NULL DEFAULT '',
    mode       TEXT    NOT NULL,
    by_admin   INTEGER NOT NULL,  -- 1: an admin chose it (a mode that acts without asking may stay)
    set_at     INTEGER NOT NULL,  -- ms since the epoch
    PRIMARY KEY (room_id, agent_id, thread_id)
);
