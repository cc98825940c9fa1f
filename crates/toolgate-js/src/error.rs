//! [`JsError`]: why a call of a JavaScript function gave no value. What the
//! script did (threw, ran too long, allocated too much) is told apart from
//! what went wrong around it, so the tool layer can answer the model with the
//! first and log the second.

use std::time::Duration;

/// Why a call of a JavaScript function gave no value.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum JsError {
    /// The script threw (while being evaluated or called), or its Promise
    /// was rejected.
    #[error("{message}{}", line.map(|line| format!(" (line {line})")).unwrap_or_default())]
    Thrown {
        /// The error's `name: message`, or the thrown value as text.
        message: String,
        /// The line in the tool's file where it was thrown, when known.
        line: Option<u32>,
    },
    /// The call ran longer than its time limit.
    #[error("timed out after {} ms", limit.as_millis())]
    Timeout {
        /// The limit that was reached.
        limit: Duration,
    },
    /// The script tried to allocate more than its memory limit. (A script
    /// that throws `null` gets this too: QuickJS throws `null` when it cannot
    /// allocate its own error.)
    #[error("out of memory (limit {limit_bytes} bytes)")]
    OutOfMemory {
        /// The limit that was reached.
        limit_bytes: usize,
    },
    /// The script recursed deeper than its stack limit.
    #[error("maximum call stack size exceeded{}", line.map(|line| format!(" (line {line})")).unwrap_or_default())]
    StackOverflow {
        /// The line in the tool's file where it happened, when known.
        line: Option<u32>,
    },
    /// The source defines no function of that name.
    #[error("`{function}` is not a function defined by the script")]
    NotAFunction {
        /// The name asked for.
        function: String,
    },
    /// Whoever made the call gave up on it ([`Host::cancelled`](crate::Host::cancelled)).
    #[error("cancelled")]
    Cancelled,
    /// The returned Promise never settled: it waits on something that will
    /// never happen (there are no timers or I/O to wait on).
    #[error("the returned Promise never settled")]
    Unsettled,
    /// The engine failed outside the script (creating a runtime or context).
    #[error("JavaScript engine failed")]
    Engine(#[from] rquickjs::Error),
    /// The value returned could not be read back as JSON.
    #[error("the function's result is not JSON")]
    InvalidResult(#[from] serde_json::Error),
}

/// A `Result` whose error is [`JsError`].
pub type Result<T, E = JsError> = std::result::Result<T, E>;
