-- What a message written while the agent works does in a room, as `!queue` chose (`queue`,
-- `steer`, `interrupt`); NULL follows the config (`queue.mode`).
ALTER TABLE room_settings ADD COLUMN queue_mode TEXT;

-- Whether the agents mark people's messages with status reactions (👀, ✅, ❌, 🛑), as
-- `!reactions` chose (1 or 0); NULL follows the config (`display.status_reactions`).
ALTER TABLE room_settings ADD COLUMN status_reactions INTEGER;
