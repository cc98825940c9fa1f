//! Two gateways on one PostgreSQL database serve one session together: a
//! client whose consecutive requests go to one gateway, then the other
//! (a round-robin proxy in front, as a load balancer would do), sees one
//! session: the groups it loaded through either, in one order.
//!
//! The database is the one `scripts/test` starts (`scripts/with-postgres`),
//! named by `TOOLGATE_TEST_POSTGRES_URL`.

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use pretty_assertions::assert_eq;
use serde_json::json;
use tokio::net::{TcpListener, TcpStream};
use toolgate_mcp::HttpOptions;
use toolgate_store::{PostgresOptions, PostgresStore};

use super::support::{CORE, call, connect, is_error, loopback, options, serve, text, tool_names};

fn server_url() -> String {
    std::env::var("TOOLGATE_TEST_POSTGRES_URL").unwrap_or_else(|_| {
        panic!("TOOLGATE_TEST_POSTGRES_URL is not set: run the tests with ./scripts/test")
    })
}

/// A TCP proxy on a loopback port that sends each new connection to the
/// next of `backends` in turn; counts the connections per backend. The
/// rmcp client opens a connection per request, so requests alternate.
async fn round_robin(backends: Vec<SocketAddr>) -> (SocketAddr, Arc<Vec<AtomicUsize>>) {
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
            let index = next % backends.len();
            next += 1;
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
    let url = server_url();
    let mut gateways = Vec::new();
    for _ in 0..2 {
        let store = PostgresStore::connect(&PostgresOptions::new(&url))
            .await
            .unwrap();
        gateways.push(
            serve(
                options(root.path(), vec![]),
                store,
                loopback(),
                HttpOptions::default(),
            )
            .await,
        );
    }
    let (proxy, counts) = round_robin(gateways.iter().map(|g| g.address).collect()).await;
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
