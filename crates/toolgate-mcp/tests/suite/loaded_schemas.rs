//! `[tools] loaded_schemas = "conversation"` in the gateway: a session's
//! `tools/list` does not change on a load and no `list_changed` is sent;
//! the load's answer carries the schemas, and the loaded tools are called
//! by name or through `call_tool`, each client still held to its policy.

use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;
use std::time::Duration;

use pretty_assertions::assert_eq;
use rmcp::ServiceExt;
use rmcp::model::CallToolResult;
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use serde_json::{Value, json};
use toolgate_core::{LoadedSchemas, ToolPolicy};
use toolgate_mcp::{ClientName, Clients, HttpOptions, TokenHash};
use toolgate_store::{MemoryStore, SqliteStore};

use super::support::{
    CORE, Client, Recorder, Served, call, connect, is_error, loopback, options, serve, text,
    tool_names,
};
use super::upstreams::{peers, stdio};

const ALICE: &str = "tg_alice-0123456789abcdef";
const BOB: &str = "tg_bob-0123456789abcdef";

/// What every load of the time group answers first (for Alice and Bob
/// alike: the count is of the tools each may see).
fn loaded_heading(tools: &str) -> String {
    format!(
        "Loaded {tools} from group 'Time'. They are not added to your tool list: call one with \
         call_tool, as {{\"name\": \"<tool name>\", \"arguments\": {{<its arguments>}}}}. Their \
         schemas, one JSON object per tool:"
    )
}

/// A gateway whose loads keep to the conversation (`loaded_schemas`),
/// with two clients: Alice may use the time group but `time_convert`,
/// Bob everything.
async fn served(loaded_schemas: LoadedSchemas) -> (Served<MemoryStore>, tempfile::TempDir) {
    let root = tempfile::tempdir().unwrap();
    std::fs::write(root.path().join("notes.txt"), "first line\n").unwrap();
    let alice = ClientName::new("alice").unwrap();
    let clients = Clients::new([
        (alice.clone(), TokenHash::of(ALICE)),
        (ClientName::new("bob").unwrap(), TokenHash::of(BOB)),
    ])
    .unwrap();
    let policy = ToolPolicy {
        allow_groups: Some(BTreeSet::from(["time".to_owned()])),
        deny_tools: BTreeSet::from(["time_convert".to_owned()]),
        ..ToolPolicy::default()
    };
    let mut options = options(root.path(), vec![]);
    options.policies = Arc::new(HashMap::from([(alice, policy)]));
    options.loaded_schemas = loaded_schemas;
    let http = HttpOptions {
        clients,
        ..HttpOptions::default()
    };
    (
        serve(options, MemoryStore::new(), loopback(), http).await,
        root,
    )
}

/// A session of the client whose token is `token`.
async fn connect_as(url: &str, token: &str) -> (Client, Recorder) {
    let recorder = Recorder::default();
    let config = StreamableHttpClientTransportConfig::with_uri(url.to_owned()).auth_header(token);
    let client = recorder
        .clone()
        .serve(StreamableHttpClientTransport::from_config(config))
        .await
        .unwrap();
    (client, recorder)
}

/// The session's `tools/list`, as JSON, exactly as the client received it.
async fn listed(client: &Client) -> String {
    serde_json::to_string(&client.list_all_tools().await.unwrap()).unwrap()
}

/// A load's text: its first line, then each tool's schema read back.
fn read_load(loaded: &CallToolResult) -> (String, Vec<Value>) {
    let text = text(loaded);
    let mut lines = text.lines();
    let heading = lines.next().unwrap_or_default().to_owned();
    let schemas = lines
        .map(|line| serde_json::from_str(line).unwrap())
        .collect();
    (heading, schemas)
}

/// Each tool of a load's structured content (as `tools/list` would give
/// it) as the text's line gives it.
fn as_text_lines(loaded: &CallToolResult) -> Vec<Value> {
    let structured = loaded.structured_content.clone().unwrap();
    structured["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|tool| {
            json!({
                "name": tool["name"],
                "description": tool["description"],
                "input_schema": tool["inputSchema"],
            })
        })
        .collect()
}

#[tokio::test]
async fn a_load_keeps_the_tool_list_sends_no_list_changed_and_answers_with_the_schemas() {
    let (served, _root) = served(LoadedSchemas::Conversation).await;
    let (client, recorder) = connect_as(&served.url, BOB).await;
    let before = listed(&client).await;
    assert_eq!(tool_names(&client).await, CORE);

    let loaded = call(&client, "load_tool_group", json!({"group_name": "time"})).await;
    assert!(!is_error(&loaded), "{}", text(&loaded));
    let (heading, schemas) = read_load(&loaded);
    assert_eq!(heading, loaded_heading("2 tools"));
    let names: Vec<&str> = schemas
        .iter()
        .map(|s| s["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["time_now", "time_convert"]);
    assert_eq!(schemas, as_text_lines(&loaded));
    assert_eq!(loaded.structured_content.as_ref().unwrap()["group"], "time");

    assert_eq!(listed(&client).await, before, "tools/list is unchanged");
    // Loaded, by name and through call_tool.
    let now = call(&client, "time_now", json!({"timezone": "UTC"})).await;
    assert!(!is_error(&now), "{}", text(&now));
    let convert = json!({"time": "2026-01-01T09:00", "source_timezone": "Europe/Paris", "target_timezone": "Asia/Tokyo"});
    let via_call_tool = call(
        &client,
        "call_tool",
        json!({"name": "time_convert", "arguments": convert}),
    )
    .await;
    assert!(!is_error(&via_call_tool), "{}", text(&via_call_tool));
    // A group not loaded stays out of reach until it is.
    let read = json!({"name": "files_read", "arguments": {"path": "notes.txt"}});
    let blocked = call(&client, "call_tool", read.clone()).await;
    assert!(
        is_error(&blocked) && text(&blocked).starts_with("Tool 'files_read' is not available"),
        "{}",
        text(&blocked)
    );
    call(&client, "load_tool_group", json!({"group_name": "files"})).await;
    assert_eq!(
        text(&call(&client, "call_tool", read).await),
        "first line\n"
    );
    let unloaded = call(&client, "unload_tool_group", json!({"group_name": "files"})).await;
    assert!(!is_error(&unloaded), "{}", text(&unloaded));

    assert_eq!(listed(&client).await, before);
    // Time for a late notification to arrive, as the other list_changed
    // tests give it.
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert_eq!(recorder.list_changed(), 0);
}

#[tokio::test]
async fn a_tool_the_policy_denies_stays_refused_by_name_and_through_call_tool() {
    let (served, _root) = served(LoadedSchemas::Conversation).await;
    let (alice, _) = connect_as(&served.url, ALICE).await;

    let loaded = call(&alice, "load_tool_group", json!({"group_name": "time"})).await;
    let (heading, schemas) = read_load(&loaded);
    assert_eq!(heading, loaded_heading("1 tool"));
    assert_eq!(schemas, as_text_lines(&loaded));
    assert_eq!(schemas.len(), 1);
    assert_eq!(schemas[0]["name"], "time_now");
    assert!(!text(&loaded).contains("time_convert"), "{}", text(&loaded));

    let convert = json!({"time": "2026-01-01T09:00", "source_timezone": "Europe/Paris", "target_timezone": "Asia/Tokyo"});
    let refused = "Tool 'time_convert' is not available for this agent.";
    let by_name = call(&alice, "time_convert", convert.clone()).await;
    assert!(is_error(&by_name));
    assert_eq!(text(&by_name), refused);
    let through = call(
        &alice,
        "call_tool",
        json!({"name": "time_convert", "arguments": convert}),
    )
    .await;
    assert!(is_error(&through));
    assert_eq!(text(&through), refused);
    // A group outside the policy is not found, and its tools not available.
    let files = call(&alice, "load_tool_group", json!({"group_name": "files"})).await;
    assert!(is_error(&files), "{}", text(&files));
    let read = call(
        &alice,
        "call_tool",
        json!({"name": "files_read", "arguments": {"path": "notes.txt"}}),
    )
    .await;
    assert_eq!(
        text(&read),
        "Tool 'files_read' is not available for this agent."
    );
    // What it may use runs.
    let now = call(
        &alice,
        "call_tool",
        json!({"name": "time_now", "arguments": {"timezone": "UTC"}}),
    )
    .await;
    assert!(!is_error(&now), "{}", text(&now));
}

#[tokio::test]
async fn in_the_tool_list_a_load_lists_its_tools_and_sends_list_changed() {
    let (served, _root) = served(LoadedSchemas::ToolList).await;
    let (client, recorder) = connect_as(&served.url, BOB).await;
    let loaded = call(&client, "load_tool_group", json!({"group_name": "time"})).await;
    assert!(
        text(&loaded).starts_with("Loaded 2 tools from group 'Time':\n- time_now: "),
        "{}",
        text(&loaded)
    );
    recorder.wait_for_list_changed(1).await;
    assert_eq!(
        tool_names(&client).await,
        [&CORE[..], &["time_now", "time_convert"]].concat()
    );
}

#[tokio::test]
async fn a_restored_session_calls_a_loaded_upstream_tool_it_never_listed() {
    let peers = peers();
    let root = tempfile::tempdir().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("sessions.db");
    let gateway_options = || {
        let clock = stdio("clock", peers.venv_bin.join("mcp-server-time"), &[]);
        let mut options = options(root.path(), vec![clock]);
        options.loaded_schemas = LoadedSchemas::Conversation;
        options
    };
    let http = HttpOptions::default;
    let first = serve(
        gateway_options(),
        SqliteStore::open(&db).unwrap(),
        loopback(),
        http(),
    )
    .await;
    let address = first.address;
    let (client, _) = connect(&first.url).await;
    let loaded = call(&client, "load_tool_group", json!({"group_name": "clock"})).await;
    assert!(!is_error(&loaded), "{}", text(&loaded));
    first.stop().await;

    // The same session on a new gateway, whose upstream has not started:
    // the client, whose list never changed, calls without listing again.
    let second = serve(
        gateway_options(),
        SqliteStore::open(&db).unwrap(),
        address,
        http(),
    )
    .await;
    let now = call(
        &client,
        "call_tool",
        json!({"name": "get_current_time", "arguments": {"timezone": "Europe/Paris"}}),
    )
    .await;
    assert!(!is_error(&now), "{}", text(&now));
    assert!(text(&now).contains("Europe/Paris"), "{}", text(&now));
    assert_eq!(tool_names(&client).await, CORE);
    second.stop().await;
}
