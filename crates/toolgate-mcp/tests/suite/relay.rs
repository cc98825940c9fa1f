//! Requests an upstream sends during a call (sampling here) reach the
//! session whose call caused them, and nobody else: over stdio nothing in
//! the request names its call, so with calls from two sessions in flight
//! the upstream gets an error instead. A client that did not declare
//! sampling is never asked, and the call's deadline runs while the client
//! is being asked.

#![allow(
    deprecated,
    reason = "sampling is deprecated in MCP 2026-07-28, relayed for 2025-11-25"
)]

use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rmcp::model::{
    ClientCapabilities, ClientConfig, CreateMessageRequestParams, CreateMessageResult,
    Implementation,
};
use rmcp::service::{RequestContext, RunningService};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::{ClientHandler, ErrorData as McpError, RoleClient, ServiceExt};
use serde_json::{Value, json};
use toolgate_mcp::config::UpstreamConfig;

use super::support::{is_error, serve_default, text};
use super::upstreams::{peers, stdio};

/// A client that answers sampling with its own name, and records what it
/// was asked; `silent` never answers.
#[derive(Clone, Debug)]
struct Sampler {
    name: &'static str,
    declares_sampling: bool,
    silent: bool,
    asked: Arc<Mutex<Vec<String>>>,
}

impl Sampler {
    fn new(name: &'static str) -> Self {
        Self {
            name,
            declares_sampling: true,
            silent: false,
            asked: Arc::default(),
        }
    }

    fn asked(&self) -> Vec<String> {
        self.asked.lock().unwrap().clone()
    }
}

impl ClientHandler for Sampler {
    async fn create_message(
        &self,
        params: CreateMessageRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<CreateMessageResult, McpError> {
        let params = serde_json::to_value(&params).unwrap();
        let prompt = params["messages"][0]["content"]["text"]
            .as_str()
            .unwrap_or_default()
            .to_owned();
        self.asked.lock().unwrap().push(prompt.clone());
        if self.silent {
            std::future::pending::<()>().await;
        }
        let reply = json!({
            "model": "scripted",
            "role": "assistant",
            "content": {"type": "text", "text": format!("{} saw {prompt}", self.name)},
        });
        Ok(serde_json::from_value(reply).unwrap())
    }

    fn get_info(&self) -> ClientConfig {
        let mut capabilities = ClientCapabilities::default();
        if self.declares_sampling {
            capabilities.sampling = Some(Default::default());
        }
        ClientConfig::new(capabilities, Implementation::new(self.name, "0"))
    }
}

async fn connect(url: &str, sampler: &Sampler) -> RunningService<RoleClient, Sampler> {
    sampler
        .clone()
        .serve(StreamableHttpClientTransport::from_uri(url.to_owned()))
        .await
        .unwrap()
}

fn relay_upstream(call_timeout: Duration) -> UpstreamConfig {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/relay_server.py");
    UpstreamConfig {
        call_timeout,
        ..stdio(
            "relay",
            peers().venv_bin.join("python"),
            &[script.to_str().unwrap()],
        )
    }
}

async fn call_args(
    client: &RunningService<RoleClient, Sampler>,
    name: &str,
    arguments: Value,
) -> rmcp::model::CallToolResult {
    let Value::Object(arguments) = arguments else {
        unreachable!()
    };
    let params = rmcp::model::CallToolRequestParams::new(name.to_owned()).with_arguments(arguments);
    tokio::time::timeout(Duration::from_secs(30), client.call_tool(params))
        .await
        .expect("call timed out")
        .unwrap()
}

#[tokio::test]
async fn a_request_from_one_sessions_call_never_reaches_another_session() {
    let root = tempfile::tempdir().unwrap();
    let served = serve_default(root.path(), vec![relay_upstream(Duration::from_secs(30))]).await;
    let (alice, bob) = (Sampler::new("alice"), Sampler::new("bob"));
    let (a, b) = (
        connect(&served.url, &alice).await,
        connect(&served.url, &bob).await,
    );
    for client in [&a, &b] {
        let loaded = call_args(client, "load_tool_group", json!({"group_name": "relay"})).await;
        assert!(!is_error(&loaded), "{}", text(&loaded));
    }

    // Alone on the connection, Alice's call is the only one the request can
    // belong to.
    let answered = call_args(&a, "ask", json!({"label": "alone"})).await;
    assert_eq!(text(&answered), "answer: alice saw alone");

    // Alice's call asks once Bob's call is in flight too: the most recent
    // caller is Bob, but the request names no call, so nobody is asked.
    let asking = call_args(
        &a,
        "ask",
        json!({"label": "alice's secret", "wait_for_hold": true}),
    );
    let holding = async {
        tokio::time::sleep(Duration::from_millis(50)).await;
        call_args(&b, "hold", json!({})).await
    };
    let (asked, held) = tokio::join!(asking, holding);
    assert_eq!(text(&held), "held");
    assert!(
        text(&asked).starts_with("sampling failed:")
            && text(&asked).contains("cannot tell which tool call"),
        "{}",
        text(&asked)
    );
    assert_eq!(bob.asked(), Vec::<String>::new());
    assert_eq!(alice.asked(), ["alone"]);
    served.stop().await;
}

#[tokio::test]
async fn a_client_that_did_not_declare_sampling_is_not_asked() {
    let root = tempfile::tempdir().unwrap();
    let served = serve_default(root.path(), vec![relay_upstream(Duration::from_secs(30))]).await;
    let carol = Sampler {
        declares_sampling: false,
        ..Sampler::new("carol")
    };
    let client = connect(&served.url, &carol).await;
    let loaded = call_args(&client, "load_tool_group", json!({"group_name": "relay"})).await;
    assert!(!is_error(&loaded), "{}", text(&loaded));
    let answered = call_args(&client, "ask", json!({"label": "hello"})).await;
    assert!(
        text(&answered).contains("does not support sampling"),
        "{}",
        text(&answered)
    );
    assert_eq!(carol.asked(), Vec::<String>::new());
    served.stop().await;
}

#[tokio::test]
async fn the_calls_deadline_runs_while_the_client_is_asked() {
    let root = tempfile::tempdir().unwrap();
    let served = serve_default(
        root.path(),
        vec![relay_upstream(Duration::from_millis(500))],
    )
    .await;
    let dave = Sampler {
        silent: true,
        ..Sampler::new("dave")
    };
    let client = connect(&served.url, &dave).await;
    let loaded = call_args(&client, "load_tool_group", json!({"group_name": "relay"})).await;
    assert!(!is_error(&loaded), "{}", text(&loaded));
    let answered = call_args(&client, "ask", json!({"label": "never answered"})).await;
    assert!(is_error(&answered), "{}", text(&answered));
    assert!(
        text(&answered).contains("did not answer 'ask' within 0.5s"),
        "{}",
        text(&answered)
    );
    assert_eq!(dave.asked(), ["never answered"]);
    served.stop().await;
}

#[tokio::test]
async fn an_answer_too_large_to_read_is_reported_as_such_not_as_a_timeout() {
    let root = tempfile::tempdir().unwrap();
    let served = serve_default(root.path(), vec![relay_upstream(Duration::from_secs(60))]).await;
    let erin = Sampler::new("erin");
    let client = connect(&served.url, &erin).await;
    let loaded = call_args(&client, "load_tool_group", json!({"group_name": "relay"})).await;
    assert!(!is_error(&loaded), "{}", text(&loaded));

    let big = call_args(&client, "big", json!({"mebibytes": 17})).await;
    assert!(is_error(&big), "{}", text(&big));
    assert!(
        text(&big).contains("over the 16777216-byte limit of one message"),
        "{}",
        text(&big)
    );
    // The server goes on serving.
    let small = call_args(&client, "big", json!({"mebibytes": 0})).await;
    assert!(!is_error(&small), "{}", text(&small));
    served.stop().await;
}
