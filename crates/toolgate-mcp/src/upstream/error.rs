//! [`UpstreamError`]: why an upstream could not serve a load or a call, in
//! the words the model reads.

use std::time::Duration;

use toolgate_core::GroupId;

/// Why an upstream could not serve a load or a call. `Display` is the text the
/// model reads: it names the upstream and the cause.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum UpstreamError {
    /// It could not be started or connected to.
    #[error("MCP server '{upstream}' failed to start: {reason}")]
    Start {
        /// The upstream.
        upstream: GroupId,
        /// The cause.
        reason: String,
    },
    /// It failed recently and the next attempt waits.
    #[error("MCP server '{upstream}' is unavailable: {reason}; it will be retried in {}s", retry_in.as_secs().max(1))]
    BackingOff {
        /// The upstream.
        upstream: GroupId,
        /// The last failure.
        reason: String,
        /// How long until the next attempt.
        retry_in: Duration,
    },
    /// The call took longer than the upstream's timeout and was cancelled.
    #[error("MCP server '{upstream}' did not answer '{tool}' within {}s; the call was cancelled", timeout.as_secs_f64())]
    Timeout {
        /// The upstream.
        upstream: GroupId,
        /// The tool called.
        tool: String,
        /// The limit.
        timeout: Duration,
    },
    /// The server's answer was larger than a message may be.
    #[error(
        "MCP server '{upstream}' answered '{tool}' with a message of {bytes} bytes, over the {limit}-byte limit of one message; the gateway dropped it and cancelled the call"
    )]
    TooLarge {
        /// The upstream.
        upstream: GroupId,
        /// The tool called.
        tool: String,
        /// The message's size.
        bytes: usize,
        /// The limit.
        limit: usize,
    },
    /// The caller cancelled; the upstream was told.
    #[error("the call to '{tool}' was cancelled")]
    Cancelled {
        /// The tool called.
        tool: String,
    },
    /// The connection broke, or the server answered with a protocol error.
    #[error("MCP server '{upstream}' failed on '{operation}': {reason}")]
    Failed {
        /// The upstream.
        upstream: GroupId,
        /// What was asked.
        operation: String,
        /// The cause.
        reason: String,
    },
}

impl UpstreamError {
    /// A short name of the kind of failure (a span's `error.type`).
    pub fn kind(&self) -> &'static str {
        match self {
            Self::Start { .. } => "start_failed",
            Self::BackingOff { .. } => "unavailable",
            Self::Timeout { .. } => "timeout",
            Self::TooLarge { .. } => "too_large",
            Self::Cancelled { .. } => "cancelled",
            Self::Failed { .. } => "failed",
        }
    }
}
