//! toolgate's MCP side, on rmcp: the [`Gateway`] that serves core tools, the
//! meta-tools and each session's loaded groups; the [`Upstream`] MCP servers
//! it fronts (tool sources of the shared toolgate-tools runtime); its rmcp
//! [handler](GatewayHandler), served [on stdio](serve_stdio) and [over
//! streamable HTTP](serve_http); and the [configuration](config) of
//! upstreams. rmcp types stay in this crate.
#![deny(missing_docs)]
#![deny(clippy::print_stdout, clippy::print_stderr)]

mod audit;
mod bounded;
mod clients;
pub mod config;
mod convert;
mod drain;
mod gateway;
mod handler;
mod http;
mod metrics;
mod oauth;
mod rate_limit;
mod relay;
mod scope;
mod session;
mod status;
mod stdio;
mod stdio_child;
pub mod telemetry;
mod upstream;
mod upstream_source;

pub use audit::{AuditConfig, AuditLog};
pub use clients::{ClientError, ClientKey, ClientName, Clients, MAX_CLIENT_NAME, TokenHash};
pub use gateway::{Access, Gateway, GatewayOptions, UpstreamChanges};
pub use handler::{GatewayHandler, SessionSource};
pub use http::{HttpLimits, HttpOptions, MCP_PATH, METRICS_PATH, STATUS_PATH, serve_http};
pub use metrics::{Metrics, Outcome};
pub use oauth::{OAuth, OAuthError, OAuthSettings, RESOURCE_METADATA_PATH, Refusal, Verified};
pub use rate_limit::{MAX_LIMIT_PERIOD, RateLimit, RateLimitSettings, RateLimited, RateLimits};
pub use relay::Downstream;
pub use scope::RequestScope;
pub use session::{
    HELD_IN_MEMORY, HeldSessions, HistorySessionStore, Hold, SESSION_STARTED, Session, Sessions,
};
pub use stdio::{StdioOptions, serve_pipe, serve_stdio};
pub use upstream::{Upstream, UpstreamError, UpstreamHealth};
