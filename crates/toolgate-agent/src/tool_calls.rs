//! Running one model response's tool calls. Every call is stored as pending
//! first; tools run in parallel, each on its own task, and are checked
//! against what the model saw when it made the calls; the meta-tools
//! (`load_tool_group`, `unload_tool_group`) run one after the other in call
//! order, so the active set grows in the order the model asked. Each result
//! is stored as it arrives.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;
use toolgate_core::{
    ActiveToolSet, BudgetPlan, Catalog, FailedInAgent, GroupId, Message, MetaAnswer, MetaCall,
    MetaTool, ToolDefinition, ToolStatus, TurnCallTimedOut, UnloadedForBudget,
};
use toolgate_llm::ToolCall;
use toolgate_store::{AgentStore, ConversationId, ConversationStore, StoreError};
use toolgate_tools::{CallContext, ToolCallError, ToolOutput, Toolbox};

use crate::agent::{Agent, AgentError};
use crate::event::{TurnEvent, TurnEvents};
use crate::progress::CallOutcome;
use crate::turn::{Listed, Scope, Turn};

/// What the model reads for a call cancelled with its turn.
pub const CANCELLED_RESULT: &str = toolgate_core::CALL_CANCELLED;

/// What the model reads for a call whose source failed on the operator's
/// side; the operator reads the reason in the log and the turn's error.
pub const FAILED_RESULT: &str = toolgate_core::CALL_FAILED_IN_AGENT;

/// How long a timed-out call gets to wind down (tell its server) before it
/// is dropped.
const CANCEL_GRACE: Duration = Duration::from_secs(1);

/// One call's end: what the model reads, for the no-progress rule how it
/// went, and the operator's reason when the source failed fatally.
struct Finished {
    output: ToolOutput,
    outcome: CallOutcome,
    fatal: Option<String>,
}

impl Finished {
    fn new(output: ToolOutput, outcome: CallOutcome) -> Self {
        Self {
            output,
            outcome,
            fatal: None,
        }
    }

    /// A call that ran (or was refused) with `result`.
    fn from_result(result: Result<ToolOutput, ToolCallError>) -> Self {
        match result {
            Ok(output) | Err(ToolCallError::RespondToModel(output)) => {
                let outcome = if output.is_error {
                    CallOutcome::Failed
                } else {
                    CallOutcome::Succeeded
                };
                Self::new(output, outcome)
            }
            Err(ToolCallError::Fatal(reason)) => Self {
                output: ToolOutput::error(FAILED_RESULT),
                outcome: CallOutcome::Failed,
                fatal: Some(reason),
            },
        }
    }
}

/// How a response's calls went, as they finish: each outcome, and the first
/// fatal failure (the tool and the operator's reason).
#[derive(Default)]
struct Tally {
    outcomes: Vec<CallOutcome>,
    fatal: Option<(String, String)>,
}

impl<S: ConversationStore + AgentStore> Agent<S> {
    /// Runs one response's tool calls and stores each result; returns how
    /// each went, in the order they finished. A fatal source failure stops
    /// the turn once every call has its result.
    pub(crate) async fn run_tools(
        &self,
        turn: &mut Turn,
        tool_calls: &[ToolCall],
        events: TurnEvents<'_>,
        cancel: &CancellationToken,
    ) -> Result<Vec<CallOutcome>, AgentError> {
        let conversation = turn.conversation.clone();
        let loaded_before = turn.active.loaded_groups().len();
        self.begin_calls(turn, tool_calls).await?;
        // Calls are checked against what the model saw when it made them.
        let visible = Arc::new(turn.active.clone());
        let calls_cancel = cancel.child_token();
        let mut running = JoinSet::new();
        let mut unfinished: HashMap<tokio::task::Id, &ToolCall> = HashMap::new();
        let mut meta_calls = Vec::new();
        for tool_call in tool_calls {
            events(TurnEvent::ToolStarted {
                id: tool_call.id.clone(),
                name: tool_call.name.clone(),
                arguments: tool_call.arguments.clone(),
            });
            if let Some(meta_tool) = self.toolbox.meta_tools().recognize(&tool_call.name) {
                meta_calls.push((tool_call, meta_tool));
            } else {
                let task = ToolTask {
                    toolbox: Arc::clone(&self.toolbox),
                    call: tool_call.clone(),
                    visible: Arc::clone(&visible),
                    scope: turn.scope,
                    timeout: self.options.tool_timeout,
                    context: CallContext {
                        cancel: calls_cancel.child_token(),
                        ..turn.caller.clone()
                    },
                };
                let handle = running.spawn(task.run());
                unfinished.insert(handle.id(), tool_call);
            }
        }
        let mut tally = Tally::default();
        for (index, &(tool_call, meta_tool)) in meta_calls.iter().enumerate() {
            let finished = tokio::select! {
                biased;
                () = cancel.cancelled() => None,
                finished = self.answer_meta(tool_call, meta_tool, turn) => Some(finished),
            };
            let Some((finished, unloaded)) = finished else {
                calls_cancel.cancel();
                running.shutdown().await;
                let left = meta_calls[index..].iter().map(|(tool_call, _)| *tool_call);
                self.abandon(&conversation, left.chain(unfinished.into_values()), events)
                    .await?;
                return Err(AgentError::Cancelled);
            };
            // Before the load's result: a restore replays the load, then
            // these unloads, and has what the turn has.
            if !unloaded.is_empty() {
                let mut groups = Vec::new();
                for (group, message) in unloaded {
                    self.store.append(&conversation, message).await?;
                    groups.push(group);
                }
                events(TurnEvent::BudgetUnloaded { groups });
            }
            self.settle(&conversation, tool_call, finished, &mut tally, events)
                .await?;
        }
        self.join_calls(
            &conversation,
            &mut running,
            unfinished,
            (cancel, &calls_cancel),
            &mut tally,
            events,
        )
        .await?;
        if turn.active.loaded_groups().len() != loaded_before {
            self.recount_catalog(turn);
        }
        match tally.fatal {
            Some((tool, reason)) => Err(AgentError::Tool { tool, reason }),
            None => Ok(tally.outcomes),
        }
    }

    /// Stores every call as pending, and lets the turn's route observe them.
    async fn begin_calls(
        &self,
        turn: &mut Turn,
        tool_calls: &[ToolCall],
    ) -> Result<(), AgentError> {
        for tool_call in tool_calls {
            let pending = Message::tool_call(
                &tool_call.id,
                &tool_call.name,
                &tool_call.arguments,
                ToolStatus::Pending,
            );
            self.store.append(&turn.conversation, pending).await?;
        }
        let catalog = self.toolbox.catalog();
        for tool_call in tool_calls {
            let arguments = parse_arguments(&tool_call.arguments).ok();
            turn.usage
                .record(&catalog, &tool_call.name, arguments.as_ref());
        }
        if let Some(route) = &mut turn.route {
            for tool_call in tool_calls {
                route.observe(&catalog, &tool_call.name, &tool_call.arguments);
            }
        }
        Ok(())
    }

    /// Settles the tools' calls as they finish; on `cancel` (the turn's;
    /// `calls` the calls' own), cancels those still running and stores them
    /// abandoned.
    async fn join_calls(
        &self,
        conversation: &ConversationId,
        running: &mut JoinSet<Finished>,
        mut unfinished: HashMap<tokio::task::Id, &ToolCall>,
        (cancel, calls_cancel): (&CancellationToken, &CancellationToken),
        tally: &mut Tally,
        events: TurnEvents<'_>,
    ) -> Result<(), AgentError> {
        loop {
            let joined = tokio::select! {
                biased;
                () = cancel.cancelled() => None,
                joined = running.join_next_with_id() => match joined {
                    Some(joined) => Some(joined),
                    None => break,
                },
            };
            let (id, finished) = match joined {
                Some(Ok(joined)) => joined,
                Some(Err(error)) => (
                    error.id(),
                    Finished::new(
                        ToolOutput::error(FailedInAgent(&error.to_string()).to_string()),
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
                self.settle(conversation, tool_call, finished, tally, events)
                    .await?;
            }
        }
        Ok(())
    }

    /// Counts a finished call and stores its result.
    async fn settle(
        &self,
        conversation: &ConversationId,
        tool_call: &ToolCall,
        finished: Finished,
        tally: &mut Tally,
        events: TurnEvents<'_>,
    ) -> Result<(), StoreError> {
        tally.outcomes.push(finished.outcome);
        if tally.fatal.is_none()
            && let Some(reason) = finished.fatal
        {
            tally.fatal = Some((tool_call.name.clone(), reason));
        }
        self.finish_call(conversation, tool_call, finished.output, events)
            .await
    }

    /// A meta-tool call, answered for the turn's active set (a load starts
    /// the group's source first), with the host's unloads the load budget
    /// made for it, to store before its result.
    async fn answer_meta(
        &self,
        tool_call: &ToolCall,
        meta_tool: MetaTool,
        turn: &mut Turn,
    ) -> (Finished, Vec<(GroupId, Message)>) {
        // Unparsable arguments lack the group name, like absent ones.
        let arguments = parse_arguments(&tool_call.arguments).unwrap_or(Value::Null);
        let meta = self.toolbox.meta_tools();
        let call = match MetaCall::parse(meta_tool, &arguments) {
            Ok(call) => call,
            Err(error) => {
                let output = ToolOutput::error(error.to_string());
                return (Finished::new(output, CallOutcome::Failed), Vec::new());
            }
        };
        if let Err(error) = self.toolbox.prepare_meta(&call).await {
            let output = ToolOutput::error(error.to_string());
            return (Finished::new(output, CallOutcome::Failed), Vec::new());
        }
        let mut unloaded = Vec::new();
        let reply = {
            let catalog = self.toolbox.catalog();
            let plan = match &call {
                MetaCall::Load { group } => self.make_room(turn, &catalog, group, &mut unloaded),
                MetaCall::Unload { .. }
                | MetaCall::CallTool { .. }
                | MetaCall::FindGroups { .. } => BudgetPlan::default(),
            };
            match meta.answer(&call, Some(&mut turn.active), &catalog) {
                Ok(MetaAnswer::Loaded(loaded)) => {
                    let schemas = turn.loaded_schemas_of(&catalog, &loaded.group.id);
                    let mut text = loaded.answer(schemas).to_string();
                    if !plan.is_empty() {
                        text = format!("{text}\n\n{}", UnloadedForBudget(&plan));
                    }
                    MetaReply::Output(ToolOutput::text(text))
                }
                Ok(MetaAnswer::Unloaded(unloaded)) => {
                    MetaReply::Output(ToolOutput::text(unloaded.to_string()))
                }
                Ok(MetaAnswer::Found(found)) => MetaReply::Output(ToolOutput {
                    structured: Some(found.to_json()),
                    ..ToolOutput::text(found.to_string())
                }),
                Ok(MetaAnswer::Call { tool, arguments }) => MetaReply::Call { tool, arguments },
                Err(error) => MetaReply::Output(ToolOutput::error(error.to_string())),
            }
        };
        let finished = match reply {
            MetaReply::Output(output) => Finished::from_result(Ok(output)),
            // call_tool: the tool it names runs like a direct call of it.
            MetaReply::Call { tool, arguments } => {
                let task = ToolTask {
                    toolbox: Arc::clone(&self.toolbox),
                    call: ToolCall {
                        name: tool,
                        arguments: arguments.to_string(),
                        ..tool_call.clone()
                    },
                    visible: Arc::new(turn.active.clone()),
                    scope: turn.scope,
                    timeout: self.options.tool_timeout,
                    context: turn.caller.clone(),
                };
                task.run().await
            }
        };
        (finished, unloaded)
    }

    /// Unloads what the load budget says a load of `group` needs, least
    /// recently called first, from the turn's active set (and its listed
    /// tools); each unload's history event goes to `unloaded`.
    fn make_room(
        &self,
        turn: &mut Turn,
        catalog: &Catalog,
        group: &str,
        unloaded: &mut Vec<(GroupId, Message)>,
    ) -> BudgetPlan {
        let cost = |definition: &ToolDefinition| self.schema_tokens(definition);
        let plan = self
            .options
            .load_budget
            .plan(&turn.active, catalog, group, &turn.usage, &cost);
        for victim in &plan.unload {
            if let Ok(gone) = turn.active.unload(catalog, victim.as_str()) {
                let event = Message::group_unloaded_by_host(victim, gone.to_string());
                unloaded.push((victim.clone(), event));
            }
            if let Listed::Fixed(listed) = &mut turn.listed {
                listed.unload(catalog, victim.as_str()).ok();
            }
        }
        plan
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
        let text = output.model_text();
        self.store
            .set_tool_status(conversation, &tool_call.id, status)
            .await?;
        self.store
            .append(
                conversation,
                Message::tool_result(&tool_call.id, &tool_call.name, &text, status),
            )
            .await?;
        events(TurnEvent::ToolFinished {
            id: tool_call.id.clone(),
            name: tool_call.name.clone(),
            status,
            output: text,
        });
        Ok(())
    }
}

/// A meta-tool's answer: the output to store, or (`call_tool`) the tool to
/// run in its place.
enum MetaReply {
    Output(ToolOutput),
    Call { tool: String, arguments: Value },
}

/// One tool call (not a meta-tool), run on its own task.
struct ToolTask {
    toolbox: Arc<Toolbox>,
    call: ToolCall,
    visible: Arc<ActiveToolSet>,
    scope: Scope,
    timeout: Duration,
    context: CallContext,
}

impl ToolTask {
    async fn run(self) -> Finished {
        let name = self.call.name.as_str();
        let arguments = match parse_arguments(&self.call.arguments) {
            Ok(arguments) => arguments,
            Err(error) => {
                return Finished::new(
                    ToolOutput::error(format!(
                        "The arguments for tool '{name}' are not valid JSON ({error}); send a JSON object."
                    )),
                    CallOutcome::Failed,
                );
            }
        };
        let timeout = {
            let catalog = self.toolbox.catalog();
            let checked = match self.scope {
                Scope::Active => self.visible.check_available(&catalog, name),
                Scope::Catalog => match catalog.resolve(name) {
                    Some(tool) => Ok(tool.definition),
                    None => ActiveToolSet::new().check_available(&catalog, name),
                },
            };
            match checked {
                Ok(definition) => definition.timeout.unwrap_or(self.timeout),
                Err(not_available) => {
                    return Finished::new(
                        ToolOutput::error(not_available.to_string()),
                        CallOutcome::Outside,
                    );
                }
            }
        };
        let call = self.toolbox.call(name, arguments, &self.context);
        tokio::pin!(call);
        tokio::select! {
            result = &mut call => Finished::from_result(result),
            () = tokio::time::sleep(timeout) => {
                self.context.cancel.cancel();
                let _ = tokio::time::timeout(CANCEL_GRACE, call).await;
                Finished::new(
                    ToolOutput::error(
                        TurnCallTimedOut {
                            tool: name.to_owned(),
                            limit: timeout,
                        }
                        .to_string(),
                    ),
                    CallOutcome::Failed,
                )
            }
        }
    }
}

/// The model's argument text as a JSON value; blank means no arguments.
fn parse_arguments(text: &str) -> Result<Value, serde_json::Error> {
    if text.trim().is_empty() {
        return Ok(Value::Object(serde_json::Map::new()));
    }
    serde_json::from_str(text)
}
