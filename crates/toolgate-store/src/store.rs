//! The backend-neutral [`ConversationStore`] trait.

use std::future::Future;
use std::time::SystemTime;

use toolgate_core::{Message, ToolStatus};

use crate::conversation::StoredMessage;
use crate::error::Result;
use crate::id::{ConversationId, MessageId};

/// Where conversations live. Every operation is atomic on its own; appending to
/// a conversation that does not exist yet creates it, so a restarted process
/// and a new one behave the same.
pub trait ConversationStore: Send + Sync {
    /// Appends a message and marks the conversation active now.
    fn append(
        &self,
        conversation: &ConversationId,
        message: Message,
    ) -> impl Future<Output = Result<MessageId>> + Send;

    /// Appends `message` only if the conversation's latest message is still
    /// `last` (`None`: it has none), checked and written in one transaction;
    /// `Ok(None)`, with nothing written, when another message came first.
    /// A compaction record goes in this way: it stands for everything up to
    /// `last`, so it is written whole, or not at all when the conversation
    /// moved on while its summary was being written.
    fn append_after(
        &self,
        conversation: &ConversationId,
        last: Option<MessageId>,
        message: Message,
    ) -> impl Future<Output = Result<Option<MessageId>>> + Send;

    /// The conversation's messages in append order; empty when it is unknown.
    fn messages(
        &self,
        conversation: &ConversationId,
    ) -> impl Future<Output = Result<Vec<StoredMessage>>> + Send;

    /// Sets the status of the tool call `tool_call_id` (its `ToolCall` message)
    /// once the call has finished. Returns whether such a call was found.
    fn set_tool_status(
        &self,
        conversation: &ConversationId,
        tool_call_id: &str,
        status: ToolStatus,
    ) -> impl Future<Output = Result<bool>> + Send;

    /// Marks a stored conversation active now, so idle expiry spares it; a
    /// conversation used without new messages (a gateway session that only
    /// calls tools) stays alive this way. Returns whether it exists.
    fn touch(&self, conversation: &ConversationId) -> impl Future<Output = Result<bool>> + Send;

    /// The id of the conversation's latest message, if it has any: cheap
    /// enough to ask on every request, so a process sharing the store with
    /// others can tell that one of them wrote to a conversation it holds.
    fn last_message_id(
        &self,
        conversation: &ConversationId,
    ) -> impl Future<Output = Result<Option<MessageId>>> + Send;

    /// Whether other processes may write to this store while this one runs
    /// (a database server, not a file this process owns): then a
    /// conversation held in memory must be checked against it before use.
    fn is_shared(&self) -> bool {
        false
    }

    /// Tells the other processes sharing the store that `conversation`
    /// changed (a tool group loaded or unloaded), so one holding it can
    /// rebuild it and tell its client. Nothing for a store no one shares.
    fn announce_change(
        &self,
        conversation: &ConversationId,
    ) -> impl Future<Output = Result<()>> + Send {
        let _ = conversation;
        async { Ok(()) }
    }

    /// The conversations other processes announced as changed, as they
    /// announce them; `None` for a store no one shares.
    fn changes(&self) -> Option<tokio::sync::broadcast::Receiver<ConversationId>> {
        None
    }

    /// Whether the conversation has been stored.
    fn exists(&self, conversation: &ConversationId) -> impl Future<Output = Result<bool>> + Send;

    /// Deletes a conversation and its messages. Returns whether it existed.
    fn delete(&self, conversation: &ConversationId) -> impl Future<Output = Result<bool>> + Send;

    /// Deletes every conversation last active before `cutoff`; returns how many.
    fn expire_idle(&self, cutoff: SystemTime) -> impl Future<Output = Result<usize>> + Send;
}

/// One store shared in a process (gateways restarted over the same memory
/// store, an agent and a gateway on one): every operation is the store's.
impl<T: ConversationStore + Send + Sync + ?Sized> ConversationStore for std::sync::Arc<T> {
    fn append(
        &self,
        conversation: &ConversationId,
        message: Message,
    ) -> impl Future<Output = Result<MessageId>> + Send {
        (**self).append(conversation, message)
    }

    fn append_after(
        &self,
        conversation: &ConversationId,
        last: Option<MessageId>,
        message: Message,
    ) -> impl Future<Output = Result<Option<MessageId>>> + Send {
        (**self).append_after(conversation, last, message)
    }

    fn messages(
        &self,
        conversation: &ConversationId,
    ) -> impl Future<Output = Result<Vec<StoredMessage>>> + Send {
        (**self).messages(conversation)
    }

    fn set_tool_status(
        &self,
        conversation: &ConversationId,
        tool_call_id: &str,
        status: ToolStatus,
    ) -> impl Future<Output = Result<bool>> + Send {
        (**self).set_tool_status(conversation, tool_call_id, status)
    }

    fn touch(&self, conversation: &ConversationId) -> impl Future<Output = Result<bool>> + Send {
        (**self).touch(conversation)
    }

    fn last_message_id(
        &self,
        conversation: &ConversationId,
    ) -> impl Future<Output = Result<Option<MessageId>>> + Send {
        (**self).last_message_id(conversation)
    }

    fn is_shared(&self) -> bool {
        (**self).is_shared()
    }

    fn announce_change(
        &self,
        conversation: &ConversationId,
    ) -> impl Future<Output = Result<()>> + Send {
        (**self).announce_change(conversation)
    }

    fn changes(&self) -> Option<tokio::sync::broadcast::Receiver<ConversationId>> {
        (**self).changes()
    }

    fn exists(&self, conversation: &ConversationId) -> impl Future<Output = Result<bool>> + Send {
        (**self).exists(conversation)
    }

    fn delete(&self, conversation: &ConversationId) -> impl Future<Output = Result<bool>> + Send {
        (**self).delete(conversation)
    }

    fn expire_idle(&self, cutoff: SystemTime) -> impl Future<Output = Result<usize>> + Send {
        (**self).expire_idle(cutoff)
    }
}
