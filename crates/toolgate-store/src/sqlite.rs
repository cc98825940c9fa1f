//! [`SqliteStore`]: the embedded default backend.
//!
//! One connection behind a mutex, used from tokio's blocking pool so that no
//! query runs on an async worker thread. WAL mode lets readers in other
//! processes (`toolgate` commands inspecting the same file) proceed while a
//! gateway writes. Migrations are numbered SQL files applied in order and
//! tracked in `PRAGMA user_version`; a file written by a newer toolgate is
//! refused rather than misread.

use std::path::Path;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, SystemTime};

use rusqlite::{
    Connection, ErrorCode, OpenFlags, OptionalExtension, Row, Transaction, TransactionBehavior,
    params,
};
use serde_json::Value;
use toolgate_core::{Message, MessageKind, ToolName, ToolStatus};

use crate::agent::{AgentRecord, AgentRow, AgentStore, StoreFuture};
use crate::conversation::{MessageRow, StoredMessage, now_millis, to_millis};
use crate::error::{Result, StoreError};
use crate::id::{AgentId, ConversationId, MessageId};
use crate::js_tool::{JS_TOOL_COLUMNS, JsToolRecord, JsToolRow, JsToolStore, ToolOwner};
use crate::routing_outcome::{
    KEPT_ROUTING_OUTCOMES, RoutingOutcome, RoutingOutcomeStore, sql_count,
};
use crate::store::ConversationStore;

/// The migrations, in order; the schema version is their count.
const MIGRATIONS: &[&str] = &[
    include_str!("../migrations/sqlite/0001_conversations.sql"),
    include_str!("../migrations/sqlite/0002_agents.sql"),
    include_str!("../migrations/sqlite/0003_js_tools.sql"),
    include_str!("../migrations/sqlite/0004_routing_outcomes.sql"),
    include_str!("../migrations/sqlite/0005_routing_outcome_misses.sql"),
    include_str!("../migrations/sqlite/0006_js_tool_revisions.sql"),
];

/// Conversations in a SQLite database file.
#[derive(Debug, Clone)]
pub struct SqliteStore {
    connection: Arc<Mutex<Connection>>,
}

impl SqliteStore {
    /// Opens the database at `path` and migrates it; a path where nothing
    /// exists gets a new database. An existing file is read before anything
    /// is written to it: an empty one ([`StoreError::EmptyFile`]) or one
    /// that is not a database ([`StoreError::NotADatabase`]) is refused and
    /// left as it is.
    pub fn open(path: impl AsRef<Path>) -> Result<Self> {
        let path = path.as_ref();
        match std::fs::metadata(path) {
            Ok(meta) if meta.is_file() && meta.len() == 0 => {
                return Err(StoreError::EmptyFile {
                    path: path.to_path_buf(),
                });
            }
            Ok(_) => {}
            // Nothing there: a new database. (Should something be there
            // that cannot be looked at, SQLite says what is wrong.)
            Err(_) => return Self::from_connection(Connection::open(path)?),
        }
        // Without SQLITE_OPEN_CREATE: the file is used as it is or not at all.
        let flags = OpenFlags::SQLITE_OPEN_READ_WRITE
            | OpenFlags::SQLITE_OPEN_URI
            | OpenFlags::SQLITE_OPEN_NO_MUTEX;
        let connection = Connection::open_with_flags(path, flags)?;
        check_is_database(&connection, path)?;
        Self::from_connection(connection)
    }

    /// A private in-memory database, for tests.
    pub fn open_in_memory() -> Result<Self> {
        Self::from_connection(Connection::open_in_memory()?)
    }

    fn from_connection(mut connection: Connection) -> Result<Self> {
        connection.busy_timeout(Duration::from_secs(5))?;
        // journal_mode answers with a row, so it is read rather than executed.
        let _mode: String =
            connection.query_row("PRAGMA journal_mode = WAL", [], |row| row.get(0))?;
        connection.execute_batch("PRAGMA foreign_keys = ON; PRAGMA synchronous = NORMAL;")?;
        migrate(&mut connection)?;
        Ok(Self {
            connection: Arc::new(Mutex::new(connection)),
        })
    }

    /// The schema version of the open database.
    pub fn schema_version(&self) -> Result<i64> {
        let connection = self
            .connection
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        Ok(connection.query_row("PRAGMA user_version", [], |row| row.get(0))?)
    }

    /// Moves the write-ahead log into the database file, so the file alone
    /// holds everything (at shutdown, say).
    pub async fn checkpoint(&self) -> Result<()> {
        self.with_connection(|connection| {
            // The pragma answers with a row: (busy, log frames, checkpointed).
            let _: (i64, i64, i64) =
                connection.query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |row| {
                    Ok((row.get(0)?, row.get(1)?, row.get(2)?))
                })?;
            Ok(())
        })
        .await
    }

    /// Runs `work` on the connection in the blocking pool.
    async fn with_connection<T, F>(&self, work: F) -> Result<T>
    where
        T: Send + 'static,
        F: FnOnce(&mut Connection) -> Result<T> + Send + 'static,
    {
        let connection = Arc::clone(&self.connection);
        tokio::task::spawn_blocking(move || {
            let mut connection = connection.lock().unwrap_or_else(PoisonError::into_inner);
            work(&mut connection)
        })
        .await?
    }
}

/// Reads `connection`'s schema, which SQLite refuses when the file is not a
/// database, before anything is written to it.
fn check_is_database(connection: &Connection, path: &Path) -> Result<()> {
    let read: rusqlite::Result<i64> =
        connection.query_row("SELECT count(*) FROM sqlite_schema", [], |row| row.get(0));
    match read {
        Ok(_) => Ok(()),
        Err(rusqlite::Error::SqliteFailure(failure, message))
            if matches!(
                failure.code,
                ErrorCode::NotADatabase | ErrorCode::DatabaseCorrupt
            ) =>
        {
            Err(StoreError::NotADatabase {
                path: path.to_path_buf(),
                reason: message.unwrap_or_else(|| failure.to_string()),
            })
        }
        Err(error) => Err(error.into()),
    }
}

fn migrate(connection: &mut Connection) -> Result<()> {
    let version: i64 = connection.query_row("PRAGMA user_version", [], |row| row.get(0))?;
    let supported = MIGRATIONS.len() as i64;
    if version > supported {
        return Err(StoreError::SchemaTooNew {
            found: version,
            supported,
        });
    }
    for (index, sql) in MIGRATIONS.iter().enumerate().skip(version as usize) {
        let transaction = connection.transaction()?;
        transaction.execute_batch(sql)?;
        transaction.pragma_update(None, "user_version", index as i64 + 1)?;
        transaction.commit()?;
    }
    Ok(())
}

/// Reads one message row (`id, kind, content, tool_call_id, tool_name,
/// tool_input, tool_status, created_ms`).
fn read_message(row: &Row<'_>) -> rusqlite::Result<MessageRow> {
    Ok(MessageRow {
        id: row.get(0)?,
        kind: row.get(1)?,
        content: row.get(2)?,
        tool_call_id: row.get(3)?,
        tool_name: row.get(4)?,
        tool_input: row.get(5)?,
        tool_status: row.get(6)?,
        created_ms: row.get(7)?,
    })
}

/// Inserts `message` (and the conversation, if new) in `transaction`.
fn insert_message(
    transaction: &Transaction<'_>,
    conversation: &ConversationId,
    message: &Message,
) -> Result<MessageId> {
    let now = to_millis(now_millis());
    transaction.execute(
        "INSERT INTO conversations (id, created_ms, active_ms) VALUES (?1, ?2, ?2)
         ON CONFLICT (id) DO UPDATE SET active_ms = excluded.active_ms",
        params![conversation.as_str(), now],
    )?;
    transaction.execute(
        "INSERT INTO messages (conversation_id, kind, content, tool_call_id, tool_name,
                               tool_input, tool_status, created_ms)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
        params![
            conversation.as_str(),
            message.kind.as_str(),
            message.content,
            message.tool_call_id,
            message.tool_name,
            message.tool_input,
            message.tool_status.map(ToolStatus::as_str),
            now,
        ],
    )?;
    Ok(MessageId(transaction.last_insert_rowid()))
}

impl ConversationStore for SqliteStore {
    async fn append(&self, conversation: &ConversationId, message: Message) -> Result<MessageId> {
        let conversation = conversation.clone();
        self.with_connection(move |connection| {
            let transaction = connection.transaction()?;
            let id = insert_message(&transaction, &conversation, &message)?;
            transaction.commit()?;
            Ok(id)
        })
        .await
    }

    async fn append_after(
        &self,
        conversation: &ConversationId,
        last: Option<MessageId>,
        message: Message,
    ) -> Result<Option<MessageId>> {
        let conversation = conversation.clone();
        self.with_connection(move |connection| {
            // Immediate: the write lock is taken before the check, so no
            // other process appends between the check and the insert.
            let transaction =
                connection.transaction_with_behavior(TransactionBehavior::Immediate)?;
            let latest: Option<i64> = transaction.query_row(
                "SELECT max(id) FROM messages WHERE conversation_id = ?1",
                [conversation.as_str()],
                |row| row.get(0),
            )?;
            if latest.map(MessageId) != last {
                return Ok(None);
            }
            let id = insert_message(&transaction, &conversation, &message)?;
            transaction.commit()?;
            Ok(Some(id))
        })
        .await
    }

    async fn messages(&self, conversation: &ConversationId) -> Result<Vec<StoredMessage>> {
        let conversation = conversation.clone();
        self.with_connection(move |connection| {
            let mut statement = connection.prepare_cached(
                "SELECT id, kind, content, tool_call_id, tool_name, tool_input, tool_status, created_ms
                 FROM messages WHERE conversation_id = ?1 ORDER BY id",
            )?;
            let rows = statement
                .query_map([conversation.as_str()], read_message)?
                .collect::<rusqlite::Result<Vec<_>>>()?;
            rows.into_iter().map(MessageRow::decode).collect()
        })
        .await
    }

    async fn set_tool_status(
        &self,
        conversation: &ConversationId,
        tool_call_id: &str,
        status: ToolStatus,
    ) -> Result<bool> {
        let conversation = conversation.clone();
        let tool_call_id = tool_call_id.to_owned();
        self.with_connection(move |connection| {
            let id: Option<i64> = connection
                .query_row(
                    "SELECT id FROM messages
                     WHERE conversation_id = ?1 AND kind = ?2 AND tool_call_id = ?3
                     ORDER BY id DESC LIMIT 1",
                    params![
                        conversation.as_str(),
                        MessageKind::ToolCall.as_str(),
                        tool_call_id
                    ],
                    |row| row.get(0),
                )
                .optional()?;
            let Some(id) = id else { return Ok(false) };
            connection.execute(
                "UPDATE messages SET tool_status = ?1 WHERE id = ?2",
                params![status.as_str(), id],
            )?;
            Ok(true)
        })
        .await
    }

    async fn touch(&self, conversation: &ConversationId) -> Result<bool> {
        let conversation = conversation.clone();
        self.with_connection(move |connection| {
            let changed = connection.execute(
                "UPDATE conversations SET active_ms = ?2 WHERE id = ?1",
                params![conversation.as_str(), to_millis(now_millis())],
            )?;
            Ok(changed == 1)
        })
        .await
    }

    async fn last_message_id(&self, conversation: &ConversationId) -> Result<Option<MessageId>> {
        let conversation = conversation.clone();
        self.with_connection(move |connection| {
            let id: Option<i64> = connection.query_row(
                "SELECT max(id) FROM messages WHERE conversation_id = ?1",
                [conversation.as_str()],
                |row| row.get(0),
            )?;
            Ok(id.map(MessageId))
        })
        .await
    }

    async fn exists(&self, conversation: &ConversationId) -> Result<bool> {
        let conversation = conversation.clone();
        self.with_connection(move |connection| {
            let found = connection
                .query_row(
                    "SELECT 1 FROM conversations WHERE id = ?1",
                    [conversation.as_str()],
                    |_| Ok(()),
                )
                .optional()?;
            Ok(found.is_some())
        })
        .await
    }

    async fn delete(&self, conversation: &ConversationId) -> Result<bool> {
        let conversation = conversation.clone();
        self.with_connection(move |connection| {
            let deleted = connection.execute(
                "DELETE FROM conversations WHERE id = ?1",
                [conversation.as_str()],
            )?;
            Ok(deleted > 0)
        })
        .await
    }

    async fn expire_idle(&self, cutoff: SystemTime) -> Result<usize> {
        let cutoff = to_millis(cutoff);
        self.with_connection(move |connection| {
            Ok(connection.execute("DELETE FROM conversations WHERE active_ms < ?1", [cutoff])?)
        })
        .await
    }
}

#[cfg(test)]
#[path = "sqlite_tests.rs"]
mod tests;

impl AgentStore for SqliteStore {
    fn agent<'a>(&'a self, id: &'a AgentId) -> StoreFuture<'a, Option<AgentRecord>> {
        let id = id.as_str().to_owned();
        Box::pin(self.with_connection(move |connection| {
            let row = connection
                .query_row(
                    "SELECT id, name, prompts, tools FROM agents WHERE id = ?1",
                    [id.as_str()],
                    read_agent,
                )
                .optional()?;
            row.map(AgentRow::decode).transpose()
        }))
    }

    fn save_agent(&self, agent: AgentRecord) -> StoreFuture<'_, ()> {
        Box::pin(self.with_connection(move |connection| {
            let prompts = serde_json::to_string(&agent.prompts).unwrap_or_else(|_| "{}".into());
            let tools = serde_json::to_string(&agent.tools).unwrap_or_else(|_| "[]".into());
            connection.execute(
                "INSERT INTO agents (id, name, prompts, tools, updated_ms) VALUES (?1, ?2, ?3, ?4, ?5)
                 ON CONFLICT (id) DO UPDATE SET name = excluded.name, prompts = excluded.prompts,
                     tools = excluded.tools, updated_ms = excluded.updated_ms",
                params![agent.id.as_str(), agent.name, prompts, tools, to_millis(now_millis())],
            )?;
            Ok(())
        }))
    }

    fn agents(&self) -> StoreFuture<'_, Vec<AgentRecord>> {
        Box::pin(self.with_connection(move |connection| {
            let mut statement = connection
                .prepare_cached("SELECT id, name, prompts, tools FROM agents ORDER BY id")?;
            let rows = statement
                .query_map([], read_agent)?
                .collect::<rusqlite::Result<Vec<_>>>()?;
            rows.into_iter().map(AgentRow::decode).collect()
        }))
    }

    fn set_conversation_agent<'a>(
        &'a self,
        conversation: &'a ConversationId,
        agent: &'a AgentId,
    ) -> StoreFuture<'a, ()> {
        let conversation = conversation.clone();
        let agent = agent.clone();
        Box::pin(self.with_connection(move |connection| {
            let transaction = connection.transaction()?;
            let known = transaction
                .query_row("SELECT 1 FROM agents WHERE id = ?1", [agent.as_str()], |_| Ok(()))
                .optional()?
                .is_some();
            if !known {
                return Err(StoreError::UnknownAgent(agent));
            }
            let now = to_millis(now_millis());
            transaction.execute(
                "INSERT INTO conversations (id, created_ms, active_ms, agent_id) VALUES (?1, ?2, ?2, ?3)
                 ON CONFLICT (id) DO UPDATE SET agent_id = excluded.agent_id",
                params![conversation.as_str(), now, agent.as_str()],
            )?;
            transaction.commit()?;
            Ok(())
        }))
    }

    fn conversation_agent<'a>(
        &'a self,
        conversation: &'a ConversationId,
    ) -> StoreFuture<'a, Option<AgentId>> {
        let conversation = conversation.clone();
        Box::pin(self.with_connection(move |connection| {
            let agent: Option<Option<String>> = connection
                .query_row(
                    "SELECT agent_id FROM conversations WHERE id = ?1",
                    [conversation.as_str()],
                    |row| row.get(0),
                )
                .optional()?;
            Ok(agent.flatten().map(AgentId::new))
        }))
    }
}

/// Reads one agent row (`id, name, prompts, tools`).
fn read_agent(row: &Row<'_>) -> rusqlite::Result<AgentRow> {
    Ok(AgentRow {
        id: row.get(0)?,
        name: row.get(1)?,
        prompts: row.get(2)?,
        tools: row.get(3)?,
    })
}

impl JsToolStore for SqliteStore {
    fn js_tools<'a>(&'a self, owner: &'a ToolOwner) -> StoreFuture<'a, Vec<JsToolRecord>> {
        let owner = owner.clone();
        Box::pin(self.with_connection(move |connection| {
            let mut statement = connection.prepare_cached(&format!(
                "SELECT {JS_TOOL_COLUMNS} FROM js_tools WHERE owner = ?1 ORDER BY name"
            ))?;
            let rows = statement
                .query_map([owner.as_str()], read_js_tool_row)?
                .collect::<rusqlite::Result<Vec<_>>>()?;
            rows.into_iter().map(JsToolRow::decode).collect()
        }))
    }

    fn js_tool<'a>(
        &'a self,
        owner: &'a ToolOwner,
        name: &'a ToolName,
    ) -> StoreFuture<'a, Option<JsToolRecord>> {
        let (owner, name) = (owner.clone(), name.clone());
        Box::pin(self.with_connection(move |connection| read_js_tool(connection, &owner, &name)))
    }

    fn js_tools_revision<'a>(&'a self, owner: &'a ToolOwner) -> StoreFuture<'a, u64> {
        let owner = owner.clone();
        Box::pin(self.with_connection(move |connection| {
            let revision: Option<i64> = connection
                .prepare_cached("SELECT revision FROM js_tool_revisions WHERE owner = ?1")?
                .query_row([owner.as_str()], |row| row.get(0))
                .optional()?;
            Ok(revision.map_or(0, |revision| revision as u64))
        }))
    }

    fn create_js_tool(&self, tool: JsToolRecord) -> StoreFuture<'_, Option<JsToolRecord>> {
        Box::pin(self.with_connection(move |connection| {
            let schema = Value::Object(tool.input_schema.clone()).to_string();
            let transaction = connection.transaction()?;
            let inserted = transaction.execute(
                "INSERT INTO js_tools (owner, name, description, input_schema, function, source,
                                       created_ms, updated_ms)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?7)
                 ON CONFLICT (owner, name) DO NOTHING",
                params![
                    tool.owner.as_str(),
                    tool.name.as_str(),
                    tool.description,
                    schema,
                    tool.function,
                    tool.source,
                    to_millis(now_millis()),
                ],
            )?;
            if inserted == 0 {
                return Ok(None);
            }
            raise_js_tools_revision(&transaction, &tool.owner)?;
            let created = read_js_tool(&transaction, &tool.owner, &tool.name)?;
            transaction.commit()?;
            Ok(created)
        }))
    }

    fn update_js_tool(&self, tool: JsToolRecord) -> StoreFuture<'_, Option<JsToolRecord>> {
        Box::pin(self.with_connection(move |connection| {
            let schema = Value::Object(tool.input_schema.clone()).to_string();
            let transaction = connection.transaction()?;
            let updated = transaction.execute(
                "UPDATE js_tools SET description = ?3, input_schema = ?4, function = ?5,
                                     source = ?6, updated_ms = ?7
                 WHERE owner = ?1 AND name = ?2",
                params![
                    tool.owner.as_str(),
                    tool.name.as_str(),
                    tool.description,
                    schema,
                    tool.function,
                    tool.source,
                    to_millis(now_millis()),
                ],
            )?;
            if updated == 0 {
                return Ok(None);
            }
            raise_js_tools_revision(&transaction, &tool.owner)?;
            let updated = read_js_tool(&transaction, &tool.owner, &tool.name)?;
            transaction.commit()?;
            Ok(updated)
        }))
    }

    fn delete_js_tool<'a>(
        &'a self,
        owner: &'a ToolOwner,
        name: &'a ToolName,
    ) -> StoreFuture<'a, bool> {
        let (owner, name) = (owner.clone(), name.clone());
        Box::pin(self.with_connection(move |connection| {
            let transaction = connection.transaction()?;
            let deleted = transaction.execute(
                "DELETE FROM js_tools WHERE owner = ?1 AND name = ?2",
                params![owner.as_str(), name.as_str()],
            )?;
            if deleted > 0 {
                raise_js_tools_revision(&transaction, &owner)?;
            }
            transaction.commit()?;
            Ok(deleted > 0)
        }))
    }
}

/// Raises the revision of `owner`'s tools, in the transaction that changes
/// them.
fn raise_js_tools_revision(transaction: &Transaction<'_>, owner: &ToolOwner) -> Result<()> {
    transaction.execute(
        "INSERT INTO js_tool_revisions (owner, revision) VALUES (?1, 1)
         ON CONFLICT (owner) DO UPDATE SET revision = revision + 1",
        [owner.as_str()],
    )?;
    Ok(())
}

fn read_js_tool(
    connection: &Connection,
    owner: &ToolOwner,
    name: &ToolName,
) -> Result<Option<JsToolRecord>> {
    let row = connection
        .query_row(
            &format!("SELECT {JS_TOOL_COLUMNS} FROM js_tools WHERE owner = ?1 AND name = ?2"),
            params![owner.as_str(), name.as_str()],
            read_js_tool_row,
        )
        .optional()?;
    row.map(JsToolRow::decode).transpose()
}

/// Reads one `js_tools` row (the columns of [`JS_TOOL_COLUMNS`] in order).
fn read_js_tool_row(row: &Row<'_>) -> rusqlite::Result<JsToolRow> {
    Ok(JsToolRow {
        owner: row.get(0)?,
        name: row.get(1)?,
        description: row.get(2)?,
        input_schema: row.get(3)?,
        function: row.get(4)?,
        source: row.get(5)?,
        created_ms: row.get(6)?,
        updated_ms: row.get(7)?,
    })
}

impl RoutingOutcomeStore for SqliteStore {
    fn record_routing_outcome<'a>(
        &'a self,
        catalog: &'a str,
        outcome: RoutingOutcome,
    ) -> StoreFuture<'a, ()> {
        let catalog = catalog.to_owned();
        Box::pin(async move {
            let outcome = outcome.checked()?;
            self.with_connection(move |connection| {
                let transaction = connection.transaction()?;
                transaction.execute(
                    "INSERT INTO routing_outcomes
                         (catalog, fitted_confidence, held, recorded_ms, missed)
                     VALUES (?1, ?2, ?3, ?4, ?5)",
                    params![
                        catalog,
                        outcome.fitted_confidence,
                        outcome.held,
                        to_millis(now_millis()),
                        outcome.missed_json(),
                    ],
                )?;
                // Everything up to the newest row beyond the kept ones.
                transaction.execute(
                    "DELETE FROM routing_outcomes WHERE catalog = ?1 AND id <= (
                         SELECT id FROM routing_outcomes WHERE catalog = ?1
                         ORDER BY id DESC LIMIT 1 OFFSET ?2)",
                    params![catalog, sql_count(KEPT_ROUTING_OUTCOMES)],
                )?;
                transaction.commit()?;
                Ok(())
            })
            .await
        })
    }

    fn routing_outcomes<'a>(
        &'a self,
        catalog: &'a str,
        limit: usize,
    ) -> StoreFuture<'a, Vec<RoutingOutcome>> {
        let catalog = catalog.to_owned();
        Box::pin(self.with_connection(move |connection| {
            let mut statement = connection.prepare_cached(
                "SELECT fitted_confidence, held, missed FROM (
                     SELECT id, fitted_confidence, held, missed FROM routing_outcomes
                     WHERE catalog = ?1 ORDER BY id DESC LIMIT ?2)
                 ORDER BY id",
            )?;
            let rows = statement
                .query_map(params![catalog, sql_count(limit)], |row| {
                    Ok((row.get(0)?, row.get(1)?, row.get::<_, String>(2)?))
                })?
                .collect::<rusqlite::Result<Vec<_>>>()?;
            rows.into_iter()
                .map(|(fitted_confidence, held, missed)| {
                    RoutingOutcome::decoded(&catalog, fitted_confidence, held, &missed)
                })
                .collect()
        }))
    }
}
