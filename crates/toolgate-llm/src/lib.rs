//! toolgate's LLM side: the provider-neutral [`ChatModel`] trait and two
//! providers that speak the real wire formats, [OpenAI-compatible chat
//! completions](OpenAiChat) (OpenAI, Ollama, vLLM, llama.cpp, OpenRouter) and
//! [Anthropic messages](AnthropicChat), streaming (SSE) or not, with retries
//! on 429 and 5xx that honour `Retry-After`. Models without native tool
//! calls get their tools in the prompt instead ([`ToolCalls::Prompted`]).
//!
//! ```no_run
//! # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
//! use toolgate_llm::{ChatMessage, ChatRequest, ModelSettings};
//!
//! // The `[model]` table of toolgate.toml (the command line reads the file),
//! // completed by the environment (TOOLGATE_MODEL, OPENAI_API_KEY, ...).
//! let settings = ModelSettings {
//!     model: Some("gpt-4o-mini".into()),
//!     ..ModelSettings::default()
//! };
//! let config = settings.resolve(&|name| std::env::var(name).ok())?;
//! let model = toolgate_llm::connect(config)?;
//! let request = ChatRequest {
//!     system: "Be brief.".into(),
//!     messages: vec![ChatMessage::User("Hello!".into())],
//!     tools: vec![],
//! };
//! let answer = model.complete(&request, &mut |event| eprintln!("{event:?}")).await?;
//! println!("{}", answer.text);
//! # Ok(()) }
//! ```
#![deny(missing_docs)]
#![deny(clippy::print_stdout, clippy::print_stderr)]

mod anthropic;
mod config;
mod embeddings;
mod error;
mod http;
mod model;
mod openai;
mod prompted;
#[cfg(feature = "scripted")]
pub mod scripted;
mod sse;

use std::sync::Arc;

pub use anthropic::{ANTHROPIC_VERSION, AnthropicChat, DEFAULT_MAX_TOKENS};
pub use config::{
    ApiKey, ConfigError, DEFAULT_MAX_TOOL_TOKENS, MIN_CONTEXT_WINDOW, ModelSettings,
    OPENAI_MAX_TOOLS, ProviderConfig, ProviderKind, RetryPolicy, ToolCalls, known_context_window,
};
pub use embeddings::EmbeddingsClient;
pub use error::LlmError;
pub use model::{
    ChatMessage, ChatModel, ChatRequest, ChatResponse, DEFAULT_CONTEXT_WINDOW, EventSink,
    ModelFuture, NextCall, StopReason, StreamEvent, ToolCall, ToolLimits, ToolSpec, Usage,
};
pub use openai::OpenAiChat;

/// A client for `config`'s provider.
pub fn connect(config: ProviderConfig) -> Result<Arc<dyn ChatModel>, LlmError> {
    Ok(match config.kind {
        ProviderKind::OpenAi => Arc::new(OpenAiChat::new(config)?),
        ProviderKind::Anthropic => Arc::new(AnthropicChat::new(config)?),
    })
}
