//! The replay's two stand-ins: [`OracleModel`], an in-process
//! [`ChatModel`] that plays a turn's gold calls, and [`FixedSource`], the
//! tool source that answers every call with [`FIXED_RESULT`].
//!
//! The oracle takes each gold call in order: when its tool is in the
//! request's tool list, or loaded (as the conversation's history says: a
//! load whose schemas went in the conversation leaves the tool list as it
//! was), it calls it (one call per response, as the calls of a turn depend
//! on each other), else it loads the tool's group with `load_tool_group`
//! and calls it on the next response (so a group the load budget unloaded
//! is loaded again). With no call left it answers.
//! It calls a tool it loaded for and still does not see anyway, so a load
//! that does not make a tool callable shows as a failed call, never as a
//! loop. Every request's input is counted (system prompt, messages, tool
//! schemas, as the agent counts them) and reported as the call's usage.

use std::sync::{Arc, Mutex, PoisonError};

use async_trait::async_trait;
use serde_json::json;
use toolgate_core::{
    Catalog, GROUP_NAME_PARAMETER, GroupId, LOAD_TOOL_GROUP_TOOL_NAME, TokenCounter,
    ToolDefinition, restore_active_set,
};
use toolgate_llm::{
    ChatMessage, ChatModel, ChatRequest, ChatResponse, EventSink, ModelFuture, StopReason,
    ToolCall, Usage,
};
use toolgate_store::{ConversationId, ConversationStore, MemoryStore};
use toolgate_tools::{
    CallContext, SourceCall, SourceOffer, ToolCallError, ToolOutput, ToolSource, Toolbox,
};

use crate::conversations::GoldCall;

/// What every tool of the replay answers: the tools have no implementation.
pub const FIXED_RESULT: &str = "ok";

/// The final answer of each turn.
pub(crate) const ANSWER: &str = "Done.";

/// A scripted model that plays the gold calls of the turn under way.
#[derive(Debug)]
pub(crate) struct OracleModel {
    counter: Arc<TokenCounter>,
    /// Where the agent keeps the conversation, and its tools: what is
    /// loaded is restored from there.
    store: Arc<MemoryStore>,
    toolbox: Arc<Toolbox>,
    /// Each tool's group.
    groups: std::collections::HashMap<String, GroupId>,
    state: Mutex<State>,
}

#[derive(Debug, Default)]
struct State {
    conversation: Option<ConversationId>,
    calls: Vec<GoldCall>,
    next: usize,
    /// The call the last load was for.
    loaded_for: Option<usize>,
    /// Ids handed out, so each call's is new.
    issued: u64,
}

impl OracleModel {
    /// An oracle over `catalog`'s groups, counting input with `counter`,
    /// for an agent over `toolbox` and `store`.
    pub(crate) fn new(
        catalog: &Catalog,
        counter: Arc<TokenCounter>,
        toolbox: Arc<Toolbox>,
        store: Arc<MemoryStore>,
    ) -> Self {
        let groups = catalog
            .tools()
            .filter_map(|tool| Some((tool.definition.name.to_string(), tool.group?.clone())))
            .collect();
        Self {
            counter,
            store,
            toolbox,
            groups,
            state: Mutex::new(State::default()),
        }
    }

    /// The next turn's calls, in `conversation`.
    pub(crate) fn begin(&self, conversation: &ConversationId, calls: &[GoldCall]) {
        let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        state.conversation = Some(conversation.clone());
        state.calls = calls.to_vec();
        state.next = 0;
        state.loaded_for = None;
    }

    /// Whether `tool` is loaded in `conversation`, as its stored history
    /// restores it.
    async fn loaded(&self, conversation: Option<ConversationId>, tool: &str) -> bool {
        let Some(conversation) = conversation else {
            return false;
        };
        let Ok(history) = self.store.messages(&conversation).await else {
            return false;
        };
        let catalog = self.toolbox.catalog();
        restore_active_set(history.iter().map(|m| &m.message), &catalog)
            .active
            .check_available(&catalog, tool)
            .is_ok()
    }

    /// The tool of the turn's next call, and the conversation.
    fn next_tool(&self) -> (Option<ConversationId>, Option<String>) {
        let state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        let tool = state.calls.get(state.next).map(|call| call.tool.clone());
        (state.conversation.clone(), tool)
    }

    /// What to answer `request`, the next call's tool `loaded` or not.
    fn respond(&self, request: &ChatRequest, loaded: bool) -> ChatResponse {
        let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        let Some(call) = state.calls.get(state.next).cloned() else {
            return ChatResponse {
                text: ANSWER.to_owned(),
                tool_calls: Vec::new(),
                stop_reason: StopReason::EndTurn,
                usage: Some(self.usage(request)),
            };
        };
        let listed = loaded || request.tools.iter().any(|tool| tool.name == call.tool);
        let group = self.groups.get(&call.tool);
        let tool_call = match group {
            Some(group) if !listed && state.loaded_for != Some(state.next) => {
                state.loaded_for = Some(state.next);
                (
                    LOAD_TOOL_GROUP_TOOL_NAME.to_owned(),
                    json!({ GROUP_NAME_PARAMETER: group.as_str() }).to_string(),
                )
            }
            _ => {
                state.next += 1;
                (call.tool, call.arguments)
            }
        };
        state.issued += 1;
        ChatResponse {
            text: String::new(),
            tool_calls: vec![ToolCall {
                id: format!("call_{}", state.issued),
                name: tool_call.0,
                arguments: tool_call.1,
            }],
            stop_reason: StopReason::ToolUse,
            usage: Some(self.usage(request)),
        }
    }

    /// The request's input tokens: its system prompt, its messages' texts
    /// and calls, and its tools' schemas, each as the agent counts them.
    fn usage(&self, request: &ChatRequest) -> Usage {
        let counter = &self.counter;
        let messages: usize = request
            .messages
            .iter()
            .map(|message| match message {
                ChatMessage::User(text) => counter.count(text),
                ChatMessage::Assistant { text, tool_calls } => {
                    counter.count(text)
                        + tool_calls
                            .iter()
                            .map(|call| counter.count(&call.name) + counter.count(&call.arguments))
                            .sum::<usize>()
                }
                ChatMessage::ToolResult { content, .. } => counter.count(content),
            })
            .sum();
        let tools: usize = request
            .tools
            .iter()
            .map(|tool| {
                let function = json!({
                    "type": "function",
                    "function": {
                        "name": tool.name,
                        "description": tool.description,
                        "parameters": tool.input_schema,
                    }
                });
                counter.count(&function.to_string())
            })
            .sum();
        let input = counter.count(&request.system) + messages + tools;
        Usage {
            input_tokens: input as u64,
            output_tokens: 0,
            cached_input_tokens: None,
        }
    }
}

impl ChatModel for OracleModel {
    fn provider(&self) -> &str {
        "oracle"
    }

    fn model(&self) -> &str {
        "gold-calls"
    }

    fn complete<'a>(&'a self, request: &'a ChatRequest, _events: EventSink<'a>) -> ModelFuture<'a> {
        Box::pin(async move {
            let (conversation, tool) = self.next_tool();
            let loaded = match tool {
                Some(tool) => self.loaded(conversation, &tool).await,
                None => false,
            };
            Ok(self.respond(request, loaded))
        })
    }
}

/// Offers a catalog's tools, by group or all as core tools, and answers
/// every call with [`FIXED_RESULT`].
#[derive(Debug)]
pub(crate) struct FixedSource {
    offer: SourceOffer,
}

/// Which way [`FixedSource`] offers the tools.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Offered {
    /// In their groups, loaded on demand.
    ByGroup,
    /// Every tool a core tool: all of them on every call.
    AllCore,
}

impl FixedSource {
    pub(crate) fn new(catalog: &Catalog, offered: Offered) -> Self {
        let own = |tool: &&ToolDefinition| {
            toolgate_core::MetaTool::from_name(tool.name.as_str()).is_none()
        };
        let mut core_tools: Vec<ToolDefinition> =
            catalog.core_tools().filter(own).cloned().collect();
        let offer = match offered {
            Offered::ByGroup => SourceOffer {
                core_tools,
                groups: catalog
                    .groups()
                    .map(|group| {
                        let tools = catalog.group_tools(group.id.as_str()).cloned().collect();
                        (group.clone(), tools)
                    })
                    .collect(),
            },
            Offered::AllCore => {
                for group in catalog.groups() {
                    core_tools.extend(catalog.group_tools(group.id.as_str()).cloned());
                }
                SourceOffer {
                    core_tools,
                    groups: Vec::new(),
                }
            }
        };
        Self { offer }
    }
}

#[async_trait]
impl ToolSource for FixedSource {
    fn offer(&self) -> SourceOffer {
        self.offer.clone()
    }

    async fn call(
        &self,
        _call: SourceCall,
        _context: &CallContext,
    ) -> Result<ToolOutput, ToolCallError> {
        Ok(ToolOutput::text(FIXED_RESULT))
    }
}
