//! What the HTTP endpoint does with clients that misbehave: malformed
//! JSON-RPC gets JSON-RPC errors, slow clients lose their connection, the
//! number of sessions in memory is capped, and an unknown session is told
//! how to start over.

use std::net::SocketAddr;
use std::time::Duration;

use serde_json::json;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use toolgate_mcp::{HttpLimits, HttpOptions};
use toolgate_store::MemoryStore;

use super::support::{connect, exchange, load, loopback, options, serve, tool_names};

fn post(address: SocketAddr, extra_headers: &str, body: &str) -> String {
    format!(
        "POST /mcp HTTP/1.1\r\nhost: 127.0.0.1:{}\r\ncontent-type: application/json\r\n\
         accept: application/json, text/event-stream\r\n{extra_headers}content-length: {}\r\n\
         connection: close\r\n\r\n{body}",
        address.port(),
        body.len()
    )
}

fn session_id(response: &str) -> String {
    response
        .lines()
        .find_map(|line| {
            let (name, value) = line.split_once(':')?;
            name.eq_ignore_ascii_case("mcp-session-id")
                .then(|| value.trim().to_owned())
        })
        .expect("no session id")
}

async fn served_with(limits: HttpLimits) -> super::support::Served<MemoryStore> {
    let root = tempfile::tempdir().unwrap();
    let http = HttpOptions {
        limits,
        ..HttpOptions::default()
    };
    let served = serve(
        options(root.path(), vec![]),
        MemoryStore::new(),
        loopback(),
        http,
    )
    .await;
    // The files root only matters to the files group, which these tests do
    // not load.
    drop(root);
    served
}

const INITIALIZE: &str = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"0"}}}"#;

#[tokio::test]
async fn malformed_json_rpc_gets_json_rpc_errors() {
    let served = served_with(HttpLimits::default()).await;
    let address = served.address;

    let parse = exchange(address, &post(address, "", "{not json")).await;
    assert!(parse.starts_with("HTTP/1.1 400"), "{parse}");
    assert!(parse.contains(r#""code":-32700"#), "{parse}");
    assert!(parse.contains(r#""id":null"#), "{parse}");

    let invalid = exchange(address, &post(address, "", r#"{"id":7,"method":5}"#)).await;
    assert!(invalid.contains(r#""code":-32600"#), "{invalid}");
    assert!(invalid.contains(r#""id":7"#), "{invalid}");

    let initialized = exchange(address, &post(address, "", INITIALIZE)).await;
    let session = session_id(&initialized);
    let headers = format!("mcp-session-id: {session}\r\nmcp-protocol-version: 2025-11-25\r\n");
    let bad_params = r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":5}}"#;
    let answer = exchange(address, &post(address, &headers, bad_params)).await;
    assert!(answer.contains(r#""code":-32602"#), "{answer}");
    assert!(answer.contains("Invalid params for tools/call"), "{answer}");
    served.stop().await;
}

#[tokio::test]
async fn a_client_that_never_finishes_its_headers_is_disconnected() {
    let served = served_with(HttpLimits {
        header_timeout: Duration::from_millis(200),
        ..HttpLimits::default()
    })
    .await;
    let mut stream = tokio::net::TcpStream::connect(served.address)
        .await
        .unwrap();
    stream
        .write_all(b"POST /mcp HTTP/1.1\r\nhost: 127")
        .await
        .unwrap();
    let mut buffer = Vec::new();
    let closed =
        tokio::time::timeout(Duration::from_secs(5), stream.read_to_end(&mut buffer)).await;
    assert!(closed.is_ok(), "the connection was held open");
    served.stop().await;
}

#[tokio::test]
async fn a_connection_that_never_sends_a_byte_is_closed() {
    let served = served_with(HttpLimits {
        header_timeout: Duration::from_millis(200),
        ..HttpLimits::default()
    })
    .await;
    let mut silent = tokio::net::TcpStream::connect(served.address)
        .await
        .unwrap();
    let mut buffer = Vec::new();
    let closed =
        tokio::time::timeout(Duration::from_secs(5), silent.read_to_end(&mut buffer)).await;
    assert!(closed.is_ok(), "the silent connection was held open");
    assert_eq!(String::from_utf8_lossy(&buffer), "");

    // A kept-alive connection waiting for its next request is closed too.
    let mut kept = tokio::net::TcpStream::connect(served.address)
        .await
        .unwrap();
    let request = post(served.address, "", INITIALIZE).replace("connection: close\r\n", "");
    kept.write_all(request.as_bytes()).await.unwrap();
    let mut buffer = Vec::new();
    let closed = tokio::time::timeout(Duration::from_secs(5), kept.read_to_end(&mut buffer)).await;
    assert!(
        closed.is_ok(),
        "the idle kept-alive connection was held open"
    );
    let answer = String::from_utf8_lossy(&buffer);
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    served.stop().await;
}

#[tokio::test]
async fn a_body_that_never_arrives_times_out() {
    let served = served_with(HttpLimits {
        body_timeout: Duration::from_millis(200),
        ..HttpLimits::default()
    })
    .await;
    let address = served.address;
    let mut stream = tokio::net::TcpStream::connect(address).await.unwrap();
    let head = format!(
        "POST /mcp HTTP/1.1\r\nhost: 127.0.0.1:{}\r\ncontent-type: application/json\r\n\
         accept: application/json, text/event-stream\r\ncontent-length: 100\r\n\r\n{{\"jsonrpc\"",
        address.port()
    );
    stream.write_all(head.as_bytes()).await.unwrap();
    let mut response = vec![0; 512];
    let read = tokio::time::timeout(Duration::from_secs(5), stream.read(&mut response))
        .await
        .expect("the connection was held open")
        .unwrap();
    let response = String::from_utf8_lossy(&response[..read]);
    assert!(response.starts_with("HTTP/1.1 408"), "{response}");
    served.stop().await;
}

#[tokio::test]
async fn an_oversized_body_is_refused() {
    let served = served_with(HttpLimits {
        max_body_bytes: 1024,
        ..HttpLimits::default()
    })
    .await;
    let address = served.address;
    let body =
        json!({"jsonrpc": "2.0", "id": 1, "method": "ping", "params": {"pad": "x".repeat(4096)}});
    let answer = exchange(address, &post(address, "", &body.to_string())).await;
    assert!(answer.starts_with("HTTP/1.1 413"), "{answer}");
    served.stop().await;
}

#[tokio::test]
async fn beyond_the_session_cap_the_longest_idle_session_leaves_memory_and_comes_back() {
    let served = served_with(HttpLimits {
        max_sessions: 2,
        ..HttpLimits::default()
    })
    .await;
    let (first, _) = connect(&served.url).await;
    load(&first, "time").await;
    let (_second, _) = connect(&served.url).await;
    let (_third, _) = connect(&served.url).await;
    assert!(
        served.gateway.sessions().live_count().await <= 2,
        "{} sessions in memory",
        served.gateway.sessions().live_count().await
    );
    // The first session was let go; its next request restores it with its
    // loaded group.
    assert!(
        tool_names(&first).await.contains(&"time_now".to_owned()),
        "the evicted session lost its loaded group"
    );
    served.stop().await;
}

#[tokio::test]
async fn an_unknown_session_is_told_how_to_start_over() {
    let served = served_with(HttpLimits::default()).await;
    let address = served.address;
    let headers = "mcp-session-id: gone-session\r\nmcp-protocol-version: 2025-11-25\r\n";
    let ping = r#"{"jsonrpc":"2.0","id":3,"method":"ping"}"#;
    let answer = exchange(address, &post(address, headers, ping)).await;
    assert!(answer.starts_with("HTTP/1.1 404"), "{answer}");
    assert!(
        answer.contains("session 'gone-session' is unknown"),
        "{answer}"
    );
    assert!(
        answer.contains("send initialize without an Mcp-Session-Id"),
        "{answer}"
    );

    let long = "x".repeat(10_000);
    let headers = format!("mcp-session-id: {long}\r\nmcp-protocol-version: 2025-11-25\r\n");
    let answer = exchange(address, &post(address, &headers, ping)).await;
    assert!(
        answer.len() < 2_000,
        "the id was echoed whole: {} bytes",
        answer.len()
    );
    served.stop().await;
}

/// Waits until the gateway holds `count` sessions in memory.
async fn until_live(served: &super::support::Served<MemoryStore>, count: usize) {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    loop {
        let live = served.gateway.sessions().live_count().await;
        if live == count {
            return;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "{live} sessions in memory, waiting for {count}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test]
async fn a_session_between_requests_leaves_memory_and_comes_back_with_its_groups() {
    let served = served_with(HttpLimits {
        idle_in_memory: Duration::from_secs(1),
        ..HttpLimits::default()
    })
    .await;
    let address = served.address;
    // rmcp's client keeps its notification stream open: it stays.
    let (streaming, _) = connect(&served.url).await;
    load(&streaming, "time").await;
    // A client that closes its connection after each request does not.
    let session = session_id(&exchange(address, &post(address, "", INITIALIZE)).await);
    let headers = format!("mcp-session-id: {session}\r\nmcp-protocol-version: 2025-11-25\r\n");
    let initialized = r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#;
    let answer = exchange(address, &post(address, &headers, initialized)).await;
    assert!(answer.starts_with("HTTP/1.1 202"), "{answer}");
    let load = r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"load_tool_group","arguments":{"group_name":"time"}}}"#;
    let answer = exchange(address, &post(address, &headers, load)).await;
    assert!(answer.contains("Loaded"), "{answer}");
    assert_eq!(served.gateway.sessions().live_count().await, 2);

    until_live(&served, 1).await;
    // Held past three idle periods: the streaming client's session.
    tokio::time::sleep(Duration::from_secs(3)).await;
    assert_eq!(served.gateway.sessions().live_count().await, 1);

    // The one that left comes back on its next request, group loaded.
    let list = r#"{"jsonrpc":"2.0","id":3,"method":"tools/list","params":{}}"#;
    let answer = exchange(address, &post(address, &headers, list)).await;
    assert!(answer.contains("time_now"), "{answer}");
    assert_eq!(served.gateway.sessions().live_count().await, 2);
    assert!(
        tool_names(&streaming)
            .await
            .contains(&"time_now".to_owned())
    );
    served.stop().await;
}

/// Clients that come back just as their sessions leave memory: every
/// request is answered, and every session keeps its group.
#[tokio::test]
async fn requests_racing_sessions_leaving_memory_are_all_answered() {
    let served = served_with(HttpLimits {
        idle_in_memory: Duration::from_secs(1),
        ..HttpLimits::default()
    })
    .await;
    let address = served.address;
    let initialized = r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#;
    let load = r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"load_tool_group","arguments":{"group_name":"time"}}}"#;
    let list = r#"{"jsonrpc":"2.0","id":3,"method":"tools/list","params":{}}"#;
    let mut clients = tokio::task::JoinSet::new();
    for client in 0..12u64 {
        clients.spawn(async move {
            let session = session_id(&exchange(address, &post(address, "", INITIALIZE)).await);
            let headers =
                format!("mcp-session-id: {session}\r\nmcp-protocol-version: 2025-11-25\r\n");
            exchange(address, &post(address, &headers, initialized)).await;
            let answer = exchange(address, &post(address, &headers, load)).await;
            assert!(answer.contains("Loaded"), "{answer}");
            // Pauses around the idle time and the sweep interval, so some
            // requests land while their session is being let go.
            for round in 0..6u64 {
                let pause = 700 + (client * 37 + round * 101) % 700;
                tokio::time::sleep(Duration::from_millis(pause)).await;
                let answer = exchange(address, &post(address, &headers, list)).await;
                assert!(
                    answer.starts_with("HTTP/1.1 200") && answer.contains("time_now"),
                    "client {client}, round {round}: {answer}"
                );
            }
        });
    }
    while let Some(joined) = clients.join_next().await {
        joined.unwrap();
    }
    // Sessions did leave and come back meanwhile.
    let metrics = served.gateway.metrics().render();
    let restored: f64 = metrics
        .lines()
        .find_map(|line| line.strip_prefix("toolgate_sessions_restored_total "))
        .and_then(|value| value.parse().ok())
        .unwrap_or(0.0);
    assert!(restored >= 12.0, "{metrics}");
    served.stop().await;
}
