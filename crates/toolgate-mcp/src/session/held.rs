//! [`HeldSessions`]: which HTTP sessions are held in memory. An HTTP
//! session in memory is rmcp's session worker, its channels and toolgate's
//! session state, about 100 KB; a session between requests needs none of it,
//! because its history in the store rebuilds it. So a session leaves memory
//! once it has had no request and no open stream for a while (and the
//! longest-idle one leaves when too many are held), and its next request
//! restores it through rmcp's session store, loaded groups included, as on
//! another replica or after a restart. What a dormant session costs in
//! memory is nothing: the store is the list of sessions.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use futures_util::{Stream, StreamExt};
use rmcp::model::{ClientJsonRpcMessage, ServerJsonRpcMessage};
use rmcp::transport::WorkerTransport;
use rmcp::transport::common::server_side_http::ServerSseMessage;
use rmcp::transport::streamable_http_server::session::EventStore;
use rmcp::transport::streamable_http_server::session::local::{
    LocalSessionManager, LocalSessionManagerError, LocalSessionWorker,
};
use rmcp::transport::streamable_http_server::session::{RestoreOutcome, SessionId, SessionManager};
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;
use toolgate_store::{ConversationId, ConversationStore, StoreError};

use crate::clients::{Owner, RequestEdge};
use crate::gateway::Gateway;

/// How long sessions are held in memory.
#[derive(Clone, Copy, Debug)]
pub struct Hold {
    /// Most sessions held at once; a new one beyond it lets go of the
    /// longest-idle one.
    pub max_sessions: usize,
    /// A session with no request and no open stream for this long leaves
    /// memory.
    pub idle: Duration,
}

/// rmcp's [`LocalSessionManager`] for the sessions in memory, and the rule
/// for when one leaves it (see the module's documentation).
#[derive(Debug)]
pub struct HeldSessions<S> {
    inner: LocalSessionManager,
    hold: Hold,
    gateway: Arc<Gateway<S>>,
    state: Arc<Mutex<State>>,
}

#[derive(Debug, Default)]
struct State {
    /// The sessions in memory. A session is in `inner` exactly while it is
    /// here (rmcp's own worker exits aside, which end its entry too).
    held: HashMap<SessionId, Held>,
    /// Sessions let go whose old worker has yet to report its end: rmcp's
    /// task calls `close_session` once a worker stops, and that late call
    /// must not close the session restored meanwhile.
    closing: HashMap<SessionId, (u32, Instant)>,
    /// Owners of sessions not in memory, read from the store for the
    /// request about to restore one: its restore takes the owner from here
    /// instead of reading the history again.
    read_owners: HashMap<SessionId, Owner>,
}

#[derive(Debug)]
struct Held {
    last_used: Instant,
    /// SSE streams open on the session: a request being answered, or the
    /// client's stream for notifications. A session with one stays.
    streams: u32,
    /// Set while the session is being let go; requests wait for it to end,
    /// then restore the session.
    leaving: Option<watch::Receiver<bool>>,
    /// The client (and user) it belongs to; `None` until the request that
    /// opens it says whose it is, and while it is `None`, nobody's.
    owner: Option<Owner>,
}

impl Held {
    /// A session of `owner`.
    fn new(owner: Option<Owner>) -> Self {
        Self {
            last_used: Instant::now(),
            streams: 0,
            leaving: None,
            owner,
        }
    }
}

/// Whose a session is, as [`HeldSessions::owner`] finds it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum SessionOwner {
    /// There is no such session.
    Unknown,
    /// A session being opened, whose owner is not known yet: nobody's.
    Unclaimed,
    /// This client's (and user's).
    Owned(Owner),
}

/// The owner the listener established for the request `message` came in,
/// which rmcp hands the session manager with its HTTP parts.
fn owner_of(message: &ClientJsonRpcMessage) -> Option<Owner> {
    use rmcp::model::GetExtensions as _;
    let ClientJsonRpcMessage::Request(request) = message else {
        return None;
    };
    request
        .request
        .extensions()
        .get::<http::request::Parts>()?
        .extensions
        .get::<RequestEdge>()
        .map(|edge| edge.owner.clone())
}

impl<S: ConversationStore + 'static> HeldSessions<S> {
    pub(crate) fn new(inner: LocalSessionManager, hold: Hold, gateway: Arc<Gateway<S>>) -> Self {
        Self {
            inner,
            hold: Hold {
                max_sessions: hold.max_sessions.max(1),
                idle: hold.idle.max(MIN_IDLE),
            },
            gateway,
            state: Arc::new(Mutex::new(State::default())),
        }
    }

    /// The client session `id` belongs to, from memory when it is held,
    /// else from its stored start.
    pub(crate) async fn owner(&self, id: &SessionId) -> Result<SessionOwner, StoreError> {
        if let Some(held) = self.lock().held.get(id) {
            return Ok(match &held.owner {
                Some(owner) => SessionOwner::Owned(owner.clone()),
                None => SessionOwner::Unclaimed,
            });
        }
        let stored = self
            .gateway
            .sessions()
            .stored_owner(&ConversationId::new(id.as_ref()))
            .await?;
        if let Some(owner) = &stored {
            let mut state = self.lock();
            // Bounded: requests that restore nothing leave their owner here.
            if state.read_owners.len() >= self.hold.max_sessions {
                state.read_owners.clear();
            }
            state.read_owners.insert(id.clone(), owner.clone());
        }
        Ok(stored.map_or(SessionOwner::Unknown, SessionOwner::Owned))
    }

    /// How many sessions are in memory.
    pub fn held_count(&self) -> usize {
        self.lock().held.len()
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Marks a request on `id`; false when the session is not held.
    fn touch(&self, id: &SessionId) -> bool {
        match self.lock().held.get_mut(id) {
            Some(held) if held.leaving.is_none() => {
                held.last_used = Instant::now();
                true
            }
            _ => false,
        }
    }

    /// `stream`, counted as open on `id` until it is dropped.
    fn counted<T: Stream<Item = ServerSseMessage> + Send + Sync + 'static>(
        &self,
        id: &SessionId,
        stream: T,
    ) -> impl Stream<Item = ServerSseMessage> + Send + Sync + 'static {
        if let Some(held) = self.lock().held.get_mut(id) {
            held.streams += 1;
            held.last_used = Instant::now();
        }
        let open = OpenStream {
            state: Arc::clone(&self.state),
            id: id.clone(),
        };
        stream.map(move |message| {
            let _open = &open;
            message
        })
    }

    /// Lets go of sessions idle longer than [`Hold::idle`] with no stream
    /// open. Returns how many left.
    pub(crate) async fn sweep(&self) -> usize {
        let Some(cutoff) = Instant::now().checked_sub(self.hold.idle) else {
            return 0;
        };
        let idle: Vec<SessionId> = {
            let mut state = self.lock();
            let now = Instant::now();
            state
                .closing
                .retain(|_, (_, at)| now.duration_since(*at) < CLOSING_FORGOTTEN);
            state
                .held
                .iter()
                .filter(|(_, held)| {
                    held.streams == 0 && held.leaving.is_none() && held.last_used <= cutoff
                })
                .map(|(id, _)| id.clone())
                .collect()
        };
        let mut left = 0;
        for id in idle {
            if self.let_go(&id, Some(cutoff)).await {
                left += 1;
            }
        }
        if left > 0 {
            tracing::debug!(
                left,
                held = self.held_count(),
                "idle sessions left memory (their history stays)"
            );
        }
        left
    }

    /// Lets go of the longest-idle sessions until one more fits.
    async fn make_room(&self) {
        loop {
            let oldest = {
                let state = self.lock();
                if state.held.len() < self.hold.max_sessions {
                    return;
                }
                state
                    .held
                    .iter()
                    .filter(|(_, held)| held.leaving.is_none())
                    .min_by_key(|(_, held)| held.last_used)
                    .map(|(id, _)| id.clone())
            };
            let Some(id) = oldest else { return };
            tracing::info!(session = %id, cap = self.hold.max_sessions, "session cap reached; the longest-idle session leaves memory (its history stays)");
            self.let_go(&id, None).await;
        }
    }

    /// Takes `id` out of memory: out of rmcp's manager and the gateway's
    /// live sessions. With `idle_since`, only if it is still idle since
    /// then with no stream open. Returns whether it left.
    async fn let_go(&self, id: &SessionId, idle_since: Option<Instant>) -> bool {
        let (done, _) = watch::channel(false);
        {
            let mut state = self.lock();
            let Some(held) = state.held.get_mut(id) else {
                return false;
            };
            let still_idle = idle_since
                .is_none_or(|cutoff| held.streams == 0 && held.last_used <= cutoff)
                && held.leaving.is_none();
            if !still_idle {
                return false;
            }
            held.leaving = Some(done.subscribe());
            let closing = state
                .closing
                .entry(id.clone())
                .or_insert((0, Instant::now()));
            closing.0 += 1;
            closing.1 = Instant::now();
        }
        self.gateway
            .sessions()
            .forget(&ConversationId::new(id.as_ref()))
            .await;
        if let Err(error) = self.inner.close_session(id).await {
            tracing::debug!(session = %id, %error, "a session let go was already closed");
        }
        let held = {
            let mut state = self.lock();
            state.held.remove(id);
            state.held.len()
        };
        done.send_replace(true);
        let metrics = self.gateway.metrics();
        metrics.session_left_memory();
        metrics.sessions_in_memory(held);
        true
    }

    /// Waits until `id` is no longer being let go; true when it is held.
    async fn settled(&self, id: &SessionId) -> bool {
        let leaving = {
            let state = self.lock();
            match state.held.get(id) {
                None => return false,
                Some(held) => held.leaving.clone(),
            }
        };
        let Some(mut leaving) = leaving else {
            return self.touch(id);
        };
        let _ = leaving.wait_for(|done| *done).await;
        false
    }
}

/// The shortest idle time before a session leaves memory.
const MIN_IDLE: Duration = Duration::from_secs(1);

/// How long a let-go session's old worker has to report its end before the
/// record of it is dropped.
const CLOSING_FORGOTTEN: Duration = Duration::from_secs(60);

/// Runs [`HeldSessions::sweep`] until `stop` is cancelled.
pub(crate) async fn sweep_until<S: ConversationStore + 'static>(
    sessions: Arc<HeldSessions<S>>,
    stop: CancellationToken,
) {
    let every = (sessions.hold.idle / 4).clamp(Duration::from_millis(250), Duration::from_secs(15));
    let mut ticks = tokio::time::interval(every);
    ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            () = stop.cancelled() => return,
            _ = ticks.tick() => {
                sessions.sweep().await;
            }
        }
    }
}

/// An open stream's mark on its session, taken off when the stream drops.
#[derive(Debug)]
struct OpenStream {
    state: Arc<Mutex<State>>,
    id: SessionId,
}

impl Drop for OpenStream {
    fn drop(&mut self) {
        let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(held) = state.held.get_mut(&self.id) {
            held.streams = held.streams.saturating_sub(1);
            held.last_used = Instant::now();
        }
    }
}

impl<S: ConversationStore + 'static> SessionManager for HeldSessions<S> {
    type Error = LocalSessionManagerError;
    type Transport = WorkerTransport<LocalSessionWorker>;

    async fn create_session(&self) -> Result<(SessionId, Self::Transport), Self::Error> {
        self.make_room().await;
        let (id, transport) = self.inner.create_session().await?;
        let held = {
            let mut state = self.lock();
            state.held.insert(id.clone(), Held::new(None));
            state.held.len()
        };
        let metrics = self.gateway.metrics();
        metrics.session_opened();
        metrics.sessions_in_memory(held);
        Ok((id, transport))
    }

    async fn initialize_session(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<ServerJsonRpcMessage, Self::Error> {
        // The session becomes the opening request's client's; a request
        // that did not come through the listener opens nobody's.
        let Some(owner) = owner_of(&message) else {
            return Err(LocalSessionManagerError::SessionNotFound(id.clone()));
        };
        if let Some(held) = self.lock().held.get_mut(id) {
            held.owner = Some(owner.clone());
        }
        self.gateway
            .sessions()
            .opening(&ConversationId::new(id.as_ref()), owner);
        self.touch(id);
        self.inner.initialize_session(id, message).await
    }

    async fn has_session(&self, id: &SessionId) -> Result<bool, Self::Error> {
        Ok(self.settled(id).await)
    }

    async fn close_session(&self, id: &SessionId) -> Result<(), Self::Error> {
        {
            let mut state = self.lock();
            if let Some((pending, _)) = state.closing.get_mut(id) {
                // The end of a worker this manager let go, reported late:
                // the session may be back in memory with a new worker.
                *pending -= 1;
                if *pending == 0 {
                    state.closing.remove(id);
                }
                return Ok(());
            }
            state.held.remove(id);
            self.gateway.metrics().sessions_in_memory(state.held.len());
        }
        self.inner.close_session(id).await
    }

    async fn create_stream(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        let stream = self.inner.create_stream(id, message).await?;
        Ok(self.counted(id, stream))
    }

    async fn accept_message(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<(), Self::Error> {
        self.touch(id);
        self.inner.accept_message(id, message).await
    }

    async fn create_standalone_stream(
        &self,
        id: &SessionId,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        let stream = self.inner.create_standalone_stream(id).await?;
        Ok(self.counted(id, stream))
    }

    async fn resume(
        &self,
        id: &SessionId,
        last_event_id: String,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        let stream = self.inner.resume(id, last_event_id).await?;
        Ok(self.counted(id, stream))
    }

    async fn restore_session(
        &self,
        id: SessionId,
    ) -> Result<RestoreOutcome<Self::Transport>, Self::Error> {
        self.make_room().await;
        // A restored session is its stored owner's (the listener let only
        // that owner's request through to restore it, having read it).
        let read = self.lock().read_owners.remove(&id);
        let owner = match read {
            Some(owner) => Some(owner),
            None => match self
                .gateway
                .sessions()
                .stored_owner(&ConversationId::new(id.as_ref()))
                .await
            {
                Ok(owner) => owner,
                Err(error) => {
                    tracing::warn!(%error, "reading a restored session's owner failed");
                    None
                }
            },
        };
        let outcome = self.inner.restore_session(id.clone()).await?;
        if matches!(outcome, RestoreOutcome::Restored(_)) {
            let held = {
                let mut state = self.lock();
                state.held.insert(id, Held::new(owner));
                state.held.len()
            };
            let metrics = self.gateway.metrics();
            metrics.session_restored();
            metrics.sessions_in_memory(held);
        }
        Ok(outcome)
    }

    fn event_store(&self) -> Option<Arc<dyn EventStore>> {
        self.inner.event_store()
    }
}
