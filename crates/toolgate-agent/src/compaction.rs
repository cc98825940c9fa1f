//! How compaction is configured and reported: [`Compaction`] (when the
//! loop compacts), [`Compacted`] (what one did), [`CompactError`] (why one
//! did not); the compaction itself is `compact.rs`'s.

use toolgate_core::{GroupId, TokenCounter};
use toolgate_llm::{ChatMessage, LlmError, ToolSpec, Usage};
use toolgate_store::StoreError;

/// When the agent loop compacts a conversation by itself.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub enum Compaction {
    /// Never ([`Agent::compact`](crate::Agent::compact) still does on request).
    #[default]
    Off,
    /// Before a model call whose input would pass this many tokens.
    AboveTokens(usize),
    /// Before a model call whose input would pass this share (above 0, at
    /// most 1) of the model's context window
    /// ([`ChatModel::context_window`](toolgate_llm::ChatModel::context_window)):
    /// what `[agent] compact_at` of `toolgate.toml` sets.
    AtShare(f64),
}

impl Compaction {
    /// The threshold in input tokens for a model of `window` tokens; `None`
    /// when off.
    pub fn threshold(self, window: usize) -> Option<usize> {
        match self {
            Self::Off => None,
            Self::AboveTokens(limit) => Some(limit),
            Self::AtShare(share) => Some((share.clamp(0.0, 1.0) * window as f64) as usize),
        }
    }
}

/// A compaction that was stored.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Compacted {
    /// The summary the model wrote.
    pub summary: String,
    /// The loaded groups the record carries, in load order.
    pub loaded_groups: Vec<GroupId>,
    /// Input tokens of the conversation before (counted as the threshold
    /// is: system prompt, messages and tool schemas).
    pub tokens_before: usize,
    /// The same, counted on what the model reads after.
    pub tokens_after: usize,
    /// What the provider counted for the summary call, when it said.
    pub usage: Option<Usage>,
}

/// Why a compaction did not happen. The conversation is as it was.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CompactError {
    /// Nothing to summarize: the conversation is empty, or already starts
    /// at a summary with nothing after it.
    #[error("there is nothing to compact")]
    NothingToCompact,
    /// The summary call failed.
    #[error("the summary call failed: {0}")]
    Model(#[from] LlmError),
    /// The model answered without a summary (with tool calls, or no text).
    #[error("the model answered the summary request without a summary")]
    NoSummary,
    /// The summary would not make the conversation smaller: what the model
    /// reads after it (counted as the threshold is) is at least as long as
    /// what it read before.
    #[error(
        "the summary would not make the conversation smaller ({before} tokens before, {after} after)"
    )]
    NotSmaller {
        /// Input tokens before.
        before: usize,
        /// Input tokens with the summary in place of the conversation.
        after: usize,
    },
    /// The summary alone would pass the compaction threshold: the next
    /// turn would compact again.
    #[error(
        "the summary is too long: the conversation would be {after} tokens with it, past the compaction threshold of {threshold}"
    )]
    PastThreshold {
        /// Input tokens with the summary in place of the conversation.
        after: usize,
        /// The threshold.
        threshold: usize,
    },
    /// A message was added while the summary was written: the summary no
    /// longer covers the conversation, so it was not stored.
    #[error("the conversation changed while its summary was written")]
    Changed,
    /// The store failed.
    #[error("the conversation store failed: {0}")]
    Store(#[from] StoreError),
    /// The compaction was cancelled.
    #[error("the compaction was cancelled")]
    Cancelled,
}

/// What one model call would be sent: the base of a summary request.
pub(crate) struct Context {
    pub(crate) system: String,
    pub(crate) messages: Vec<ChatMessage>,
    pub(crate) tools: Vec<ToolSpec>,
    pub(crate) tool_tokens: usize,
}

impl Context {
    /// Input tokens, as the threshold counts them.
    pub(crate) fn tokens(&self, counter: &TokenCounter) -> usize {
        counter.count(&self.system)
            + self
                .messages
                .iter()
                .map(|message| message_tokens(counter, message))
                .sum::<usize>()
            + self.tool_tokens
    }
}

/// Tokens of one message's text: its content, and a call's name and
/// arguments.
fn message_tokens(counter: &TokenCounter, message: &ChatMessage) -> usize {
    match message {
        ChatMessage::User(text) => counter.count(text),
        ChatMessage::Assistant { text, tool_calls } => {
            counter.count(text)
                + tool_calls
                    .iter()
                    .map(|call| counter.count(&call.name) + counter.count(&call.arguments))
                    .sum::<usize>()
        }
        ChatMessage::ToolResult { content, .. } => counter.count(content),
    }
}

#[cfg(test)]
#[path = "compaction_tests.rs"]
mod tests;
