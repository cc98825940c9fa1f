//! Shared by the three measurement programs (included with `#[path]`): the
//! tool source, the timing loop and the RSS reading. Not a library: each
//! program must build alone so its clean build time is its own.

use std::hint::black_box;
use std::time::{Duration, Instant};

/// The tool every program runs.
pub const TOOL_SOURCE: &str = "function add(args){ return args.a + args.b; }";
/// The same tool, answering through a Promise.
pub const ASYNC_TOOL_SOURCE: &str =
    "async function add(args){ await null; return args.a + args.b; }";

pub fn arguments() -> serde_json::Value {
    serde_json::json!({ "a": 2, "b": 3 })
}

pub fn expected() -> serde_json::Value {
    serde_json::json!(5)
}

/// Runs `call` `warmup` times untimed, then `iterations` times timed one by
/// one; prints one line: median, p95, mean (µs).
pub fn time_calls(
    label: &str,
    warmup: usize,
    iterations: usize,
    mut call: impl FnMut() -> serde_json::Value,
) {
    for _ in 0..warmup {
        assert_eq!(black_box(call()), expected());
    }
    let mut samples = Vec::with_capacity(iterations);
    for _ in 0..iterations {
        let start = Instant::now();
        let value = black_box(call());
        samples.push(start.elapsed());
        assert_eq!(value, expected());
    }
    samples.sort();
    let median = samples[samples.len() / 2];
    let p95 = samples[samples.len() * 95 / 100];
    let mean = samples.iter().sum::<Duration>() / samples.len() as u32;
    println!(
        "{label}: median {:.1} µs, p95 {:.1} µs, mean {:.1} µs ({iterations} calls)",
        micros(median),
        micros(p95),
        micros(mean)
    );
}

fn micros(duration: Duration) -> f64 {
    duration.as_secs_f64() * 1e6
}

/// The process's resident set size, in bytes (Linux: `VmRSS` in /proc/self/status).
pub fn rss_bytes() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|line| line.strip_prefix("VmRSS:"))
        .and_then(|rest| {
            rest.trim()
                .trim_end_matches("kB")
                .trim()
                .parse::<u64>()
                .ok()
        })
        .map_or(0, |kb| kb * 1024)
}

/// Creates `count` idle contexts with `make`, holds them, and prints the RSS
/// growth per context.
pub fn memory_per_context<T>(label: &str, count: usize, mut make: impl FnMut() -> T) {
    let before = rss_bytes();
    let held: Vec<T> = (0..count).map(|_| make()).collect();
    let after = rss_bytes();
    println!(
        "{label}: RSS {:.1} MiB -> {:.1} MiB for {count}: {:.1} KiB per context",
        before as f64 / 1048576.0,
        after as f64 / 1048576.0,
        (after.saturating_sub(before)) as f64 / count as f64 / 1024.0
    );
    drop(black_box(held));
}
