//! How the HTTP endpoint is set up: its paths, who may come in, and the
//! bounds on connections, requests and sessions.

use std::sync::Arc;
use std::time::Duration;

use crate::clients::Clients;
use crate::oauth::OAuth;

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
