//! Errors of the conversation stores.

use std::path::PathBuf;

/// A store operation failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StoreError {
    /// The database file exists but is empty: truncated, or never written.
    /// It is not opened, so whatever happened to it can still be undone.
    #[error(
        "{} is empty (0 bytes), not a toolgate database: it may have been truncated. Restore it from a backup, or delete it to start with an empty store",
        path.display()
    )]
    EmptyFile {
        /// The file.
        path: PathBuf,
    },
    /// The file is not a SQLite database SQLite can read (another kind of
    /// file, or a damaged one). It is left as it was.
    #[error(
        "{} is not a toolgate database (SQLite: {reason}); it was left untouched. Restore it from a backup, or move it away to start with an empty store",
        path.display()
    )]
    NotADatabase {
        /// The file.
        path: PathBuf,
        /// What SQLite said of it.
        reason: String,
    },
    /// SQLite reported an error.
    #[error("SQLite: {0}")]
    Sqlite(#[from] rusqlite::Error),
    /// PostgreSQL reported an error, or could not be reached.
    #[error("PostgreSQL: {reason}")]
    Postgres {
        /// What the server or the driver said (never the connection URL).
        reason: String,
    },
    /// The PostgreSQL connection string does not parse.
    #[error("invalid PostgreSQL connection string: {reason}")]
    InvalidUrl {
        /// Why (the string itself is not repeated: it may hold a password).
        reason: String,
    },
    /// A stored row does not decode into a message.
    #[error("stored message {id} is corrupt: {reason}")]
    Corrupt {
        /// The message's row id.
        id: i64,
        /// What did not decode.
        reason: String,
    },
    /// The database was written by a newer toolgate.
    #[error("the database schema is version {found}, newer than this toolgate's {supported}")]
    SchemaTooNew {
        /// Version found in the file.
        found: i64,
        /// Newest version this build knows.
        supported: i64,
    },
    /// A stored agent row does not decode.
    #[error("stored agent `{id}` is corrupt: {reason}")]
    CorruptAgent {
        /// The agent's id.
        id: String,
        /// What did not decode.
        reason: String,
    },
    /// A stored JavaScript tool row does not decode.
    #[error("stored JavaScript tool `{name}` of `{owner}` is corrupt: {reason}")]
    CorruptJsTool {
        /// Its owner.
        owner: String,
        /// Its name, as stored.
        name: String,
        /// What did not decode.
        reason: String,
    },
    /// A stored routing outcome's missed groups do not decode.
    #[error("a stored routing outcome of catalog `{catalog}` is corrupt: {reason}")]
    CorruptOutcome {
        /// The catalog key it is kept under.
        catalog: String,
        /// What did not decode.
        reason: String,
    },
    /// A routing outcome's fitted confidence is not a number within 0..=1
    /// (NaN, infinite, or out of range); nothing was stored.
    #[error("a routing outcome's fitted confidence must be a number within 0 and 1, not {0}")]
    InvalidConfidence(f64),
    /// A conversation was given an agent that is not stored.
    #[error("no agent with id `{0}` is stored")]
    UnknownAgent(crate::id::AgentId),
    /// The blocking worker running a query panicked or was cancelled.
    #[error("the storage worker stopped: {0}")]
    Worker(#[from] tokio::task::JoinError),
}

/// Result of a store operation.
pub type Result<T, E = StoreError> = std::result::Result<T, E>;
