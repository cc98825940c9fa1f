//! What a task costs under each policy: every reported query played as an
//! [`Episode`] by each [`Agent`], with loaded schemas in each
//! [`Placement`], and priced uncached and under each provider's cache.
//!
//! The policies, all on the same tasks (the reported queries with a gold
//! tool in the catalog):
//!
//! - `all_tools`: every schema on every call, no round trip;
//! - `gold_tools(ideal router)`: exactly the task's gold tools on the first
//!   call, the listing beside them: the floor of every routed policy;
//! - `listing`: the core tools and the group listing, groups loaded on
//!   demand (loading on demand alone, no router): what `toolgate serve` offers a
//!   client that never calls `find_tool_groups`;
//! - `find_tool_groups`: the model asks the gateway's search first, then
//!   loads; `find_tool_groups(schemas)` the same search answering with the
//!   schemas of the tools it names, so they can be called at once, and
//!   `find_tool_groups(schemas of k)` with the schemas of its first k;
//! - the routers `toolgate chat` runs before the model's first call:
//!   `tiered_router` (whole groups) and `tool_router` at several
//!   `tools_per_group`;
//! - `tool_search@k`: one search tool and no listing, each search returning
//!   k tools (hosted tool search, as Anthropic and OpenAI offer it).

use std::collections::HashSet;

use toolgate_core::TokenCounter;
use toolgate_core::routing::Fusion;

use crate::agent::{Agent, Stage, Start};
use crate::costs::Seen;
use crate::dataset::Query;
use crate::episode::{CACHES, Episode, Placement, Round};
use crate::figures::mean;
use crate::find::FindAnswer;
use crate::report::{Job, TaskCost};
use crate::tool_first::Prepared;

/// The policy name of the router that shows exactly a task's gold tools.
pub(crate) const IDEAL_ROUTER: &str = "gold_tools(ideal router)";

/// Tools of a `find_tool_groups` answer sent with their schemas, tried.
pub(crate) const FIND_SCHEMAS: [usize; 3] = [3, 5, 10];

/// Results per tool search call tried.
pub(crate) const SEARCH_KS: [usize; 3] = [3, 5, 10];

/// The routers' first showings to cost: each name with what each reported
/// query saw (in `report` order).
pub(crate) type Routed<'s> = Vec<(String, &'s [Seen])>;

/// Every policy's [`TaskCost`] on `report`.
pub(crate) fn task_costs(
    prepared: &Prepared<'_>,
    counter: &TokenCounter,
    report: &[&Query],
    routed: &Routed<'_>,
    found: &[FindAnswer],
    search_fusion: Fusion,
) -> Vec<TaskCost> {
    let catalog = &prepared.dataset.catalog;
    let stage = Stage::new(catalog, counter, &prepared.costs.tools);
    // The tasks: reported queries needing a tool the catalog has.
    let tasks: Vec<(usize, Vec<String>)> = report
        .iter()
        .enumerate()
        .map(|(i, q)| (i, stage.needed(&q.gold_tools)))
        .filter(|(_, needed)| !needed.is_empty())
        .collect();
    let all_tools = prepared.costs.all_tools;
    let baseline: Vec<Episode> = tasks
        .iter()
        .map(|(i, needed)| Episode {
            shared_tools: all_tools,
            request: counter.count(&report[*i].text),
            using_calls: needed.len() + 1,
            done: true,
            ..Episode::default()
        })
        .collect();
    let base = Totals::of(&baseline);
    let mut rows = vec![base.row(
        "all_tools",
        Job::Baseline,
        None,
        None,
        tasks.len(),
        1.0,
        &base,
    )];
    // The floor of every routed policy: a router that shows exactly the
    // task's gold tools on the first call, and nothing else.
    for placement in [Placement::ToolList, Placement::ConversationRouted] {
        let ideal: Vec<Episode> = tasks
            .iter()
            .map(|(i, needed)| {
                let start = Start {
                    visible: needed.iter().cloned().collect(),
                    tokens: stage.tool_tokens(needed.iter().map(String::as_str)),
                    ..Start::default()
                };
                let mut episode =
                    stage.load_groups(&report[*i].text, needed, start, Agent::Oracle, placement);
                episode.shared_tools = stage.meta_tools(placement, false);
                episode
            })
            .collect();
        rows.push(Totals::of(&ideal).row(
            IDEAL_ROUTER,
            Job::Baseline,
            Some(placement),
            None,
            tasks.len(),
            1.0,
            &base,
        ));
    }
    let mut add = |policy: &str,
                   job: Job,
                   start: &dyn Fn(usize, Placement) -> Start,
                   find: bool| {
        for agent in Agent::ALL {
            // Only a router shows anything before the first call to move.
            for placement in Placement::ALL
                .into_iter()
                .filter(|p| job == Job::Chat || *p != Placement::ConversationRouted)
            {
                let mut recall = Vec::new();
                let episodes: Vec<Episode> = tasks
                    .iter()
                    .map(|(i, needed)| {
                        let start = start(*i, placement);
                        recall.push(share(needed, &start.visible));
                        let mut episode =
                            stage.load_groups(&report[*i].text, needed, start, agent, placement);
                        episode.shared_tools = stage.meta_tools(placement, find);
                        episode
                    })
                    .collect();
                rows.push(Totals::of(&episodes).row(
                    policy,
                    job,
                    Some(placement),
                    Some(agent.label()),
                    tasks.len(),
                    mean(recall.into_iter()),
                    &base,
                ));
            }
        }
    };
    add("listing", Job::Serve, &|_, _| Start::default(), false);
    // `schemas`: how many of the tools the answer names come with their
    // schemas, callable at once (in the answer's order: the most likely
    // group's best tools first).
    let find_start = |i: usize, placement: Placement, schemas: usize| {
        let answer = &found[i];
        let call = stage.call_tokens(toolgate_core::FIND_TOOL_GROUPS_TOOL_NAME, &report[i].text);
        let mut round = Round {
            listed: 0,
            messages: call + answer.tokens,
        };
        let mut start = Start {
            named: answer.groups.clone(),
            read: answer.tools.clone(),
            ..Start::default()
        };
        let callable = &answer.tools[..schemas.min(answer.tools.len())];
        let tokens = stage.tool_tokens(callable.iter().map(String::as_str));
        if placement.lists_loads() {
            round.listed = tokens;
        } else {
            round.messages += tokens;
        }
        start.visible = callable.iter().cloned().collect();
        start.rounds = vec![round];
        start
    };
    add(
        "find_tool_groups",
        Job::Serve,
        &|i, placement| find_start(i, placement, 0),
        true,
    );
    for k in FIND_SCHEMAS {
        add(
            &format!("find_tool_groups(schemas of {k})"),
            Job::Serve,
            &|i, placement| find_start(i, placement, k),
            true,
        );
    }
    add(
        "find_tool_groups(schemas)",
        Job::Serve,
        &|i, placement| find_start(i, placement, usize::MAX),
        true,
    );
    for (name, seen) in routed {
        let start = |i: usize, _: Placement| {
            let seen = &seen[i];
            if seen.all {
                let everything: HashSet<String> = catalog
                    .tools()
                    .filter(|t| t.group.is_some())
                    .map(|t| t.definition.name.to_string())
                    .collect();
                return Start {
                    visible: everything,
                    tokens: all_tools,
                    ..Start::default()
                };
            }
            Start {
                visible: seen.tools.clone(),
                tokens: seen.tokens.saturating_sub(prepared.costs.core_and_listing),
                ..Start::default()
            }
        };
        add(name, Job::Chat, &start, false);
    }
    for k in SEARCH_KS {
        for agent in Agent::ALL {
            for placement in [Placement::ToolList, Placement::Conversation] {
                let episodes: Vec<Episode> = tasks
                    .iter()
                    .map(|(i, needed)| {
                        let ranked = prepared.tool_ranking(search_fusion, report[*i]);
                        stage.search_tools(&report[*i].text, needed, &ranked, k, agent, placement)
                    })
                    .collect();
                rows.push(Totals::of(&episodes).row(
                    &format!("tool_search@{k}"),
                    Job::Peer,
                    Some(placement),
                    Some(agent.label()),
                    tasks.len(),
                    0.0,
                    &base,
                ));
            }
        }
    }
    rows
}

/// Share of `needed` in `visible`.
fn share(needed: &[String], visible: &HashSet<String>) -> f64 {
    needed.iter().filter(|n| visible.contains(*n)).count() as f64 / needed.len().max(1) as f64
}

/// Sums over a policy's episodes.
struct Totals {
    uncached: f64,
    cached: Vec<f64>,
    extra: f64,
    no_extra: f64,
    done: f64,
    tasks: f64,
}

impl Totals {
    fn of(episodes: &[Episode]) -> Self {
        Self {
            uncached: episodes.iter().map(|e| e.uncached() as f64).sum(),
            cached: CACHES
                .iter()
                .map(|rules| episodes.iter().map(|e| e.cached(rules)).sum())
                .collect(),
            extra: episodes.iter().map(|e| e.rounds.len() as f64).sum(),
            no_extra: episodes.iter().filter(|e| e.rounds.is_empty()).count() as f64,
            done: episodes.iter().filter(|e| e.done).count() as f64,
            tasks: episodes.len() as f64,
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn row(
        &self,
        policy: &str,
        job: Job,
        placement: Option<Placement>,
        agent: Option<&'static str>,
        tasks: usize,
        first_call_tool_recall: f64,
        base: &Self,
    ) -> TaskCost {
        let n = self.tasks.max(1.0);
        let ratio = |a: f64, b: f64| if b > 0.0 { a / b } else { 0.0 };
        TaskCost {
            policy: policy.to_owned(),
            job,
            placement,
            agent,
            tasks,
            first_call_tool_recall,
            uncached: self.uncached / n,
            cached: self.cached.iter().map(|c| c / n).collect(),
            uncached_share: ratio(self.uncached, base.uncached),
            cached_share: self
                .cached
                .iter()
                .zip(&base.cached)
                .map(|(c, b)| ratio(*c, *b))
                .collect(),
            extra_round_trips: self.extra / n,
            no_extra_round_trip: self.no_extra / n,
            done: self.done / n,
        }
    }
}
