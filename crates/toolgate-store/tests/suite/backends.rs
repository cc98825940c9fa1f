//! The conformance suite against each backend, and what only a file can show.

use serde_json::json;
use toolgate_core::{
    Catalog, GroupId, Message, Origin, ToolDefinition, ToolGroup, ToolName, ToolStatus,
    restore_active_set,
};
use toolgate_store::{ConversationId, ConversationStore, MemoryStore, SqliteStore};

use super::conformance::conformance;

#[tokio::test]
async fn memory_store_conforms() {
    conformance(MemoryStore::new()).await;
}

#[tokio::test]
async fn sqlite_in_memory_conforms() {
    conformance(SqliteStore::open_in_memory().unwrap()).await;
}

#[tokio::test]
async fn sqlite_file_conforms() {
    let dir = tempfile::tempdir().unwrap();
    conformance(SqliteStore::open(dir.path().join("toolgate.db")).unwrap()).await;
}

/// Restoring from history across a restart: a new process opening the same file rebuilds the
/// conversation's loaded groups from the stored calls alone.
#[tokio::test]
async fn loaded_groups_survive_a_reopen_of_the_file() {
    let mut catalog = Catalog::new();
    let group = ToolGroup::new(GroupId::new("pdf").unwrap(), "PDF Tools", "PDFs");
    let tool = ToolDefinition::new(ToolName::new("pdf_info").unwrap(), "Info", json!({})).unwrap();
    catalog
        .register_group_with_tools(group, Origin::Builtin, vec![(tool, Origin::Builtin)])
        .unwrap();

    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("toolgate.db");
    let conversation = ConversationId::new("session-1");
    {
        let store = SqliteStore::open(&path).unwrap();
        let input = r#"{"group_name":"pdf"}"#;
        store
            .append(
                &conversation,
                Message::tool_call("c1", "load_tool_group", input, ToolStatus::Pending),
            )
            .await
            .unwrap();
        store
            .set_tool_status(&conversation, "c1", ToolStatus::Success)
            .await
            .unwrap();
    }
    let store = SqliteStore::open(&path).unwrap();
    let messages: Vec<Message> = store
        .messages(&conversation)
        .await
        .unwrap()
        .into_iter()
        .map(|stored| stored.message)
        .collect();
    let restored = restore_active_set(&messages, &catalog);
    assert_eq!(
        restored.active.loaded_groups(),
        [GroupId::new("pdf").unwrap()]
    );
}

/// Many writers on one store: every append lands, once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_appends_all_land() {
    let store = std::sync::Arc::new(SqliteStore::open_in_memory().unwrap());
    let conversation = ConversationId::new("busy");
    let tasks: Vec<_> = (0..50)
        .map(|i| {
            let (store, conversation) = (std::sync::Arc::clone(&store), conversation.clone());
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
    assert_eq!(store.messages(&conversation).await.unwrap().len(), 50);
}
