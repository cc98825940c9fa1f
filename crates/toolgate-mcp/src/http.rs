//! Streamable HTTP serving: `/mcp` on a TCP listener, with the safe defaults
//! a local gateway needs. Host and Origin headers are checked (DNS rebinding),
//! and a bearer token guards every request when one is configured, which the
//! CLI insists on for any non-loopback address.
//!
//! This file holds [`serve_http`]: the listener, its connections and its
//! graceful shutdown. Under `http/`: the options and limits (`options.rs`),
//! accepting connections (`accept.rs`), the checks every request passes
//! (`guard.rs`), a request's way to its answer (`route.rs`) and the answers
//! the listener gives itself (`responses.rs`).

use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use http::Request;
use hyper::body::Incoming;
use hyper::service::service_fn;
use hyper_util::rt::{TokioIo, TokioTimer};
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use tokio::net::{TcpListener, TcpStream};
use tokio_util::sync::CancellationToken;
use toolgate_store::ConversationStore;

use self::accept::{AcceptErrors, accept};
use self::guard::Guard;
use self::route::{Endpoint, McpService, route};
use crate::gateway::Gateway;
use crate::handler::{GatewayHandler, SessionSource};
use crate::session::{HeldSessions, HistorySessionStore, Hold, sweep_until};
use crate::status::{History, SAMPLE_EVERY};

mod accept;
mod guard;
mod options;
mod responses;
mod route;

pub use options::{HttpLimits, HttpOptions, MCP_PATH, METRICS_PATH, STATUS_PATH};

/// Serves `gateway` on `listener` until `shutdown` is cancelled, then shuts
/// down gracefully: it stops accepting connections, refuses new tool calls,
/// lets calls in flight finish (up to [`HttpLimits::shutdown_grace`]) and
/// their answers reach the clients, then closes every connection.
pub async fn serve_http<S: ConversationStore + 'static>(
    gateway: Arc<Gateway<S>>,
    listener: TcpListener,
    options: HttpOptions,
    shutdown: CancellationToken,
) -> std::io::Result<()> {
    // Ends the connections and rmcp's streams once calls in flight are done.
    let streams = CancellationToken::new();
    let hosts = allowed_hosts(&options);
    let (mcp, sessions) = mcp_service(&gateway, &options, hosts.clone(), &streams);
    gateway.set_sign_in(options.clients.clone(), options.oauth.clone());
    let history = Arc::new(History::default());
    tokio::spawn(sample_until(
        Arc::clone(&gateway),
        Arc::clone(&history),
        streams.child_token(),
    ));
    let endpoint = Arc::new(Endpoint {
        mcp,
        gateway: Arc::clone(&gateway),
        sessions,
        guard: Guard {
            token: options.bearer_token.as_deref().map(Arc::from),
            hosts,
            limits: options.limits,
        },
        history,
    });
    let mut accept_errors = AcceptErrors::default();
    while let Some(stream) = accept(&listener, &shutdown, &mut accept_errors).await {
        tokio::spawn(serve_connection(
            stream,
            Arc::clone(&endpoint),
            options.limits.header_timeout,
            streams.clone(),
        ));
    }
    drop(listener);
    close_after_calls(&gateway, options.limits.shutdown_grace, &streams).await;
    Ok(())
}

/// The `Host` values the listener answers for: loopback names and the
/// configured ones.
fn allowed_hosts(options: &HttpOptions) -> Vec<String> {
    let mut hosts = vec![
        "localhost".to_owned(),
        "127.0.0.1".to_owned(),
        "::1".to_owned(),
        "[::1]".to_owned(),
    ];
    hosts.extend(options.allowed_hosts.iter().cloned());
    hosts
}

/// rmcp's streamable HTTP service over `gateway`, and the sessions it holds
/// in memory: hosts and origins checked, sessions restored from their
/// history, idle ones let go until `streams` is cancelled.
fn mcp_service<S: ConversationStore + 'static>(
    gateway: &Arc<Gateway<S>>,
    options: &HttpOptions,
    hosts: Vec<String>,
    streams: &CancellationToken,
) -> (McpService<S>, Arc<HeldSessions<S>>) {
    let mut origins = vec![
        "http://localhost:*".to_owned(),
        "http://127.0.0.1:*".to_owned(),
        "http://[::1]:*".to_owned(),
    ];
    origins.extend(options.allowed_origins.iter().cloned());
    let mut config = StreamableHttpServerConfig::default()
        .with_allowed_hosts(hosts)
        .with_allowed_origins(origins)
        .enforce_origin_validation()
        .with_cancellation_token(streams.child_token());
    config.session_store = Some(Arc::new(HistorySessionStore(Arc::clone(gateway))));
    let mut local = LocalSessionManager::default();
    local.session_config.keep_alive = options.session_keep_alive;
    let hold = Hold {
        max_sessions: options.limits.max_sessions,
        idle: options.limits.idle_in_memory,
    };
    let sessions = Arc::new(HeldSessions::new(local, hold, Arc::clone(gateway)));
    tokio::spawn(sweep_until(Arc::clone(&sessions), streams.child_token()));
    let handler = GatewayHandler::new(Arc::clone(gateway), SessionSource::Header);
    let mcp = StreamableHttpService::new(
        // Made for each new or restored session; each request says its
        // caller itself (`RequestEdge`).
        move || Ok(handler.clone()),
        Arc::clone(&sessions),
        config,
    );
    (mcp, sessions)
}

/// Serves the requests of one connection until it ends or `close` is
/// cancelled.
async fn serve_connection<S: ConversationStore + 'static>(
    stream: TcpStream,
    endpoint: Arc<Endpoint<S>>,
    header_timeout: Duration,
    close: CancellationToken,
) {
    let service = service_fn(move |request: Request<Incoming>| {
        let endpoint = Arc::clone(&endpoint);
        async move { Ok::<_, Infallible>(route(&endpoint, request).await) }
    });
    // HTTP/1 alone, so the header timeout runs from the connection's
    // start: hyper-util's auto builder first waits, with no time limit,
    // for bytes telling HTTP/1 from HTTP/2, and a connection that sent none
    // was held open for good.
    let mut builder = hyper::server::conn::http1::Builder::new();
    builder
        .timer(TokioTimer::new())
        .header_read_timeout(header_timeout);
    let connection = builder.serve_connection(TokioIo::new(stream), service);
    tokio::select! {
        result = connection => if let Err(error) = result {
            tracing::debug!(%error, "connection ended");
        },
        () = close.cancelled() => {},
    }
}

/// Once no connection is accepted any more: refuses new tool calls, lets
/// those in flight finish (up to `grace`) and their answers reach their
/// clients, then closes every connection and stream.
async fn close_after_calls<S: ConversationStore + 'static>(
    gateway: &Gateway<S>,
    grace: Duration,
    streams: &CancellationToken,
) {
    let unfinished = gateway.drain(grace).await;
    if unfinished > 0 {
        tracing::warn!(
            unfinished,
            "calls still running after the {}s shutdown grace period are cut off",
            grace.as_secs_f64()
        );
    }
    // A finished call's answer is on its way to the client's stream.
    tokio::time::sleep(FLUSH_TIME).await;
    streams.cancel();
}

/// How long answers get to reach their clients before connections close.
const FLUSH_TIME: Duration = Duration::from_millis(100);

/// Takes a point of the status page's charts every [`SAMPLE_EVERY`] until
/// `stop`.
async fn sample_until<S: ConversationStore + 'static>(
    gateway: Arc<Gateway<S>>,
    history: Arc<History>,
    stop: CancellationToken,
) {
    let mut every = tokio::time::interval(SAMPLE_EVERY);
    every.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            () = stop.cancelled() => return,
            _ = every.tick() => history.sample(&gateway),
        }
    }
}
