//! What the gateway itself answers a call it will not run, word for word as
//! toolgate-core's contract.rs writes it.

use std::time::Duration;

use toolgate_mcp::Gateway;
use toolgate_store::MemoryStore;

use super::support::{is_error, options, text};

#[tokio::test]
async fn a_name_too_long_and_a_call_during_shutdown_are_refused_in_the_contracts_words() {
    let root = tempfile::tempdir().unwrap();
    let (gateway, _) = Gateway::start(options(root.path(), vec![]), MemoryStore::new())
        .await
        .unwrap();
    let scope = gateway.operator_scope(None).await;

    let refused = gateway
        .call_tool(&scope, &"x".repeat(200), None)
        .await
        .unwrap();
    assert!(is_error(&refused));
    assert_eq!(
        text(&refused),
        "No tool has a name that long (200 bytes); tool names have at most 128."
    );

    assert_eq!(gateway.drain(Duration::ZERO).await, 0);
    let refused = gateway.call_tool(&scope, "time_now", None).await.unwrap();
    assert!(is_error(&refused));
    assert_eq!(
        text(&refused),
        "The gateway is shutting down and takes no new calls; retry once it is back."
    );
}
