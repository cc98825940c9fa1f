//! JavaScript tools an agent writes through the gateway: a session that
//! loaded `user_tools` hears `notifications/tools/list_changed` when one is
//! created, and can call it at once; a session that did not load it hears
//! nothing.

use std::sync::Arc;

use pretty_assertions::assert_eq;
use serde_json::json;
use toolgate_store::{JsToolStore, MemoryStore, ToolOwner};
use toolgate_tools::{JavaScriptConfig, UserJsTools};

use super::support::{
    CORE, Served, call, connect, is_error, load, options, serve_in_memory, text, tool_names,
};

/// A gateway with the built-ins and the team's JavaScript tools.
async fn serve_with_user_tools(files_root: &std::path::Path) -> Served<MemoryStore> {
    let config = JavaScriptConfig::default();
    let tools = UserJsTools::new(
        Arc::new(MemoryStore::new()) as Arc<dyn JsToolStore>,
        ToolOwner::new("team"),
        &config,
        None,
    )
    .unwrap();
    let mut options = options(files_root, Vec::new());
    options.tools.sources.push(tools.management());
    options.tools.listed.push(tools.tools());
    options.tools.javascript = config;
    let served = serve_in_memory(options).await;
    tools.attach(served.gateway.toolbox());
    served
}

#[tokio::test(flavor = "multi_thread")]
async fn a_session_with_user_tools_loaded_hears_of_a_new_tool_and_calls_it() {
    let dir = tempfile::tempdir().unwrap();
    let served = serve_with_user_tools(dir.path()).await;
    let (writer, writer_events) = connect(&served.url).await;
    let (bystander, bystander_events) = connect(&served.url).await;

    // Nothing written yet: the group is there, empty.
    let empty = call(
        &writer,
        "load_tool_group",
        json!({"group_name": "user_tools"}),
    )
    .await;
    assert_eq!(
        text(&empty),
        "Tool group 'user_tools' has no available tools."
    );
    load(&writer, "js_tool_management").await;
    writer_events.wait_for_list_changed(1).await;

    let created = call(
        &writer,
        "create_js_tool",
        json!({
            "name": "shout",
            "description": "Upper-cases text",
            "parameters": {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]},
            "source": "const shout = ({ text }) => text.toUpperCase() + '!';"
        }),
    )
    .await;
    assert!(!is_error(&created), "{}", text(&created));

    // Now the group has a tool, and loading it is heard of once.
    load(&writer, "user_tools").await;
    writer_events.wait_for_list_changed(2).await;
    assert_eq!(
        text(&call(&writer, "shout", json!({"text": "hi"})).await),
        "HI!"
    );

    // A second tool: the session with the group loaded hears of it and
    // sees it listed.
    let created = call(
        &writer,
        "create_js_tool",
        json!({
            "name": "whisper",
            "description": "Lower-cases text",
            "parameters": {"type": "object", "properties": {"text": {"type": "string"}}},
            "function": "run",
            "source": "function run({ text }) { return text.toLowerCase(); }"
        }),
    )
    .await;
    assert!(!is_error(&created), "{}", text(&created));
    writer_events.wait_for_list_changed(3).await;
    let listed = tool_names(&writer).await;
    assert!(listed.iter().any(|name| name == "whisper"), "{listed:?}");
    assert_eq!(
        text(&call(&writer, "whisper", json!({"text": "HUSH"})).await),
        "hush"
    );
    let whisper = writer
        .list_all_tools()
        .await
        .unwrap()
        .into_iter()
        .find(|tool| tool.name == "whisper")
        .unwrap();
    assert_eq!(whisper.description.as_deref(), Some("Lower-cases text"));

    // Deleting it is heard of too.
    let deleted = call(&writer, "delete_js_tool", json!({"name": "whisper"})).await;
    assert_eq!(text(&deleted), "Deleted tool 'whisper'.");
    writer_events.wait_for_list_changed(4).await;
    assert!(
        !tool_names(&writer)
            .await
            .iter()
            .any(|name| name == "whisper")
    );

    // The session that loaded nothing heard nothing and sees the core tools.
    assert_eq!(bystander_events.list_changed(), 0);
    assert_eq!(tool_names(&bystander).await, CORE);
    served.stop().await;
}
