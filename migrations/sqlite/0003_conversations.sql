-- How each session got its conversation back: `new` (nothing earlier), `reinjected` (the
-- earlier transcript was sent with its first prompt) or `loaded` (`session/load`).
ALTER TABLE sessions ADD COLUMN continuity TEXT NOT NULL DEFAULT 'new';

-- Where the conversation of each (room, agent) starts in the transcript: set by a person
-- asking for a fresh start, so nothing before it is re-injected again.
CREATE TABLE conversation_starts (
    room_id     TEXT    NOT NULL,
    agent_id    TEXT    NOT NULL,
    after_id    INTEGER NOT NULL,  -- transcript.id of the last entry left behind
    started_at  INTEGER NOT NULL,
    PRIMARY KEY (room_id, agent_id)
);
