//! The gateway over its stdio transport, in process: newline-delimited
//! JSON-RPC over an in-memory pipe, as `toolgate serve --stdio` speaks it.

use std::sync::Arc;
use std::time::{Duration, Instant};

use rmcp::ServiceExt;
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use toolgate_mcp::{Gateway, GatewayHandler, SessionSource};
use toolgate_store::{ConversationId, MemoryStore};

use super::support::options;

/// A client that sends a load and closes its input at once (a script
/// piping requests in) still gets the load's answer, and the connection
/// ends without waiting out rmcp's 5-second drain: the load's
/// `list_changed` cannot go out on a closing connection, and used to hold
/// the answer until rmcp dropped both. Found by `fuzz_stdio_gateway`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_load_just_before_the_input_closes_is_answered_and_the_connection_ends() {
    let root = tempfile::tempdir().unwrap();
    let (gateway, _) = Gateway::start(options(root.path(), vec![]), MemoryStore::new())
        .await
        .unwrap();
    let (client, server) = tokio::io::duplex(1 << 20);
    let handler = GatewayHandler::new(
        Arc::clone(&gateway),
        SessionSource::Fixed(ConversationId::new("piped")),
    );
    let serving = tokio::spawn(async move {
        let running = handler.serve(tokio::io::split(server)).await.unwrap();
        let _ = running.waiting().await;
    });
    let (read, mut write) = tokio::io::split(client);
    let requests = [
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "script", "version": "0"}}}),
        json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
        json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "load_tool_group", "arguments": {"group_name": "time"}}}),
    ];
    for request in &requests {
        write
            .write_all(format!("{request}\n").as_bytes())
            .await
            .unwrap();
    }
    let closed = Instant::now();
    write.shutdown().await.unwrap();

    tokio::time::timeout(Duration::from_secs(2), serving)
        .await
        .expect("the connection outlived its closed input by 2 s")
        .unwrap();
    assert!(closed.elapsed() < Duration::from_secs(2));
    let mut answers = Vec::new();
    let mut lines = BufReader::new(read).lines();
    while let Some(line) = lines.next_line().await.unwrap() {
        answers.push(serde_json::from_str::<Value>(&line).unwrap());
    }
    let load = answers
        .iter()
        .find(|answer| answer["id"] == 2)
        .unwrap_or_else(|| panic!("no answer to the load: {answers:?}"));
    let text = load["result"]["content"][0]["text"].as_str().unwrap();
    assert!(
        text.starts_with("Loaded 2 tools from group 'Time'"),
        "{text}"
    );
}
