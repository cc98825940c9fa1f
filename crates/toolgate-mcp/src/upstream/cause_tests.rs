//! Each way a start fails, against a real process or socket, with the
//! whole text the banner, the status page and the model read.

use std::collections::BTreeMap;
use std::time::Duration;

use pretty_assertions::assert_eq;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;
use toolgate_core::GroupId;

use super::super::client::UpstreamClient;
use super::super::connection::connect;
use crate::config::{UpstreamConfig, UpstreamTransport};
use crate::relay::InFlight;

/// Why starting the upstream `transport` describes failed.
async fn start_failure(transport: UpstreamTransport, startup_timeout: Duration) -> String {
    let config = UpstreamConfig {
        transport,
        startup_timeout,
        ..UpstreamConfig::stdio(GroupId::new("server").unwrap(), "unused", &[])
    };
    let client = UpstreamClient {
        changes: Default::default(),
        in_flight: InFlight::default(),
    };
    match connect(&config, client, &InFlight::default()).await {
        Ok(_) => panic!("the start succeeded"),
        Err(reason) => reason,
    }
}

fn http(url: &str) -> UpstreamTransport {
    UpstreamTransport::Http {
        url: url.to_owned(),
        headers: BTreeMap::new(),
    }
}

fn command(command: &str, args: &[&str]) -> UpstreamTransport {
    match UpstreamConfig::stdio(GroupId::new("server").unwrap(), command, args).transport {
        transport @ UpstreamTransport::Stdio { .. } => transport,
        UpstreamTransport::Http { .. } => unreachable!(),
    }
}

/// A port nothing listens on.
async fn closed_port() -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    listener.local_addr().unwrap().port()
}

/// A server that answers every connection with `answer` once it has read
/// the request's first bytes (or, with `None`, never answers).
async fn answering(answer: Option<&'static str>) -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    tokio::spawn(async move {
        loop {
            let Ok((mut socket, _)) = listener.accept().await else {
                return;
            };
            tokio::spawn(async move {
                let mut buffer = [0u8; 4096];
                let _ = socket.read(&mut buffer).await;
                match answer {
                    Some(answer) => {
                        let _ = socket.write_all(answer.as_bytes()).await;
                        let _ = socket.shutdown().await;
                    }
                    None => tokio::time::sleep(Duration::from_secs(30)).await,
                }
            });
        }
    });
    port
}

const START: Duration = Duration::from_secs(10);

#[tokio::test]
async fn a_command_not_on_path_is_named() {
    let reason = start_failure(command("toolgate-no-such-command", &[]), START).await;
    assert_eq!(
        reason,
        "command `toolgate-no-such-command` not found on PATH"
    );
    let reason = start_failure(command("./no-such-server", &[]), START).await;
    assert_eq!(reason, "`./no-such-server` does not exist");
}

#[tokio::test]
async fn a_command_that_ends_before_the_handshake_says_so_with_its_stderr() {
    let reason = start_failure(
        command("sh", &["-c", "echo 'No module named mcp' >&2; exit 3"]),
        START,
    )
    .await;
    assert_eq!(
        reason,
        "`sh` ended before completing the MCP handshake; stderr: No module named mcp"
    );
}

#[tokio::test]
async fn a_command_gone_before_it_is_sent_the_handshake_ended_too() {
    // Its input is closed before the gateway writes `initialize`, as that
    // of a command that exits at once can be.
    let reason = start_failure(command("sh", &["-c", "exec 0<&-; sleep 5"]), START).await;
    assert_eq!(reason, "`sh` ended before completing the MCP handshake");
}

#[tokio::test]
async fn a_command_that_never_answers_times_out_with_its_limit() {
    let reason = start_failure(
        command("sh", &["-c", "sleep 30"]),
        Duration::from_millis(300),
    )
    .await;
    assert_eq!(
        reason,
        "`sh` did not complete the MCP handshake within 0.3s (startup_timeout_seconds)"
    );
}

#[tokio::test]
async fn a_url_nothing_listens_at_is_a_connection_refused() {
    let url = format!("http://127.0.0.1:{}/mcp", closed_port().await);
    let reason = start_failure(http(&url), START).await;
    assert_eq!(reason, format!("connection refused at {url}"));
}

#[tokio::test]
async fn a_url_that_answers_an_http_error_names_the_status() {
    let not_found = answering(Some(
        "HTTP/1.1 404 Not Found\r\ncontent-type: text/plain\r\ncontent-length: 9\r\nconnection: close\r\n\r\nnot found",
    ))
    .await;
    let url = format!("http://127.0.0.1:{not_found}/mcp");
    let reason = start_failure(http(&url), START).await;
    assert_eq!(reason, format!("{url} answered HTTP 404 Not Found"));

    let failing = answering(Some(
        "HTTP/1.1 503 Service Unavailable\r\ncontent-length: 0\r\nconnection: close\r\n\r\n",
    ))
    .await;
    let url = format!("http://127.0.0.1:{failing}/mcp");
    let reason = start_failure(http(&url), START).await;
    assert_eq!(
        reason,
        format!("{url} answered HTTP 503 Service Unavailable")
    );

    let unauthorized = answering(Some(
        "HTTP/1.1 401 Unauthorized\r\nwww-authenticate: Bearer\r\ncontent-length: 0\r\nconnection: close\r\n\r\n",
    ))
    .await;
    let url = format!("http://127.0.0.1:{unauthorized}/mcp");
    let reason = start_failure(http(&url), START).await;
    assert_eq!(reason, format!("{url} answered HTTP 401 Unauthorized"));
}

#[tokio::test]
async fn https_to_a_server_that_does_not_speak_tls_is_a_tls_error() {
    let plain = answering(Some(
        "HTTP/1.1 400 Bad Request\r\ncontent-length: 0\r\nconnection: close\r\n\r\n",
    ))
    .await;
    let url = format!("https://127.0.0.1:{plain}/mcp");
    let reason = start_failure(http(&url), START).await;
    assert_eq!(
        reason,
        format!("TLS error at {url}: received corrupt message of type InvalidContentType")
    );
}

#[tokio::test]
async fn a_url_that_never_answers_times_out_with_its_limit() {
    let silent = answering(None).await;
    let url = format!("http://127.0.0.1:{silent}/mcp");
    let reason = start_failure(http(&url), Duration::from_millis(500)).await;
    assert_eq!(
        reason,
        format!("{url} did not complete the MCP handshake within 0.5s (startup_timeout_seconds)")
    );
}
