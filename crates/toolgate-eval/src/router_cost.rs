//! What a `toolgate chat` task costs with a router's first showing
//! ([`RouterCosting`]): how the router's settings are chosen by cost.

use std::cell::RefCell;
use std::collections::HashMap;

use toolgate_core::TokenCounter;

use crate::agent::{Agent, Loads};
use crate::costing::{Costing, Played};
use crate::costs::Seen;
use crate::dataset::Query;
use crate::episode::{Episode, Placement};
use crate::report::Job;
use crate::tool_first::Prepared;

/// Where `toolgate chat` places loaded schemas by default (`[tools]
/// loaded_schemas = "conversation"`), the router's showing among them: how
/// a router's settings are costed when they are chosen.
pub(crate) const CHAT_PLACEMENT: Placement = Placement::ConversationRouted;

/// What a task of `toolgate chat` costs with a router's first showing, as a
/// router's settings are chosen by: played by the listing agent, schemas
/// placed as [`CHAT_PLACEMENT`], billed under Anthropic's cache with busy
/// traffic, as a share of all-tools' bill alike.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct RouterCost {
    pub(crate) cached_share: f64,
    pub(crate) extra_round_trips: f64,
}

impl RouterCost {
    /// The mean over datasets (none of none).
    pub(crate) fn mean(costs: &[Self]) -> Option<Self> {
        let n = costs.len();
        (n > 0).then(|| Self {
            cached_share: costs.iter().map(|c| c.cached_share).sum::<f64>() / n as f64,
            extra_round_trips: costs.iter().map(|c| c.extra_round_trips).sum::<f64>() / n as f64,
        })
    }
}

/// The tasks of one dataset's queries, ready to cost routers' showings on.
pub(crate) struct RouterCosting<'a> {
    costing: Costing<'a>,
    /// Each task's episode from each showing played so far, by the task,
    /// the showing's tokens and its tools (sorted): settings and fusion
    /// methods often show a task the same tools, and the listing agent's
    /// play is most of what choosing a setting costs.
    played: RefCell<HashMap<Showing, Episode>>,
}

/// A task (its index), and the tokens and sorted names of the tools a
/// router showed it.
type Showing = (usize, usize, Vec<String>);

impl<'a> RouterCosting<'a> {
    /// `queries`: those each showing is of, in the same order.
    pub(crate) fn new(
        prepared: &'a Prepared<'a>,
        counter: &'a TokenCounter,
        queries: &[&'a Query],
    ) -> Self {
        Self {
            // A setting is chosen by its cost and round trips, which no
            // context window changes.
            costing: Costing::new(prepared, counter, queries, usize::MAX),
            played: RefCell::new(HashMap::new()),
        }
    }

    /// What a task costs when a router showed `seen` (one per query).
    pub(crate) fn cost(&self, seen: &[Seen]) -> RouterCost {
        let costing = &self.costing;
        let played = Played {
            job: Job::Chat,
            find: false,
            agent: Agent::Listing,
            placement: CHAT_PLACEMENT,
            loads: Loads::Tools,
        };
        let mut memo = self.played.borrow_mut();
        let episodes: Vec<Episode> = costing
            .tasks
            .iter()
            .map(|(i, needed)| {
                let start = costing.routed(&seen[*i]);
                let mut tools: Vec<String> = start.visible.iter().cloned().collect();
                tools.sort_unstable();
                memo.entry((*i, start.tokens, tools))
                    .or_insert_with(|| costing.play(&costing.stage, *i, needed, start, played))
                    .clone()
            })
            .collect();
        let row = costing.row(
            "",
            played.job,
            Some(played.placement),
            Some(played.agent),
            &episodes,
            0.0,
        );
        RouterCost {
            cached_share: row.cached_share.first().copied().unwrap_or(f64::INFINITY),
            extra_round_trips: row.extra_round_trips,
        }
    }
}
