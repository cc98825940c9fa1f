//! [`CallsInFlight`]: the tool calls the gateway is running, so a shutdown
//! can refuse new calls and let the running ones finish.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;

use tokio::sync::Notify;

/// Counts calls in flight; once draining, refuses new ones.
#[derive(Debug, Default)]
pub(crate) struct CallsInFlight {
    running: AtomicUsize,
    draining: AtomicBool,
    finished: Notify,
}

/// One running call; dropping it ends the call.
#[derive(Debug)]
pub(crate) struct RunningCall<'a>(&'a CallsInFlight);

impl Drop for RunningCall<'_> {
    fn drop(&mut self) {
        if self.0.running.fetch_sub(1, Ordering::SeqCst) == 1 {
            self.0.finished.notify_waiters();
        }
    }
}

impl CallsInFlight {
    /// Starts a call, unless the gateway is shutting down.
    pub(crate) fn start(&self) -> Option<RunningCall<'_>> {
        self.running.fetch_add(1, Ordering::SeqCst);
        let call = RunningCall(self);
        (!self.draining.load(Ordering::SeqCst)).then_some(call)
    }

    /// Refuses new calls and waits up to `grace` for the running ones.
    /// Returns how many were still running when the grace period ended.
    pub(crate) async fn drain(&self, grace: Duration) -> usize {
        self.draining.store(true, Ordering::SeqCst);
        let deadline = tokio::time::Instant::now() + grace;
        loop {
            let finished = self.finished.notified();
            let running = self.running.load(Ordering::SeqCst);
            if running == 0 {
                return 0;
            }
            if tokio::time::timeout_at(deadline, finished).await.is_err() {
                return self.running.load(Ordering::SeqCst);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn a_drain_waits_for_running_calls_and_refuses_new_ones() {
        let calls = std::sync::Arc::new(CallsInFlight::default());
        let running = calls.start().is_some();
        assert!(running);
        let held = std::sync::Arc::clone(&calls);
        let finisher = tokio::spawn(async move {
            let call = held.start();
            tokio::time::sleep(Duration::from_secs(2)).await;
            drop(call);
        });
        tokio::task::yield_now().await;
        assert_eq!(calls.drain(Duration::from_secs(5)).await, 0);
        assert!(calls.start().is_none(), "a call started while draining");
        finisher.await.unwrap();
    }

    #[tokio::test(start_paused = true)]
    async fn a_drain_gives_up_after_the_grace_period() {
        let calls = CallsInFlight::default();
        let _stuck = calls.start();
        assert_eq!(calls.drain(Duration::from_secs(1)).await, 1);
    }
}
