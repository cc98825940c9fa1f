//! Groups consolidated into one polymorphic tool, through the gateway: a
//! real upstream (mcp-server-time) and the built-in `web`.

use pretty_assertions::assert_eq;
use serde_json::{Value, json};
use toolgate_core::Alias;
use toolgate_store::MemoryStore;
use toolgate_tools::{GroupExposure, GroupSettings};

use super::support::{CORE, call, connect, is_error, options, serve_in_memory, text, tool_names};
use super::upstreams::{peers, stdio};
use toolgate_core::ActionPolicy;

fn polymorphic(policy: ActionPolicy) -> GroupSettings {
    GroupSettings {
        expose: Some(GroupExposure::Polymorphic),
        policy,
    }
}

fn json_text(result: &rmcp::model::CallToolResult) -> Value {
    let value: Value = serde_json::from_str(&text(result)).unwrap();
    assert_eq!(
        result.structured_content.as_ref(),
        Some(&value),
        "the text and the structured content agree"
    );
    value
}

#[tokio::test]
async fn an_upstream_group_becomes_one_tool_with_actions_and_old_names_keep_working() {
    let peers = peers();
    let root = tempfile::tempdir().unwrap();
    let clock = stdio("clock", peers.venv_bin.join("mcp-server-time"), &[]);
    let mut options = options(root.path(), vec![clock]);
    options
        .tools
        .groups
        .insert("clock".to_owned(), polymorphic(ActionPolicy::default()));
    let served = serve_in_memory(options).await;
    let (client, _) = connect(&served.url).await;

    let loaded = call(&client, "load_tool_group", json!({"group_name": "clock"})).await;
    assert!(
        text(&loaded).starts_with("Loaded 1 tool from group 'Clock':\n- clock: "),
        "{}",
        text(&loaded)
    );
    assert_eq!(tool_names(&client).await, [&CORE[..], &["clock"]].concat());
    let listed = client.list_all_tools().await.unwrap();
    let schema = Value::Object((*listed[3].input_schema).clone());
    assert_eq!(
        schema["properties"]["action"]["enum"],
        json!(["get_current_time", "convert_time"])
    );

    let now = call(
        &client,
        "clock",
        json!({"action": "get_current_time", "timezone": "Europe/Paris"}),
    )
    .await;
    assert!(!is_error(&now), "{}", text(&now));
    let now = json_text(&now);
    assert_eq!(now["type"], "result");
    assert_eq!(now["action"], "get_current_time");
    assert_eq!(now["result"]["timezone"], "Europe/Paris");

    let typo = call(&client, "clock", json!({"action": "get_curent_time"})).await;
    assert!(is_error(&typo));
    assert_eq!(
        json_text(&typo),
        json!({"type": "error", "error": "Invalid action 'get_curent_time'",
            "did_you_mean": "get_current_time",
            "allowed_actions": ["get_current_time", "convert_time"]})
    );
    let missing = call(&client, "clock", json!({"action": "get_current_time"})).await;
    assert_eq!(
        json_text(&missing)["error"],
        "timezone is required for action 'get_current_time'"
    );
    let wrong_type = call(
        &client,
        "clock",
        json!({"action": "get_current_time", "timezone": 5}),
    )
    .await;
    let wrong_type = json_text(&wrong_type);
    assert_eq!(wrong_type["type"], "error");
    assert!(
        wrong_type["error"]
            .as_str()
            .unwrap()
            .starts_with("Invalid arguments for tool 'get_current_time': 'timezone'"),
        "{wrong_type}"
    );

    // The old name is an alias of the action, and counts as it. Calls that
    // named no valid action (the typo, the missing timezone) count nowhere.
    let old = call(
        &client,
        "get_current_time",
        json!({"timezone": "Asia/Tokyo"}),
    )
    .await;
    assert!(!is_error(&old), "{}", text(&old));
    assert_eq!(json_text(&old)["result"]["timezone"], "Asia/Tokyo");
    assert_eq!(
        served.gateway.toolbox().action_calls(),
        [("clock".to_owned(), "get_current_time".to_owned(), 3)]
    );
    served.stop().await;
}

#[tokio::test]
async fn a_policy_hides_denied_actions_and_refuses_them_by_old_name_too() {
    let peers = peers();
    let root = tempfile::tempdir().unwrap();
    let clock = stdio("clock", peers.venv_bin.join("mcp-server-time"), &[]);
    let mut options = options(root.path(), vec![clock]);
    let policy = ActionPolicy {
        allow: None,
        deny: vec!["convert_time".to_owned()],
    };
    options
        .tools
        .groups
        .insert("clock".to_owned(), polymorphic(policy));
    let served = serve_in_memory(options).await;
    let (client, _) = connect(&served.url).await;
    call(&client, "load_tool_group", json!({"group_name": "clock"})).await;
    let listed = client.list_all_tools().await.unwrap();
    let schema = Value::Object((*listed[3].input_schema).clone());
    assert_eq!(
        schema["properties"]["action"]["enum"],
        json!(["get_current_time"])
    );
    let denied = call(
        &client,
        "clock",
        json!({"action": "convert_time", "source_timezone": "UTC", "time": "10:00",
            "target_timezone": "Asia/Tokyo"}),
    )
    .await;
    assert_eq!(
        json_text(&denied),
        json!({"type": "error", "error": "Action 'convert_time' is not allowed here",
            "allowed_actions": ["get_current_time"]})
    );
    let old = call(&client, "convert_time", json!({})).await;
    assert!(is_error(&old));
    assert_eq!(
        text(&old),
        "Tool 'convert_time' is not available for this agent."
    );
    served.stop().await;
}

#[tokio::test]
async fn the_web_builtin_is_one_tool_by_default_and_configured_aliases_reach_it() {
    let root = tempfile::tempdir().unwrap();
    let mut options = options(root.path(), vec![]);
    options.tools.aliases.push((
        "fetch_page".to_owned(),
        Alias::new(toolgate_core::ToolName::new("web").unwrap()).with_action("fetch"),
    ));
    let served = serve_in_memory(options).await;
    let (client, _) = connect(&served.url).await;
    let loaded = call(&client, "load_tool_group", json!({"group_name": "web"})).await;
    assert!(
        text(&loaded).starts_with("Loaded 1 tool from group 'Web':\n- web: "),
        "{}",
        text(&loaded)
    );
    let search = call(&client, "web", json!({"action": "search", "query": "rust"})).await;
    let search = json_text(&search);
    assert_eq!(search["type"], "error");
    assert!(
        search["error"]
            .as_str()
            .unwrap()
            .starts_with("No search endpoint is configured"),
        "{search}"
    );
    for name in ["web_fetch", "fetch_page"] {
        let fetched = call(&client, name, json!({"url": "ftp://example.com"})).await;
        assert_eq!(
            json_text(&fetched),
            json!({"type": "error", "error": "Invalid URL: must be http or https, not ftp",
                "url": "ftp://example.com"})
        );
    }
    let crawl = call(&client, "web", json!({"action": "crawl", "url": "x"})).await;
    assert_eq!(
        json_text(&crawl)["allowed_actions"],
        json!(["search", "fetch"])
    );
    served.stop().await;
}

#[tokio::test]
async fn a_group_that_cannot_be_one_tool_stops_the_start_with_the_reason() {
    let root = tempfile::tempdir().unwrap();
    let mut options = options(root.path(), vec![]);
    let policy = ActionPolicy {
        allow: Some(vec!["nope".to_owned()]),
        deny: Vec::new(),
    };
    options
        .tools
        .groups
        .insert("time".to_owned(), polymorphic(policy));
    let error = toolgate_mcp::Gateway::start(options, MemoryStore::new())
        .await
        .unwrap_err()
        .to_string();
    assert_eq!(
        error,
        "group `time` cannot be exposed as one polymorphic tool: the action policy names unknown actions: nope (the actions are: now, convert)"
    );
}

#[tokio::test]
async fn a_manifest_group_becomes_one_tool_too() {
    let root = tempfile::tempdir().unwrap();
    let manifests = root.path().join("tools");
    std::fs::create_dir(&manifests).unwrap();
    std::fs::write(
        manifests.join("pdf.json"),
        json!([
            {"_meta": true, "display_name": "PDF Tools", "description": "Read PDF files"},
            {"name": "pdf_info", "description": "Page count",
             "parameters": {"type": "object", "properties": {"path": {"type": "string"}},
                            "required": ["path"]}},
            {"name": "pdf_text", "description": "Extract the text",
             "parameters": {"type": "object", "properties": {"path": {"type": "string"},
                            "pages": {"type": "string"}}, "required": ["path"]}}
        ])
        .to_string(),
    )
    .unwrap();
    let mut options = options(root.path(), vec![]);
    options.tools.manifest_dirs = vec![manifests];
    options
        .tools
        .groups
        .insert("pdf".to_owned(), polymorphic(ActionPolicy::default()));
    let served = serve_in_memory(options).await;
    let (client, _) = connect(&served.url).await;
    let loaded = call(&client, "load_tool_group", json!({"group_name": "pdf"})).await;
    assert!(
        text(&loaded).starts_with("Loaded 1 tool from group 'PDF Tools':\n- pdf: Read PDF files"),
        "{}",
        text(&loaded)
    );
    let listed = client.list_all_tools().await.unwrap();
    let schema = Value::Object((*listed[3].input_schema).clone());
    assert_eq!(
        schema["properties"]["action"]["enum"],
        json!(["info", "text"])
    );
    assert_eq!(schema["required"], json!(["action", "path"]));
    assert_eq!(
        schema["properties"]["pages"]["description"],
        json!("For text.")
    );
    // Manifest tools have nothing to run them in the gateway: the error says
    // so, with the action and the type field.
    for (name, arguments) in [
        ("pdf", json!({"action": "text", "path": "a.pdf"})),
        ("pdf_text", json!({"path": "a.pdf"})),
    ] {
        let result = call(&client, name, arguments).await;
        assert_eq!(
            json_text(&result),
            json!({"type": "error", "action": "text",
                "error": "Tool 'pdf_text' is defined by a manifest or catalog file but has no implementation in this gateway."})
        );
    }
    served.stop().await;
}
