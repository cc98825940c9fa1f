//! The provider-neutral request and response model, and the [`ChatModel`]
//! trait every provider implements.

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::time::Duration;

use serde_json::Value;

use crate::error::LlmError;

/// One model call: the system prompt, the conversation so far, and the tools
/// the model may call.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ChatRequest {
    /// The system prompt; empty for none.
    pub system: String,
    /// The conversation, oldest first.
    pub messages: Vec<ChatMessage>,
    /// The tools offered on this call, in the order the model sees them.
    pub tools: Vec<ToolSpec>,
}

/// A tool as a provider receives it.
#[derive(Clone, Debug, PartialEq)]
pub struct ToolSpec {
    /// The tool's name.
    pub name: String,
    /// What it does.
    pub description: String,
    /// JSON Schema of its input (an object schema).
    pub input_schema: Value,
}

/// One message of the conversation sent to the model.
#[derive(Clone, Debug, PartialEq)]
pub enum ChatMessage {
    /// The user's text.
    User(String),
    /// The model's earlier answer: its text (may be empty) and the tool calls
    /// it made, in order.
    Assistant {
        /// The text.
        text: String,
        /// The tool calls.
        tool_calls: Vec<ToolCall>,
    },
    /// The result of one tool call. Results follow the assistant message that
    /// made the calls, one per call, in call order.
    ToolResult {
        /// The call's id, as the model gave it.
        call_id: String,
        /// The tool called.
        name: String,
        /// What the model reads.
        content: String,
        /// Whether the call failed.
        is_error: bool,
        /// The call the result asks the model to make next, when it asks
        /// for one it spells out whole (the hint after a call of a tool not
        /// loaded asks for its load).
        next_call: Option<NextCall>,
    },
}

/// A call a tool's result asks for. The content already says it in words,
/// which is all a model with native tool calls needs; a prompted model
/// writing free text is also shown the block to reply with, because such a
/// model tends to relay an instruction to the user instead of following it
/// (see [`crate::ToolCalls`]).
#[derive(Clone, Debug, PartialEq)]
pub struct NextCall {
    /// What the call does, to finish "To ..., reply with": `load it`.
    pub purpose: String,
    /// The tool to call.
    pub name: String,
    /// Its arguments.
    pub arguments: serde_json::Value,
}

/// A tool call the model made.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ToolCall {
    /// The provider's id for the call (links the result to it).
    pub id: String,
    /// The tool's name.
    pub name: String,
    /// The arguments as JSON text, exactly as the model produced them (they
    /// may not parse: the caller decides what to do then).
    pub arguments: String,
}

/// Why the model stopped.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum StopReason {
    /// It finished its answer.
    EndTurn,
    /// It wants its tool calls run.
    ToolUse,
    /// It hit the output token limit.
    MaxTokens,
    /// Something else, as the provider spelled it.
    Other(String),
}

/// Token usage as the provider reported it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Usage {
    /// Prompt (input) tokens, cached ones included.
    pub input_tokens: u64,
    /// Completion (output) tokens.
    pub output_tokens: u64,
    /// Prompt tokens served from the provider's cache, when reported.
    pub cached_input_tokens: Option<u64>,
}

/// The model's complete answer to one [`ChatRequest`].
#[derive(Clone, Debug, PartialEq)]
pub struct ChatResponse {
    /// Its text (empty when it only called tools).
    pub text: String,
    /// Its tool calls, in order.
    pub tool_calls: Vec<ToolCall>,
    /// Why it stopped.
    pub stop_reason: StopReason,
    /// Usage, when the provider reported it.
    pub usage: Option<Usage>,
}

/// What happens while a call is under way, for showing it live.
#[derive(Clone, Debug, PartialEq)]
pub enum StreamEvent {
    /// More of the answer's text. A non-streaming call sends the whole text
    /// as one delta, so callers show text the same way either way.
    TextDelta(String),
    /// The model started a tool call (its arguments are still coming).
    ToolCallStarted {
        /// The call's id.
        id: String,
        /// The tool's name.
        name: String,
    },
    /// The provider failed in a way worth retrying; the request is sent again
    /// after `delay`.
    Retrying {
        /// 1 for the first retry.
        attempt: u32,
        /// How long until it is sent again.
        delay: Duration,
        /// What went wrong (`HTTP 429 Too Many Requests`, ...).
        reason: String,
    },
}

/// Receives [`StreamEvent`]s during a call.
pub type EventSink<'a> = &'a mut (dyn FnMut(StreamEvent) + Send);

/// The most one request may carry of tools
/// ([`crate::ProviderConfig::max_tools`] and
/// [`crate::ProviderConfig::max_tool_tokens`]); `None` for no limit.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ToolLimits {
    /// Most tools.
    pub tools: Option<usize>,
    /// Most tokens of tool schemas.
    pub tokens: Option<usize>,
}

impl ToolLimits {
    /// Whether a request of `tools` tools costing `tokens` keeps within
    /// both limits.
    pub fn admit(&self, tools: usize, tokens: usize) -> bool {
        self.tools.is_none_or(|limit| tools <= limit)
            && self.tokens.is_none_or(|limit| tokens <= limit)
    }
}

/// The future a [`ChatModel`] returns.
pub type ModelFuture<'a> =
    Pin<Box<dyn Future<Output = Result<ChatResponse, LlmError>> + Send + 'a>>;

/// The context window assumed for a model whose window is neither told
/// (`context_window` in `[model]`) nor known from its name: the smallest of
/// the current hosted models' (128,000 tokens), so that compaction comes
/// too early rather than after the provider refuses.
pub const DEFAULT_CONTEXT_WINDOW: usize = 128_000;

/// A chat model behind some provider's API.
///
/// Dropping the future abandons the call (that is how callers cancel).
pub trait ChatModel: Send + Sync + fmt::Debug {
    /// The provider's name: `openai`, `anthropic`.
    fn provider(&self) -> &str;

    /// The model's name, as sent to the provider.
    fn model(&self) -> &str;

    /// How many tools, and how many tokens of their schemas, one request
    /// may carry; no limit unless the provider has one.
    fn tool_limits(&self) -> ToolLimits {
        ToolLimits::default()
    }

    /// Tokens the model reads at most in one request (see
    /// [`crate::ProviderConfig::context_window`]):
    /// [`DEFAULT_CONTEXT_WINDOW`] unless the provider knows better.
    fn context_window(&self) -> usize {
        DEFAULT_CONTEXT_WINDOW
    }

    /// Sends `request` and returns the complete answer, reporting text deltas,
    /// tool-call starts and retries to `events` as they happen.
    fn complete<'a>(&'a self, request: &'a ChatRequest, events: EventSink<'a>) -> ModelFuture<'a>;
}

/// Sends a whole answer's text and calls as events, as a stream would.
pub(crate) fn report_whole(answer: &ChatResponse, events: EventSink<'_>) {
    if !answer.text.is_empty() {
        events(StreamEvent::TextDelta(answer.text.clone()));
    }
    for call in &answer.tool_calls {
        events(StreamEvent::ToolCallStarted {
            id: call.id.clone(),
            name: call.name.clone(),
        });
    }
}
