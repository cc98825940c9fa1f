//! The stored form of a message, and the millisecond times every backend
//! stores.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use toolgate_core::{Message, MessageKind, ToolStatus};

use crate::error::{Result, StoreError};
use crate::id::MessageId;

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
