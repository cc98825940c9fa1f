//! [`live`]: a dataset's tasks played through the agent loop of
//! `toolgate-agent` against a real model (any [`ChatModel`]: the CLI
//! connects one to an endpoint), under each [`LivePolicy`], to measure how
//! often a model does the task and what it costs.
//!
//! A task is one conversation of the dataset ([`Conversations`]): its user
//! turns in order, in a conversation of its own. The tools answer
//! [`FIXED_RESULT`] (the datasets hold no results), after the toolbox has
//! checked the arguments against the tool's schema, as for any call. A task
//! succeeds when every tool its ground truth calls ran without error: called
//! by the model, directly or through `call_tool`, with arguments its schema
//! accepts. The figures are the model's own: tokens as its endpoint billed
//! them, model calls (round trips) and wall time.

use std::collections::{BTreeSet, HashMap};
use std::convert::Infallible;
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde::Serialize;
use tokio_util::sync::CancellationToken;
use toolgate_agent::{Agent, AgentOptions, Compaction, TurnEvent};
use toolgate_core::routing::RoutingConfig;
use toolgate_core::{
    CALL_TOOL_TOOL_NAME, FoundTools, LoadedSchemas, MetaTool, TokenCounter, ToolStatus,
};
use toolgate_llm::{ChatModel, Usage};
use toolgate_store::{ConversationId, MemoryStore};
use toolgate_tools::{DEFAULT_SEARCH_ABOVE_GROUPS, ToolSource, Toolbox, ToolboxOptions};

use crate::conversations::{Conversation, Conversations};
use crate::error::{EvalError, Result};
#[cfg(doc)]
use crate::oracle::FIXED_RESULT;
use crate::oracle::{FixedSource, Offered};

/// How the model meets the catalog (serialized as its label).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LivePolicy {
    /// Every tool's schema on every call, no groups.
    AllTools,
    /// `toolgate chat`: the group listing and `load_tool_group`, and
    /// `find_tool_groups` above twelve groups (loading the tools it lists);
    /// a load puts the schemas in the tool list, or in the conversation
    /// (with `call_tool`), as `[tools] loaded_schemas` says.
    Deferred(LoadedSchemas),
    /// `toolgate serve --route`: the listing, `load_tool_group`,
    /// `call_tool` and `find_tool_groups` (the lexical router), which loads
    /// the tools it lists, as the gateway's does; loads go in the tool list.
    Search,
}

impl LivePolicy {
    /// Every policy, in report order.
    pub const ALL: [Self; 4] = [
        Self::AllTools,
        Self::Deferred(LoadedSchemas::ToolList),
        Self::Deferred(LoadedSchemas::Conversation),
        Self::Search,
    ];

    /// How the report names it.
    pub fn label(self) -> &'static str {
        match self {
            Self::AllTools => "all tools",
            Self::Deferred(LoadedSchemas::ToolList) => "chat, schemas in the tool list",
            Self::Deferred(LoadedSchemas::Conversation) => "chat, schemas in the conversation",
            Self::Search => "serve, find_tool_groups",
        }
    }
}

impl Serialize for LivePolicy {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.label())
    }
}

/// What a live run may use.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct LiveOptions {
    /// Tasks per policy: the dataset's first conversations with a gold call,
    /// after the first [`skip`](Self::skip) of them.
    pub tasks: usize,
    /// Tasks left out before them: a run stopped after N tasks goes on with
    /// `skip` N, and one slice is split between two endpoints.
    pub skip: usize,
    /// The model's context window in tokens: all tools is left out when
    /// their schemas take more than half of it.
    pub context_window: usize,
    /// When the agent loop compacts a task's conversation grown too long,
    /// under every policy: `chat` compacts by default, and so do the agents
    /// that call `serve`. A summary call is billed as a model call.
    pub compaction: Compaction,
    /// The wall time a task may take, all its turns: past it the model call
    /// under way is cut off (and not billed: its endpoint answered no usage)
    /// and the task is stopped, not done. `None` lets a task run to the end.
    pub time_limit: Option<Duration>,
}

/// One task under one policy.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct LiveTask {
    /// The conversation's id.
    pub conversation: String,
    /// Its user turns.
    pub turns: usize,
    /// The tools its ground truth calls, each once.
    pub gold: Vec<String>,
    /// The tools that ran without error, each once, in order of first run.
    pub called: Vec<String>,
    /// Whether every gold tool ran without error.
    pub succeeded: bool,
    /// Model calls (round trips), all turns.
    pub model_calls: usize,
    /// Input tokens the endpoint billed, cached ones included.
    pub input_tokens: u64,
    /// Of those, read from its cache, where it says.
    pub cached_input_tokens: u64,
    /// Output tokens it billed.
    pub output_tokens: u64,
    /// Compactions of the conversation (their summary calls are among the
    /// model calls).
    pub compactions: usize,
    /// Wall time of all turns, in seconds.
    pub seconds: f64,
    /// What stopped the task early (the endpoint failed), if anything.
    pub error: Option<String>,
}

/// One policy's tasks.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct LiveRun {
    /// The policy.
    pub policy: LivePolicy,
    /// Why it was not run (all tools beyond the window), if it was not.
    pub skipped: Option<String>,
    /// Each task, in dataset order.
    pub tasks: Vec<LiveTask>,
    /// Tasks that succeeded.
    pub succeeded: usize,
    /// The 95% Wilson interval of the success rate.
    pub interval: (f64, f64),
}

/// A dataset's tasks played under several policies.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Live {
    /// The dataset.
    pub dataset: String,
    /// The model, as its endpoint names it.
    pub model: String,
    /// Tokens of every tool's schema (o200k_base or the counter's).
    pub all_tool_tokens: usize,
    /// Each policy's run, in the order asked.
    pub runs: Vec<LiveRun>,
}

/// The 95% Wilson score interval of `successes` out of `n`; (0, 1) for none.
pub fn wilson(successes: usize, n: usize) -> (f64, f64) {
    if n == 0 {
        return (0.0, 1.0);
    }
    let z = 1.959_964_f64;
    let n = n as f64;
    let p = successes as f64 / n;
    let denominator = 1.0 + z * z / n;
    let centre = (p + z * z / (2.0 * n)) / denominator;
    let half = z * (p * (1.0 - p) / n + z * z / (4.0 * n * n)).sqrt() / denominator;
    ((centre - half).max(0.0), (centre + half).min(1.0))
}

/// Plays [`LiveOptions::tasks`] conversations of `data` with a gold call,
/// the first after [`LiveOptions::skip`], through the agent loop against `model`, under each of
/// `policies`, reporting each finished task to `progress` (policy, the
/// task, done, total, the skipped tasks counted among both) as it
/// finishes, so a long run's results are read while it runs and kept when
/// it is stopped. A model call that fails ends its task (recorded in
/// [`LiveTask::error`]), not the run; a failing toolbox ends the run.
pub async fn live(
    data: &Conversations,
    model: Arc<dyn ChatModel>,
    policies: &[LivePolicy],
    options: LiveOptions,
    counter: Arc<TokenCounter>,
    progress: &mut dyn FnMut(LivePolicy, &LiveTask, usize, usize),
) -> Result<Live> {
    let all_tool_tokens = counter.tools(data.catalog.tools().map(|tool| tool.definition));
    let tasks: Vec<&Conversation> = data
        .conversations
        .iter()
        .filter(|c| c.turns.iter().any(|turn| !turn.calls.is_empty()))
        .skip(options.skip)
        .take(options.tasks)
        .collect();
    let mut runs = Vec::new();
    for &policy in policies {
        if policy == LivePolicy::AllTools && 2 * all_tool_tokens > options.context_window {
            runs.push(LiveRun {
                policy,
                skipped: Some(format!(
                    "its {all_tool_tokens} tokens of schemas take more than half the \
                     {}-token window",
                    options.context_window
                )),
                tasks: Vec::new(),
                succeeded: 0,
                interval: wilson(0, 0),
            });
            continue;
        }
        let agent = agent(data, Arc::clone(&model), policy, options, &counter).await?;
        let mut played = Vec::new();
        for (index, task) in tasks.iter().enumerate() {
            let task = play(&agent, task, options.time_limit).await;
            progress(
                policy,
                &task,
                options.skip + index + 1,
                options.skip + tasks.len(),
            );
            played.push(task);
        }
        let succeeded = played.iter().filter(|task| task.succeeded).count();
        runs.push(LiveRun {
            policy,
            skipped: None,
            interval: wilson(succeeded, played.len()),
            tasks: played,
            succeeded,
        });
    }
    Ok(Live {
        dataset: data.name.clone(),
        model: model.model().to_owned(),
        all_tool_tokens,
        runs,
    })
}

/// The agent `policy` plays with: the catalog's tools answering a fixed
/// text, the meta-tools its front end offers, one in-memory store.
async fn agent(
    data: &Conversations,
    model: Arc<dyn ChatModel>,
    policy: LivePolicy,
    options: LiveOptions,
    counter: &Arc<TokenCounter>,
) -> Result<Agent<MemoryStore>> {
    let offered = match policy {
        LivePolicy::AllTools => Offered::AllCore,
        LivePolicy::Deferred(_) | LivePolicy::Search => Offered::ByGroup,
    };
    let source = Arc::new(FixedSource::new(&data.catalog, offered));
    let (meta_tools, routing, loaded_schemas) = match policy {
        LivePolicy::AllTools => (Vec::new(), None, LoadedSchemas::ToolList),
        LivePolicy::Deferred(LoadedSchemas::ToolList) => (
            vec![MetaTool::UnloadToolGroup],
            Some(RoutingConfig::default()),
            LoadedSchemas::ToolList,
        ),
        LivePolicy::Deferred(LoadedSchemas::Conversation) => (
            vec![MetaTool::UnloadToolGroup, MetaTool::CallTool],
            Some(RoutingConfig::default()),
            LoadedSchemas::Conversation,
        ),
        LivePolicy::Search => (
            vec![
                MetaTool::UnloadToolGroup,
                MetaTool::CallTool,
                MetaTool::FindToolGroups,
            ],
            Some(RoutingConfig::default()),
            LoadedSchemas::ToolList,
        ),
    };
    // `chat` offers the search above so many groups, as `serve` does.
    let search_above_groups =
        matches!(policy, LivePolicy::Deferred(_)).then_some(DEFAULT_SEARCH_ABOVE_GROUPS);
    let (toolbox, _) = Toolbox::start(ToolboxOptions {
        meta_tools,
        routing,
        search_above_groups,
        found_tools: FoundTools::Loaded,
        sources: vec![source as Arc<dyn ToolSource>],
        ..ToolboxOptions::default()
    })
    .await
    .map_err(EvalError::Toolbox)?;
    let most_calls = data
        .conversations
        .iter()
        .flat_map(|c| &c.turns)
        .map(|turn| turn.calls.len())
        .max()
        .unwrap_or(0);
    let options = AgentOptions {
        // A search, a load and a retry for each call, and the answer.
        max_model_calls: 3 * most_calls + 2,
        loaded_schemas,
        compaction: options.compaction,
        ..AgentOptions::default()
    };
    Ok(Agent::new(
        model,
        toolbox,
        Arc::new(MemoryStore::new()),
        options,
        Arc::clone(counter),
    ))
}

/// One task, turn by turn, through `agent`, cancelled as a user would
/// cancel a turn once `time_limit` has passed.
async fn play(
    agent: &Agent<MemoryStore>,
    conversation: &Conversation,
    time_limit: Option<Duration>,
) -> LiveTask {
    let id = ConversationId::new(conversation.id.as_str());
    let cancel = CancellationToken::new();
    let mut gold = BTreeSet::new();
    for call in conversation.turns.iter().flat_map(|turn| &turn.calls) {
        gold.insert(call.tool.clone());
    }
    let mut task = LiveTask {
        conversation: conversation.id.clone(),
        turns: conversation.turns.len(),
        gold: gold.iter().cloned().collect(),
        ..LiveTask::default()
    };
    let started = Instant::now();
    // Cancels at the deadline, then waits for the turn to end on it: the
    // agent stops cooperatively, and the events of the calls made so far
    // stay on the bill.
    let deadline = async {
        if let Some(limit) = time_limit {
            tokio::time::sleep(limit).await;
            cancel.cancel();
        }
        std::future::pending::<Infallible>().await
    };
    tokio::pin!(deadline);
    for turn in &conversation.turns {
        let mut events = Vec::new();
        let mut collect = |event| events.push(event);
        let sent = tokio::select! {
            sent = agent.send(&id, &turn.text, &mut collect, &cancel) => sent,
            never = &mut deadline => match never {},
        };
        record_calls(&mut task, events);
        if let Err(error) = sent {
            task.error = Some(match time_limit {
                Some(limit) if cancel.is_cancelled() => {
                    format!(
                        "the task passed its time limit of {} s",
                        limit.as_secs_f64()
                    )
                }
                _ => error.to_string(),
            });
            break;
        }
    }
    task.seconds = started.elapsed().as_secs_f64();
    task.succeeded = task.error.is_none() && gold.iter().all(|tool| task.called.contains(tool));
    task
}

/// Adds the tools that ran without error to `task.called`, a `call_tool`
/// call as the tool it named, and each model call with its billed tokens.
fn record_calls(task: &mut LiveTask, events: Vec<TurnEvent>) {
    let mut started: HashMap<String, String> = HashMap::new();
    for event in events {
        match event {
            TurnEvent::ToolStarted {
                id,
                name,
                arguments,
            } => {
                let tool = if name == CALL_TOOL_TOOL_NAME {
                    serde_json::from_str::<serde_json::Value>(&arguments)
                        .ok()
                        .and_then(|value| value.get("name")?.as_str().map(str::to_owned))
                        .unwrap_or(name)
                } else {
                    name
                };
                started.insert(id, tool);
            }
            TurnEvent::ToolFinished { id, status, .. } => {
                if status == ToolStatus::Success
                    && let Some(tool) = started.remove(&id)
                    && !task.called.contains(&tool)
                {
                    task.called.push(tool);
                }
            }
            // From the events, not the turn's outcome: a turn that fails
            // later (the window overflows) was billed for its calls so far.
            TurnEvent::ModelCalled(report) => bill(task, report.usage),
            TurnEvent::Compacted(compacted) => {
                task.compactions += 1;
                bill(task, compacted.usage);
            }
            TurnEvent::Model(_)
            | TurnEvent::Routed(_)
            | TurnEvent::Escalated { .. }
            | TurnEvent::CompactionFailed { .. }
            | TurnEvent::BudgetUnloaded { .. } => {}
        }
    }
}

/// One more model call on `task`'s bill, with what the endpoint counted.
fn bill(task: &mut LiveTask, usage: Option<Usage>) {
    task.model_calls += 1;
    if let Some(usage) = usage {
        task.input_tokens += usage.input_tokens;
        task.output_tokens += usage.output_tokens;
        task.cached_input_tokens += usage.cached_input_tokens.unwrap_or(0);
    }
}

#[cfg(test)]
#[path = "live_tests.rs"]
mod tests;
