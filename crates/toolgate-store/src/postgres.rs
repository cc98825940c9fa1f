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
//! holding the client's stream can tell it its tools changed. A change of
//! an owner's JavaScript tools is announced on `toolgate_js_tools`, in the
//! transaction that makes it, and passed on the same way.
//!
//! Errors never carry the connection URL or its password.

mod agents;
mod conversations;
mod js_tools;
mod outcomes;
mod rows;

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use deadpool_postgres::{
    Manager, ManagerConfig, Object, Pool, PoolError, RecyclingMethod, Runtime,
};
use tokio::sync::broadcast;
use tokio_postgres::{AsyncMessage, NoTls};

use crate::error::{Result, StoreError};
use crate::id::ConversationId;
use crate::js_tool::ToolOwner;
use rows::postgres_error;

/// The migrations, in order; the schema version is their count.
const MIGRATIONS: &[&str] = &[
    include_str!("../migrations/postgres/0001_conversations.sql"),
    include_str!("../migrations/postgres/0002_js_tools.sql"),
    include_str!("../migrations/postgres/0003_routing_outcomes.sql"),
    include_str!("../migrations/postgres/0004_routing_outcome_misses.sql"),
    include_str!("../migrations/postgres/0005_js_tool_revisions.sql"),
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

/// The channel the owners whose JavaScript tools changed are announced on.
const JS_TOOLS_CHANNEL: &str = "toolgate_js_tools";

/// The longest wait between two attempts to listen again after the
/// listening connection was lost.
const LISTEN_RETRY_MAX: Duration = Duration::from_secs(5);

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
    /// The owners whose JavaScript tools the other processes changed.
    js_tool_changes: broadcast::Sender<ToolOwner>,
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
        let (js_tool_changes, _) = broadcast::channel(256);
        let announced = Announced {
            conversations: changes.clone(),
            js_tools: js_tool_changes.clone(),
        };
        let listener = tokio::spawn(listen(listening, Arc::clone(&origin), announced));
        let store = Self {
            pool,
            origin,
            changes,
            js_tool_changes,
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

/// Where [`listen`] passes on what other stores announced, by channel.
struct Announced {
    conversations: broadcast::Sender<ConversationId>,
    js_tools: broadcast::Sender<ToolOwner>,
}

impl Announced {
    /// Passes on `subject`, announced on `channel`.
    fn pass_on(&self, channel: &str, subject: &str) {
        if channel == JS_TOOLS_CHANNEL {
            let _ = self.js_tools.send(ToolOwner::new(subject));
        } else {
            let _ = self.conversations.send(ConversationId::new(subject));
        }
    }
}

/// Listens for announcements on their own connection, for as long as the
/// store lives, connecting again (after a pause that grows to
/// [`LISTEN_RETRY_MAX`]) whenever the connection is lost; passes on those
/// of other stores.
async fn listen(config: tokio_postgres::Config, origin: Arc<str>, announced: Announced) {
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
                                let sent = payloads.send((
                                    notification.channel().to_owned(),
                                    notification.payload().to_owned(),
                                ));
                                if sent.is_err() {
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
                let listening = format!("LISTEN {CHANNEL}; LISTEN {JS_TOOLS_CHANNEL}");
                match client.batch_execute(&listening).await {
                    Ok(()) => {
                        pause = Duration::from_millis(100);
                        while let Some((channel, payload)) = received.recv().await {
                            let Some((from, subject)) = payload.split_once('\n') else {
                                continue;
                            };
                            if from != &*origin {
                                announced.pass_on(&channel, subject);
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
