//! `find_tool_groups` that loads the tools it lists (`FoundTools::Loaded`,
//! what `toolgate serve` runs): the model calls a listed tool at once, the
//! load is in the session's history (a restarted gateway restores it), and
//! where loaded schemas go decides what the answer carries.

use pretty_assertions::assert_eq;
use serde_json::json;
use toolgate_core::routing::RoutingConfig;
use toolgate_core::{FoundTools, LoadedSchemas};
use toolgate_mcp::{GatewayOptions, HttpOptions};
use toolgate_store::SqliteStore;

use super::support::{CORE, call, connect, is_error, loopback, options, serve, text, tool_names};

const REQUEST: &str = "convert 9am Paris time to the Tokyo timezone";

/// A gateway that searches, listing its best `tools` across groups and
/// loading them, as `toolgate serve` does.
pub(super) fn searching(root: &std::path::Path, tools: usize) -> GatewayOptions {
    let mut options = options(root, vec![]);
    options.routing = Some(RoutingConfig {
        search_results: Some(tools),
        ..RoutingConfig::default()
    });
    options.tools.found_tools = FoundTools::Loaded;
    options
}

#[tokio::test]
async fn the_tools_a_search_lists_are_called_at_once_and_restored_after_a_restart() {
    let root = tempfile::tempdir().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("sessions.db");
    let first = serve(
        searching(root.path(), 1),
        SqliteStore::open(&db).unwrap(),
        loopback(),
        HttpOptions::default(),
    )
    .await;
    let address = first.address;
    let (client, _) = connect(&first.url).await;
    let found = call(&client, "find_tool_groups", json!({ "query": REQUEST })).await;
    assert!(!is_error(&found), "{}", text(&found));
    let shown = text(&found);
    assert!(
        shown.starts_with("The best tools for this request, under their groups (")
            && shown
                .lines()
                .next()
                .unwrap()
                .ends_with("; the tools listed are loaded:"),
        "{shown}"
    );
    // Named alone: its schema, in the tool list, carries its description.
    assert_eq!(shown.lines().nth(2), Some("  - time_convert"), "{shown}");
    assert!(
        shown.contains("listed under the groups are loaded: call them by name."),
        "{shown}"
    );
    // Only the listed tool of the group: the rest waits for a load.
    let listed = tool_names(&client).await;
    assert!(listed.contains(&"time_convert".to_owned()), "{listed:?}");
    assert!(!listed.contains(&"time_now".to_owned()), "{listed:?}");
    let converted = call(
        &client,
        "time_convert",
        json!({"time": "2026-01-15T12:00:00Z", "source_timezone": "UTC", "target_timezone": "Asia/Tokyo"}),
    )
    .await;
    assert!(!is_error(&converted), "{}", text(&converted));
    first.stop().await;

    let second = serve(
        searching(root.path(), 1),
        SqliteStore::open(&db).unwrap(),
        address,
        HttpOptions::default(),
    )
    .await;
    assert_eq!(tool_names(&client).await, listed);
    second.stop().await;
}

#[tokio::test]
async fn in_the_conversation_the_answer_carries_the_schemas_and_the_tool_list_stays() {
    let root = tempfile::tempdir().unwrap();
    let mut options = searching(root.path(), 1);
    options.loaded_schemas = LoadedSchemas::Conversation;
    let served = serve(
        options,
        SqliteStore::open(root.path().join("sessions.db")).unwrap(),
        loopback(),
        HttpOptions::default(),
    )
    .await;
    let (client, _) = connect(&served.url).await;
    let before = tool_names(&client).await;
    let mut core: Vec<String> = CORE.iter().map(|s| (*s).to_owned()).collect();
    core.push("find_tool_groups".to_owned());
    assert_eq!(before, core);
    let found = call(&client, "find_tool_groups", json!({ "query": REQUEST })).await;
    let shown = text(&found);
    assert!(
        shown.contains(
            "listed under the groups are loaded, but not added to your tool list: call one \
             with call_tool"
        ),
        "{shown}"
    );
    assert!(
        shown.contains("\n{\"name\":\"time_convert\",\"description\":"),
        "{shown}"
    );
    assert_eq!(tool_names(&client).await, before);
    let converted = call(
        &client,
        "call_tool",
        json!({"name": "time_convert", "arguments": {"time": "2026-01-15T12:00:00Z", "source_timezone": "UTC", "target_timezone": "Asia/Tokyo"}}),
    )
    .await;
    assert!(!is_error(&converted), "{}", text(&converted));
    // A tool of the group the search did not list is not loaded.
    let now = call(
        &client,
        "call_tool",
        json!({"name": "time_now", "arguments": {"timezone": "UTC"}}),
    )
    .await;
    assert!(is_error(&now), "{}", text(&now));
    served.stop().await;
}

/// A search's loads count toward `[tools] max_loaded_tokens` like any load:
/// the least recently used go after it (never its own tools), its answer
/// says which, and a restarted gateway restores the same list.
#[tokio::test]
async fn a_search_past_the_budget_unloads_the_least_recently_used_even_after_a_restart() {
    let root = tempfile::tempdir().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("sessions.db");
    let counter = toolgate_core::TokenCounter::new(toolgate_core::Encoding::O200kBase).unwrap();
    let measuring = serve(
        searching(root.path(), 1),
        SqliteStore::open(dir.path().join("measure.db")).unwrap(),
        loopback(),
        HttpOptions::default(),
    )
    .await;
    let (files, convert) = measuring.gateway.with_catalog(|catalog| {
        let files: usize = catalog.group_tools("files").map(|t| counter.tool(t)).sum();
        let convert = counter.tool(catalog.tool("time_convert").unwrap().definition);
        (files, convert)
    });
    measuring.stop().await;
    // Room for the files group or the converter, not both.
    let budget = files + convert - 1;
    let mut options = searching(root.path(), 1);
    options.load_budget = toolgate_core::LoadBudget::Tokens(budget);
    let first = serve(
        options.clone(),
        SqliteStore::open(&db).unwrap(),
        loopback(),
        HttpOptions::default(),
    )
    .await;
    let address = first.address;
    let (client, _) = connect(&first.url).await;
    call(&client, "load_tool_group", json!({"group_name": "files"})).await;
    let found = call(&client, "find_tool_groups", json!({ "query": REQUEST })).await;
    assert!(!is_error(&found), "{}", text(&found));
    assert!(
        text(&found).ends_with(&format!(
            "\n\nUnloaded 'files' (least recently used first) to keep the loaded tools within \
             their budget of {budget} tokens; load_tool_group loads a group again."
        )),
        "{}",
        text(&found)
    );
    let listed = tool_names(&client).await;
    let mut expected: Vec<String> = CORE.iter().map(|name| (*name).to_owned()).collect();
    expected.extend(["find_tool_groups".to_owned(), "time_convert".to_owned()]);
    assert_eq!(listed, expected);
    first.stop().await;

    let second = serve(
        options,
        SqliteStore::open(&db).unwrap(),
        address,
        HttpOptions::default(),
    )
    .await;
    assert_eq!(tool_names(&client).await, listed, "restored as it was");
    second.stop().await;
}
