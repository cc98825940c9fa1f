//! Where the command line's output goes: data to stdout, everything else
//! (logs, banners, progress) to stderr, each written at once.

use std::io::Write;

/// What is logged unless TOOLGATE_LOG says otherwise: warnings, but not
/// rmcp's own error when an upstream's HTTP transport ends (a refused
/// connection, say), which the gateway's warning of that upstream already
/// says in plain words.
const DEFAULT_LOG: &str = "warn,rmcp::transport::worker=off";

/// Logs to stderr, at [`DEFAULT_LOG`] unless TOOLGATE_LOG says otherwise.
pub(crate) fn init_logging() {
    let filter = tracing_subscriber::EnvFilter::try_from_env("TOOLGATE_LOG")
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(DEFAULT_LOG));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(false)
        .try_init();
}

/// A probability with `decimals` decimals, rounded down: a chance below 1
/// never reads as certain (0.9997 with three decimals is `0.999`, not
/// `1.000`), and a confidence and the fitted one it restates read in the
/// order they stand in.
pub(crate) fn probability(value: f64, decimals: u8) -> String {
    let scale = 10_f64.powi(i32::from(decimals));
    // The nudge keeps 0.805, stored as 0.80499..., from reading 0.804.
    let down = ((value * scale) + 1e-9).floor() / scale;
    format!("{down:.prec$}", prec = usize::from(decimals))
}

/// Writes `text` to stdout at once.
pub(crate) fn print(text: &str) {
    let mut stdout = std::io::stdout().lock();
    let _ = stdout.write_all(text.as_bytes());
    let _ = stdout.flush();
}

/// Writes `text` to stderr at once.
pub(crate) fn eprint(text: &str) {
    let mut stderr = std::io::stderr().lock();
    let _ = stderr.write_all(text.as_bytes());
    let _ = stderr.flush();
}

#[cfg(test)]
#[path = "output_tests.rs"]
mod tests;
