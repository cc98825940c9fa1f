//! Where `toolgate chat` and `toolgate serve` keep conversations: a SQLite
//! file, by default in the user's data directory, or a PostgreSQL database
//! that several gateways share (`--store postgres://...`).

use std::path::{Path, PathBuf};

use anyhow::Context;
use toolgate_store::{PostgresOptions, PostgresStore, SqliteStore, StoreError};

use crate::settings::StoreSettings;

/// The environment variable a PostgreSQL password may come from (libpq's),
/// when the URL has none.
const PASSWORD_VARIABLE: &str = "PGPASSWORD";

/// Where `--store` says conversations live.
#[derive(Debug)]
pub(crate) enum StoreLocation {
    /// A SQLite file (the default one when `None`).
    Sqlite(Option<PathBuf>),
    /// A PostgreSQL database, by its libpq URI.
    Postgres(String),
}

/// Reads `--store`, else `[store] url`: a `postgres://` or `postgresql://`
/// URI is a PostgreSQL database, anything else a SQLite file's path.
pub(crate) fn location(store: Option<&Path>, settings: &StoreSettings) -> StoreLocation {
    let store = store.or(settings.url.as_deref().map(Path::new));
    match store.and_then(Path::to_str) {
        Some(uri) if uri.starts_with("postgres://") || uri.starts_with("postgresql://") => {
            StoreLocation::Postgres(uri.to_owned())
        }
        _ => StoreLocation::Sqlite(store.map(Path::to_path_buf)),
    }
}

/// Connects to the PostgreSQL database at `uri` and migrates it. The
/// password comes from the URI, else `[store] password_file`, else
/// `PGPASSWORD`; none of them is printed.
pub(crate) async fn open_postgres(
    uri: &str,
    settings: &StoreSettings,
) -> anyhow::Result<PostgresStore> {
    let mut options = PostgresOptions::new(uri);
    if let Some(pool_size) = settings.pool_size {
        options.pool_size = pool_size;
    }
    options.password = match &settings.password_file {
        Some(file) => Some(
            std::fs::read_to_string(file)
                .with_context(|| format!("reading the store password file {}", file.display()))?
                .trim_end_matches(['\r', '\n'])
                .to_owned(),
        ),
        None => std::env::var(PASSWORD_VARIABLE)
            .ok()
            .filter(|password| !password.is_empty()),
    };
    PostgresStore::connect(&options)
        .await
        .with_context(|| format!("opening the store {}", redacted(uri)))
}

/// `uri` as it may be shown: its password (in the user part, or a
/// `password=` parameter) replaced by `***`.
pub(crate) fn redacted(uri: &str) -> String {
    let (scheme, rest) = uri.split_once("://").unwrap_or(("", uri));
    let (authority_end, _) = rest
        .char_indices()
        .find(|(_, c)| matches!(c, '/' | '?'))
        .unwrap_or((rest.len(), ' '));
    let (authority, tail) = rest.split_at(authority_end);
    let authority = match authority.rsplit_once('@') {
        Some((user, host)) => match user.split_once(':') {
            Some((name, _)) => format!("{name}:***@{host}"),
            None => format!("{user}@{host}"),
        },
        None => authority.to_owned(),
    };
    let tail = match tail.split_once('?') {
        Some((path, query)) => {
            let query: Vec<String> = query
                .split('&')
                .map(|pair| match pair.split_once('=') {
                    Some((key, _)) if key.eq_ignore_ascii_case("password") => {
                        format!("{key}=***")
                    }
                    _ => pair.to_owned(),
                })
                .collect();
            format!("{path}?{}", query.join("&"))
        }
        None => tail.to_owned(),
    };
    format!("{scheme}://{authority}{tail}")
}

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

/// Where [`open_sqlite`] puts `default_name` without a path; `None` when
/// there is no data directory.
pub(crate) fn default_sqlite_path(default_name: &str) -> Option<PathBuf> {
    data_dir()
        .ok()
        .map(|dir| dir.join("toolgate").join(default_name))
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_postgres_uri_is_a_database_and_anything_else_a_file() {
        assert!(matches!(
            location(
                Some(Path::new("postgres://db.internal/toolgate")),
                &StoreSettings::default()
            ),
            StoreLocation::Postgres(uri) if uri == "postgres://db.internal/toolgate"
        ));
        assert!(matches!(
            location(
                Some(Path::new("postgresql://u@/toolgate?host=/run/postgresql")),
                &StoreSettings::default()
            ),
            StoreLocation::Postgres(_)
        ));
        assert!(matches!(
            location(Some(Path::new("postgres.db")), &StoreSettings::default()),
            StoreLocation::Sqlite(Some(_))
        ));
        assert!(matches!(
            location(None, &StoreSettings::default()),
            StoreLocation::Sqlite(None)
        ));
        let configured = StoreSettings {
            url: Some("postgres://db/toolgate".to_owned()),
            ..StoreSettings::default()
        };
        assert!(matches!(
            location(None, &configured),
            StoreLocation::Postgres(uri) if uri == "postgres://db/toolgate"
        ));
        // --store wins over the configuration.
        assert!(matches!(
            location(Some(Path::new("local.db")), &configured),
            StoreLocation::Sqlite(Some(_))
        ));
    }

    #[test]
    fn a_shown_uri_never_holds_the_password() {
        assert_eq!(
            redacted("postgres://toolgate:s3cr%40t@db:5432/toolgate?sslmode=disable"),
            "postgres://toolgate:***@db:5432/toolgate?sslmode=disable"
        );
        assert_eq!(
            redacted("postgresql://toolgate@/toolgate?host=/run/postgresql&password=s3cret"),
            "postgresql://toolgate@/toolgate?host=/run/postgresql&password=***"
        );
        assert_eq!(redacted("postgres://db.internal"), "postgres://db.internal");
    }
}
