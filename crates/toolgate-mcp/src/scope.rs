//! [`RequestScope`]: one MCP request as the gateway acts on it, built once
//! at the edge (the rmcp handler, from what the HTTP listener established
//! or from the stdio connection) and passed as a parameter to the gateway,
//! the toolbox and the source that runs a call, the way rmcp passes its
//! `RequestContext`. Nothing about who is calling travels any other way: a
//! request whose edge did not say who sent it gets no scope, and is refused.

use std::sync::Arc;

use rmcp::model::ProgressToken;
use rmcp::{Peer, RoleServer};
use tokio::sync::OnceCell;
use tokio_util::sync::CancellationToken;
use toolgate_store::{ConversationId, ConversationStore};
use toolgate_tools::{Authority, Backchannel, CallContext, CallerLimits};

use crate::clients::{ClientKey, Owner};
use crate::rate_limit::RateLimits;
use crate::relay::Downstream;
use crate::session::{Session, Sessions};

/// One request: its session, who sent it and what it may do, how it is
/// cancelled, and where what happens during it goes.
#[derive(Clone, Debug)]
pub struct RequestScope {
    /// Its session; `None` for a stateless request (MCP 2026-07-28), which
    /// shares nothing with any other.
    session: Option<ConversationId>,
    /// The client (and user) that sent it.
    owner: Owner,
    /// What that client may use, the limits it counts against, and whose
    /// JavaScript tools it writes.
    authority: Authority,
    /// Cancelled when the client gives up on the request.
    cancel: CancellationToken,
    /// The client's connection, for progress, `list_changed` and the
    /// upstreams' requests during a call.
    peer: Option<Peer<RoleServer>>,
    /// The progress token the client sent, if any.
    progress_token: Option<ProgressToken>,
    /// The session's state, once looked up: once per request.
    held: Arc<OnceCell<Arc<Session>>>,
}

impl RequestScope {
    /// A request of `owner` in `session`, allowed what `authority` allows.
    pub(crate) fn new(session: Option<ConversationId>, owner: Owner, authority: Authority) -> Self {
        Self {
            session,
            owner,
            authority,
            cancel: CancellationToken::new(),
            peer: None,
            progress_token: None,
            held: Arc::new(OnceCell::new()),
        }
    }

    /// The session's state, looked up in `sessions` the first time it is
    /// asked for and kept for the rest of the request (a lookup of a shared
    /// store asks it whether another gateway changed the session); `None`
    /// for a stateless request.
    pub(crate) async fn held<S: ConversationStore + 'static>(
        &self,
        sessions: &Sessions<S>,
    ) -> Option<Arc<Session>> {
        let id = self.session.as_ref()?;
        let session = self.held.get_or_init(|| sessions.get(id)).await;
        Some(Arc::clone(session))
    }

    /// This request, cancelled by `cancel`.
    pub(crate) fn with_cancel(mut self, cancel: CancellationToken) -> Self {
        self.cancel = cancel;
        self
    }

    /// This request, from the client on `peer`, which sent `progress_token`.
    pub(crate) fn with_peer(
        mut self,
        peer: Peer<RoleServer>,
        progress_token: Option<ProgressToken>,
    ) -> Self {
        self.peer = Some(peer);
        self.progress_token = progress_token;
        self
    }

    /// Its session; `None` for a stateless request.
    pub fn session(&self) -> Option<&ConversationId> {
        self.session.as_ref()
    }

    /// The client (and user) that sent it.
    pub(crate) fn owner(&self) -> &Owner {
        &self.owner
    }

    /// The client that sent it: `None` for the operator (stdio, the shared
    /// token, or a listener open to all).
    pub fn client(&self) -> &ClientKey {
        &self.owner.client
    }

    /// What the client may use.
    pub fn authority(&self) -> &Authority {
        &self.authority
    }

    /// The client's connection, when the request came on one.
    pub(crate) fn peer(&self) -> Option<&Peer<RoleServer>> {
        self.peer.as_ref()
    }

    /// Where an upstream running a call of this request relays what it
    /// sends during the call.
    fn downstream(&self) -> Downstream {
        Downstream {
            peer: self.peer.clone(),
            progress_token: self.progress_token.clone(),
            session: self.session.clone(),
        }
    }

    /// The toolbox's view of this request, for one call: its authority,
    /// session, cancellation and downstream.
    pub(crate) fn call_context(&self) -> CallContext {
        CallContext {
            authority: self.authority.clone(),
            conversation: self.session.clone(),
            cancel: self.cancel.clone(),
            backchannel: Backchannel::new(self.downstream()),
            ..CallContext::default()
        }
    }
}

/// One caller's rate limits, counting what a script does on its behalf.
#[derive(Debug)]
pub(crate) struct ScopedLimits {
    pub(crate) limits: Arc<RateLimits>,
    pub(crate) client: ClientKey,
}

impl CallerLimits for ScopedLimits {
    fn admit(&self, tool: &str) -> Result<(), String> {
        self.limits
            .admit_call(&self.client)
            .and_then(|()| self.limits.admit_tool(&self.client, tool))
            .map_err(|limited| limited.to_string())
    }
}
