//! Rows as the driver reads them, and its errors as the operator reads
//! them.

use tokio_postgres::Row;

use crate::agent::AgentRow;
use crate::conversation::MessageRow;
use crate::error::{Result, StoreError};
use crate::js_tool::JsToolRow;

/// The columns of a message row, in [`read_message`]'s order.
pub(super) const MESSAGE_COLUMNS: &str =
    "id, kind, content, tool_call_id, tool_name, tool_input, tool_status, created_ms";

/// A driver error as the operator reads it: the server's own message when it
/// sent one, else the error and its causes (never the connection string).
pub(super) fn postgres_error(error: tokio_postgres::Error) -> StoreError {
    let reason = match error.as_db_error() {
        Some(db) => format!("{}: {}", db.severity(), db.message()),
        None => {
            let mut reason = error.to_string();
            let mut source = std::error::Error::source(&error);
            while let Some(cause) = source {
                reason = format!("{reason}: {cause}");
                source = cause.source();
            }
            reason
        }
    };
    StoreError::Postgres { reason }
}

/// Reads one message row (the columns of [`MESSAGE_COLUMNS`] in order).
pub(super) fn read_message(row: &Row) -> Result<MessageRow> {
    let get = |error: tokio_postgres::Error| postgres_error(error);
    Ok(MessageRow {
        id: row.try_get(0).map_err(get)?,
        kind: row.try_get(1).map_err(get)?,
        content: row.try_get(2).map_err(get)?,
        tool_call_id: row.try_get(3).map_err(get)?,
        tool_name: row.try_get(4).map_err(get)?,
        tool_input: row.try_get(5).map_err(get)?,
        tool_status: row.try_get(6).map_err(get)?,
        created_ms: row.try_get(7).map_err(get)?,
    })
}

/// Reads one agent row (`id, name, prompts, tools`).
pub(super) fn read_agent(row: &Row) -> Result<AgentRow> {
    let get = |error: tokio_postgres::Error| postgres_error(error);
    Ok(AgentRow {
        id: row.try_get(0).map_err(get)?,
        name: row.try_get(1).map_err(get)?,
        prompts: row.try_get(2).map_err(get)?,
        tools: row.try_get(3).map_err(get)?,
    })
}

/// Reads one `js_tools` row (the columns of
/// [`JS_TOOL_COLUMNS`](crate::js_tool::JS_TOOL_COLUMNS) in order).
pub(super) fn read_js_tool_row(row: &Row) -> Result<JsToolRow> {
    let get = |error: tokio_postgres::Error| postgres_error(error);
    Ok(JsToolRow {
        owner: row.try_get(0).map_err(get)?,
        name: row.try_get(1).map_err(get)?,
        description: row.try_get(2).map_err(get)?,
        input_schema: row.try_get(3).map_err(get)?,
        function: row.try_get(4).map_err(get)?,
        source: row.try_get(5).map_err(get)?,
        created_ms: row.try_get(6).map_err(get)?,
        updated_ms: row.try_get(7).map_err(get)?,
    })
}
