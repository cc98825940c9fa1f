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
//!   `find_tool_groups(top k across groups, schemas)` the search ranking
//!   tools across groups with no cap per group, listing and loading its best
//!   k, and the next k each time it is asked again;
//! - the routers `toolgate chat` runs before the model's first call:
//!   `tiered_router` (whole groups) and `tool_router` at several
//!   `tools_per_group`;
//! - `tool_search@k`: one search tool and no listing, each search returning
//!   k tools (hosted tool search, as Anthropic and OpenAI offer it).
//!
//! Every search is asked with the request, as the gateway's search is; on a
//! catalog of conversations, tool search ranking the request with the turns
//! before it (as a router reads them) is compared in rows marked `[earlier
//! turns]`.
//!
//! The agents load the tools they know the names of, as `load_tool_group`
//! allows; the main policies are played again loading whole groups only,
//! as before it did, in rows marked `[whole-group loads]`.

use toolgate_core::ListingForm;
use toolgate_core::TokenCounter;
use toolgate_core::routing::Fusion;

use crate::agent::{Agent, Loads, Stage, Start};
use crate::costing::{Costing, Played, Routed, varied};
use crate::dataset::Query;
use crate::episode::{Episode, Placement};
use crate::find::{AcrossPages, FIND_ACROSS, FindAnswer};
use crate::report::{Job, TaskCost};
use crate::router_cost::CHAT_PLACEMENT;
use crate::tool_first::{Prepared, Reads};

/// The policy name of the router that shows exactly a task's gold tools.
pub(crate) const IDEAL_ROUTER: &str = "gold_tools(ideal router)";

/// Tools of a `find_tool_groups` answer sent with their schemas, tried.
pub(crate) const FIND_SCHEMAS: [usize; 3] = [3, 5, 10];

/// Results per tool search call tried.
pub(crate) const SEARCH_KS: [usize; 3] = [3, 5, 10];

/// The policy name of `find_tool_groups` asked with the keyword rewrite of
/// the request, as a model would ask it.
pub(crate) const FIND_BY_KEYWORDS: &str = "find_tool_groups(keywords)";

/// The policy name of `chat` showing the search's first answer before the
/// model's first call.
pub(crate) const SEARCHED_FIRST: &str = "search_router";

/// The variant of the rows of a policy `chat` does not run (the search's
/// first answer shown before the first call): compared, never chosen.
pub(crate) const NOT_RUN_BY_CHAT: &str = "chat does not run it";

/// The variant of the rows played loading whole groups only.
pub(crate) const WHOLE_GROUP_LOADS: &str = "whole-group loads";

/// What `find_tool_groups` answered each task's request, and its keyword
/// rewrite; and what it answers ranking tools across groups.
#[derive(Clone, Copy)]
pub(crate) struct Found<'f> {
    pub(crate) request: &'f [FindAnswer],
    pub(crate) keywords: &'f [FindAnswer],
    pub(crate) across: &'f [AcrossPages],
}

/// Every policy's [`TaskCost`] on `report`, for a model whose context
/// window is `window` tokens.
pub(crate) fn task_costs(
    prepared: &Prepared<'_>,
    counter: &TokenCounter,
    report: &[&Query],
    routed: &Routed<'_>,
    found: Found<'_>,
    search_fusion: Fusion,
    window: usize,
) -> Vec<TaskCost> {
    let costing = Costing::new(prepared, counter, report, window);
    let mut rows = vec![costing.row(
        "all_tools",
        Job::Baseline,
        None,
        None,
        &costing.baseline,
        1.0,
    )];
    rows.extend(costing.ideal());
    rows.extend(costing.serving(&costing.serve_stage, found.request, Few::No, Loads::Tools));
    rows.extend(costing.across(&costing.serve_stage, found.across));
    rows.extend(varied(
        costing.searched_first(&costing.serve_stage, found.across),
        NOT_RUN_BY_CHAT,
    ));
    for shown in routed {
        let start = |i, _| costing.routed_then(shown, i);
        let how = (Job::Chat, costing.chat_searches, Loads::Tools);
        rows.extend(costing.loading(&costing.stage, &shown.name, how, &start));
    }
    rows.extend(costing.tool_search(search_fusion, Reads::Request));
    if report.iter().any(|q| !q.context.is_empty()) {
        let reading = costing.tool_search(search_fusion, Reads::EarlierTurns);
        rows.extend(varied(reading, "earlier turns"));
    }
    rows.extend(costing.whole_groups(routed, found.request));
    rows.extend(costing.other_forms(routed, found.request, found.across));
    let by_keywords = costing.serving(&costing.serve_stage, found.keywords, Few::Yes, Loads::Tools);
    rows.extend(varied(
        by_keywords
            .into_iter()
            .filter(|r| r.policy != "listing")
            .collect(),
        "keyword query",
    ));
    rows
}

/// Whether to play only the main `serve` policies.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Few {
    /// `listing`, `find_tool_groups` and `find_tool_groups(schemas)`.
    Yes,
    /// Every form of the search's answer.
    No,
}

impl Costing<'_> {
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
                            Loads::Tools,
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

    /// The policies of `serve` on `stage`, loading as `loads` says: the
    /// listing with loads, then `find_tool_groups` first, its answer naming
    /// groups and tools, with the schemas of none, some or all of the tools
    /// it names.
    fn serving(
        &self,
        stage: &crate::agent::Stage<'_>,
        found: &[FindAnswer],
        few: Few,
        loads: Loads,
    ) -> Vec<TaskCost> {
        let mut rows = self.loading(stage, "listing", (Job::Serve, false, loads), &|_, _| {
            Start::default()
        });
        let mut schemas = vec![0];
        if few == Few::No {
            schemas.extend(FIND_SCHEMAS);
        }
        schemas.push(usize::MAX);
        for k in schemas {
            let policy = match k {
                0 => "find_tool_groups".to_owned(),
                usize::MAX => "find_tool_groups(schemas)".to_owned(),
                k => format!("find_tool_groups(schemas of {k})"),
            };
            let how = (Job::Serve, true, loads);
            rows.extend(self.loading(stage, &policy, how, &|i, placement| {
                self.found(stage, &found[i], placement, k)
            }));
        }
        rows
    }

    /// `find_tool_groups` ranking tools across groups, k to an answer
    /// (`across`: each task's answers, per k of [`FIND_ACROSS`]).
    fn across(&self, stage: &Stage<'_>, across: &[AcrossPages]) -> Vec<TaskCost> {
        let mut rows = Vec::new();
        for (slot, k) in FIND_ACROSS.iter().enumerate() {
            let policy = format!("find_tool_groups(top {k} across groups, schemas)");
            let how = (Job::Serve, true, Loads::Tools);
            rows.extend(self.loading(stage, &policy, how, &|i, placement| {
                let pages = across.get(i).and_then(|a| a.get(slot));
                Costing::paged(stage, pages.map_or(&[], Vec::as_slice), placement)
            }));
        }
        rows
    }

    /// `chat` running the gateway's search (ranking tools across groups)
    /// on the request before the model's first call and showing its first
    /// answer's tools, `find_tool_groups` offered for the next ones: a
    /// router that is the search's first page.
    fn searched_first(&self, stage: &Stage<'_>, across: &[AcrossPages]) -> Vec<TaskCost> {
        let mut rows = Vec::new();
        for (slot, k) in FIND_ACROSS.iter().enumerate() {
            let policy = format!("{SEARCHED_FIRST}({k} tools)");
            let how = (Job::Chat, true, Loads::Tools);
            rows.extend(self.loading(stage, &policy, how, &|i, _| {
                let pages = across.get(i).and_then(|a| a.get(slot));
                let Some((first, rest)) = pages.and_then(|p| p.split_first()) else {
                    return Start::default();
                };
                Start {
                    visible: first.tools.iter().cloned().collect(),
                    tokens: stage.tool_tokens(first.tools.iter().map(String::as_str)),
                    named: first.groups.clone(),
                    read: first.tools.clone(),
                    pages: rest.to_vec(),
                    ..Start::default()
                }
            }));
        }
        rows
    }

    /// The main policies loading whole groups only, as before a load could
    /// name tools: `serve`'s, and `chat`'s routers with the schemas where
    /// `chat` places them (and no search, as before `chat` offered it).
    fn whole_groups(&self, routed: &Routed<'_>, found: &[FindAnswer]) -> Vec<TaskCost> {
        let mut rows = self.serving(&self.serve_stage, found, Few::Yes, Loads::Groups);
        for shown in routed {
            for agent in Agent::ALL {
                let played = Played {
                    job: Job::Chat,
                    find: false,
                    agent,
                    placement: CHAT_PLACEMENT,
                    loads: Loads::Groups,
                };
                let start = |i, _| self.routed(&shown.seen[i]);
                rows.push(self.played(&self.stage, &shown.name, played, &start));
            }
        }
        varied(rows, WHOLE_GROUP_LOADS)
    }

    /// The main policies with the groups listed in each form the hosts do
    /// not choose for this catalog, to see whether the rule chose well:
    /// `serve`'s in every other form (its search ranking tools across groups
    /// too), `chat`'s routers in every other form it can list in (the
    /// search form only where it offers the search).
    fn other_forms(
        &self,
        routed: &Routed<'_>,
        found: &[FindAnswer],
        across: &[AcrossPages],
    ) -> Vec<TaskCost> {
        let mut rows = Vec::new();
        for form in ListingForm::ALL {
            if form != self.serve_stage.form {
                let stage = self.serve_stage.clone().in_form(form);
                rows.extend(forced(
                    self.serving(&stage, found, Few::Yes, Loads::Tools),
                    form,
                ));
                rows.extend(forced(self.across(&stage, across), form));
            }
            let chat_lists = self.chat_searches || form != ListingForm::Search;
            if form != self.stage.form && chat_lists {
                let stage = self.stage.clone().in_form(form);
                for shown in routed {
                    let start = |i, _| self.routed_then(shown, i);
                    let how = (Job::Chat, self.chat_searches, Loads::Tools);
                    let chat = self.loading(&stage, &shown.name, how, &start);
                    rows.extend(forced(chat, form));
                }
            }
        }
        rows
    }

    /// Tool search returning k tools a call, by `fusion`'s ranking of what
    /// `reads` says.
    fn tool_search(&self, fusion: Fusion, reads: Reads) -> Vec<TaskCost> {
        // Each task's ranking once, for every k, agent and placement.
        let rankings: Vec<Vec<&str>> = self
            .tasks
            .iter()
            .map(|(i, _)| self.prepared.tool_ranking(fusion, self.report[*i], reads))
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
