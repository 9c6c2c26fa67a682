-- Routing choices for rooms with several agents, made with chat commands.
-- `default_agent`: the agent that messages addressed to nobody go to (`!default`).
-- `handoff`: whether an agent's answer that addresses another agent is handed to it
-- (`!handoff`); NULL follows the config (`rooms.handoff`).
ALTER TABLE room_settings ADD COLUMN default_agent TEXT;
ALTER TABLE room_settings ADD COLUMN handoff INTEGER;
