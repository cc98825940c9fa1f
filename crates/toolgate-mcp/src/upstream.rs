//! One upstream MCP server: started on first use (or at start-up when eager),
//! called with a timeout and the caller's cancellation, restarted with backoff
//! after a crash, and re-listed when it says its tools changed.
//!
//! It is a [`ListedSource`](toolgate_tools::ListedSource) of the tool
//! runtime: the toolbox lists it into the catalog and routes its tools'
//! calls here, whether they come from an MCP client of the gateway or from
//! the agent loop. A failure here belongs to this upstream only: it becomes
//! an [`UpstreamError`] for its own loads and calls, never a gateway failure.
//!
//! Under `upstream/`: its connection's states, how one is made and how
//! restarts are paced (`connection.rs`), the client side of a connection
//! (`client.rs`), and what it says of itself: [`UpstreamError`]
//! (`error.rs`) and [`UpstreamHealth`] (`health.rs`).

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

use opentelemetry::context::FutureExt as _;
use rmcp::model::{
    CallToolRequest, CallToolRequestParams, CallToolResult, CancelledNotificationParam,
    ClientRequest, JsonObject, ServerResult,
};
use rmcp::service::PeerRequestOptions;
use rmcp::{Peer, RoleClient};
use tokio::sync::{Mutex, mpsc};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;
use toolgate_core::GroupId;
use toolgate_store::ConversationId;
use toolgate_tools::{ListedGroup, SourceChange, SourceListing, Step};

use self::client::{Changes, UpstreamClient};
use self::connection::{Connection, Failure, HEALTHY_AFTER, Running, Service, backoff, connect};
use crate::config::{UpstreamConfig, UpstreamTransport, redact};
use crate::convert::source_tool;
use crate::relay::{InFlight, RelayEvent};
use crate::stdio_child::MAX_MESSAGE_BYTES;
use crate::telemetry::{self, Transport};

mod cause;
mod client;
mod connection;
mod error;
mod health;

pub use error::UpstreamError;
pub use health::UpstreamHealth;

/// Times a finished call yields before it stops hearing its upstream's
/// notifications (see [`Upstream::call_tool`]).
const NOTIFICATION_YIELDS: usize = 8;

/// How long, at most, a removed or changed upstream lets the calls under
/// way finish before it stops (its own call timeout when shorter).
const RETIRE_GRACE: Duration = Duration::from_secs(30);

/// One configured upstream and its connection.
#[derive(Debug)]
pub struct Upstream {
    config: UpstreamConfig,
    /// Its group, as the toolbox lists it.
    group: ListedGroup,
    connection: Mutex<Connection>,
    in_flight: InFlight,
    changes: Arc<Changes>,
    /// Times the server exited and was (or is being) started again.
    restarts: Arc<AtomicU64>,
    /// A reload removed or changed it: calls under way finish, new ones
    /// are refused.
    retiring: AtomicBool,
}

impl Upstream {
    /// An upstream not started yet.
    pub fn new(config: UpstreamConfig) -> Self {
        let group = ListedGroup {
            id: config.name.clone(),
            description: config.description.clone(),
            startup: config.startup,
            visibility: config.visibility,
        };
        Self {
            config,
            group,
            connection: Mutex::new(Connection::Idle { generation: 0 }),
            in_flight: InFlight::default(),
            changes: Arc::default(),
            restarts: Arc::default(),
            retiring: AtomicBool::new(false),
        }
    }

    /// Times the server exited and was started again, as it counts them.
    pub(crate) fn restarts(&self) -> Arc<AtomicU64> {
        Arc::clone(&self.restarts)
    }

    /// How the upstream is doing, without waiting or starting anything.
    pub fn health(&self) -> UpstreamHealth {
        let Ok(connection) = self.connection.try_lock() else {
            return UpstreamHealth::Busy;
        };
        match &*connection {
            Connection::Idle { .. } => UpstreamHealth::Idle,
            Connection::Closed => UpstreamHealth::Closed,
            Connection::Running(running) if running.service.is_transport_closed() => {
                UpstreamHealth::Exited
            }
            Connection::Running(running) => UpstreamHealth::Running {
                uptime: running.started.elapsed(),
            },
            Connection::Failed(failure) => UpstreamHealth::Failed {
                reason: failure.reason.clone(),
                retry_in: failure.retry_at.saturating_duration_since(Instant::now()),
            },
        }
    }

    /// The running connection's peer, without starting anything.
    pub(crate) async fn running_peer(&self) -> Option<Peer<RoleClient>> {
        match &*self.connection.lock().await {
            Connection::Running(running) if !running.service.is_transport_closed() => {
                Some(running.service.peer().clone())
            }
            Connection::Running(_)
            | Connection::Idle { .. }
            | Connection::Failed(_)
            | Connection::Closed => None,
        }
    }

    /// Its configuration.
    pub fn config(&self) -> &UpstreamConfig {
        &self.config
    }

    /// Its group, as the toolbox lists it.
    pub(crate) fn listed_group(&self) -> &ListedGroup {
        &self.group
    }

    /// Waits until the server announces that its tools changed, or the
    /// upstream is closed.
    pub(crate) async fn wait_for_change(&self) -> SourceChange {
        if !self.changes.closed.load(Ordering::SeqCst) {
            self.changes.notify.notified().await;
        }
        if self.changes.closed.load(Ordering::SeqCst) {
            SourceChange::Closed
        } else {
            SourceChange::ToolsChanged
        }
    }

    /// Its name (and group id).
    pub fn name(&self) -> &GroupId {
        &self.config.name
    }

    /// Starts it if needed and lists its tools, with what it says of itself
    /// (its instructions, else its name).
    pub(crate) async fn list_tools(&self) -> Result<SourceListing, UpstreamError> {
        let (peer, generation) = self.peer().await?;
        let tools = tokio::time::timeout(self.config.startup_timeout, peer.list_all_tools())
            .await
            .map_err(|_| self.failed("tools/list", "no answer in time".into()))?
            .map_err(|error| self.failed("tools/list", error.to_string()))?;
        let info = peer.peer_info();
        let instructions = info.as_ref().and_then(|info| info.instructions.clone());
        let server_name = info
            .as_ref()
            .and_then(|info| info.server_info.as_ref())
            .map(|implementation| implementation.name.clone());
        Ok(SourceListing {
            tools: tools.iter().map(source_tool).collect(),
            about: instructions.or(server_name),
            generation,
        })
    }

    /// The generation of the running connection, if one runs.
    pub(crate) async fn connection_generation(&self) -> Option<u64> {
        match &*self.connection.lock().await {
            Connection::Running(running) if !running.service.is_transport_closed() => {
                Some(running.generation)
            }
            Connection::Running(_)
            | Connection::Idle { .. }
            | Connection::Failed(_)
            | Connection::Closed => None,
        }
    }

    /// Calls `tool` (its upstream name) with the per-call timeout; cancelling
    /// `cancel` cancels the upstream request too. What the upstream sends
    /// during the call goes to `relay`; `session` is the calling session,
    /// which decides where the upstream's requests may go.
    pub(crate) async fn call_tool(
        &self,
        tool: &str,
        arguments: JsonObject,
        cancel: &CancellationToken,
        session: Option<ConversationId>,
        relay: mpsc::Sender<RelayEvent>,
    ) -> Result<CallToolResult, UpstreamError> {
        let mut params = CallToolRequestParams::new(tool.to_owned()).with_arguments(arguments);
        let transport = match self.config.transport {
            UpstreamTransport::Stdio { .. } => Transport::Pipe,
            UpstreamTransport::Http { .. } => Transport::Tcp,
        };
        let mut meta = JsonObject::new();
        let Some(span) =
            telemetry::upstream_call_span(self.config.name.as_str(), tool, transport, &mut meta)
        else {
            return self.send_call(tool, params, cancel, session, relay).await;
        };
        params.meta = Some(meta.into());
        let result = self
            .send_call(tool, params, cancel, session, relay)
            .with_context(span.context())
            .await;
        span.end(match &result {
            Ok(result) if result.is_error == Some(true) => Some("tool_error".into()),
            Ok(_) => None,
            Err(error) => Some(error.kind().into()),
        });
        result
    }

    /// Sends a `tools/call` and waits for its answer; see [`Self::call_tool`].
    async fn send_call(
        &self,
        tool: &str,
        params: CallToolRequestParams,
        cancel: &CancellationToken,
        session: Option<ConversationId>,
        relay: mpsc::Sender<RelayEvent>,
    ) -> Result<CallToolResult, UpstreamError> {
        if self.retiring.load(Ordering::SeqCst) {
            return Err(self.failed(tool, self.stopped_reason().into()));
        }
        let (peer, _) = self.peer().await?;
        let request = ClientRequest::CallToolRequest(CallToolRequest::new(params));
        // Known before it is sent: the server may ask its client something
        // for this call before `send_request` even returns.
        let (in_flight, too_large) = self.in_flight.register(session, relay);
        let handle = peer
            .send_request_with_option(request, PeerRequestOptions::no_options())
            .await
            .map_err(|error| self.failed(tool, error.to_string()))?;
        in_flight.sent(handle.id.clone(), handle.progress_token.clone());
        let request_id = handle.id.clone();
        let cancelled = |reason: &str| {
            CancelledNotificationParam::new(Some(request_id.clone()), Some(reason.to_owned()))
        };
        let response = tokio::time::timeout(self.config.call_timeout, handle.await_response());
        let outcome = tokio::select! {
            outcome = response => outcome,
            () = cancel.cancelled() => {
                let _ = peer.notify_cancelled(cancelled("cancelled by the client")).await;
                return Err(UpstreamError::Cancelled { tool: tool.to_owned() });
            }
            Ok(bytes) = too_large => {
                let _ = peer.notify_cancelled(cancelled("answer too large")).await;
                return Err(UpstreamError::TooLarge {
                    upstream: self.config.name.clone(),
                    tool: tool.to_owned(),
                    bytes,
                    limit: MAX_MESSAGE_BYTES,
                });
            }
        };
        // rmcp handles each notification on a task of its own, so a log or
        // progress message the server sent just before its result may not
        // have reached this call yet: let those tasks run while the call is
        // still registered.
        for _ in 0..NOTIFICATION_YIELDS {
            tokio::task::yield_now().await;
        }
        match outcome {
            Err(_) => {
                let _ = peer.notify_cancelled(cancelled("gateway timeout")).await;
                Err(UpstreamError::Timeout {
                    upstream: self.config.name.clone(),
                    tool: tool.to_owned(),
                    timeout: self.config.call_timeout,
                })
            }
            Ok(Ok(ServerResult::CallToolResult(result))) => {
                self.mark_healthy().await;
                Ok(result)
            }
            Ok(Ok(_)) => Err(self.failed(
                tool,
                "the server answered with something other than a tool result (client input or a task), which the gateway does not relay"
                    .into(),
            )),
            Ok(Err(error)) => Err(self.failed(tool, error.to_string())),
        }
    }

    /// Stops for good once the calls under way have finished (at most
    /// [`RETIRE_GRACE`], or the call timeout when shorter), refusing new
    /// ones meanwhile: what a reload that removes or changes it does.
    pub(crate) async fn drain_and_close(&self) {
        self.retiring.store(true, Ordering::SeqCst);
        let grace = self.config.call_timeout.min(RETIRE_GRACE);
        if tokio::time::timeout(grace, self.in_flight.drained())
            .await
            .is_err()
        {
            tracing::warn!(
                upstream = %self.config.name,
                grace_seconds = grace.as_secs_f64(),
                "calls still under way are cancelled: the upstream stops after its grace period"
            );
        }
        self.close().await;
    }

    /// Stops the connection, if any, for good.
    pub(crate) async fn close(&self) {
        self.changes.closed.store(true, Ordering::SeqCst);
        self.changes.notify.notify_one();
        let mut connection = self.connection.lock().await;
        if let Connection::Running(running) =
            std::mem::replace(&mut *connection, Connection::Closed)
        {
            let _ = running.service.cancel().await;
        }
    }

    /// Stops a running connection; the next use starts it again.
    pub(crate) async fn stop_connection(&self) {
        let mut connection = self.connection.lock().await;
        if let Connection::Running(running) = &*connection {
            let generation = running.generation;
            if let Connection::Running(running) =
                std::mem::replace(&mut *connection, Connection::Idle { generation })
            {
                let _ = running.service.cancel().await;
            }
        }
    }

    /// The running connection's peer, starting (or restarting) it first.
    async fn peer(&self) -> Result<(Peer<RoleClient>, u64), UpstreamError> {
        let mut connection = self.connection.lock().await;
        if let Connection::Running(running) = &*connection
            && !running.service.is_transport_closed()
        {
            return Ok((running.service.peer().clone(), running.generation));
        }
        // Not running: a crash, an earlier failure, or never started.
        let (failures, generation) = match &*connection {
            Connection::Idle { generation } => (0, *generation),
            Connection::Closed => {
                return Err(self.failed("start", self.stopped_reason().into()));
            }
            Connection::Running(running) => {
                let healthy = running.started.elapsed() >= HEALTHY_AFTER;
                let failures = if healthy { 1 } else { running.failures + 1 };
                let generation = running.generation;
                let wait = backoff(failures);
                tracing::warn!(upstream = %self.config.name, "MCP server exited; restarting");
                self.restarts.fetch_add(1, Ordering::Relaxed);
                if !wait.is_zero() {
                    let reason = "the server exited again soon after a restart".to_owned();
                    *connection = Connection::Failed(Failure {
                        reason: reason.clone(),
                        retry_at: Instant::now() + wait,
                        failures,
                        generation,
                    });
                    return Err(UpstreamError::BackingOff {
                        upstream: self.config.name.clone(),
                        reason,
                        retry_in: wait,
                    });
                }
                (failures, generation)
            }
            Connection::Failed(failure) => {
                let now = Instant::now();
                if failure.retry_at > now {
                    return Err(UpstreamError::BackingOff {
                        upstream: self.config.name.clone(),
                        reason: failure.reason.clone(),
                        retry_in: failure.retry_at - now,
                    });
                }
                (failure.failures, failure.generation)
            }
        };
        let generation = generation + 1;
        // A start that fails again after failing is not warned of again:
        // one warning per failure, however often it is retried.
        let failing = matches!(&*connection, Connection::Failed(_));
        match self.start().await {
            Ok(service) => {
                let peer = service.peer().clone();
                *connection = Connection::Running(Running {
                    service,
                    started: Instant::now(),
                    generation,
                    failures,
                });
                Ok((peer, generation))
            }
            Err(reason) => {
                if failing {
                    tracing::debug!(upstream = %self.config.name, %reason, "MCP server failed to start again");
                } else {
                    tracing::warn!(upstream = %self.config.name, "MCP server failed to start: {reason}");
                }
                let failures = failures + 1;
                *connection = Connection::Failed(Failure {
                    reason: reason.clone(),
                    // A failed start waits at least a second: retrying a
                    // missing command at once would only fail again.
                    retry_at: Instant::now() + backoff(failures + 1),
                    failures,
                    generation,
                });
                Err(UpstreamError::Start {
                    upstream: self.config.name.clone(),
                    reason,
                })
            }
        }
    }

    /// Starts the server, telling the configuration's progress.
    async fn start(&self) -> Result<Service, String> {
        let progress = self.config.progress.as_ref();
        let source = &self.config.name;
        if let Some(progress) = progress {
            progress.report(Step::Starting { source });
        }
        let client = UpstreamClient {
            changes: Arc::clone(&self.changes),
            in_flight: self.in_flight.clone(),
        };
        let started = connect(&self.config, client, &self.in_flight).await;
        if let Some(progress) = progress {
            progress.report(Step::Started { source });
        }
        started
    }

    async fn mark_healthy(&self) {
        if let Connection::Running(running) = &mut *self.connection.lock().await {
            running.failures = 0;
        }
    }

    /// Why a stopped (or stopping) upstream takes no call.
    fn stopped_reason(&self) -> &'static str {
        if self.retiring.load(Ordering::SeqCst) {
            "a reload of the configuration removed or changed it"
        } else {
            "the gateway is shutting down"
        }
    }

    fn failed(&self, operation: &str, reason: String) -> UpstreamError {
        UpstreamError::Failed {
            upstream: self.config.name.clone(),
            operation: operation.to_owned(),
            reason: redact(&reason, &self.config.transport.secrets()),
        }
    }
}

/// Each upstream's name and restart counter, for `/metrics`.
pub(crate) fn restart_counts(upstreams: &[Arc<Upstream>]) -> Vec<(String, Arc<AtomicU64>)> {
    upstreams
        .iter()
        .map(|upstream| (upstream.name().to_string(), upstream.restarts()))
        .collect()
}
