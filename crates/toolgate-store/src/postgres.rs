//! [`PostgresStore`]: conversations and agents in a PostgreSQL database that
//! several toolgate processes share.
//!
//! A pool of connections (tokio-postgres under deadpool) serves every
//! operation; each one is a single statement or a transaction, so replicas
//! writing the same conversation see one order: an append first takes the
//! conversation's row lock (its upsert) and only then draws its message id,
//! so ids follow commit order within a conversation. Migrations are numbered
//! SQL files applied in order under an advisory lock (two replicas starting
//! at once migrate once) and tracked in `toolgate_schema`; a database written
//! by a newer toolgate is refused rather than misread. Idle expiry takes an
//! advisory lock too: when one replica is expiring, the others skip; and
//! recording a routing outcome takes one per catalog, so replicas recording
//! at once prune to exactly the newest outcomes.
//!
//! A gateway that changes a session (a group loaded or unloaded) announces
//! it on the channel `toolgate_conversations` (`NOTIFY`); every store
//! listens on its own connection (`LISTEN`, reconnecting after the server
//! restarts) and passes on what the others announced, so the gateway
//! holding the client's stream can tell it its tools changed.
//!
//! Errors never carry the connection URL or its password.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use deadpool_postgres::{
    Manager, ManagerConfig, Object, Pool, PoolError, RecyclingMethod, Runtime,
};
use serde_json::Value;
use tokio::sync::broadcast;
use tokio_postgres::{AsyncMessage, NoTls, Row};
use toolgate_core::{Message, MessageKind, ToolName, ToolStatus};

use crate::agent::{AgentRecord, AgentRow, AgentStore, StoreFuture};
use crate::conversation::{MessageRow, StoredMessage, now_millis, to_millis};
use crate::error::{Result, StoreError};
use crate::id::{AgentId, ConversationId, MessageId};
use crate::js_tool::{JS_TOOL_COLUMNS, JsToolRecord, JsToolRow, JsToolStore, ToolOwner};
use crate::outcome::{KEPT_ROUTING_OUTCOMES, RoutingOutcome, RoutingOutcomeStore, sql_count};
use crate::store::ConversationStore;

/// The migrations, in order; the schema version is their count.
const MIGRATIONS: &[&str] = &[
    include_str!("../migrations/postgres/0001_conversations.sql"),
    include_str!("../migrations/postgres/0002_js_tools.sql"),
    include_str!("../migrations/postgres/0003_routing_outcomes.sql"),
    include_str!("../migrations/postgres/0004_routing_outcome_misses.sql"),
];

/// Advisory lock keys (`pg_advisory_xact_lock` takes a bigint): "toolgate"
/// in ASCII, plus one per purpose.
const MIGRATION_LOCK: i64 = 0x746f_6f6c_6761_7400;
const EXPIRY_LOCK: i64 = 0x746f_6f6c_6761_7401;

/// The class of the advisory locks (two 32-bit keys: this, and the hash of
/// a catalog) that serialize recording routing outcomes per catalog, so
/// replicas recording at once keep exactly the newest ones: "tg" in ASCII,
/// plus one.
const ROUTING_OUTCOME_LOCK: i32 = 0x7467_0001;

/// The channel changed conversations are announced on.
const CHANNEL: &str = "toolgate_conversations";

/// The longest wait between two attempts to listen again after the
/// listening connection was lost.
const LISTEN_RETRY_MAX: Duration = Duration::from_secs(5);

/// The columns of a message row, in [`read_message`]'s order.
const MESSAGE_COLUMNS: &str =
    "id, kind, content, tool_call_id, tool_name, tool_input, tool_status, created_ms";

/// How to reach the server, and how many connections to keep.
#[derive(Clone)]
pub struct PostgresOptions {
    /// A libpq connection string: a URI (`postgres://user@host:5432/db`,
    /// `postgresql://user@/db?host=/run/postgresql` for a Unix socket) or
    /// `key=value` pairs.
    pub url: String,
    /// The password, when it is not in `url` (read from the environment or
    /// a file by the caller).
    pub password: Option<String>,
    /// Connections in the pool, at most.
    pub pool_size: usize,
    /// How long an operation waits for a connection (and a new connection
    /// for the server) before it fails.
    pub connect_timeout: Duration,
}

impl PostgresOptions {
    /// `url` with the default pool (16 connections) and a 10 s timeout.
    pub fn new(url: impl Into<String>) -> Self {
        Self {
            url: url.into(),
            password: None,
            pool_size: 16,
            connect_timeout: Duration::from_secs(10),
        }
    }
}

impl std::fmt::Debug for PostgresOptions {
    /// Neither the URL (which may hold a password) nor the password.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PostgresOptions")
            .field("pool_size", &self.pool_size)
            .field("connect_timeout", &self.connect_timeout)
            .finish_non_exhaustive()
    }
}

/// Conversations and agents in a PostgreSQL database.
#[derive(Clone)]
pub struct PostgresStore {
    pool: Pool,
    /// Who this store is in announcements, so it skips its own.
    origin: Arc<str>,
    /// What the other processes announced.
    changes: broadcast::Sender<ConversationId>,
    /// The listening task, stopped with the last clone of the store.
    _listener: Arc<Listener>,
}

/// Aborts the listening task when dropped.
struct Listener(tokio::task::JoinHandle<()>);

impl Drop for Listener {
    fn drop(&mut self) {
        self.0.abort();
    }
}

impl std::fmt::Debug for PostgresStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let status = self.pool.status();
        f.debug_struct("PostgresStore")
            .field("connections", &status.size)
            .field("max_connections", &status.max_size)
            .finish()
    }
}

impl PostgresStore {
    /// Connects as `options` say and migrates the database. Fails when the
    /// server cannot be reached, the URL does not parse, or the schema is
    /// newer than this toolgate's.
    pub async fn connect(options: &PostgresOptions) -> Result<Self> {
        let mut config: tokio_postgres::Config =
            options
                .url
                .parse()
                .map_err(|error: tokio_postgres::Error| StoreError::InvalidUrl {
                    reason: error.to_string(),
                })?;
        if let Some(password) = &options.password {
            config.password(password);
        }
        config.connect_timeout(options.connect_timeout);
        let mut listening = config.clone();
        listening.application_name("toolgate listener");
        config.application_name("toolgate");
        let manager = Manager::from_config(
            config,
            NoTls,
            ManagerConfig {
                recycling_method: RecyclingMethod::Fast,
            },
        );
        let pool = Pool::builder(manager)
            .max_size(options.pool_size.max(1))
            .runtime(Runtime::Tokio1)
            .wait_timeout(Some(options.connect_timeout))
            .create_timeout(Some(options.connect_timeout))
            .recycle_timeout(Some(options.connect_timeout))
            .build()
            .map_err(|error| StoreError::Postgres {
                reason: error.to_string(),
            })?;
        let origin: Arc<str> = new_origin().into();
        let (changes, _) = broadcast::channel(256);
        let listener = tokio::spawn(listen(listening, Arc::clone(&origin), changes.clone()));
        let store = Self {
            pool,
            origin,
            changes,
            _listener: Arc::new(Listener(listener)),
        };
        let mut client = store.client().await?;
        migrate(&mut client).await?;
        Ok(store)
    }

    /// The schema version of the database.
    pub async fn schema_version(&self) -> Result<i64> {
        let client = self.client().await?;
        let row = client
            .query_one("SELECT version FROM toolgate_schema", &[])
            .await
            .map_err(postgres_error)?;
        Ok(row.get(0))
    }

    /// A connection from the pool.
    async fn client(&self) -> Result<Object> {
        self.pool.get().await.map_err(|error| match error {
            PoolError::Timeout(_) => StoreError::Postgres {
                reason: "no connection to the server became available in time".to_owned(),
            },
            PoolError::Backend(error) => postgres_error(error),
            other => StoreError::Postgres {
                reason: other.to_string(),
            },
        })
    }
}

/// A name for this store in announcements, unique across processes and
/// stores: the process id, the time, and a counter.
fn new_origin() -> String {
    static COUNT: AtomicU64 = AtomicU64::new(0);
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |since| since.as_nanos());
    format!(
        "{}-{nanos}-{}",
        std::process::id(),
        COUNT.fetch_add(1, Ordering::Relaxed)
    )
}

/// Listens for announcements on their own connection, for as long as the
/// store lives, connecting again (after a pause that grows to
/// [`LISTEN_RETRY_MAX`]) whenever the connection is lost; passes on those
/// of other stores.
async fn listen(
    config: tokio_postgres::Config,
    origin: Arc<str>,
    changes: broadcast::Sender<ConversationId>,
) {
    let mut pause = Duration::from_millis(100);
    loop {
        match config.connect(NoTls).await {
            Ok((client, mut connection)) => {
                let (payloads, mut received) = tokio::sync::mpsc::unbounded_channel();
                let driver = tokio::spawn(async move {
                    while let Some(message) =
                        std::future::poll_fn(|cx| connection.poll_message(cx)).await
                    {
                        match message {
                            Ok(AsyncMessage::Notification(notification)) => {
                                if payloads.send(notification.payload().to_owned()).is_err() {
                                    return;
                                }
                            }
                            Ok(_) => {}
                            Err(error) => {
                                tracing::warn!(%error, "the store's listening connection failed");
                                return;
                            }
                        }
                    }
                });
                match client.batch_execute(&format!("LISTEN {CHANNEL}")).await {
                    Ok(()) => {
                        pause = Duration::from_millis(100);
                        while let Some(payload) = received.recv().await {
                            let Some((from, conversation)) = payload.split_once('\n') else {
                                continue;
                            };
                            if from != &*origin {
                                let _ = changes.send(ConversationId::new(conversation));
                            }
                        }
                    }
                    Err(error) => {
                        tracing::warn!(reason = %postgres_error(error), "cannot listen for other gateways' changes");
                    }
                }
                driver.abort();
            }
            Err(error) => {
                tracing::warn!(reason = %postgres_error(error), "cannot connect to listen for other gateways' changes");
            }
        }
        tokio::time::sleep(pause).await;
        pause = (pause * 2).min(LISTEN_RETRY_MAX);
    }
}

/// A driver error as the operator reads it: the server's own message when it
/// sent one, else the error and its causes (never the connection string).
fn postgres_error(error: tokio_postgres::Error) -> StoreError {
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

/// Applies the migrations the database lacks, once across processes.
async fn migrate(client: &mut Object) -> Result<()> {
    let transaction = client.transaction().await.map_err(postgres_error)?;
    transaction
        .execute("SELECT pg_advisory_xact_lock($1)", &[&MIGRATION_LOCK])
        .await
        .map_err(postgres_error)?;
    transaction
        .batch_execute("CREATE TABLE IF NOT EXISTS toolgate_schema (version BIGINT NOT NULL)")
        .await
        .map_err(postgres_error)?;
    let version: i64 = transaction
        .query_opt("SELECT version FROM toolgate_schema", &[])
        .await
        .map_err(postgres_error)?
        .map_or(0, |row| row.get(0));
    let supported = MIGRATIONS.len() as i64;
    if version > supported {
        return Err(StoreError::SchemaTooNew {
            found: version,
            supported,
        });
    }
    if version == supported {
        return Ok(());
    }
    for sql in MIGRATIONS.iter().skip(version as usize) {
        transaction
            .batch_execute(sql)
            .await
            .map_err(postgres_error)?;
    }
    transaction
        .execute("DELETE FROM toolgate_schema", &[])
        .await
        .map_err(postgres_error)?;
    transaction
        .execute(
            "INSERT INTO toolgate_schema (version) VALUES ($1)",
            &[&supported],
        )
        .await
        .map_err(postgres_error)?;
    transaction.commit().await.map_err(postgres_error)
}

/// Reads one message row (the columns of [`MESSAGE_COLUMNS`] in order).
fn read_message(row: &Row) -> Result<MessageRow> {
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
fn read_agent(row: &Row) -> Result<AgentRow> {
    let get = |error: tokio_postgres::Error| postgres_error(error);
    Ok(AgentRow {
        id: row.try_get(0).map_err(get)?,
        name: row.try_get(1).map_err(get)?,
        prompts: row.try_get(2).map_err(get)?,
        tools: row.try_get(3).map_err(get)?,
    })
}

/// Reads one `js_tools` row (the columns of [`JS_TOOL_COLUMNS`] in order).
fn read_js_tool_row(row: &Row) -> Result<JsToolRow> {
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

impl PostgresStore {
    /// The owner's tool `name` as stored, if any.
    async fn read_js_tool(
        &self,
        owner: &ToolOwner,
        name: &ToolName,
    ) -> Result<Option<JsToolRecord>> {
        let client = self.client().await?;
        let row = client
            .query_opt(
                &format!("SELECT {JS_TOOL_COLUMNS} FROM js_tools WHERE owner = $1 AND name = $2"),
                &[&owner.as_str(), &name.as_str()],
            )
            .await
            .map_err(postgres_error)?;
        row.map(|row| read_js_tool_row(&row)?.decode()).transpose()
    }
}

impl JsToolStore for PostgresStore {
    fn js_tools<'a>(&'a self, owner: &'a ToolOwner) -> StoreFuture<'a, Vec<JsToolRecord>> {
        Box::pin(async move {
            let client = self.client().await?;
            let rows = client
                .query(
                    &format!(
                        "SELECT {JS_TOOL_COLUMNS} FROM js_tools WHERE owner = $1 ORDER BY name"
                    ),
                    &[&owner.as_str()],
                )
                .await
                .map_err(postgres_error)?;
            rows.iter()
                .map(|row| read_js_tool_row(row)?.decode())
                .collect()
        })
    }

    fn js_tool<'a>(
        &'a self,
        owner: &'a ToolOwner,
        name: &'a ToolName,
    ) -> StoreFuture<'a, Option<JsToolRecord>> {
        Box::pin(self.read_js_tool(owner, name))
    }

    fn create_js_tool(&self, tool: JsToolRecord) -> StoreFuture<'_, Option<JsToolRecord>> {
        Box::pin(async move {
            let schema = Value::Object(tool.input_schema.clone()).to_string();
            let client = self.client().await?;
            let inserted = client
                .execute(
                    "INSERT INTO js_tools (owner, name, description, input_schema, function, source,
                                           created_ms, updated_ms)
                     VALUES ($1, $2, $3, $4, $5, $6, $7, $7)
                     ON CONFLICT (owner, name) DO NOTHING",
                    &[
                        &tool.owner.as_str(),
                        &tool.name.as_str(),
                        &tool.description,
                        &schema,
                        &tool.function,
                        &tool.source,
                        &to_millis(now_millis()),
                    ],
                )
                .await
                .map_err(postgres_error)?;
            drop(client);
            if inserted == 0 {
                return Ok(None);
            }
            self.read_js_tool(&tool.owner, &tool.name).await
        })
    }

    fn update_js_tool(&self, tool: JsToolRecord) -> StoreFuture<'_, Option<JsToolRecord>> {
        Box::pin(async move {
            let schema = Value::Object(tool.input_schema.clone()).to_string();
            let client = self.client().await?;
            let updated = client
                .execute(
                    "UPDATE js_tools SET description = $3, input_schema = $4, function = $5,
                                         source = $6, updated_ms = $7
                     WHERE owner = $1 AND name = $2",
                    &[
                        &tool.owner.as_str(),
                        &tool.name.as_str(),
                        &tool.description,
                        &schema,
                        &tool.function,
                        &tool.source,
                        &to_millis(now_millis()),
                    ],
                )
                .await
                .map_err(postgres_error)?;
            drop(client);
            if updated == 0 {
                return Ok(None);
            }
            self.read_js_tool(&tool.owner, &tool.name).await
        })
    }

    fn delete_js_tool<'a>(
        &'a self,
        owner: &'a ToolOwner,
        name: &'a ToolName,
    ) -> StoreFuture<'a, bool> {
        Box::pin(async move {
            let client = self.client().await?;
            let deleted = client
                .execute(
                    "DELETE FROM js_tools WHERE owner = $1 AND name = $2",
                    &[&owner.as_str(), &name.as_str()],
                )
                .await
                .map_err(postgres_error)?;
            Ok(deleted > 0)
        })
    }
}

impl ConversationStore for PostgresStore {
    async fn append(&self, conversation: &ConversationId, message: Message) -> Result<MessageId> {
        let now = to_millis(now_millis());
        let mut client = self.client().await?;
        let transaction = client.transaction().await.map_err(postgres_error)?;
        transaction
            .execute(
                "INSERT INTO conversations (id, created_ms, active_ms) VALUES ($1, $2, $2)
                 ON CONFLICT (id) DO UPDATE SET active_ms = excluded.active_ms",
                &[&conversation.as_str(), &now],
            )
            .await
            .map_err(postgres_error)?;
        let row = transaction
            .query_one(
                "INSERT INTO messages (conversation_id, kind, content, tool_call_id, tool_name,
                                       tool_input, tool_status, created_ms)
                 VALUES ($1, $2, $3, $4, $5, $6, $7, $8) RETURNING id",
                &[
                    &conversation.as_str(),
                    &message.kind.as_str(),
                    &message.content,
                    &message.tool_call_id,
                    &message.tool_name,
                    &message.tool_input,
                    &message.tool_status.map(ToolStatus::as_str),
                    &now,
                ],
            )
            .await
            .map_err(postgres_error)?;
        transaction.commit().await.map_err(postgres_error)?;
        Ok(MessageId(row.get(0)))
    }

    async fn messages(&self, conversation: &ConversationId) -> Result<Vec<StoredMessage>> {
        let client = self.client().await?;
        let statement = client
            .prepare_cached(&format!(
                "SELECT {MESSAGE_COLUMNS} FROM messages WHERE conversation_id = $1 ORDER BY id"
            ))
            .await
            .map_err(postgres_error)?;
        let rows = client
            .query(&statement, &[&conversation.as_str()])
            .await
            .map_err(postgres_error)?;
        rows.iter().map(|row| read_message(row)?.decode()).collect()
    }

    async fn set_tool_status(
        &self,
        conversation: &ConversationId,
        tool_call_id: &str,
        status: ToolStatus,
    ) -> Result<bool> {
        let client = self.client().await?;
        let changed = client
            .execute(
                "UPDATE messages SET tool_status = $1 WHERE id = (
                     SELECT id FROM messages
                     WHERE conversation_id = $2 AND kind = $3 AND tool_call_id = $4
                     ORDER BY id DESC LIMIT 1)",
                &[
                    &status.as_str(),
                    &conversation.as_str(),
                    &MessageKind::ToolCall.as_str(),
                    &tool_call_id,
                ],
            )
            .await
            .map_err(postgres_error)?;
        Ok(changed == 1)
    }

    async fn touch(&self, conversation: &ConversationId) -> Result<bool> {
        let client = self.client().await?;
        let changed = client
            .execute(
                "UPDATE conversations SET active_ms = $2 WHERE id = $1",
                &[&conversation.as_str(), &to_millis(now_millis())],
            )
            .await
            .map_err(postgres_error)?;
        Ok(changed == 1)
    }

    async fn last_message_id(&self, conversation: &ConversationId) -> Result<Option<MessageId>> {
        let client = self.client().await?;
        let statement = client
            .prepare_cached("SELECT max(id) FROM messages WHERE conversation_id = $1")
            .await
            .map_err(postgres_error)?;
        let row = client
            .query_one(&statement, &[&conversation.as_str()])
            .await
            .map_err(postgres_error)?;
        let id: Option<i64> = row.get(0);
        Ok(id.map(MessageId))
    }

    /// Several gateways share one database.
    fn is_shared(&self) -> bool {
        true
    }

    async fn announce_change(&self, conversation: &ConversationId) -> Result<()> {
        let payload = format!("{}\n{}", self.origin, conversation.as_str());
        let client = self.client().await?;
        client
            .execute("SELECT pg_notify($1, $2)", &[&CHANNEL, &payload])
            .await
            .map_err(postgres_error)?;
        Ok(())
    }

    fn changes(&self) -> Option<broadcast::Receiver<ConversationId>> {
        Some(self.changes.subscribe())
    }

    async fn exists(&self, conversation: &ConversationId) -> Result<bool> {
        let client = self.client().await?;
        let found = client
            .query_opt(
                "SELECT 1 FROM conversations WHERE id = $1",
                &[&conversation.as_str()],
            )
            .await
            .map_err(postgres_error)?;
        Ok(found.is_some())
    }

    async fn delete(&self, conversation: &ConversationId) -> Result<bool> {
        let client = self.client().await?;
        let deleted = client
            .execute(
                "DELETE FROM conversations WHERE id = $1",
                &[&conversation.as_str()],
            )
            .await
            .map_err(postgres_error)?;
        Ok(deleted > 0)
    }

    /// Deletes the idle conversations, unless another process is doing it
    /// right now (then nothing, and 0): expiry runs once across replicas.
    async fn expire_idle(&self, cutoff: SystemTime) -> Result<usize> {
        let cutoff = to_millis(cutoff);
        let mut client = self.client().await?;
        let transaction = client.transaction().await.map_err(postgres_error)?;
        let locked: bool = transaction
            .query_one("SELECT pg_try_advisory_xact_lock($1)", &[&EXPIRY_LOCK])
            .await
            .map_err(postgres_error)?
            .get(0);
        if !locked {
            return Ok(0);
        }
        let deleted = transaction
            .execute("DELETE FROM conversations WHERE active_ms < $1", &[&cutoff])
            .await
            .map_err(postgres_error)?;
        transaction.commit().await.map_err(postgres_error)?;
        Ok(usize::try_from(deleted).unwrap_or(usize::MAX))
    }
}

impl AgentStore for PostgresStore {
    fn agent<'a>(&'a self, id: &'a AgentId) -> StoreFuture<'a, Option<AgentRecord>> {
        Box::pin(async move {
            let client = self.client().await?;
            let row = client
                .query_opt(
                    "SELECT id, name, prompts, tools FROM agents WHERE id = $1",
                    &[&id.as_str()],
                )
                .await
                .map_err(postgres_error)?;
            row.map(|row| read_agent(&row)?.decode()).transpose()
        })
    }

    fn save_agent(&self, agent: AgentRecord) -> StoreFuture<'_, ()> {
        Box::pin(async move {
            let prompts = serde_json::to_string(&agent.prompts).unwrap_or_else(|_| "{}".into());
            let tools = serde_json::to_string(&agent.tools).unwrap_or_else(|_| "[]".into());
            let client = self.client().await?;
            client
                .execute(
                    "INSERT INTO agents (id, name, prompts, tools, updated_ms) VALUES ($1, $2, $3, $4, $5)
                     ON CONFLICT (id) DO UPDATE SET name = excluded.name, prompts = excluded.prompts,
                         tools = excluded.tools, updated_ms = excluded.updated_ms",
                    &[
                        &agent.id.as_str(),
                        &agent.name,
                        &prompts,
                        &tools,
                        &to_millis(now_millis()),
                    ],
                )
                .await
                .map_err(postgres_error)?;
            Ok(())
        })
    }

    fn agents(&self) -> StoreFuture<'_, Vec<AgentRecord>> {
        Box::pin(async move {
            let client = self.client().await?;
            let rows = client
                .query(
                    "SELECT id, name, prompts, tools FROM agents ORDER BY id",
                    &[],
                )
                .await
                .map_err(postgres_error)?;
            rows.iter().map(|row| read_agent(row)?.decode()).collect()
        })
    }

    fn set_conversation_agent<'a>(
        &'a self,
        conversation: &'a ConversationId,
        agent: &'a AgentId,
    ) -> StoreFuture<'a, ()> {
        Box::pin(async move {
            let mut client = self.client().await?;
            let transaction = client.transaction().await.map_err(postgres_error)?;
            let known = transaction
                .query_opt("SELECT 1 FROM agents WHERE id = $1", &[&agent.as_str()])
                .await
                .map_err(postgres_error)?
                .is_some();
            if !known {
                return Err(StoreError::UnknownAgent(agent.clone()));
            }
            transaction
                .execute(
                    "INSERT INTO conversations (id, created_ms, active_ms, agent_id) VALUES ($1, $2, $2, $3)
                     ON CONFLICT (id) DO UPDATE SET agent_id = excluded.agent_id",
                    &[&conversation.as_str(), &to_millis(now_millis()), &agent.as_str()],
                )
                .await
                .map_err(postgres_error)?;
            transaction.commit().await.map_err(postgres_error)
        })
    }

    fn conversation_agent<'a>(
        &'a self,
        conversation: &'a ConversationId,
    ) -> StoreFuture<'a, Option<AgentId>> {
        Box::pin(async move {
            let client = self.client().await?;
            let row = client
                .query_opt(
                    "SELECT agent_id FROM conversations WHERE id = $1",
                    &[&conversation.as_str()],
                )
                .await
                .map_err(postgres_error)?;
            let agent: Option<String> = row.and_then(|row| row.get(0));
            Ok(agent.map(AgentId::new))
        })
    }
}

impl RoutingOutcomeStore for PostgresStore {
    /// One transaction: the catalog's lock, then the insert and the prune
    /// in one statement (prepared once per connection), so a turn's outcome
    /// costs few round trips.
    fn record_routing_outcome<'a>(
        &'a self,
        catalog: &'a str,
        outcome: RoutingOutcome,
    ) -> StoreFuture<'a, ()> {
        Box::pin(async move {
            let outcome = outcome.checked()?;
            let mut client = self.client().await?;
            let transaction = client.transaction().await.map_err(postgres_error)?;
            let lock = transaction
                .prepare_cached("SELECT pg_advisory_xact_lock($1, hashtext($2))")
                .await
                .map_err(postgres_error)?;
            transaction
                .execute(&lock, &[&ROUTING_OUTCOME_LOCK, &catalog])
                .await
                .map_err(postgres_error)?;
            // The DELETE runs on the statement's snapshot, taken once the
            // lock is held: it sees every outcome committed before, but not
            // the one its own WITH inserts. So it keeps the newest
            // KEPT_ROUTING_OUTCOMES - 1 of those, and the new one makes the
            // count.
            let record = transaction
                .prepare_cached(
                    "WITH recorded AS (
                         INSERT INTO routing_outcomes
                             (catalog, fitted_confidence, held, recorded_ms, missed)
                         VALUES ($1, $2, $3, $4, $6))
                     DELETE FROM routing_outcomes WHERE catalog = $1 AND id <= (
                         SELECT id FROM routing_outcomes WHERE catalog = $1
                         ORDER BY id DESC LIMIT 1 OFFSET $5)",
                )
                .await
                .map_err(postgres_error)?;
            transaction
                .execute(
                    &record,
                    &[
                        &catalog,
                        &outcome.fitted_confidence,
                        &outcome.held,
                        &to_millis(now_millis()),
                        &sql_count(KEPT_ROUTING_OUTCOMES - 1),
                        &outcome.missed_json(),
                    ],
                )
                .await
                .map_err(postgres_error)?;
            transaction.commit().await.map_err(postgres_error)
        })
    }

    fn routing_outcomes<'a>(
        &'a self,
        catalog: &'a str,
        limit: usize,
    ) -> StoreFuture<'a, Vec<RoutingOutcome>> {
        Box::pin(async move {
            let client = self.client().await?;
            let rows = client
                .query(
                    "SELECT fitted_confidence, held, missed FROM (
                         SELECT id, fitted_confidence, held, missed FROM routing_outcomes
                         WHERE catalog = $1 ORDER BY id DESC LIMIT $2) AS newest
                     ORDER BY id",
                    &[&catalog, &sql_count(limit)],
                )
                .await
                .map_err(postgres_error)?;
            let get = |error: tokio_postgres::Error| postgres_error(error);
            rows.iter()
                .map(|row| {
                    let missed: String = row.try_get(2).map_err(get)?;
                    RoutingOutcome::decoded(
                        catalog,
                        row.try_get(0).map_err(get)?,
                        row.try_get(1).map_err(get)?,
                        &missed,
                    )
                })
                .collect()
        })
    }
}
