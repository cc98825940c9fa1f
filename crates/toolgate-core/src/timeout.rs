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
mod tests {
    use super::*;

    #[test]
    fn only_positive_finite_seconds_up_to_a_day_are_timeouts() {
        assert_eq!(timeout_from_seconds(1.5), Some(Duration::from_millis(1500)));
        assert_eq!(
            timeout_from_seconds(86_400.0),
            Some(Duration::from_secs(86_400))
        );
        for bad in [0.0, -1.0, 1e-10, 86_400.5, 1e300, f64::INFINITY, f64::NAN] {
            assert_eq!(timeout_from_seconds(bad), None, "{bad}");
        }
    }
}
