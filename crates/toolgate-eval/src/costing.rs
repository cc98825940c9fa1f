//! What every policy's tasks are costed with ([`Costing`]): the tasks of a
//! dataset's reported queries on its catalog, all-tools' bill they are
//! shares of, how a policy's task is begun and played, and the sums a
//! [`TaskCost`] row is made of. The policies themselves are listed in
//! `task_cost.rs`; a router's settings are costed in `router_cost.rs`.

use std::collections::HashSet;

use toolgate_core::{GroupSearch, ListingForm, TokenCounter};
use toolgate_tools::DEFAULT_SEARCH_ABOVE_GROUPS;

use crate::agent::{Agent, Loads, Page, Stage, Start};
use crate::costs::Seen;
use crate::dataset::Query;
use crate::episode::{CACHES, Episode, Placement, Round, Traffic};
use crate::figures::mean;
use crate::find::FindAnswer;
use crate::report::{Job, TaskCost};
use crate::tool_first::Prepared;

/// The context window a model is assumed to have when none is given: what
/// the models the caches are priced for (Claude Sonnet 4.x, GPT-5.4) take
/// without a long-context option.
pub const DEFAULT_CONTEXT_WINDOW: usize = 200_000;

/// What every policy's tasks are costed with.
pub(crate) struct Costing<'a> {
    pub(crate) prepared: &'a Prepared<'a>,
    /// The catalog with its groups listed as `chat` lists them.
    pub(crate) stage: Stage<'a>,
    /// `chat` offers `find_tool_groups` on this catalog (it has more than
    /// [`DEFAULT_SEARCH_ABOVE_GROUPS`] groups), as `serve` does.
    pub(crate) chat_searches: bool,
    /// The same, listed as `serve` lists them.
    pub(crate) serve_stage: Stage<'a>,
    pub(crate) report: Vec<&'a Query>,
    /// All-tools' episodes, and their totals: what every cost is a share of.
    pub(crate) baseline: Vec<Episode>,
    base: Totals,
    /// Each task's position in `report` and the gold tools it needs.
    pub(crate) tasks: Vec<(usize, Vec<String>)>,
    /// The model's context window: a task one of whose prompts passes it
    /// is not done.
    window: usize,
}

impl<'a> Costing<'a> {
    /// The tasks of `report` (the queries needing a tool the catalog has)
    /// on `prepared`'s catalog, each host listing its groups in the form
    /// that fits it: `serve` with `find_tool_groups`, `chat` with it above
    /// [`DEFAULT_SEARCH_ABOVE_GROUPS`] groups; a model with a context window
    /// of `window` tokens.
    pub(crate) fn new(
        prepared: &'a Prepared<'a>,
        counter: &'a TokenCounter,
        report: &[&'a Query],
        window: usize,
    ) -> Self {
        let catalog = &prepared.dataset.catalog;
        let chat_searches = chat_searches(catalog);
        let chat_search = match chat_searches {
            true => GroupSearch::Offered,
            false => GroupSearch::NotOffered,
        };
        let stage = Stage::new(
            catalog,
            counter,
            &prepared.costs.tools,
            ListingForm::fitting(catalog, chat_search),
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
            chat_searches,
            serve_stage,
            report: report.to_vec(),
            base: Totals::of(&baseline, window),
            baseline,
            tasks,
            window,
        }
    }

    /// A policy's row from its episodes.
    pub(crate) fn row(
        &self,
        policy: &str,
        job: Job,
        placement: Option<Placement>,
        agent: Option<Agent>,
        episodes: &[Episode],
        first_call_tool_recall: f64,
    ) -> TaskCost {
        Totals::of(episodes, self.window).row(
            RowOf {
                policy,
                job,
                placement,
                agent: agent.map(Agent::label),
                tasks: self.tasks.len(),
                first_call_tool_recall,
            },
            &self.base,
        )
    }

    /// A group-loading policy's rows (each agent, each placement), each
    /// task begun as `start` says, loading as `loads` says; `find` when it
    /// offers `find_tool_groups`.
    pub(crate) fn loading(
        &self,
        stage: &Stage<'_>,
        policy: &str,
        (job, find, loads): (Job, bool, Loads),
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
                    loads,
                };
                rows.push(self.played(stage, policy, played, start));
            }
        }
        rows
    }

    /// A group-loading policy's row as `played` says, each task begun as
    /// `start` says.
    pub(crate) fn played(
        &self,
        stage: &Stage<'_>,
        policy: &str,
        played: Played,
        start: &dyn Fn(usize, Placement) -> Start,
    ) -> TaskCost {
        let mut recall = Vec::new();
        let episodes: Vec<Episode> = self
            .tasks
            .iter()
            .map(|(i, needed)| {
                let start = start(*i, played.placement);
                recall.push(share(needed, &start.visible));
                self.play(stage, *i, needed, start, played)
            })
            .collect();
        let recall = mean(recall.into_iter());
        self.row(
            policy,
            played.job,
            Some(played.placement),
            Some(played.agent),
            &episodes,
            recall,
        )
    }

    /// The task of `report[task]`, needing `needed`, played as `played`
    /// says from `start`.
    pub(crate) fn play(
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
            played.loads,
        );
        episode.shared_tools = stage.meta_tools(played.placement, played.find);
        episode
    }

    /// A task begun with a `find_tool_groups` call answered by `answer`,
    /// whose first `schemas` tools come with their schemas, callable at once
    /// (in the answer's order: the most likely group's best tools first).
    pub(crate) fn found(
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

    /// A task begun with a search that ranks tools across groups and loads
    /// those it lists: its first page (of `pages`) answered, the others
    /// left for asking again.
    pub(crate) fn paged(stage: &Stage<'_>, pages: &[Page], placement: Placement) -> Start {
        let Some((first, rest)) = pages.split_first() else {
            return Start::default();
        };
        let tokens = stage.tool_tokens(first.tools.iter().map(String::as_str));
        let round = if placement.lists_loads() {
            Round {
                listed: tokens,
                messages: first.tokens,
            }
        } else {
            Round {
                listed: 0,
                messages: first.tokens + tokens,
            }
        };
        Start {
            visible: first.tools.iter().cloned().collect(),
            named: first.groups.clone(),
            read: first.tools.clone(),
            rounds: vec![round],
            pages: rest.to_vec(),
            ..Start::default()
        }
    }

    /// A task begun with what the router `shown` showed `report[task]`,
    /// the search's answers after it left for the agent to ask.
    pub(crate) fn routed_then(&self, shown: &Shown<'_>, task: usize) -> Start {
        Start {
            pages: shown.pages.get(task).cloned().unwrap_or_default(),
            ..self.routed(&shown.seen[task])
        }
    }

    /// A task begun with what a router showed: its tools, or at the low
    /// tier every tool.
    pub(crate) fn routed(&self, seen: &Seen) -> Start {
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
}

/// Whether `chat` offers `find_tool_groups` on `catalog`: above
/// [`DEFAULT_SEARCH_ABOVE_GROUPS`] groups, as `serve` does.
pub(crate) fn chat_searches(catalog: &toolgate_core::Catalog) -> bool {
    catalog.groups().count() > DEFAULT_SEARCH_ABOVE_GROUPS
}

/// A router's first showings to cost.
pub(crate) struct Shown<'s> {
    pub(crate) name: String,
    /// What each reported query saw (in `report` order).
    pub(crate) seen: &'s [Seen],
    /// Where `chat` offers `find_tool_groups`, what it answers each query
    /// after the showing (the tools shown loaded already); else empty.
    pub(crate) pages: &'s [Vec<Page>],
}

/// The routers' first showings to cost.
pub(crate) type Routed<'s> = Vec<Shown<'s>>;

/// How a group-loading policy's tasks are played.
#[derive(Clone, Copy)]
pub(crate) struct Played {
    pub(crate) job: Job,
    /// It offers `find_tool_groups`.
    pub(crate) find: bool,
    pub(crate) agent: Agent,
    pub(crate) placement: Placement,
    pub(crate) loads: Loads,
}

/// `rows` marked with what they vary that no host setting chooses.
pub(crate) fn varied(mut rows: Vec<TaskCost>, variant: &str) -> Vec<TaskCost> {
    for row in &mut rows {
        row.variant = Some(variant.to_owned());
    }
    rows
}

/// Share of `needed` in `visible`.
pub(crate) fn share(needed: &[String], visible: &HashSet<String>) -> f64 {
    needed.iter().filter(|n| visible.contains(*n)).count() as f64 / needed.len().max(1) as f64
}

/// What names a row, apart from its figures.
struct RowOf<'p> {
    policy: &'p str,
    job: Job,
    placement: Option<Placement>,
    agent: Option<&'static str>,
    tasks: usize,
    first_call_tool_recall: f64,
}

/// Sums over a policy's episodes.
struct Totals {
    uncached: f64,
    cached: Vec<f64>,
    /// Under the first cache, with light traffic.
    light: f64,
    extra: f64,
    no_extra: f64,
    /// Tasks done within the context window.
    done: f64,
    /// Tasks one of whose prompts passes the context window.
    over: f64,
    /// The largest prompt of any task.
    largest: usize,
    tasks: f64,
}

impl Totals {
    fn of(episodes: &[Episode], window: usize) -> Self {
        let fits = |e: &Episode| e.largest_prompt() <= window;
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
            done: episodes.iter().filter(|e| e.done && fits(e)).count() as f64,
            over: episodes.iter().filter(|e| !fits(e)).count() as f64,
            largest: episodes
                .iter()
                .map(Episode::largest_prompt)
                .max()
                .unwrap_or(0),
            tasks: episodes.len() as f64,
        }
    }

    fn row(&self, of: RowOf<'_>, base: &Self) -> TaskCost {
        let n = self.tasks.max(1.0);
        let ratio = |a: f64, b: f64| if b > 0.0 { a / b } else { 0.0 };
        TaskCost {
            policy: of.policy.to_owned(),
            job: of.job,
            placement: of.placement,
            agent: of.agent,
            tasks: of.tasks,
            first_call_tool_recall: of.first_call_tool_recall,
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
            fits: self.over == 0.0,
            over_window: self.over / n,
            largest_prompt: self.largest,
            default: false,
            sends: None,
            variant: None,
        }
    }
}
