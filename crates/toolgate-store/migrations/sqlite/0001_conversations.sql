-- Conversations and their messages. Loaded tool groups are not stored: they are
-- rebuilt from the messages (toolgate-core's restore_active_set).
CREATE TABLE conversations (
    id          TEXT PRIMARY KEY NOT NULL,
    created_ms  INTEGER NOT NULL,
    active_ms   INTEGER NOT NULL
);

CREATE INDEX conversations_active ON conversations (active_ms);

CREATE TABLE messages (
    id              INTEGER PRIMARY KEY AUTOINCREMENT,
    conversation_id TEXT NOT NULL REFERENCES conversations (id) ON DELETE CASCADE,
    kind            TEXT NOT NULL,
    content         TEXT NOT NULL,
    tool_call_id    TEXT,
    tool_name       TEXT,
    tool_input      TEXT,
    tool_status     TEXT,
    created_ms      INTEGER NOT NULL
);

CREATE INDEX messages_conversation ON messages (conversation_id, id);
