//! [`Agent`]: the turn loop. One user message in; model calls and tool calls
//! until the model answers without calling a tool; every step stored as it
//! happens, so a turn cut short (an error, a cancel, a killed process) leaves
//! the conversation exactly as far as it got.
//!
//! Each turn starts from the store: the loaded groups are rebuilt from the
//! history, the system prompt carries the group listing, and each
//! model call sends the active set's schemas. A successful `load_tool_group`
//! widens the set for the next model call of the same turn; with
//! [`LoadedSchemas::Conversation`] it widens what may be called but not the
//! tool list, and its result carries the schemas instead (as the router's
//! pre-loads' message does). The steps live
//! beside this file: `turn.rs` (one turn's state and its model calls),
//! `routing.rs` (pre-loads and escalation) and `tool_calls.rs` (running one
//! response's calls).

use std::sync::Arc;
use std::time::Duration;

use tokio_util::sync::CancellationToken;
use toolgate_core::routing::Router;
use toolgate_core::{
    ActiveToolSet, CALL_TOOL_TOOL_NAME, Deferral, Delivery, GroupId, LoadBudget, LoadedSchemas,
    Message, MessageKind, TokenCounter, ToolStatus, restore_active_set,
};
use toolgate_llm::{ChatModel, LlmError};
use toolgate_store::{
    AgentStore, ConversationId, ConversationStore, RoutingOutcomeStore, StoreError,
};
use toolgate_tools::{Authority, Toolbox};

use crate::compaction::Compaction;
use crate::event::{TurnEnd, TurnEvents, TurnOutcome};
use crate::semantic::SemanticRouting;
use crate::transcript::{INTERRUPTED_RESULT, unanswered_calls};

/// The base system prompt when none is configured.
pub const DEFAULT_SYSTEM_PROMPT: &str = "You are a helpful assistant with access to tools. \
Use them when they help answer the user; answer directly when they do not.";

/// How the agent runs a turn.
#[derive(Clone, Debug)]
pub struct AgentOptions {
    /// The base system prompt; the "Available Tool Groups" section follows it.
    pub system_prompt: String,
    /// Model calls allowed in one turn before it stops without an answer.
    pub max_model_calls: usize,
    /// How long a tool call may run, for tools that set no timeout of their own.
    pub tool_timeout: Duration,
    /// Routes each user turn before the model is called: the
    /// routed groups are pre-loaded (and recorded in history), a low-confidence
    /// turn sees the whole catalog, and no progress escalates to it.
    pub router: Option<Arc<Router>>,
    /// Blends an embeddings endpoint's scores into the router's.
    pub semantic: Option<Arc<SemanticRouting>>,
    /// Where each routed turn's outcome is kept as well as taught to the
    /// router, so that a later run's online calibration starts from it.
    pub outcomes: Option<OutcomeLog>,
    /// What the agent's tool calls may use, scripts' host functions
    /// included. Everything by default: the loop acts for whoever runs it
    /// (`toolgate chat`'s user); a server that runs agents for several
    /// users passes each one's.
    pub authority: Authority,
    /// Where a loaded group's schemas go. With
    /// [`LoadedSchemas::Conversation`] the tool list is the core tools (and
    /// the groups a compaction's snapshot holds), the same on every call: a
    /// load's result carries the schemas, the router's pre-loads are a
    /// message after the user's that carries them the same way, and the
    /// model calls those tools through `call_tool` (which the toolbox must
    /// offer) or by name.
    pub loaded_schemas: LoadedSchemas,
    /// When the loop compacts a conversation grown too long by itself:
    /// never by default ([`Agent::compact`] still does on request).
    pub compaction: Compaction,
    /// The most tokens of schemas the loaded groups may hold: past it, a
    /// load unloads the groups least recently called first (each unload
    /// recorded in history), and its answer says which went. No bound by
    /// default.
    pub load_budget: LoadBudget,
    /// Whether a turn defers the tools (core tools, the group listing,
    /// loads on demand) or sends every tool with no meta-tools: decided
    /// each turn for the catalog as it is and the model's context window
    /// ([`Agent::delivery`]). Always deferred by default; `toolgate chat`
    /// decides automatically (`[tools] defer`).
    pub deferral: Deferral,
}

/// A store of routing outcomes and the key of the catalog they are about
/// ([`toolgate_core::routing::catalog_key`]).
#[derive(Clone, Debug)]
pub struct OutcomeLog {
    /// The store.
    pub store: Arc<dyn RoutingOutcomeStore>,
    /// The catalog's key.
    pub catalog: String,
}

impl Default for AgentOptions {
    fn default() -> Self {
        Self {
            system_prompt: DEFAULT_SYSTEM_PROMPT.to_owned(),
            max_model_calls: 10,
            tool_timeout: Duration::from_secs(120),
            router: None,
            semantic: None,
            outcomes: None,
            authority: Authority::everything(),
            loaded_schemas: LoadedSchemas::ToolList,
            compaction: Compaction::Off,
            load_budget: LoadBudget::Unlimited,
            deferral: Deferral::Always,
        }
    }
}

/// Why a turn stopped early. Everything up to that point is stored.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum AgentError {
    /// The model call failed.
    #[error(transparent)]
    Model(#[from] LlmError),
    /// The store failed.
    #[error("the conversation store failed: {0}")]
    Store(#[from] StoreError),
    /// The turn was cancelled.
    #[error("the turn was cancelled")]
    Cancelled,
    /// A tool's source failed in a way only the operator can fix; the model
    /// was told only that the call failed.
    #[error("tool `{tool}` failed: {reason}")]
    Tool {
        /// The tool called.
        tool: String,
        /// What went wrong, for the operator.
        reason: String,
    },
}

/// The agent: a model, the tools it may use, and where conversations live.
#[derive(Debug)]
pub struct Agent<S> {
    pub(crate) model: Arc<dyn ChatModel>,
    pub(crate) toolbox: Arc<Toolbox>,
    pub(crate) store: Arc<S>,
    pub(crate) options: AgentOptions,
    pub(crate) counter: Arc<TokenCounter>,
    /// The last delivery decided, with the catalog revision it was for.
    pub(crate) delivery: std::sync::Mutex<Option<(u64, Delivery)>>,
}

impl<S: ConversationStore + AgentStore> Agent<S> {
    /// An agent. `counter` measures the tool schemas of each model call for
    /// its call reports (building one takes a moment: share it).
    pub fn new(
        model: Arc<dyn ChatModel>,
        toolbox: Arc<Toolbox>,
        store: Arc<S>,
        options: AgentOptions,
        counter: Arc<TokenCounter>,
    ) -> Self {
        if options.loaded_schemas == LoadedSchemas::Conversation
            && toolbox
                .meta_tools()
                .recognize(CALL_TOOL_TOOL_NAME)
                .is_none()
        {
            tracing::warn!(
                "loaded schemas go in the conversation but the toolbox does not offer call_tool: \
                 the model can call loaded tools only by name"
            );
        }
        Self {
            model,
            toolbox,
            store,
            options,
            counter,
            delivery: std::sync::Mutex::new(None),
        }
    }

    /// The conversation store.
    pub fn store(&self) -> &S {
        &self.store
    }

    /// The model.
    pub fn model(&self) -> &dyn ChatModel {
        self.model.as_ref()
    }

    /// The tools.
    pub fn toolbox(&self) -> &Arc<Toolbox> {
        &self.toolbox
    }

    /// Runs one turn: stores `text` as the user's message, then calls the
    /// model and the tools until the model answers.
    pub async fn send(
        &self,
        conversation: &ConversationId,
        text: &str,
        events: TurnEvents<'_>,
        cancel: &CancellationToken,
    ) -> Result<TurnOutcome, AgentError> {
        self.settle_interrupted(conversation).await?;
        let compaction_tried = self
            .compact_before_turn(conversation, text, events, cancel)
            .await?;
        self.store.append(conversation, Message::user(text)).await?;
        self.run_turn(conversation, Some(text), compaction_tried, events, cancel)
            .await
    }

    /// Finishes a turn that stopped before the model answered (see
    /// [`Self::is_unfinished`]): calls the model on the stored history as it is.
    pub async fn resume(
        &self,
        conversation: &ConversationId,
        events: TurnEvents<'_>,
        cancel: &CancellationToken,
    ) -> Result<TurnOutcome, AgentError> {
        self.settle_interrupted(conversation).await?;
        self.run_turn(conversation, None, false, events, cancel)
            .await
    }

    /// Whether the conversation's last turn stopped before the model answered:
    /// its last message is the user's, or a tool call or result.
    pub async fn is_unfinished(&self, conversation: &ConversationId) -> Result<bool, StoreError> {
        let history = self.store.messages(conversation).await?;
        Ok(history
            .iter()
            .rev()
            .find(|stored| stored.message.kind != MessageKind::System)
            .is_some_and(|stored| {
                matches!(
                    stored.message.kind,
                    MessageKind::User | MessageKind::ToolCall | MessageKind::ToolResult
                )
            }))
    }

    /// The groups the conversation has loaded, whole or partly, in load
    /// order.
    pub async fn loaded_groups(
        &self,
        conversation: &ConversationId,
    ) -> Result<Vec<GroupId>, StoreError> {
        Ok(self
            .active_set(conversation)
            .await?
            .loaded_groups()
            .to_vec())
    }

    /// The conversation's active set as its next turn restores it from the
    /// stored history: which groups are loaded, whole or partly, and the
    /// order of their tools.
    pub async fn active_set(
        &self,
        conversation: &ConversationId,
    ) -> Result<ActiveToolSet, StoreError> {
        let history = self.store.messages(conversation).await?;
        let catalog = self.toolbox.catalog();
        Ok(restore_active_set(history.iter().map(|m| &m.message), &catalog).active)
    }

    /// Gives every call left without a result (the process stopped while it
    /// ran) an error result, so the history is whole again.
    pub(crate) async fn settle_interrupted(
        &self,
        conversation: &ConversationId,
    ) -> Result<(), StoreError> {
        let history = self.store.messages(conversation).await?;
        for call in unanswered_calls(history.iter().map(|m| &m.message)) {
            let (Some(id), name) = (&call.tool_call_id, call.tool_name.as_deref()) else {
                continue;
            };
            if call.tool_status == Some(ToolStatus::Pending) {
                self.store
                    .set_tool_status(conversation, id, ToolStatus::Error)
                    .await?;
            }
            self.store
                .append(
                    conversation,
                    Message::tool_result(
                        id,
                        name.unwrap_or_default(),
                        INTERRUPTED_RESULT,
                        ToolStatus::Error,
                    ),
                )
                .await?;
        }
        Ok(())
    }

    /// One turn: begin it (restore, route), then model calls and their tool
    /// calls until the model answers or the call limit is reached.
    async fn run_turn(
        &self,
        conversation: &ConversationId,
        user_text: Option<&str>,
        compaction_tried: bool,
        events: TurnEvents<'_>,
        cancel: &CancellationToken,
    ) -> Result<TurnOutcome, AgentError> {
        let mut turn = self
            .begin_turn(conversation, user_text, compaction_tried, events)
            .await?;
        let limit = self.options.max_model_calls.max(1);
        for call in 1..=limit {
            let response = self.call_model(&mut turn, call, events, cancel).await?;
            if !response.text.is_empty() || response.tool_calls.is_empty() {
                self.store
                    .append(conversation, Message::assistant(&response.text))
                    .await?;
            }
            if response.tool_calls.is_empty() {
                self.record_route_outcome(&turn).await;
                return Ok(TurnOutcome {
                    text: response.text,
                    calls: turn.calls,
                    end: TurnEnd::Answered,
                });
            }
            let outcomes = self
                .run_tools(&mut turn, &response.tool_calls, events, cancel)
                .await?;
            self.check_progress(&mut turn, &outcomes, events).await?;
        }
        self.record_route_outcome(&turn).await;
        self.store
            .append(
                conversation,
                Message::system(format!(
                    "The turn stopped after {limit} model calls without a final answer."
                )),
            )
            .await?;
        Ok(TurnOutcome {
            text: String::new(),
            calls: turn.calls,
            end: TurnEnd::CallLimit,
        })
    }
}
