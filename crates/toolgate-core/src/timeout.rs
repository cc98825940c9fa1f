//! Timeouts as settings write them: a number of seconds, checked before it
//! becomes a [`Duration`] (which panics on a value it cannot hold).

use std::time::Duration;

/// The longest timeout a setting may ask for: one day.
pub const MAX_TIMEOUT_SECONDS: f64 = 86_400.0;

/// `seconds` as a timeout, when it is a finite number above zero and at
/// most [`MAX_TIMEOUT_SECONDS`], and not so small that it rounds to a zero
/// duration (below a nanosecond), with which every call would time out at
/// once.
pub fn timeout_from_seconds(seconds: f64) -> Option<Duration> {
    (seconds.is_finite() && seconds > 0.0 && seconds <= MAX_TIMEOUT_SECONDS)
        .then(|| Duration::from_secs_f64(seconds))
        .filter(|timeout| !timeout.is_zero())
}

#[cfg(test)]
#[path = "timeout_tests.rs"]
mod tests;
