//! [`ToolExecutor`]: what runs a tool call, whatever the tool's source.

use std::fmt;
use std::future::Future;
use std::pin::Pin;

use serde_json::Value;
use toolgate_store::ConversationId;

/// What a tool call returns: the text the model reads, the same result as JSON
/// when there is one, and whether it is an error the model should correct.
///
/// Tool errors are results, not failures: the conversation goes on and the
/// model reads the text.
#[derive(Clone, Debug, PartialEq)]
pub struct ToolOutput {
    /// The text the model reads.
    pub text: String,
    /// The structured result, when the tool has one.
    pub structured: Option<Value>,
    /// Whether the call failed.
    pub is_error: bool,
}

impl ToolOutput {
    /// A plain text success.
    pub fn text(text: impl Into<String>) -> Self {
        Self {
            text: text.into(),
            structured: None,
            is_error: false,
        }
    }

    /// A structured success; the text is the value as pretty JSON.
    pub fn json(value: Value) -> Self {
        Self {
            text: serde_json::to_string_pretty(&value).unwrap_or_else(|_| value.to_string()),
            structured: Some(value),
            is_error: false,
        }
    }

    /// An error the model reads.
    pub fn error(text: impl Into<String>) -> Self {
        Self {
            text: text.into(),
            structured: None,
            is_error: true,
        }
    }
}

/// Who is calling: the conversation, its agent and its turn, for tools whose
/// behaviour depends on them (an agent's prompts, a per-turn search limit).
/// Callers without a conversation (a stateless gateway request) leave it
/// empty.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CallContext {
    /// The conversation the call belongs to: an agent chat or a gateway
    /// session.
    pub conversation: Option<ConversationId>,
    /// The id of the conversation's agent, when it has one.
    pub agent: Option<String>,
    /// The turn within the conversation, when the caller has turns (the agent
    /// loop does; an MCP client's turns are its own business).
    pub turn: Option<u64>,
}

/// The future a [`ToolExecutor`] returns.
pub type ToolFuture<'a> = Pin<Box<dyn Future<Output = ToolOutput> + Send + 'a>>;

/// Runs calls to the tools it owns.
///
/// Callers check availability (the active set) and validate arguments before
/// calling; an executor still answers a tool it does not own with an error
/// output rather than panicking.
pub trait ToolExecutor: Send + Sync + fmt::Debug {
    /// Runs `tool` with `arguments` (a JSON object) for `context`'s caller.
    fn call<'a>(
        &'a self,
        tool: &'a str,
        arguments: Value,
        context: &'a CallContext,
    ) -> ToolFuture<'a>;
}
