//! A graceful shutdown: no new connections, the calls in flight finish and
//! their answers reach the clients (new calls on kept-alive connections are
//! refused: see `drain.rs`).

use std::time::Duration;

use serde_json::json;

use super::support::{call, connect, is_error, load, serve_default, text};
use super::upstreams::{peers, stdio};

#[tokio::test]
async fn a_shutdown_lets_calls_in_flight_finish_and_refuses_new_ones() {
    let root = tempfile::tempdir().unwrap();
    let everything = stdio(
        "everything",
        peers().node_bin.join("mcp-server-everything"),
        &[],
    );
    let mut served = serve_default(root.path(), vec![everything]).await;
    let (client, _) = connect(&served.url).await;
    load(&client, "everything").await;

    let long = call(
        &client,
        "trigger-long-running-operation",
        json!({"duration": 0.6, "steps": 2}),
    );
    let during = async {
        tokio::time::sleep(Duration::from_millis(200)).await;
        let server = served.begin_shutdown();
        tokio::time::sleep(Duration::from_millis(50)).await;
        let connect = tokio::net::TcpStream::connect(served.address).await;
        (server, connect.is_err())
    };
    let (finished, (server, connect_refused)) = tokio::join!(long, during);

    assert!(!is_error(&finished), "{}", text(&finished));
    assert!(text(&finished).contains("completed"), "{}", text(&finished));
    assert!(
        connect_refused,
        "a new connection was accepted while shutting down"
    );
    tokio::time::timeout(Duration::from_secs(5), server)
        .await
        .expect("serving did not end")
        .unwrap()
        .unwrap();
    served.gateway.shutdown().await;
}
