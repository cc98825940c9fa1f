//! One HTTP request's way through the listener: the OAuth resource
//! metadata, the metrics and status pages, or `/mcp`, whose request rmcp
//! answers once the guard knows who sent it and its session is theirs.

use std::sync::Arc;

use bytes::Bytes;
use http::{Request, Response, StatusCode, header};
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use rmcp::transport::streamable_http_server::StreamableHttpService;
use toolgate_store::{ConversationId, ConversationStore};

use super::guard::Guard;
use super::options::{MCP_PATH, METRICS_PATH, STATUS_PATH};
use super::responses::{
    Body, Rejection, check_json_rpc, metrics_response, plain, read_body, status_response,
};
use crate::bounded::bounded;
use crate::clients::{Owner, RequestEdge};
use crate::gateway::Gateway;
use crate::handler::{GatewayHandler, SESSION_HEADER};
use crate::oauth::OAuth;
use crate::session::{HeldSessions, SessionOwner};
use crate::status::History;

/// rmcp's streamable HTTP service over the gateway's handler and the
/// sessions held in memory.
pub(super) type McpService<S> = StreamableHttpService<GatewayHandler<S>, HeldSessions<S>>;

/// What serves every request of the listener.
pub(super) struct Endpoint<S: ConversationStore + 'static> {
    pub(super) mcp: McpService<S>,
    pub(super) gateway: Arc<Gateway<S>>,
    pub(super) sessions: Arc<HeldSessions<S>>,
    pub(super) guard: Guard,
    pub(super) history: Arc<History>,
}

/// A page of the gateway's own, behind the same token as `/mcp`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Page {
    /// `/metrics`, in Prometheus' text format.
    Metrics,
    /// The status page.
    Status,
}

impl Page {
    /// The page at `path`, if any.
    fn at(path: &str) -> Option<Self> {
        match path {
            METRICS_PATH => Some(Self::Metrics),
            STATUS_PATH => Some(Self::Status),
            _ => None,
        }
    }
}

/// Answers one request.
pub(super) async fn route<S: ConversationStore + 'static>(
    endpoint: &Endpoint<S>,
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
    let page = Page::at(path);
    if page.is_none() && path != MCP_PATH && path != "/mcp/" {
        return plain(
            StatusCode::NOT_FOUND,
            "Not found: the MCP endpoint is /mcp\n",
        );
    }
    // Without a token, a web page that rebinds its name to this address
    // could read the pages; with one, it cannot send it (and a scraper may
    // reach a replica by any address).
    if page.is_some() && guard.open_to_all(&access) && !guard.host_allowed(request.headers()) {
        return plain(
            StatusCode::FORBIDDEN,
            "Forbidden: the Host header names no host this gateway answers for (--allowed-host)\n",
        );
    }
    let owner = match guard.owner(request.headers(), &access).await {
        Ok(owner) => owner,
        Err(refused) => return refused.into_response(),
    };
    if let Some(page) = page {
        return page_response(page, path, gateway, history, &owner, request.method());
    }
    let session_id = request
        .headers()
        .get(SESSION_HEADER)
        .and_then(|value| value.to_str().ok())
        .map(str::to_owned);
    let session = session_id
        .as_deref()
        .map(|id| bounded(id, MAX_ECHOED_ID).into_owned());
    if let (Some(id), Some(shown)) = (&session_id, &session)
        && let Some(refusal) = session_refusal(sessions, id, shown, &owner, request.method()).await
    {
        return refusal;
    }
    // What the handler builds the request's scope from: nothing else tells
    // it who is calling.
    let mut request = request;
    request.extensions_mut().insert(RequestEdge {
        owner,
        session: session_id
            .filter(|id| !id.is_empty())
            .map(|id| ConversationId::new(&id)),
    });
    answer(mcp, gateway, guard, request, session).await
}

/// A page, to a caller that may read it: both show every group, tool and
/// upstream, and every client's calls, so not to a client whose policy
/// hides some of them.
fn page_response<S: ConversationStore + 'static>(
    page: Page,
    path: &str,
    gateway: &Gateway<S>,
    history: &History,
    owner: &Owner,
    method: &http::Method,
) -> Response<Body> {
    let caller = &owner.client;
    if !gateway.sees_everything(caller) {
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
    match page {
        Page::Metrics => metrics_response(gateway, method),
        Page::Status => status_response(gateway, history, method),
    }
}

/// The answer refusing `owner` the session `id` (echoed as `shown`), when
/// it may not use it: a session serves only the client that opened it; to
/// any other, it does not exist.
async fn session_refusal<S: ConversationStore + 'static>(
    sessions: &HeldSessions<S>,
    id: &str,
    shown: &str,
    owner: &Owner,
    method: &http::Method,
) -> Option<Response<Body>> {
    match sessions.owner(&id.into()).await {
        Ok(SessionOwner::Owned(stored)) if stored != *owner => Some(unknown_session(shown)),
        // Being opened by the request that made it: nobody else's yet.
        Ok(SessionOwner::Unclaimed) => Some(unknown_session(shown)),
        // rmcp would answer that it ended a session it never had.
        Ok(SessionOwner::Unknown) if method == http::Method::DELETE => Some(unknown_session(shown)),
        Ok(_) => None,
        // Without its owner, nobody gets the session: not even for the
        // moment the store is away.
        Err(error) => {
            tracing::warn!(%error, "reading a session's owner failed");
            Some(
                Rejection::text(
                    StatusCode::SERVICE_UNAVAILABLE,
                    "Service unavailable: the session store cannot be read right now; retry \
                     shortly.\n"
                        .to_owned(),
                )
                .into_response(),
            )
        }
    }
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
    mcp: &McpService<S>,
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

/// Whether the request says its body is JSON.
fn has_json_body(headers: &http::HeaderMap) -> bool {
    headers
        .get(header::CONTENT_TYPE)
        .and_then(|value| value.to_str().ok())
        .is_some_and(|value| {
            let essence = value.split_once(';').map_or(value, |(essence, _)| essence);
            essence.trim().eq_ignore_ascii_case("application/json")
        })
}
