//! The answers the listener gives itself, before or besides rmcp: plain
//! refusals, JSON-RPC errors for a body that is no message, the request
//! body read within its limits, and the `/metrics` and status pages.

use std::convert::Infallible;

use bytes::Bytes;
use http::{Response, StatusCode, header};
use http_body_util::{BodyExt, Full, combinators::BoxBody};
use hyper::body::Incoming;
use toolgate_store::ConversationStore;

use super::options::HttpLimits;
use crate::gateway::Gateway;
use crate::status::History;

/// A response body.
pub(super) type Body = BoxBody<Bytes, Infallible>;

/// A request refused before it reaches rmcp.
#[derive(Debug)]
pub(super) struct Rejection {
    status: StatusCode,
    content_type: &'static str,
    body: String,
}

impl Rejection {
    pub(super) fn text(status: StatusCode, body: String) -> Self {
        Self {
            status,
            content_type: "text/plain",
            body,
        }
    }

    pub(super) fn into_response(self) -> Response<Body> {
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
pub(super) async fn read_body(body: Incoming, limits: &HttpLimits) -> Result<Bytes, Rejection> {
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

/// The status page; GET and HEAD only.
pub(super) fn status_response<S: ConversationStore + 'static>(
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

/// `/metrics`: every metric, in Prometheus' text format.
pub(super) fn metrics_response<S: ConversationStore + 'static>(
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
pub(super) fn check_json_rpc(body: &[u8]) -> Result<Option<String>, Rejection> {
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

/// A plain-text refusal.
pub(super) fn plain(status: StatusCode, text: &'static str) -> Response<Body> {
    Rejection::text(status, text.to_owned()).into_response()
}
