//! Running one model response's tool calls. Every call is stored as pending
//! first; tools run in parallel, each on its own task, admitted by the
//! toolbox against what the model saw when it made the calls
//! ([`Toolbox::admit`]); the meta-tools run one after the other in call
//! order, answered by the toolbox's one meta-tool runtime
//! ([`Toolbox::answer_meta`]), so the active set grows in the order the
//! model asked, and each change they made is stored as the host's event,
//! naming the call, before the call's result. Each result is stored as it
//! arrives.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;
use toolgate_core::{
    ActiveToolSet, FailedInAgent, HostEvent, Message, MetaCall, MetaTool, Mode, ToolDefinition,
    ToolStatus,
};
use toolgate_llm::ToolCall;
use toolgate_store::{AgentStore, ConversationId, ConversationStore, StoreError};
use toolgate_tools::{
    CallContext, MetaOutcome, Reach, Refusal, ToolCallError, ToolOutput, Toolbox, load_limit,
};

use crate::agent::{Agent, AgentError};
use crate::event::{TurnEvent, TurnEvents};
use crate::progress::CallOutcome;
use crate::turn::{Listed, Turn, Visibility};

/// What the model reads for a call cancelled with its turn.
pub const CANCELLED_RESULT: &str = toolgate_core::CALL_CANCELLED;

/// What the model reads for a call whose source failed on the operator's
/// side; the operator reads the reason in the log and the turn's error.
pub const FAILED_RESULT: &str = toolgate_core::CALL_FAILED_IN_AGENT;

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
        let loaded_before = turn.tools.active.loaded_groups().len();
        self.begin_calls(turn, tool_calls).await?;
        // Calls are admitted against what the model saw when it made them.
        let visible = Arc::new(turn.tools.active.clone());
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
            let meta = match turn.mode {
                Mode::Deferred => self.toolbox.meta_tools().recognize(&tool_call.name),
                // No meta-tool is offered: a call of one is not available.
                Mode::Whole => None,
            };
            if let Some(meta_tool) = meta {
                meta_calls.push((tool_call, meta_tool));
            } else {
                let task = ToolTask {
                    toolbox: Arc::clone(&self.toolbox),
                    call: tool_call.clone(),
                    visible: Arc::clone(&visible),
                    visibility: turn.visibility,
                    timeout: self.options.tool_timeout,
                    context: CallContext {
                        cancel: calls_cancel.child_token(),
                        ..turn.context.clone()
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
            let Some((finished, changes)) = finished else {
                calls_cancel.cancel();
                running.shutdown().await;
                let left = meta_calls[index..].iter().map(|(tool_call, _)| *tool_call);
                self.abandon(&conversation, left.chain(unfinished.into_values()), events)
                    .await?;
                return Err(AgentError::Cancelled);
            };
            // Before the call's result, naming it: a restore replays these
            // changes in place of the call, and has what the turn has.
            for change in &changes {
                let record = change.message(Some(&tool_call.id), "");
                self.store.append(&conversation, record).await?;
            }
            let (mut groups, mut tools) = (Vec::new(), Vec::new());
            for change in &changes {
                match change {
                    HostEvent::Unloaded(group) => groups.push(group.clone()),
                    HostEvent::ToolsUnloaded(group, unloaded) => {
                        tools.extend(unloaded.iter().map(|tool| (group.clone(), tool.clone())))
                    }
                    HostEvent::Loaded(_) | HostEvent::ToolsLoaded(..) | HostEvent::Used(..) => {}
                }
            }
            if meta_tool == MetaTool::LoadToolGroup && !(groups.is_empty() && tools.is_empty()) {
                events(TurnEvent::BudgetUnloaded { groups, tools });
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
        if turn.tools.active.loaded_groups().len() != loaded_before {
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
            // The call itself is the record of its use.
            let _ = turn
                .tools
                .usage
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

    /// A meta-tool call, answered by the toolbox's runtime for the turn's
    /// tools (a load starts the group's source first), with the changes it
    /// made, to store before its result. `call_tool` runs the tool it names
    /// as a direct call of it.
    async fn answer_meta(
        &self,
        tool_call: &ToolCall,
        meta_tool: MetaTool,
        turn: &mut Turn,
    ) -> (Finished, Vec<HostEvent>) {
        // Unparsable arguments lack the group name, like absent ones.
        let arguments = parse_arguments(&tool_call.arguments).unwrap_or(Value::Null);
        let call = match MetaCall::parse(meta_tool, &arguments) {
            Ok(call) => call,
            Err(error) => {
                let output = ToolOutput::error(error.to_string());
                return (Finished::new(output, CallOutcome::Failed), Vec::new());
            }
        };
        let authority = &turn.context.authority;
        if let Err(failed) = self.toolbox.prepare_meta(&call, authority).await {
            let finished = Finished::from_result(Ok(failed.output));
            return (finished, Vec::new());
        }
        let tokens = |definition: &ToolDefinition| self.schema_tokens(definition);
        let limit = load_limit(self.model.context_window());
        let host = turn
            .listed
            .meta_host(self.options.load_budget, Some(limit), &tokens);
        let outcome = self
            .toolbox
            .answer_meta(&call, Some(&mut turn.tools), authority, &host);
        match outcome {
            MetaOutcome::Answered(answered) => {
                if let Listed::Fixed(listed) = &mut turn.listed {
                    // An unload takes the group out of the list too; a load
                    // puts its schemas in the conversation instead.
                    for change in &answered.events {
                        if let HostEvent::Unloaded(_) | HostEvent::ToolsUnloaded(..) = change {
                            listed.apply(change);
                        }
                    }
                }
                (Finished::from_result(Ok(answered.output)), answered.events)
            }
            MetaOutcome::Call { tool, arguments } => {
                let task = ToolTask {
                    toolbox: Arc::clone(&self.toolbox),
                    call: ToolCall {
                        name: tool,
                        arguments: arguments.to_string(),
                        ..tool_call.clone()
                    },
                    visible: Arc::new(turn.tools.active.clone()),
                    visibility: turn.visibility,
                    timeout: self.options.tool_timeout,
                    context: turn.context.clone(),
                };
                (task.run().await, Vec::new())
            }
        }
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

/// One tool call (not a meta-tool), run on its own task.
struct ToolTask {
    toolbox: Arc<Toolbox>,
    call: ToolCall,
    /// What the model saw when it made the call.
    visible: Arc<ActiveToolSet>,
    visibility: Visibility,
    /// How long the call may run, for a tool with no limit of its own.
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
        let reach = match self.visibility {
            Visibility::Loaded => Reach::Loaded(&self.visible),
            Visibility::Catalog => Reach::Catalog,
        };
        let admitted = match self
            .toolbox
            .admit(name, arguments, &self.context.authority, reach)
        {
            Ok(admitted) => admitted,
            Err(refused) => {
                let outcome = match refused.refusal() {
                    Refusal::OutOfReach => CallOutcome::Outside,
                    Refusal::NotAllowed => CallOutcome::Failed,
                };
                return Finished::new(refused.output(), outcome);
            }
        };
        // One deadline: the tool's own limit, else the turn's, and the
        // source's when that is shorter.
        let context = CallContext {
            time_limit: Some(admitted.timeout().unwrap_or(self.timeout)),
            ..self.context
        };
        Finished::from_result(self.toolbox.run(admitted, &context).await)
    }
}

/// The model's argument text as a JSON value; blank means no arguments.
fn parse_arguments(text: &str) -> Result<Value, serde_json::Error> {
    if text.trim().is_empty() {
        return Ok(Value::Object(serde_json::Map::new()));
    }
    serde_json::from_str(text)
}
