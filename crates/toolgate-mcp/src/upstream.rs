//! One upstream MCP server: started on first use (or at start-up when eager),
//! called with a timeout and the caller's cancellation, restarted with backoff
//! after a crash, and re-listed when it says its tools changed.
//!
//! It is a [`ListedSource`] of the tool runtime: the toolbox lists it into
//! the catalog and routes its tools' calls here, whether they come from an
//! MCP client of the gateway or from the agent loop. A failure here belongs
//! to this upstream only: it becomes an [`UpstreamError`] for its own loads
//! and calls, never a gateway failure.

#![allow(
    deprecated,
    reason = "sampling and logging are deprecated in MCP 2026-07-28 but relayed for 2025-11-25 servers"
)]

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

use http::{HeaderName, HeaderValue};
use opentelemetry::context::FutureExt as _;
use rmcp::model::{
    CallToolRequest, CallToolRequestParams, CallToolResult, CancelledNotificationParam,
    ClientCapabilities, ClientConfig, ClientRequest, CreateMessageRequestParams,
    CreateMessageResult, ElicitRequestParams, ElicitResult, Implementation, JsonObject,
    LoggingMessageNotificationParam, ProgressNotificationParam, ProtocolVersion, ServerResult,
};
use rmcp::service::{
    InboundStreamOrigin, NotificationContext, PeerRequestOptions, RequestContext, RunningService,
};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::{ClientHandler, ErrorData as McpError, Peer, RoleClient, ServiceExt};
use tokio::sync::{Mutex, Notify, mpsc, oneshot};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;
use toolgate_core::GroupId;
use toolgate_store::ConversationId;
use toolgate_tools::{ListedGroup, SourceChange, SourceListing, Step};

use crate::config::{UpstreamConfig, UpstreamTransport, redact, upstream_env};
use crate::convert::source_tool;
use crate::relay::{InFlight, RelayEvent};
use crate::stdio_child::{MAX_MESSAGE_BYTES, StderrTail, StdioChild};
use crate::telemetry::{self, Transport};

/// Times a finished call yields before it stops hearing its upstream's
/// notifications (see [`Upstream::call`]).
const NOTIFICATION_YIELDS: usize = 8;

/// Longest wait before another start attempt after repeated failures.
const MAX_BACKOFF: Duration = Duration::from_secs(30);
/// A connection that lived this long resets the failure count.
const HEALTHY_AFTER: Duration = Duration::from_secs(60);

/// How long, at most, a removed or changed upstream lets the calls under
/// way finish before it stops (its own call timeout when shorter).
const RETIRE_GRACE: Duration = Duration::from_secs(30);

/// Why an upstream could not serve a load or a call. `Display` is the text the
/// model reads: it names the upstream and the cause.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum UpstreamError {
    /// It could not be started or connected to.
    #[error("MCP server '{upstream}' failed to start: {reason}")]
    Start {
        /// The upstream.
        upstream: GroupId,
        /// The cause.
        reason: String,
    },
    /// It failed recently and the next attempt waits.
    #[error("MCP server '{upstream}' is unavailable: {reason}; it will be retried in {}s", retry_in.as_secs().max(1))]
    BackingOff {
        /// The upstream.
        upstream: GroupId,
        /// The last failure.
        reason: String,
        /// How long until the next attempt.
        retry_in: Duration,
    },
    /// The call took longer than the upstream's timeout and was cancelled.
    #[error("MCP server '{upstream}' did not answer '{tool}' within {}s; the call was cancelled", timeout.as_secs_f64())]
    Timeout {
        /// The upstream.
        upstream: GroupId,
        /// The tool called.
        tool: String,
        /// The limit.
        timeout: Duration,
    },
    /// The server's answer was larger than a message may be.
    #[error(
        "MCP server '{upstream}' answered '{tool}' with a message of {bytes} bytes, over the {limit}-byte limit of one message; the gateway dropped it and cancelled the call"
    )]
    TooLarge {
        /// The upstream.
        upstream: GroupId,
        /// The tool called.
        tool: String,
        /// The message's size.
        bytes: usize,
        /// The limit.
        limit: usize,
    },
    /// The caller cancelled; the upstream was told.
    #[error("the call to '{tool}' was cancelled")]
    Cancelled {
        /// The tool called.
        tool: String,
    },
    /// The connection broke, or the server answered with a protocol error.
    #[error("MCP server '{upstream}' failed on '{operation}': {reason}")]
    Failed {
        /// The upstream.
        upstream: GroupId,
        /// What was asked.
        operation: String,
        /// The cause.
        reason: String,
    },
}

impl UpstreamError {
    /// A short name of the kind of failure (a span's `error.type`).
    pub fn kind(&self) -> &'static str {
        match self {
            Self::Start { .. } => "start_failed",
            Self::BackingOff { .. } => "unavailable",
            Self::Timeout { .. } => "timeout",
            Self::TooLarge { .. } => "too_large",
            Self::Cancelled { .. } => "cancelled",
            Self::Failed { .. } => "failed",
        }
    }
}

/// How an upstream is doing.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum UpstreamHealth {
    /// Not started: lazy, and not used yet (or stopped until its next use).
    Idle,
    /// Being started or stopped right now.
    Busy,
    /// Connected.
    Running {
        /// Since it was started.
        uptime: Duration,
    },
    /// It exited; its next use starts it again.
    Exited,
    /// Its last start failed; the next use waits until `retry_in` has passed.
    Failed {
        /// Why it failed.
        reason: String,
        /// How long until it is tried again.
        retry_in: Duration,
    },
    /// Stopped for good, with the gateway.
    Closed,
}

impl UpstreamHealth {
    /// A word for it.
    pub fn label(&self) -> &'static str {
        match self {
            Self::Idle => "idle",
            Self::Busy => "starting",
            Self::Running { .. } => "running",
            Self::Exited => "exited",
            Self::Failed { .. } => "failed",
            Self::Closed => "closed",
        }
    }
}

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

/// What the upstream announced since the toolbox last asked.
#[derive(Debug, Default)]
struct Changes {
    /// Woken by `notifications/tools/list_changed` (and by shutdown).
    notify: Notify,
    /// Shut down for good.
    closed: AtomicBool,
}

type Service = RunningService<RoleClient, UpstreamClient>;

#[derive(Debug)]
enum Connection {
    Idle {
        generation: u64,
    },
    /// Shut down with the gateway: never started again.
    Closed,
    Running(Running),
    Failed(Failure),
}

#[derive(Debug)]
struct Running {
    service: Service,
    started: Instant,
    generation: u64,
    failures: u32,
}

#[derive(Debug)]
struct Failure {
    reason: String,
    retry_at: Instant,
    failures: u32,
    generation: u64,
}

/// The client side of one upstream connection: it reports `list_changed` to
/// the gateway and passes what belongs to a call on to that call's client.
#[derive(Clone, Debug)]
struct UpstreamClient {
    changes: Arc<Changes>,
    in_flight: InFlight,
}

impl UpstreamClient {
    /// Hands an upstream request to the call it belongs to and waits for
    /// the calling client's answer; see [`InFlight::caller_for`].
    async fn ask<T>(
        &self,
        context: &RequestContext<RoleClient>,
        make: impl FnOnce(oneshot::Sender<Result<T, McpError>>) -> RelayEvent,
        what: &str,
    ) -> Result<T, McpError> {
        let origin = context.extensions.get::<InboundStreamOrigin>();
        let caller = self.in_flight.caller_for(origin).map_err(|unroutable| {
            tracing::warn!(%what, ?unroutable, "upstream request not relayed");
            unroutable.into_error(what)
        })?;
        let gone = || McpError::internal_error("the calling client is gone", None);
        let (reply, answer) = oneshot::channel();
        caller.send(make(reply)).await.map_err(|_| gone())?;
        answer.await.map_err(|_| gone())?
    }
}

impl ClientHandler for UpstreamClient {
    async fn on_tool_list_changed(&self, _context: NotificationContext<RoleClient>) {
        self.changes.notify.notify_one();
    }

    async fn on_progress(
        &self,
        params: ProgressNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        if let Some(caller) = self.in_flight.by_token(&params.progress_token) {
            let _ = caller.send(RelayEvent::Progress(params)).await;
        }
    }

    async fn on_logging_message(
        &self,
        params: LoggingMessageNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        for caller in self.in_flight.all() {
            let _ = caller.send(RelayEvent::Log(params.clone())).await;
        }
    }

    async fn create_message(
        &self,
        params: CreateMessageRequestParams,
        context: RequestContext<RoleClient>,
    ) -> Result<CreateMessageResult, McpError> {
        self.ask(
            &context,
            |reply| RelayEvent::Sampling(params, reply),
            "sampling",
        )
        .await
    }

    async fn create_elicitation(
        &self,
        request: ElicitRequestParams,
        context: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, McpError> {
        self.ask(
            &context,
            |reply| RelayEvent::Elicitation(request, reply),
            "elicitation",
        )
        .await
    }

    fn get_info(&self) -> ClientConfig {
        // Sampling and elicitation are offered because they are relayed to
        // the calling client; one that lacks them answers with an error.
        let mut capabilities = ClientCapabilities::default();
        capabilities.sampling = Some(Default::default());
        capabilities.elicitation = Some(Default::default());
        ClientConfig::new(
            capabilities,
            Implementation::new("toolgate", env!("CARGO_PKG_VERSION")),
        )
        .with_protocol_version(ProtocolVersion::V_2025_11_25)
    }
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
        let started = self.connect().await;
        if let Some(progress) = progress {
            progress.report(Step::Started { source });
        }
        started
    }

    /// Spawns or connects to the server and completes the handshake.
    async fn connect(&self) -> Result<Service, String> {
        let client = UpstreamClient {
            changes: Arc::clone(&self.changes),
            in_flight: self.in_flight.clone(),
        };
        // What a stdio server writes on stderr ends the error of a failed
        // start: often the only place the real cause is.
        let stderr = StderrTail::default();
        let started = async {
            match &self.config.transport {
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
                    let transport = StdioChild::spawn(
                        process,
                        self.in_flight.clone(),
                        self.config.name.as_str(),
                        &stderr,
                    )
                    .map_err(|error| format!("cannot run `{command}`: {error}"))?;
                    client.serve(transport).await.map_err(|error| {
                        format!("`{command}` did not complete the MCP handshake: {error}")
                    })
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
                    client.serve(transport).await.map_err(|error| {
                        format!("{url} did not complete the MCP handshake: {error}")
                    })
                }
            }
        };
        let reason = match tokio::time::timeout(self.config.startup_timeout, started).await {
            Ok(Ok(service)) => return Ok(service),
            Ok(Err(reason)) => reason,
            Err(_) => format!(
                "no answer to initialize within {}s",
                self.config.startup_timeout.as_secs_f64()
            ),
        };
        let reason = stderr.explain(reason).await;
        Err(redact(&reason, &self.config.transport.secrets()))
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

/// No wait before the first retry, then 1 s doubling up to [`MAX_BACKOFF`].
fn backoff(failures: u32) -> Duration {
    match failures {
        0 | 1 => Duration::ZERO,
        n => Duration::from_secs(1u64 << (n - 2).min(5)).min(MAX_BACKOFF),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_retries_at_once_then_doubles_up_to_the_cap() {
        let waits: Vec<u64> = (1..=8).map(|n| backoff(n).as_secs()).collect();
        assert_eq!(waits, [0, 1, 2, 4, 8, 16, 30, 30]);
    }
}
