//! Named clients with tokens of their own: each is let in by its token
//! only, and a session serves only the client that opened it, in memory or
//! restored from the store.

use std::net::SocketAddr;
use std::time::Duration;

use serde_json::json;
use toolgate_mcp::{ClientName, Clients, HttpLimits, HttpOptions, TokenHash};
use toolgate_store::MemoryStore;

use super::support::{Served, exchange, header_value, loopback, options, serve};

pub(super) const ALICE: &str = "tg_alice-0123456789abcdef";
pub(super) const BOB: &str = "tg_bob-0123456789abcdef";
const SHARED: &str = "shared-token-0123456789";

/// Alice and Bob with tokens of their own, and the shared token; idle
/// sessions leave memory after a second.
pub(super) async fn served() -> Served<MemoryStore> {
    served_with(None).await
}

async fn served_with(audit: Option<toolgate_mcp::AuditLog>) -> Served<MemoryStore> {
    served_limited(audit, &toolgate_mcp::RateLimitSettings::default()).await
}

async fn served_limited(
    audit: Option<toolgate_mcp::AuditLog>,
    limits: &toolgate_mcp::RateLimitSettings,
) -> Served<MemoryStore> {
    let root = tempfile::tempdir().unwrap();
    let clients = Clients::new([
        (ClientName::new("alice").unwrap(), TokenHash::of(ALICE)),
        (ClientName::new("bob").unwrap(), TokenHash::of(BOB)),
    ])
    .unwrap();
    let rate_limits = std::sync::Arc::new(toolgate_mcp::RateLimits::new(limits, clients.names()));
    let http = HttpOptions {
        bearer_token: Some(SHARED.to_owned()),
        clients,
        limits: HttpLimits {
            idle_in_memory: Duration::from_secs(1),
            ..HttpLimits::default()
        },
        ..HttpOptions::default()
    };
    let mut options = options(root.path(), vec![]);
    options.audit = audit;
    options.rate_limits = rate_limits;
    serve(options, MemoryStore::new(), loopback(), http).await
}

/// One POST over a fresh connection, with `token` and `session` when given.
pub(super) async fn post(
    address: SocketAddr,
    token: Option<&str>,
    session: Option<&str>,
    body: &str,
) -> String {
    let mut headers = String::new();
    if let Some(token) = token {
        headers.push_str(&format!("authorization: Bearer {token}\r\n"));
    }
    if let Some(session) = session {
        headers.push_str(&format!(
            "mcp-session-id: {session}\r\nmcp-protocol-version: 2025-11-25\r\n"
        ));
    }
    let request = format!(
        "POST /mcp HTTP/1.1\r\nhost: 127.0.0.1:{}\r\ncontent-type: application/json\r\n\
         accept: application/json, text/event-stream\r\n{headers}content-length: {}\r\n\
         connection: close\r\n\r\n{body}",
        address.port(),
        body.len()
    );
    exchange(address, &request).await
}

pub(super) const INITIALIZE: &str = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"0"}}}"#;
pub(super) const INITIALIZED: &str = r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#;
pub(super) const LOAD_TIME: &str = r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"load_tool_group","arguments":{"group_name":"time"}}}"#;
pub(super) const LIST: &str = r#"{"jsonrpc":"2.0","id":3,"method":"tools/list","params":{}}"#;

/// A session opened with `token`, the `time` group loaded.
pub(super) async fn open(address: SocketAddr, token: &str) -> String {
    let answer = post(address, Some(token), None, INITIALIZE).await;
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    let session = header_value(&answer, "mcp-session-id").expect("no session id");
    post(address, Some(token), Some(&session), INITIALIZED).await;
    let loaded = post(address, Some(token), Some(&session), LOAD_TIME).await;
    assert!(loaded.contains("Loaded"), "{loaded}");
    session
}

pub(super) fn refused_as_unknown(answer: &str) {
    assert!(answer.starts_with("HTTP/1.1 404"), "{answer}");
    assert!(answer.contains("is unknown to this gateway"), "{answer}");
    assert!(!answer.contains("time_now"), "{answer}");
}

#[tokio::test]
async fn each_client_gets_in_with_its_own_token_only() {
    let served = served().await;
    let address = served.address;
    for token in [
        None,
        Some("tg_nobody-0123456789"),
        Some(&ALICE[..ALICE.len() - 1]),
    ] {
        let answer = post(address, token, None, INITIALIZE).await;
        assert!(answer.starts_with("HTTP/1.1 401"), "{token:?}: {answer}");
    }
    for token in [ALICE, BOB, SHARED] {
        let answer = post(address, Some(token), None, INITIALIZE).await;
        assert!(answer.starts_with("HTTP/1.1 200"), "{token}: {answer}");
    }
    served.stop().await;
}

#[tokio::test]
async fn a_session_serves_only_the_client_that_opened_it() {
    let served = served().await;
    let address = served.address;
    let alices = open(address, ALICE).await;
    let shared = open(address, SHARED).await;

    // Bob, and the shared token, cannot use Alice's session.
    for token in [BOB, SHARED] {
        refused_as_unknown(&post(address, Some(token), Some(&alices), LIST).await);
        refused_as_unknown(&post(address, Some(token), Some(&alices), LOAD_TIME).await);
    }
    // Nor can Alice use the shared token's.
    refused_as_unknown(&post(address, Some(ALICE), Some(&shared), LIST).await);
    // Nobody ended or changed anything: both still serve their own client.
    let answer = post(address, Some(ALICE), Some(&alices), LIST).await;
    assert!(answer.contains("time_now"), "{answer}");
    let answer = post(address, Some(SHARED), Some(&shared), LIST).await;
    assert!(answer.contains("time_now"), "{answer}");

    // Once the session has left memory, its owner is read from the store.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    while served.gateway.sessions().live_count().await > 0 {
        assert!(
            tokio::time::Instant::now() < deadline,
            "sessions stayed in memory"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    refused_as_unknown(&post(address, Some(BOB), Some(&alices), LIST).await);
    let answer = post(address, Some(ALICE), Some(&alices), LIST).await;
    assert!(answer.contains("time_now"), "{answer}");
    served.stop().await;
}

#[tokio::test]
async fn another_clients_session_is_unknown_on_every_path() {
    let served = served().await;
    let address = served.address;
    let alices = open(address, ALICE).await;
    let requests = [
        json!({"jsonrpc": "2.0", "id": 7, "method": "tools/list", "params": {}}),
        json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {"name": "time_now", "arguments": {}}}),
        json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {"name": "call_tool", "arguments": {"name": "time_now", "arguments": {}}}}),
        json!({"jsonrpc": "2.0", "id": 7, "method": "resources/list", "params": {}}),
        json!({"jsonrpc": "2.0", "id": 7, "method": "resources/read", "params": {"uri": "file:///x"}}),
        json!({"jsonrpc": "2.0", "id": 7, "method": "prompts/list", "params": {}}),
        json!({"jsonrpc": "2.0", "id": 7, "method": "prompts/get", "params": {"name": "p"}}),
        json!({"jsonrpc": "2.0", "id": 7, "method": "completion/complete", "params": {"ref": {"type": "ref/prompt", "name": "p"}, "argument": {"name": "a", "value": "b"}}}),
    ];
    for request in &requests {
        refused_as_unknown(&post(address, Some(BOB), Some(&alices), &request.to_string()).await);
    }
    // Its own client is still served.
    let list = post(
        address,
        Some(ALICE),
        Some(&alices),
        &requests[0].to_string(),
    )
    .await;
    assert!(list.contains("time_now"), "{list}");
    served.stop().await;
}

/// An audit log in `dir`, with the arguments in clear or not, and its path.
pub(super) async fn audit_log(
    dir: &std::path::Path,
    arguments: bool,
) -> (toolgate_mcp::AuditLog, std::path::PathBuf) {
    let path = dir.join("audit.jsonl");
    let config = toolgate_mcp::AuditConfig {
        path: path.clone(),
        arguments,
    };
    (toolgate_mcp::AuditLog::open(&config).await.unwrap(), path)
}

/// The audit log's lines, once `count` are in.
pub(super) async fn audit_lines(path: &std::path::Path, count: usize) -> Vec<serde_json::Value> {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    loop {
        let text = std::fs::read_to_string(path).unwrap_or_default();
        let lines: Vec<serde_json::Value> = text
            .lines()
            .map(|line| serde_json::from_str(line).unwrap())
            .collect();
        if lines.len() >= count {
            return lines;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "{} audit lines of {count}:\n{text}",
            lines.len()
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test]
async fn every_tool_call_is_audited_with_its_client_and_no_argument_in_clear() {
    let dir = tempfile::tempdir().unwrap();
    let (audit, path) = audit_log(dir.path(), false).await;
    let served = served_with(Some(audit)).await;
    let address = served.address;
    let alices = open(address, ALICE).await;
    let bobs = open(address, BOB).await;
    let secret = r#"{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"time_convert","arguments":{"time":"2026-01-01T00:00:00Z","to_timezone":"Europe/Paris","note":"s3cret-value"}}}"#;
    let answer = post(address, Some(BOB), Some(&bobs), secret).await;
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    let unknown = r#"{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"made_up_tool","arguments":{}}}"#;
    post(address, Some(ALICE), Some(&alices), unknown).await;

    let lines = audit_lines(&path, 4).await;
    let text = std::fs::read_to_string(&path).unwrap();
    assert!(!text.contains("s3cret-value"), "{text}");
    assert!(!text.contains("made_up_tool"), "{text}");
    let find = |client: &str, tool: &str| {
        lines
            .iter()
            .find(|line| line["client"] == client && line["tool"] == tool)
            .unwrap_or_else(|| panic!("no line for {client} {tool} in\n{text}"))
    };
    let load = find("alice", "load_tool_group");
    assert_eq!(load["group"], "core");
    assert_eq!(load["session"], alices.as_str());
    assert_eq!(load["outcome"], "ok");
    assert_eq!(find("bob", "load_tool_group")["session"], bobs.as_str());
    let convert = find("bob", "time_convert");
    assert_eq!(convert["group"], "time");
    assert_eq!(convert["arguments_sha256"].as_str().map(str::len), Some(64));
    assert!(convert["duration_ms"].as_f64().is_some());
    assert!(convert.get("arguments").is_none());
    assert_eq!(find("alice", "(unknown)")["outcome"], "unavailable");
    served.stop().await;
}

#[tokio::test]
async fn arguments_are_audited_in_clear_only_when_asked() {
    let dir = tempfile::tempdir().unwrap();
    let (audit, path) = audit_log(dir.path(), true).await;
    let served = served_with(Some(audit)).await;
    open(served.address, ALICE).await;
    let lines = audit_lines(&path, 1).await;
    assert_eq!(lines[0]["arguments"]["group_name"], "time");
    assert!(lines[0].get("arguments_sha256").is_none());
    served.stop().await;
}

fn call_of(id: u32, tool: &str, arguments: &str) -> String {
    format!(
        r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"{tool}","arguments":{arguments}}}}}"#
    )
}

#[tokio::test]
async fn rate_limits_count_per_client_and_per_tool_and_say_when_to_retry() {
    use toolgate_mcp::{RateLimit, RateLimitSettings};
    let minute = Duration::from_secs(60);
    let limits = RateLimitSettings {
        per_client: Some(RateLimit::new(4, minute).unwrap()),
        clients: std::collections::HashMap::new(),
        tools: std::collections::HashMap::from([(
            "time_now".to_owned(),
            RateLimit::new(1, minute).unwrap(),
        )]),
    };
    let dir = tempfile::tempdir().unwrap();
    let (audit, path) = audit_log(dir.path(), false).await;
    let served = served_limited(Some(audit), &limits).await;
    let address = served.address;
    // open() makes one call: the load.
    let alices = open(address, ALICE).await;
    let bobs = open(address, BOB).await;

    time_now_is_limited_per_client_direct_or_through_call_tool(address, &alices, &bobs).await;
    the_fifth_call_of_a_client_is_refused_whatever_the_tool(address, &alices, &bobs).await;
    let metrics = served.gateway.metrics().render();
    assert!(
        metrics.contains(
            "toolgate_tool_calls_total{group=\"time\",tool=\"time_now\",outcome=\"limited\"} 2"
        ),
        "{metrics}"
    );
    // Refused calls are audited too, under the tool asked for.
    let lines = audit_lines(&path, 8).await;
    let limited: Vec<(&str, &str)> = lines
        .iter()
        .filter(|line| line["outcome"] == "limited")
        .map(|line| {
            (
                line["client"].as_str().unwrap_or_default(),
                line["tool"].as_str().unwrap_or_default(),
            )
        })
        .collect();
    assert_eq!(
        limited,
        [
            ("alice", "time_now"),
            ("alice", "time_now"),
            ("alice", "time_convert")
        ],
        "{lines:?}"
    );
    served.stop().await;
}

/// time_now once per minute per client, direct or through call_tool; Bob's
/// time_now is his own.
async fn time_now_is_limited_per_client_direct_or_through_call_tool(
    address: SocketAddr,
    alices: &str,
    bobs: &str,
) {
    let now = post(
        address,
        Some(ALICE),
        Some(alices),
        &call_of(10, "time_now", "{}"),
    )
    .await;
    assert!(now.contains("\"result\""), "{now}");
    let again = post(
        address,
        Some(ALICE),
        Some(alices),
        &call_of(11, "time_now", "{}"),
    )
    .await;
    assert!(again.contains("\"code\":-32000"), "{again}");
    assert!(
        again.contains("Rate limit reached: tool 'time_now' for client 'alice' may make 1 tool calls per 60 s; retry in"),
        "{again}"
    );
    assert!(again.contains("\"retry_after_seconds\":"), "{again}");
    let through = post(
        address,
        Some(ALICE),
        Some(alices),
        &call_of(12, "call_tool", r#"{"name":"time_now","arguments":{}}"#),
    )
    .await;
    assert!(
        through.contains("tool 'time_now' for client 'alice'"),
        "{through}"
    );
    // Bob's time_now is his own.
    let bobs_now = post(
        address,
        Some(BOB),
        Some(bobs),
        &call_of(13, "time_now", "{}"),
    )
    .await;
    assert!(bobs_now.contains("\"result\""), "{bobs_now}");
}

/// Alice has made 4 calls (the load, two of time_now, one of call_tool; the
/// refused ones count too): her fifth is refused, whatever the tool; Bob's
/// is not.
async fn the_fifth_call_of_a_client_is_refused_whatever_the_tool(
    address: SocketAddr,
    alices: &str,
    bobs: &str,
) {
    let sixth = post(
        address,
        Some(ALICE),
        Some(alices),
        &call_of(
            14,
            "time_convert",
            r#"{"time":"2026-01-01T00:00","source_timezone":"UTC","target_timezone":"Europe/Paris"}"#,
        ),
    )
    .await;
    assert!(
        sixth.contains("Rate limit reached: client 'alice' may make 4 tool calls per 60 s"),
        "{sixth}"
    );
    let bobs_convert = post(
        address,
        Some(BOB),
        Some(bobs),
        &call_of(
            15,
            "time_convert",
            r#"{"time":"2026-01-01T00:00","source_timezone":"UTC","target_timezone":"Europe/Paris"}"#,
        ),
    )
    .await;
    assert!(bobs_convert.contains("\"result\""), "{bobs_convert}");
}

/// A memory store whose reads fail while `down` is set, as a database away.
#[derive(Clone, Default)]
struct Flaky {
    inner: std::sync::Arc<MemoryStore>,
    down: std::sync::Arc<std::sync::atomic::AtomicBool>,
}

impl Flaky {
    fn check(&self) -> toolgate_store::Result<()> {
        if self.down.load(std::sync::atomic::Ordering::SeqCst) {
            return Err(toolgate_store::StoreError::Postgres {
                reason: "the server is away".to_owned(),
            });
        }
        Ok(())
    }
}

impl toolgate_store::ConversationStore for Flaky {
    async fn append(
        &self,
        conversation: &toolgate_store::ConversationId,
        message: toolgate_core::Message,
    ) -> toolgate_store::Result<toolgate_store::MessageId> {
        self.check()?;
        self.inner.append(conversation, message).await
    }
    async fn append_after(
        &self,
        conversation: &toolgate_store::ConversationId,
        last: Option<toolgate_store::MessageId>,
        message: toolgate_core::Message,
    ) -> toolgate_store::Result<Option<toolgate_store::MessageId>> {
        self.check()?;
        self.inner.append_after(conversation, last, message).await
    }
    async fn messages(
        &self,
        conversation: &toolgate_store::ConversationId,
    ) -> toolgate_store::Result<Vec<toolgate_store::StoredMessage>> {
        self.check()?;
        self.inner.messages(conversation).await
    }
    async fn set_tool_status(
        &self,
        conversation: &toolgate_store::ConversationId,
        tool_call_id: &str,
        status: toolgate_core::ToolStatus,
    ) -> toolgate_store::Result<bool> {
        self.inner
            .set_tool_status(conversation, tool_call_id, status)
            .await
    }
    async fn touch(
        &self,
        conversation: &toolgate_store::ConversationId,
    ) -> toolgate_store::Result<bool> {
        self.inner.touch(conversation).await
    }
    async fn last_message_id(
        &self,
        conversation: &toolgate_store::ConversationId,
    ) -> toolgate_store::Result<Option<toolgate_store::MessageId>> {
        self.check()?;
        self.inner.last_message_id(conversation).await
    }
    async fn exists(
        &self,
        conversation: &toolgate_store::ConversationId,
    ) -> toolgate_store::Result<bool> {
        self.inner.exists(conversation).await
    }
    async fn delete(
        &self,
        conversation: &toolgate_store::ConversationId,
    ) -> toolgate_store::Result<bool> {
        self.inner.delete(conversation).await
    }
    async fn expire_idle(&self, cutoff: std::time::SystemTime) -> toolgate_store::Result<usize> {
        self.inner.expire_idle(cutoff).await
    }
}

#[tokio::test]
async fn with_the_store_away_nobody_gets_a_session_whose_owner_cannot_be_read() {
    let root = tempfile::tempdir().unwrap();
    let clients = Clients::new([
        (ClientName::new("alice").unwrap(), TokenHash::of(ALICE)),
        (ClientName::new("bob").unwrap(), TokenHash::of(BOB)),
    ])
    .unwrap();
    let http = HttpOptions {
        clients,
        limits: HttpLimits {
            idle_in_memory: Duration::from_secs(1),
            ..HttpLimits::default()
        },
        ..HttpOptions::default()
    };
    let store = Flaky::default();
    let served = serve(
        options(root.path(), vec![]),
        store.clone(),
        loopback(),
        http,
    )
    .await;
    let address = served.address;
    let alices = open(address, ALICE).await;
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    while served.gateway.sessions().live_count().await > 0 {
        assert!(
            tokio::time::Instant::now() < deadline,
            "the session stayed in memory"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    store.down.store(true, std::sync::atomic::Ordering::SeqCst);
    for token in [BOB, ALICE] {
        let answer = post(address, Some(token), Some(&alices), LIST).await;
        assert!(answer.starts_with("HTTP/1.1 503"), "{token}: {answer}");
        assert!(!answer.contains("time_now"), "{answer}");
    }
    store.down.store(false, std::sync::atomic::Ordering::SeqCst);
    refused_as_unknown(&post(address, Some(BOB), Some(&alices), LIST).await);
    let answer = post(address, Some(ALICE), Some(&alices), LIST).await;
    assert!(answer.contains("time_now"), "{answer}");
    served.stop().await;
}

/// A call through `call_tool` counts once against its client's limit: the
/// `call_tool` call, not the tool it names again.
#[tokio::test]
async fn a_call_through_call_tool_counts_once_against_the_clients_limit() {
    use toolgate_mcp::{RateLimit, RateLimitSettings};
    let limits = RateLimitSettings {
        per_client: Some(RateLimit::new(3, Duration::from_secs(60)).unwrap()),
        ..RateLimitSettings::default()
    };
    let served = served_limited(None, &limits).await;
    let address = served.address;
    // The load is the first of three.
    let alices = open(address, ALICE).await;
    let through = r#"{"name":"time_now","arguments":{"timezone":"UTC"}}"#;
    for id in [20, 21] {
        let answer = post(
            address,
            Some(ALICE),
            Some(&alices),
            &call_of(id, "call_tool", through),
        )
        .await;
        assert!(
            !answer.contains("Rate limit reached"),
            "call {id}: {answer}"
        );
    }
    let fourth = post(
        address,
        Some(ALICE),
        Some(&alices),
        &call_of(22, "call_tool", through),
    )
    .await;
    assert!(
        fourth.contains("Rate limit reached: client 'alice' may make 3 tool calls per 60 s"),
        "{fourth}"
    );
    served.stop().await;
}
