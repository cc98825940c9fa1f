//! Per-client policies on every path a tool is seen or called by: the tool
//! list, the group listing (in `load_tool_group`'s description and the
//! server's instructions), `load_tool_group`, `find_tool_groups`, direct
//! calls and `call_tool`. Two clients at once: one restricted, one not;
//! what the first may not use is "not available" or "not found", never
//! "forbidden", and nothing of it leaks into its answers.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::net::SocketAddr;
use std::sync::Arc;

use toolgate_core::{ActionPolicy, ToolPolicy};
use toolgate_mcp::{ClientName, Clients, HttpOptions, TokenHash};
use toolgate_store::MemoryStore;

use super::support::{Served, exchange, header_value, loopback, options, serve};

pub(super) const ALICE: &str = "tg_alice-0123456789abcdef";
pub(super) const BOB: &str = "tg_bob-0123456789abcdef";

async fn served() -> Served<MemoryStore> {
    let root = tempfile::tempdir().unwrap();
    let alice = ClientName::new("alice").unwrap();
    let clients = Clients::new([
        (alice.clone(), TokenHash::of(ALICE)),
        (ClientName::new("bob").unwrap(), TokenHash::of(BOB)),
    ])
    .unwrap();
    // Alice: the time and web groups only, without time_convert, and web
    // without its fetch action.
    let policy = ToolPolicy {
        allow_groups: Some(BTreeSet::from(["time".to_owned(), "web".to_owned()])),
        deny_tools: BTreeSet::from(["time_convert".to_owned()]),
        actions: BTreeMap::from([("web".to_owned(), ActionPolicy::deny(["fetch"]))]),
        ..ToolPolicy::default()
    };
    let mut options = options(root.path(), vec![]);
    options.routing = Some(toolgate_core::routing::RoutingConfig::default());
    options.policies = Arc::new(HashMap::from([(alice, policy)]));
    let http = HttpOptions {
        clients,
        ..HttpOptions::default()
    };
    serve(options, MemoryStore::new(), loopback(), http).await
}

/// One POST over a fresh connection; the JSON-RPC answer to `id`.
async fn post(
    address: SocketAddr,
    token: &str,
    session: Option<&str>,
    id: u64,
    method: &str,
    params: serde_json::Value,
) -> (serde_json::Value, Option<String>) {
    let body = serde_json::json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})
        .to_string();
    let session_header = session.map_or(String::new(), |session| {
        format!("mcp-session-id: {session}\r\nmcp-protocol-version: 2025-11-25\r\n")
    });
    let request = format!(
        "POST /mcp HTTP/1.1\r\nhost: 127.0.0.1:{}\r\ncontent-type: application/json\r\n\
         accept: application/json, text/event-stream\r\nauthorization: Bearer {token}\r\n\
         {session_header}content-length: {}\r\nconnection: close\r\n\r\n{body}",
        address.port(),
        body.len()
    );
    let response = exchange(address, &request).await;
    let new_session = header_value(&response, "mcp-session-id");
    let answer = response
        .lines()
        .filter_map(|line| line.strip_prefix("data: "))
        .filter_map(|data| serde_json::from_str::<serde_json::Value>(data).ok())
        .find(|message| message["id"] == id)
        .unwrap_or_else(|| panic!("no answer to {id}: {response}"));
    (answer, new_session)
}

/// A client's session: its id and the instructions `initialize` gave it.
pub(super) async fn open(address: SocketAddr, token: &str) -> (String, String) {
    let params = serde_json::json!({
        "protocolVersion": "2025-11-25",
        "capabilities": {},
        "clientInfo": {"name": "policy-test", "version": "0"}
    });
    let (answer, session) = post(address, token, None, 1, "initialize", params).await;
    let session = session.expect("no session id");
    let instructions = answer["result"]["instructions"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    let note = "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}";
    let request = format!(
        "POST /mcp HTTP/1.1\r\nhost: 127.0.0.1:{}\r\ncontent-type: application/json\r\n\
         accept: application/json, text/event-stream\r\nauthorization: Bearer {token}\r\n\
         mcp-session-id: {session}\r\nmcp-protocol-version: 2025-11-25\r\n\
         content-length: {}\r\nconnection: close\r\n\r\n{note}",
        address.port(),
        note.len()
    );
    exchange(address, &request).await;
    (session, instructions)
}

/// A tool call's text, and whether it is an error result.
pub(super) async fn call(
    address: SocketAddr,
    token: &str,
    session: &str,
    tool: &str,
    arguments: serde_json::Value,
) -> (String, bool) {
    let params = serde_json::json!({"name": tool, "arguments": arguments});
    let (answer, _) = post(address, token, Some(session), 7, "tools/call", params).await;
    let result = &answer["result"];
    let text = result["content"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|block| block["text"].as_str())
        .collect::<Vec<_>>()
        .join("\n");
    (text, result["isError"] == true)
}

/// `load_tool_group` of `group`: its text, and whether it is an error.
pub(super) async fn load(
    address: SocketAddr,
    token: &str,
    session: &str,
    group: &str,
) -> (String, bool) {
    let arguments = serde_json::json!({ "group_name": group });
    call(address, token, session, "load_tool_group", arguments).await
}

/// The session's tools, by name, with their JSON.
pub(super) async fn tools(
    address: SocketAddr,
    token: &str,
    session: &str,
) -> Vec<serde_json::Value> {
    let (answer, _) = post(
        address,
        token,
        Some(session),
        8,
        "tools/list",
        serde_json::json!({}),
    )
    .await;
    answer["result"]["tools"]
        .as_array()
        .cloned()
        .unwrap_or_default()
}

fn names(tools: &[serde_json::Value]) -> Vec<&str> {
    tools
        .iter()
        .filter_map(|tool| tool["name"].as_str())
        .collect()
}

/// Alice's and Bob's sessions on one gateway: Alice is restricted, Bob
/// is not.
struct TwoClients {
    address: SocketAddr,
    alices: String,
    bobs: String,
}

#[tokio::test]
async fn a_policy_holds_on_every_path_and_only_for_its_client() {
    let served = served().await;
    let address = served.address;
    let (alices, alice_instructions) = open(address, ALICE).await;
    let (bobs, bob_instructions) = open(address, BOB).await;
    let both = TwoClients {
        address,
        alices,
        bobs,
    };

    each_lists_the_groups_it_may_use(&both, &alice_instructions, &bob_instructions).await;
    a_group_not_allowed_does_not_exist(&both).await;
    each_lists_the_tools_and_actions_it_may_use(&both).await;
    find_tool_groups_ranks_only_what_the_client_sees(&both).await;
    what_is_not_allowed_is_not_available_never_forbidden(&both).await;

    // A new policy applies at once, to the sessions already open.
    let clients = served.gateway.access().clients.clone();
    served
        .gateway
        .update_access(toolgate_mcp::Access {
            clients,
            ..toolgate_mcp::Access::default()
        })
        .await;
    let (text, error) = load(address, ALICE, &both.alices, "files").await;
    assert!(!error && text.contains("files_read"), "{text}");
    served.stop().await;
}

/// The group listing: in the instructions and in load_tool_group's description.
async fn each_lists_the_groups_it_may_use(
    both: &TwoClients,
    alice_instructions: &str,
    bob_instructions: &str,
) {
    let TwoClients {
        address, alices, ..
    } = both;
    let address = *address;
    assert!(
        alice_instructions.contains("- time:"),
        "{alice_instructions}"
    );
    assert!(
        !alice_instructions.contains("- files:"),
        "{alice_instructions}"
    );
    assert!(bob_instructions.contains("- files:"), "{bob_instructions}");
    let listed = tools(address, ALICE, alices).await;
    let load_tool = listed
        .iter()
        .find(|tool| tool["name"] == "load_tool_group")
        .unwrap();
    let description = load_tool["description"].as_str().unwrap();
    assert!(description.contains("- web:"), "{description}");
    assert!(!description.contains("files"), "{description}");
    assert!(!description.contains("js_tool_management"), "{description}");
}

/// load_tool_group: a group not allowed does not exist.
async fn a_group_not_allowed_does_not_exist(both: &TwoClients) {
    let TwoClients {
        address,
        alices,
        bobs,
    } = both;
    let address = *address;
    let (text, error) = load(address, ALICE, alices, "files").await;
    assert!(error, "{text}");
    assert!(
        text.starts_with("Tool group 'files' not found. Available groups: "),
        "{text}"
    );
    assert!(
        !text.contains("forbidden") && !text.contains("files_read"),
        "{text}"
    );
    let (text, error) = load(address, BOB, bobs, "files").await;
    assert!(!error && text.contains("files_read"), "{text}");
}

/// The tool list: time without time_convert, web without its fetch action.
async fn each_lists_the_tools_and_actions_it_may_use(both: &TwoClients) {
    let TwoClients {
        address,
        alices,
        bobs,
    } = both;
    let address = *address;
    for group in ["time", "web"] {
        for (token, session) in [(ALICE, alices), (BOB, bobs)] {
            let (text, error) = load(address, token, session, group).await;
            assert!(!error, "{text}");
        }
    }
    let (text, _) = load(address, ALICE, alices, "time").await;
    assert!(!text.contains("time_convert"), "{text}");
    let alice_tools = tools(address, ALICE, alices).await;
    assert!(names(&alice_tools).contains(&"time_now"));
    assert!(!names(&alice_tools).contains(&"time_convert"));
    assert!(
        !names(&alice_tools)
            .iter()
            .any(|name| name.starts_with("files_"))
    );
    let web = alice_tools
        .iter()
        .find(|tool| tool["name"] == "web")
        .unwrap();
    assert_eq!(
        web["inputSchema"]["properties"]["action"]["enum"],
        serde_json::json!(["search"])
    );
    assert!(
        !web["description"].as_str().unwrap().contains("- fetch"),
        "{web}"
    );
    let bob_tools = tools(address, BOB, bobs).await;
    assert!(names(&bob_tools).contains(&"time_convert"));
    let bobs_web = bob_tools.iter().find(|tool| tool["name"] == "web").unwrap();
    assert_eq!(
        bobs_web["inputSchema"]["properties"]["action"]["enum"],
        serde_json::json!(["search", "fetch"])
    );
}

/// find_tool_groups ranks only what the client sees.
async fn find_tool_groups_ranks_only_what_the_client_sees(both: &TwoClients) {
    let TwoClients {
        address,
        alices,
        bobs,
    } = both;
    let address = *address;
    let (text, error) = call(
        address,
        ALICE,
        alices,
        "find_tool_groups",
        serde_json::json!({"query": "read the text of a local file"}),
    )
    .await;
    assert!(!error, "{text}");
    assert!(!text.contains("files"), "{text}");
    let (text, _) = call(
        address,
        BOB,
        bobs,
        "find_tool_groups",
        serde_json::json!({"query": "read the text of a local file"}),
    )
    .await;
    assert!(text.contains("files"), "{text}");
}

/// Direct calls and call_tool: not available, never forbidden; what Alice may
/// use works, and Bob's calls are his.
async fn what_is_not_allowed_is_not_available_never_forbidden(both: &TwoClients) {
    let TwoClients {
        address,
        alices,
        bobs,
    } = both;
    let address = *address;
    let convert = serde_json::json!({"time": "2026-01-01T09:00", "source_timezone": "Europe/Paris", "target_timezone": "Asia/Tokyo"});
    let (text, error) = call(address, ALICE, alices, "time_convert", convert.clone()).await;
    assert!(
        error && text.starts_with("Tool 'time_convert' is not available"),
        "{text}"
    );
    let (text, error) = call(
        address,
        ALICE,
        alices,
        "call_tool",
        serde_json::json!({"name": "time_convert", "arguments": convert.clone()}),
    )
    .await;
    assert!(error && text.contains("not available"), "{text}");
    let (text, error) = call(
        address,
        ALICE,
        alices,
        "files_read",
        serde_json::json!({"path": "x"}),
    )
    .await;
    assert!(
        error && text.starts_with("Tool 'files_read' is not available"),
        "{text}"
    );
    assert!(!text.contains("belongs to tool group"), "{text}");
    let fetch = serde_json::json!({"action": "fetch", "url": "https://example.com"});
    let (text, error) = call(address, ALICE, alices, "web", fetch.clone()).await;
    assert!(
        error && text == "Action 'fetch' of tool 'web' is not available for this agent.",
        "{text}"
    );
    let (text, error) = call(
        address,
        ALICE,
        alices,
        "call_tool",
        serde_json::json!({"name": "web", "arguments": fetch}),
    )
    .await;
    assert!(error && text.contains("not available"), "{text}");
    let (text, error) = call(
        address,
        ALICE,
        alices,
        "web_fetch",
        serde_json::json!({"url": "https://example.com"}),
    )
    .await;
    assert!(error && text.contains("not available"), "{text}");
    assert!(!text.to_lowercase().contains("forbidden"), "{text}");
    // What Alice may use works, and Bob's calls are his.
    let (text, error) = call(address, ALICE, alices, "time_now", serde_json::json!({})).await;
    assert!(!error, "{text}");
    let (text, error) = call(address, BOB, bobs, "time_convert", convert).await;
    assert!(!error, "{text}");
}

/// A GET of `path` with `token`; the status line.
async fn get_status(address: SocketAddr, path: &str, token: &str) -> String {
    let request = format!(
        "GET {path} HTTP/1.1\r\nhost: 127.0.0.1:{}\r\nauthorization: Bearer {token}\r\n\
         connection: close\r\n\r\n",
        address.port()
    );
    let response = exchange(address, &request).await;
    response.lines().next().unwrap_or_default().to_owned()
}

#[tokio::test]
async fn a_restricted_client_reads_neither_the_metrics_nor_the_status_page() {
    // Both name every group and tool, and count every client's calls.
    let served = served().await;
    for path in ["/metrics", "/"] {
        assert_eq!(
            get_status(served.address, path, ALICE).await,
            "HTTP/1.1 403 Forbidden",
            "{path}"
        );
        assert_eq!(
            get_status(served.address, path, BOB).await,
            "HTTP/1.1 200 OK",
            "{path}"
        );
    }
}

/// A gateway for the clients named (each with the token `tg_<name>-token`)
/// and their policies, with `js_eval` offered and a core manifest tool
/// `shout` that runs JavaScript.
async fn served_with_core_tools(
    policies: Vec<(&str, ToolPolicy)>,
) -> (Served<MemoryStore>, tempfile::TempDir) {
    let root = tempfile::tempdir().unwrap();
    let manifests = root.path().join("tools");
    std::fs::create_dir(&manifests).unwrap();
    std::fs::write(
        manifests.join("shout.json"),
        serde_json::json!({"name": "shout", "description": "Upper-cases text", "function": "shout",
            "parameters": {"type": "object", "properties": {"text": {"type": "string"}}}})
        .to_string(),
    )
    .unwrap();
    std::fs::write(
        manifests.join("shout.js"),
        "function shout(args) { return String(args.text).toUpperCase(); }",
    )
    .unwrap();
    let mut options = options(root.path(), vec![]);
    options.tools.manifest_dirs = vec![manifests];
    options.tools.javascript.eval = toolgate_tools::JsEval::On;
    options
        .tools
        .sources
        .extend(toolgate_tools::JsEvalTool::offered(
            &options.tools.javascript,
        ));
    let names: Vec<(ClientName, TokenHash)> = policies
        .iter()
        .map(|(name, _)| {
            (
                ClientName::new(name).unwrap(),
                TokenHash::of(&format!("tg_{name}-token")),
            )
        })
        .collect();
    options.policies = Arc::new(
        policies
            .into_iter()
            .map(|(name, policy)| (ClientName::new(name).unwrap(), policy))
            .collect(),
    );
    let http = HttpOptions {
        clients: Clients::new(names).unwrap(),
        ..HttpOptions::default()
    };
    (
        serve(options, MemoryStore::new(), loopback(), http).await,
        root,
    )
}

#[tokio::test]
async fn core_tools_and_meta_tools_obey_the_tool_lists() {
    let set = |names: &[&str]| names.iter().map(|name| (*name).to_owned()).collect();
    let (served, _root) = served_with_core_tools(vec![
        (
            "carol",
            ToolPolicy {
                deny_tools: set(&["js_eval", "shout"]),
                ..ToolPolicy::default()
            },
        ),
        (
            "dave",
            ToolPolicy {
                allow_tools: Some(set(&["time_now"])),
                ..ToolPolicy::default()
            },
        ),
        (
            "erin",
            ToolPolicy {
                deny_tools: set(&["call_tool"]),
                ..ToolPolicy::default()
            },
        ),
        ("frank", ToolPolicy::default()),
    ])
    .await;
    let address = served.address;
    let eval = serde_json::json!({"code": "6 * 7"});
    let shout = serde_json::json!({"text": "hi"});
    for client in ["carol", "dave"] {
        let token = format!("tg_{client}-token");
        let (session, _) = open(address, &token).await;
        let listed = tools(address, &token, &session).await;
        let listed = names(&listed);
        assert!(
            !listed.contains(&"js_eval") && !listed.contains(&"shout"),
            "{client}: {listed:?}"
        );
        assert!(listed.contains(&"load_tool_group"), "{client}: {listed:?}");
        for (tool, arguments) in [("js_eval", &eval), ("shout", &shout)] {
            let (text, error) = call(address, &token, &session, tool, arguments.clone()).await;
            assert!(error, "{client} ran {tool}: {text}");
            assert_eq!(
                text,
                format!("Tool '{tool}' is not available for this agent."),
                "{client}"
            );
            let through = serde_json::json!({"name": tool, "arguments": arguments});
            let (text, error) = call(address, &token, &session, "call_tool", through).await;
            assert!(
                error && !text.contains("42") && !text.contains("HI"),
                "{client}: {text}"
            );
        }
    }
    // Dave may use time_now alone: its group loads with it only.
    let (daves, _) = open(address, "tg_dave-token").await;
    let (text, error) = load(address, "tg_dave-token", &daves, "time").await;
    assert!(
        !error && text.contains("time_now") && !text.contains("time_convert"),
        "{text}"
    );
    // Erin may not use call_tool: it is not listed and not available.
    let (erins, _) = open(address, "tg_erin-token").await;
    let listed = tools(address, "tg_erin-token", &erins).await;
    assert!(
        !names(&listed).contains(&"call_tool"),
        "{:?}",
        names(&listed)
    );
    assert!(names(&listed).contains(&"js_eval"), "{:?}", names(&listed));
    let through = serde_json::json!({"name": "js_eval", "arguments": eval});
    let (text, error) = call(address, "tg_erin-token", &erins, "call_tool", through).await;
    assert!(error, "{text}");
    assert_eq!(text, "Tool 'call_tool' is not available for this agent.");
    let (text, error) = call(address, "tg_erin-token", &erins, "js_eval", eval.clone()).await;
    assert!(!error && text == "42", "{text}");
    // A client without rules uses them all.
    let (franks, _) = open(address, "tg_frank-token").await;
    let (text, error) = call(address, "tg_frank-token", &franks, "shout", shout).await;
    assert!(!error && text == "HI", "{text}");
    served.stop().await;
}

#[tokio::test]
async fn an_alias_whose_fixed_arguments_set_the_action_stops_the_start() {
    let root = tempfile::tempdir().unwrap();
    let mut options = options(root.path(), vec![]);
    let mut sneaky = toolgate_core::Alias::new(toolgate_core::ToolName::new("web").unwrap())
        .with_action("search");
    sneaky
        .arguments
        .insert("action".to_owned(), serde_json::json!("fetch"));
    options.tools.aliases = vec![("sneaky".to_owned(), sneaky)];
    let error = toolgate_mcp::Gateway::start(options, MemoryStore::new())
        .await
        .unwrap_err()
        .to_string();
    assert!(
        error.contains("sneaky") && error.contains("`action`"),
        "{error}"
    );
}
