//! Errors of the conversation stores.

/// A store operation failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StoreError {
    /// SQLite reported an error.
    #[error("SQLite: {0}")]
    Sqlite(#[from] rusqlite::Error),
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
    /// A conversation was given an agent that is not stored.
    #[error("no agent with id `{0}` is stored")]
    UnknownAgent(crate::conversation::AgentId),
    /// The blocking worker running a query panicked or was cancelled.
    #[error("the storage worker stopped: {0}")]
    Worker(#[from] tokio::task::JoinError),
}

/// Result of a store operation.
pub type Result<T, E = StoreError> = std::result::Result<T, E>;
