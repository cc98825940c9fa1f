//! What a turn reports as it happens ([`TurnEvent`]) and when it ends
//! ([`TurnOutcome`]).

use toolgate_core::routing::Decision;
use toolgate_core::{GroupId, ToolName, ToolStatus};
use toolgate_llm::{StreamEvent, Usage};

use crate::compaction::Compacted;

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
    /// The conversation was compacted before the next model call: the model
    /// reads the summary and what follows it from now on.
    Compacted(Compacted),
    /// The conversation was due for compaction but its summary failed; it
    /// is as it was, and the turn goes on.
    CompactionFailed {
        /// Why.
        reason: String,
    },
    /// The load budget unloaded these groups and tools, least recently
    /// called first, to make room for a load the model asked for; the load's
    /// answer tells the model.
    BudgetUnloaded {
        /// The groups unloaded whole.
        groups: Vec<GroupId>,
        /// The tools unloaded of groups loaded in part, each with its group.
        tools: Vec<(GroupId, ToolName)>,
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

/// Receives [`TurnEvent`]s.
pub type TurnEvents<'a> = &'a mut (dyn FnMut(TurnEvent) + Send);
