//! The evaluation harness behind `toolgate eval`: routing policies side by
//! side on labelled datasets in the normalized layout (`tools.jsonl`,
//! `groups.jsonl`, `queries.jsonl`), on the same queries and with the same
//! token counter.
//!
//! [`Dataset::load`] reads a dataset and fixes its split into a tuning part
//! and a reported part; [`evaluate`] tunes the router on the first and
//! measures every policy (the tiered router and its variants, and the
//! baselines) on the second, into an [`Evaluation`]; [`markdown`] and [`svg`]
//! render it.
//!
//! [`replay`] plays a dataset's multi-turn conversations ([`Conversations`])
//! through the agent loop against an oracle model that calls the gold tools,
//! with and without a load budget, and [`replay_markdown`] renders what each
//! conversation cost. [`live`] plays them against a real model instead, to
//! measure how often it does the task under each policy, and
//! [`live_markdown`] renders that.
//!
//! This crate is apart from `toolgate-core` so that the routing core every
//! user links keeps only what a running router needs. It is not published,
//! prints nothing and reaches no network: embeddings come in as
//! [`SemanticInputs`], and the caller prints what it returns.
#![deny(missing_docs)]
#![deny(clippy::print_stdout, clippy::print_stderr)]

mod agent;
mod baseline;
mod choice;
mod conversations;
mod cost_choice;
mod cost_markdown;
mod cost_svg;
mod costing;
mod costs;
mod cross;
mod dataset;
mod defaults;
mod episode;
mod error;
mod evaluate;
mod figures;
mod find;
#[cfg(test)]
mod fixtures;
mod keywords;
mod live;
mod live_markdown;
mod markdown;
mod must_hold;
mod oracle;
mod policy;
mod precomputed;
mod python_call;
mod replay;
mod replay_markdown;
mod report;
mod reported;
mod router_cost;
mod svg;
mod task_cost;
mod tool_first;
mod tool_router;
mod whole_groups;

pub use conversations::{Conversation, Conversations, GoldCall, GoldTurn};
pub use cost_choice::{GOAL_CACHED, GOAL_ROUND_TRIPS, GOAL_UNCACHED, ROUND_TRIP_TIE};
pub use cost_markdown::{cost_assumptions, cost_summary};
pub use cost_svg::cost_svg;
pub use costing::DEFAULT_CONTEXT_WINDOW;
pub use cross::{LeftOut, fit_across, leave_one_out};
pub use dataset::{Dataset, Query};
pub use defaults::{THRESHOLD_SHARES, choose_defaults, defaults_on_all};
pub use episode::{ANTHROPIC, CACHES, CacheRules, OPENAI, Placement};
pub use error::{EvalError, Result};
pub use evaluate::{SemanticInputs, evaluate};
pub use keywords::{KEYWORDS, keyword_query};
pub use live::{Live, LiveOptions, LivePolicy, LiveRun, LiveTask, live, wilson};
pub use live_markdown::live_markdown;
pub use markdown::{
    GOAL_BAND_DECISIONS, GOAL_BAND_POINTS, GOAL_RECALL, GOAL_TOKENS, goal_summary, markdown,
};
pub use must_hold::{MAX_TIMES_SEARCH, SERVE_EXTRA_TRIPS};
pub use oracle::FIXED_RESULT;
pub use replay::{
    ConversationFigures, GroupSize, Replay, ReplayMode, ReplayRun, default_modes,
    median_group_tokens, replay,
};
pub use replay_markdown::{BudgetCheck, budget_check, replay_markdown};
pub use report::{
    Band, Considered, CurvePoint, Evaluation, FittedFusion, Job, JobDefault, LEARNED_ROUTER,
    PolicyReport, SearchCurve, Shortfall, TaskCost, TierFigures, TierMix,
};
pub use svg::svg;
