//! toolgate's MCP side, on rmcp: the [`Gateway`] that serves core tools, the
//! meta-tools and each session's loaded groups; the [`Upstream`] pool it
//! fronts; its rmcp [handler](GatewayHandler) for stdio and [streamable
//! HTTP](serve_http); and the [configuration](config) of upstreams.
#![deny(missing_docs)]
#![deny(clippy::print_stdout, clippy::print_stderr)]

pub mod config;
mod convert;
mod gateway;
mod handler;
mod http;
mod relay;
mod session;
mod toolbox;
mod upstream;
mod validate;

pub use gateway::{
    CALL_TOOL_TOOL_NAME, FIND_TOOL_GROUPS_TOOL_NAME, Gateway, GatewayOptions, SessionRef,
};
pub use handler::{GatewayHandler, SessionSource};
pub use http::{HttpOptions, MCP_PATH, serve_http};
pub use relay::Downstream;
pub use session::{HistorySessionStore, SESSION_STARTED, Session, Sessions};
pub use toolbox::{ALL_GROUPS, StartReport, Toolbox, ToolboxError, ToolboxOptions};
pub use upstream::{Upstream, UpstreamError, UpstreamEvent, UpstreamListing};
