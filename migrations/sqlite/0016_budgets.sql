-- What each turn spent, as its agent reported it (`docs/budgets.md`): `amount` in the
-- unit's smallest part (a currency's millionths; `unit` is its code), or 0 with a NULL
-- unit when the agent reported no cost. `session_total` is the session's cost the agent
-- last reported (ACP reports it cumulative), so the next turn of that session counts only
-- what it added. `tokens`: the turn's tokens, when its result counted them.
CREATE TABLE spend (
    id               INTEGER PRIMARY KEY AUTOINCREMENT,
    room_id          TEXT    NOT NULL,
    sender           TEXT    NOT NULL,
    agent_id         TEXT    NOT NULL,
    session_id       TEXT    NOT NULL,
    prompt_event_id  TEXT    NOT NULL,
    unit             TEXT,
    amount           INTEGER NOT NULL,
    session_total    INTEGER NOT NULL,
    tokens           INTEGER NOT NULL,
    spent_at         INTEGER NOT NULL
);
CREATE INDEX spend_by_room ON spend (room_id, spent_at);
CREATE INDEX spend_by_session ON spend (agent_id, session_id, id);

-- Limits an admin set in a room with `!budget`, over the config's (`[budgets]`).
CREATE TABLE budget_limits (
    room_id  TEXT    NOT NULL,
    scope    TEXT    NOT NULL CHECK (scope IN ('room', 'person')),
    period   TEXT    NOT NULL CHECK (period IN ('day', 'month')),
    unit     TEXT    NOT NULL,
    amount   INTEGER NOT NULL,
    set_by   TEXT    NOT NULL,
    set_at   INTEGER NOT NULL,
    PRIMARY KEY (room_id, scope, period, unit)
);
