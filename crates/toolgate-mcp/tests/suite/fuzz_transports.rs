//! Fuzz targets of the gateway on its two transports, in process: random
//! and mutated JSON-RPC messages (and bytes that are not JSON) sent to
//! `toolgate serve`'s stdio transport (newline-delimited JSON over an
//! in-memory pipe) and to its streamable HTTP endpoint (`serve_http` on a
//! loopback port). Each message is answered, refused or ignored within a
//! time limit, nothing panics, and a valid request on the same session
//! still gets a valid answer afterwards.
//!
//! Inputs per target: `TOOLGATE_FUZZ_CASES_<TARGET>` or `PROPTEST_CASES`
//! (see `scripts/fuzz`); an input is one message.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use proptest::prelude::*;
use rmcp::ServiceExt;
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;
use toolgate_fuzz::{Target, fuzz};
use toolgate_mcp::{Gateway, GatewayHandler, HttpOptions, SessionSource, serve_http};
use toolgate_store::{ConversationId, MemoryStore};

use super::fuzz_messages::{client_messages, message_bytes};
use super::support::{loopback, options};

/// Longest any one step may take before the gateway counts as hung.
const STEP: Duration = Duration::from_secs(10);

/// A gateway with the built-in groups over a temporary files root, its
/// `web` tools held to a one-second timeout so a fetch can never look like
/// a hang.
struct Harness {
    runtime: tokio::runtime::Runtime,
    gateway: Arc<Gateway<MemoryStore>>,
    _root: tempfile::TempDir,
}

impl Harness {
    fn start() -> Self {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .unwrap();
        let root = tempfile::tempdir().unwrap();
        std::fs::write(root.path().join("notes.txt"), "first line\n").unwrap();
        let mut options = options(root.path(), vec![]);
        if let Some(builtins) = &mut options.tools.builtins {
            builtins.web.timeout = Duration::from_secs(1);
        }
        let gateway = runtime
            .block_on(async { Gateway::start(options, MemoryStore::new()).await.unwrap().0 });
        Self {
            runtime,
            gateway,
            _root: root,
        }
    }
}

/// Messages for one input: a few valid ones before (so the session has
/// state to break) and the fuzzed one.
fn messages() -> impl Strategy<Value = (Vec<usize>, Vec<u8>)> {
    let seeds = client_messages().len();
    (
        prop::collection::vec(0..seeds, 0..3),
        message_bytes(client_messages()),
    )
}

fn initialize(id: &str) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": "initialize", "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "fuzz", "version": "0"}}})
}

fn tools_list(id: &str) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/list"})
}

/// Whether `answer` is a result of `tools/list` listing the core tools.
fn lists_tools(answer: &Value) -> bool {
    answer["result"]["tools"]
        .as_array()
        .is_some_and(|tools| tools.iter().any(|t| t["name"] == "load_tool_group"))
}

/// Reads lines from the gateway until the message answering `id`.
async fn answer_to(lines: &mut mpsc::UnboundedReceiver<String>, id: &str) -> Result<Value, String> {
    let wait = async {
        while let Some(line) = lines.recv().await {
            let message: Value = serde_json::from_str(&line)
                .map_err(|e| format!("the gateway wrote a line that is not JSON ({e}): {line}"))?;
            if message["id"] == id {
                return Ok(message);
            }
        }
        Err(format!("the gateway closed stdout before answering {id}"))
    };
    tokio::time::timeout(STEP, wait)
        .await
        .map_err(|_| format!("no answer to {id} within {STEP:?}"))?
}

async fn write_line(pipe: &mut (impl AsyncWriteExt + Unpin), bytes: &[u8]) -> Result<(), String> {
    let write = async {
        pipe.write_all(bytes).await?;
        pipe.write_all(b"\n").await?;
        pipe.flush().await
    };
    match tokio::time::timeout(STEP, write).await {
        Ok(Ok(())) => Ok(()),
        Ok(Err(error)) => Err(format!("writing to the gateway: {error}")),
        Err(_) => Err(format!("the gateway read nothing for {STEP:?}")),
    }
}

/// One stdio connection: initialize, the messages, then `tools/list` must
/// be answered; closing the pipe ends the connection.
async fn stdio_case(
    gateway: &Arc<Gateway<MemoryStore>>,
    session: &str,
    messages: &[Vec<u8>],
) -> Result<(), String> {
    let (client, server) = tokio::io::duplex(1 << 20);
    let handler = GatewayHandler::new(
        Arc::clone(gateway),
        SessionSource::Fixed(ConversationId::new(session)),
    );
    let serving = tokio::spawn(async move {
        let running = handler.serve(tokio::io::split(server)).await?;
        let _ = running.waiting().await;
        Ok::<(), rmcp::service::ServerInitializeError>(())
    });
    let (read, mut write) = tokio::io::split(client);
    let (sender, mut lines) = mpsc::unbounded_channel();
    let reader = tokio::spawn(async move {
        let mut read = BufReader::new(read).lines();
        while let Ok(Some(line)) = read.next_line().await {
            if sender.send(line).is_err() {
                break;
            }
        }
    });
    write_line(&mut write, initialize("init").to_string().as_bytes()).await?;
    let answer = answer_to(&mut lines, "init").await?;
    if answer["result"]["serverInfo"]["name"] != "toolgate" {
        return Err(format!("initialize answered {answer}"));
    }
    write_line(
        &mut write,
        br#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
    )
    .await?;
    for message in messages {
        write_line(&mut write, message).await?;
    }
    write_line(&mut write, tools_list("probe").to_string().as_bytes()).await?;
    let answer = answer_to(&mut lines, "probe").await?;
    if !lists_tools(&answer) {
        return Err(format!("tools/list answered {answer}"));
    }
    // EOF on the gateway's stdin: the connection must end.
    tokio::time::timeout(STEP, write.shutdown())
        .await
        .map_err(|_| "closing the pipe blocked".to_owned())?
        .map_err(|e| format!("closing the pipe: {e}"))?;
    drop(lines);
    match tokio::time::timeout(STEP, serving).await {
        Ok(Ok(_)) => {}
        Ok(Err(error)) => return Err(format!("the connection's task failed: {error}")),
        Err(_) => return Err("the connection outlived its closed pipe".to_owned()),
    }
    reader.abort();
    Ok(())
}

/// The stdio transport: any message, then a valid request still answered.
#[test]
fn fuzz_stdio_gateway() {
    let harness = Harness::start();
    let seeds = client_messages();
    let cases = AtomicU64::new(0);
    fuzz(
        Target::new("stdio_gateway", 64),
        messages(),
        &[],
        |(before, fuzzed)| {
            let mut sent: Vec<Vec<u8>> = before
                .iter()
                .map(|&i| seeds[i].to_string().into_bytes())
                .collect();
            sent.push(fuzzed);
            // A few sessions, resumed again and again, as a client restarting would.
            let session = format!("fuzz-{}", cases.fetch_add(1, Ordering::Relaxed) % 4);
            harness
                .runtime
                .block_on(stdio_case(&harness.gateway, &session, &sent))
                .map_err(TestCaseError::fail)
        },
    );
}

/// How a fuzzed POST is dressed: which session it names and which of the
/// headers a client must send it has right.
#[derive(Clone, Debug)]
struct Post {
    body: Vec<u8>,
    session: SessionHeader,
    accept: &'static str,
    content_type: &'static str,
    protocol_version: Option<&'static str>,
}

#[derive(Clone, Debug)]
enum SessionHeader {
    Own,
    Missing,
    Other(String),
}

fn post() -> impl Strategy<Value = Post> {
    let session = prop_oneof![
        8 => Just(SessionHeader::Own),
        1 => Just(SessionHeader::Missing),
        1 => toolgate_fuzz::json::pattern("[ -~]{0,40}").prop_map(SessionHeader::Other),
    ];
    let accept = prop_oneof![
        8 => Just("application/json, text/event-stream"),
        1 => Just("text/event-stream"),
        1 => Just("*/*"),
    ];
    let content_type = prop_oneof![
        8 => Just("application/json"),
        1 => Just("application/json; charset=utf-8"),
        1 => Just("text/plain"),
    ];
    let protocol_version = prop::option::weighted(
        0.8,
        prop::sample::select(vec![
            "2025-06-18",
            "2025-11-25",
            "2026-07-28",
            "1999-01-01",
            "",
        ]),
    );
    (
        message_bytes(client_messages()),
        session,
        accept,
        content_type,
        protocol_version,
    )
        .prop_map(
            |(body, session, accept, content_type, protocol_version)| Post {
                body,
                session,
                accept,
                content_type,
                protocol_version,
            },
        )
}

/// The JSON-RPC messages in a response body: plain JSON, or SSE `data:`
/// lines.
fn messages_in(body: &[u8]) -> Vec<Value> {
    let text = String::from_utf8_lossy(body);
    if let Ok(message) = serde_json::from_str(&text) {
        return vec![message];
    }
    text.lines()
        .filter_map(|line| line.strip_prefix("data:"))
        .filter_map(|data| serde_json::from_str(data.trim()).ok())
        .collect()
}

/// Sends one POST and reads its whole answer, within [`STEP`].
async fn send(
    client: &reqwest::Client,
    url: &str,
    session: Option<&str>,
    post: &Post,
) -> Result<(reqwest::StatusCode, Option<String>, Vec<u8>), String> {
    let mut request = client
        .post(url)
        .header("accept", post.accept)
        .header("content-type", post.content_type)
        .body(post.body.clone());
    if let Some(session) = session {
        request = request.header("mcp-session-id", session);
    }
    if let Some(version) = post.protocol_version {
        request = request.header("mcp-protocol-version", version);
    }
    let exchange = async {
        let response = request.send().await?;
        let status = response.status();
        let session = response
            .headers()
            .get("mcp-session-id")
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned);
        let body = response.bytes().await?;
        Ok::<_, reqwest::Error>((status, session, body.to_vec()))
    };
    match tokio::time::timeout(STEP, exchange).await {
        Ok(Ok(answer)) => Ok(answer),
        Ok(Err(error)) => Err(format!("HTTP exchange failed: {error}")),
        Err(_) => Err(format!("no complete answer within {STEP:?}: {post:?}")),
    }
}

fn valid(body: Value) -> Post {
    Post {
        body: body.to_string().into_bytes(),
        session: SessionHeader::Own,
        accept: "application/json, text/event-stream",
        content_type: "application/json",
        protocol_version: Some("2025-06-18"),
    }
}

/// One HTTP session: initialize, the posts, then `tools/list` on the
/// session must be answered; then the session is ended.
async fn http_case(client: &reqwest::Client, url: &str, posts: &[Post]) -> Result<(), String> {
    let mut init = valid(initialize("init"));
    init.protocol_version = None;
    let (status, session, body) = send(client, url, None, &init).await?;
    let session = session.ok_or(format!("initialize answered {status} without a session"))?;
    if !messages_in(&body).iter().any(|m| m["id"] == "init") {
        return Err(format!("initialize answered {status}: {body:?}"));
    }
    let initialized = valid(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
    send(client, url, Some(&session), &initialized).await?;
    for post in posts {
        let named = match &post.session {
            SessionHeader::Own => Some(session.as_str()),
            SessionHeader::Missing => None,
            SessionHeader::Other(other) => Some(other.as_str()),
        };
        let (status, _, body) = send(client, url, named, post).await?;
        if status.is_server_error() {
            return Err(format!(
                "{status} for {post:?}: {}",
                String::from_utf8_lossy(&body)
            ));
        }
    }
    let (status, _, body) = send(client, url, Some(&session), &valid(tools_list("probe"))).await?;
    if !messages_in(&body)
        .iter()
        .any(|m| m["id"] == "probe" && lists_tools(m))
    {
        return Err(format!(
            "tools/list answered {status}: {}",
            String::from_utf8_lossy(&body)
        ));
    }
    let end = client.delete(url).header("mcp-session-id", &session).send();
    match tokio::time::timeout(STEP, end).await {
        Ok(Ok(response)) if response.status().is_success() => Ok(()),
        Ok(Ok(response)) => Err(format!("ending the session answered {}", response.status())),
        Ok(Err(error)) => Err(format!("ending the session: {error}")),
        Err(_) => Err(format!("ending the session took over {STEP:?}")),
    }
}

/// The streamable HTTP transport: any POST, then a valid request on the
/// session still answered.
#[test]
fn fuzz_http_gateway() {
    let harness = Harness::start();
    let shutdown = CancellationToken::new();
    let url = harness.runtime.block_on(async {
        let listener = tokio::net::TcpListener::bind(loopback()).await.unwrap();
        let url = format!("http://{}/mcp", listener.local_addr().unwrap());
        tokio::spawn(serve_http(
            Arc::clone(&harness.gateway),
            listener,
            HttpOptions::default(),
            shutdown.clone(),
        ));
        url
    });
    let client = reqwest::Client::builder().no_proxy().build().unwrap();
    let seeds = client_messages();
    fuzz(
        Target::new("http_gateway", 64),
        (prop::collection::vec(0..seeds.len(), 0..3), post()),
        &[],
        |(before, fuzzed)| {
            let mut posts: Vec<Post> = before.iter().map(|&i| valid(seeds[i].clone())).collect();
            posts.push(fuzzed);
            harness
                .runtime
                .block_on(http_case(&client, &url, &posts))
                .map_err(TestCaseError::fail)
        },
    );
    shutdown.cancel();
}
