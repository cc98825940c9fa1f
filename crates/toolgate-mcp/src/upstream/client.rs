//! [`UpstreamClient`]: the client side of one upstream connection. It
//! tells the upstream when the server's tools changed, and passes what the
//! server sends during a call (progress, logs, sampling and elicitation
//! requests) on to the client whose call it belongs to.

#![allow(
    deprecated,
    reason = "sampling and logging are deprecated in MCP 2026-07-28 but relayed for 2025-11-25 servers"
)]

use std::sync::Arc;
use std::sync::atomic::AtomicBool;

use rmcp::model::{
    ClientCapabilities, ClientConfig, CreateMessageRequestParams, CreateMessageResult,
    ElicitRequestParams, ElicitResult, Implementation, LoggingMessageNotificationParam,
    ProgressNotificationParam, ProtocolVersion,
};
use rmcp::service::{InboundStreamOrigin, NotificationContext, RequestContext};
use rmcp::{ClientHandler, ErrorData as McpError, RoleClient};
use tokio::sync::{Notify, oneshot};

use crate::relay::{InFlight, RelayEvent};

/// What the upstream announced since the toolbox last asked.
#[derive(Debug, Default)]
pub(super) struct Changes {
    /// Woken by `notifications/tools/list_changed` (and by shutdown).
    pub(super) notify: Notify,
    /// Shut down for good.
    pub(super) closed: AtomicBool,
}

/// The client side of one upstream connection: it reports `list_changed` to
/// the gateway and passes what belongs to a call on to that call's client.
#[derive(Clone, Debug)]
pub(super) struct UpstreamClient {
    pub(super) changes: Arc<Changes>,
    pub(super) in_flight: InFlight,
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
