-- What a message written while the agent works does in a room, as `!queue` chose (`queue`,
-- `steer`, `interrupt`); NULL follows the config (`queue.mode`).
ALTER TABLE room_settings ADD COLUMN queue_mode TEXT;
