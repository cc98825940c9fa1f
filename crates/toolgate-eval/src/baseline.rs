//! The top-k baselines the router is compared with: BM25 over every grouped
//! tool (what hosted tool search shows: the k best tools and no listing) and
//! the k best groups by the router's own scores (no tiers, no confidence).
//!
//! Each is measured at several k, which gives the curves of the report and
//! lets it pick the k that spends the router's token budget.

use std::collections::HashMap;
use std::time::Instant;

use toolgate_core::routing::{Bm25, Decision, Router, Visible, query_terms, tool_terms};
use toolgate_core::{Catalog, GroupId};

use crate::costs::{Costs, Seen};
use crate::dataset::Query;

/// k values of the BM25-over-tools curve.
pub(crate) const TOOL_KS: [usize; 11] = [1, 3, 5, 10, 20, 30, 50, 100, 200, 300, 500];
/// Tools per routed group of the best-tools-of-the-routed-groups policy.
pub(crate) const ROUTED_KS: [usize; 5] = [1, 2, 3, 5, 10];

/// The router's decisions with each visible group showing its `k` best tools
/// (by BM25 over tools, the group's other tools in catalog order when fewer
/// match) instead of all of them; a decision showing the whole catalog
/// still shows every tool. One list per k of [`ROUTED_KS`]; the decision
/// time is the router's (`router_seen`) plus the tool ranking's.
pub(crate) fn routed_tools(
    catalog: &Catalog,
    costs: &Costs,
    decisions: &[Decision],
    router_seen: &[Seen],
    queries: &[&Query],
) -> Vec<Vec<Seen>> {
    let tool_index = ToolIndex::new(catalog);
    let mut per_k: Vec<Vec<Seen>> = ROUTED_KS.iter().map(|_| Vec::new()).collect();
    for ((decision, query), routed) in decisions.iter().zip(queries).zip(router_seen) {
        let groups = match &decision.visible {
            Visible::Catalog => {
                for seen in &mut per_k {
                    let mut all = costs.groups_seen(catalog, &[], true);
                    all.micros = routed.micros;
                    seen.push(all);
                }
                continue;
            }
            Visible::Groups(groups) => groups,
        };
        let started = Instant::now();
        // Each visible group's matching tools, best first.
        let mut matching: HashMap<&GroupId, Vec<&str>> =
            groups.iter().map(|group| (group, Vec::new())).collect();
        for index in tool_index.rank(&query.text, &query.earlier_turns()) {
            let name = tool_index.names[index].as_str();
            if let Some(names) = catalog.group_of(name).and_then(|g| matching.get_mut(g)) {
                names.push(name);
            }
        }
        let micros = routed.micros + started.elapsed().as_secs_f64() * 1e6;
        for (slot, k) in ROUTED_KS.iter().enumerate() {
            let shown: Vec<(GroupId, Vec<&str>)> = groups
                .iter()
                .map(|group| {
                    let mut names: Vec<&str> = matching[group].iter().copied().take(*k).collect();
                    for tool in catalog.group_tools(group.as_str()) {
                        if names.len() >= *k {
                            break;
                        }
                        if !names.contains(&tool.name.as_str()) {
                            names.push(tool.name.as_str());
                        }
                    }
                    (group.clone(), names)
                })
                .collect();
            let mut seen = costs.partial_seen(&shown);
            seen.micros = micros;
            per_k[slot].push(seen);
        }
    }
    per_k
}

/// k values of the top-k-groups curve.
pub(crate) const GROUP_KS: [usize; 4] = [1, 2, 3, 5];

/// What the top-k baselines show each query: one list per k, in query order.
pub(crate) struct TopK {
    /// BM25 over tools, one list per k of [`TOOL_KS`].
    pub(crate) tools: Vec<Vec<Seen>>,
    /// The router's best groups, one list per k of [`GROUP_KS`].
    pub(crate) groups: Vec<Vec<Seen>>,
}

impl TopK {
    /// Runs both baselines on `queries`, calling `step` after each query.
    pub(crate) fn measure(
        catalog: &Catalog,
        costs: &Costs,
        router: &Router,
        queries: &[&Query],
        step: &mut dyn FnMut(),
    ) -> Self {
        let tool_index = ToolIndex::new(catalog);
        let mut tools: Vec<Vec<Seen>> = TOOL_KS.iter().map(|_| Vec::new()).collect();
        let mut groups: Vec<Vec<Seen>> = GROUP_KS.iter().map(|_| Vec::new()).collect();
        for query in queries {
            let started = Instant::now();
            let ranked_tools = tool_index.rank(&query.text, &query.earlier_turns());
            let tool_micros = started.elapsed().as_secs_f64() * 1e6;
            for (slot, k) in TOOL_KS.iter().enumerate() {
                let names: Vec<&str> = ranked_tools
                    .iter()
                    .take(*k)
                    .map(|i| tool_index.names[*i].as_str())
                    .collect();
                let mut seen = costs.tools_seen(catalog, &names);
                seen.micros = tool_micros;
                tools[slot].push(seen);
            }
            let started = Instant::now();
            let scores = router.scores(&query.text, &query.earlier_turns());
            let group_micros = started.elapsed().as_secs_f64() * 1e6;
            let mut order: Vec<usize> = (0..scores.len()).collect();
            order.sort_by(|a, b| scores[*b].total_cmp(&scores[*a]));
            for (slot, k) in GROUP_KS.iter().enumerate() {
                let best: Vec<GroupId> = order
                    .iter()
                    .take(*k)
                    .filter(|i| scores[**i] > 0.0)
                    .map(|i| router.groups()[*i].clone())
                    .collect();
                let mut seen = costs.groups_seen(catalog, &best, false);
                seen.micros = group_micros;
                groups[slot].push(seen);
            }
            step();
        }
        Self { tools, groups }
    }
}

/// BM25 over every grouped tool's name, description and parameters.
struct ToolIndex {
    names: Vec<String>,
    index: Bm25,
}

impl ToolIndex {
    fn new(catalog: &Catalog) -> Self {
        let mut names = Vec::new();
        let mut documents = Vec::new();
        for tool in catalog.tools().filter(|t| t.group.is_some()) {
            names.push(tool.definition.name.to_string());
            documents.push(tool_terms(tool.definition));
        }
        Self {
            names,
            index: Bm25::new(documents),
        }
    }

    /// Tool indexes, best first.
    fn rank(&self, query: &str, context: &[&str]) -> Vec<usize> {
        let scores = self.index.scores(&query_terms(query, context));
        let mut order: Vec<usize> = (0..scores.len()).filter(|i| scores[*i] > 0.0).collect();
        order.sort_by(|a, b| scores[*b].total_cmp(&scores[*a]));
        order
    }
}
