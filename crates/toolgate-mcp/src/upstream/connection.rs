//! An upstream's connection: its states (idle, running, failed, closed),
//! how it is made (a child process on stdio, or streamable HTTP), and how
//! restarts after failures are paced.

use std::collections::HashMap;
use std::time::Duration;

use http::{HeaderName, HeaderValue};
use rmcp::service::RunningService;
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::{RoleClient, ServiceExt};
use tokio::time::Instant;

use super::cause::{self, Endpoint};
use super::client::UpstreamClient;
use crate::config::{UpstreamConfig, UpstreamTransport, redact, upstream_env};
use crate::relay::InFlight;
use crate::stdio_child::{StderrTail, StdioChild};

/// Longest wait before another start attempt after repeated failures.
const MAX_BACKOFF: Duration = Duration::from_secs(30);
/// A connection that lived this long resets the failure count.
pub(super) const HEALTHY_AFTER: Duration = Duration::from_secs(60);

/// A running connection to the server.
pub(super) type Service = RunningService<RoleClient, UpstreamClient>;

/// Where an upstream's connection stands. Each start makes a new
/// generation, so a listing knows which connection it came from.
#[derive(Debug)]
pub(super) enum Connection {
    /// Not started, or stopped until its next use.
    Idle { generation: u64 },
    /// Shut down with the gateway: never started again.
    Closed,
    /// Connected (its server may have exited since).
    Running(Running),
    /// Its last start failed; the next waits.
    Failed(Failure),
}

/// A connection made: since when, its generation, and the failures in a
/// row before it.
#[derive(Debug)]
pub(super) struct Running {
    pub(super) service: Service,
    pub(super) started: Instant,
    pub(super) generation: u64,
    pub(super) failures: u32,
}

/// A failed start: why, when the next may be tried, and the failures in
/// a row.
#[derive(Debug)]
pub(super) struct Failure {
    pub(super) reason: String,
    pub(super) retry_at: Instant,
    pub(super) failures: u32,
    pub(super) generation: u64,
}

/// Spawns or connects to the server `config` names and completes the
/// handshake, with `client` as its client; `in_flight` hears of a stdio
/// server's messages too large to relay. A failed start says why, ending
/// with what a stdio server wrote on stderr, its credentials redacted.
pub(super) async fn connect(
    config: &UpstreamConfig,
    client: UpstreamClient,
    in_flight: &InFlight,
) -> Result<Service, String> {
    // What a stdio server writes on stderr ends the error of a failed
    // start: often the only place the real cause is.
    let stderr = StderrTail::default();
    let started = async {
        match &config.transport {
            UpstreamTransport::Stdio {
                command,
                args,
                env,
                inherit_env,
                cwd,
            } => {
                let mut process = tokio::process::Command::new(command);
                // Variables that are not Unicode are not passed on.
                let gateway_env = std::env::vars_os().filter_map(|(name, value)| {
                    Some((name.into_string().ok()?, value.into_string().ok()?))
                });
                let env = upstream_env(gateway_env, inherit_env, env);
                process.args(args).env_clear().envs(env);
                if let Some(cwd) = cwd {
                    if !cwd.is_dir() {
                        return Err(format!(
                            "its working directory `{}` is not a directory that exists",
                            cwd.display()
                        ));
                    }
                    process.current_dir(cwd);
                }
                let transport =
                    StdioChild::spawn(process, in_flight.clone(), config.name.as_str(), &stderr)
                        .map_err(|error| cause::not_run(command, &error))?;
                client
                    .serve(transport)
                    .await
                    .map_err(|error| cause::no_handshake(Endpoint::Command(command), &error))
            }
            UpstreamTransport::Http { url, headers } => {
                let mut custom = HashMap::new();
                for (name, value) in headers {
                    let name = HeaderName::try_from(name.as_str())
                        .map_err(|error| format!("header `{name}`: {error}"))?;
                    let value = HeaderValue::try_from(value.as_str())
                        .map_err(|error| format!("header `{name}`: {error}"))?;
                    custom.insert(name, value);
                }
                let config = StreamableHttpClientTransportConfig::with_uri(url.as_str())
                    .custom_headers(custom);
                let transport = StreamableHttpClientTransport::from_config(config);
                client
                    .serve(transport)
                    .await
                    .map_err(|error| cause::no_handshake(Endpoint::Url(url), &error))
            }
        }
    };
    let reason = match tokio::time::timeout(config.startup_timeout, started).await {
        Ok(Ok(service)) => return Ok(service),
        Ok(Err(reason)) => reason,
        Err(_) => {
            let endpoint = match &config.transport {
                UpstreamTransport::Stdio { command, .. } => Endpoint::Command(command),
                UpstreamTransport::Http { url, .. } => Endpoint::Url(url),
            };
            cause::no_answer(endpoint, config.startup_timeout)
        }
    };
    let reason = stderr.explain(reason).await;
    Err(redact(&reason, &config.transport.secrets()))
}

/// No wait before the first retry, then 1 s doubling up to [`MAX_BACKOFF`].
pub(super) fn backoff(failures: u32) -> Duration {
    match failures {
        0 | 1 => Duration::ZERO,
        n => Duration::from_secs(1u64 << (n - 2).min(5)).min(MAX_BACKOFF),
    }
}

#[cfg(test)]
#[path = "connection_tests.rs"]
mod tests;
