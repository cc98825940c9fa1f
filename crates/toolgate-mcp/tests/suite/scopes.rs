//! Who is calling is decided once, at the edge, and passed along as the
//! request's scope. A request that reaches the gateway's handler without its
//! caller (a server embedding the handler without `serve_http`, or a pipe
//! given the HTTP session source) is refused on every path: tools,
//! resources, prompts, stateful and stateless, HTTP and pipe. (That a
//! caller is refused another client's session on every path is in
//! `identities.rs`.)

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::Arc;

use hyper::body::Incoming;
use hyper::service::service_fn;
use hyper_util::rt::TokioIo;
use rmcp::ServiceExt;
use rmcp::model::{
    CallToolRequestParams, ClientCapabilities, ClientConfig, GetPromptRequestParams,
    Implementation, ProtocolVersion, ReadResourceRequestParams,
};
use rmcp::service::{ClientLifecycleMode, ClientServiceExt};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use toolgate_mcp::{Gateway, GatewayHandler, SessionSource};
use toolgate_store::MemoryStore;

use super::identities::{INITIALIZE, post};
use super::support::{header_value, loopback, options};

/// What every refused request says.
const NO_CALLER: &str = "without its caller";

async fn gateway(root: &std::path::Path) -> Arc<Gateway<MemoryStore>> {
    Gateway::start(options(root, vec![]), MemoryStore::new())
        .await
        .unwrap()
        .0
}

/// The gateway's handler served over HTTP by rmcp alone, on loopback: no
/// listener said who sends each request.
async fn bare_http(gateway: Arc<Gateway<MemoryStore>>) -> SocketAddr {
    let service = Arc::new(StreamableHttpService::new(
        move || {
            Ok(GatewayHandler::new(
                Arc::clone(&gateway),
                SessionSource::Header,
            ))
        },
        Arc::new(LocalSessionManager::default()),
        StreamableHttpServerConfig::default(),
    ));
    let listener = tokio::net::TcpListener::bind(loopback()).await.unwrap();
    let address = listener.local_addr().unwrap();
    tokio::spawn(async move {
        loop {
            let Ok((stream, _)) = listener.accept().await else {
                return;
            };
            let service = Arc::clone(&service);
            tokio::spawn(async move {
                let serve = service_fn(move |request: hyper::Request<Incoming>| {
                    let service = Arc::clone(&service);
                    async move { Ok::<_, Infallible>(service.handle(request).await) }
                });
                let _ = hyper::server::conn::http1::Builder::new()
                    .serve_connection(TokioIo::new(stream), serve)
                    .await;
            });
        }
    });
    address
}

#[tokio::test]
async fn a_session_through_a_handler_that_was_not_told_the_caller_serves_nothing() {
    let root = tempfile::tempdir().unwrap();
    let address = bare_http(gateway(root.path()).await).await;
    let answer = post(address, None, None, INITIALIZE).await;
    assert!(answer.contains(NO_CALLER), "{answer}");
    assert!(!answer.contains("protocolVersion"), "initialized: {answer}");
    // rmcp opened a session for the request; nothing is served on it.
    let Some(session) = header_value(&answer, "mcp-session-id") else {
        return;
    };
    for request in [
        r#"{"jsonrpc":"2.0","id":2,"method":"tools/list","params":{}}"#,
        r#"{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"time_now","arguments":{}}}"#,
        r#"{"jsonrpc":"2.0","id":4,"method":"resources/list","params":{}}"#,
        r#"{"jsonrpc":"2.0","id":5,"method":"prompts/list","params":{}}"#,
    ] {
        let answer = post(address, None, Some(&session), request).await;
        assert!(!answer.contains("time_now"), "{answer}");
        assert!(!answer.contains("\"result\""), "{answer}");
    }
}

#[tokio::test]
async fn stateless_requests_without_their_caller_are_refused_on_every_path() {
    let root = tempfile::tempdir().unwrap();
    let address = bare_http(gateway(root.path()).await).await;
    let client = ClientConfig::new(
        ClientCapabilities::default(),
        Implementation::new("stateless", "0"),
    )
    .serve_with_lifecycle(
        StreamableHttpClientTransport::from_uri(format!("http://{address}/mcp")),
        ClientLifecycleMode::Discover {
            preferred_versions: vec![ProtocolVersion::V_2026_07_28],
        },
    )
    .await
    .unwrap();
    let refused = |what: &str, error: Option<String>| {
        let error = error.unwrap_or_else(|| panic!("{what} was served"));
        assert!(error.contains(NO_CALLER), "{what}: {error}");
    };
    refused(
        "tools/list",
        client.list_all_tools().await.err().map(|e| e.to_string()),
    );
    for (name, arguments) in [
        ("time_now", json!({})),
        ("load_tool_group", json!({"group_name": "time"})),
        ("call_tool", json!({"name": "time_now", "arguments": {}})),
    ] {
        let params = CallToolRequestParams::new(name.to_owned())
            .with_arguments(arguments.as_object().unwrap().clone());
        refused(
            name,
            client.call_tool(params).await.err().map(|e| e.to_string()),
        );
    }
    refused(
        "resources/list",
        client
            .list_all_resources()
            .await
            .err()
            .map(|e| e.to_string()),
    );
    refused(
        "resources/read",
        client
            .read_resource(ReadResourceRequestParams::new("file:///x"))
            .await
            .err()
            .map(|e| e.to_string()),
    );
    refused(
        "prompts/list",
        client.list_all_prompts().await.err().map(|e| e.to_string()),
    );
    refused(
        "prompts/get",
        client
            .get_prompt(GetPromptRequestParams::new("p"))
            .await
            .err()
            .map(|e| e.to_string()),
    );
}

#[tokio::test]
async fn a_pipe_given_the_http_session_source_serves_nothing() {
    let root = tempfile::tempdir().unwrap();
    let handler = GatewayHandler::new(gateway(root.path()).await, SessionSource::Header);
    let (client, server) = tokio::io::duplex(1 << 16);
    let serving =
        tokio::spawn(async move { handler.serve(tokio::io::split(server)).await.is_ok() });
    let (read, mut write) = tokio::io::split(client);
    let initialize = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "script", "version": "0"}}});
    write
        .write_all(format!("{initialize}\n").as_bytes())
        .await
        .unwrap();
    let mut lines = BufReader::new(read).lines();
    let answer: Value = serde_json::from_str(&lines.next_line().await.unwrap().unwrap()).unwrap();
    let message = answer["error"]["message"].as_str().unwrap_or_default();
    assert!(message.contains(NO_CALLER), "{answer}");
    assert!(answer.get("result").is_none(), "{answer}");
    drop(write);
    assert!(!serving.await.unwrap(), "the connection was served");
}
