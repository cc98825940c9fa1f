//! [`JsLimits`]: what one call may use. The defaults are 10 s and 64 MiB
//! (`[tools.javascript]` in docs/javascript-tools.md); the stack default
//! leaves room under a 2 MiB thread (tokio's blocking threads, Rust's
//! spawned threads).

use std::time::Duration;

/// What one call of a JavaScript function may use.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct JsLimits {
    /// Wall time from the start of the call (evaluating the source included)
    /// until the script is interrupted.
    pub time: Duration,
    /// Heap the engine may allocate, in bytes; 0 is no limit (QuickJS's
    /// convention).
    pub memory_bytes: usize,
    /// Native stack the engine may use, in bytes; deeper recursion throws a
    /// `RangeError`. Must stay below the calling thread's stack size.
    pub stack_bytes: usize,
}

impl Default for JsLimits {
    fn default() -> Self {
        Self {
            time: Duration::from_secs(10),
            memory_bytes: 64 << 20,
            stack_bytes: 512 << 10,
        }
    }
}
