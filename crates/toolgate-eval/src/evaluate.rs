//! [`evaluate`]: every policy on one dataset, tuned on the tuning part and
//! measured on the reported part, with the same token counter.
//!
//! The policies, in report order: every tool, the core tools and listing
//! alone, the tiered router (and its decisions with the groups sent as
//! polymorphic tools), the router blended with embeddings when
//! [`SemanticInputs`] are given, the one-softmax router when the per-group
//! model is fitted, then BM25 over tools at the router's token budget and the
//! router's best 1 to 3 groups.

use toolgate_core::routing::{ConfidenceKind, Router, RoutingConfig, semantic};
use toolgate_core::{Origin, TokenCounter};

use crate::baseline::{GROUP_KS, ROUTED_KS, TOOL_KS, TopK, routed_tools};
use crate::costs::{Costs, Seen};
use crate::dataset::{Dataset, Query};
use crate::error::Result;
use crate::policy::{describe, run_router, tune_router};
use crate::report::{
    CurvePoint, Evaluation, TierFigures, bands, curve_point, high_tier, mean, router_figures,
    summary,
};

/// Embeddings for the semantic variant of the router: one vector per
/// catalog group (in catalog order) and one per query (in dataset order).
#[derive(Clone, Debug)]
pub struct SemanticInputs {
    /// Group vectors.
    pub groups: Vec<Vec<f32>>,
    /// Query vectors.
    pub queries: Vec<Vec<f32>>,
    /// Semantic share of the blended score.
    pub weight: f64,
    /// What produced them (shown in the policy name).
    pub model: String,
}

/// Evaluates every policy on `dataset`. `progress(done, total)` is called as
/// queries are processed.
///
/// ```no_run
/// use toolgate_core::routing::RoutingConfig;
/// use toolgate_core::{Encoding, TokenCounter};
/// use toolgate_eval::{Dataset, evaluate, markdown};
///
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let dataset = Dataset::load(std::path::Path::new("data/seal_tools"))?;
/// let counter = TokenCounter::new(Encoding::O200kBase)?;
/// let evaluation = evaluate(&dataset, &counter, &RoutingConfig::default(), None, &mut |_, _| {})?;
/// let table: String = markdown(&evaluation, "o200k_base");
/// # Ok(())
/// # }
/// ```
pub fn evaluate(
    dataset: &Dataset,
    counter: &TokenCounter,
    config: &RoutingConfig,
    semantic: Option<&SemanticInputs>,
    progress: &mut dyn FnMut(usize, usize),
) -> Result<Evaluation> {
    let catalog = &dataset.catalog;
    let taxonomy = config.validate(catalog)?;
    let tune: Vec<&Query> = dataset.queries.iter().filter(|q| q.tune).collect();
    let report: Vec<&Query> = dataset
        .queries
        .iter()
        .filter(|q| !q.tune && !q.gold_groups.is_empty())
        .collect();
    let costs = Costs::new(catalog, counter);
    let tuned: Vec<&Query> = tune
        .iter()
        .copied()
        .filter(|q| !q.gold_groups.is_empty())
        .collect();

    let lexical =
        |router: &Router, query: &Query| router.scores(&query.text, &query.earlier_turns());
    let router = tune_router(catalog, &taxonomy, config, &costs, &tuned, &lexical);
    let confidence_model = describe(router.confidence());

    let total = report.len() * 2;
    let mut done = 0;
    let mut step = || {
        done += 1;
        progress(done, total);
    };
    let (router_seen, decisions) =
        run_router(&router, catalog, &costs, &report, &lexical, &mut |_, _| {
            step()
        });
    let top_k = TopK::measure(catalog, &costs, &router, &report, &mut step);

    let all = costs.all_tools as f64;
    let summarize = |policy: String, seen: &[Seen]| summary(policy, &report, seen, all);
    let all_seen: Vec<Seen> = report
        .iter()
        .map(|_| costs.groups_seen(catalog, &[], true))
        .collect();
    let core_seen: Vec<Seen> = report
        .iter()
        .map(|_| costs.groups_seen(catalog, &[], false))
        .collect();

    let router_report = router_figures(
        summarize("tiered_router".to_owned(), &router_seen),
        &decisions,
        &router_seen,
        &report,
        all,
    );

    // The tool-search baseline at the router's token budget: the smallest k
    // that spends at least as much.
    let tools_curve: Vec<CurvePoint> = TOOL_KS
        .iter()
        .zip(&top_k.tools)
        .map(|(k, seen)| curve_point(*k, &summarize(String::new(), seen)))
        .collect();
    let groups_curve: Vec<CurvePoint> = GROUP_KS
        .iter()
        .zip(&top_k.groups)
        .map(|(k, seen)| curve_point(*k, &summarize(String::new(), seen)))
        .collect();
    let equal = tools_curve
        .iter()
        .position(|p| p.token_fraction >= router_report.token_fraction)
        .unwrap_or(TOOL_KS.len() - 1);
    // The same decisions with every routed group sent as one polymorphic
    // tool: the recall is the router's, the tokens are fewer.
    let polymorphic_seen: Vec<Seen> = router_seen.iter().map(|s| costs.polymorphic(s)).collect();
    let mut polymorphic_report =
        summarize("tiered_router(polymorphic)".to_owned(), &polymorphic_seen);
    polymorphic_report.tiers = router_report.tiers;
    polymorphic_report.escalation_rate = router_report.escalation_rate;
    polymorphic_report.high_tier = router_report.high_tier.map(|figures| TierFigures {
        token_fraction: mean(
            high_tier(&decisions)
                .iter()
                .map(|i| polymorphic_seen[*i].tokens as f64 / all),
        ),
        ..figures
    });
    let equal_polymorphic = tools_curve
        .iter()
        .position(|p| p.token_fraction >= polymorphic_report.token_fraction)
        .unwrap_or(TOOL_KS.len() - 1);
    let mut policies = vec![
        summarize("all_tools".to_owned(), &all_seen),
        summarize("core_listing".to_owned(), &core_seen),
        router_report,
        polymorphic_report,
    ];
    if let Some(semantic) = semantic {
        let blended = |router: &Router, query: &Query| {
            let cosine = semantic::cosine_scores(&semantic.queries[query.index], &semantic.groups);
            semantic::blend(
                &router.scores(&query.text, &query.earlier_turns()),
                &cosine,
                semantic.weight,
            )
        };
        let router = tune_router(catalog, &taxonomy, config, &costs, &tuned, &blended);
        let (seen, decisions) =
            run_router(&router, catalog, &costs, &report, &blended, &mut |_, _| {});
        policies.push(router_figures(
            summarize(format!("tiered_router+{}", semantic.model), &seen),
            &decisions,
            &seen,
            &report,
            all,
        ));
    }
    if taxonomy.confidence == ConfidenceKind::PerGroup && config.per_group.is_none() {
        // The one-softmax model, tuned the same way, for comparison.
        let mut softmax = taxonomy;
        softmax.confidence = ConfidenceKind::Softmax;
        softmax.max_groups = config
            .max_groups
            .unwrap_or_else(|| ConfidenceKind::Softmax.default_max_groups());
        let router = tune_router(catalog, &softmax, config, &costs, &tuned, &lexical);
        let (seen, decisions) =
            run_router(&router, catalog, &costs, &report, &lexical, &mut |_, _| {});
        policies.push(router_figures(
            summarize("tiered_router(softmax)".to_owned(), &seen),
            &decisions,
            &seen,
            &report,
            all,
        ));
    }
    policies.push(summarize(
        format!("bm25_tools@{}", TOOL_KS[equal]),
        &top_k.tools[equal],
    ));
    if equal_polymorphic != equal {
        policies.push(summarize(
            format!("bm25_tools@{}", TOOL_KS[equal_polymorphic]),
            &top_k.tools[equal_polymorphic],
        ));
    }
    // The same decisions, each visible group showing only its best tools.
    for (k, seen) in ROUTED_KS.iter().zip(routed_tools(
        catalog,
        &costs,
        &decisions,
        &router_seen,
        &report,
    )) {
        policies.push(summarize(format!("routed_tools@{k}"), &seen));
    }
    for (slot, k) in GROUP_KS.iter().enumerate().take(3) {
        policies.push(summarize(format!("bm25_groups@{k}"), &top_k.groups[slot]));
    }

    let calibration = bands(&decisions, &report);
    Ok(Evaluation {
        dataset: dataset.name.clone(),
        tools: catalog
            .tools()
            .filter(|t| *t.origin != Origin::MetaTool)
            .count(),
        groups: catalog.groups().count(),
        all_tools_tokens: costs.all_tools,
        tune_queries: tune.len(),
        max_groups: router.taxonomy().max_groups,
        report_queries: report.len(),
        split_rule: dataset.split_rule.clone(),
        confidence_model,
        tuned_on: Vec::new(),
        policies,
        calibration,
        bm25_tools_curve: tools_curve,
        bm25_groups_curve: groups_curve,
    })
}

#[cfg(test)]
#[path = "evaluate_tests.rs"]
mod tests;
