//! Identifiers (of conversations, messages and agents) and the stored form
//! of a message.

use std::fmt;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use toolgate_core::{Message, MessageKind, ToolStatus};

use crate::error::{Result, StoreError};

/// Identifies a conversation (an agent chat, or an MCP gateway session).
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ConversationId(String);

impl ConversationId {
    /// Wraps an id chosen by the caller (a session id, a UUID, ...).
    pub fn new(id: impl Into<String>) -> Self {
        Self(id.into())
    }

    /// The id as text.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for ConversationId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// Stable id of a stored agent, e.g. `sage`: chosen by whoever creates the
/// agent, and how conversations and tools refer to it.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct AgentId(String);

impl AgentId {
    /// Wraps an id chosen by the caller.
    pub fn new(id: impl Into<String>) -> Self {
        Self(id.into())
    }

    /// The id as text.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl From<&str> for AgentId {
    fn from(id: &str) -> Self {
        Self::new(id)
    }
}

impl From<String> for AgentId {
    fn from(id: String) -> Self {
        Self::new(id)
    }
}

impl fmt::Display for AgentId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// Position of a message in its store: increasing in append order.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct MessageId(pub i64);

/// A message as stored: its id and when it was appended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StoredMessage {
    /// Append-order id.
    pub id: MessageId,
    /// When it was appended (millisecond precision).
    pub created: SystemTime,
    /// The message.
    pub message: Message,
}

/// Now, at the millisecond precision every backend stores.
pub(crate) fn now_millis() -> SystemTime {
    from_millis(to_millis(SystemTime::now()))
}

pub(crate) fn to_millis(time: SystemTime) -> i64 {
    time.duration_since(UNIX_EPOCH)
        .map_or(0, |since| since.as_millis() as i64)
}

pub(crate) fn from_millis(millis: i64) -> SystemTime {
    UNIX_EPOCH + Duration::from_millis(millis.max(0) as u64)
}

/// Raw column values of one message row, as every SQL backend stores it,
/// decoded outside the driver so that a bad value becomes
/// [`StoreError::Corrupt`] with the row id.
pub(crate) struct MessageRow {
    pub(crate) id: i64,
    pub(crate) kind: String,
    pub(crate) content: String,
    pub(crate) tool_call_id: Option<String>,
    pub(crate) tool_name: Option<String>,
    pub(crate) tool_input: Option<String>,
    pub(crate) tool_status: Option<String>,
    pub(crate) created_ms: i64,
}

impl MessageRow {
    pub(crate) fn decode(self) -> Result<StoredMessage> {
        let corrupt = |reason: String| StoreError::Corrupt {
            id: self.id,
            reason,
        };
        let kind = MessageKind::from_stored(&self.kind)
            .ok_or_else(|| corrupt(format!("unknown kind `{}`", self.kind)))?;
        let tool_status = match self.tool_status.as_deref() {
            None => None,
            Some(text) => Some(
                ToolStatus::from_stored(text)
                    .ok_or_else(|| corrupt(format!("unknown tool status `{text}`")))?,
            ),
        };
        Ok(StoredMessage {
            id: MessageId(self.id),
            created: from_millis(self.created_ms),
            message: Message {
                kind,
                content: self.content,
                tool_call_id: self.tool_call_id,
                tool_name: self.tool_name,
                tool_input: self.tool_input,
                tool_status,
            },
        })
    }
}
