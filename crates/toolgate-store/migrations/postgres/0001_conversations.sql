-- Conversations, their messages and agents: the SQLite schema (migrations/sqlite) in
-- PostgreSQL's types. Loaded tool groups are not stored: they are rebuilt from the
-- messages (toolgate-core's restore_active_set).
CREATE TABLE agents (
    id          TEXT PRIMARY KEY,
    name        TEXT NOT NULL,
    prompts     TEXT NOT NULL,  -- JSON object: prompt type -> text
    tools       TEXT NOT NULL,  -- JSON array of tool and group names
    updated_ms  BIGINT NOT NULL
);

CREATE TABLE conversations (
    id          TEXT PRIMARY KEY,
    created_ms  BIGINT NOT NULL,
    active_ms   BIGINT NOT NULL,
    agent_id    TEXT REFERENCES agents (id) ON DELETE SET NULL
);

CREATE INDEX conversations_active ON conversations (active_ms);

CREATE TABLE messages (
    id              BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    conversation_id TEXT NOT NULL REFERENCES conversations (id) ON DELETE CASCADE,
    kind            TEXT NOT NULL,
    content         TEXT NOT NULL,
    tool_call_id    TEXT,
    tool_name       TEXT,
    tool_input      TEXT,
    tool_status     TEXT,
    created_ms      BIGINT NOT NULL
);

-- The restore query (a conversation's messages in order) reads this index alone.
CREATE INDEX messages_conversation ON messages (conversation_id, id);
