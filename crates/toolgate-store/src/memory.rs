//! [`MemoryStore`]: conversations in process memory, for tests and for
//! one-shot runs that need nothing to survive.

use std::collections::btree_map::Entry;
use std::collections::{BTreeMap, HashMap, VecDeque};
use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::SystemTime;

use toolgate_core::{Message, MessageKind, ToolName, ToolStatus};

use crate::agent::{AgentRecord, AgentStore, StoreFuture};
use crate::conversation::{StoredMessage, now_millis};
use crate::error::{Result, StoreError};
use crate::id::{AgentId, ConversationId, MessageId};
use crate::js_tool::{JsToolRecord, JsToolStore, ToolOwner};
use crate::routing_outcome::{KEPT_ROUTING_OUTCOMES, RoutingOutcome, RoutingOutcomeStore};
use crate::store::ConversationStore;

#[derive(Debug)]
struct Conversation {
    active: SystemTime,
    agent: Option<AgentId>,
    messages: Vec<StoredMessage>,
}

#[derive(Debug, Default)]
struct State {
    next_id: i64,
    conversations: HashMap<ConversationId, Conversation>,
    agents: BTreeMap<AgentId, AgentRecord>,
    js_tools: BTreeMap<(ToolOwner, ToolName), JsToolRecord>,
    /// The revision of each owner's tools that ever changed.
    js_tool_revisions: HashMap<ToolOwner, u64>,
    /// Catalog -> its newest outcomes, oldest first.
    routing_outcomes: HashMap<String, VecDeque<RoutingOutcome>>,
}

impl State {
    /// Raises the revision of `owner`'s tools.
    fn raise_js_tools_revision(&mut self, owner: &ToolOwner) {
        *self.js_tool_revisions.entry(owner.clone()).or_default() += 1;
    }

    /// The conversation, created (active `now`) if it is new.
    fn conversation(&mut self, id: &ConversationId, now: SystemTime) -> &mut Conversation {
        self.conversations
            .entry(id.clone())
            .or_insert_with(|| Conversation {
                active: now,
                agent: None,
                messages: Vec::new(),
            })
    }
}

/// Conversations held in memory; lost when the process ends.
#[derive(Debug, Default)]
pub struct MemoryStore {
    state: Mutex<State>,
}

impl MemoryStore {
    /// An empty store.
    pub fn new() -> Self {
        Self::default()
    }

    fn state(&self) -> MutexGuard<'_, State> {
        // A panic while holding the lock cannot leave State half-updated in a way
        // that matters more than losing the store, so keep serving.
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl ConversationStore for MemoryStore {
    async fn append(&self, conversation: &ConversationId, message: Message) -> Result<MessageId> {
        let now = now_millis();
        let mut state = self.state();
        state.next_id += 1;
        let id = MessageId(state.next_id);
        let entry = state.conversation(conversation, now);
        entry.active = now;
        entry.messages.push(StoredMessage {
            id,
            created: now,
            message,
        });
        Ok(id)
    }

    async fn append_after(
        &self,
        conversation: &ConversationId,
        last: Option<MessageId>,
        message: Message,
    ) -> Result<Option<MessageId>> {
        let now = now_millis();
        let mut state = self.state();
        let latest = state
            .conversations
            .get(conversation)
            .and_then(|entry| entry.messages.last())
            .map(|stored| stored.id);
        if latest != last {
            return Ok(None);
        }
        state.next_id += 1;
        let id = MessageId(state.next_id);
        let entry = state.conversation(conversation, now);
        entry.active = now;
        entry.messages.push(StoredMessage {
            id,
            created: now,
            message,
        });
        Ok(Some(id))
    }

    async fn messages(&self, conversation: &ConversationId) -> Result<Vec<StoredMessage>> {
        Ok(self
            .state()
            .conversations
            .get(conversation)
            .map(|entry| entry.messages.clone())
            .unwrap_or_default())
    }

    async fn set_tool_status(
        &self,
        conversation: &ConversationId,
        tool_call_id: &str,
        status: ToolStatus,
    ) -> Result<bool> {
        let mut state = self.state();
        let Some(entry) = state.conversations.get_mut(conversation) else {
            return Ok(false);
        };
        let call = entry.messages.iter_mut().rev().find(|stored| {
            stored.message.kind == MessageKind::ToolCall
                && stored.message.tool_call_id.as_deref() == Some(tool_call_id)
        });
        Ok(call
            .map(|stored| stored.message.tool_status = Some(status))
            .is_some())
    }

    async fn touch(&self, conversation: &ConversationId) -> Result<bool> {
        let now = now_millis();
        Ok(self
            .state()
            .conversations
            .get_mut(conversation)
            .map(|entry| entry.active = now)
            .is_some())
    }

    async fn last_message_id(&self, conversation: &ConversationId) -> Result<Option<MessageId>> {
        Ok(self
            .state()
            .conversations
            .get(conversation)
            .and_then(|entry| entry.messages.last())
            .map(|stored| stored.id))
    }

    async fn exists(&self, conversation: &ConversationId) -> Result<bool> {
        Ok(self.state().conversations.contains_key(conversation))
    }

    async fn delete(&self, conversation: &ConversationId) -> Result<bool> {
        Ok(self.state().conversations.remove(conversation).is_some())
    }

    async fn expire_idle(&self, cutoff: SystemTime) -> Result<usize> {
        let mut state = self.state();
        let before = state.conversations.len();
        state
            .conversations
            .retain(|_, entry| entry.active >= cutoff);
        Ok(before - state.conversations.len())
    }
}

impl AgentStore for MemoryStore {
    fn agent<'a>(&'a self, id: &'a AgentId) -> StoreFuture<'a, Option<AgentRecord>> {
        let agent = self.state().agents.get(id).cloned();
        Box::pin(async move { Ok(agent) })
    }

    fn save_agent(&self, agent: AgentRecord) -> StoreFuture<'_, ()> {
        self.state().agents.insert(agent.id.clone(), agent);
        Box::pin(async { Ok(()) })
    }

    fn agents(&self) -> StoreFuture<'_, Vec<AgentRecord>> {
        let agents = self.state().agents.values().cloned().collect();
        Box::pin(async move { Ok(agents) })
    }

    fn set_conversation_agent<'a>(
        &'a self,
        conversation: &'a ConversationId,
        agent: &'a AgentId,
    ) -> StoreFuture<'a, ()> {
        let mut state = self.state();
        let result = if state.agents.contains_key(agent) {
            state.conversation(conversation, now_millis()).agent = Some(agent.clone());
            Ok(())
        } else {
            Err(StoreError::UnknownAgent(agent.clone()))
        };
        Box::pin(async move { result })
    }

    fn conversation_agent<'a>(
        &'a self,
        conversation: &'a ConversationId,
    ) -> StoreFuture<'a, Option<AgentId>> {
        let agent = self
            .state()
            .conversations
            .get(conversation)
            .and_then(|c| c.agent.clone());
        Box::pin(async move { Ok(agent) })
    }
}

impl JsToolStore for MemoryStore {
    fn js_tools<'a>(&'a self, owner: &'a ToolOwner) -> StoreFuture<'a, Vec<JsToolRecord>> {
        let tools = self
            .state()
            .js_tools
            .values()
            .filter(|tool| tool.owner == *owner)
            .cloned()
            .collect();
        Box::pin(async move { Ok(tools) })
    }

    fn js_tool<'a>(
        &'a self,
        owner: &'a ToolOwner,
        name: &'a ToolName,
    ) -> StoreFuture<'a, Option<JsToolRecord>> {
        let tool = self
            .state()
            .js_tools
            .get(&(owner.clone(), name.clone()))
            .cloned();
        Box::pin(async move { Ok(tool) })
    }

    fn js_tools_revision<'a>(&'a self, owner: &'a ToolOwner) -> StoreFuture<'a, u64> {
        let revision = self
            .state()
            .js_tool_revisions
            .get(owner)
            .copied()
            .unwrap_or(0);
        Box::pin(async move { Ok(revision) })
    }

    fn create_js_tool(&self, mut tool: JsToolRecord) -> StoreFuture<'_, Option<JsToolRecord>> {
        let mut state = self.state();
        let key = (tool.owner.clone(), tool.name.clone());
        let created = match state.js_tools.entry(key) {
            Entry::Occupied(_) => None,
            Entry::Vacant(entry) => {
                let now = now_millis();
                (tool.created, tool.updated) = (now, now);
                entry.insert(tool.clone());
                Some(tool)
            }
        };
        if let Some(tool) = &created {
            state.raise_js_tools_revision(&tool.owner);
        }
        Box::pin(async move { Ok(created) })
    }

    fn update_js_tool(&self, mut tool: JsToolRecord) -> StoreFuture<'_, Option<JsToolRecord>> {
        let mut state = self.state();
        let key = (tool.owner.clone(), tool.name.clone());
        let updated = state.js_tools.get_mut(&key).map(|stored| {
            tool.created = stored.created;
            tool.updated = now_millis();
            *stored = tool.clone();
            tool
        });
        if let Some(tool) = &updated {
            state.raise_js_tools_revision(&tool.owner);
        }
        Box::pin(async move { Ok(updated) })
    }

    fn delete_js_tool<'a>(
        &'a self,
        owner: &'a ToolOwner,
        name: &'a ToolName,
    ) -> StoreFuture<'a, bool> {
        let mut state = self.state();
        let deleted = state
            .js_tools
            .remove(&(owner.clone(), name.clone()))
            .is_some();
        if deleted {
            state.raise_js_tools_revision(owner);
        }
        Box::pin(async move { Ok(deleted) })
    }
}

impl RoutingOutcomeStore for MemoryStore {
    fn record_routing_outcome<'a>(
        &'a self,
        catalog: &'a str,
        outcome: RoutingOutcome,
    ) -> StoreFuture<'a, ()> {
        let result = outcome.checked().map(|outcome| {
            let mut state = self.state();
            let kept = state
                .routing_outcomes
                .entry(catalog.to_owned())
                .or_default();
            kept.push_back(outcome);
            while kept.len() > KEPT_ROUTING_OUTCOMES {
                kept.pop_front();
            }
        });
        Box::pin(async move { result })
    }

    fn routing_outcomes<'a>(
        &'a self,
        catalog: &'a str,
        limit: usize,
    ) -> StoreFuture<'a, Vec<RoutingOutcome>> {
        let outcomes = self
            .state()
            .routing_outcomes
            .get(catalog)
            .map(|kept| {
                let skip = kept.len().saturating_sub(limit);
                kept.iter().skip(skip).cloned().collect()
            })
            .unwrap_or_default();
        Box::pin(async move { Ok(outcomes) })
    }
}
