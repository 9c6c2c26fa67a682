-- Whether a running turn is itself the re-run of a prompt a crash had cut
-- (`continuity.rerun_interrupted`): such a turn is never run a third time.
ALTER TABLE unfinished_turns ADD COLUMN rerun INTEGER NOT NULL DEFAULT 0;
-- The answer text of the running turn so far, so a turn cut by a crash still leaves what
-- the agent said in the transcript (marked as interrupted).
ALTER TABLE unfinished_turns ADD COLUMN reply_text TEXT NOT NULL DEFAULT '';
