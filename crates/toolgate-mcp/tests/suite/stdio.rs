//! The gateway over its stdio transport, in process: newline-delimited
//! JSON-RPC over an in-memory pipe, as `toolgate serve --stdio` speaks it.

use std::sync::Arc;
use std::time::{Duration, Instant};

use rmcp::ServiceExt;
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, DuplexStream, Lines, ReadHalf};
use tokio_util::sync::CancellationToken;
use toolgate_mcp::{Gateway, GatewayHandler, SessionSource, StdioOptions, serve_pipe};
use toolgate_store::{ConversationId, MemoryStore};

use super::support::options;
use super::upstreams::{peers, stdio};

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

/// The messages the gateway writes on its end of the pipe, one per line.
type Answers = Lines<BufReader<ReadHalf<DuplexStream>>>;

/// The next message the gateway wrote, or `None` once it closed the pipe.
async fn next_message(answers: &mut Answers) -> Option<Value> {
    let line = tokio::time::timeout(Duration::from_secs(30), answers.next_line())
        .await
        .expect("no message from the gateway in 30 s")
        .unwrap()?;
    Some(serde_json::from_str(&line).unwrap())
}

/// Sends `message` as one line.
async fn send(pipe: &mut tokio::io::WriteHalf<DuplexStream>, message: Value) {
    pipe.write_all(format!("{message}\n").as_bytes())
        .await
        .unwrap();
}

/// The handshake of a client on the pipe; returns the gateway's answer.
async fn initialize(pipe: &mut tokio::io::WriteHalf<DuplexStream>, answers: &mut Answers) -> Value {
    send(pipe, json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "script", "version": "0"}}})).await;
    let answer = next_message(answers)
        .await
        .expect("no answer to initialize");
    send(
        pipe,
        json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
    )
    .await;
    answer
}

/// `serve_pipe`, as `toolgate serve --stdio` runs it on stdin and stdout:
/// the handshake carries the gateway's instructions, and the connection
/// ends, and serving with it, when the client closes its input.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pipe_is_served_from_the_handshake_until_the_client_closes_its_input() {
    let root = tempfile::tempdir().unwrap();
    let (gateway, _) = Gateway::start(options(root.path(), vec![]), MemoryStore::new())
        .await
        .unwrap();
    let (client, server) = tokio::io::duplex(1 << 20);
    let (input, output) = tokio::io::split(server);
    let options = StdioOptions {
        session: ConversationId::new("piped"),
        shutdown_grace: Duration::from_secs(10),
    };
    let serving = tokio::spawn(serve_pipe(
        Arc::clone(&gateway),
        input,
        output,
        options,
        CancellationToken::new(),
    ));
    let (read, mut write) = tokio::io::split(client);
    let mut answers = BufReader::new(read).lines();

    let answer = initialize(&mut write, &mut answers).await;
    let instructions = answer["result"]["instructions"].as_str().unwrap();
    assert!(
        instructions.starts_with(
            "toolgate gateway. Most tools sit in groups: call load_tool_group with a group's name \
             to add its tools. Clients that do not refresh their tool list can run any loaded tool \
             with call_tool.\n\n## Available Tool Groups"
        ),
        "{instructions}"
    );
    write.shutdown().await.unwrap();

    tokio::time::timeout(Duration::from_secs(5), serving)
        .await
        .expect("serving outlived the client's input by 5 s")
        .unwrap()
        .unwrap();
}

/// A shutdown of `serve_pipe` lets the call in flight run to its end (it is
/// counted as a call that went well) before the connection ends.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_shutdown_lets_the_call_in_flight_on_a_pipe_finish_before_the_connection_ends() {
    let root = tempfile::tempdir().unwrap();
    let everything = stdio(
        "everything",
        peers().node_bin.join("mcp-server-everything"),
        &[],
    );
    let (gateway, _) = Gateway::start(options(root.path(), vec![everything]), MemoryStore::new())
        .await
        .unwrap();
    let (client, server) = tokio::io::duplex(1 << 20);
    let (input, output) = tokio::io::split(server);
    let shutdown = CancellationToken::new();
    let options = StdioOptions {
        session: ConversationId::new("piped"),
        shutdown_grace: Duration::from_secs(30),
    };
    let serving = tokio::spawn(serve_pipe(
        Arc::clone(&gateway),
        input,
        output,
        options,
        shutdown.clone(),
    ));
    let (read, mut write) = tokio::io::split(client);
    let mut answers = BufReader::new(read).lines();
    initialize(&mut write, &mut answers).await;
    send(&mut write, json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "load_tool_group", "arguments": {"group_name": "everything"}}})).await;
    while next_message(&mut answers)
        .await
        .expect("no answer to the load")["id"]
        != 2
    {}

    // A call of 2 s in 4 steps: its first progress says it is running.
    send(&mut write, json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "trigger-long-running-operation", "arguments": {"duration": 2, "steps": 4}, "_meta": {"progressToken": "long"}}})).await;
    loop {
        let message = next_message(&mut answers)
            .await
            .expect("the call sent no progress");
        if message["method"] == "notifications/progress" {
            break;
        }
    }
    shutdown.cancel();
    tokio::time::timeout(Duration::from_secs(30), serving)
        .await
        .expect("serving did not end")
        .unwrap()
        .unwrap();

    let metrics = gateway.metrics().render();
    assert!(
        metrics.lines().any(|line| line
            == "toolgate_tool_calls_total{group=\"everything\",tool=\"trigger-long-running-operation\",outcome=\"ok\"} 1"),
        "{metrics}"
    );
    gateway.shutdown().await;
}
