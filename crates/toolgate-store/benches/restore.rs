//! How long restoring a session takes: reading back a conversation of
//! 10,000 messages (what a gateway does for a session it does not hold),
//! on each backend (divan).
//!
//! `cargo bench -p toolgate-store` measures the in-memory and SQLite stores;
//! PostgreSQL is measured when `TOOLGATE_BENCH_POSTGRES_URL` names a database
//! it may write to (for instance the one `scripts/with-postgres` starts:
//! `.peers/venv/bin/python scripts/with-postgres sh -c
//! 'TOOLGATE_BENCH_POSTGRES_URL=$TOOLGATE_TEST_POSTGRES_URL cargo bench -p toolgate-store'`),
//! and skipped with a message without it.
#![expect(
    clippy::unwrap_used,
    clippy::print_stderr,
    reason = "benchmark setup: a broken fixture should abort loudly"
)]

use std::sync::LazyLock;

use divan::Bencher;
use toolgate_core::{Message, ToolStatus};
use toolgate_store::{
    ConversationId, ConversationStore, MemoryStore, PostgresOptions, PostgresStore, SqliteStore,
};

fn main() {
    divan::main();
}

/// Messages in the restored conversation.
const MESSAGES: usize = 10_000;

static RUNTIME: LazyLock<tokio::runtime::Runtime> = LazyLock::new(|| {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
});

/// A session's worth of messages: turns of a user message, a tool call, its
/// result and an answer.
fn message(i: usize) -> Message {
    match i % 4 {
        0 => Message::user(format!("turn {i}: what is on my calendar?")),
        1 => Message::tool_call(
            format!("c{i}"),
            "load_tool_group",
            r#"{"group_name":"google_calendar"}"#,
            ToolStatus::Success,
        ),
        2 => Message::tool_result(
            format!("c{i}"),
            "load_tool_group",
            "Loaded 7 tools from group 'Google Calendar'",
            ToolStatus::Success,
        ),
        _ => Message::assistant(format!("Turn {i}: three meetings, the first at nine.")),
    }
}

/// `store` with one conversation of [`MESSAGES`] messages, and its id.
fn filled<S: ConversationStore>(store: S) -> (S, ConversationId) {
    let conversation = ConversationId::new(format!("restore-{}", std::process::id()));
    RUNTIME.block_on(async {
        for i in 0..MESSAGES {
            store.append(&conversation, message(i)).await.unwrap();
        }
    });
    (store, conversation)
}

fn restore<S: ConversationStore>(bencher: Bencher, store: &S, conversation: &ConversationId) {
    bencher.bench(|| {
        let messages = RUNTIME.block_on(store.messages(conversation)).unwrap();
        assert_eq!(messages.len(), MESSAGES);
        messages
    });
}

#[divan::bench(sample_count = 30)]
fn memory(bencher: Bencher) {
    let (store, conversation) = filled(MemoryStore::new());
    restore(bencher, &store, &conversation);
}

#[divan::bench(sample_count = 30)]
fn sqlite_file(bencher: Bencher) {
    let dir = tempfile::tempdir().unwrap();
    let (store, conversation) = filled(SqliteStore::open(dir.path().join("bench.db")).unwrap());
    restore(bencher, &store, &conversation);
}

#[divan::bench(sample_count = 30)]
fn postgres(bencher: Bencher) {
    let Ok(url) = std::env::var("TOOLGATE_BENCH_POSTGRES_URL") else {
        eprintln!("postgres: skipped (set TOOLGATE_BENCH_POSTGRES_URL to measure it)");
        return;
    };
    let store = RUNTIME
        .block_on(PostgresStore::connect(&PostgresOptions::new(url)))
        .unwrap();
    let (store, conversation) = filled(store);
    restore(bencher, &store, &conversation);
    RUNTIME.block_on(store.delete(&conversation)).unwrap();
}
