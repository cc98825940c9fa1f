//! [`CallContext`]: who is calling (its [`Authority`], and the conversation
//! for tools whose behaviour depends on it) and the call's cancellation.

use std::any::Any;
use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use tokio_util::sync::CancellationToken;
use toolgate_store::{AgentId, ConversationId};

use crate::authority::Authority;

/// Who is calling: what it may do, the conversation, its agent and its turn,
/// for tools whose behaviour depends on them (an agent's prompts, a
/// per-turn search limit), and how to cancel the call. Callers without a
/// conversation (a stateless gateway request) leave it empty. The default
/// context's authority may do nothing: a front end says who calls.
#[derive(Clone, Debug, Default)]
pub struct CallContext {
    /// What the caller may use: the toolbox judges the call by it, and a
    /// script's host functions act with it.
    pub authority: Authority,
    /// The conversation the call belongs to: an agent chat or a gateway
    /// session.
    pub conversation: Option<ConversationId>,
    /// The conversation's agent, when it has one.
    pub agent: Option<AgentId>,
    /// The turn within the conversation, when the caller has turns (the agent
    /// loop does; an MCP client's turns are its own business).
    pub turn: Option<u64>,
    /// Cancelled when the caller gives up on the call; a source stops the
    /// call (and tells its server so).
    pub cancel: CancellationToken,
    /// The longest the caller waits for the call, when it sets a limit of
    /// its own (an agent's turn): the call's deadline is this or its
    /// source's, whichever is shorter.
    pub time_limit: Option<Duration>,
    /// Where a source may send what it hears during the call.
    pub backchannel: Backchannel,
}

impl CallContext {
    /// A context acting with `authority`, in no conversation.
    pub fn new(authority: Authority) -> Self {
        Self {
            authority,
            ..Self::default()
        }
    }
}

/// What a source may send back to whoever made the call while it runs (an
/// MCP client's progress notifications and the server's requests for
/// input). Opaque to the runtime: the front end that made the call puts its
/// channel here and the source that understands it takes it out, so no
/// protocol type crosses the runtime.
#[derive(Clone, Default)]
pub struct Backchannel(Option<Arc<dyn Any + Send + Sync>>);

impl Backchannel {
    /// A channel holding `value`.
    pub fn new<T: Any + Send + Sync>(value: T) -> Self {
        Self(Some(Arc::new(value)))
    }

    /// The value, when the channel holds a `T`.
    pub fn get<T: Any + Send + Sync>(&self) -> Option<&T> {
        self.0.as_deref()?.downcast_ref()
    }
}

impl fmt::Debug for Backchannel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let state = if self.0.is_some() { "set" } else { "none" };
        f.debug_tuple("Backchannel").field(&state).finish()
    }
}
