//! The agent loop of toolgate: the [`Agent`] turn loop over a
//! [`ChatModel`](toolgate_llm::ChatModel), with the tools of a
//! [`Toolbox`](toolgate_tools::Toolbox) (the runtime it shares with the MCP
//! gateway): the loaded groups rebuilt from history each turn, routing
//! pre-loads and escalation, tool calls in parallel, every step stored.
#![deny(missing_docs)]
#![deny(clippy::print_stdout, clippy::print_stderr)]

mod agent;
mod compact;
mod compaction;
mod event;
mod progress;
mod route_outcome;
mod routing;
mod semantic;
mod tool_calls;
mod transcript;
mod turn;

pub use agent::{Agent, AgentError, AgentOptions, DEFAULT_SYSTEM_PROMPT, OutcomeLog};
pub use compaction::{CompactError, Compacted, Compaction};
pub use event::{CallReport, TurnEnd, TurnEvent, TurnEvents, TurnOutcome};
pub use semantic::SemanticRouting;
pub use tool_calls::{CANCELLED_RESULT, FAILED_RESULT};
pub use transcript::{INTERRUPTED_RESULT, chat_messages, chat_messages_with};
