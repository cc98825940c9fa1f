//! [`UpstreamHealth`]: how an upstream is doing, as the status page and
//! `toolgate serve`'s banner show it.

use std::time::Duration;

/// How an upstream is doing.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum UpstreamHealth {
    /// Not started: lazy, and not used yet (or stopped until its next use).
    Idle,
    /// Being started or stopped right now.
    Busy,
    /// Connected.
    Running {
        /// Since it was started.
        uptime: Duration,
    },
    /// It exited; its next use starts it again.
    Exited,
    /// Its last start failed; the next use waits until `retry_in` has passed.
    Failed {
        /// Why it failed.
        reason: String,
        /// How long until it is tried again.
        retry_in: Duration,
    },
    /// Stopped for good, with the gateway.
    Closed,
}

impl UpstreamHealth {
    /// A word for it.
    pub fn label(&self) -> &'static str {
        match self {
            Self::Idle => "idle",
            Self::Busy => "starting",
            Self::Running { .. } => "running",
            Self::Exited => "exited",
            Self::Failed { .. } => "failed",
            Self::Closed => "closed",
        }
    }
}
