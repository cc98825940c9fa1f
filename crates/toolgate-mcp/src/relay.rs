//! What an upstream sends during a tool call, passed on to the client that
//! made the call: progress, log messages, and the upstream's own requests for
//! sampling and elicitation, whose answers go back the same way.
//!
//! Everything is forwarded from the downstream request's own task, so rmcp
//! routes it on that request's stream (streamable HTTP) like any message the
//! gateway itself sends while handling the call.

#![allow(
    deprecated,
    reason = "sampling and logging are deprecated in MCP 2026-07-28 but relayed for 2025-11-25 clients"
)]

use std::sync::{Arc, Mutex, PoisonError};

use rmcp::model::{
    CreateMessageRequestParams, CreateMessageResult, ElicitRequestParams, ElicitResult,
    LoggingMessageNotificationParam, ProgressNotificationParam, ProgressToken,
};
use rmcp::{ErrorData as McpError, Peer, RoleServer};
use tokio::sync::{mpsc, oneshot};

/// One message from an upstream, for the caller in flight.
#[derive(Debug)]
pub(crate) enum RelayEvent {
    Progress(ProgressNotificationParam),
    Log(LoggingMessageNotificationParam),
    Sampling(
        CreateMessageRequestParams,
        oneshot::Sender<Result<CreateMessageResult, McpError>>,
    ),
    Elicitation(
        ElicitRequestParams,
        oneshot::Sender<Result<ElicitResult, McpError>>,
    ),
}

/// The calls in flight on one upstream connection, oldest first, each with
/// the progress token the gateway sent upstream.
#[derive(Clone, Debug, Default)]
pub(crate) struct InFlight(Arc<Mutex<Vec<Caller>>>);

/// One call in flight: the progress token sent upstream, and where its
/// messages go.
type Caller = (ProgressToken, mpsc::Sender<RelayEvent>);

/// Removes its call from [`InFlight`] when dropped.
#[derive(Debug)]
pub(crate) struct InFlightGuard {
    calls: InFlight,
    token: ProgressToken,
}

impl Drop for InFlightGuard {
    fn drop(&mut self) {
        self.calls.lock().retain(|(token, _)| *token != self.token);
    }
}

impl InFlight {
    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<Caller>> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }

    pub(crate) fn register(
        &self,
        token: ProgressToken,
        relay: mpsc::Sender<RelayEvent>,
    ) -> InFlightGuard {
        self.lock().push((token.clone(), relay));
        InFlightGuard {
            calls: self.clone(),
            token,
        }
    }

    /// The caller whose upstream request carries `token`.
    pub(crate) fn by_token(&self, token: &ProgressToken) -> Option<mpsc::Sender<RelayEvent>> {
        self.lock()
            .iter()
            .find(|(t, _)| t == token)
            .map(|(_, relay)| relay.clone())
    }

    /// The most recent caller: where an upstream request that names no call
    /// (stdio carries no association) is sent.
    pub(crate) fn latest(&self) -> Option<mpsc::Sender<RelayEvent>> {
        self.lock().last().map(|(_, relay)| relay.clone())
    }

    /// Every caller in flight: log messages name no call, so all hear them.
    pub(crate) fn all(&self) -> Vec<mpsc::Sender<RelayEvent>> {
        self.lock().iter().map(|(_, relay)| relay.clone()).collect()
    }
}

/// The client that made the call being served. The gateway puts it in the
/// call's [`CallerChannel`](toolgate_tools::CallerChannel); the upstream
/// that runs the call relays to it. The default relays to nobody.
#[derive(Clone, Debug, Default)]
pub struct Downstream {
    /// Its connection.
    pub peer: Option<Peer<RoleServer>>,
    /// The progress token it sent, if any.
    pub progress_token: Option<ProgressToken>,
}

impl Downstream {
    /// Passes one upstream message on.
    pub(crate) async fn relay(&self, event: RelayEvent) {
        let Some(peer) = &self.peer else {
            return;
        };
        match event {
            RelayEvent::Progress(mut progress) => {
                if let Some(token) = &self.progress_token {
                    progress.progress_token = token.clone();
                    let _ = peer.notify_progress(progress).await;
                }
            }
            RelayEvent::Log(message) => {
                let _ = peer.notify_logging_message(message).await;
            }
            RelayEvent::Sampling(request, reply) => {
                let answer = peer.create_message(request).await.map_err(relay_error);
                let _ = reply.send(answer);
            }
            RelayEvent::Elicitation(request, reply) => {
                let answer = peer.create_elicitation(request).await.map_err(relay_error);
                let _ = reply.send(answer);
            }
        }
    }
}

/// Drives an upstream call, passing on what the upstream sends meanwhile.
/// Runs in the downstream request's task, so rmcp keeps it on that request.
pub(crate) async fn relayed<T>(
    call: impl std::future::Future<Output = T>,
    mut events: mpsc::Receiver<RelayEvent>,
    downstream: &Downstream,
) -> T {
    tokio::pin!(call);
    let result = loop {
        tokio::select! {
            biased;
            Some(event) = events.recv() => downstream.relay(event).await,
            result = &mut call => break result,
        }
    };
    // Messages sent just before the result still go first.
    while let Ok(event) = events.try_recv() {
        downstream.relay(event).await;
    }
    result
}

fn relay_error(error: rmcp::ServiceError) -> McpError {
    match error {
        rmcp::ServiceError::McpError(error) => error,
        other => McpError::internal_error(format!("the client did not answer: {other}"), None),
    }
}
