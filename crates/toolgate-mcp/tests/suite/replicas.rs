//! Two gateways on one PostgreSQL database serve one session together: a
//! client whose consecutive requests go to one gateway, then the other
//! (a round-robin proxy in front, as a load balancer would do), sees one
//! session: the groups it loaded through either, in one order.
//!
//! A change made through one gateway reaches the client through the one that
//! holds its stream (PostgreSQL `LISTEN`/`NOTIFY`).
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
use toolgate_mcp::HttpOptions;
use toolgate_store::{PostgresOptions, PostgresStore};

use super::support::{
    CORE, Served, call, connect, is_error, loopback, options, serve, text, tool_names,
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
