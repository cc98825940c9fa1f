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

use std::cell::RefCell;
use std::collections::{HashMap, HashSet};

use toolgate_core::routing::Fusion;
use toolgate_core::{GroupSearch, ListingForm, TokenCounter};

use crate::agent::{Agent, Stage, Start};
use crate::costs::Seen;
use crate::dataset::Query;
use crate::episode::{CACHES, Episode, Placement, Round, Traffic};
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

/// The policy name of `find_tool_groups` asked with the keyword rewrite of
/// the request, as a model would ask it.
pub(crate) const FIND_BY_KEYWORDS: &str = "find_tool_groups(keywords)";

/// What `find_tool_groups` answered each task's request, and its keyword
/// rewrite.
#[derive(Clone, Copy)]
pub(crate) struct Found<'f> {
    pub(crate) request: &'f [FindAnswer],
    pub(crate) keywords: &'f [FindAnswer],
}

/// The routers' first showings to cost: each name with what each reported
/// query saw (in `report` order).
pub(crate) type Routed<'s> = Vec<(String, &'s [Seen])>;

/// Every policy's [`TaskCost`] on `report`.
pub(crate) fn task_costs(
    prepared: &Prepared<'_>,
    counter: &TokenCounter,
    report: &[&Query],
    routed: &Routed<'_>,
    found: Found<'_>,
    search_fusion: Fusion,
) -> Vec<TaskCost> {
    let costing = Costing::new(prepared, counter, report);
    let mut rows = vec![costing.row(
        "all_tools",
        Job::Baseline,
        None,
        None,
        &costing.baseline,
        1.0,
    )];
    rows.extend(costing.ideal());
    rows.extend(costing.serving(&costing.serve_stage, found.request, false));
    for (name, seen) in routed {
        let start = |i, _| costing.routed(&seen[i]);
        rows.extend(costing.loading(&costing.stage, name, Job::Chat, false, &start));
    }
    rows.extend(costing.tool_search(search_fusion));
    rows.extend(costing.other_forms(routed, found.request));
    let by_keywords = costing.serving(&costing.serve_stage, found.keywords, true);
    rows.extend(varied(
        by_keywords
            .into_iter()
            .filter(|r| r.policy != "listing")
            .collect(),
        "keyword query",
    ));
    rows
}

/// What every policy's tasks are costed with.
struct Costing<'a> {
    prepared: &'a Prepared<'a>,
    /// The catalog with its groups listed as `chat` lists them.
    stage: Stage<'a>,
    /// The same, listed as `serve` lists them.
    serve_stage: Stage<'a>,
    report: Vec<&'a Query>,
    /// All-tools' episodes, and their totals: what every cost is a share of.
    baseline: Vec<Episode>,
    base: Totals,
    /// Each task's position in `report` and the gold tools it needs.
    tasks: Vec<(usize, Vec<String>)>,
}

impl<'a> Costing<'a> {
    /// The tasks of `report` (the queries needing a tool the catalog has)
    /// on `prepared`'s catalog, each host listing its groups in the form
    /// that fits it: `chat` without `find_tool_groups`, `serve` with it.
    fn new(prepared: &'a Prepared<'a>, counter: &'a TokenCounter, report: &[&'a Query]) -> Self {
        let catalog = &prepared.dataset.catalog;
        let stage = Stage::new(
            catalog,
            counter,
            &prepared.costs.tools,
            ListingForm::fitting(catalog, GroupSearch::NotOffered),
        );
        let serve_stage = stage
            .clone()
            .in_form(ListingForm::fitting(catalog, GroupSearch::Offered));
        let tasks: Vec<(usize, Vec<String>)> = report
            .iter()
            .enumerate()
            .map(|(i, q)| (i, stage.needed(&q.gold_tools)))
            .filter(|(_, needed)| !needed.is_empty())
            .collect();
        let baseline: Vec<Episode> = tasks
            .iter()
            .map(|(i, needed)| Episode {
                shared_tools: prepared.costs.all_tools,
                request: counter.count(&report[*i].text),
                using_calls: needed.len() + 1,
                done: true,
                ..Episode::default()
            })
            .collect();
        Self {
            prepared,
            stage,
            serve_stage,
            report: report.to_vec(),
            base: Totals::of(&baseline),
            baseline,
            tasks,
        }
    }
    /// A policy's row from its episodes.
    fn row(
        &self,
        policy: &str,
        job: Job,
        placement: Option<Placement>,
        agent: Option<Agent>,
        episodes: &[Episode],
        first_call_tool_recall: f64,
    ) -> TaskCost {
        Totals::of(episodes).row(
            policy,
            job,
            placement,
            agent.map(Agent::label),
            self.tasks.len(),
            first_call_tool_recall,
            &self.base,
        )
    }

    /// The floor of every routed policy: a router that shows exactly the
    /// task's gold tools on the first call, and nothing else.
    fn ideal(&self) -> Vec<TaskCost> {
        [Placement::ToolList, Placement::ConversationRouted]
            .into_iter()
            .map(|placement| {
                let episodes: Vec<Episode> = self
                    .tasks
                    .iter()
                    .map(|(i, needed)| {
                        let start = Start {
                            visible: needed.iter().cloned().collect(),
                            tokens: self.stage.tool_tokens(needed.iter().map(String::as_str)),
                            ..Start::default()
                        };
                        let mut episode = self.stage.load_groups(
                            &self.report[*i].text,
                            needed,
                            start,
                            Agent::Oracle,
                            placement,
                        );
                        episode.shared_tools = self.stage.meta_tools(placement, false);
                        episode
                    })
                    .collect();
                self.row(
                    IDEAL_ROUTER,
                    Job::Baseline,
                    Some(placement),
                    None,
                    &episodes,
                    1.0,
                )
            })
            .collect()
    }

    /// A group-loading policy's rows (each agent, each placement), each
    /// task begun as `start` says; `find` when it offers
    /// `find_tool_groups`.
    fn loading(
        &self,
        stage: &Stage<'_>,
        policy: &str,
        job: Job,
        find: bool,
        start: &dyn Fn(usize, Placement) -> Start,
    ) -> Vec<TaskCost> {
        let mut rows = Vec::new();
        for agent in Agent::ALL {
            // Only a router shows anything before the first call to move.
            for placement in Placement::ALL
                .into_iter()
                .filter(|p| job == Job::Chat || *p != Placement::ConversationRouted)
            {
                let played = Played {
                    job,
                    find,
                    agent,
                    placement,
                };
                rows.push(self.played(stage, policy, played, start));
            }
        }
        rows
    }

    /// A group-loading policy's row as `played` says, each task begun as
    /// `start` says.
    fn played(
        &self,
        stage: &Stage<'_>,
        policy: &str,
        played: Played,
        start: &dyn Fn(usize, Placement) -> Start,
    ) -> TaskCost {
        let Played {
            job,
            agent,
            placement,
            ..
        } = played;
        let mut recall = Vec::new();
        let episodes: Vec<Episode> = self
            .tasks
            .iter()
            .map(|(i, needed)| {
                let start = start(*i, placement);
                recall.push(share(needed, &start.visible));
                self.play(stage, *i, needed, start, played)
            })
            .collect();
        let recall = mean(recall.into_iter());
        self.row(policy, job, Some(placement), Some(agent), &episodes, recall)
    }

    /// The task of `report[task]`, needing `needed`, played as `played`
    /// says from `start`.
    fn play(
        &self,
        stage: &Stage<'_>,
        task: usize,
        needed: &[String],
        start: Start,
        played: Played,
    ) -> Episode {
        let mut episode = stage.load_groups(
            &self.report[task].text,
            needed,
            start,
            played.agent,
            played.placement,
        );
        episode.shared_tools = stage.meta_tools(played.placement, played.find);
        episode
    }

    /// The policies of `serve` on `stage`: the listing with loads, then
    /// `find_tool_groups` first, its answer naming groups and tools, with the
    /// schemas of none, some or all of the tools it names; `few` keeps
    /// `listing`, `find_tool_groups` and `find_tool_groups(schemas)` only.
    fn serving(&self, stage: &Stage<'_>, found: &[FindAnswer], few: bool) -> Vec<TaskCost> {
        let mut rows = self.loading(stage, "listing", Job::Serve, false, &|_, _| {
            Start::default()
        });
        let mut schemas = vec![0];
        if !few {
            schemas.extend(FIND_SCHEMAS);
        }
        schemas.push(usize::MAX);
        for k in schemas {
            let policy = match k {
                0 => "find_tool_groups".to_owned(),
                usize::MAX => "find_tool_groups(schemas)".to_owned(),
                k => format!("find_tool_groups(schemas of {k})"),
            };
            rows.extend(
                self.loading(stage, &policy, Job::Serve, true, &|i, placement| {
                    self.found(stage, &found[i], placement, k)
                }),
            );
        }
        rows
    }

    /// The main policies with the groups listed in each form the hosts do
    /// not choose for this catalog, to see whether the rule chose well:
    /// `serve`'s in every other form, `chat`'s routers in the other of lines
    /// and names (`chat` offers no search).
    fn other_forms(&self, routed: &Routed<'_>, found: &[FindAnswer]) -> Vec<TaskCost> {
        let mut rows = Vec::new();
        for form in ListingForm::ALL {
            if form != self.serve_stage.form {
                let stage = self.serve_stage.clone().in_form(form);
                rows.extend(forced(self.serving(&stage, found, true), form));
            }
            if form != self.stage.form && form != ListingForm::Search {
                let stage = self.stage.clone().in_form(form);
                for (name, seen) in routed {
                    let start = |i, _| self.routed(&seen[i]);
                    let chat = self.loading(&stage, name, Job::Chat, false, &start);
                    rows.extend(forced(chat, form));
                }
            }
        }
        rows
    }

    /// A task begun with a `find_tool_groups` call answered by `answer`,
    /// whose first `schemas` tools come with their schemas, callable at once
    /// (in the answer's order: the most likely group's best tools first).
    fn found(
        &self,
        stage: &Stage<'_>,
        answer: &FindAnswer,
        placement: Placement,
        schemas: usize,
    ) -> Start {
        let call = stage.call_tokens(toolgate_core::FIND_TOOL_GROUPS_TOOL_NAME, &answer.query);
        let callable = &answer.tools[..schemas.min(answer.tools.len())];
        let tokens = stage.tool_tokens(callable.iter().map(String::as_str));
        let round = if placement.lists_loads() {
            Round {
                listed: tokens,
                messages: call + answer.tokens,
            }
        } else {
            Round {
                listed: 0,
                messages: call + answer.tokens + tokens,
            }
        };
        Start {
            visible: callable.iter().cloned().collect(),
            named: answer.groups.clone(),
            read: answer.tools.clone(),
            rounds: vec![round],
            ..Start::default()
        }
    }

    /// A task begun with what a router showed: its tools, or at the low
    /// tier every tool.
    fn routed(&self, seen: &Seen) -> Start {
        if seen.all {
            return Start {
                visible: self
                    .prepared
                    .dataset
                    .catalog
                    .tools()
                    .filter(|t| t.group.is_some())
                    .map(|t| t.definition.name.to_string())
                    .collect(),
                tokens: self.prepared.costs.all_tools,
                ..Start::default()
            };
        }
        Start {
            visible: seen.tools.clone(),
            tokens: seen
                .tokens
                .saturating_sub(self.prepared.costs.core_and_listing),
            ..Start::default()
        }
    }

    /// Tool search returning k tools a call, by `fusion`'s ranking.
    fn tool_search(&self, fusion: Fusion) -> Vec<TaskCost> {
        // Each task's ranking once, for every k, agent and placement.
        let rankings: Vec<Vec<&str>> = self
            .tasks
            .iter()
            .map(|(i, _)| self.prepared.tool_ranking(fusion, self.report[*i]))
            .collect();
        let mut rows = Vec::new();
        for k in SEARCH_KS {
            for agent in Agent::ALL {
                for placement in [Placement::ToolList, Placement::Conversation] {
                    let episodes: Vec<Episode> = self
                        .tasks
                        .iter()
                        .zip(&rankings)
                        .map(|((i, needed), ranked)| {
                            let text = &self.report[*i].text;
                            self.stage
                                .search_tools(text, needed, ranked, k, agent, placement)
                        })
                        .collect();
                    let policy = format!("tool_search@{k}");
                    rows.push(self.row(
                        &policy,
                        Job::Peer,
                        Some(placement),
                        Some(agent),
                        &episodes,
                        0.0,
                    ));
                }
            }
        }
        rows
    }
}

/// `rows` marked as played with the groups listed in `form`, which the
/// hosts do not choose for the catalog.
fn forced(rows: Vec<TaskCost>, form: ListingForm) -> Vec<TaskCost> {
    varied(rows, &format!("{} listing", form.as_str()))
}

/// How a group-loading policy's tasks are played.
#[derive(Clone, Copy)]
struct Played {
    job: Job,
    /// It offers `find_tool_groups`.
    find: bool,
    agent: Agent,
    placement: Placement,
}

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
            costing: Costing::new(prepared, counter, queries),
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

/// `rows` marked with what they vary that no host setting chooses.
fn varied(mut rows: Vec<TaskCost>, variant: &str) -> Vec<TaskCost> {
    for row in &mut rows {
        row.variant = Some(variant.to_owned());
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
    /// Under the first cache, with light traffic.
    light: f64,
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
            light: episodes
                .iter()
                .map(|e| e.cached_with(&CACHES[0], Traffic::Light))
                .sum(),
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
            light_traffic_share: ratio(self.light, base.light),
            extra_round_trips: self.extra / n,
            no_extra_round_trip: self.no_extra / n,
            done: self.done / n,
            variant: None,
        }
    }
}
