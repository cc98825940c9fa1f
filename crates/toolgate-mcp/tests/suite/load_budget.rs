//! `[tools] max_loaded_tokens` in the gateway, per session: a load past the
//! budget unloads the groups the session called least recently, records
//! each unload in its history (a restarted gateway restores the same
//! list), and says which went in the load's answer.

use pretty_assertions::assert_eq;
use serde_json::json;
use toolgate_core::{Encoding, LoadBudget, TokenCounter};
use toolgate_mcp::HttpOptions;
use toolgate_store::SqliteStore;

use super::support::{CORE, call, connect, is_error, loopback, options, serve, text, tool_names};

fn tokens_of(gateway: &toolgate_mcp::Gateway<SqliteStore>, groups: &[&str]) -> usize {
    let counter = TokenCounter::new(Encoding::O200kBase).unwrap();
    gateway.with_catalog(|catalog| {
        groups
            .iter()
            .flat_map(|group| catalog.group_tools(group))
            .map(|tool| counter.tool(tool))
            .sum()
    })
}

fn tools_of(gateway: &toolgate_mcp::Gateway<SqliteStore>, group: &str) -> Vec<String> {
    gateway.with_catalog(|catalog| {
        catalog
            .group_tools(group)
            .map(|tool| tool.name.to_string())
            .collect()
    })
}

#[tokio::test]
async fn a_session_past_the_budget_loses_its_least_recently_called_group_even_after_a_restart() {
    let root = tempfile::tempdir().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("sessions.db");
    // The budget is set once the catalog is known: start once to measure.
    let measuring = serve(
        options(root.path(), vec![]),
        SqliteStore::open(dir.path().join("measure.db")).unwrap(),
        loopback(),
        HttpOptions::default(),
    )
    .await;
    // Room for time, files and web but one token: files (loaded after
    // time, never called) goes, not time (loaded first, called).
    let budget = tokens_of(&measuring.gateway, &["time", "files", "web"]) - 1;
    let files_tools = tools_of(&measuring.gateway, "files");
    let web_tools = tools_of(&measuring.gateway, "web");
    measuring.stop().await;

    let mut budgeted = options(root.path(), vec![]);
    budgeted.load_budget = LoadBudget::Tokens(budget);
    let first = serve(
        budgeted.clone(),
        SqliteStore::open(&db).unwrap(),
        loopback(),
        HttpOptions::default(),
    )
    .await;
    let address = first.address;
    let (client, _) = connect(&first.url).await;
    call(&client, "load_tool_group", json!({"group_name": "time"})).await;
    call(&client, "load_tool_group", json!({"group_name": "files"})).await;
    let now = call(&client, "time_now", json!({"timezone": "UTC"})).await;
    assert!(!is_error(&now), "{}", text(&now));
    assert!(tool_names(&client).await.contains(&files_tools[0]));
    let web = call(&client, "load_tool_group", json!({"group_name": "web"})).await;
    assert!(!is_error(&web), "{}", text(&web));
    // The same answer the agent loop gives: the load's, then the budget's.
    assert!(
        text(&web).ends_with(&format!(
            "\n\nUnloaded 'files' (least recently used first) to keep the loaded tools within \
             their budget of {budget} tokens; load_tool_group loads a group again."
        )),
        "{}",
        text(&web)
    );
    let expected = [
        &CORE[..],
        &["time_now", "time_convert"],
        &web_tools.iter().map(String::as_str).collect::<Vec<_>>()[..],
    ]
    .concat();
    assert_eq!(tool_names(&client).await, expected);
    first.stop().await;

    // A restarted gateway restores the session with the unload.
    let second = serve(
        budgeted,
        SqliteStore::open(&db).unwrap(),
        address,
        HttpOptions::default(),
    )
    .await;
    assert_eq!(second.gateway.sessions().live_count().await, 0);
    assert_eq!(tool_names(&client).await, expected);
    // And with the calls it had made: loading files again unloads web
    // (never called), not time (loaded first, but called), as the live
    // session would have.
    let files = call(&client, "load_tool_group", json!({"group_name": "files"})).await;
    assert!(
        text(&files).contains("Unloaded 'web' (least recently used first)"),
        "{}",
        text(&files)
    );
    let names = tool_names(&client).await;
    assert!(names.contains(&"time_now".to_owned()), "{names:?}");
    assert!(!names.contains(&web_tools[0]), "{names:?}");
}

#[tokio::test]
async fn a_load_past_a_quarter_of_the_window_is_refused_with_the_tools_to_name_instead() {
    let root = tempfile::tempdir().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let measuring = serve(
        options(root.path(), vec![]),
        SqliteStore::open(dir.path().join("measure.db")).unwrap(),
        loopback(),
        HttpOptions::default(),
    )
    .await;
    let files = tokens_of(&measuring.gateway, &["files"]);
    let files_tools = tools_of(&measuring.gateway, "files");
    measuring.stop().await;

    // A window whose quarter is one token short of the files group.
    let mut small = options(root.path(), vec![]);
    small.context_window = 4 * (files - 1);
    let served = serve(
        small,
        SqliteStore::open(dir.path().join("sessions.db")).unwrap(),
        loopback(),
        HttpOptions::default(),
    )
    .await;
    let (client, _) = connect(&served.url).await;
    let whole = call(&client, "load_tool_group", json!({"group_name": "files"})).await;
    assert!(is_error(&whole), "{}", text(&whole));
    assert_eq!(
        text(&whole),
        format!(
            "Nothing was loaded: group 'files' would hold {files} tokens of tool schemas, more \
             than one load may bring for this model ({}). Load only the tools you need, naming \
             them in 'tools'. Its {} tools: {}.",
            files - 1,
            files_tools.len(),
            files_tools.join(", ")
        )
    );
    assert_eq!(tool_names(&client).await, CORE, "nothing was loaded");
    // One tool of it fits.
    let one = call(
        &client,
        "load_tool_group",
        json!({"group_name": "files", "tools": [files_tools[0]]}),
    )
    .await;
    assert!(!is_error(&one), "{}", text(&one));
    assert!(tool_names(&client).await.contains(&files_tools[0]));
    served.stop().await;
}
