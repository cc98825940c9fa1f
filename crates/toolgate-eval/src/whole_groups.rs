//! The whole-group policies: the lexical tiered router (and its decisions
//! sent as polymorphic tools, and its one-softmax variant), and the
//! baselines beside it (every tool, the listing alone, BM25 over tools and
//! over groups, the router's groups showing only their best tools).

use toolgate_core::Catalog;
use toolgate_core::routing::{ConfidenceKind, Decision, Router, RoutingConfig, Taxonomy};

use crate::baseline::{GROUP_KS, ROUTED_KS, TOOL_KS, TopK, routed_tools};
use crate::costs::{Costs, Seen};
use crate::dataset::Query;
use crate::figures::{curve_point, high_tier, mean, router_figures};
use crate::policy::{ScoresOf, describe, run_router, tune_router};
use crate::report::{CurvePoint, PolicyReport, TierFigures};
use crate::reported::Reported;

/// What the whole-group policies show and score.
pub(crate) struct WholeGroups {
    /// Their rows, in report order.
    pub(crate) policies: Vec<PolicyReport>,
    /// What the tiered router showed each reported query, and its decisions.
    pub(crate) router_seen: Vec<Seen>,
    pub(crate) decisions: Vec<Decision>,
    /// BM25 over tools, and over groups, at several k.
    pub(crate) tools_curve: Vec<CurvePoint>,
    pub(crate) groups_curve: Vec<CurvePoint>,
    /// The tiered router's confidence model, and its group cap.
    pub(crate) confidence_model: String,
    pub(crate) max_groups: usize,
}

/// The lexical scores of a query's groups.
fn lexical(router: &Router, query: &Query) -> Vec<f64> {
    router.scores(&query.text, &query.earlier_turns())
}

/// Tunes the tiered router on the tuning part and measures it and the
/// baselines on the reported queries; `progress(done, total)` as queries
/// are processed.
pub(crate) fn whole_groups(
    catalog: &Catalog,
    taxonomy: &Taxonomy,
    config: &RoutingConfig,
    costs: &Costs,
    reported: &Reported<'_>,
    progress: &mut dyn FnMut(usize, usize),
) -> WholeGroups {
    let report = &reported.queries;
    let router = tune_router(catalog, taxonomy, config, costs, &reported.tuned, &lexical);
    let total = report.len() * 2;
    let mut done = 0;
    let mut step = || {
        done += 1;
        progress(done, total);
    };
    let (router_seen, decisions) =
        run_router(&router, catalog, costs, report, &lexical, &mut |_, _| {
            step()
        });
    let top_k = TopK::measure(catalog, costs, &router, report, &mut step);

    let mut policies = vec![
        reported.summarize("all_tools", &every_query(reported, costs, catalog, true)),
        reported.summarize(
            "core_listing",
            &every_query(reported, costs, catalog, false),
        ),
    ];
    let router_report = router_figures(
        reported.summarize("tiered_router", &router_seen),
        &decisions,
        &router_seen,
        report,
        reported.all,
    );
    let polymorphic = polymorphic_row(&router_report, &router_seen, &decisions, costs, reported);
    let curve = |ks: &[usize], seen: &[Vec<Seen>]| -> Vec<CurvePoint> {
        ks.iter()
            .zip(seen)
            .map(|(k, seen)| curve_point(*k, &reported.summarize(String::new(), seen)))
            .collect()
    };
    let tools_curve = curve(&TOOL_KS, &top_k.tools);
    // The tool-search baseline at the router's token budget, and at the
    // polymorphic one's: the smallest k that spends at least as much.
    let at_budget = |fraction: f64| {
        tools_curve
            .iter()
            .position(|p| p.token_fraction >= fraction)
            .unwrap_or(TOOL_KS.len() - 1)
    };
    let equal = at_budget(router_report.token_fraction);
    let equal_polymorphic = at_budget(polymorphic.token_fraction);
    policies.push(router_report);
    policies.push(polymorphic);
    policies.extend(softmax_row(catalog, taxonomy, config, costs, reported));
    let bm25_tools = |slot: usize| {
        reported.summarize(format!("bm25_tools@{}", TOOL_KS[slot]), &top_k.tools[slot])
    };
    policies.push(bm25_tools(equal));
    if equal_polymorphic != equal {
        policies.push(bm25_tools(equal_polymorphic));
    }
    // The same decisions, each visible group showing only its best tools.
    for (k, seen) in ROUTED_KS.iter().zip(routed_tools(
        catalog,
        costs,
        &decisions,
        &router_seen,
        report,
    )) {
        policies.push(reported.summarize(format!("routed_tools@{k}"), &seen));
    }
    for (slot, k) in GROUP_KS.iter().enumerate().take(3) {
        policies.push(reported.summarize(format!("bm25_groups@{k}"), &top_k.groups[slot]));
    }
    WholeGroups {
        policies,
        router_seen,
        decisions,
        tools_curve,
        groups_curve: curve(&GROUP_KS, &top_k.groups),
        confidence_model: describe(router.confidence()),
        max_groups: router.taxonomy().max_groups,
    }
}

/// Every reported query seeing every tool (`all`), or the core tools and
/// the listing alone.
fn every_query(reported: &Reported<'_>, costs: &Costs, catalog: &Catalog, all: bool) -> Vec<Seen> {
    reported
        .queries
        .iter()
        .map(|_| costs.groups_seen(catalog, &[], all))
        .collect()
}

/// The router's decisions with every routed group sent as one polymorphic
/// tool: the recall is the router's, the tokens are fewer.
fn polymorphic_row(
    router_report: &PolicyReport,
    router_seen: &[Seen],
    decisions: &[Decision],
    costs: &Costs,
    reported: &Reported<'_>,
) -> PolicyReport {
    let seen: Vec<Seen> = router_seen.iter().map(|s| costs.polymorphic(s)).collect();
    let mut row = reported.summarize("tiered_router(polymorphic)", &seen);
    row.tiers = router_report.tiers;
    row.escalation_rate = router_report.escalation_rate;
    row.high_tier = router_report.high_tier.map(|figures| TierFigures {
        token_fraction: mean(
            high_tier(decisions)
                .iter()
                .map(|i| seen[*i].tokens as f64 / reported.all),
        ),
        ..figures
    });
    row
}

/// With the per-group confidence model fitted, the one-softmax model, tuned
/// the same way, for comparison.
fn softmax_row(
    catalog: &Catalog,
    taxonomy: &Taxonomy,
    config: &RoutingConfig,
    costs: &Costs,
    reported: &Reported<'_>,
) -> Option<PolicyReport> {
    if taxonomy.confidence != ConfidenceKind::PerGroup || config.per_group.is_some() {
        return None;
    }
    let mut softmax = taxonomy.clone();
    softmax.confidence = ConfidenceKind::Softmax;
    softmax.max_groups = config
        .max_groups
        .unwrap_or_else(|| ConfidenceKind::Softmax.default_max_groups());
    let scores: &ScoresOf<'_> = &lexical;
    let router = tune_router(catalog, &softmax, config, costs, &reported.tuned, scores);
    let (seen, decisions) = run_router(
        &router,
        catalog,
        costs,
        &reported.queries,
        scores,
        &mut |_, _| {},
    );
    Some(router_figures(
        reported.summarize("tiered_router(softmax)", &seen),
        &decisions,
        &seen,
        &reported.queries,
        reported.all,
    ))
}
