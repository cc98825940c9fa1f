//! [`Agent`]: the turn loop. One user message in; model calls and tool calls
//! until the model answers without calling a tool; every step stored as it
//! happens, so a turn cut short (an error, a cancel, a killed process) leaves
//! the conversation exactly as far as it got.
//!
//! Each turn starts from the store: the loaded groups are rebuilt from the
//! history (RFC-044), the system prompt carries the group listing, and each
//! model call sends the active set's schemas. A successful `load_tool_group`
//! widens the set for the next model call of the same turn.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use serde_json::Value;
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;
use toolgate_core::routing::{Decision, NoProgress, Router, Visible};
use toolgate_core::{
    ActiveToolSet, GroupId, LOAD_TOOL_GROUP_TOOL_NAME, Message, MessageKind, TokenCounter,
    ToolDefinition, ToolStatus, UNLOAD_TOOL_GROUP_TOOL_NAME, group_name_argument,
    restore_active_set, system_prompt,
};
use toolgate_llm::{ChatModel, ChatRequest, LlmError, StreamEvent, ToolCall, ToolSpec, Usage};
use toolgate_store::{AgentStore, ConversationId, ConversationStore, StoreError, StoredMessage};

use crate::executor::{CallContext, ToolOutput};
use crate::host::ToolHost;
use crate::semantic::SemanticRouting;
use crate::transcript::{INTERRUPTED_RESULT, chat_messages, unanswered_calls};

/// The base system prompt when none is configured.
pub const DEFAULT_SYSTEM_PROMPT: &str = "You are a helpful assistant with access to tools. \
Use them when they help answer the user; answer directly when they do not.";

/// What the model reads for a call cancelled with its turn.
pub const CANCELLED_RESULT: &str = "The tool call was cancelled.";

/// How long a timed-out call gets to wind down (tell its server) before it
/// is dropped.
const CANCEL_GRACE: Duration = Duration::from_secs(1);

/// How the agent runs a turn.
#[derive(Clone, Debug)]
pub struct AgentOptions {
    /// The base system prompt; the "Available Tool Groups" section follows it.
    pub system_prompt: String,
    /// Model calls allowed in one turn before it stops without an answer.
    pub max_model_calls: usize,
    /// How long a tool call may run, for tools that set no timeout of their own.
    pub tool_timeout: Duration,
    /// Routes each user turn before the model is called (seed 004): the
    /// routed groups are pre-loaded (and recorded in history), a low-confidence
    /// turn sees the whole catalog, and no progress escalates to it.
    pub router: Option<Arc<Router>>,
    /// Blends an embeddings endpoint's scores into the router's.
    pub semantic: Option<Arc<SemanticRouting>>,
}

impl Default for AgentOptions {
    fn default() -> Self {
        Self {
            system_prompt: DEFAULT_SYSTEM_PROMPT.to_owned(),
            max_model_calls: 10,
            tool_timeout: Duration::from_secs(120),
            router: None,
            semantic: None,
        }
    }
}

/// What happens during a turn, as it happens.
#[derive(Clone, Debug, PartialEq)]
pub enum TurnEvent {
    /// From the model call under way: text deltas, tool-call starts, retries.
    Model(StreamEvent),
    /// A model call finished; what it cost.
    ModelCalled(CallReport),
    /// The router decided what the turn sees, before the first model call.
    Routed(Decision),
    /// The turn made no progress while restricted: it now sees the whole
    /// catalog.
    Escalated {
        /// Why.
        reason: String,
    },
    /// A tool call is about to run.
    ToolStarted {
        /// The call's id.
        id: String,
        /// The tool.
        name: String,
        /// Its arguments as the model wrote them.
        arguments: String,
    },
    /// A tool call finished.
    ToolFinished {
        /// The call's id.
        id: String,
        /// The tool.
        name: String,
        /// How it ended.
        status: ToolStatus,
        /// What the model reads.
        output: String,
    },
}

/// The cost of one model call: the tool schemas sent against the whole
/// catalog's, and the provider's own usage figures.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CallReport {
    /// 1 for the turn's first model call.
    pub call: usize,
    /// Tools sent.
    pub tools_sent: usize,
    /// Tokens of their schemas.
    pub tool_tokens: usize,
    /// Tools in the whole catalog.
    pub catalog_tools: usize,
    /// Tokens of every catalog tool's schema: what sending everything costs.
    pub catalog_tokens: usize,
    /// What the provider counted, when it said.
    pub usage: Option<Usage>,
}

/// How a turn ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TurnEnd {
    /// The model answered.
    Answered,
    /// The model kept calling tools until the model-call limit.
    CallLimit,
}

/// A finished turn.
#[derive(Clone, Debug, PartialEq)]
pub struct TurnOutcome {
    /// The model's final text.
    pub text: String,
    /// Each model call's report, in order.
    pub calls: Vec<CallReport>,
    /// How it ended.
    pub end: TurnEnd,
}

/// Why a turn stopped early. Everything up to that point is stored.
#[derive(Debug, thiserror::Error)]
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
}

/// Receives [`TurnEvent`]s.
pub type TurnEvents<'a> = &'a mut (dyn FnMut(TurnEvent) + Send);

/// The agent: a model, the tools it may use, and where conversations live.
#[derive(Debug)]
pub struct Agent<S> {
    model: Arc<dyn ChatModel>,
    host: Arc<dyn ToolHost>,
    store: Arc<S>,
    options: AgentOptions,
    counter: Arc<TokenCounter>,
}

impl<S: ConversationStore + AgentStore> Agent<S> {
    /// An agent. `counter` measures the tool schemas of each model call for
    /// its [`CallReport`] (building one takes a moment: share it).
    pub fn new(
        model: Arc<dyn ChatModel>,
        host: Arc<dyn ToolHost>,
        store: Arc<S>,
        options: AgentOptions,
        counter: Arc<TokenCounter>,
    ) -> Self {
        Self {
            model,
            host,
            store,
            options,
            counter,
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
    pub fn host(&self) -> &dyn ToolHost {
        self.host.as_ref()
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
        self.store.append(conversation, Message::user(text)).await?;
        self.run_turn(conversation, Some(text), events, cancel)
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
        self.run_turn(conversation, None, events, cancel).await
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

    /// The groups the conversation has loaded, in load order.
    pub async fn loaded_groups(
        &self,
        conversation: &ConversationId,
    ) -> Result<Vec<GroupId>, StoreError> {
        let history = self.store.messages(conversation).await?;
        let catalog = self.host.catalog();
        let restored = restore_active_set(history.iter().map(|m| &m.message), &catalog);
        Ok(restored.active.loaded_groups().to_vec())
    }

    /// Gives every call left without a result (the process stopped while it
    /// ran) an error result, so the history is whole again.
    async fn settle_interrupted(&self, conversation: &ConversationId) -> Result<(), StoreError> {
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

    async fn run_turn(
        &self,
        conversation: &ConversationId,
        user_text: Option<&str>,
        events: TurnEvents<'_>,
        cancel: &CancellationToken,
    ) -> Result<TurnOutcome, AgentError> {
        let history = self.store.messages(conversation).await?;
        let (context, system) = self.call_context(conversation, &history).await;
        let mut active = self.restore(conversation, &history).await;
        let mut scope = Scope::Active;
        if let (Some(router), Some(text)) = (&self.options.router, user_text) {
            scope = self
                .route(router, conversation, text, &history, &mut active, events)
                .await?;
        }
        let mut progress = Progress::default();
        let mut catalog_cost = self.catalog_cost();
        let mut calls = Vec::new();
        for call in 1..=self.options.max_model_calls.max(1) {
            let history = self.store.messages(conversation).await?;
            let (request, tools_sent, tool_tokens) =
                self.request(&active, scope, &history, &system);
            let response = {
                let mut sink = |event: StreamEvent| events(TurnEvent::Model(event));
                tokio::select! {
                    biased;
                    () = cancel.cancelled() => return Err(AgentError::Cancelled),
                    response = self.model.complete(&request, &mut sink) => response?,
                }
            };
            let report = CallReport {
                call,
                tools_sent,
                tool_tokens,
                catalog_tools: catalog_cost.0,
                catalog_tokens: catalog_cost.1,
                usage: response.usage,
            };
            events(TurnEvent::ModelCalled(report.clone()));
            calls.push(report);

            if !response.text.is_empty() || response.tool_calls.is_empty() {
                self.store
                    .append(conversation, Message::assistant(&response.text))
                    .await?;
            }
            if response.tool_calls.is_empty() {
                return Ok(TurnOutcome {
                    text: response.text,
                    calls,
                    end: TurnEnd::Answered,
                });
            }
            for tool_call in &response.tool_calls {
                self.store
                    .append(
                        conversation,
                        Message::tool_call(
                            &tool_call.id,
                            &tool_call.name,
                            &tool_call.arguments,
                            ToolStatus::Pending,
                        ),
                    )
                    .await?;
            }
            let loaded_before = active.loaded_groups().len();
            let outcomes;
            (active, outcomes) = self
                .run_tools(
                    conversation,
                    &context,
                    &response.tool_calls,
                    active,
                    scope,
                    events,
                    cancel,
                )
                .await?;
            if active.loaded_groups().len() != loaded_before {
                // A load may have started an upstream and listed its tools.
                catalog_cost = self.catalog_cost();
            }
            if let (Some(router), Scope::Active) = (&self.options.router, scope)
                && let Some(reason) = progress.escalation(&outcomes, router.taxonomy().no_progress)
            {
                scope = Scope::Catalog;
                self.store
                    .append(
                        conversation,
                        Message::system(format!("Escalated to the whole catalog: {reason}.")),
                    )
                    .await?;
                events(TurnEvent::Escalated { reason });
            }
        }
        let limit = self.options.max_model_calls.max(1);
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
            calls,
            end: TurnEnd::CallLimit,
        })
    }

    /// Routes the user's turn: pre-loads the groups its tier shows (recorded
    /// in history, so later turns restore them) or opens the whole catalog
    /// for this turn.
    async fn route(
        &self,
        router: &Router,
        conversation: &ConversationId,
        text: &str,
        history: &[StoredMessage],
        active: &mut ActiveToolSet,
        events: TurnEvents<'_>,
    ) -> Result<Scope, StoreError> {
        let earlier: Vec<&str> = history
            .iter()
            .filter(|m| m.message.kind == MessageKind::User)
            .map(|m| m.message.content.as_str())
            .collect();
        let context = &earlier[earlier.len().saturating_sub(ROUTING_CONTEXT_TURNS)..];
        let scores = match &self.options.semantic {
            Some(semantic) => semantic.scores(router, text, context).await,
            None => router.scores(text, context),
        };
        let decision = router.decide(&scores);
        let scope = match &decision.visible {
            Visible::Catalog => Scope::Catalog,
            Visible::Groups(groups) => {
                for group in groups {
                    if active.is_loaded(group.as_str()) {
                        continue;
                    }
                    if let Err(error) = self.host.prepare_group(group.as_str()).await {
                        tracing::warn!(%group, %error, "a routed group is unavailable");
                        continue;
                    }
                    let loaded = {
                        let catalog = self.host.catalog();
                        active.load(&catalog, group.as_str()).map(|l| l.to_string())
                    };
                    if loaded.is_ok() {
                        let note = format!(
                            "Routed ({} tier, confidence {:.2}): loaded group '{group}'.",
                            decision.tier, decision.confidence
                        );
                        self.store
                            .append(conversation, Message::group_loaded_by_host(group, note))
                            .await?;
                    }
                }
                Scope::Active
            }
        };
        events(TurnEvent::Routed(decision));
        Ok(scope)
    }

    /// Who the turn's tool calls come from (the conversation, its stored
    /// agent, the turn's number: its user messages so far, so a resumed turn
    /// keeps its number), and the base system prompt: the agent's own when
    /// it has one, else the configured one. The agent is read each turn, so
    /// a prompt it changed applies from its next turn.
    async fn call_context(
        &self,
        conversation: &ConversationId,
        history: &[StoredMessage],
    ) -> (CallContext, String) {
        let agent = match self.store.conversation_agent(conversation).await {
            Ok(agent) => agent,
            Err(error) => {
                tracing::warn!(%conversation, %error, "reading the conversation's agent");
                None
            }
        };
        let record = match &agent {
            Some(id) => self.store.agent(id).await.ok().flatten(),
            None => None,
        };
        let system = record
            .as_ref()
            .and_then(|record| record.system_prompt())
            .unwrap_or(&self.options.system_prompt)
            .to_owned();
        let turn = history
            .iter()
            .filter(|m| m.message.kind == MessageKind::User)
            .count() as u64;
        let context = CallContext {
            conversation: Some(conversation.clone()),
            agent,
            turn: Some(turn),
        };
        (context, system)
    }

    /// The active set rebuilt from history, with the tools of its groups
    /// made known (a restored upstream group starts its server).
    async fn restore(
        &self,
        conversation: &ConversationId,
        history: &[StoredMessage],
    ) -> ActiveToolSet {
        let restored = {
            let catalog = self.host.catalog();
            restore_active_set(history.iter().map(|m| &m.message), &catalog)
        };
        for skipped in &restored.skipped {
            tracing::info!(%conversation, index = skipped.index, reason = ?skipped.reason, "history event skipped");
        }
        for group in restored.active.loaded_groups() {
            if let Err(error) = self.host.prepare_group(group.as_str()).await {
                tracing::warn!(%conversation, %group, %error, "a restored group's tools are unavailable");
            }
        }
        restored.active
    }

    /// The request for the next model call, with the count and token cost of
    /// the tools it sends.
    fn request(
        &self,
        active: &ActiveToolSet,
        scope: Scope,
        history: &[StoredMessage],
        base_prompt: &str,
    ) -> (ChatRequest, usize, usize) {
        let catalog = self.host.catalog();
        let mut definitions = active.definitions(&catalog);
        if scope == Scope::Catalog {
            // The loaded tools keep their place (a cache-friendly prefix); every
            // other tool follows in catalog order.
            let shown: std::collections::HashSet<&str> =
                definitions.iter().map(|d| d.name.as_str()).collect();
            let rest: Vec<&ToolDefinition> = catalog
                .tools()
                .map(|tool| tool.definition)
                .filter(|d| !shown.contains(d.name.as_str()))
                .collect();
            definitions.extend(rest);
        }
        let tool_tokens = self.counter.tools(definitions.iter().copied());
        let request = ChatRequest {
            system: system_prompt(base_prompt, &catalog),
            messages: chat_messages(history.iter().map(|m| &m.message)),
            tools: definitions.iter().map(|d| tool_spec(d)).collect(),
        };
        (request, definitions.len(), tool_tokens)
    }

    /// Tools in the catalog and the tokens of all their schemas.
    fn catalog_cost(&self) -> (usize, usize) {
        let catalog = self.host.catalog();
        let tools: Vec<&ToolDefinition> = catalog.tools().map(|tool| tool.definition).collect();
        (tools.len(), self.counter.tools(tools))
    }

    /// Runs one model response's tool calls, storing each result as it
    /// arrives: tools in parallel, each on its own task; `load_tool_group`
    /// and `unload_tool_group` one after the other in call order, so the
    /// active set grows in the order the model asked. Returns the active set
    /// after those loads and unloads.
    #[allow(
        clippy::too_many_arguments,
        reason = "one turn's state, passed down once"
    )]
    async fn run_tools(
        &self,
        conversation: &ConversationId,
        context: &CallContext,
        tool_calls: &[ToolCall],
        active: ActiveToolSet,
        scope: Scope,
        events: TurnEvents<'_>,
        cancel: &CancellationToken,
    ) -> Result<(ActiveToolSet, Vec<CallOutcome>), AgentError> {
        // Calls are checked against what the model saw when it made them.
        let visible = Arc::new(active.clone());
        let active = Arc::new(Mutex::new(active));
        let calls_cancel = cancel.child_token();
        let mut outcomes = Vec::new();
        let task = |tool_call: &ToolCall| ToolTask {
            host: Arc::clone(&self.host),
            call: tool_call.clone(),
            visible: Arc::clone(&visible),
            scope,
            active: Arc::clone(&active),
            timeout: self.options.tool_timeout,
            cancel: calls_cancel.child_token(),
            context: context.clone(),
        };
        let mut running = JoinSet::new();
        let mut unfinished: HashMap<tokio::task::Id, &ToolCall> = HashMap::new();
        let mut meta_calls = Vec::new();
        for tool_call in tool_calls {
            events(TurnEvent::ToolStarted {
                id: tool_call.id.clone(),
                name: tool_call.name.clone(),
                arguments: tool_call.arguments.clone(),
            });
            if is_meta_tool(&tool_call.name) {
                meta_calls.push(tool_call);
            } else {
                let handle = running.spawn(task(tool_call).run());
                unfinished.insert(handle.id(), tool_call);
            }
        }
        for (index, tool_call) in meta_calls.iter().enumerate() {
            let output = tokio::select! {
                biased;
                () = cancel.cancelled() => None,
                output = task(tool_call).run() => Some(output),
            };
            let Some((output, outcome)) = output else {
                calls_cancel.cancel();
                running.shutdown().await;
                let left = meta_calls[index..].iter().copied();
                self.abandon(conversation, left.chain(unfinished.into_values()), events)
                    .await?;
                return Err(AgentError::Cancelled);
            };
            outcomes.push(outcome);
            self.finish_call(conversation, tool_call, output, events)
                .await?;
        }
        loop {
            let joined = tokio::select! {
                biased;
                () = cancel.cancelled() => None,
                joined = running.join_next_with_id() => match joined {
                    Some(joined) => Some(joined),
                    None => break,
                },
            };
            let (id, (output, outcome)) = match joined {
                Some(Ok(joined)) => joined,
                Some(Err(error)) => (
                    error.id(),
                    (
                        ToolOutput::error(format!(
                            "The tool call failed inside the agent: {error}"
                        )),
                        CallOutcome::Failed,
                    ),
                ),
                None => {
                    calls_cancel.cancel();
                    running.shutdown().await;
                    self.abandon(conversation, unfinished.into_values(), events)
                        .await?;
                    return Err(AgentError::Cancelled);
                }
            };
            if let Some(tool_call) = unfinished.remove(&id) {
                outcomes.push(outcome);
                self.finish_call(conversation, tool_call, output, events)
                    .await?;
            }
        }
        let active = active
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone();
        Ok((active, outcomes))
    }

    /// Stores a cancelled result for each call the cancel cut short.
    async fn abandon(
        &self,
        conversation: &ConversationId,
        tool_calls: impl Iterator<Item = &ToolCall>,
        events: TurnEvents<'_>,
    ) -> Result<(), StoreError> {
        for tool_call in tool_calls {
            let output = ToolOutput::error(CANCELLED_RESULT);
            self.finish_call(conversation, tool_call, output, events)
                .await?;
        }
        Ok(())
    }

    /// Stores a call's status, then its result. In that order: a process
    /// stopped in between leaves a settled call whose result the next turn
    /// fills in, never a finished load that the restore would ignore.
    async fn finish_call(
        &self,
        conversation: &ConversationId,
        tool_call: &ToolCall,
        output: ToolOutput,
        events: TurnEvents<'_>,
    ) -> Result<(), StoreError> {
        let status = if output.is_error {
            ToolStatus::Error
        } else {
            ToolStatus::Success
        };
        self.store
            .set_tool_status(conversation, &tool_call.id, status)
            .await?;
        self.store
            .append(
                conversation,
                Message::tool_result(&tool_call.id, &tool_call.name, &output.text, status),
            )
            .await?;
        events(TurnEvent::ToolFinished {
            id: tool_call.id.clone(),
            name: tool_call.name.clone(),
            status,
            output: output.text,
        });
        Ok(())
    }
}

/// Earlier user turns the router reads as context.
const ROUTING_CONTEXT_TURNS: usize = 3;

/// What a turn's model calls may see and call.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Scope {
    /// The active set: core tools and the loaded groups.
    Active,
    /// The whole catalog (a low-confidence route, or an escalation).
    Catalog,
}

/// How a tool call ended, for the no-progress rule.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum CallOutcome {
    Succeeded,
    Failed,
    /// Refused: the tool is outside the visible set.
    Outside,
}

/// Failed calls in a row, across the turn's model calls.
#[derive(Debug, Default)]
struct Progress {
    failed_in_a_row: usize,
}

impl Progress {
    /// Why the turn should escalate after these calls, if it should.
    fn escalation(&mut self, outcomes: &[CallOutcome], rule: NoProgress) -> Option<String> {
        for outcome in outcomes {
            match outcome {
                CallOutcome::Outside if rule.outside_call => {
                    return Some("the model called a tool outside the visible set".to_owned());
                }
                CallOutcome::Outside | CallOutcome::Failed => self.failed_in_a_row += 1,
                CallOutcome::Succeeded => self.failed_in_a_row = 0,
            }
        }
        (rule.failed_calls > 0 && self.failed_in_a_row >= rule.failed_calls)
            .then(|| format!("{} tool calls failed in a row", self.failed_in_a_row))
    }
}

fn is_meta_tool(name: &str) -> bool {
    matches!(
        name,
        LOAD_TOOL_GROUP_TOOL_NAME | UNLOAD_TOOL_GROUP_TOOL_NAME
    )
}

/// A tool definition as a provider receives it.
fn tool_spec(definition: &ToolDefinition) -> ToolSpec {
    ToolSpec {
        name: definition.name.to_string(),
        description: definition.description.clone(),
        input_schema: Value::Object(definition.input_schema.clone()),
    }
}

/// One tool call, run on its own task.
struct ToolTask {
    host: Arc<dyn ToolHost>,
    call: ToolCall,
    visible: Arc<ActiveToolSet>,
    scope: Scope,
    active: Arc<Mutex<ActiveToolSet>>,
    timeout: Duration,
    cancel: CancellationToken,
    context: CallContext,
}

impl ToolTask {
    async fn run(self) -> (ToolOutput, CallOutcome) {
        let (output, outside) = self.execute().await;
        let outcome = match (outside, output.is_error) {
            (true, _) => CallOutcome::Outside,
            (false, true) => CallOutcome::Failed,
            (false, false) => CallOutcome::Succeeded,
        };
        (output, outcome)
    }

    /// The call's output, and whether it was refused as outside the visible set.
    async fn execute(&self) -> (ToolOutput, bool) {
        let name = self.call.name.as_str();
        let arguments = match parse_arguments(&self.call.arguments) {
            Ok(arguments) => arguments,
            Err(error) => {
                if is_meta_tool(name) {
                    Value::Null
                } else {
                    return (
                        ToolOutput::error(format!(
                            "The arguments for tool '{name}' are not valid JSON ({error}); send a JSON object."
                        )),
                        false,
                    );
                }
            }
        };
        match name {
            LOAD_TOOL_GROUP_TOOL_NAME => (self.load(&arguments).await, false),
            UNLOAD_TOOL_GROUP_TOOL_NAME => (self.unload(&arguments), false),
            _ => self.call_tool(arguments).await,
        }
    }

    async fn load(&self, arguments: &Value) -> ToolOutput {
        let group = match group_name_argument(arguments) {
            Ok(group) => group.to_owned(),
            Err(error) => return ToolOutput::error(error.to_string()),
        };
        if let Err(text) = self.host.prepare_group(&group).await {
            return ToolOutput::error(text);
        }
        let catalog = self.host.catalog();
        let mut active = self.active.lock().unwrap_or_else(PoisonError::into_inner);
        match active.load(&catalog, &group) {
            Ok(loaded) => ToolOutput::text(loaded.to_string()),
            Err(error) => ToolOutput::error(error.to_string()),
        }
    }

    fn unload(&self, arguments: &Value) -> ToolOutput {
        let group = match group_name_argument(arguments) {
            Ok(group) => group.to_owned(),
            Err(error) => return ToolOutput::error(error.to_string()),
        };
        let catalog = self.host.catalog();
        let mut active = self.active.lock().unwrap_or_else(PoisonError::into_inner);
        match active.unload(&catalog, &group) {
            Ok(unloaded) => ToolOutput::text(unloaded.to_string()),
            Err(error) => ToolOutput::error(error.to_string()),
        }
    }

    async fn call_tool(&self, arguments: Value) -> (ToolOutput, bool) {
        let name = self.call.name.as_str();
        let timeout = {
            let catalog = self.host.catalog();
            let checked = match self.scope {
                Scope::Active => self.visible.check_available(&catalog, name),
                Scope::Catalog => match catalog.resolve(name) {
                    Some(tool) => Ok(tool.definition),
                    None => ActiveToolSet::new().check_available(&catalog, name),
                },
            };
            match checked {
                Ok(definition) => definition.timeout.unwrap_or(self.timeout),
                Err(not_available) => return (ToolOutput::error(not_available.to_string()), true),
            }
        };
        let call = self
            .host
            .call(name, arguments, self.cancel.clone(), &self.context);
        tokio::pin!(call);
        let output = tokio::select! {
            output = &mut call => output,
            () = tokio::time::sleep(timeout) => {
                self.cancel.cancel();
                let _ = tokio::time::timeout(CANCEL_GRACE, call).await;
                ToolOutput::error(format!(
                    "Tool '{name}' did not finish within {} s and was cancelled.",
                    timeout.as_secs_f64()
                ))
            }
        };
        (output, false)
    }
}

/// The model's argument text as a JSON value; blank means no arguments.
fn parse_arguments(text: &str) -> Result<Value, serde_json::Error> {
    if text.trim().is_empty() {
        return Ok(Value::Object(serde_json::Map::new()));
    }
    serde_json::from_str(text)
}
