-- Agents (a name, prompts and enabled tools) stored with the conversations
-- that use them, so a prompt an agent edits survives a restart.
CREATE TABLE agents (
    id          TEXT PRIMARY KEY NOT NULL,
    name        TEXT NOT NULL,
    prompts     TEXT NOT NULL,  -- JSON object: prompt type -> text
    tools       TEXT NOT NULL,  -- JSON array of tool and group names
    updated_ms  INTEGER NOT NULL
);

ALTER TABLE conversations ADD COLUMN agent_id TEXT REFERENCES agents (id) ON DELETE SET NULL;
