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
    assert_eq!(store.schema_version().unwrap(), MIGRATIONS.len() as i64);
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
        "the database schema is version 99, newer than this toolgate's 6"
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

#[tokio::test]
async fn an_empty_file_is_refused_not_started_empty() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("toolgate.db");
    std::fs::write(&path, b"").unwrap();
    let error = SqliteStore::open(&path).unwrap_err();
    assert_eq!(
        error.to_string(),
        format!(
            "{} is empty (0 bytes), not a toolgate database: it may have been truncated. Restore it from a backup, or delete it to start with an empty store",
            path.display()
        )
    );
    assert_eq!(std::fs::read(&path).unwrap(), b"");
    let left: Vec<_> = std::fs::read_dir(dir.path()).unwrap().collect();
    assert_eq!(left.len(), 1, "no journal or WAL file was created");
}

#[tokio::test]
async fn a_file_that_is_not_a_database_is_refused_and_left_untouched() {
    let dir = tempfile::tempdir().unwrap();
    for (name, bytes) in [
        ("short.db", b"not a database at all".to_vec()),
        (
            "long.db",
            (0..8192u32).map(|i| (i * 7 % 251) as u8).collect(),
        ),
    ] {
        let path = dir.path().join(name);
        std::fs::write(&path, &bytes).unwrap();
        let error = SqliteStore::open(&path).unwrap_err();
        assert_eq!(
            error.to_string(),
            format!(
                "{} is not a toolgate database (SQLite: file is not a database); it was left untouched. Restore it from a backup, or move it away to start with an empty store",
                path.display()
            ),
            "{name}"
        );
        assert_eq!(std::fs::read(&path).unwrap(), bytes, "{name} was changed");
    }
    let left: Vec<_> = std::fs::read_dir(dir.path()).unwrap().collect();
    assert_eq!(left.len(), 2, "no journal or WAL file was created");
}

#[tokio::test]
async fn a_path_where_nothing_is_gets_a_new_database() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("new.db");
    let store = SqliteStore::open(&path).unwrap();
    assert_eq!(store.schema_version().unwrap(), MIGRATIONS.len() as i64);
    assert!(std::fs::metadata(&path).unwrap().len() > 0);
}

#[tokio::test]
async fn a_version_2_database_gains_js_tools_and_keeps_its_agents() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("toolgate.db");
    {
        let connection = Connection::open(&path).unwrap();
        connection.execute_batch(MIGRATIONS[0]).unwrap();
        connection.execute_batch(MIGRATIONS[1]).unwrap();
        connection.pragma_update(None, "user_version", 2).unwrap();
        connection
            .execute(
                "INSERT INTO agents (id, name, prompts, tools, updated_ms) VALUES ('a', 'A', '{}', '[]', 1)",
                [],
            )
            .unwrap();
    }
    let store = SqliteStore::open(&path).unwrap();
    assert_eq!(store.schema_version().unwrap(), MIGRATIONS.len() as i64);
    assert_eq!(
        store.agent(&crate::AgentId::new("a")).await.unwrap(),
        Some(crate::AgentRecord::new("a", "A"))
    );
    let owner = crate::ToolOwner::new("a");
    assert_eq!(store.js_tools(&owner).await.unwrap(), []);
}

#[tokio::test]
async fn a_corrupt_js_tool_is_an_error_naming_it() {
    let store = SqliteStore::open_in_memory().unwrap();
    store
        .connection
        .lock()
        .unwrap()
        .execute(
            "INSERT INTO js_tools VALUES ('team', 'bad', 'd', '[1]', 'run', 'src', 1, 1)",
            [],
        )
        .unwrap();
    let error = store
        .js_tools(&crate::ToolOwner::new("team"))
        .await
        .unwrap_err();
    assert_eq!(
        error.to_string(),
        "stored JavaScript tool `bad` of `team` is corrupt: input_schema: not a JSON object"
    );
}

#[tokio::test]
async fn a_version_3_database_gains_routing_outcomes_and_keeps_its_js_tools() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("toolgate.db");
    {
        let connection = Connection::open(&path).unwrap();
        for sql in &MIGRATIONS[..3] {
            connection.execute_batch(sql).unwrap();
        }
        connection.pragma_update(None, "user_version", 3).unwrap();
        connection
            .execute(
                "INSERT INTO js_tools VALUES ('team', 'kept', 'd', '{}', 'run', 'src', 1, 1)",
                [],
            )
            .unwrap();
    }
    let store = SqliteStore::open(&path).unwrap();
    assert_eq!(store.schema_version().unwrap(), MIGRATIONS.len() as i64);
    let owner = crate::ToolOwner::new("team");
    let names: Vec<String> = store
        .js_tools(&owner)
        .await
        .unwrap()
        .iter()
        .map(|tool| tool.name.to_string())
        .collect();
    assert_eq!(names, ["kept"]);
    assert_eq!(store.routing_outcomes("catalog", 10).await.unwrap(), []);
}

#[tokio::test]
async fn a_version_4_databases_outcomes_gain_no_misses_and_are_kept() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("toolgate.db");
    {
        let connection = Connection::open(&path).unwrap();
        for sql in &MIGRATIONS[..4] {
            connection.execute_batch(sql).unwrap();
        }
        connection.pragma_update(None, "user_version", 4).unwrap();
        connection
            .execute(
                "INSERT INTO routing_outcomes (catalog, fitted_confidence, held, recorded_ms)
                 VALUES ('catalog', 0.5, 0, 1)",
                [],
            )
            .unwrap();
    }
    let store = SqliteStore::open(&path).unwrap();
    assert_eq!(store.schema_version().unwrap(), MIGRATIONS.len() as i64);
    assert_eq!(
        store.routing_outcomes("catalog", 10).await.unwrap(),
        [crate::RoutingOutcome {
            fitted_confidence: 0.5,
            held: false,
            missed: Vec::new(),
        }]
    );
    // A row whose misses do not decode is named, not read as none.
    Connection::open(&path)
        .unwrap()
        .execute("UPDATE routing_outcomes SET missed = 'files'", [])
        .unwrap();
    assert_eq!(
        store
            .routing_outcomes("catalog", 10)
            .await
            .unwrap_err()
            .to_string(),
        "a stored routing outcome of catalog `catalog` is corrupt: its missed groups are not a \
         JSON array of names: expected ident at line 1 column 2"
    );
}

#[tokio::test]
async fn a_version_5_databases_js_tools_are_kept_at_revision_0_until_they_change() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("toolgate.db");
    {
        let connection = Connection::open(&path).unwrap();
        for sql in &MIGRATIONS[..5] {
            connection.execute_batch(sql).unwrap();
        }
        connection.pragma_update(None, "user_version", 5).unwrap();
        connection
            .execute(
                "INSERT INTO js_tools VALUES ('team', 'kept', 'd', '{}', 'run', 'src', 1, 1)",
                [],
            )
            .unwrap();
    }
    let store = SqliteStore::open(&path).unwrap();
    assert_eq!(store.schema_version().unwrap(), 6);
    assert!(!JsToolStore::is_shared(&store));
    let owner = crate::ToolOwner::new("team");
    assert_eq!(store.js_tools_revision(&owner).await.unwrap(), 0);
    let kept = ToolName::new("kept").unwrap();
    assert!(store.delete_js_tool(&owner, &kept).await.unwrap());
    assert_eq!(store.js_tools_revision(&owner).await.unwrap(), 1);
    assert_eq!(store.js_tools(&owner).await.unwrap(), []);
}

#[tokio::test]
async fn reopening_keeps_routing_outcomes() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("toolgate.db");
    let recorded = [
        crate::RoutingOutcome {
            fitted_confidence: 0.875,
            held: true,
            missed: Vec::new(),
        },
        crate::RoutingOutcome {
            fitted_confidence: 0.1,
            held: false,
            missed: vec!["files".to_owned()],
        },
    ];
    {
        let store = SqliteStore::open(&path).unwrap();
        for outcome in recorded.clone() {
            store
                .record_routing_outcome("catalog", outcome)
                .await
                .unwrap();
        }
    }
    let store = SqliteStore::open(&path).unwrap();
    assert_eq!(
        store.routing_outcomes("catalog", 10).await.unwrap(),
        recorded
    );
    assert_eq!(store.routing_outcomes("other", 10).await.unwrap(), []);
}
