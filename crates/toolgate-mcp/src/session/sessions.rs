//! [`Sessions`]: every live session, restored from its history when it is
//! not in memory. Each MCP session is a stored conversation whose history
//! holds its start (the client's `initialize` parameters and its owner)
//! and its group loads and unloads, so any gateway process that sees the
//! session id again rebuilds the same tool list.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant, SystemTime};

use rmcp::transport::streamable_http_server::session::{SessionState, SessionStoreError};
use rmcp::{Peer, RoleServer};
use toolgate_core::{GroupId, HostEvent, Message, MessageKind, SessionTools};
use toolgate_store::{ConversationId, ConversationStore, MessageId, StoreError};
use toolgate_tools::Toolbox;

use super::list_changed::notify_tool_list_changed;
use crate::bounded::truncate;
use crate::clients::{ClientName, Owner};

/// Content of the history message that records an MCP session's start; its
/// `tool_input` holds the client's `initialize` parameters.
pub const SESSION_STARTED: &str = "MCP session started";

/// The longest a session with no request stays in memory: a stdio session,
/// or an HTTP session whose client holds a stream open (one without leaves
/// sooner, see [`HttpLimits::idle_in_memory`](crate::HttpLimits)). Its
/// history stays in the store for the idle timeout; a request after this
/// restores it from there.
pub const HELD_IN_MEMORY: Duration = Duration::from_secs(30 * 60);

/// The field of a session's start record naming the client it belongs to.
const OWNER_FIELD: &str = "client";

/// The field of a session's start record naming the user (the OAuth
/// token's subject) it belongs to.
const SUBJECT_FIELD: &str = "subject";

/// The longest string of a client's `initialize` parameters kept in its
/// history; a longer one is cut.
const MAX_STORED_STRING: usize = 1024;

/// Cuts every string in `value` (keys included) to at most `max` bytes, on
/// a character boundary.
fn bound_strings(value: &mut serde_json::Value, max: usize) {
    use serde_json::Value;
    match value {
        Value::String(text) => truncate(text, max),
        Value::Array(items) => items.iter_mut().for_each(|item| bound_strings(item, max)),
        Value::Object(map) => {
            let entries = std::mem::take(map);
            for (mut key, mut item) in entries {
                truncate(&mut key, max);
                bound_strings(&mut item, max);
                map.insert(key, item);
            }
        }
        Value::Null | Value::Bool(_) | Value::Number(_) => {}
    }
}

/// One live session.
#[derive(Debug)]
pub struct Session {
    /// What the session may call and when it called each group: changed by
    /// the toolbox's meta-tool runtime alone, and rebuilt from history by
    /// [`SessionTools::restore`] alone.
    pub(crate) tools: tokio::sync::Mutex<SessionTools>,
    /// The latest stored message `tools` was rebuilt from, for a store
    /// other processes write to: when the store's latest differs, another
    /// gateway served the session meanwhile.
    rebuilt_at: Mutex<Option<MessageId>>,
    /// Why the session's history could not be read, for a session served
    /// this once without it (and not kept).
    unreadable: Option<String>,
    peer: Mutex<Option<Peer<RoleServer>>>,
    seen: Mutex<Seen>,
}

#[derive(Clone, Copy, Debug)]
struct Seen {
    last: Instant,
    /// When the store last heard the session was in use.
    touched: Instant,
}

impl Session {
    /// Why the session's history could not be read, when this request is
    /// served without it: its loaded groups are unknown, not gone.
    pub(crate) fn unreadable(&self) -> Option<&str> {
        self.unreadable.as_deref()
    }

    /// Remembers where to send the session's `list_changed` notifications.
    pub(crate) fn remember_peer(&self, peer: &Peer<RoleServer>) {
        *self.peer.lock().unwrap_or_else(PoisonError::into_inner) = Some(peer.clone());
    }
}

/// Every live session, backed by a [`ConversationStore`].
#[derive(Debug)]
pub struct Sessions<S> {
    store: S,
    /// Whose catalog a session's history is restored against.
    toolbox: Arc<Toolbox>,
    idle_timeout: Duration,
    live: tokio::sync::Mutex<HashMap<ConversationId, Arc<Session>>>,
    /// Sessions whose `initialize` is being answered, with the owner its
    /// request established, until their start is recorded.
    opening: Mutex<HashMap<ConversationId, Owner>>,
}

impl<S: ConversationStore + 'static> Sessions<S> {
    pub(crate) fn new(store: S, toolbox: Arc<Toolbox>, idle_timeout: Duration) -> Self {
        Self {
            store,
            toolbox,
            idle_timeout,
            live: tokio::sync::Mutex::new(HashMap::new()),
            opening: Mutex::new(HashMap::new()),
        }
    }

    /// Notes that session `id` is being opened by `owner`, whose start
    /// [`record_opened`](Self::record_opened) records.
    pub(crate) fn opening(&self, id: &ConversationId, owner: Owner) {
        self.opening
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(id.clone(), owner);
    }

    /// Records the start of session `id` opened by the owner
    /// [`opening`](Self::opening) noted: a session no request said the
    /// owner of is not recorded, so no later request may restore it.
    pub(crate) async fn record_opened(
        &self,
        id: &ConversationId,
        state: &SessionState,
    ) -> Result<(), SessionStoreError> {
        let owner = self
            .opening
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(id);
        match owner {
            Some(owner) => self.record_start(id, state, &owner).await,
            None => Err(format!("session {id} was opened without an owner; it is not kept").into()),
        }
    }

    /// The store behind the sessions.
    pub fn store(&self) -> &S {
        &self.store
    }

    /// How many sessions are held in memory.
    pub async fn live_count(&self) -> usize {
        self.live.lock().await.len()
    }

    /// The session, restored from its history when it is not live. The
    /// restore reads the store without holding the map, so one slow restore
    /// does not stall every other session.
    pub(crate) async fn get(&self, id: &ConversationId) -> Arc<Session> {
        let live = self.live.lock().await.get(id).cloned();
        let session = match live {
            Some(session) => session,
            None => {
                let restored = self.restore(id).await;
                let now = Instant::now();
                let unreadable = restored.as_ref().err().map(ToString::to_string);
                let (tools, rebuilt_at) = restored.unwrap_or_default();
                let session = Arc::new(Session {
                    tools: tokio::sync::Mutex::new(tools),
                    rebuilt_at: Mutex::new(rebuilt_at),
                    unreadable: unreadable.clone(),
                    peer: Mutex::new(None),
                    seen: Mutex::new(Seen {
                        last: now,
                        touched: now,
                    }),
                });
                if unreadable.is_some() {
                    // Served with core tools this once, and not kept: the
                    // next request reads its history again.
                    return session;
                }
                // A concurrent request may have restored it meanwhile: keep
                // the first, so both see one active set.
                Arc::clone(self.live.lock().await.entry(id.clone()).or_insert(session))
            }
        };
        if self.store.is_shared() {
            self.catch_up(id, &session).await;
        }
        self.mark_seen(id, &session).await;
        session
    }

    /// Rebuilds a live session's tools when the shared store holds
    /// messages it was not built from (another gateway served the session):
    /// one indexed query per request, and a rebuild only after a change.
    async fn catch_up(&self, id: &ConversationId, session: &Session) {
        let latest = match self.store.last_message_id(id).await {
            Ok(latest) => latest,
            Err(error) => {
                tracing::warn!(session = %id, %error, "cannot check the session against the store; serving it as held");
                return;
            }
        };
        let known = *session
            .rebuilt_at
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        if latest == known {
            return;
        }
        let mut tools = session.tools.lock().await;
        // History that cannot be read now leaves the session as held: the
        // next request checks again.
        let Ok((rebuilt, rebuilt_at)) = self.restore(id).await else {
            return;
        };
        *tools = rebuilt;
        *session
            .rebuilt_at
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = rebuilt_at;
    }

    /// Appends a change the toolbox made to the session's tools. A store
    /// failure is logged: the live session still has the change, only a
    /// restart would miss it.
    pub(crate) async fn record(&self, id: &ConversationId, event: &HostEvent) {
        if let Err(error) = self.store.append(id, event.message(None, "")).await {
            tracing::error!(session = %id, %error, "history event not stored");
            return;
        }
        // Gateways sharing the store hear of a change of its tools: one may
        // hold the client's stream.
        if event.changes_tools()
            && self.store.is_shared()
            && let Err(error) = self.store.announce_change(id).await
        {
            tracing::warn!(session = %id, %error, "change not announced to the other gateways");
        }
    }

    /// Another gateway changed the session `id`: when this one holds it,
    /// it rebuilds it and, when its tools changed, tells its client.
    pub(crate) async fn changed_elsewhere(&self, id: &ConversationId) {
        let Some(session) = self.live.lock().await.get(id).cloned() else {
            return;
        };
        let before = session.tools.lock().await.active.clone();
        self.catch_up(id, &session).await;
        let changed = session.tools.lock().await.active != before;
        let peer = session
            .peer
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone();
        if let (true, Some(peer)) = (changed, peer) {
            notify_tool_list_changed(&peer).await;
        }
    }

    /// Tells every live session that has `group` loaded (or every session,
    /// for an always-listed group, or when `everyone`) that its tool list
    /// changed.
    pub(crate) async fn notify_group_changed(&self, group: Option<&GroupId>, everyone: bool) {
        let sessions: Vec<Arc<Session>> = self.live.lock().await.values().cloned().collect();
        for session in sessions {
            let affected = everyone
                || match group {
                    Some(group) => session.tools.lock().await.active.is_loaded(group.as_str()),
                    None => false,
                };
            let peer = session
                .peer
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .clone();
            if let (true, Some(peer)) = (affected, peer) {
                notify_tool_list_changed(&peer).await;
            }
        }
    }

    /// Records a session's start with the client's `initialize` parameters
    /// and the client it belongs to.
    async fn record_start(
        &self,
        id: &ConversationId,
        state: &SessionState,
        owner: &Owner,
    ) -> Result<(), SessionStoreError> {
        let mut message = Message::system(SESSION_STARTED);
        // A client may send a `clientInfo` of megabytes; what is kept of it
        // is bounded.
        let mut state = serde_json::to_value(state)?;
        bound_strings(&mut state, MAX_STORED_STRING);
        if let Some(fields) = state.as_object_mut() {
            if let Some(client) = &owner.client {
                fields.insert(OWNER_FIELD.to_owned(), client.as_str().into());
            }
            if let Some(subject) = &owner.subject {
                fields.insert(SUBJECT_FIELD.to_owned(), subject.as_ref().into());
            }
        }
        message.tool_input = Some(state.to_string());
        self.store.append(id, message).await?;
        Ok(())
    }

    /// Whose a stored session is: `None` when there is no such session; an
    /// owner without a client for a session opened with the shared token or
    /// none. An error when the store cannot say.
    pub(crate) async fn stored_owner(
        &self,
        id: &ConversationId,
    ) -> Result<Option<Owner>, StoreError> {
        let Some(started) = self.start_text(id).await? else {
            return Ok(None);
        };
        // A start record that does not parse names no client: only callers
        // without one (the shared token) may use it.
        let record: serde_json::Value =
            serde_json::from_str(&started).unwrap_or(serde_json::Value::Null);
        let field = |name| record.get(name).and_then(serde_json::Value::as_str);
        Ok(Some(Owner {
            client: field(OWNER_FIELD).and_then(|name| ClientName::new(name).ok()),
            subject: field(SUBJECT_FIELD).map(Arc::from),
        }))
    }

    /// The text of a stored session's start record, when it has one.
    async fn start_text(&self, id: &ConversationId) -> Result<Option<String>, StoreError> {
        let messages = self.store.messages(id).await?;
        Ok(messages.into_iter().rev().find_map(|stored| {
            let message = stored.message;
            (message.kind == MessageKind::System && message.content == SESSION_STARTED)
                .then_some(message.tool_input)
                .flatten()
        }))
    }

    /// The client's `initialize` parameters for a stored session.
    pub async fn start_record(
        &self,
        id: &ConversationId,
    ) -> Result<Option<SessionState>, SessionStoreError> {
        Ok(match self.start_text(id).await? {
            Some(text) => Some(serde_json::from_str(&text)?),
            None => None,
        })
    }

    /// Lets go of a session's in-memory state; its history stays, so its
    /// next request restores it.
    pub async fn forget(&self, id: &ConversationId) {
        self.live.lock().await.remove(id);
    }

    /// Ends a session: forgets it and deletes its history.
    pub async fn end(&self, id: &ConversationId) -> Result<(), SessionStoreError> {
        self.live.lock().await.remove(id);
        self.store.delete(id).await?;
        Ok(())
    }

    /// Lets go of live sessions idle longer than [`HELD_IN_MEMORY`] (or the
    /// idle timeout, when shorter) and deletes stored conversations idle
    /// longer than the idle timeout. Returns how many stored ones went.
    pub async fn expire_idle(&self) -> usize {
        let cutoff = Instant::now().checked_sub(self.idle_timeout.min(HELD_IN_MEMORY));
        if let Some(cutoff) = cutoff {
            self.live.lock().await.retain(|_, session| {
                session
                    .seen
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .last
                    >= cutoff
            });
        }
        let Some(cutoff) = SystemTime::now().checked_sub(self.idle_timeout) else {
            return 0;
        };
        match self.store.expire_idle(cutoff).await {
            Ok(expired) => expired,
            Err(error) => {
                tracing::error!(%error, "expiring idle sessions");
                0
            }
        }
    }

    /// The interval at which [`expire_idle`](Self::expire_idle) should run.
    pub fn expiry_interval(&self) -> Duration {
        (self.idle_timeout / 4).clamp(Duration::from_secs(1), Duration::from_secs(60))
    }

    /// The session's tools rebuilt from its history, and the latest
    /// message they were rebuilt from; `Err` (logged) when the history
    /// cannot be read.
    async fn restore(
        &self,
        id: &ConversationId,
    ) -> Result<(SessionTools, Option<MessageId>), StoreError> {
        let messages = self.store.messages(id).await.inspect_err(|error| {
            tracing::error!(session = %id, %error, "history unreadable");
        })?;
        let rebuilt_at = messages.last().map(|stored| stored.id);
        let (tools, skipped) = self.toolbox.with_catalog(|catalog| {
            SessionTools::restore(messages.iter().map(|stored| &stored.message), catalog)
        });
        for skipped in &skipped {
            tracing::info!(session = %id, index = skipped.index, reason = ?skipped.reason, "history event skipped");
        }
        Ok((tools, rebuilt_at))
    }

    /// Keeps a session in use from expiring: the store hears of it at most
    /// a few times per idle period.
    async fn mark_seen(&self, id: &ConversationId, session: &Session) {
        let now = Instant::now();
        let touch = {
            let mut seen = session.seen.lock().unwrap_or_else(PoisonError::into_inner);
            seen.last = now;
            let due = now.duration_since(seen.touched) >= self.idle_timeout / 8;
            if due {
                seen.touched = now;
            }
            due
        };
        if touch && let Err(error) = self.store.touch(id).await {
            tracing::error!(session = %id, %error, "session activity not stored");
        }
    }
}

#[cfg(test)]
#[path = "sessions_tests.rs"]
mod tests;
