//! Where `toolgate chat` and `toolgate serve` keep conversations: a SQLite
//! file, by default in the user's data directory.

use std::path::{Path, PathBuf};

use anyhow::Context;
use toolgate_store::{SqliteStore, StoreError};

/// Opens (creating it and its directory) the SQLite store at `path`, or at
/// `toolgate/{default_name}` in the user's data directory. An existing file
/// that is empty or not a database is refused, never overwritten.
pub(crate) fn open_sqlite(
    path: Option<&Path>,
    default_name: &str,
) -> anyhow::Result<(SqliteStore, PathBuf)> {
    let path = match path {
        Some(path) => path.to_path_buf(),
        None => data_dir()?.join("toolgate").join(default_name),
    };
    if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
        std::fs::create_dir_all(parent)
            .with_context(|| format!("creating {}", parent.display()))?;
    }
    let store = SqliteStore::open(&path).map_err(|error| match error {
        // These name the file already, and say what to do.
        StoreError::EmptyFile { .. } | StoreError::NotADatabase { .. } => anyhow::Error::new(error),
        other => anyhow::Error::new(other).context(format!("opening the store {}", path.display())),
    })?;
    Ok((store, path))
}

fn data_dir() -> anyhow::Result<PathBuf> {
    std::env::var_os("XDG_DATA_HOME")
        .map(PathBuf::from)
        .filter(|p| p.is_absolute())
        .or_else(|| std::env::var_os("HOME").map(|home| Path::new(&home).join(".local/share")))
        .context(
            "no HOME or XDG_DATA_HOME to put the store in; pass --store FILE or --memory-store",
        )
}
