//! The gateway over streamable HTTP with the built-in groups: the listing,
//! loads and `list_changed`, blocked calls, `call_tool`, validation, unload,
//! sessions (isolation, restart, expiry, stateless) and the HTTP guards.

use std::time::Duration;

use pretty_assertions::assert_eq;
use rmcp::ServiceExt;
use rmcp::model::{ClientCapabilities, ClientConfig, Implementation, ProtocolVersion};
use rmcp::service::{ClientLifecycleMode, ClientServiceExt};
use rmcp::transport::StreamableHttpClientTransport;
use serde_json::json;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use toolgate_mcp::HttpOptions;
use toolgate_store::{MemoryStore, SqliteStore};

use super::support::{
    CORE, Recorder, call, connect, is_error, loopback, options, serve, serve_default,
    serve_in_memory, text, tool_names,
};

fn files_root() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("notes.txt"), "first line\nsecond line\n").unwrap();
    dir
}

#[tokio::test]
async fn turn_one_lists_the_core_tools_only() {
    let root = files_root();
    let served = serve_default(root.path(), vec![]).await;
    let (client, _) = connect(&served.url).await;
    let tools = client.list_all_tools().await.unwrap();
    let names: Vec<_> = tools.iter().map(|tool| tool.name.as_ref()).collect();
    assert_eq!(names, CORE);
    // The group list rides in load_tool_group's description too.
    let load = tools[0].description.as_deref().unwrap();
    assert!(
        load.ends_with("\n\n## Available Tool Groups\n\nUse `load_tool_group` to load tools from a group before using them: the tools you name, or the whole group.\n\n- time: Current date and time in any timezone, and conversion of a time between timezones\n- files: List, read and search files under the files root\n- web: Search the web and fetch web pages as text"),
        "{load}"
    );
    let instructions = client.peer_info().unwrap().instructions.clone().unwrap();
    assert!(
        instructions.contains("## Available Tool Groups\n\nUse `load_tool_group` to load tools from a group before using them: the tools you name, or the whole group.\n\n- time: "),
        "{instructions}"
    );
}

#[tokio::test]
async fn a_load_sends_one_list_changed_and_carries_the_schemas() {
    let root = files_root();
    let served = serve_default(root.path(), vec![]).await;
    let (client, recorder) = connect(&served.url).await;

    let loaded = call(&client, "load_tool_group", json!({"group_name": "time"})).await;
    let loaded_text = text(&loaded);
    assert!(!is_error(&loaded), "{loaded_text}");
    assert!(
        loaded_text.starts_with("Loaded 2 tools from group 'Time':\n- time_now: "),
        "{loaded_text}"
    );
    recorder.wait_for_list_changed(1).await;

    let listed = client.list_all_tools().await.unwrap();
    let names: Vec<_> = listed.iter().map(|t| t.name.as_ref()).collect();
    assert_eq!(names, [&CORE[..], &["time_now", "time_convert"]].concat());
    let structured = loaded.structured_content.unwrap();
    assert_eq!(structured["group"], "time");
    let schemas = structured["tools"].as_array().unwrap();
    assert_eq!(schemas.len(), 2);
    for (schema, tool) in schemas.iter().zip(&listed[3..]) {
        assert_eq!(*schema, serde_json::to_value(tool).unwrap());
    }

    // Loading it again answers the same and changes nothing.
    let again = call(&client, "load_tool_group", json!({"group_name": "time"})).await;
    assert_eq!(text(&again), loaded_text);
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert_eq!(recorder.list_changed(), 1);
}

#[tokio::test]
async fn load_errors_are_tool_results_with_the_contract_text() {
    let root = files_root();
    let served = serve_default(root.path(), vec![]).await;
    let (client, recorder) = connect(&served.url).await;

    let unknown = call(&client, "load_tool_group", json!({"group_name": "tme"})).await;
    assert!(is_error(&unknown));
    assert!(
        text(&unknown).starts_with("Tool group 'tme' not found. Available groups: time, files"),
        "{}",
        text(&unknown)
    );
    let missing = call(&client, "load_tool_group", json!({})).await;
    assert_eq!(
        text(&missing),
        "Required parameter 'group_name' is missing."
    );
    assert!(is_error(&missing));
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert_eq!(recorder.list_changed(), 0);
}

#[tokio::test]
async fn a_call_outside_the_session_set_is_blocked_until_its_group_loads() {
    let root = files_root();
    let served = serve_default(root.path(), vec![]).await;
    let (client, _) = connect(&served.url).await;

    let blocked = call(&client, "files_read", json!({"path": "notes.txt"})).await;
    assert!(is_error(&blocked));
    assert_eq!(
        text(&blocked),
        "Tool 'files_read' is not available for this agent. It belongs to tool group 'files'; \
         call load_tool_group with group_name 'files' and tools [\"files_read\"] first (without \
         tools it loads the whole group)."
    );
    let via_call_tool = call(
        &client,
        "call_tool",
        json!({"name": "files_read", "arguments": {"path": "notes.txt"}}),
    )
    .await;
    assert_eq!(text(&via_call_tool), text(&blocked));
    let unknown = call(&client, "no_such_tool", json!({})).await;
    assert_eq!(
        text(&unknown),
        "Tool 'no_such_tool' is not available for this agent."
    );

    call(&client, "load_tool_group", json!({"group_name": "files"})).await;
    let read = call(&client, "files_read", json!({"path": "notes.txt"})).await;
    assert!(!is_error(&read), "{}", text(&read));
    assert_eq!(text(&read), "first line\nsecond line\n");
    let via_call_tool = call(
        &client,
        "call_tool",
        json!({"name": "files_read", "arguments": {"path": "notes.txt", "start_line": 2}}),
    )
    .await;
    assert_eq!(text(&via_call_tool), "second line");
}

#[tokio::test]
async fn invalid_arguments_are_refused_naming_the_field() {
    let root = files_root();
    let served = serve_default(root.path(), vec![]).await;
    let (client, _) = connect(&served.url).await;
    call(&client, "load_tool_group", json!({"group_name": "files"})).await;

    let wrong_type = call(
        &client,
        "files_read",
        json!({"path": "notes.txt", "max_lines": "ten"}),
    )
    .await;
    assert!(is_error(&wrong_type));
    assert_eq!(
        text(&wrong_type),
        "Invalid arguments for tool 'files_read': 'max_lines': \"ten\" is not of type \"integer\"."
    );
    let missing = call(
        &client,
        "call_tool",
        json!({"name": "files_read", "arguments": {}}),
    )
    .await;
    assert_eq!(
        text(&missing),
        "Invalid arguments for tool 'files_read': \"path\" is a required property."
    );
}

#[tokio::test]
async fn unload_removes_the_group_and_sends_list_changed() {
    let root = files_root();
    let served = serve_default(root.path(), vec![]).await;
    let (client, recorder) = connect(&served.url).await;
    call(&client, "load_tool_group", json!({"group_name": "time"})).await;
    call(&client, "load_tool_group", json!({"group_name": "files"})).await;
    recorder.wait_for_list_changed(2).await;

    let unloaded = call(&client, "unload_tool_group", json!({"group_name": "time"})).await;
    assert!(!is_error(&unloaded), "{}", text(&unloaded));
    recorder.wait_for_list_changed(3).await;
    assert_eq!(
        tool_names(&client).await,
        [&CORE[..], &["files_list", "files_read", "files_search"]].concat()
    );
    let blocked = call(&client, "time_now", json!({})).await;
    assert!(is_error(&blocked));
    let not_loaded = call(&client, "unload_tool_group", json!({"group_name": "time"})).await;
    assert!(is_error(&not_loaded));
}

#[tokio::test]
async fn sessions_are_isolated_between_parallel_clients() {
    let root = files_root();
    let served = serve_default(root.path(), vec![]).await;
    let ((a, _), (b, b_recorder)) = tokio::join!(connect(&served.url), connect(&served.url));
    let (loaded, _) = tokio::join!(
        call(&a, "load_tool_group", json!({"group_name": "files"})),
        call(&b, "load_tool_group", json!({"group_name": "time"})),
    );
    assert!(!is_error(&loaded));

    assert_eq!(
        tool_names(&a).await,
        [&CORE[..], &["files_list", "files_read", "files_search"]].concat()
    );
    assert_eq!(
        tool_names(&b).await,
        [&CORE[..], &["time_now", "time_convert"]].concat()
    );
    let blocked = call(&b, "files_list", json!({})).await;
    assert!(is_error(&blocked), "{}", text(&blocked));
    b_recorder.wait_for_list_changed(1).await;
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert_eq!(b_recorder.list_changed(), 1, "b hears only its own load");
}

#[tokio::test]
async fn a_restarted_gateway_restores_the_session_from_its_history() {
    let root = files_root();
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("sessions.db");
    let first = serve(
        options(root.path(), vec![]),
        SqliteStore::open(&db).unwrap(),
        loopback(),
        HttpOptions::default(),
    )
    .await;
    let address = first.address;
    let (client, _) = connect(&first.url).await;
    call(&client, "load_tool_group", json!({"group_name": "files"})).await;
    call(&client, "load_tool_group", json!({"group_name": "time"})).await;
    call(&client, "unload_tool_group", json!({"group_name": "files"})).await;
    first.stop().await;

    // Same port, same store, a new process-worth of state: the client goes on
    // with its session id and never initializes again.
    let second = serve(
        options(root.path(), vec![]),
        SqliteStore::open(&db).unwrap(),
        address,
        HttpOptions::default(),
    )
    .await;
    assert_eq!(second.gateway.sessions().live_count().await, 0);
    assert_eq!(
        tool_names(&client).await,
        [&CORE[..], &["time_now", "time_convert"]].concat()
    );
    let now = call(&client, "time_now", json!({"timezone": "UTC"})).await;
    assert!(!is_error(&now), "{}", text(&now));
}

#[tokio::test]
async fn idle_sessions_expire_with_their_history() {
    let root = files_root();
    let mut options = options(root.path(), vec![]);
    options.session_idle_timeout = Duration::from_millis(300);
    let served = serve_in_memory(options).await;
    let (client, _) = connect(&served.url).await;
    call(&client, "load_tool_group", json!({"group_name": "time"})).await;
    let sessions = served.gateway.sessions();
    assert_eq!(sessions.live_count().await, 1);

    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(sessions.expire_idle().await, 1);
    assert_eq!(sessions.live_count().await, 0);
    // The history went too: the session starts over with core tools.
    assert_eq!(tool_names(&client).await, CORE);
}

#[tokio::test]
async fn stateless_2026_07_28_requests_use_call_tool_without_a_session() {
    let root = files_root();
    let served = serve_default(root.path(), vec![]).await;
    let client = ClientConfig::new(
        ClientCapabilities::default(),
        Implementation::new("stateless", "0"),
    )
    .serve_with_lifecycle(
        StreamableHttpClientTransport::from_uri(served.url.clone()),
        ClientLifecycleMode::Discover {
            preferred_versions: vec![ProtocolVersion::V_2026_07_28],
        },
    )
    .await
    .unwrap();
    assert_eq!(
        client.peer_info().unwrap().protocol_version,
        ProtocolVersion::V_2026_07_28
    );

    let params = |name: &str, arguments: serde_json::Value| {
        rmcp::model::CallToolRequestParams::new(name.to_owned())
            .with_arguments(arguments.as_object().unwrap().clone())
    };
    let loaded = client
        .call_tool(params("load_tool_group", json!({"group_name": "files"})))
        .await
        .unwrap();
    assert!(
        loaded.structured_content.unwrap()["tools"]
            .as_array()
            .unwrap()
            .len()
            == 3
    );
    let read = client
        .call_tool(params(
            "call_tool",
            json!({"name": "files_read", "arguments": {"path": "notes.txt"}}),
        ))
        .await
        .unwrap();
    assert_eq!(text(&read), "first line\nsecond line\n");
    assert_eq!(
        served.gateway.sessions().live_count().await,
        0,
        "nothing is kept per request"
    );
}

/// Sends one raw HTTP request and returns the status line.
async fn raw_status(address: std::net::SocketAddr, headers: &str) -> String {
    let mut stream = tokio::net::TcpStream::connect(address).await.unwrap();
    let body = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"0"}}}"#;
    let request = format!(
        "POST /mcp HTTP/1.1\r\n{headers}content-type: application/json\r\naccept: application/json, text/event-stream\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
        body.len()
    );
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut response = vec![0; 256];
    let read = stream.read(&mut response).await.unwrap();
    String::from_utf8_lossy(&response[..read])
        .lines()
        .next()
        .unwrap_or_default()
        .to_owned()
}

#[tokio::test]
async fn http_guards_check_host_origin_and_the_bearer_token() {
    let root = files_root();
    let http = HttpOptions {
        bearer_token: Some("0123456789abcdef-token".into()),
        ..HttpOptions::default()
    };
    let served = serve(
        options(root.path(), vec![]),
        MemoryStore::new(),
        loopback(),
        http,
    )
    .await;
    let address = served.address;
    let host = format!("host: 127.0.0.1:{}\r\n", address.port());
    let auth = "authorization: Bearer 0123456789abcdef-token\r\n";

    assert_eq!(
        raw_status(address, &host).await,
        "HTTP/1.1 401 Unauthorized"
    );
    assert_eq!(
        raw_status(address, &format!("{host}authorization: Bearer wrong\r\n")).await,
        "HTTP/1.1 401 Unauthorized"
    );
    assert_eq!(
        raw_status(address, &format!("{host}{auth}")).await,
        "HTTP/1.1 200 OK"
    );
    assert!(
        raw_status(address, &format!("host: evil.example.com\r\n{auth}"))
            .await
            .starts_with("HTTP/1.1 4")
    );
    assert!(
        raw_status(
            address,
            &format!("{host}{auth}origin: http://evil.example.com\r\n")
        )
        .await
        .starts_with("HTTP/1.1 4")
    );
    assert_eq!(
        raw_status(
            address,
            &format!("{host}{auth}origin: http://localhost:6274\r\n")
        )
        .await,
        "HTTP/1.1 200 OK"
    );
}

#[tokio::test]
async fn only_the_mcp_metrics_and_status_paths_are_served() {
    let root = files_root();
    let served = serve_default(root.path(), vec![]).await;
    let get = |path: &'static str, host: &'static str| async move {
        let mut stream = tokio::net::TcpStream::connect(served.address)
            .await
            .unwrap();
        let request = format!("GET {path} HTTP/1.1\r\nhost: {host}\r\nconnection: close\r\n\r\n");
        stream.write_all(request.as_bytes()).await.unwrap();
        let mut response = String::new();
        stream.read_to_string(&mut response).await.unwrap();
        response
    };
    let other = get("/other", "127.0.0.1").await;
    assert!(other.starts_with("HTTP/1.1 404"), "{other}");
    assert!(other.contains("/mcp"), "{other}");
    let page = get("/", "127.0.0.1").await;
    assert!(page.starts_with("HTTP/1.1 200"), "{page}");
    assert!(page.contains("<title>toolgate status</title>"), "{page}");
    assert!(
        page.contains("content-security-policy: default-src 'none'"),
        "{page}"
    );
    // Without a token, a page that rebinds its own name to this address
    // gets neither the status page nor the metrics.
    for path in ["/", "/metrics"] {
        let rebound = get(path, "evil.example:80").await;
        assert!(rebound.starts_with("HTTP/1.1 403"), "{path}: {rebound}");
    }
}

#[tokio::test]
async fn a_client_that_never_refreshes_still_reaches_loaded_tools() {
    // Load, then call_tool; tools/list is never asked again.
    let root = files_root();
    let served = serve_default(root.path(), vec![]).await;
    let recorder = Recorder::default();
    let client = recorder
        .clone()
        .serve(StreamableHttpClientTransport::from_uri(served.url.clone()))
        .await
        .unwrap();
    call(&client, "load_tool_group", json!({"group_name": "time"})).await;
    let converted = call(
        &client,
        "call_tool",
        json!({"name": "time_convert", "arguments": {"time": "2026-01-15T12:00:00Z", "source_timezone": "UTC", "target_timezone": "Asia/Tokyo"}}),
    )
    .await;
    assert!(!is_error(&converted), "{}", text(&converted));
    assert_eq!(
        converted.structured_content.unwrap()["target"]["datetime"],
        "2026-01-15T21:00:00+09:00"
    );
}

#[tokio::test]
async fn the_search_offered_above_a_number_of_groups_answers_with_the_routing_settings() {
    let root = files_root();
    let mut options = options(root.path(), vec![]);
    options.tools.search_above_groups = Some(0);
    options.tools.routing = Some(toolgate_core::routing::RoutingConfig {
        search: Some(toolgate_core::routing::SearchRanks::Groups),
        search_groups: Some(1),
        search_tools: Some(1),
        ..Default::default()
    });
    assert!(options.routing.is_none(), "not `--route`");
    let served = serve_in_memory(options).await;
    let (client, _) = connect(&served.url).await;
    let found = call(
        &client,
        "find_tool_groups",
        json!({"query": "convert the time to Tokyo, then read and list the files"}),
    )
    .await;
    assert!(!is_error(&found), "{}", text(&found));
    let groups = found.structured_content.unwrap()["groups"].clone();
    let groups = groups.as_array().unwrap();
    assert_eq!(groups.len(), 1, "{groups:?}");
    assert_eq!(
        groups[0]["tools"].as_array().unwrap().len(),
        1,
        "{groups:?}"
    );
    served.stop().await;
}

#[tokio::test]
async fn find_tool_groups_ranks_the_groups_for_a_request() {
    let root = files_root();
    let mut options = options(root.path(), vec![]);
    options.routing = Some(toolgate_core::routing::RoutingConfig {
        search: Some(toolgate_core::routing::SearchRanks::Groups),
        ..Default::default()
    });
    let served = serve_in_memory(options).await;
    let (client, _) = connect(&served.url).await;
    let mut core: Vec<String> = CORE.iter().map(|s| (*s).to_owned()).collect();
    core.push("find_tool_groups".to_owned());
    assert_eq!(tool_names(&client).await, core);

    let found = call(
        &client,
        "find_tool_groups",
        json!({"query": "convert 9am Paris time to the Tokyo timezone"}),
    )
    .await;
    assert!(!is_error(&found), "{}", text(&found));
    let shown = text(&found);
    assert!(
        shown.starts_with("Groups for this request, most likely first ("),
        "{shown}"
    );
    assert!(
        shown.lines().nth(1).unwrap().starts_with("- time ("),
        "{shown}"
    );
    // The group comes with its best-matching tools, one line each.
    assert!(
        shown
            .lines()
            .nth(2)
            .unwrap()
            .starts_with("  - time_convert: "),
        "{shown}"
    );
    let structured = found.structured_content.unwrap();
    assert_eq!(structured["routed"][0], "time");
    assert_eq!(structured["groups"][0]["tools"][0]["name"], "time_convert");
    assert!(structured["groups"][0]["tool_count"].as_u64().unwrap() >= 2);

    let missing = call(&client, "find_tool_groups", json!({})).await;
    assert!(is_error(&missing));
    assert_eq!(text(&missing), "Required parameter 'query' is missing.");
    served.stop().await;
}

#[tokio::test]
async fn a_routing_config_naming_an_unknown_group_stops_the_start() {
    let root = files_root();
    let mut options = options(root.path(), vec![]);
    options.routing = Some(toml::from_str("recovery_groups = [\"tiem\"]\n").unwrap());
    let error = toolgate_mcp::Gateway::start(options, MemoryStore::new())
        .await
        .unwrap_err()
        .to_string();
    assert_eq!(
        error,
        "[routing]: recovery_groups names group 'tiem', which is not in the catalog. Known groups: time, files, web"
    );
}
