//! Shared fixtures: an in-process gateway on a loopback port, and an rmcp
//! client that counts `list_changed` notifications.

use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use rmcp::model::{
    CallToolRequestParams, CallToolResult, ClientCapabilities, ClientConfig, Implementation,
};
use rmcp::service::{NotificationContext, RunningService};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::{ClientHandler, RoleClient, ServiceExt};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;
use toolgate_mcp::config::UpstreamConfig;
use toolgate_mcp::{Gateway, GatewayOptions, HttpOptions, serve_http};
use toolgate_store::{ConversationStore, MemoryStore};
use toolgate_tools::{BuiltinConfig, ToolboxOptions};

/// A gateway serving HTTP until dropped.
pub(crate) struct Served<S> {
    pub(crate) url: String,
    pub(crate) address: SocketAddr,
    pub(crate) gateway: Arc<Gateway<S>>,
    shutdown: CancellationToken,
    server: Option<tokio::task::JoinHandle<std::io::Result<()>>>,
}

impl<S> Drop for Served<S> {
    fn drop(&mut self) {
        self.shutdown.cancel();
    }
}

impl<S: ConversationStore + 'static> Served<S> {
    /// Starts a graceful shutdown; the returned task ends when serving has.
    pub(crate) fn begin_shutdown(&mut self) -> tokio::task::JoinHandle<std::io::Result<()>> {
        self.shutdown.cancel();
        self.server.take().expect("shut down once")
    }

    /// Stops serving and the upstreams, and waits until the port is free.
    pub(crate) async fn stop(self) {
        self.shutdown.cancel();
        self.gateway.shutdown().await;
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

pub(crate) fn options(files_root: &Path, upstreams: Vec<UpstreamConfig>) -> GatewayOptions {
    GatewayOptions {
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
    }
}

pub(crate) async fn serve<S: ConversationStore + 'static>(
    options: GatewayOptions,
    store: S,
    address: SocketAddr,
    http: HttpOptions,
) -> Served<S> {
    let (gateway, _report) = Gateway::start(options, store).await.unwrap();
    let listener = tokio::net::TcpListener::bind(address).await.unwrap();
    let address = listener.local_addr().unwrap();
    let shutdown = CancellationToken::new();
    let server = tokio::spawn(serve_http(
        Arc::clone(&gateway),
        listener,
        http,
        shutdown.clone(),
    ));
    Served {
        url: format!("http://{address}/mcp"),
        address,
        gateway,
        shutdown,
        server: Some(server),
    }
}

/// A gateway on a free loopback port with in-memory sessions, the built-ins
/// rooted at `files_root`, and `upstreams`.
pub(crate) async fn serve_default(
    files_root: &Path,
    upstreams: Vec<UpstreamConfig>,
) -> Served<MemoryStore> {
    serve_in_memory(options(files_root, upstreams)).await
}

/// [`serve`] with `options`, sessions in memory, on loopback with the
/// default HTTP options.
pub(crate) async fn serve_in_memory(options: GatewayOptions) -> Served<MemoryStore> {
    serve(
        options,
        MemoryStore::new(),
        loopback(),
        HttpOptions::default(),
    )
    .await
}

pub(crate) fn loopback() -> SocketAddr {
    "127.0.0.1:0".parse().unwrap()
}

/// A client handler that counts `notifications/tools/list_changed`.
#[derive(Clone, Debug, Default)]
pub(crate) struct Recorder {
    list_changed: Arc<AtomicUsize>,
    notify: Arc<tokio::sync::Notify>,
}

impl Recorder {
    pub(crate) fn list_changed(&self) -> usize {
        self.list_changed.load(Ordering::SeqCst)
    }

    /// Waits until at least `count` notifications arrived (or panics after 5 s).
    pub(crate) async fn wait_for_list_changed(&self, count: usize) {
        let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
        while self.list_changed() < count {
            let notified = self.notify.notified();
            if self.list_changed() >= count {
                break;
            }
            assert!(
                tokio::time::timeout_at(deadline, notified).await.is_ok(),
                "waited for {count} list_changed, got {}",
                self.list_changed()
            );
        }
    }
}

impl ClientHandler for Recorder {
    async fn on_tool_list_changed(&self, _context: NotificationContext<RoleClient>) {
        self.list_changed.fetch_add(1, Ordering::SeqCst);
        self.notify.notify_waiters();
    }

    fn get_info(&self) -> ClientConfig {
        ClientConfig::new(
            ClientCapabilities::default(),
            Implementation::new("toolgate-tests", "0"),
        )
    }
}

pub(crate) type Client = RunningService<RoleClient, Recorder>;

pub(crate) async fn connect(url: &str) -> (Client, Recorder) {
    let recorder = Recorder::default();
    let client = recorder
        .clone()
        .serve(StreamableHttpClientTransport::from_uri(url.to_owned()))
        .await
        .unwrap();
    (client, recorder)
}

pub(crate) async fn call(client: &Client, name: &str, arguments: Value) -> CallToolResult {
    let Value::Object(arguments) = arguments else {
        panic!("arguments must be an object");
    };
    let params = CallToolRequestParams::new(name.to_owned()).with_arguments(arguments);
    tokio::time::timeout(Duration::from_secs(60), client.call_tool(params))
        .await
        .expect("call timed out")
        .unwrap()
}

/// Loads `group` with `load_tool_group`, which must succeed.
pub(crate) async fn load(client: &Client, group: &str) {
    let loaded = call(client, "load_tool_group", json!({"group_name": group})).await;
    assert!(!is_error(&loaded), "{}", text(&loaded));
}

pub(crate) fn text(result: &CallToolResult) -> String {
    result
        .content
        .iter()
        .filter_map(|block| block.as_text().map(|text| text.text.clone()))
        .collect::<Vec<_>>()
        .join("\n")
}

pub(crate) fn is_error(result: &CallToolResult) -> bool {
    result.is_error == Some(true)
}

pub(crate) async fn tool_names(client: &Client) -> Vec<String> {
    client
        .list_all_tools()
        .await
        .unwrap()
        .into_iter()
        .map(|tool| tool.name.to_string())
        .collect()
}

pub(crate) const CORE: [&str; 3] = ["load_tool_group", "unload_tool_group", "call_tool"];

/// Sends `request` as is over a fresh connection and reads the whole answer
/// (the request says `connection: close`).
pub(crate) async fn exchange(address: SocketAddr, request: &str) -> String {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut stream = tokio::net::TcpStream::connect(address).await.unwrap();
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut response = Vec::new();
    tokio::time::timeout(Duration::from_secs(20), stream.read_to_end(&mut response))
        .await
        .expect("no answer")
        .unwrap();
    String::from_utf8_lossy(&response).into_owned()
}

/// The value of header `name` in a raw HTTP response.
pub(crate) fn header_value(response: &str, name: &str) -> Option<String> {
    response.lines().find_map(|line| {
        let (key, value) = line.split_once(':')?;
        key.eq_ignore_ascii_case(name)
            .then(|| value.trim().to_owned())
    })
}
