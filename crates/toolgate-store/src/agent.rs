//! [`AgentRecord`] and [`AgentStore`]: agents stored with the conversations
//! that use them.

use std::collections::BTreeMap;
use std::fmt;
use std::future::Future;
use std::pin::Pin;

use crate::error::{Result, StoreError};
use crate::id::{AgentId, ConversationId};

/// The prompt type of an agent's system prompt.
pub const SYSTEM_PROMPT: &str = "system";

/// An agent: its name, its prompts (the system prompt under
/// [`SYSTEM_PROMPT`], others under their own type) and the tools and groups
/// it may use (empty: all of them).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct AgentRecord {
    /// Stable id, chosen by whoever creates the agent.
    pub id: AgentId,
    /// The name it goes by; an agent can change it.
    pub name: String,
    /// Prompt type -> text.
    pub prompts: BTreeMap<String, String>,
    /// Enabled tool and group names, in order; empty enables everything.
    pub tools: Vec<String>,
}

impl AgentRecord {
    /// An agent with no prompts and every tool.
    pub fn new(id: impl Into<AgentId>, name: impl Into<String>) -> Self {
        Self {
            id: id.into(),
            name: name.into(),
            ..Self::default()
        }
    }

    /// Its system prompt, when set.
    pub fn system_prompt(&self) -> Option<&str> {
        self.prompt(SYSTEM_PROMPT)
    }

    /// One prompt, when set and not blank.
    pub fn prompt(&self, prompt_type: &str) -> Option<&str> {
        self.prompts
            .get(prompt_type)
            .map(String::as_str)
            .filter(|text| !text.trim().is_empty())
    }
}

/// The future an [`AgentStore`] method returns (and those of the other
/// object-safe stores: [`JsToolStore`](crate::JsToolStore),
/// [`RoutingOutcomeStore`](crate::RoutingOutcomeStore)).
pub type StoreFuture<'a, T> = Pin<Box<dyn Future<Output = Result<T>> + Send + 'a>>;

/// Where agents live, beside the conversations. Object-safe, so tools can
/// hold an `Arc<dyn AgentStore>` whatever the backend.
pub trait AgentStore: Send + Sync + fmt::Debug {
    /// The agent `id`, if stored.
    fn agent<'a>(&'a self, id: &'a AgentId) -> StoreFuture<'a, Option<AgentRecord>>;

    /// Stores `agent`, replacing the one with its id.
    fn save_agent(&self, agent: AgentRecord) -> StoreFuture<'_, ()>;

    /// Every agent, by id.
    fn agents(&self) -> StoreFuture<'_, Vec<AgentRecord>>;

    /// Makes `agent` the conversation's agent, creating the conversation if
    /// it is new. The agent must be stored.
    fn set_conversation_agent<'a>(
        &'a self,
        conversation: &'a ConversationId,
        agent: &'a AgentId,
    ) -> StoreFuture<'a, ()>;

    /// The id of the conversation's agent, if it has one.
    fn conversation_agent<'a>(
        &'a self,
        conversation: &'a ConversationId,
    ) -> StoreFuture<'a, Option<AgentId>>;
}

/// Raw columns of one agent row, as every SQL backend stores it; the JSON
/// columns decode outside the driver.
pub(crate) struct AgentRow {
    pub(crate) id: String,
    pub(crate) name: String,
    pub(crate) prompts: String,
    pub(crate) tools: String,
}

impl AgentRow {
    pub(crate) fn decode(self) -> Result<AgentRecord> {
        let corrupt = |column: &str, error: serde_json::Error| StoreError::CorruptAgent {
            id: self.id.clone(),
            reason: format!("{column}: {error}"),
        };
        let prompts = serde_json::from_str(&self.prompts).map_err(|e| corrupt("prompts", e))?;
        let tools = serde_json::from_str(&self.tools).map_err(|e| corrupt("tools", e))?;
        Ok(AgentRecord {
            id: AgentId::new(self.id),
            name: self.name,
            prompts,
            tools,
        })
    }
}
