//! JavaScript tools a client writes through `js_tool_management`: each
//! client's are its own (seen, changed and run by it alone, apart from the
//! operator's of the same name), and they act with that client's policy.

use std::collections::{BTreeMap, BTreeSet};
use std::net::SocketAddr;
use std::sync::Arc;

use toolgate_core::{ActionPolicy, ToolPolicy};
use toolgate_mcp::{ClientName, Clients, HttpOptions, TokenHash};
use toolgate_store::MemoryStore;

use super::policies::{ALICE, BOB, call, load, open, tools};
use super::support::{Served, loopback, options, serve};

/// The shared token of the gateways of the tools clients write: the
/// operator's, whose tools are the ones listed.
const OPERATOR: &str = "operator-token-0123456789";

/// A gateway whose clients (name, token, policy) write JavaScript tools
/// of their own through `js_tool_management`, reaching the files under
/// `root` and the web as the built-in tools do; the operator comes in with
/// [`OPERATOR`].
async fn served_with_user_tools(
    root: &std::path::Path,
    clients: Vec<(&str, &str, ToolPolicy)>,
) -> Served<MemoryStore> {
    let mut options = options(root, vec![]);
    let builtins = toolgate_tools::BuiltinConfig::new(root);
    let config = toolgate_tools::JavaScriptConfig::default();
    let user_tools = toolgate_tools::UserJsTools::new(
        Arc::new(MemoryStore::new()) as Arc<dyn toolgate_store::JsToolStore>,
        toolgate_store::ToolOwner::new(toolgate_tools::DEFAULT_TOOL_OWNER),
        &config,
        Some(&builtins),
    )
    .unwrap();
    user_tools.add_to(&mut options.tools);
    options.tools.javascript = config;
    let names = || {
        clients
            .iter()
            .map(|(name, ..)| ClientName::new(name).unwrap())
    };
    options.policies = Arc::new(
        names()
            .zip(clients.iter().map(|(.., policy)| policy.clone()))
            .collect(),
    );
    let http = HttpOptions {
        clients: Clients::new(
            names().zip(clients.iter().map(|(_, token, _)| TokenHash::of(token))),
        )
        .unwrap(),
        bearer_token: Some(OPERATOR.to_owned()),
        ..HttpOptions::default()
    };
    let served = serve(options, MemoryStore::new(), loopback(), http).await;
    user_tools.attach(served.gateway.toolbox());
    served
}

#[tokio::test(flavor = "multi_thread")]
async fn a_tool_a_client_writes_acts_with_that_clients_policy() {
    let root = tempfile::tempdir().unwrap();
    std::fs::write(root.path().join("secret.txt"), "the secret").unwrap();
    let token = "tg_mallory-token";
    let policy = ToolPolicy {
        deny_groups: BTreeSet::from(["files".to_owned()]),
        actions: BTreeMap::from([("web".to_owned(), ActionPolicy::deny(["fetch"]))]),
        ..ToolPolicy::default()
    };
    let served = served_with_user_tools(root.path(), vec![("mallory", token, policy)]).await;
    let address = served.address;
    let (session, _) = open(address, token).await;
    let (text, error) = load(address, token, &session, "js_tool_management").await;
    assert!(!error, "{text}");
    let (text, error) = call(
        address,
        token,
        &session,
        "create_js_tool",
        serde_json::json!({
            "name": "peek",
            "description": "Reads a file and fetches a page",
            "parameters": {"type": "object", "properties": {"what": {"type": "string"}}},
            "source": "async function peek({ what }) { if (what === 'file') return files.read('secret.txt'); return (await fetch('http://127.0.0.1:9/')).status; }"
        }),
    )
    .await;
    assert!(!error, "{text}");
    let (text, error) = load(address, token, &session, "user_tools").await;
    assert!(!error, "{text}");
    for (what, refused) in [("file", "files_read"), ("page", "web_fetch")] {
        let arguments = serde_json::json!({ "what": what });
        let (text, error) = call(address, token, &session, "peek", arguments).await;
        assert!(error, "{text}");
        assert!(
            text.contains(&format!("{refused} is not available to this caller")),
            "{text}"
        );
        assert!(!text.contains("the secret"), "{text}");
    }
    served.stop().await;
}

/// `name`'s JavaScript tool, created through `js_tool_management`, that
/// answers `answer`.
fn tool_answering(name: &str, answer: &str) -> serde_json::Value {
    serde_json::json!({
        "name": name,
        "description": format!("Says {answer}"),
        "source": format!("function {name}() {{ return {answer:?}; }}"),
    })
}

#[tokio::test(flavor = "multi_thread")]
async fn each_client_writes_and_runs_tools_of_its_own() {
    let root = tempfile::tempdir().unwrap();
    let served = served_with_user_tools(
        root.path(),
        vec![
            ("alice", ALICE, ToolPolicy::default()),
            ("bob", BOB, ToolPolicy::default()),
        ],
    )
    .await;
    let address = served.address;
    // The operator's tool of the name is the one the catalog lists.
    let (operators, _) = open(address, OPERATOR).await;
    for group in ["js_tool_management", "user_tools"] {
        let _ = load(address, OPERATOR, &operators, group).await;
        let arguments = tool_answering("peek", "the operator's");
        let _ = call(address, OPERATOR, &operators, "create_js_tool", arguments).await;
    }
    let (alices, _) = open(address, ALICE).await;
    let (bobs, _) = open(address, BOB).await;
    for (token, session) in [(ALICE, &alices), (BOB, &bobs)] {
        let (text, error) = load(address, token, session, "js_tool_management").await;
        assert!(!error, "{text}");
    }
    let (text, error) = call(
        address,
        ALICE,
        &alices,
        "create_js_tool",
        tool_answering("peek", "alice's"),
    )
    .await;
    assert!(!error, "{text}");
    let (text, error) = load(address, ALICE, &alices, "user_tools").await;
    assert!(!error && text.contains("- peek:"), "{text}");
    let (text, _) = call(address, ALICE, &alices, "peek", serde_json::json!({})).await;
    assert_eq!(text, "alice's");

    bob_sees_changes_and_runs_none_of_alices_tools(address, &bobs).await;

    // Bob's tool of the same name is his; each runs their own.
    let (text, error) = call(
        address,
        BOB,
        &bobs,
        "create_js_tool",
        tool_answering("peek", "bob's"),
    )
    .await;
    assert!(!error, "{text}");
    let (text, error) = load(address, BOB, &bobs, "user_tools").await;
    assert!(!error && text.contains("- peek:"), "{text}");
    let (text, _) = call(address, BOB, &bobs, "peek", serde_json::json!({})).await;
    assert_eq!(text, "bob's");
    let (text, _) = call(address, ALICE, &alices, "peek", serde_json::json!({})).await;
    assert_eq!(text, "alice's");
    let listed = tools(address, ALICE, &alices).await;
    let descriptions: Vec<&str> = listed
        .iter()
        .filter(|tool| tool["name"] == "peek")
        .filter_map(|tool| tool["description"].as_str())
        .collect();
    assert_eq!(descriptions, ["Says alice's"]);
    let (text, _) = call(address, OPERATOR, &operators, "peek", serde_json::json!({})).await;
    assert_eq!(text, "the operator's");
    served.stop().await;
}

/// Bob sees none of Alice's tools, cannot change them, and cannot run them.
async fn bob_sees_changes_and_runs_none_of_alices_tools(address: SocketAddr, bobs: &str) {
    let (text, error) = call(address, BOB, bobs, "list_user_tools", serde_json::json!({})).await;
    assert!(!error && !text.contains("peek"), "{text}");
    let (text, error) = call(
        address,
        BOB,
        bobs,
        "update_js_tool",
        tool_answering("peek", "bob's"),
    )
    .await;
    assert!(
        error && text.contains("you have no tool named 'peek'"),
        "{text}"
    );
    let (text, error) = load(address, BOB, bobs, "user_tools").await;
    assert!(
        error && text == "Tool group 'user_tools' has no available tools.",
        "{text}"
    );
    let (text, error) = call(address, BOB, bobs, "peek", serde_json::json!({})).await;
    assert!(
        error && text.starts_with("Tool 'peek' is not available"),
        "{text}"
    );
    let through = serde_json::json!({"name": "peek", "arguments": {}});
    let (text, error) = call(address, BOB, bobs, "call_tool", through).await;
    assert!(error && !text.contains("alice's"), "{text}");
}
