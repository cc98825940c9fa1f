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
use hyper_util::rt::{TokioIo, TokioTimer};
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;
use toolgate_store::{ConversationId, ConversationStore};

use crate::bounded::bounded;
use crate::clients::{Clients, Owner, RequestCaller};
use crate::gateway::{Access, Gateway};
use crate::handler::{GatewayHandler, SESSION_HEADER, SessionSource};
use crate::oauth::{OAuth, Refusal};
use crate::session::{HeldSessions, HistorySessionStore, Hold, SessionOwner, sweep_until};
use crate::status::{History, SAMPLE_EVERY};

/// The path the MCP endpoint answers on.
pub const MCP_PATH: &str = "/mcp";

/// The path of the Prometheus metrics, behind the same token.
pub const METRICS_PATH: &str = "/metrics";

/// The path of the status page, behind the same token.
pub const STATUS_PATH: &str = "/";

/// How the HTTP endpoint is guarded.
#[derive(Clone, Debug, Default)]
pub struct HttpOptions {
    /// A token every request may carry (`Authorization: Bearer <token>`).
    pub bearer_token: Option<String>,
    /// Named clients, each with its own token. With a bearer token or
    /// clients, every request must carry one of their tokens.
    pub clients: Clients,
    /// Bearer JWTs from an OAuth issuer, mapped to clients. With it, every
    /// request must carry a token.
    pub oauth: Option<Arc<OAuth>>,
    /// Accepted `Host` values besides loopback names (`example.com`,
    /// `example.com:8848`).
    pub allowed_hosts: Vec<String>,
    /// Accepted browser `Origin`s besides loopback ones
    /// (`https://app.example.com:443`). Requests without `Origin` pass.
    pub allowed_origins: Vec<String>,
    /// How long rmcp keeps an idle session's connection state in memory.
    pub session_keep_alive: Option<Duration>,
    /// Bounds on connections, requests and sessions.
    pub limits: HttpLimits,
}

/// What one client may hold of the gateway: a slow or hostile client gets
/// its connection closed instead of holding it forever.
#[derive(Clone, Copy, Debug)]
pub struct HttpLimits {
    /// Time to send a request's headers, and the longest a kept-alive
    /// connection may wait idle for its next request.
    pub header_timeout: Duration,
    /// Time to send a request's body once its headers are in.
    pub body_timeout: Duration,
    /// Largest request body accepted.
    pub max_body_bytes: usize,
    /// Sessions held in memory at once; beyond it the longest-idle one is
    /// let go (its history stays, so it comes back on its next request).
    pub max_sessions: usize,
    /// A session with no request and no open stream for this long leaves
    /// memory; its next request restores it from its history.
    pub idle_in_memory: Duration,
    /// On shutdown, how long calls in flight may take to finish.
    pub shutdown_grace: Duration,
}

impl Default for HttpLimits {
    fn default() -> Self {
        Self {
            header_timeout: Duration::from_secs(30),
            body_timeout: Duration::from_secs(30),
            max_body_bytes: 4 * 1024 * 1024,
            max_sessions: 10_000,
            idle_in_memory: Duration::from_secs(60),
            shutdown_grace: Duration::from_secs(10),
        }
    }
}

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
        .with_allowed_hosts(hosts.clone())
        .with_allowed_origins(origins)
        .enforce_origin_validation()
        .with_cancellation_token(streams.child_token());
    config.session_store = Some(Arc::new(HistorySessionStore(Arc::clone(&gateway))));
    let mut local = LocalSessionManager::default();
    local.session_config.keep_alive = options.session_keep_alive;
    let hold = Hold {
        max_sessions: options.limits.max_sessions,
        idle: options.limits.idle_in_memory,
    };
    let sessions = Arc::new(HeldSessions::new(local, hold, Arc::clone(&gateway)));
    tokio::spawn(sweep_until(Arc::clone(&sessions), streams.child_token()));
    let handler = GatewayHandler::new(Arc::clone(&gateway), SessionSource::Header);
    let mcp = Arc::new(StreamableHttpService::new(
        // Made for each new or restored session; each request says its
        // caller itself (`RequestCaller`).
        move || Ok(handler.clone()),
        Arc::clone(&sessions),
        config,
    ));
    gateway.set_sign_in(options.clients.clone(), options.oauth.clone());
    let guard = Arc::new(Guard {
        token: options.bearer_token.as_deref().map(Arc::from),
        hosts,
        limits: options.limits,
    });
    let history = Arc::new(History::default());
    tokio::spawn(sample_until(
        Arc::clone(&gateway),
        Arc::clone(&history),
        streams.child_token(),
    ));
    let mut accept_errors = AcceptErrors::default();
    loop {
        let stream = tokio::select! {
            () = shutdown.cancelled() => break,
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => {
                    accept_errors.recovered();
                    // Responses are small SSE events: without this, Nagle's
                    // algorithm holds each one behind the last unacknowledged
                    // write, about 40 ms per request on a kept-alive connection.
                    if let Err(error) = stream.set_nodelay(true) {
                        tracing::debug!(%error, "TCP_NODELAY not set");
                    }
                    stream
                }
                Err(error) => {
                    // Out of file descriptors, say: retrying at once would
                    // spin, so wait, longer each time it fails again.
                    let wait = accept_errors.failed(&error);
                    tokio::select! {
                        () = shutdown.cancelled() => break,
                        () = tokio::time::sleep(wait) => continue,
                    }
                }
            },
        };
        let mcp = Arc::clone(&mcp);
        let guard = Arc::clone(&guard);
        let gateway = Arc::clone(&gateway);
        let sessions = Arc::clone(&sessions);
        let history = Arc::clone(&history);
        let service = service_fn(move |request: Request<Incoming>| {
            let mcp = Arc::clone(&mcp);
            let guard = Arc::clone(&guard);
            let gateway = Arc::clone(&gateway);
            let sessions = Arc::clone(&sessions);
            let history = Arc::clone(&history);
            async move {
                let endpoint = Endpoint {
                    mcp: &mcp,
                    gateway: &gateway,
                    sessions: &sessions,
                    guard: &guard,
                    history: &history,
                };
                Ok::<_, Infallible>(route(endpoint, request).await)
            }
        });
        let connection_shutdown = streams.clone();
        let header_timeout = options.limits.header_timeout;
        tokio::spawn(async move {
            // HTTP/1 alone, so the header timeout runs from the connection's
            // start: hyper-util's auto builder first waits, with no time
            // limit, for bytes telling HTTP/1 from HTTP/2, and a connection
            // that sent none was held open for good.
            let mut builder = hyper::server::conn::http1::Builder::new();
            builder
                .timer(TokioTimer::new())
                .header_read_timeout(header_timeout);
            let connection = builder.serve_connection(TokioIo::new(stream), service);
            tokio::select! {
                result = connection => if let Err(error) = result {
                    tracing::debug!(%error, "connection ended");
                },
                () = connection_shutdown.cancelled() => {},
            }
        });
    }
    drop(listener);
    let grace = options.limits.shutdown_grace;
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
    Ok(())
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

/// What every request is checked against before it reaches rmcp.
#[derive(Debug)]
struct Guard {
    token: Option<Arc<str>>,
    /// Accepted `Host` values (rmcp checks them for `/mcp`).
    hosts: Vec<String>,
    limits: HttpLimits,
}

impl Guard {
    /// Whether a request with these headers names an accepted host: a page
    /// that rebinds its own name to this address gets nothing.
    fn host_allowed(&self, headers: &http::HeaderMap) -> bool {
        let Some(host) = headers
            .get(header::HOST)
            .and_then(|value| value.to_str().ok())
        else {
            return false;
        };
        let name = match host.rsplit_once(':') {
            Some((name, port)) if !port.contains(']') => name,
            _ => host,
        };
        self.hosts
            .iter()
            .any(|allowed| allowed.eq_ignore_ascii_case(host) || allowed.eq_ignore_ascii_case(name))
    }

    /// Whether requests need no token.
    fn open_to_all(&self, access: &Access) -> bool {
        self.token.is_none() && access.clients.has_no_tokens() && access.oauth.is_none()
    }

    /// Who sent a request with these headers: a client of `access`, a
    /// client an OAuth token maps to (with its user), or the holder of the
    /// shared token. `Err` when a token is required and no accepted one
    /// came.
    async fn owner(&self, headers: &http::HeaderMap, access: &Access) -> Result<Owner, Refused> {
        if self.open_to_all(access) {
            return Ok(Owner::default());
        }
        let clients = &access.clients;
        let refused = |refusal| Refused {
            refusal,
            oauth: access.oauth.clone(),
        };
        let presented = bearer(headers.get(header::AUTHORIZATION)).ok_or_else(|| refused(None))?;
        if let Some(token) = &self.token
            && same_token(presented, token)
        {
            return Ok(Owner::default());
        }
        if let Some(client) = clients.identify(presented) {
            return Ok(Owner {
                client: Some(client.clone()),
                subject: None,
            });
        }
        let Some(oauth) = &access.oauth else {
            return Err(refused(None));
        };
        match oauth.verify(presented, clients).await {
            Ok(verified) => Ok(Owner {
                client: Some(verified.client),
                subject: verified.subject,
            }),
            Err(refusal) => Err(refused(Some(refusal))),
        }
    }
}

/// A request refused by the guard, and how to say so.
struct Refused {
    refusal: Option<Refusal>,
    oauth: Option<Arc<OAuth>>,
}

impl Refused {
    fn into_response(self) -> Response<Body> {
        let (status, text) = match &self.refusal {
            None => (
                StatusCode::UNAUTHORIZED,
                "A bearer token is required\n".to_owned(),
            ),
            Some(Refusal::InvalidToken(why)) => {
                (StatusCode::UNAUTHORIZED, format!("Unauthorized: {why}\n"))
            }
            Some(Refusal::InsufficientScope(why)) => {
                (StatusCode::FORBIDDEN, format!("Forbidden: {why}\n"))
            }
            Some(Refusal::KeysUnavailable(why)) => {
                tracing::warn!(reason = %why, "the OAuth issuer's keys cannot be read");
                (
                    StatusCode::SERVICE_UNAVAILABLE,
                    "Service unavailable: the token issuer's keys cannot be read right now; \
                     retry shortly.\n"
                        .to_owned(),
                )
            }
        };
        let challenge = match &self.oauth {
            Some(oauth) => oauth.challenge(self.refusal.as_ref()),
            None => "Bearer".to_owned(),
        };
        let mut response = Rejection::text(status, text).into_response();
        if status != StatusCode::SERVICE_UNAVAILABLE
            && let Ok(value) = http::HeaderValue::from_str(&challenge)
        {
            response
                .headers_mut()
                .insert(header::WWW_AUTHENTICATE, value);
        }
        response
    }
}

/// What serves one HTTP request.
struct Endpoint<'a, S: ConversationStore + 'static> {
    mcp: &'a StreamableHttpService<GatewayHandler<S>, HeldSessions<S>>,
    gateway: &'a Gateway<S>,
    sessions: &'a HeldSessions<S>,
    guard: &'a Guard,
    history: &'a History,
}

/// Failed accepts in a row: how long to wait before the next, and a log
/// line per interval rather than one per failure.
#[derive(Debug, Default)]
struct AcceptErrors {
    /// Failures since the last accepted connection.
    in_a_row: u32,
    /// Failures not logged since the last line.
    unlogged: u64,
    logged_at: Option<std::time::Instant>,
}

impl AcceptErrors {
    /// How often a repeated accept error is logged.
    const LOG_INTERVAL: Duration = Duration::from_secs(10);
    const FIRST_WAIT: Duration = Duration::from_millis(5);
    const MAX_WAIT: Duration = Duration::from_secs(1);

    /// Records a failure; returns how long to wait before accepting again.
    fn failed(&mut self, error: &std::io::Error) -> Duration {
        self.in_a_row = self.in_a_row.saturating_add(1);
        self.unlogged += 1;
        let now = std::time::Instant::now();
        if self
            .logged_at
            .is_none_or(|at| now.duration_since(at) >= Self::LOG_INTERVAL)
        {
            tracing::warn!(
                %error,
                failures = self.unlogged,
                "accepting a connection failed; new connections wait (logged once per {}s)",
                Self::LOG_INTERVAL.as_secs()
            );
            self.unlogged = 0;
            self.logged_at = Some(now);
        }
        Self::FIRST_WAIT
            .saturating_mul(1 << (self.in_a_row - 1).min(8))
            .min(Self::MAX_WAIT)
    }

    fn recovered(&mut self) {
        self.in_a_row = 0;
    }
}

type Body = BoxBody<Bytes, Infallible>;

async fn route<S: ConversationStore + 'static>(
    endpoint: Endpoint<'_, S>,
    request: Request<Incoming>,
) -> Response<Body> {
    let Endpoint {
        mcp,
        gateway,
        sessions,
        guard,
        history,
    } = endpoint;
    let path = request.uri().path();
    let access = gateway.access();
    if let Some(oauth) = &access.oauth
        && oauth.is_metadata_path(path)
    {
        return resource_metadata(oauth, request.method());
    }
    let metrics = path == METRICS_PATH;
    let status = path == STATUS_PATH;
    if !metrics && !status && path != MCP_PATH && path != "/mcp/" {
        return plain(
            StatusCode::NOT_FOUND,
            "Not found: the MCP endpoint is /mcp\n",
        );
    }
    // Without a token, a web page that rebinds its name to this address
    // could read these; with one, it cannot send it (and a scraper may
    // reach a replica by any address).
    if (metrics || status) && guard.open_to_all(&access) && !guard.host_allowed(request.headers()) {
        return plain(
            StatusCode::FORBIDDEN,
            "Forbidden: the Host header names no host this gateway answers for (--allowed-host)\n",
        );
    }
    let owner = match guard.owner(request.headers(), &access).await {
        Ok(owner) => owner,
        Err(refused) => return refused.into_response(),
    };
    let caller = owner.client.clone();
    // Both show every group, tool and upstream, and every client's calls:
    // not for a client whose policy hides some of them.
    if (metrics || status) && !gateway.sees_everything(&caller) {
        let client = caller.as_ref().map_or("", |client| client.as_str());
        return Rejection::text(
            StatusCode::FORBIDDEN,
            format!(
                "Forbidden: {path} shows every group and every client's calls; client '{client}' \
                 has a policy that hides some. Use a client without allow/deny rules (or the \
                 shared token) to read it.\n"
            ),
        )
        .into_response();
    }
    if metrics {
        return metrics_response(gateway, request.method());
    }
    if status {
        return status_response(gateway, history, request.method());
    }
    let session_id = request
        .headers()
        .get(SESSION_HEADER)
        .and_then(|value| value.to_str().ok())
        .map(str::to_owned);
    let session = session_id
        .as_deref()
        .map(|id| bounded(id, MAX_ECHOED_ID).into_owned());
    // A session serves only the client that opened it; to any other, it
    // does not exist.
    if let (Some(id), Some(shown)) = (&session_id, &session) {
        match sessions.owner(&id.as_str().into()).await {
            Ok(SessionOwner::Owned(stored)) if stored != owner => return unknown_session(shown),
            // Being opened by the request that made it: nobody else's yet.
            Ok(SessionOwner::Unclaimed) => return unknown_session(shown),
            // rmcp would answer that it ended a session it never had.
            Ok(SessionOwner::Unknown) if request.method() == http::Method::DELETE => {
                return unknown_session(shown);
            }
            Ok(_) => {}
            // Without its owner, nobody gets the session: not even for the
            // moment the store is away.
            Err(error) => {
                tracing::warn!(%error, "reading a session's owner failed");
                return Rejection::text(
                    StatusCode::SERVICE_UNAVAILABLE,
                    "Service unavailable: the session store cannot be read right now; retry \
                     shortly.\n"
                        .to_owned(),
                )
                .into_response();
            }
        }
    }
    // What the handler builds the request's scope from: nothing else tells
    // it who is calling.
    let mut request = request;
    request.extensions_mut().insert(RequestCaller {
        owner,
        session: session_id
            .filter(|id| !id.is_empty())
            .map(|id| ConversationId::new(&id)),
    });
    answer(mcp, gateway, guard, request, session).await
}

/// The protected resource metadata, to anyone: it is how a client learns
/// where to get a token.
fn resource_metadata(oauth: &OAuth, method: &http::Method) -> Response<Body> {
    if method != http::Method::GET && method != http::Method::HEAD {
        return plain(
            StatusCode::METHOD_NOT_ALLOWED,
            "Method not allowed: the resource metadata answers GET\n",
        );
    }
    let mut response = Response::new(Full::new(Bytes::from(oauth.metadata().to_string())).boxed());
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        http::HeaderValue::from_static("application/json"),
    );
    response
}

/// A request that passed the guard, answered by rmcp.
async fn answer<S: ConversationStore + 'static>(
    mcp: &StreamableHttpService<GatewayHandler<S>, HeldSessions<S>>,
    gateway: &Gateway<S>,
    guard: &Guard,
    request: Request<Incoming>,
    session: Option<String>,
) -> Response<Body> {
    let response = if request.method() == http::Method::POST && has_json_body(request.headers()) {
        let (parts, body) = request.into_parts();
        let bytes = match read_body(body, &guard.limits).await {
            Ok(bytes) => bytes,
            Err(rejection) => return rejection.into_response(),
        };
        match check_json_rpc(&bytes) {
            Err(rejection) => return rejection.into_response(),
            Ok(Some(method)) => gateway.metrics().request(&method),
            Ok(None) => {}
        }
        mcp.handle(Request::from_parts(parts, Full::new(bytes)))
            .await
    } else if request.method() == http::Method::DELETE {
        ended(mcp.handle(request).await)
    } else {
        mcp.handle(request).await
    };
    match session {
        Some(id) if response.status() == StatusCode::NOT_FOUND => unknown_session(&id),
        _ => response,
    }
}

/// rmcp's answer to a `DELETE` that ended a session, 202, as 204: the
/// official SDKs take only 200 or 204 for a session ended (the Python one
/// warns at every session's end otherwise).
fn ended(response: Response<Body>) -> Response<Body> {
    if response.status() != StatusCode::ACCEPTED {
        return response;
    }
    let mut response = Response::new(Full::new(Bytes::new()).boxed());
    *response.status_mut() = StatusCode::NO_CONTENT;
    response
}

/// The longest session id echoed back in an error.
const MAX_ECHOED_ID: usize = 80;

/// rmcp's answer to a session it does not hold and could not restore.
fn unknown_session(id: &str) -> Response<Body> {
    let text = format!(
        "Not found: session '{id}' is unknown to this gateway: it was ended, or it went unused \
         longer than the gateway keeps sessions and its history was deleted. Start a new session: \
         send initialize without an Mcp-Session-Id header.\n"
    );
    Rejection::text(StatusCode::NOT_FOUND, text).into_response()
}

fn has_json_body(headers: &http::HeaderMap) -> bool {
    headers
        .get(header::CONTENT_TYPE)
        .and_then(|value| value.to_str().ok())
        .is_some_and(|value| {
            let essence = value.split_once(';').map_or(value, |(essence, _)| essence);
            essence.trim().eq_ignore_ascii_case("application/json")
        })
}

/// A request refused before it reaches rmcp.
#[derive(Debug)]
struct Rejection {
    status: StatusCode,
    content_type: &'static str,
    body: String,
}

impl Rejection {
    fn text(status: StatusCode, body: String) -> Self {
        Self {
            status,
            content_type: "text/plain",
            body,
        }
    }

    fn into_response(self) -> Response<Body> {
        let mut response = Response::new(Full::new(Bytes::from(self.body)).boxed());
        *response.status_mut() = self.status;
        response.headers_mut().insert(
            header::CONTENT_TYPE,
            http::HeaderValue::from_static(self.content_type),
        );
        response
    }
}

/// Reads a request body within the time and size limits.
async fn read_body(body: Incoming, limits: &HttpLimits) -> Result<Bytes, Rejection> {
    let limited = http_body_util::Limited::new(body, limits.max_body_bytes);
    match tokio::time::timeout(limits.body_timeout, limited.collect()).await {
        Err(_) => Err(Rejection::text(
            StatusCode::REQUEST_TIMEOUT,
            format!(
                "Request timeout: the body did not arrive within {}s\n",
                limits.body_timeout.as_secs_f64()
            ),
        )),
        Ok(Err(error)) if error.is::<http_body_util::LengthLimitError>() => Err(Rejection::text(
            StatusCode::PAYLOAD_TOO_LARGE,
            format!(
                "Payload too large: a request body may hold at most {} bytes\n",
                limits.max_body_bytes
            ),
        )),
        Ok(Err(error)) => Err(Rejection::text(
            StatusCode::BAD_REQUEST,
            format!("Bad request: reading the body failed: {error}\n"),
        )),
        Ok(Ok(collected)) => Ok(collected.to_bytes()),
    }
}

/// `/metrics`: every metric, in Prometheus' text format.
/// The status page; GET and HEAD only.
fn status_response<S: ConversationStore + 'static>(
    gateway: &Gateway<S>,
    history: &History,
    method: &http::Method,
) -> Response<Body> {
    if method != http::Method::GET && method != http::Method::HEAD {
        let mut response = plain(
            StatusCode::METHOD_NOT_ALLOWED,
            "Method not allowed: the status page answers GET\n",
        );
        response
            .headers_mut()
            .insert(header::ALLOW, http::HeaderValue::from_static("GET, HEAD"));
        return response;
    }
    let page = crate::status::render(gateway, history);
    let mut response = Response::new(Full::new(Bytes::from(page)).boxed());
    let headers = response.headers_mut();
    for (name, value) in [
        (header::CONTENT_TYPE, "text/html; charset=utf-8"),
        // No script, no frame, nothing fetched from elsewhere.
        (
            header::CONTENT_SECURITY_POLICY,
            "default-src 'none'; style-src 'unsafe-inline'; frame-ancestors 'none'",
        ),
        (header::X_CONTENT_TYPE_OPTIONS, "nosniff"),
        (header::CACHE_CONTROL, "no-store"),
        (header::REFERRER_POLICY, "no-referrer"),
    ] {
        headers.insert(name, http::HeaderValue::from_static(value));
    }
    response
}

fn metrics_response<S: ConversationStore + 'static>(
    gateway: &Gateway<S>,
    method: &http::Method,
) -> Response<Body> {
    if method != http::Method::GET && method != http::Method::HEAD {
        let mut response = plain(
            StatusCode::METHOD_NOT_ALLOWED,
            "Method not allowed: read /metrics with GET\n",
        );
        response
            .headers_mut()
            .insert(header::ALLOW, http::HeaderValue::from_static("GET, HEAD"));
        return response;
    }
    let mut response = Response::new(Full::new(Bytes::from(gateway.metrics().render())).boxed());
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        http::HeaderValue::from_static(
            "application/openmetrics-text; version=1.0.0; charset=utf-8",
        ),
    );
    response
}

/// JSON-RPC 2.0's answers to a body that is not one JSON-RPC message:
/// -32700 when it is not JSON, -32600 when it is JSON but no message.
/// A request's or notification's method comes back, a response's none.
fn check_json_rpc(body: &[u8]) -> Result<Option<String>, Rejection> {
    let value: serde_json::Value = serde_json::from_slice(body).map_err(|error| {
        json_rpc_error(
            serde_json::Value::Null,
            -32700,
            &format!("Parse error: the body is not valid JSON ({error})"),
        )
    })?;
    if serde_json::from_value::<rmcp::model::ClientJsonRpcMessage>(value.clone()).is_err() {
        let id = match value.get("id") {
            Some(id @ (serde_json::Value::String(_) | serde_json::Value::Number(_))) => id.clone(),
            _ => serde_json::Value::Null,
        };
        let reason = if value.is_array() {
            "Invalid Request: send one JSON-RPC message per request (batches are not supported)"
        } else {
            "Invalid Request: the body is JSON but not a JSON-RPC 2.0 request, notification or \
             response (check \"jsonrpc\": \"2.0\", \"method\" and \"id\")"
        };
        return Err(json_rpc_error(id, -32600, reason));
    }
    Ok(value
        .get("method")
        .and_then(serde_json::Value::as_str)
        .map(str::to_owned))
}

fn json_rpc_error(id: serde_json::Value, code: i64, message: &str) -> Rejection {
    let body = serde_json::json!({
        "jsonrpc": "2.0",
        "id": id,
        "error": {"code": code, "message": message},
    });
    Rejection {
        status: StatusCode::BAD_REQUEST,
        content_type: "application/json",
        body: body.to_string(),
    }
}

/// The token of an `Authorization: Bearer <token>` header. The scheme is
/// case-insensitive (RFC 7235).
fn bearer(header: Option<&http::HeaderValue>) -> Option<&str> {
    let (scheme, presented) = header
        .and_then(|value| value.to_str().ok())
        .and_then(|value| value.trim_start().split_once(' '))?;
    scheme
        .eq_ignore_ascii_case("bearer")
        .then(|| presented.trim())
}

/// Compares the presented token with the expected one in constant time.
fn same_token(presented: &str, expected: &str) -> bool {
    let (a, b) = (presented.as_bytes(), expected.as_bytes());
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// Whether `header` carries exactly the bearer token `expected`.
#[cfg(test)]
fn authorized(header: Option<&http::HeaderValue>, expected: &str) -> bool {
    bearer(header).is_some_and(|presented| same_token(presented, expected))
}

fn plain(status: StatusCode, text: &'static str) -> Response<Body> {
    Rejection::text(status, text.to_owned()).into_response()
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
        assert!(authorized(Some(&header("bearer s3cret")), "s3cret"));
        assert!(authorized(Some(&header("BEARER  s3cret")), "s3cret"));
        assert!(!authorized(Some(&header("Bearers3cret")), "s3cret"));
        assert!(!authorized(None, "s3cret"));
    }

    #[test]
    fn failed_accepts_wait_longer_each_time_and_recover() {
        let mut errors = AcceptErrors::default();
        let error = std::io::Error::from_raw_os_error(24); // EMFILE
        let waits: Vec<u128> = (0..10).map(|_| errors.failed(&error).as_millis()).collect();
        assert_eq!(waits, [5, 10, 20, 40, 80, 160, 320, 640, 1000, 1000]);
        // Only the first of a burst is logged; the rest are counted.
        assert_eq!(errors.unlogged, 9);
        errors.recovered();
        assert_eq!(errors.failed(&error).as_millis(), 5);
    }
}
