//! `toolgate serve` exporting spans over OTLP/HTTP to a collector this test
//! runs: a server span per MCP request, child of the trace context in the
//! request's `_meta`; an `execute_tool` span per tool call (upstream and
//! JavaScript); a client span per upstream request, whose context reaches
//! the upstream in its `_meta`.

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::tonic::common::v1::any_value::Value as AnyValue;
use opentelemetry_proto::tonic::trace::v1::span::SpanKind;
use prost::Message;
use serde_json::json;

use super::gateways::{StdioGateway, write_mathx};
use super::support::peers;

/// A span as the collector decoded it.
#[derive(Clone, Debug)]
struct Received {
    name: String,
    kind: SpanKind,
    trace_id: String,
    span_id: String,
    parent_span_id: String,
    attributes: HashMap<String, String>,
    service: String,
}

/// An OTLP/HTTP collector on a loopback port: it decodes each export of
/// `/v1/traces` (protobuf) and keeps the spans.
struct Collector {
    url: String,
    spans: Arc<Mutex<Vec<Received>>>,
}

impl Collector {
    fn start() -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let spans = Arc::new(Mutex::new(Vec::new()));
        let kept = Arc::clone(&spans);
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(stream) = stream else { return };
                let kept = Arc::clone(&kept);
                std::thread::spawn(move || serve_exports(stream, &kept));
            }
        });
        Self { url, spans }
    }

    /// The spans of trace `trace_id`, once `count` have come.
    fn trace(&self, trace_id: &str, count: usize) -> Vec<Received> {
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let spans: Vec<Received> = self
                .spans
                .lock()
                .unwrap()
                .iter()
                .filter(|span| span.trace_id == trace_id)
                .cloned()
                .collect();
            if spans.len() >= count || Instant::now() > deadline {
                return spans;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

/// Answers the exports of one connection (kept alive) until it closes.
fn serve_exports(stream: std::net::TcpStream, spans: &Mutex<Vec<Received>>) {
    let mut reader = BufReader::new(stream.try_clone().unwrap());
    let mut writer = stream;
    loop {
        let mut request_line = String::new();
        if reader.read_line(&mut request_line).unwrap_or(0) == 0 {
            return;
        }
        let mut length = 0;
        loop {
            let mut line = String::new();
            reader.read_line(&mut line).unwrap();
            if line == "\r\n" || line.is_empty() {
                break;
            }
            if let Some((name, value)) = line.split_once(':')
                && name.eq_ignore_ascii_case("content-length")
            {
                length = value.trim().parse().unwrap();
            }
        }
        let mut body = vec![0; length];
        reader.read_exact(&mut body).unwrap();
        assert!(
            request_line.starts_with("POST /v1/traces "),
            "{request_line}"
        );
        let export = ExportTraceServiceRequest::decode(body.as_slice()).unwrap();
        for resource_spans in export.resource_spans {
            let service = resource_spans
                .resource
                .iter()
                .flat_map(|resource| &resource.attributes)
                .find(|attribute| attribute.key == "service.name")
                .map(|attribute| text(attribute.value.as_ref()))
                .unwrap_or_default();
            for scope_spans in resource_spans.scope_spans {
                for span in scope_spans.spans {
                    spans.lock().unwrap().push(Received {
                        name: span.name.clone(),
                        kind: span.kind(),
                        trace_id: hex(&span.trace_id),
                        span_id: hex(&span.span_id),
                        parent_span_id: hex(&span.parent_span_id),
                        attributes: span
                            .attributes
                            .iter()
                            .map(|kv| (kv.key.clone(), text(kv.value.as_ref())))
                            .collect(),
                        service: service.clone(),
                    });
                }
            }
        }
        let answer =
            "HTTP/1.1 200 OK\r\ncontent-type: application/x-protobuf\r\ncontent-length: 0\r\n\r\n";
        if writer.write_all(answer.as_bytes()).is_err() {
            return;
        }
    }
}

fn text(value: Option<&opentelemetry_proto::tonic::common::v1::AnyValue>) -> String {
    match value.and_then(|value| value.value.as_ref()) {
        Some(AnyValue::StringValue(text)) => text.clone(),
        Some(AnyValue::IntValue(number)) => number.to_string(),
        Some(AnyValue::BoolValue(flag)) => flag.to_string(),
        Some(AnyValue::DoubleValue(number)) => number.to_string(),
        _ => String::new(),
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|byte| format!("{byte:02x}")).collect()
}

fn write_config(dir: &Path, collector: &Collector) {
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/meta_server.py");
    let python = peers().venv_bin.join("python");
    std::fs::write(
        dir.join("toolgate.toml"),
        format!(
            "[telemetry]\notlp_endpoint = {:?}\nservice_name = \"gateway-under-test\"\n\n\
             [[upstream]]\nname = \"meta\"\ncommand = {:?}\nargs = [{:?}]\n\
             description = \"Echoes a request's _meta\"\n",
            collector.url,
            python.display().to_string(),
            fixture.display().to_string(),
        ),
    )
    .unwrap();
}

const TRACE_ID: &str = "4bf92f3577b34da6a3ce929d0e0e4736";
const PARENT_ID: &str = "00f067aa0ba902b7";

fn call(
    gateway: &mut StdioGateway,
    id: u64,
    tool: &str,
    arguments: serde_json::Value,
) -> serde_json::Value {
    let traceparent = format!("00-{TRACE_ID}-{PARENT_ID}-01");
    let answer = gateway.request(
        id,
        "tools/call",
        json!({"name": tool, "arguments": arguments, "_meta": {"traceparent": traceparent}}),
    );
    assert_ne!(answer["result"]["isError"], true, "{answer}");
    answer
}

#[test]
fn spans_of_requests_tool_calls_and_upstream_calls_reach_the_collector() {
    let collector = Collector::start();
    let dir = tempfile::tempdir().unwrap();
    write_config(dir.path(), &collector);
    write_mathx(dir.path());
    let mut gateway = StdioGateway::start(dir.path(), &["--no-builtins"]);
    gateway.request(
        1,
        "initialize",
        json!({"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}),
    );
    gateway.send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
    call(
        &mut gateway,
        2,
        "load_tool_group",
        json!({"group_name": "meta"}),
    );
    let echoed = call(&mut gateway, 3, "echo_meta", json!({}));
    call(
        &mut gateway,
        4,
        "load_tool_group",
        json!({"group_name": "mathx"}),
    );
    call(&mut gateway, 5, "mathx_add", json!({"a": 1, "b": 2}));
    // Closing the session ends the gateway, which exports what is left.
    assert!(gateway.close().success());

    let spans = collector.trace(TRACE_ID, 9);
    let find = |name: &str, kind: SpanKind| {
        spans
            .iter()
            .find(|span| span.name == name && span.kind == kind)
            .unwrap_or_else(|| panic!("no {kind:?} span '{name}' in {spans:#?}"))
    };
    let server = find("tools/call echo_meta", SpanKind::Server);
    assert_eq!(
        server.parent_span_id, PARENT_ID,
        "the client's traceparent is the parent"
    );
    assert_eq!(server.attributes["mcp.method.name"], "tools/call");
    assert_eq!(server.attributes["gen_ai.tool.name"], "echo_meta");
    assert_eq!(server.attributes["network.transport"], "pipe");
    assert_eq!(server.attributes["jsonrpc.request.id"], "3");
    assert_eq!(server.service, "gateway-under-test");

    let execute = find("execute_tool echo_meta", SpanKind::Internal);
    assert_eq!(execute.parent_span_id, server.span_id);
    assert_eq!(execute.attributes["gen_ai.operation.name"], "execute_tool");
    assert_eq!(execute.attributes["toolgate.tool.source"], "upstream");
    assert_eq!(execute.attributes["toolgate.group"], "meta");

    let upstream = find("tools/call echo_meta", SpanKind::Client);
    assert_eq!(upstream.parent_span_id, execute.span_id);
    assert_eq!(upstream.attributes["toolgate.upstream"], "meta");
    // The upstream received the client span's context in its `_meta`.
    let meta: serde_json::Value =
        serde_json::from_str(echoed["result"]["content"][0]["text"].as_str().unwrap()).unwrap();
    assert_eq!(
        meta["traceparent"],
        format!("00-{TRACE_ID}-{}-01", upstream.span_id),
        "{meta}"
    );

    let javascript = find("execute_tool mathx_add", SpanKind::Internal);
    assert_eq!(javascript.attributes["toolgate.tool.source"], "javascript");
    let load = find("execute_tool load_tool_group", SpanKind::Internal);
    assert_eq!(load.attributes["toolgate.tool.source"], "gateway");
}
