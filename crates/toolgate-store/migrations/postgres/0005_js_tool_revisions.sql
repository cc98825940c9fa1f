-- The revision of each owner's JavaScript tools: raised in the transaction of
-- every create, update and delete of one of them, so a process sharing the
-- database tells with one read by key that another changed them. An owner
-- without a row is at revision 0.
CREATE TABLE js_tool_revisions (
    owner     TEXT PRIMARY KEY,
    revision  BIGINT NOT NULL
);
