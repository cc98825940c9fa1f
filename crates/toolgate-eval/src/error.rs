//! The crate's one error type. Each variant names the file at fault and wraps
//! the cause as its source, so `{err:#}` reads `path: cause`.

use std::path::PathBuf;

use toolgate_core::ImportError;
use toolgate_core::routing::RoutingError;

/// Why a dataset could not be loaded or evaluated.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum EvalError {
    /// `tools.jsonl` (or `groups.jsonl` beside it) could not be imported.
    #[error("{}", path.display())]
    Catalog {
        /// The `tools.jsonl` asked for.
        path: PathBuf,
        /// What the import said.
        #[source]
        source: ImportError,
    },
    /// `queries.jsonl` could not be read.
    #[error("{}", path.display())]
    ReadQueries {
        /// The file.
        path: PathBuf,
        /// What the file system said.
        #[source]
        source: std::io::Error,
    },
    /// A line of `queries.jsonl` is not a query.
    #[error("{}: line {line}", path.display())]
    Query {
        /// The file.
        path: PathBuf,
        /// One-based line number.
        line: usize,
        /// What the JSON parser said.
        #[source]
        source: serde_json::Error,
    },
    /// Leaving one dataset out needs two at least.
    #[error("leaving one dataset out needs at least two datasets, got {0}")]
    LeaveOneOut(usize),
    /// The `[routing]` settings do not fit the dataset's catalog.
    #[error(transparent)]
    Routing(#[from] RoutingError),
    /// The replay's toolbox did not start over the dataset's catalog.
    #[error("starting the replay's tools")]
    Toolbox(#[source] toolgate_tools::ToolboxError),
    /// A turn of a replayed conversation failed.
    #[error("replaying conversation {conversation}")]
    Replay {
        /// The conversation.
        conversation: String,
        /// What the agent loop said.
        #[source]
        source: toolgate_agent::AgentError,
    },
}

/// The crate's result type.
pub type Result<T, E = EvalError> = std::result::Result<T, E>;
