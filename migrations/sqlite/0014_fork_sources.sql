-- A fork's conversation and the agent session it may start as a copy of (`session/fork`),
-- with where the source conversation's transcript stood at the fork: the session is forked
-- only while the source has not gone on since; else the fork's copied transcript is
-- re-injected.
CREATE TABLE fork_sources (
    room_id TEXT NOT NULL,
    agent_id TEXT NOT NULL,
    thread_id TEXT NOT NULL,
    from_thread_id TEXT NOT NULL,
    session_id TEXT NOT NULL,
    transcript_at INTEGER NOT NULL,
    PRIMARY KEY (room_id, agent_id, thread_id)
);
