//! Two gateways on one PostgreSQL database serve one session together: a
//! client whose consecutive requests go to one gateway, then the other
//! (a round-robin proxy in front, as a load balancer would do), sees one
//! session: the groups it loaded through either, in one order.
//!
//! A change made through one gateway reaches the client through the one that
//! holds its stream (PostgreSQL `LISTEN`/`NOTIFY`), and a JavaScript tool
//! written, changed or deleted through one is what the other lists and runs
//! from the next request on, for the operator's tools (the ones listed) and
//! a named client's own alike; a client of the other that loaded them hears
//! of the change before it asks.
//!
//! The database is the one `scripts/test` starts (`scripts/with-postgres`),
//! named by `TOOLGATE_TEST_POSTGRES_URL`.

use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use pretty_assertions::assert_eq;
use serde_json::json;
use tokio::net::{TcpListener, TcpStream};
use toolgate_mcp::{ClientName, Clients, HttpOptions, TokenHash};
use toolgate_store::{JsToolStore, PostgresOptions, PostgresStore, ToolOwner};
use toolgate_tools::{JavaScriptConfig, UserJsTools};

use super::policies;
use super::support::{
    CORE, Client, Recorder, Served, call, connect, is_error, loopback, options, serve, text,
    tool_names,
};

fn server_url() -> String {
    std::env::var("TOOLGATE_TEST_POSTGRES_URL").unwrap_or_else(|_| {
        panic!("TOOLGATE_TEST_POSTGRES_URL is not set: run the tests with ./scripts/test")
    })
}

/// Two gateways on the test database, with the built-ins rooted at `root`.
async fn two_gateways(root: &Path) -> Vec<Served<PostgresStore>> {
    let url = server_url();
    let mut gateways = Vec::new();
    for _ in 0..2 {
        let store = PostgresStore::connect(&PostgresOptions::new(&url))
            .await
            .unwrap();
        let options = options(root, vec![]);
        gateways.push(serve(options, store, loopback(), HttpOptions::default()).await);
    }
    gateways
}

/// Where [`proxy`] sends new connections.
const ROUND_ROBIN: usize = usize::MAX;

/// A TCP proxy on a loopback port that sends each new connection to the
/// backend `route` names, or to the next of `backends` in turn while it is
/// [`ROUND_ROBIN`]; counts the connections per backend. The rmcp client
/// opens a connection per request, so its requests follow `route`.
async fn proxy(
    backends: Vec<SocketAddr>,
    route: Arc<AtomicUsize>,
) -> (SocketAddr, Arc<Vec<AtomicUsize>>) {
    let listener = TcpListener::bind(loopback()).await.unwrap();
    let address = listener.local_addr().unwrap();
    let counts: Arc<Vec<AtomicUsize>> =
        Arc::new(backends.iter().map(|_| AtomicUsize::new(0)).collect());
    let seen = Arc::clone(&counts);
    tokio::spawn(async move {
        let mut next = 0;
        loop {
            let Ok((mut inbound, _)) = listener.accept().await else {
                return;
            };
            let index = match route.load(Ordering::Relaxed) {
                ROUND_ROBIN => {
                    next += 1;
                    (next - 1) % backends.len()
                }
                fixed => fixed,
            };
            seen[index].fetch_add(1, Ordering::Relaxed);
            let backend = backends[index];
            tokio::spawn(async move {
                if let Ok(mut outbound) = TcpStream::connect(backend).await {
                    let _ = tokio::io::copy_bidirectional(&mut inbound, &mut outbound).await;
                }
            });
        }
    });
    (address, counts)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_session_served_by_two_gateways_in_turn() {
    let root = tempfile::tempdir().unwrap();
    std::fs::write(root.path().join("notes.txt"), "shared").unwrap();
    let gateways = two_gateways(root.path()).await;
    let route = Arc::new(AtomicUsize::new(ROUND_ROBIN));
    let (proxy, counts) = proxy(gateways.iter().map(|g| g.address).collect(), route).await;
    let (client, _) = connect(&format!("http://{proxy}/mcp")).await;

    call(&client, "load_tool_group", json!({"group_name": "time"})).await;
    call(&client, "load_tool_group", json!({"group_name": "files"})).await;
    // Whichever gateway answers, it knows both loads, in their order.
    for _ in 0..4 {
        assert_eq!(
            tool_names(&client).await,
            [
                &CORE[..],
                &[
                    "time_now",
                    "time_convert",
                    "files_list",
                    "files_read",
                    "files_search"
                ]
            ]
            .concat()
        );
    }
    let read = call(&client, "files_read", json!({"path": "notes.txt"})).await;
    assert!(!is_error(&read), "{}", text(&read));
    call(&client, "unload_tool_group", json!({"group_name": "time"})).await;
    for _ in 0..2 {
        assert_eq!(
            tool_names(&client).await,
            [&CORE[..], &["files_list", "files_read", "files_search"]].concat()
        );
    }
    // Both gateways served the session.
    for (index, count) in counts.iter().enumerate() {
        assert!(
            count.load(Ordering::Relaxed) >= 3,
            "gateway {index} served {} requests",
            count.load(Ordering::Relaxed)
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_change_made_through_one_gateway_reaches_the_client_through_the_other() {
    let root = tempfile::tempdir().unwrap();
    let gateways = two_gateways(root.path()).await;
    // The client starts on the first gateway: its stream of notifications
    // is held there.
    let route = Arc::new(AtomicUsize::new(0));
    let (proxy, _) = proxy(
        gateways.iter().map(|g| g.address).collect(),
        Arc::clone(&route),
    )
    .await;
    let (client, recorder) = connect(&format!("http://{proxy}/mcp")).await;
    assert_eq!(tool_names(&client).await, CORE);
    // Its next request goes to the second, which loads a group.
    route.store(1, Ordering::Relaxed);
    call(&client, "load_tool_group", json!({"group_name": "time"})).await;
    route.store(0, Ordering::Relaxed);
    // The second gateway has no stream to the client: the notification
    // comes from the first, which heard of the change from the database.
    recorder.wait_for_list_changed(1).await;
    assert_eq!(
        tool_names(&client).await,
        [&CORE[..], &["time_now", "time_convert"]].concat()
    );
}

/// The shared token of the gateways of [`two_gateways_with_user_tools`]:
/// the operator's, whose JavaScript tools are the ones listed.
const OPERATOR: &str = "operator-token-0123456789";
/// The token of the named client of those gateways, who has tools of its
/// own.
const CLIENT: &str = "tg_client-0123456789abcdef";

/// A name no other test run on the database has (the database outlives a
/// run of the tests).
fn unique(prefix: &str) -> String {
    static RUN: AtomicUsize = AtomicUsize::new(0);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos();
    format!(
        "{prefix}-{}-{nanos}-{}",
        std::process::id(),
        RUN.fetch_add(1, Ordering::Relaxed)
    )
}

/// Two gateways on the test database whose agents write JavaScript tools:
/// the operator's ([`OPERATOR`]) are `owner`'s, and the client `client`
/// ([`CLIENT`]) has its own. Each has connections of its own to the
/// database, as two processes have.
async fn two_gateways_with_user_tools(
    root: &Path,
    owner: &ToolOwner,
    client: &str,
) -> Vec<Served<PostgresStore>> {
    let url = server_url();
    let mut gateways = Vec::new();
    for _ in 0..2 {
        let store = PostgresStore::connect(&PostgresOptions::new(&url))
            .await
            .unwrap();
        let config = JavaScriptConfig::default();
        let user_tools = UserJsTools::new(
            Arc::new(store.clone()) as Arc<dyn JsToolStore>,
            owner.clone(),
            &config,
            None,
        )
        .unwrap();
        let mut options = options(root, vec![]);
        user_tools.add_to(&mut options.tools);
        options.tools.javascript = config;
        let http = HttpOptions {
            clients: Clients::new([(ClientName::new(client).unwrap(), TokenHash::of(CLIENT))])
                .unwrap(),
            bearer_token: Some(OPERATOR.to_owned()),
            ..HttpOptions::default()
        };
        let served = serve(options, store, loopback(), http).await;
        user_tools.attach(served.gateway.toolbox());
        gateways.push(served);
    }
    gateways
}

/// A JavaScript tool `name` that multiplies `n` by `factor`, as
/// `create_js_tool` and `update_js_tool` take it.
fn multiplier(name: &str, factor: u32) -> serde_json::Value {
    json!({
        "name": name,
        "description": format!("Multiplies n by {factor}"),
        "parameters": {"type": "object", "properties": {"n": {"type": "number"}}, "required": ["n"]},
        "source": format!("const {name} = ({{ n }}) => {factor} * n;"),
    })
}

/// Opens a session through the gateway at `writer` and creates the tool
/// `doubler` in it (a multiplier by 2) with `token`'s identity.
async fn create_doubler(writer: SocketAddr, token: &str) -> String {
    let (session, _) = policies::open(writer, token).await;
    let (answer, error) = policies::load(writer, token, &session, "js_tool_management").await;
    assert!(!error, "{answer}");
    let created = multiplier("doubler", 2);
    let (answer, error) = policies::call(writer, token, &session, "create_js_tool", created).await;
    assert!(!error, "{answer}");
    session
}

/// Writes, changes and deletes a tool through the first gateway, as the
/// caller of `token`, and checks after each step that the second lists and
/// runs what the first wrote: in the session that wrote it, and in a new
/// one.
async fn what_one_gateway_writes_the_other_lists_and_runs(
    gateways: &[Served<PostgresStore>],
    token: &str,
) {
    let (writer, other) = (gateways[0].address, gateways[1].address);
    let session = create_doubler(writer, token).await;

    // The same session, through the other gateway.
    let (answer, error) = policies::load(other, token, &session, "user_tools").await;
    assert_eq!(
        (answer.as_str(), error),
        (
            "Loaded 1 tool from group 'User Tools':\n- doubler: Multiplies n by 2",
            false
        )
    );
    let arguments = json!({"n": 21});
    let answer = policies::call(other, token, &session, "doubler", arguments.clone()).await;
    assert_eq!(answer, ("42".to_owned(), false));

    // Changed through the first: a new session through the other lists and
    // runs the new version.
    let (answer, error) = policies::call(
        writer,
        token,
        &session,
        "update_js_tool",
        multiplier("doubler", 3),
    )
    .await;
    assert!(!error, "{answer}");
    let (fresh, _) = policies::open(other, token).await;
    let (answer, error) = policies::load(other, token, &fresh, "user_tools").await;
    assert_eq!(
        (answer.as_str(), error),
        (
            "Loaded 1 tool from group 'User Tools':\n- doubler: Multiplies n by 3",
            false
        )
    );
    let answer = policies::call(other, token, &fresh, "doubler", arguments.clone()).await;
    assert_eq!(answer, ("63".to_owned(), false));

    // Deleted through the first: gone from the other's lists.
    let deleted = json!({"name": "doubler"});
    let (answer, error) = policies::call(writer, token, &session, "delete_js_tool", deleted).await;
    assert!(!error, "{answer}");
    for session in [&session, &fresh] {
        let listed = policies::tools(other, token, session).await;
        assert!(
            listed.iter().all(|tool| tool["name"] != "doubler"),
            "{listed:?}"
        );
    }
    let answer = policies::call(other, token, &fresh, "doubler", arguments).await;
    assert_eq!(
        answer,
        (
            "Tool 'doubler' is not available for this agent.".to_owned(),
            true
        )
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_operators_tools_written_through_one_gateway_are_the_others_at_once() {
    let root = tempfile::tempdir().unwrap();
    let owner = ToolOwner::new(unique("team"));
    let gateways = two_gateways_with_user_tools(root.path(), &owner, &unique("client")).await;
    what_one_gateway_writes_the_other_lists_and_runs(&gateways, OPERATOR).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_clients_own_tools_written_through_one_gateway_are_the_others_at_once() {
    let root = tempfile::tempdir().unwrap();
    let owner = ToolOwner::new(unique("team"));
    let gateways = two_gateways_with_user_tools(root.path(), &owner, &unique("client")).await;
    what_one_gateway_writes_the_other_lists_and_runs(&gateways, CLIENT).await;
}

/// An MCP client of the gateway at `url` with `token`, counting its
/// `list_changed` notifications.
async fn connect_with(url: &str, token: &str) -> (Client, Recorder) {
    use rmcp::ServiceExt;
    use rmcp::transport::StreamableHttpClientTransport;
    use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
    let recorder = Recorder::default();
    let config = StreamableHttpClientTransportConfig::with_uri(url).auth_header(token);
    let client = recorder
        .clone()
        .serve(StreamableHttpClientTransport::from_config(config))
        .await
        .unwrap();
    (client, recorder)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_of_the_other_gateway_hears_of_a_tool_written_through_one() {
    let root = tempfile::tempdir().unwrap();
    let owner = ToolOwner::new(unique("team"));
    let gateways = two_gateways_with_user_tools(root.path(), &owner, &unique("client")).await;
    let writer = gateways[0].address;
    let session = create_doubler(writer, OPERATOR).await;

    // A client of the other gateway loads the group, and then only waits.
    let (client, recorder) = connect_with(&gateways[1].url, OPERATOR).await;
    let loaded = call(
        &client,
        "load_tool_group",
        json!({"group_name": "user_tools"}),
    )
    .await;
    assert!(!is_error(&loaded), "{}", text(&loaded));
    recorder.wait_for_list_changed(1).await;
    // What that load caused is heard of by now.
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    let heard = recorder.list_changed();

    let (answer, error) = policies::call(
        writer,
        OPERATOR,
        &session,
        "create_js_tool",
        multiplier("tripler", 3),
    )
    .await;
    assert!(!error, "{answer}");
    recorder.wait_for_list_changed(heard + 1).await;
    let listed = tool_names(&client).await;
    assert!(listed.iter().any(|name| name == "tripler"), "{listed:?}");
}
