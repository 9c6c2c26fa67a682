-- Whether a running turn is itself the re-run of a prompt a crash had cut
-- (`continuity.rerun_interrupted`): such a turn is never run a third time.
ALTER TABLE unfinished_turns ADD COLUMN rerun INTEGER NOT NULL DEFAULT 0;
