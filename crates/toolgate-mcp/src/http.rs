//! Streamable HTTP serving: `/mcp` on a TCP listener, with the safe defaults
//! a local gateway needs. Host and Origin headers are checked (DNS rebinding),
//! and a bearer token guards every request when one is configured, which the
//! CLI insists on for any non-loopback address.

use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http::{Request, Response, StatusCode, header};
use http_body_util::{BodyExt, Full, combinators::BoxBody};
use hyper::body::Incoming;
use hyper::service::service_fn;
use hyper_util::rt::{TokioExecutor, TokioIo};
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;
use toolgate_store::ConversationStore;

use crate::gateway::Gateway;
use crate::handler::{GatewayHandler, SessionSource};
use crate::session_store::HistorySessionStore;

/// The path the MCP endpoint answers on.
pub const MCP_PATH: &str = "/mcp";

/// How the HTTP endpoint is guarded.
#[derive(Clone, Debug, Default)]
pub struct HttpOptions {
    /// Every request must carry `Authorization: Bearer <token>` when set.
    pub bearer_token: Option<String>,
    /// Accepted `Host` values besides loopback names (`example.com`,
    /// `example.com:8848`).
    pub allowed_hosts: Vec<String>,
    /// Accepted browser `Origin`s besides loopback ones
    /// (`https://app.example.com:443`). Requests without `Origin` pass.
    pub allowed_origins: Vec<String>,
    /// How long rmcp keeps an idle session's connection state in memory.
    pub session_keep_alive: Option<Duration>,
}

/// Serves `gateway` on `listener` until `shutdown` is cancelled.
pub async fn serve_http<S: ConversationStore + 'static>(
    gateway: Arc<Gateway<S>>,
    listener: TcpListener,
    options: HttpOptions,
    shutdown: CancellationToken,
) -> std::io::Result<()> {
    let mut hosts = vec![
        "localhost".to_owned(),
        "127.0.0.1".to_owned(),
        "::1".to_owned(),
        "[::1]".to_owned(),
    ];
    hosts.extend(options.allowed_hosts.iter().cloned());
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
        .with_cancellation_token(shutdown.child_token());
    config.session_store = Some(Arc::new(HistorySessionStore(Arc::clone(&gateway))));
    let mut sessions = LocalSessionManager::default();
    sessions.session_config.keep_alive = options.session_keep_alive;
    let handler = GatewayHandler::new(Arc::clone(&gateway), SessionSource::Header);
    let mcp = Arc::new(StreamableHttpService::new(
        move || Ok(handler.clone()),
        Arc::new(sessions),
        config,
    ));
    let token: Option<Arc<str>> = options.bearer_token.as_deref().map(Arc::from);

    loop {
        let stream = tokio::select! {
            () = shutdown.cancelled() => return Ok(()),
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => {
                    // Responses are small SSE events: without this, Nagle's
                    // algorithm holds each one behind the last unacknowledged
                    // write, about 40 ms per request on a kept-alive connection.
                    if let Err(error) = stream.set_nodelay(true) {
                        tracing::debug!(%error, "TCP_NODELAY not set");
                    }
                    stream
                }
                Err(error) => {
                    tracing::warn!(%error, "accept failed");
                    continue;
                }
            },
        };
        let mcp = Arc::clone(&mcp);
        let token = token.clone();
        let service = service_fn(move |request: Request<Incoming>| {
            let mcp = Arc::clone(&mcp);
            let token = token.clone();
            async move { Ok::<_, Infallible>(route(&mcp, token.as_deref(), request).await) }
        });
        let connection_shutdown = shutdown.clone();
        tokio::spawn(async move {
            let builder = hyper_util::server::conn::auto::Builder::new(TokioExecutor::new());
            let connection = builder.serve_connection(TokioIo::new(stream), service);
            tokio::select! {
                result = connection => if let Err(error) = result {
                    tracing::debug!(%error, "connection ended");
                },
                () = connection_shutdown.cancelled() => {},
            }
        });
    }
}

type Body = BoxBody<Bytes, Infallible>;

async fn route<S: ConversationStore + 'static>(
    mcp: &StreamableHttpService<GatewayHandler<S>, LocalSessionManager>,
    token: Option<&str>,
    request: Request<Incoming>,
) -> Response<Body> {
    let path = request.uri().path();
    if path != MCP_PATH && path != "/mcp/" {
        return plain(
            StatusCode::NOT_FOUND,
            "Not found: the MCP endpoint is /mcp\n",
        );
    }
    if let Some(token) = token
        && !authorized(request.headers().get(header::AUTHORIZATION), token)
    {
        let mut response = plain(StatusCode::UNAUTHORIZED, "A bearer token is required\n");
        response.headers_mut().insert(
            header::WWW_AUTHENTICATE,
            http::HeaderValue::from_static("Bearer"),
        );
        return response;
    }
    mcp.handle(request).await
}

/// Compares the presented token with the expected one in constant time.
fn authorized(header: Option<&http::HeaderValue>, expected: &str) -> bool {
    let Some(presented) = header
        .and_then(|value| value.to_str().ok())
        .and_then(|value| value.strip_prefix("Bearer "))
    else {
        return false;
    };
    let (a, b) = (presented.trim().as_bytes(), expected.as_bytes());
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

fn plain(status: StatusCode, text: &'static str) -> Response<Body> {
    let mut response = Response::new(Full::new(Bytes::from_static(text.as_bytes())).boxed());
    *response.status_mut() = status;
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        http::HeaderValue::from_static("text/plain"),
    );
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_exact_bearer_token_is_authorized() {
        let header = |text: &'static str| http::HeaderValue::from_static(text);
        assert!(authorized(Some(&header("Bearer s3cret")), "s3cret"));
        assert!(!authorized(Some(&header("Bearer s3cre")), "s3cret"));
        assert!(!authorized(Some(&header("Bearer s3cretX")), "s3cret"));
        assert!(!authorized(Some(&header("Basic s3cret")), "s3cret"));
        assert!(!authorized(None, "s3cret"));
    }
}
