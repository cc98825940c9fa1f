//! What the gateway's metrics add to each request and tool call: the
//! counting itself, against a `tools/call` over HTTP of ~250 µs
//! (`bench/gateway/http_breakdown.py`).
//!
//! ```sh
//! cargo bench -p toolgate-mcp --bench metrics
//! ```

use std::time::Duration;

use toolgate_mcp::{Metrics, Outcome};

fn main() {
    divan::main();
}

/// One `tools/call` as the gateway counts it: the request by method, the
/// call by group, tool and outcome, and its duration.
#[divan::bench]
fn count_one_tool_call(bencher: divan::Bencher) {
    let metrics = Metrics::new();
    bencher.bench(|| {
        metrics.request(divan::black_box("tools/call"));
        metrics.tool_call(
            divan::black_box("time"),
            divan::black_box("time_now"),
            Outcome::Ok,
            Duration::from_micros(180),
        );
    });
}

/// The same from 8 threads at once on one `Metrics`, as the runtime's
/// workers would.
#[divan::bench(threads = 8)]
fn count_one_tool_call_contended(bencher: divan::Bencher) {
    let metrics = Metrics::new();
    bencher.bench(|| {
        metrics.request(divan::black_box("tools/call"));
        metrics.tool_call(
            divan::black_box("time"),
            divan::black_box("time_now"),
            Outcome::Ok,
            Duration::from_micros(180),
        );
    });
}

/// A scrape with 50 tools' series.
#[divan::bench]
fn render_fifty_tools(bencher: divan::Bencher) {
    let metrics = Metrics::new();
    for tool in 0..50 {
        let name = format!("tool_{tool}");
        metrics.tool_call("group", &name, Outcome::Ok, Duration::from_millis(1));
    }
    bencher.bench(|| metrics.render().len());
}
