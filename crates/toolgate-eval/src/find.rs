//! The gateway's search as a policy: what one `find_tool_groups` call
//! answers for each query (its groups, each with its best tools on one line
//! apiece, and the tools that find the ids those require), counted as the
//! tokens of that answer on top of the core tools
//! and the listing. It runs the gateway's own code (`MetaTools` over
//! `Router::hybrid_search` with the shipped defaults), the embeddings looked up
//! from the ones already computed.
//!
//! Beside it, [`find_across`]: the search ranking tools across groups (the
//! shipped one), with no cap per group, the best k of them listed under
//! their groups and loaded, and the next k each time it is asked again.

use std::sync::Arc;

use serde_json::json;
use toolgate_core::routing::{SearchRanks, Taxonomy};
use toolgate_core::{
    ActiveToolSet, Catalog, FIND_TOOL_GROUPS_TOOL_NAME, FoundTools, GroupId, LoadedSchemas,
    MetaAnswer, MetaTool, MetaTools, TokenCounter,
};

use crate::agent::{MAX_ROUNDS, Page};
use crate::costs::{Costs, Seen};
use crate::dataset::Query;
use crate::precomputed::Precomputed;
use crate::tool_first::Prepared;

/// What one `find_tool_groups` call answered: the groups it named, most
/// likely first, the tools it listed (each group's best, then the id
/// finders) and the answer's tokens.
#[derive(Clone, Debug, Default)]
pub(crate) struct FindAnswer {
    /// The query sent.
    pub(crate) query: String,
    pub(crate) groups: Vec<GroupId>,
    pub(crate) tools: Vec<String>,
    pub(crate) tokens: usize,
    pub(crate) micros: f64,
}

impl FindAnswer {
    /// What the answer shows on top of the core tools and the listing.
    fn seen(&self, costs: &Costs) -> Seen {
        let mut seen = costs.partial_seen(&[]);
        seen.tokens += self.tokens;
        seen.groups.extend(self.groups.iter().cloned());
        seen.tools.extend(self.tools.iter().cloned());
        seen.micros = self.micros;
        seen
    }
}

/// What `find_tool_groups` answers each of `queries`.
fn find_answers(
    catalog: &Catalog,
    taxonomy: &Taxonomy,
    embeddings: Option<Arc<Precomputed>>,
    counter: &TokenCounter,
    queries: &[&Query],
) -> Vec<FindAnswer> {
    // Ranking groups, as `[routing] search = "groups"` does.
    let mut taxonomy = taxonomy.clone();
    taxonomy.search = SearchRanks::Groups;
    let mut meta = MetaTools::new([MetaTool::FindToolGroups]).with_taxonomy(taxonomy);
    if let Some(embeddings) = embeddings {
        meta = meta.with_embeddings(embeddings);
    }
    queries
        .iter()
        .map(|query| {
            let started = std::time::Instant::now();
            let answer = meta
                .parse(
                    "find_tool_groups",
                    &serde_json::json!({"query": query.text}),
                )
                .and_then(Result::ok)
                .and_then(|call| meta.answer(&call, None, catalog).ok());
            let micros = started.elapsed().as_secs_f64() * 1e6;
            let mut out = FindAnswer {
                query: query.text.clone(),
                micros,
                ..FindAnswer::default()
            };
            if let Some(MetaAnswer::Found(found)) = answer {
                out.tokens = counter.count(&found.to_string());
                for group in &found.groups {
                    out.groups.push(group.group.id.clone());
                    out.tools
                        .extend(group.tools.iter().map(|tool| tool.name.to_string()));
                    out.tools.extend(
                        group
                            .finders
                            .iter()
                            .map(|finder| finder.tool.name.to_string()),
                    );
                }
            }
            out
        })
        .collect()
}

/// `[routing] search_groups` values tried, the tools per group fixed at the
/// shipped [`DEFAULT_SEARCH_TOOLS`](toolgate_core::routing::DEFAULT_SEARCH_TOOLS)
/// (group recall cannot tell how many of a group's tools an answer needs).
/// No more than 12: an answer of 12 groups, each with three tools, is some
/// 50 lines; longer, it becomes a second listing.
pub(crate) const SEARCH_GROUPS: [usize; 3] = [5, 8, 12];

/// What each of `queries` sees from [`find_answers`] under `taxonomy`
/// listing at most `groups` groups.
pub(crate) fn find_listing(
    prepared: &Prepared<'_>,
    taxonomy: &Taxonomy,
    groups: usize,
    counter: &TokenCounter,
    queries: &[&Query],
) -> Vec<Seen> {
    find_ranked(prepared, taxonomy, groups, counter, queries)
        .iter()
        .map(|answer| answer.seen(&prepared.costs))
        .collect()
}

/// [`find_answers`] under `taxonomy` listing at most `groups` groups.
pub(crate) fn find_ranked(
    prepared: &Prepared<'_>,
    taxonomy: &Taxonomy,
    groups: usize,
    counter: &TokenCounter,
    queries: &[&Query],
) -> Vec<FindAnswer> {
    let mut shaped = taxonomy.clone();
    shaped.search_groups = groups;
    find_answers(
        &prepared.dataset.catalog,
        &shaped,
        prepared.embeddings.clone(),
        counter,
        queries,
    )
}

/// Tools a search ranking them across groups lists per answer, tried.
pub(crate) const FIND_ACROSS: [usize; 3] = [3, 5, 10];

/// What a `find_tool_groups` ranking tools across groups answers one query:
/// per k tried ([`FIND_ACROSS`]), its answers (the first, then each time it
/// is asked again, up to [`MAX_ROUNDS`]), each listing and loading k tools.
pub(crate) type AcrossPages = Vec<Vec<Page>>;

/// The gateway's search ranking tools across groups (`[routing] search =
/// "tools"`, the shipped one), with no cap per group, run by its own code
/// (`MetaTools` loading what it lists into a conversation's active set):
/// for each of `queries` and each k of `ks` (`search_results`), its answers
/// to the request asked [`MAX_ROUNDS`] times in a row, each listing and
/// loading the next k tools, the call and the answer's text counted (the
/// schemas apart).
pub(crate) fn find_across(
    prepared: &Prepared<'_>,
    taxonomy: &Taxonomy,
    counter: &TokenCounter,
    queries: &[&Query],
    ks: &[usize],
) -> Vec<AcrossPages> {
    let searches: Vec<MetaTools> = ks
        .iter()
        .map(|k| {
            let mut taxonomy = taxonomy.clone();
            taxonomy.search_results = *k;
            searching_tools(prepared, taxonomy)
        })
        .collect();
    queries
        .iter()
        .map(|query| {
            searches
                .iter()
                .map(|meta| pages(prepared, meta, counter, query, ActiveToolSet::new()))
                .collect()
        })
        .collect()
}

/// The same search (its `search_results` as `taxonomy` says) asked after a
/// router showed each query what `shown` says: its answers skip the tools
/// shown, loaded already. A router that showed every tool leaves nothing to
/// search for.
pub(crate) fn find_after(
    prepared: &Prepared<'_>,
    taxonomy: &Taxonomy,
    counter: &TokenCounter,
    queries: &[&Query],
    shown: &[Seen],
) -> Vec<Vec<Page>> {
    let catalog = &prepared.dataset.catalog;
    let meta = searching_tools(prepared, taxonomy.clone());
    queries
        .iter()
        .zip(shown)
        .map(|(query, seen)| {
            if seen.all {
                return Vec::new();
            }
            let mut active = ActiveToolSet::new();
            let mut by_group: std::collections::BTreeMap<&GroupId, Vec<&str>> =
                std::collections::BTreeMap::new();
            for tool in &seen.tools {
                if let Some(group) = catalog.group_of(tool) {
                    by_group.entry(group).or_default().push(tool);
                }
            }
            for (group, mut tools) in by_group {
                tools.sort_unstable();
                // A routed load the catalog refuses shows nothing either.
                let _ = active.load_tools(catalog, group.as_str(), &tools);
            }
            pages(prepared, &meta, counter, query, active)
        })
        .collect()
}

/// The gateway's search under `taxonomy`, ranking tools across groups and
/// loading what it lists, scoring with the embeddings where there are.
fn searching_tools(prepared: &Prepared<'_>, mut taxonomy: Taxonomy) -> MetaTools {
    taxonomy.search = SearchRanks::Tools;
    let meta = MetaTools::new([MetaTool::FindToolGroups])
        .with_taxonomy(taxonomy)
        .with_found_tools(FoundTools::Loaded);
    match prepared.embeddings.clone() {
        Some(embeddings) => meta.with_embeddings(embeddings),
        None => meta,
    }
}

/// `meta`'s answers to `query` asked [`MAX_ROUNDS`] times in a row of a
/// conversation holding `active`, each loading the next tools it lists,
/// while it lists any.
fn pages(
    prepared: &Prepared<'_>,
    meta: &MetaTools,
    counter: &TokenCounter,
    query: &Query,
    mut active: ActiveToolSet,
) -> Vec<Page> {
    let catalog = &prepared.dataset.catalog;
    let arguments = json!({ "query": query.text });
    let call = counter.count(FIND_TOOL_GROUPS_TOOL_NAME) + counter.count(&arguments.to_string());
    let Some(Ok(search)) = meta.parse(FIND_TOOL_GROUPS_TOOL_NAME, &arguments) else {
        return Vec::new();
    };
    let mut pages = Vec::new();
    for _ in 0..MAX_ROUNDS {
        let Ok(MetaAnswer::Found(found)) = meta.answer(&search, Some(&mut active), catalog) else {
            break;
        };
        let tools: Vec<String> = found
            .loaded
            .iter()
            .flat_map(|load| load.tools.iter().map(|t| t.name.to_string()))
            .collect();
        if tools.is_empty() {
            break;
        }
        pages.push(Page {
            tools,
            groups: found.loaded.iter().map(|l| l.group.id.clone()).collect(),
            tokens: call + counter.count(&found.answer(LoadedSchemas::ToolList).to_string()),
        });
        if !found.more {
            break;
        }
    }
    pages
}

#[cfg(test)]
#[path = "find_tests.rs"]
mod tests;
