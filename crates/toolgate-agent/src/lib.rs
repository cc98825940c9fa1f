//! Tool execution and the agent loop for toolgate: the [`ToolExecutor`] and
//! [`ToolHost`] traits every tool source implements, the [built-in tool
//! groups](BuiltinTools) (`time`, `files`, `web`, `prompt_manager`) that ship with the gateway and the
//! agent, and the [`Agent`] turn loop over a [`ChatModel`](toolgate_llm::ChatModel).
#![deny(missing_docs)]
#![deny(clippy::print_stdout, clippy::print_stderr)]

mod agent;
mod builtin;
mod executor;
mod host;
mod semantic;
mod transcript;

pub use agent::{
    Agent, AgentError, AgentOptions, CANCELLED_RESULT, CallReport, DEFAULT_SYSTEM_PROMPT, TurnEnd,
    TurnEvent, TurnEvents, TurnOutcome,
};
pub use builtin::{
    BuiltinConfig, BuiltinError, BuiltinTools, FilesAccess, MAX_SEARCH_RESULTS, PROMPT_TYPES,
    WebConfig,
};
pub use executor::{CallContext, ToolExecutor, ToolFuture, ToolOutput};
pub use host::{PrepareFuture, ToolHost};
pub use semantic::SemanticRouting;
pub use transcript::{INTERRUPTED_RESULT, chat_messages};
