//! The agent loop and the gateway are siblings over one tool runtime: the
//! agent runs upstream MCP servers through the same toolbox the gateway
//! serves from. Only this crate sees both.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use pretty_assertions::assert_eq;
use serde_json::json;
use tokio_util::sync::CancellationToken;
use toolgate_agent::{Agent, AgentOptions};
use toolgate_core::{Encoding, GroupId, MetaTool, TokenCounter};
use toolgate_llm::scripted::{Recorded, ScriptedServer, ScriptedTurn, Wire};
use toolgate_llm::{ProviderConfig, ProviderKind, connect};
use toolgate_mcp::config::UpstreamConfig;
use toolgate_mcp::{Gateway, GatewayOptions, Upstream};
use toolgate_store::{ConversationId, MemoryStore};
use toolgate_tools::{BuiltinConfig, ListedSource, Toolbox, ToolboxOptions};

use super::support::peers;

fn stdio(name: &str, command: PathBuf, args: &[&str]) -> UpstreamConfig {
    UpstreamConfig {
        call_timeout: Duration::from_secs(30),
        ..UpstreamConfig::stdio(
            GroupId::new(name).unwrap(),
            command.display().to_string(),
            args,
        )
    }
}

/// A gateway (not serving any transport) with the built-ins and `upstreams`.
async fn gateway(files_root: &Path, upstreams: Vec<UpstreamConfig>) -> Arc<Gateway<MemoryStore>> {
    let options = GatewayOptions {
        tools: ToolboxOptions {
            builtins: Some(BuiltinConfig::new(files_root)),
            ..ToolboxOptions::default()
        },
        upstreams,
        session_idle_timeout: Duration::from_secs(3600),
        routing: None,
        audit: None,
        rate_limits: Default::default(),
        policies: Default::default(),
        loaded_schemas: Default::default(),
        load_budget: Default::default(),
        deferral: toolgate_core::Deferral::Always,
        context_window: toolgate_core::DEFAULT_CONTEXT_WINDOW,
    };
    Gateway::start(options, MemoryStore::new()).await.unwrap().0
}

fn agent(
    server: &ScriptedServer,
    toolbox: Arc<Toolbox>,
    store: Arc<MemoryStore>,
    options: AgentOptions,
) -> Agent<MemoryStore> {
    let mut config = ProviderConfig::new(ProviderKind::OpenAi, format!("{}/v1", server.url()), "m");
    config.retry.max_retries = 0;
    let counter = Arc::new(TokenCounter::new(Encoding::O200kBase).unwrap());
    Agent::new(connect(config).unwrap(), toolbox, store, options, counter)
}

fn tool_names(request: &Recorded) -> Vec<String> {
    request.body["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["function"]["name"].as_str().unwrap().to_owned())
        .collect()
}

fn tool_results(request: &Recorded) -> Vec<String> {
    request.body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "tool")
        .map(|m| m["content"].as_str().unwrap().to_owned())
        .collect()
}

async fn send(agent: &Agent<MemoryStore>, conversation: &ConversationId, text: &str) {
    agent
        .send(conversation, text, &mut |_| {}, &CancellationToken::new())
        .await
        .unwrap();
}

#[tokio::test]
async fn the_agent_runs_upstream_tools_through_the_gateways_toolbox() {
    let peers = peers();
    let root = tempfile::tempdir().unwrap();
    let clock = stdio("clock", peers.venv_bin.join("mcp-server-time"), &[]);
    let gateway = gateway(root.path(), vec![clock.clone()]).await;
    let server = ScriptedServer::start().await.unwrap();
    for turn in [
        ScriptedTurn::tool_call("a", "load_tool_group", json!({"group_name": "clock"})),
        ScriptedTurn::tool_call("b", "get_current_time", json!({"timezone": "UTC"})),
        ScriptedTurn::text("It is now."),
    ] {
        server.push(turn.reply(Wire::OpenAi, true));
    }
    let store = Arc::new(MemoryStore::new());
    let toolbox = Arc::clone(gateway.toolbox());
    let first = agent(
        &server,
        toolbox,
        Arc::clone(&store),
        AgentOptions::default(),
    );
    let conversation = ConversationId::new("c");
    send(&first, &conversation, "what time is it?").await;

    let requests = server.requests();
    assert!(!tool_names(&requests[0]).contains(&"get_current_time".to_owned()));
    assert!(tool_names(&requests[1]).contains(&"get_current_time".to_owned()));
    let results = tool_results(&requests[2]);
    assert!(
        results[0].starts_with("Loaded 2 tools from group 'Clock':"),
        "{}",
        results[0]
    );
    assert!(
        results[1].contains("\"timezone\": \"UTC\""),
        "{}",
        results[1]
    );
    gateway.shutdown().await;

    // Another process: a new toolbox whose upstream has never run. The
    // restored group starts it, and the first request carries its tools.
    let (toolbox, _) = Toolbox::start(ToolboxOptions {
        meta_tools: vec![MetaTool::UnloadToolGroup],
        listed: vec![Arc::new(Upstream::new(clock)) as Arc<dyn ListedSource>],
        ..ToolboxOptions::default()
    })
    .await
    .unwrap();
    server.push(ScriptedTurn::text("Still loaded.").reply(Wire::OpenAi, false));
    let second = agent(
        &server,
        Arc::clone(&toolbox),
        store,
        AgentOptions::default(),
    );
    send(&second, &conversation, "and now?").await;
    assert_eq!(
        tool_names(&server.requests()[3]),
        [
            "load_tool_group",
            "unload_tool_group",
            "get_current_time",
            "convert_time"
        ]
    );
    toolbox.shutdown().await;
}

#[tokio::test]
async fn an_upstream_tool_past_the_agents_timeout_is_cancelled_and_the_server_serves_on() {
    let peers = peers();
    let root = tempfile::tempdir().unwrap();
    let everything = stdio(
        "everything",
        peers.node_bin.join("mcp-server-everything"),
        &["stdio"],
    );
    let gateway = gateway(root.path(), vec![everything]).await;
    let server = ScriptedServer::start().await.unwrap();
    for turn in [
        ScriptedTurn::tool_call("a", "load_tool_group", json!({"group_name": "everything"})),
        ScriptedTurn::tool_call(
            "b",
            "trigger-long-running-operation",
            json!({"duration": 20, "steps": 5}),
        ),
        ScriptedTurn::tool_call("c", "echo", json!({"message": "still here"})),
        ScriptedTurn::text("Done."),
    ] {
        server.push(turn.reply(Wire::OpenAi, true));
    }
    let options = AgentOptions {
        tool_timeout: Duration::from_secs(1),
        ..AgentOptions::default()
    };
    let toolbox = Arc::clone(gateway.toolbox());
    let agent = agent(&server, toolbox, Arc::new(MemoryStore::new()), options);
    send(&agent, &ConversationId::new("c"), "run the long operation").await;
    let results = tool_results(&server.requests()[3]);
    assert_eq!(
        results[1],
        "Tool 'trigger-long-running-operation' did not finish within 1s; the call was cancelled."
    );
    assert!(results[2].contains("still here"), "{}", results[2]);
    gateway.shutdown().await;
}
