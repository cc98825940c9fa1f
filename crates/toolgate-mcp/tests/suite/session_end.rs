//! Ending a session with `DELETE /mcp`: the session's client ends it and
//! gets 204 (the official SDKs accept 200 and 204, not 202); a session the
//! gateway does not know, or one of another client, is 404, as the
//! transport specification asks of a request naming an unknown session;
//! a DELETE naming no session is 400.

use std::net::SocketAddr;
use std::time::Duration;

use super::identities::{ALICE, BOB, LIST, open, post, refused_as_unknown, served};
use super::support::exchange;

/// `DELETE /mcp` over a fresh connection, with `token`, naming `session`
/// when given.
async fn delete(address: SocketAddr, token: &str, session: Option<&str>) -> String {
    let named = session.map_or(String::new(), |session| {
        format!("mcp-session-id: {session}\r\nmcp-protocol-version: 2025-11-25\r\n")
    });
    let request = format!(
        "DELETE /mcp HTTP/1.1\r\nhost: 127.0.0.1:{}\r\nauthorization: Bearer {token}\r\n\
         {named}connection: close\r\n\r\n",
        address.port()
    );
    exchange(address, &request).await
}

/// The answer's body: what follows the blank line.
fn body(answer: &str) -> &str {
    answer.split_once("\r\n\r\n").map_or("", |(_, body)| body)
}

#[tokio::test]
async fn the_client_of_a_session_ends_it_with_204_and_an_unknown_session_is_404() {
    let served = served().await;
    let address = served.address;
    let alices = open(address, ALICE).await;

    // Bob cannot end Alice's session: to him it does not exist.
    refused_as_unknown(&delete(address, BOB, Some(&alices)).await);
    let answer = post(address, Some(ALICE), Some(&alices), LIST).await;
    assert!(answer.contains("time_now"), "{answer}");

    let ended = delete(address, ALICE, Some(&alices)).await;
    assert!(ended.starts_with("HTTP/1.1 204"), "{ended}");
    assert_eq!(body(&ended), "");
    // Ended: gone from memory and from the store.
    refused_as_unknown(&post(address, Some(ALICE), Some(&alices), LIST).await);
    refused_as_unknown(&delete(address, ALICE, Some(&alices)).await);

    refused_as_unknown(&delete(address, ALICE, Some("never-opened")).await);
    let unnamed = delete(address, ALICE, None).await;
    assert!(unnamed.starts_with("HTTP/1.1 400"), "{unnamed}");
    served.stop().await;
}

#[tokio::test]
async fn a_session_out_of_memory_is_ended_too() {
    let served = served().await;
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
    refused_as_unknown(&delete(address, BOB, Some(&alices)).await);

    let ended = delete(address, ALICE, Some(&alices)).await;
    assert!(ended.starts_with("HTTP/1.1 204"), "{ended}");
    refused_as_unknown(&post(address, Some(ALICE), Some(&alices), LIST).await);
    served.stop().await;
}
