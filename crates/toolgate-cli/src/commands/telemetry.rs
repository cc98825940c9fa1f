//! OpenTelemetry for `toolgate serve`: when an OTLP endpoint is configured
//! (`[telemetry] otlp_endpoint`, or the standard `OTEL_EXPORTER_OTLP_*`
//! variables), the gateway's spans are batched and exported over OTLP/HTTP
//! (protobuf); W3C trace context in requests' `_meta` is their parent.
//! Without one, no span is made.

use std::collections::BTreeMap;
use std::time::Duration;

use anyhow::Context as _;
use opentelemetry::KeyValue;
use opentelemetry_otlp::{WithExportConfig as _, WithHttpConfig as _};
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::propagation::TraceContextPropagator;
use opentelemetry_sdk::trace::{Sampler, SdkTracerProvider};
use serde::Deserialize;

/// The environment variables that configure an OTLP endpoint on their own.
const ENDPOINT_VARIABLES: [&str; 2] = [
    "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
    "OTEL_EXPORTER_OTLP_ENDPOINT",
];

/// The path OTLP/HTTP takes spans at.
const TRACES_PATH: &str = "/v1/traces";

/// `[telemetry]`: where spans go.
#[derive(Clone, Debug, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct TelemetrySettings {
    /// The collector's OTLP/HTTP base URL (`http://collector:4318`); spans
    /// go to its `/v1/traces`.
    #[serde(default)]
    pub(crate) otlp_endpoint: Option<String>,
    /// Headers sent with each export (a collector's API key, say).
    #[serde(default)]
    pub(crate) headers: BTreeMap<String, String>,
    /// `service.name` of the spans (default `toolgate`).
    #[serde(default)]
    pub(crate) service_name: Option<String>,
    /// The share of traces recorded, 0 to 1, for traces the gateway starts;
    /// a request's `traceparent` decides for its own (default: all, or
    /// what `OTEL_TRACES_SAMPLER` says).
    #[serde(default)]
    pub(crate) sample_ratio: Option<f64>,
}

/// Spans being exported; [`Telemetry::shutdown`] sends what is left.
#[derive(Debug)]
pub(crate) struct Telemetry {
    provider: SdkTracerProvider,
    /// Where spans go, for the banner.
    pub(crate) endpoint: String,
}

impl Telemetry {
    /// Starts exporting when an endpoint is configured; `None` when not.
    pub(crate) fn start(settings: &TelemetrySettings) -> anyhow::Result<Option<Self>> {
        let from_environment = ENDPOINT_VARIABLES
            .iter()
            .find_map(|name| std::env::var(name).ok().filter(|value| !value.is_empty()));
        let mut builder = opentelemetry_otlp::SpanExporter::builder()
            .with_http()
            .with_protocol(opentelemetry_otlp::Protocol::HttpBinary)
            .with_timeout(Duration::from_secs(10));
        let endpoint = match (&settings.otlp_endpoint, from_environment) {
            (Some(base), _) => {
                let endpoint = traces_url(base);
                builder = builder.with_endpoint(endpoint.clone());
                endpoint
            }
            // The exporter reads the variables itself.
            (None, Some(variable)) => variable,
            (None, None) => return Ok(None),
        };
        if !settings.headers.is_empty() {
            builder = builder.with_headers(settings.headers.clone().into_iter().collect());
        }
        let exporter = builder
            .build()
            .with_context(|| format!("[telemetry] exporting spans to {endpoint}"))?;
        let service = settings.service_name.as_deref().unwrap_or("toolgate");
        let resource = Resource::builder()
            .with_service_name(service.to_owned())
            .with_attribute(KeyValue::new("service.version", env!("CARGO_PKG_VERSION")))
            .build();
        let mut provider = SdkTracerProvider::builder()
            .with_batch_exporter(exporter)
            .with_resource(resource);
        if let Some(ratio) = settings.sample_ratio {
            if !(0.0..=1.0).contains(&ratio) {
                anyhow::bail!("[telemetry] `sample_ratio` must be from 0 to 1, got {ratio}");
            }
            provider = provider.with_sampler(Sampler::ParentBased(Box::new(
                Sampler::TraceIdRatioBased(ratio),
            )));
        }
        let provider = provider.build();
        opentelemetry::global::set_tracer_provider(provider.clone());
        opentelemetry::global::set_text_map_propagator(TraceContextPropagator::new());
        toolgate_mcp::telemetry::enable();
        Ok(Some(Self { provider, endpoint }))
    }

    /// Exports the spans not sent yet, and stops.
    pub(crate) async fn shutdown(self) {
        let provider = self.provider;
        let ended = tokio::task::spawn_blocking(move || provider.shutdown()).await;
        if let Ok(Err(error)) = ended {
            tracing::warn!(%error, "the last spans were not exported");
        }
    }
}

/// The traces URL of an OTLP/HTTP base URL.
fn traces_url(base: &str) -> String {
    let base = base.trim_end_matches('/');
    if base.ends_with(TRACES_PATH) {
        base.to_owned()
    } else {
        format!("{base}{TRACES_PATH}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_traces_path_is_added_once() {
        assert_eq!(traces_url("http://c:4318"), "http://c:4318/v1/traces");
        assert_eq!(traces_url("http://c:4318/"), "http://c:4318/v1/traces");
        assert_eq!(
            traces_url("http://c:4318/v1/traces"),
            "http://c:4318/v1/traces"
        );
    }
}
