//! Accepting connections: a failed accept (out of file descriptors, say)
//! waits before the next, longer each time it fails again, and is logged
//! once per interval rather than once per failure.

use std::time::Duration;

use tokio::net::{TcpListener, TcpStream};
use tokio_util::sync::CancellationToken;

/// The next connection, or `None` once `shutdown` is cancelled.
pub(super) async fn accept(
    listener: &TcpListener,
    shutdown: &CancellationToken,
    errors: &mut AcceptErrors,
) -> Option<TcpStream> {
    loop {
        tokio::select! {
            () = shutdown.cancelled() => return None,
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => {
                    errors.recovered();
                    // Responses are small SSE events: without this, Nagle's
                    // algorithm holds each one behind the last unacknowledged
                    // write, about 40 ms per request on a kept-alive connection.
                    if let Err(error) = stream.set_nodelay(true) {
                        tracing::debug!(%error, "TCP_NODELAY not set");
                    }
                    return Some(stream);
                }
                Err(error) => {
                    // Out of file descriptors, say: retrying at once would
                    // spin, so wait, longer each time it fails again.
                    let wait = errors.failed(&error);
                    tokio::select! {
                        () = shutdown.cancelled() => return None,
                        () = tokio::time::sleep(wait) => {}
                    }
                }
            },
        }
    }
}

/// Failed accepts in a row: how long to wait before the next, and a log
/// line per interval rather than one per failure.
#[derive(Debug, Default)]
pub(super) struct AcceptErrors {
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

#[cfg(test)]
#[path = "accept_tests.rs"]
mod tests;
