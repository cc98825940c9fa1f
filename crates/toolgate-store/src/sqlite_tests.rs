use pretty_assertions::assert_eq;
use toolgate_core::Message;

use super::*;

#[tokio::test]
async fn a_new_file_is_migrated_to_the_latest_schema_in_wal_mode() {
    let dir = tempfile::tempdir().unwrap();
    let store = SqliteStore::open(dir.path().join("toolgate.db")).unwrap();
    assert_eq!(store.schema_version().unwrap(), MIGRATIONS.len() as i64);
    let mode: String = store
        .connection
        .lock()
        .unwrap()
        .query_row("PRAGMA journal_mode", [], |row| row.get(0))
        .unwrap();
    assert_eq!(mode, "wal");
}

#[tokio::test]
async fn reopening_keeps_messages_and_does_not_migrate_twice() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("toolgate.db");
    let conversation = ConversationId::new("c1");
    {
        let store = SqliteStore::open(&path).unwrap();
        store
            .append(&conversation, Message::user("hello"))
            .await
            .unwrap();
    }
    let store = SqliteStore::open(&path).unwrap();
    let messages = store.messages(&conversation).await.unwrap();
    assert_eq!(messages.len(), 1);
    assert_eq!(messages[0].message, Message::user("hello"));
}

#[tokio::test]
async fn a_version_1_database_gains_agents_and_keeps_its_conversations() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("toolgate.db");
    {
        let connection = Connection::open(&path).unwrap();
        connection.execute_batch(MIGRATIONS[0]).unwrap();
        connection.pragma_update(None, "user_version", 1).unwrap();
        connection
            .execute(
                "INSERT INTO conversations (id, created_ms, active_ms) VALUES ('old', 1, 1)",
                [],
            )
            .unwrap();
    }
    let store = SqliteStore::open(&path).unwrap();
    assert_eq!(store.schema_version().unwrap(), 2);
    let old = ConversationId::new("old");
    assert!(store.exists(&old).await.unwrap());
    assert_eq!(store.conversation_agent(&old).await.unwrap(), None);
    store
        .save_agent(crate::AgentRecord::new("a", "A"))
        .await
        .unwrap();
    let agent = crate::AgentId::new("a");
    store.set_conversation_agent(&old, &agent).await.unwrap();
    assert_eq!(store.conversation_agent(&old).await.unwrap(), Some(agent));
}

#[tokio::test]
async fn a_database_from_a_newer_toolgate_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("toolgate.db");
    Connection::open(&path)
        .unwrap()
        .pragma_update(None, "user_version", 99)
        .unwrap();
    let error = SqliteStore::open(&path).unwrap_err();
    assert_eq!(
        error.to_string(),
        "the database schema is version 99, newer than this toolgate's 2"
    );
}

#[tokio::test]
async fn a_corrupt_row_is_an_error_naming_it() {
    let store = SqliteStore::open_in_memory().unwrap();
    let conversation = ConversationId::new("c");
    let id = store
        .append(&conversation, Message::user("x"))
        .await
        .unwrap();
    store
        .connection
        .lock()
        .unwrap()
        .execute(
            "UPDATE messages SET kind = 'telepathy' WHERE id = ?1",
            [id.0],
        )
        .unwrap();
    let error = store.messages(&conversation).await.unwrap_err();
    assert_eq!(
        error.to_string(),
        format!(
            "stored message {} is corrupt: unknown kind `telepathy`",
            id.0
        )
    );
}
