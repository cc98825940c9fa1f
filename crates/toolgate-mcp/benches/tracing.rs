//! What OpenTelemetry spans add to a tool call inside the gateway: the same
//! `tools/call time_now` through [`Gateway::call_tool`], with spans off and
//! on (an SDK tracer provider batching to an exporter that drops what it
//! gets, so the export's network time is left out; `bench/gateway/
//! tracing_overhead.py` measures a call end to end, export included).
//!
//! ```sh
//! cargo bench -p toolgate-mcp --bench tracing
//! ```

#![expect(
    clippy::unwrap_used,
    reason = "a benchmark that cannot start should stop loudly"
)]

use std::time::Duration;

use opentelemetry_sdk::error::OTelSdkResult;
use opentelemetry_sdk::trace::{SdkTracerProvider, SpanData, SpanExporter};
use toolgate_mcp::{Gateway, GatewayOptions};
use toolgate_store::MemoryStore;
use toolgate_tools::{BuiltinConfig, ToolboxOptions};

fn main() {
    divan::main();
}

/// Takes batches and drops them.
#[derive(Debug)]
struct Dropping;

impl SpanExporter for Dropping {
    async fn export(&self, batch: Vec<SpanData>) -> OTelSdkResult {
        divan::black_box(batch);
        Ok(())
    }
}

fn gateway(runtime: &tokio::runtime::Runtime) -> std::sync::Arc<Gateway<MemoryStore>> {
    let root = std::env::temp_dir();
    let options = GatewayOptions {
        tools: ToolboxOptions {
            builtins: Some(BuiltinConfig::new(&root)),
            ..ToolboxOptions::default()
        },
        upstreams: Vec::new(),
        session_idle_timeout: Duration::from_secs(3600),
        routing: None,
        audit: None,
        rate_limits: Default::default(),
        policies: Default::default(),
        loaded_schemas: Default::default(),
        load_budget: Default::default(),
        deferral: toolgate_core::Deferral::Always,
        context_window: toolgate_core::DEFAULT_CONTEXT_WINDOW,
    };
    let (gateway, _) = runtime
        .block_on(Gateway::start(options, MemoryStore::new()))
        .unwrap();
    gateway
}

fn call(runtime: &tokio::runtime::Runtime, gateway: &Gateway<MemoryStore>) {
    let scope = runtime.block_on(gateway.operator_scope(None));
    let result = runtime
        .block_on(gateway.call_tool(&scope, "time_now", None))
        .unwrap();
    assert_ne!(result.is_error, Some(true));
}

#[divan::bench(args = ["off", "on"], sample_count = 2000)]
fn tools_call_time_now(bencher: divan::Bencher, spans: &str) {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let gateway = gateway(&runtime);
    let provider = SdkTracerProvider::builder()
        .with_batch_exporter(Dropping)
        .build();
    opentelemetry::global::set_tracer_provider(provider.clone());
    if spans == "on" {
        toolgate_mcp::telemetry::enable();
    } else {
        toolgate_mcp::telemetry::disable();
    }
    bencher.bench_local(|| call(&runtime, &gateway));
    toolgate_mcp::telemetry::disable();
    let _ = provider.shutdown();
}
