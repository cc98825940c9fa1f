//! [`CappedSessions`]: rmcp's in-memory session manager with a cap on how
//! many sessions it holds. A new session beyond the cap lets go of the
//! longest-idle one: its connection state leaves memory, its history stays,
//! and its next request restores it (loaded groups included) through the
//! session store, as after a restart.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Instant;

use futures_util::Stream;
use rmcp::model::{ClientJsonRpcMessage, ServerJsonRpcMessage};
use rmcp::transport::WorkerTransport;
use rmcp::transport::common::server_side_http::ServerSseMessage;
use rmcp::transport::streamable_http_server::session::EventStore;
use rmcp::transport::streamable_http_server::session::local::{
    LocalSessionManager, LocalSessionManagerError, LocalSessionWorker,
};
use rmcp::transport::streamable_http_server::session::{RestoreOutcome, SessionId, SessionManager};
use toolgate_store::{ConversationId, ConversationStore};

use crate::gateway::Gateway;

/// rmcp's [`LocalSessionManager`], holding at most `cap` sessions.
#[derive(Debug)]
pub struct CappedSessions<S> {
    inner: LocalSessionManager,
    cap: usize,
    gateway: Arc<Gateway<S>>,
    /// When each held session last had a request.
    last_used: Mutex<HashMap<SessionId, Instant>>,
}

impl<S: ConversationStore + 'static> CappedSessions<S> {
    pub(crate) fn new(inner: LocalSessionManager, cap: usize, gateway: Arc<Gateway<S>>) -> Self {
        Self {
            inner,
            cap: cap.max(1),
            gateway,
            last_used: Mutex::new(HashMap::new()),
        }
    }

    fn used(&self) -> std::sync::MutexGuard<'_, HashMap<SessionId, Instant>> {
        self.last_used
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    fn touch(&self, id: &SessionId) {
        self.used().insert(id.clone(), Instant::now());
    }

    /// Lets go of the longest-idle sessions until one more fits.
    async fn make_room(&self) {
        loop {
            let evicted = {
                let mut used = self.used();
                if used.len() < self.cap {
                    return;
                }
                let oldest = used
                    .iter()
                    .min_by_key(|(_, at)| **at)
                    .map(|(id, _)| id.clone());
                oldest.inspect(|id| {
                    used.remove(id);
                })
            };
            let Some(id) = evicted else { return };
            tracing::info!(session = %id, cap = self.cap, "session cap reached; the longest-idle session leaves memory (its history stays)");
            if let Err(error) = self.inner.close_session(&id).await {
                tracing::debug!(session = %id, %error, "evicted session was already closed");
            }
            self.gateway
                .sessions()
                .forget(&ConversationId::new(id.as_ref()))
                .await;
        }
    }
}

impl<S: ConversationStore + 'static> SessionManager for CappedSessions<S> {
    type Error = LocalSessionManagerError;
    type Transport = WorkerTransport<LocalSessionWorker>;

    async fn create_session(&self) -> Result<(SessionId, Self::Transport), Self::Error> {
        self.make_room().await;
        let (id, transport) = self.inner.create_session().await?;
        self.touch(&id);
        Ok((id, transport))
    }

    async fn initialize_session(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<ServerJsonRpcMessage, Self::Error> {
        self.touch(id);
        self.inner.initialize_session(id, message).await
    }

    async fn has_session(&self, id: &SessionId) -> Result<bool, Self::Error> {
        self.inner.has_session(id).await
    }

    async fn close_session(&self, id: &SessionId) -> Result<(), Self::Error> {
        self.used().remove(id);
        self.inner.close_session(id).await
    }

    async fn create_stream(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        self.touch(id);
        self.inner.create_stream(id, message).await
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
        self.touch(id);
        self.inner.create_standalone_stream(id).await
    }

    async fn resume(
        &self,
        id: &SessionId,
        last_event_id: String,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        self.touch(id);
        self.inner.resume(id, last_event_id).await
    }

    async fn restore_session(
        &self,
        id: SessionId,
    ) -> Result<RestoreOutcome<Self::Transport>, Self::Error> {
        self.make_room().await;
        let outcome = self.inner.restore_session(id.clone()).await?;
        self.touch(&id);
        Ok(outcome)
    }

    fn event_store(&self) -> Option<Arc<dyn EventStore>> {
        self.inner.event_store()
    }
}
