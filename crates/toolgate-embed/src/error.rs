//! The one error type of this crate.

use std::path::PathBuf;

/// What went wrong loading a model, embedding, or reading the cache.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum EmbedError {
    /// No directory was configured and there is no home directory to look
    /// in.
    #[error(
        "no embedding model: set TOOLGATE_EMBED_MODEL to its directory (HOME is not set either)"
    )]
    NowhereToLook,
    /// The model directory does not exist (or is not a directory).
    #[error("no embedding model directory at {dir}")]
    NoModelDir {
        /// The directory looked for.
        dir: PathBuf,
    },
    /// A file the model needs is not in its directory.
    #[error("the embedding model in {dir} has no {file}")]
    MissingFile {
        /// The model directory.
        dir: PathBuf,
        /// The missing file's name.
        file: &'static str,
    },
    /// A file could not be read.
    #[error("reading {path}: {source}")]
    Read {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// A file could be read but not used.
    #[error("{path}: {reason}")]
    Invalid {
        /// The file.
        path: PathBuf,
        /// What is wrong with it.
        reason: String,
    },
    /// The model failed while running.
    #[error("embedding with the model in {dir}: {reason}")]
    Inference {
        /// The model directory.
        dir: PathBuf,
        /// What the engine said.
        reason: String,
    },
    /// The vector cache directory could not be created or written.
    #[error("vector cache {path}: {source}")]
    Cache {
        /// The file or directory.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
}
