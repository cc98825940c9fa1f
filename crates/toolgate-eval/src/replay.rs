//! [`replay`]: a dataset's multi-turn conversations played through the
//! agent loop of `toolgate-agent` against an oracle model that calls each
//! turn's gold tools in order, loading a group whenever a tool it needs is
//! not in its tool list, under each [`ReplayMode`]: no load budget, a
//! budget of some tokens, or every tool on every call.
//!
//! Everything the agent does is real (the toolbox, the history in a store,
//! the active set restored from it each turn, the load budget's unloads);
//! the model is [`crate::oracle`]'s and the tools answer a fixed text. Each
//! conversation's [`ConversationFigures`] say what it cost: the input tokens
//! of all its model calls, the largest tool list it sent (peak schema
//! tokens), the calls refused because their tool was not loaded (0 with the
//! oracle, which loads again what the budget unloaded), and the budget's
//! unloads.

use std::sync::Arc;

use serde::Serialize;
use tokio_util::sync::CancellationToken;
use toolgate_agent::{Agent, AgentOptions, TurnEvent};
use toolgate_core::{
    Catalog, LOAD_TOOL_GROUP_TOOL_NAME, LoadBudget, LoadedSchemas, MetaTool, NotAvailable,
    TokenCounter, ToolStatus,
};
use toolgate_store::{ConversationId, MemoryStore};
use toolgate_tools::{ToolSource, Toolbox, ToolboxOptions};

use crate::conversations::{Conversation, Conversations};
use crate::error::{EvalError, Result};
use crate::oracle::{FixedSource, Offered, OracleModel};

/// How the loaded tools are kept during a replay.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ReplayMode {
    /// Groups load on demand and stay loaded.
    NoBudget,
    /// Groups load on demand within this many tokens of schemas
    /// (`[tools] max_loaded_tokens`).
    Budget(usize),
    /// No groups: every tool's schema on every call.
    AllTools,
}

impl ReplayMode {
    /// The mode as a report names it.
    pub fn label(self) -> String {
        match self {
            Self::NoBudget => "no budget".to_owned(),
            Self::Budget(tokens) => format!("budget {tokens}"),
            Self::AllTools => "all tools".to_owned(),
        }
    }
}

/// What one conversation cost under one mode.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct ConversationFigures {
    /// The conversation's id.
    pub conversation: String,
    /// Its user turns.
    pub turns: usize,
    /// The groups its gold calls use.
    pub groups: usize,
    /// Model calls, all turns.
    pub model_calls: usize,
    /// Input tokens of every model call: system prompt, messages and tool
    /// schemas, counted as the agent counts them.
    pub input_tokens: u64,
    /// Tokens of the largest tool list one model call sent.
    pub peak_tool_tokens: usize,
    /// `load_tool_group` calls, reloads included.
    pub loads: usize,
    /// Gold calls made.
    pub gold_calls: usize,
    /// Calls refused because their tool was not loaded.
    pub unavailable_calls: usize,
    /// Calls that failed otherwise (arguments their schema refused, a load
    /// refused).
    pub other_failed_calls: usize,
    /// Loads for which the budget unloaded something.
    pub budget_unloads: usize,
    /// Groups the budget unloaded.
    pub groups_unloaded: usize,
}

/// One mode's replay of every conversation.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct ReplayRun {
    /// The mode.
    pub mode: ReplayMode,
    /// Each conversation's figures, in dataset order.
    pub conversations: Vec<ConversationFigures>,
    /// Their sums, except `peak_tool_tokens`: the largest of the peaks.
    pub total: ConversationFigures,
    /// The sum of the conversations' peaks.
    pub peak_tool_tokens_sum: usize,
    /// Tokens of the tools every model call sends whatever is loaded (the
    /// meta-tools; under [`ReplayMode::AllTools`], every tool): a peak less
    /// these is what the loaded groups' schemas came to.
    pub core_tokens: usize,
}

/// One group's size.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct GroupSize {
    /// The group.
    pub group: String,
    /// Its tools.
    pub tools: usize,
    /// Tokens of their schemas.
    pub tokens: usize,
}

/// A dataset replayed under several modes.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Replay {
    /// The dataset.
    pub dataset: String,
    /// Where a load put the loaded tools' schemas: `tool_list` or
    /// `conversation` (`[tools] loaded_schemas`).
    pub loaded_schemas: String,
    /// The tokenizer of every count.
    pub encoding: String,
    /// Its groups' sizes, in catalog order.
    pub groups: Vec<GroupSize>,
    /// Conversations replayed.
    pub conversations: usize,
    /// Their user turns.
    pub turns: usize,
    /// Each mode's replay, in the order asked.
    pub runs: Vec<ReplayRun>,
}

/// The modes a replay compares by default: no budget, budgets of one, two
/// and three groups of the median size (the groups' sizes vary, so a budget
/// in whole median groups is where one, two or three typical groups fit),
/// and all tools.
pub fn default_modes(catalog: &Catalog, counter: &TokenCounter) -> Vec<ReplayMode> {
    let median = median_group_tokens(catalog, counter);
    let mut modes = vec![ReplayMode::NoBudget];
    if median > 0 {
        modes.extend((1..=3).map(|groups| ReplayMode::Budget(groups * median)));
    }
    modes.push(ReplayMode::AllTools);
    modes
}

/// The median of the groups' schema tokens (the mean of the middle two for
/// an even count); 0 without groups.
pub fn median_group_tokens(catalog: &Catalog, counter: &TokenCounter) -> usize {
    let mut sizes: Vec<usize> = group_sizes(catalog, counter)
        .into_iter()
        .map(|size| size.tokens)
        .collect();
    sizes.sort_unstable();
    match sizes.len() {
        0 => 0,
        n if n % 2 == 1 => sizes[n / 2],
        n => (sizes[n / 2 - 1] + sizes[n / 2]) / 2,
    }
}

fn group_sizes(catalog: &Catalog, counter: &TokenCounter) -> Vec<GroupSize> {
    catalog
        .groups()
        .map(|group| {
            let tools: Vec<_> = catalog.group_tools(group.id.as_str()).collect();
            GroupSize {
                group: group.id.to_string(),
                tools: tools.len(),
                tokens: counter.tools(tools),
            }
        })
        .collect()
}

/// Replays every conversation of `data` under each of `modes`, the loaded
/// schemas placed by `loaded_schemas` (with
/// [`LoadedSchemas::Conversation`] the toolbox offers `call_tool`, as
/// `toolgate chat` does, and the oracle calls loaded tools by name), reporting
/// each finished conversation to `progress` (mode, done, total). A
/// conversation's turn that fails (the store, the toolbox) stops the
/// replay with the error.
pub async fn replay(
    data: &Conversations,
    modes: &[ReplayMode],
    loaded_schemas: LoadedSchemas,
    counter: Arc<TokenCounter>,
    progress: &mut dyn FnMut(ReplayMode, usize, usize),
) -> Result<Replay> {
    let mut runs = Vec::new();
    for &mode in modes {
        runs.push(replay_mode(data, mode, loaded_schemas, &counter, progress).await?);
    }
    Ok(Replay {
        dataset: data.name.clone(),
        loaded_schemas: match loaded_schemas {
            LoadedSchemas::ToolList => "tool_list",
            LoadedSchemas::Conversation => "conversation",
        }
        .to_owned(),
        encoding: counter.encoding().as_str().to_owned(),
        groups: group_sizes(&data.catalog, &counter),
        conversations: data.conversations.len(),
        turns: data.conversations.iter().map(|c| c.turns.len()).sum(),
        runs,
    })
}

/// Every conversation under `mode`, each in a conversation of its own in
/// one in-memory store.
async fn replay_mode(
    data: &Conversations,
    mode: ReplayMode,
    loaded_schemas: LoadedSchemas,
    counter: &Arc<TokenCounter>,
    progress: &mut dyn FnMut(ReplayMode, usize, usize),
) -> Result<ReplayRun> {
    let offered = match mode {
        ReplayMode::NoBudget | ReplayMode::Budget(_) => Offered::ByGroup,
        ReplayMode::AllTools => Offered::AllCore,
    };
    let source = Arc::new(FixedSource::new(&data.catalog, offered));
    // What `toolgate chat` offers.
    let mut meta_tools = vec![MetaTool::UnloadToolGroup];
    if loaded_schemas == LoadedSchemas::Conversation {
        meta_tools.push(MetaTool::CallTool);
    }
    let (toolbox, _) = Toolbox::start(ToolboxOptions {
        meta_tools,
        sources: vec![source as Arc<dyn ToolSource>],
        ..ToolboxOptions::default()
    })
    .await
    .map_err(EvalError::Toolbox)?;
    let core_tokens = counter.tools(toolbox.catalog().core_tools());
    let store = Arc::new(MemoryStore::new());
    let oracle = Arc::new(OracleModel::new(
        &data.catalog,
        Arc::clone(counter),
        Arc::clone(&toolbox),
        Arc::clone(&store),
    ));
    // Each gold call may need a load before it, and the answer follows.
    let most_calls = data
        .conversations
        .iter()
        .flat_map(|c| &c.turns)
        .map(|turn| turn.calls.len())
        .max()
        .unwrap_or(0);
    let options = AgentOptions {
        max_model_calls: 2 * most_calls + 2,
        load_budget: match mode {
            ReplayMode::Budget(tokens) => LoadBudget::Tokens(tokens),
            ReplayMode::NoBudget | ReplayMode::AllTools => LoadBudget::Unlimited,
        },
        loaded_schemas,
        ..AgentOptions::default()
    };
    let agent = Agent::new(
        Arc::clone(&oracle) as Arc<dyn toolgate_llm::ChatModel>,
        toolbox,
        store,
        options,
        Arc::clone(counter),
    );
    let mut conversations = Vec::new();
    for (index, conversation) in data.conversations.iter().enumerate() {
        let figures = replay_conversation(&agent, &oracle, conversation, &data.catalog).await?;
        conversations.push(figures);
        progress(mode, index + 1, data.conversations.len());
    }
    let mut total = ConversationFigures {
        conversation: "total".to_owned(),
        ..ConversationFigures::default()
    };
    for figures in &conversations {
        total.turns += figures.turns;
        total.groups = total.groups.max(figures.groups);
        total.model_calls += figures.model_calls;
        total.input_tokens += figures.input_tokens;
        total.peak_tool_tokens = total.peak_tool_tokens.max(figures.peak_tool_tokens);
        total.loads += figures.loads;
        total.gold_calls += figures.gold_calls;
        total.unavailable_calls += figures.unavailable_calls;
        total.other_failed_calls += figures.other_failed_calls;
        total.budget_unloads += figures.budget_unloads;
        total.groups_unloaded += figures.groups_unloaded;
    }
    Ok(ReplayRun {
        mode,
        peak_tool_tokens_sum: conversations.iter().map(|c| c.peak_tool_tokens).sum(),
        core_tokens,
        conversations,
        total,
    })
}

/// One conversation, turn by turn, through `agent`.
async fn replay_conversation(
    agent: &Agent<MemoryStore>,
    oracle: &OracleModel,
    conversation: &Conversation,
    catalog: &Catalog,
) -> Result<ConversationFigures> {
    let id = ConversationId::new(conversation.id.as_str());
    let cancel = CancellationToken::new();
    let mut figures = ConversationFigures {
        conversation: conversation.id.clone(),
        turns: conversation.turns.len(),
        groups: conversation.groups(catalog).len(),
        ..ConversationFigures::default()
    };
    for turn in &conversation.turns {
        oracle.begin(&id, &turn.calls);
        let mut events = Vec::new();
        let outcome = agent
            .send(&id, &turn.text, &mut |event| events.push(event), &cancel)
            .await
            .map_err(|source| EvalError::Replay {
                conversation: conversation.id.clone(),
                source,
            })?;
        for call in &outcome.calls {
            figures.model_calls += 1;
            figures.input_tokens += call.usage.map_or(0, |usage| usage.input_tokens);
            figures.peak_tool_tokens = figures.peak_tool_tokens.max(call.tool_tokens);
        }
        for event in events {
            count_event(&mut figures, event);
        }
    }
    Ok(figures)
}

/// Adds what `event` shows to `figures`.
fn count_event(figures: &mut ConversationFigures, event: TurnEvent) {
    match event {
        TurnEvent::BudgetUnloaded { groups, .. } => {
            figures.budget_unloads += 1;
            figures.groups_unloaded += groups.len();
        }
        TurnEvent::ToolFinished {
            name,
            status,
            output,
            ..
        } => {
            let load = name == LOAD_TOOL_GROUP_TOOL_NAME;
            if load {
                figures.loads += 1;
            } else {
                figures.gold_calls += 1;
            }
            if status == ToolStatus::Error {
                let refused = NotAvailable {
                    tool: name,
                    group: None,
                }
                .to_string();
                if !load && output.starts_with(&refused) {
                    figures.unavailable_calls += 1;
                } else {
                    figures.other_failed_calls += 1;
                }
            }
        }
        TurnEvent::Model(_)
        | TurnEvent::ModelCalled(_)
        | TurnEvent::Routed(_)
        | TurnEvent::Escalated { .. }
        | TurnEvent::Compacted(_)
        | TurnEvent::CompactionFailed { .. }
        | TurnEvent::ToolStarted { .. } => {}
    }
}

#[cfg(test)]
#[path = "replay_tests.rs"]
mod tests;
