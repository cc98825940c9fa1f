//! [`HistorySessionStore`]: rmcp's session store on the gateway's history,
//! so a restarted gateway finds a client's `initialize` parameters and
//! serves its session on.

use std::sync::Arc;

use rmcp::transport::streamable_http_server::session::{
    SessionState, SessionStore, SessionStoreError,
};
use toolgate_store::{ConversationId, ConversationStore};

use crate::gateway::Gateway;

/// rmcp's session store, on the gateway's history: a restarted gateway finds
/// the client's `initialize` parameters and serves the session on.
#[derive(Debug)]
pub struct HistorySessionStore<S>(pub Arc<Gateway<S>>);

#[async_trait::async_trait]
impl<S: ConversationStore + 'static> SessionStore for HistorySessionStore<S> {
    async fn load(&self, session_id: &str) -> Result<Option<SessionState>, SessionStoreError> {
        self.0
            .sessions()
            .start_record(&ConversationId::new(session_id))
            .await
    }

    async fn store(&self, session_id: &str, state: &SessionState) -> Result<(), SessionStoreError> {
        self.0
            .sessions()
            .record_opened(&ConversationId::new(session_id), state)
            .await
    }

    async fn delete(&self, session_id: &str) -> Result<(), SessionStoreError> {
        self.0
            .sessions()
            .end(&ConversationId::new(session_id))
            .await
    }
}
