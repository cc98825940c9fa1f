-- JavaScript tools agents write (the `js_tool_management` group), stored per
-- owner: an agent's id in `toolgate chat`, the configured owner in
-- `toolgate serve`. Owners are not agents, so there is no foreign key.
CREATE TABLE js_tools (
    owner         TEXT NOT NULL,
    name          TEXT NOT NULL,
    description   TEXT NOT NULL,
    input_schema  TEXT NOT NULL,  -- JSON object
    function      TEXT NOT NULL,
    source        TEXT NOT NULL,
    created_ms    BIGINT NOT NULL,
    updated_ms    BIGINT NOT NULL,
    PRIMARY KEY (owner, name)
);
