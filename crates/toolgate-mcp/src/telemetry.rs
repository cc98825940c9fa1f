//! OpenTelemetry spans, named and attributed after the semantic conventions
//! for MCP and GenAI: a server span per MCP request (`tools/call time_now`),
//! an internal span per tool call (`execute_tool time_now`), and a client
//! span per request to an upstream, whose trace context goes along in the
//! request's `_meta`. A request's own `_meta` (`traceparent`,
//! `tracestate`) is the parent.
//!
//! Spans go to OpenTelemetry's global tracer provider through its global
//! propagator, which the application installs (the `toolgate` binary does
//! when an OTLP endpoint is configured), and only once [`enable`] is
//! called: until then no span is made, at the cost of one atomic load.

use std::borrow::Cow;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicBool, Ordering};

use opentelemetry::global::{self, BoxedSpan, BoxedTracer};
use opentelemetry::propagation::{Extractor, Injector};
use opentelemetry::trace::{SpanKind, Status, TraceContextExt as _, Tracer as _};
use opentelemetry::{Context, KeyValue};
use rmcp::model::JsonObject;
use toolgate_core::Origin;

/// The instrumentation scope of toolgate's spans.
pub const INSTRUMENTATION_SCOPE: &str = "toolgate";

/// The tracer of the global provider, taken when spans are first enabled.
static TRACER: OnceLock<BoxedTracer> = OnceLock::new();

static ENABLED: AtomicBool = AtomicBool::new(false);

/// Makes spans from now on, through the global tracer provider as it is
/// the first time: install the provider first.
pub fn enable() {
    TRACER.get_or_init(|| global::tracer(INSTRUMENTATION_SCOPE));
    ENABLED.store(true, Ordering::Relaxed);
}

/// Makes no span from now on.
pub fn disable() {
    ENABLED.store(false, Ordering::Relaxed);
}

/// Whether spans are made.
pub fn enabled() -> bool {
    ENABLED.load(Ordering::Relaxed)
}

/// How a request reached the gateway or an upstream
/// (`network.transport`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Transport {
    /// stdio.
    Pipe,
    /// HTTP.
    Tcp,
}

impl Transport {
    fn label(self) -> &'static str {
        match self {
            Self::Pipe => "pipe",
            Self::Tcp => "tcp",
        }
    }
}

/// A span in progress, in the context it makes current.
#[derive(Debug)]
pub(crate) struct Traced {
    context: Context,
}

impl Traced {
    /// The context to run the traced work in.
    pub(crate) fn context(&self) -> Context {
        self.context.clone()
    }

    /// Ends the span; `error` is its `error.type` when the work failed.
    pub(crate) fn end(self, error: Option<Cow<'static, str>>) {
        let span = self.context.span();
        if let Some(error) = error {
            span.set_status(Status::error(error.clone()));
            span.set_attribute(KeyValue::new("error.type", error));
        }
        span.end();
    }
}

/// An MCP request as it arrived.
#[derive(Debug)]
pub(crate) struct Request<'a> {
    /// `mcp.method.name`.
    pub(crate) method: &'static str,
    /// What the request is about: a tool's, prompt's or resource's name.
    pub(crate) target: Option<&'a str>,
    /// The request's `_meta`, which may carry the caller's trace context.
    pub(crate) meta: &'a JsonObject,
    pub(crate) request_id: String,
    pub(crate) session: Option<&'a str>,
    pub(crate) transport: Transport,
}

/// A server span for `request`, child of the trace context in its
/// `_meta`; `None` while spans are off.
pub(crate) fn request_span(request: Request<'_>) -> Option<Traced> {
    if !enabled() {
        return None;
    }
    let parent = global::get_text_map_propagator(|propagator| {
        propagator.extract_with_context(&Context::new(), &MetaFields(request.meta))
    });
    let name = match request.target {
        Some(target) => format!("{} {target}", request.method),
        None => request.method.to_owned(),
    };
    let mut attributes = vec![
        KeyValue::new("mcp.method.name", request.method),
        KeyValue::new("jsonrpc.request.id", request.request_id),
        KeyValue::new("network.transport", request.transport.label()),
    ];
    if let Some(session) = request.session {
        attributes.push(KeyValue::new("mcp.session.id", session.to_owned()));
    }
    match (request.method, request.target) {
        ("tools/call", Some(tool)) => {
            attributes.push(KeyValue::new("gen_ai.tool.name", tool.to_owned()));
            attributes.push(KeyValue::new("gen_ai.operation.name", "execute_tool"));
        }
        ("prompts/get", Some(prompt)) => {
            attributes.push(KeyValue::new("gen_ai.prompt.name", prompt.to_owned()));
        }
        ("resources/read" | "resources/subscribe" | "resources/unsubscribe", Some(uri)) => {
            attributes.push(KeyValue::new("mcp.resource.uri", uri.to_owned()));
        }
        _ => {}
    }
    Some(start(name, SpanKind::Server, attributes, &parent))
}

/// A tool call inside the gateway: `tool` as called, its group and where
/// it runs.
pub(crate) fn tool_span(
    tool: &str,
    group: Option<&str>,
    origin: Option<&Origin>,
) -> Option<Traced> {
    if !enabled() {
        return None;
    }
    let (source, tool_type) = match origin {
        Some(Origin::MetaTool) => ("gateway", "function"),
        Some(Origin::Builtin) => ("builtin", "function"),
        Some(Origin::Upstream { .. }) => ("upstream", "extension"),
        Some(Origin::Manifest { .. }) => ("javascript", "function"),
        Some(Origin::Import { .. }) => ("import", "function"),
        Some(_) | None => ("unknown", "function"),
    };
    let mut attributes = vec![
        KeyValue::new("gen_ai.operation.name", "execute_tool"),
        KeyValue::new("gen_ai.tool.name", tool.to_owned()),
        KeyValue::new("gen_ai.tool.type", tool_type),
        KeyValue::new("toolgate.tool.source", source),
    ];
    if let Some(group) = group {
        attributes.push(KeyValue::new("toolgate.group", group.to_owned()));
    }
    if let Some(Origin::Upstream { server }) = origin {
        attributes.push(KeyValue::new("toolgate.upstream", server.clone()));
    }
    Some(start(
        format!("execute_tool {tool}"),
        SpanKind::Internal,
        attributes,
        &Context::current(),
    ))
}

/// A `tools/call` to upstream `server`, its trace context written into
/// `meta` (the outgoing request's `_meta`).
pub(crate) fn upstream_call_span(
    server: &str,
    tool: &str,
    transport: Transport,
    meta: &mut JsonObject,
) -> Option<Traced> {
    if !enabled() {
        return None;
    }
    let attributes = vec![
        KeyValue::new("mcp.method.name", "tools/call"),
        KeyValue::new("gen_ai.operation.name", "execute_tool"),
        KeyValue::new("gen_ai.tool.name", tool.to_owned()),
        KeyValue::new("network.transport", transport.label()),
        KeyValue::new("toolgate.upstream", server.to_owned()),
    ];
    let traced = start(
        format!("tools/call {tool}"),
        SpanKind::Client,
        attributes,
        &Context::current(),
    );
    global::get_text_map_propagator(|propagator| {
        propagator.inject_context(&traced.context, &mut MetaFieldsMut(meta));
    });
    Some(traced)
}

fn start(name: String, kind: SpanKind, attributes: Vec<KeyValue>, parent: &Context) -> Traced {
    let tracer = TRACER.get_or_init(|| global::tracer(INSTRUMENTATION_SCOPE));
    let span: BoxedSpan = tracer
        .span_builder(name)
        .with_kind(kind)
        .with_attributes(attributes)
        .start_with_context(tracer, parent);
    Traced {
        context: parent.with_span(span),
    }
}

/// A request's `_meta` as a carrier of trace context.
struct MetaFields<'a>(&'a JsonObject);

impl Extractor for MetaFields<'_> {
    fn get(&self, key: &str) -> Option<&str> {
        self.0.get(key).and_then(serde_json::Value::as_str)
    }

    fn keys(&self) -> Vec<&str> {
        self.0.keys().map(String::as_str).collect()
    }
}

struct MetaFieldsMut<'a>(&'a mut JsonObject);

impl Injector for MetaFieldsMut<'_> {
    fn set(&mut self, key: &str, value: String) {
        self.0.insert(key.to_owned(), value.into());
    }
}
