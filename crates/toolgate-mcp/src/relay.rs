//! What an upstream sends during a tool call, passed on to the client that
//! made the call: progress, log messages, and the upstream's own requests for
//! sampling and elicitation, whose answers go back the same way.
//!
//! Everything is forwarded from the downstream request's own task, so rmcp
//! routes it on that request's stream (streamable HTTP) like any message the
//! gateway itself sends while handling the call.
//!
//! A request from an upstream goes to the session whose call caused it, and
//! to nobody when that cannot be known: an HTTP upstream sends it on the
//! call's own response stream, which names the call; on stdio nothing names
//! it, so it is relayed only while every call in flight on that connection
//! comes from one session. Otherwise the upstream is answered with an error:
//! a request carrying one session's data never reaches another session.

#![allow(
    deprecated,
    reason = "sampling and logging are deprecated in MCP 2026-07-28 but relayed for 2025-11-25 clients"
)]

use std::sync::{Arc, Mutex, PoisonError};

use futures_util::stream::{FuturesUnordered, StreamExt};
use rmcp::model::{
    CreateMessageRequestParams, CreateMessageResult, ElicitRequestParams, ElicitResult, ErrorCode,
    LoggingMessageNotificationParam, ProgressNotificationParam, ProgressToken, RequestId,
};
use rmcp::service::InboundStreamOrigin;
use rmcp::{ErrorData as McpError, Peer, RoleServer};
use tokio::sync::{mpsc, oneshot};
use toolgate_store::ConversationId;

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

/// The calls in flight on one upstream connection, oldest first. A call is
/// registered before its request is sent, so no request the server makes
/// for it can arrive while the gateway does not know of it yet.
#[derive(Clone, Debug, Default)]
pub(crate) struct InFlight {
    calls: Arc<Mutex<Calls>>,
    /// Woken each time a call ends.
    ended: Arc<tokio::sync::Notify>,
}

#[derive(Debug, Default)]
struct Calls {
    next_key: u64,
    in_flight: Vec<InFlightCall>,
}

/// One call in flight: the upstream request that carries it (once sent),
/// the session that made it, and where its messages go.
#[derive(Debug)]
struct InFlightCall {
    key: u64,
    request: Option<(RequestId, ProgressToken)>,
    /// `None` for a stateless call, which shares nothing with any other.
    session: Option<ConversationId>,
    relay: mpsc::Sender<RelayEvent>,
    /// Told the size of a message the server sent for this call that was
    /// too large to read.
    too_large: Option<oneshot::Sender<usize>>,
}

/// Removes its call from [`InFlight`] when dropped.
#[derive(Debug)]
pub(crate) struct InFlightGuard {
    calls: InFlight,
    key: u64,
}

impl InFlightGuard {
    /// Names the upstream request that carries the call, once it is sent.
    pub(crate) fn sent(&self, request: RequestId, progress_token: ProgressToken) {
        if let Some(caller) = self
            .calls
            .lock()
            .in_flight
            .iter_mut()
            .find(|caller| caller.key == self.key)
        {
            caller.request = Some((request, progress_token));
        }
    }
}

impl Drop for InFlightGuard {
    fn drop(&mut self) {
        self.calls
            .lock()
            .in_flight
            .retain(|caller| caller.key != self.key);
        self.calls.ended.notify_waiters();
    }
}

/// Why an upstream's request went to no client.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Unroutable {
    /// No call is in flight on the connection.
    NoCall,
    /// The call it names has ended.
    CallEnded,
    /// Calls from several sessions are in flight and nothing names one.
    Ambiguous,
}

impl Unroutable {
    pub(crate) fn into_error(self, what: &str) -> McpError {
        let message = match self {
            Self::NoCall => format!("{what} is only relayed during a tool call from a client"),
            Self::CallEnded => format!("the tool call this {what} request belongs to has ended"),
            Self::Ambiguous => format!(
                "the gateway cannot tell which tool call this {what} request belongs to: calls \
                 from several clients are in flight on this connection and the request names \
                 none of them"
            ),
        };
        McpError::invalid_request(message, None)
    }
}

impl InFlight {
    fn lock(&self) -> std::sync::MutexGuard<'_, Calls> {
        self.calls.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Returns once no call is in flight.
    pub(crate) async fn drained(&self) {
        loop {
            let ended = self.ended.notified();
            tokio::pin!(ended);
            // Registered before looking, so an end in between is not missed.
            ended.as_mut().enable();
            if self.lock().in_flight.is_empty() {
                return;
            }
            ended.await;
        }
    }

    /// Registers a call about to be sent, until the guard drops; name its
    /// request with [`InFlightGuard::sent`]. The receiver hears of a
    /// message for the call too large to read.
    pub(crate) fn register(
        &self,
        session: Option<ConversationId>,
        relay: mpsc::Sender<RelayEvent>,
    ) -> (InFlightGuard, oneshot::Receiver<usize>) {
        let (too_large, told) = oneshot::channel();
        let mut calls = self.lock();
        let key = calls.next_key;
        calls.next_key += 1;
        calls.in_flight.push(InFlightCall {
            key,
            request: None,
            session,
            relay,
            too_large: Some(too_large),
        });
        let guard = InFlightGuard {
            calls: self.clone(),
            key,
        };
        (guard, told)
    }

    /// A message of `bytes` was too large to read: it fails the call it
    /// names, or the only call in flight.
    pub(crate) fn too_large(&self, id: Option<&RequestId>, bytes: usize) {
        let mut calls = self.lock();
        let in_flight = &mut calls.in_flight;
        let named = in_flight
            .iter()
            .position(|caller| caller.request.as_ref().map(|(request, _)| request) == id);
        let index = named.or((in_flight.len() == 1).then_some(0));
        let told = index.and_then(|index| in_flight[index].too_large.take());
        match told {
            Some(told) => {
                let _ = told.send(bytes);
            }
            None => tracing::warn!(
                bytes,
                "an MCP server sent a message too large to read; no call in flight could be told"
            ),
        }
    }

    /// The caller whose upstream request carries `token`.
    pub(crate) fn by_token(&self, token: &ProgressToken) -> Option<mpsc::Sender<RelayEvent>> {
        self.lock()
            .in_flight
            .iter()
            .find(|caller| caller.request.as_ref().is_some_and(|(_, t)| t == token))
            .map(|caller| caller.relay.clone())
    }

    /// The caller an upstream request belongs to. `origin` is the stream it
    /// arrived on, when the transport knows (streamable HTTP): the response
    /// stream of one call names that call. Otherwise it belongs to the
    /// calls in flight only when they all come from one session.
    pub(crate) fn caller_for(
        &self,
        origin: Option<&InboundStreamOrigin>,
    ) -> Result<mpsc::Sender<RelayEvent>, Unroutable> {
        let calls = self.lock();
        let calls = &calls.in_flight;
        if let Some(InboundStreamOrigin::OutboundRequest(id)) = origin {
            return calls
                .iter()
                .find(|caller| caller.request.as_ref().is_some_and(|(r, _)| r == id))
                .map(|caller| caller.relay.clone())
                .ok_or(Unroutable::CallEnded);
        }
        let (first, rest) = calls.split_first().ok_or(Unroutable::NoCall)?;
        let one_session =
            first.session.is_some() && rest.iter().all(|caller| caller.session == first.session);
        if rest.is_empty() || one_session {
            let latest = calls.last().unwrap_or(first);
            Ok(latest.relay.clone())
        } else {
            Err(Unroutable::Ambiguous)
        }
    }

    /// Every caller in flight: log messages name no call, so all hear them.
    pub(crate) fn all(&self) -> Vec<mpsc::Sender<RelayEvent>> {
        self.lock()
            .in_flight
            .iter()
            .map(|caller| caller.relay.clone())
            .collect()
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
    /// Its session; `None` for a stateless request.
    pub session: Option<ConversationId>,
}

/// The client capability an upstream request needs.
#[derive(Clone, Copy, Debug)]
enum Needs {
    Sampling,
    Elicitation,
}

impl Downstream {
    /// Passes a notification on.
    async fn notify(&self, event: RelayEvent) {
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
            RelayEvent::Sampling(_, reply) => {
                let _ = reply.send(Err(call_ended("sampling")));
            }
            RelayEvent::Elicitation(_, reply) => {
                let _ = reply.send(Err(call_ended("elicitation")));
            }
        }
    }

    /// Passes a request on and its answer back; only to a client that
    /// declared the capability it needs.
    async fn ask(&self, event: RelayEvent) {
        match event {
            RelayEvent::Sampling(request, reply) => {
                let answer = match self.capable(Needs::Sampling) {
                    Ok(peer) => peer.create_message(request).await.map_err(relay_error),
                    Err(error) => Err(error),
                };
                let _ = reply.send(answer);
            }
            RelayEvent::Elicitation(request, reply) => {
                let answer = match self.capable(Needs::Elicitation) {
                    Ok(peer) => peer.create_elicitation(request).await.map_err(relay_error),
                    Err(error) => Err(error),
                };
                let _ = reply.send(answer);
            }
            notification @ (RelayEvent::Progress(_) | RelayEvent::Log(_)) => {
                self.notify(notification).await;
            }
        }
    }

    /// The client's connection, if it declared what `needs` asks.
    fn capable(&self, needs: Needs) -> Result<&Peer<RoleServer>, McpError> {
        let (name, method) = match needs {
            Needs::Sampling => ("sampling", "sampling/createMessage"),
            Needs::Elicitation => ("elicitation", "elicitation/create"),
        };
        let unsupported = || {
            McpError::new(
                ErrorCode::METHOD_NOT_FOUND,
                format!("the calling client does not support {name} ({method})"),
                None,
            )
        };
        let peer = self.peer.as_ref().ok_or_else(unsupported)?;
        let declared = peer.peer_info().is_some_and(|info| match needs {
            Needs::Sampling => info.capabilities.sampling.is_some(),
            Needs::Elicitation => info.capabilities.elicitation.is_some(),
        });
        if declared {
            Ok(peer)
        } else {
            Err(unsupported())
        }
    }
}

/// Drives an upstream call, passing on what the upstream sends meanwhile.
/// Runs in the downstream request's task, so rmcp keeps it on that request.
/// Requests for the client are answered while the call goes on, so the
/// call's own deadline keeps running; when the call ends, a request still
/// waiting for the client is answered with an error.
pub(crate) async fn relayed<T>(
    call: impl std::future::Future<Output = T>,
    mut events: mpsc::Receiver<RelayEvent>,
    downstream: &Downstream,
) -> T {
    tokio::pin!(call);
    let mut asking = FuturesUnordered::new();
    let result = loop {
        tokio::select! {
            biased;
            Some(event) = events.recv() => match event {
                request @ (RelayEvent::Sampling(..) | RelayEvent::Elicitation(..)) => {
                    asking.push(downstream.ask(request));
                }
                notification => downstream.notify(notification).await,
            },
            Some(()) = asking.next(), if !asking.is_empty() => {}
            result = &mut call => break result,
        }
    };
    // Messages sent just before the result still go first; requests get an
    // error, as their call is over.
    while let Ok(event) = events.try_recv() {
        downstream.notify(event).await;
    }
    result
}

fn call_ended(what: &str) -> McpError {
    McpError::invalid_request(
        format!("the tool call this {what} request belongs to has ended"),
        None,
    )
}

fn relay_error(error: rmcp::ServiceError) -> McpError {
    match error {
        rmcp::ServiceError::McpError(error) => error,
        other => McpError::internal_error(format!("the client did not answer: {other}"), None),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn session(name: &str) -> Option<ConversationId> {
        Some(ConversationId::new(name))
    }

    fn register(
        calls: &InFlight,
        id: i64,
        session: Option<ConversationId>,
    ) -> (InFlightGuard, mpsc::Receiver<RelayEvent>) {
        let (relay, events) = mpsc::channel(1);
        let token = ProgressToken(rmcp::model::NumberOrString::Number(id));
        let (guard, _) = calls.register(session, relay);
        guard.sent(RequestId::Number(id), token);
        (guard, events)
    }

    /// Which of `receivers` a message sent on `sender` reaches.
    fn probe(
        sender: &mpsc::Sender<RelayEvent>,
        receivers: &mut [&mut mpsc::Receiver<RelayEvent>],
    ) -> usize {
        let progress = serde_json::json!({"progressToken": 0, "progress": 0});
        sender
            .try_send(RelayEvent::Progress(
                serde_json::from_value(progress).unwrap(),
            ))
            .unwrap();
        receivers
            .iter_mut()
            .position(|events| events.try_recv().is_ok())
            .unwrap()
    }

    #[test]
    fn a_request_on_a_calls_stream_goes_to_that_call_only() {
        let calls = InFlight::default();
        let (_a, mut a) = register(&calls, 1, session("a"));
        let (_b, mut b) = register(&calls, 2, session("b"));
        let origin = InboundStreamOrigin::OutboundRequest(RequestId::Number(1));
        let caller = calls.caller_for(Some(&origin)).unwrap();
        assert_eq!(probe(&caller, &mut [&mut a, &mut b]), 0);
        let ended = InboundStreamOrigin::OutboundRequest(RequestId::Number(9));
        assert_eq!(
            calls.caller_for(Some(&ended)).unwrap_err(),
            Unroutable::CallEnded
        );
    }

    #[test]
    fn an_unnamed_request_goes_nowhere_when_two_sessions_have_calls_in_flight() {
        let calls = InFlight::default();
        assert_eq!(calls.caller_for(None).unwrap_err(), Unroutable::NoCall);
        let (_a, mut a) = register(&calls, 1, session("a"));
        let caller = calls.caller_for(None).unwrap();
        assert_eq!(probe(&caller, &mut [&mut a]), 0);
        let (_a2, mut a2) = register(&calls, 2, session("a"));
        let caller = calls.caller_for(None).unwrap();
        assert_eq!(probe(&caller, &mut [&mut a, &mut a2]), 1);
        let (_b, _b_events) = register(&calls, 3, session("b"));
        assert_eq!(calls.caller_for(None).unwrap_err(), Unroutable::Ambiguous);
        let unassociated = InboundStreamOrigin::Unassociated;
        assert_eq!(
            calls.caller_for(Some(&unassociated)).unwrap_err(),
            Unroutable::Ambiguous
        );
    }

    #[test]
    fn a_call_not_sent_yet_already_counts() {
        let calls = InFlight::default();
        let (_a, _a_events) = register(&calls, 1, session("a"));
        let (relay, _b_events) = mpsc::channel(1);
        let (_b, _) = calls.register(session("b"), relay);
        assert_eq!(calls.caller_for(None).unwrap_err(), Unroutable::Ambiguous);
    }

    #[test]
    fn two_stateless_calls_never_share_a_request() {
        let calls = InFlight::default();
        let (_a, _a_events) = register(&calls, 1, None);
        assert!(calls.caller_for(None).is_ok());
        let (_b, _b_events) = register(&calls, 2, None);
        assert_eq!(calls.caller_for(None).unwrap_err(), Unroutable::Ambiguous);
    }

    #[test]
    fn an_ended_call_leaves_the_connection() {
        let calls = InFlight::default();
        let (a, _a_events) = register(&calls, 1, session("a"));
        let (_b, _b_events) = register(&calls, 2, session("b"));
        drop(a);
        assert!(calls.caller_for(None).is_ok());
    }
}
