//! [`evaluate`]: every policy on one dataset, tuned on the tuning part and
//! measured on the reported part, with the same token counter.
//!
//! The policies, in report order: every tool, the core tools and listing
//! alone, the tiered router (and its decisions with the groups sent as
//! polymorphic tools), the router blended with embeddings when
//! [`SemanticInputs`] are given, the one-softmax router when the per-group
//! model is fitted, then BM25 over tools at the router's token budget and the
//! router's best 1 to 3 groups.

use toolgate_core::routing::{
    ConfidenceKind, DEFAULT_SEARCH_GROUPS, Decision, Fusion, Router, RoutingConfig, Taxonomy,
};
use toolgate_core::{Origin, TokenCounter};

use crate::baseline::{GROUP_KS, ROUTED_KS, TOOL_KS, TopK, routed_tools};
use crate::costs::{Costs, Seen};
use crate::dataset::{Dataset, Query};
use crate::error::Result;
use crate::policy::{describe, run_router, tune_router};
use crate::report::{
    CurvePoint, Evaluation, FIND_WITHOUT_ID_FINDERS, LEARNED_ROUTER, SearchCurve, TierFigures,
    WITH_ID_FINDERS, WITHOUT_ID_FINDERS, bands, curve_point, high_tier, mean, router_figures,
    share_at_cap, summary,
};
use crate::task_cost::{Routed, TaskCost, task_costs};
use crate::tool_first::{
    ChoiceSet, Fitted, Measured, Prepared, RouterSetting, Vectors, best, fit, fit_labelled,
    fitted_for, fitted_fusion, fusions, measure_on, settings,
};

/// Embeddings for the semantic policies: one vector per grouped tool (in
/// [`toolgate_core::routing::tool_texts`] order) and one per query (in
/// dataset order).
#[derive(Clone, Debug)]
pub struct SemanticInputs {
    /// Tool vectors.
    pub tools: Vec<Vec<f32>>,
    /// Query vectors.
    pub queries: Vec<Vec<f32>>,
    /// What produced them.
    pub model: String,
}

/// Where the tool-first router's confidence model comes from.
pub(crate) enum Fitting<'a> {
    /// The dataset's own tuning part.
    Own,
    /// Other datasets only (leave one out).
    Across(&'a [&'a Prepared<'a>]),
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
    let prepared = Prepared::new(dataset, config, vectors(semantic), counter)?;
    evaluate_prepared(&prepared, counter, config, Fitting::Own, progress)
}

/// The vectors of `semantic`, as [`Prepared::new`] takes them.
pub(crate) fn vectors(semantic: Option<&SemanticInputs>) -> Option<Vectors<'_>> {
    semantic.map(|s| (s.tools.as_slice(), s.queries.as_slice()))
}

/// [`evaluate`] on a prepared dataset, the tool-first router fitted as
/// `fitting` says.
pub(crate) fn evaluate_prepared(
    prepared: &Prepared<'_>,
    counter: &TokenCounter,
    config: &RoutingConfig,
    fitting: Fitting<'_>,
    progress: &mut dyn FnMut(usize, usize),
) -> Result<Evaluation> {
    let dataset = prepared.dataset;
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

    // Tools first, then groups: the tool-search baselines and the router
    // that loads the best tools of the groups it routes, per fusion method.
    let mut search_curves = Vec::new();
    let mut tool_router_calibration = Vec::new();
    let mut tool_router_calibration_online = Vec::new();
    let mut tool_router_calibration_fitted = Vec::new();
    let mut tool_router_self_test = None;
    let mut group_curves = Vec::new();
    let mut fitted = Vec::new();
    for fusion in fusions(prepared.semantic) {
        let seen = prepared.tool_search(&prepared.costs, fusion, &TOOL_KS, &report);
        let curve: Vec<CurvePoint> = TOOL_KS
            .iter()
            .zip(&seen)
            .map(|(k, seen)| curve_point(*k, &summarize(String::new(), seen)))
            .collect();
        search_curves.push(SearchCurve {
            method: fusion.label(),
            points: curve,
        });
        const GS: [usize; 10] = [1, 2, 3, 5, 8, 10, 15, 20, 30, 50];
        for m in [1, 2, 3] {
            let seen = prepared.group_search(&prepared.costs, fusion, &GS, m, &report);
            group_curves.push(SearchCurve {
                method: format!("groups[{}]@{m}", fusion.label()),
                points: GS
                    .iter()
                    .zip(&seen)
                    .map(|(g, seen)| curve_point(*g, &summarize(String::new(), seen)))
                    .collect(),
            });
        }
        let max_groups = prepared.taxonomy.max_groups;
        let model = match &fitting {
            Fitting::Own => {
                fit_labelled(&[prepared.labelled(fusion, &tuned).as_slice()], max_groups)
            }
            Fitting::Across(others) => fit(others, fusion, max_groups),
        };
        fitted.push((fusion, model));
    }
    // Each fusion method's settings chosen where the figures are not
    // reported: on the other datasets (leave one out), else on this one's
    // tuning part; then the best of them all, the headline.
    let choice_sets: Vec<ChoiceSet<'_>> = match &fitting {
        Fitting::Own => vec![ChoiceSet {
            prepared,
            fitted: &fitted,
            tune_only: true,
        }],
        Fitting::Across(others) => others
            .iter()
            .map(|other| ChoiceSet {
                prepared: other,
                fitted: &fitted,
                tune_only: false,
            })
            .collect(),
    };
    // How many groups the gateway's search lists, chosen the same way.
    let search_groups = crate::find::choose_search_groups(&choice_sets, counter)
        .map_or(DEFAULT_SEARCH_GROUPS, |(groups, _)| groups);
    let mut chosen_per_fusion = Vec::new();
    // The same choice made among the settings without id finders, and
    // among those with them: what the nested choice was between.
    let mut by_finders: [Vec<(RouterSetting, Measured)>; 2] = [Vec::new(), Vec::new()];
    let mut fitted_settings = Vec::new();
    for (fusion, model) in &fitted {
        let candidates = settings(*fusion);
        let measured: Vec<_> = candidates
            .iter()
            .copied()
            .zip(measure_on(&candidates, &choice_sets))
            .collect();
        if let Some(chosen) = best(measured.iter().copied()) {
            chosen_per_fusion.push(chosen);
            fitted_settings.push(fitted_fusion(model, chosen.0, chosen.1, search_groups));
        }
        for (shown, chosen) in by_finders.iter_mut().enumerate() {
            chosen.extend(best(
                measured
                    .iter()
                    .copied()
                    .filter(|(setting, _)| setting.id_finders == (shown == 1)),
            ));
        }
    }
    // The router fuses both kinds of evidence; each alone is reported
    // beside it, not a candidate for it.
    let fused = |chosen: &[(RouterSetting, Measured)]| {
        best(
            chosen
                .iter()
                .copied()
                .filter(|(setting, _)| setting.fusion.is_fused()),
        )
        .map(|(setting, _)| setting)
    };
    let headline = fused(&chosen_per_fusion);
    let mut tool_router_setting = String::new();
    let mut tool_router_at_cap = 0.0;
    let chosen = headline.and_then(|s| Some((s, fitted_for(&fitted, s.fusion)?)));
    if let Some((setting, model)) = chosen {
        let (seen, decisions) = prepared.route(setting, model, &report);
        tool_router_calibration.push((setting.name(), bands(&decisions, &report)));
        let fitted_alone: Vec<Decision> = decisions
            .iter()
            .cloned()
            .map(|mut decision| {
                decision.confidence = decision.fitted_confidence;
                decision
            })
            .collect();
        tool_router_calibration_fitted = bands(&fitted_alone, &report);
        tool_router_self_test = prepared.self_test(setting, model);
        tool_router_setting = setting.name();
        tool_router_at_cap = share_at_cap(&decisions, setting.max_groups);
        policies.push(router_figures(
            summarize("tool_router".to_owned(), &seen),
            &decisions,
            &seen,
            &report,
            all,
        ));
        for (name, chosen) in [WITHOUT_ID_FINDERS, WITH_ID_FINDERS]
            .iter()
            .zip(&by_finders)
        {
            if let Some((setting, model)) =
                fused(chosen).and_then(|s| Some((s, fitted_for(&fitted, s.fusion)?)))
            {
                let (seen, _) = prepared.route(setting, model, &report);
                policies.push(summarize((*name).to_owned(), &seen));
            }
        }
        // The same router as `toolgate chat --route` runs it, learning its
        // confidence and recovery groups from the reported queries in order.
        let (seen, learning) = prepared.route_learned(setting, model, &report);
        tool_router_calibration_online = bands(&learning, &report);
        policies.push(summarize(LEARNED_ROUTER.to_owned(), &seen));
    }
    for (setting, _) in &chosen_per_fusion {
        let Some(model) = fitted_for(&fitted, setting.fusion) else {
            continue;
        };
        let (seen, decisions) = prepared.route(*setting, model, &report);
        policies.push(router_figures(
            summarize(setting.name(), &seen),
            &decisions,
            &seen,
            &report,
            all,
        ));
    }

    // The gateway's search, one call per query, as the shipped defaults
    // score (fitted on the public datasets, this one among them), listing
    // as many groups as chosen above.
    let find = |taxonomy: &Taxonomy, groups: usize| {
        crate::find::find_listing(prepared, taxonomy, groups, counter, &report)
    };
    let found = find(&prepared.taxonomy, search_groups);
    policies.push(summarize("find_tool_groups".to_owned(), &found));
    // The same without the tools that find a listed tool's required id.
    let mut without = prepared.taxonomy.clone();
    without.id_finders = Some(false);
    let found = find(&without, search_groups);
    policies.push(summarize(FIND_WITHOUT_ID_FINDERS.to_owned(), &found));
    // The fewest groups offered, for comparison.
    let fewest = crate::find::SEARCH_GROUPS[0];
    if search_groups != fewest {
        let found = find(&prepared.taxonomy, fewest);
        policies.push(summarize(
            format!("find_tool_groups({fewest} groups)"),
            &found,
        ));
    }

    let task_costs = costs_per_task(
        prepared,
        counter,
        &report,
        &router_seen,
        chosen,
        search_groups,
    );

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
        search_curves,
        tool_router_calibration,
        tool_router_calibration_online,
        tool_router_calibration_fitted,
        tool_router_self_test,
        tool_router_setting,
        tool_router_at_cap,
        search_groups,
        group_curves,
        task_costs,
        fitted: fitted_settings,
    })
}

/// Tools per group the tool router's cost is measured at (0: whole groups).
const COSTED_TOOLS_PER_GROUP: [usize; 4] = [1, 2, 3, 0];

/// [`task_costs`] of every policy: the tiered router's showings
/// (`tiered`), the headline tool router's setting (`chosen`) at each of
/// [`COSTED_TOOLS_PER_GROUP`], the gateway's search listing at most
/// `search_groups` groups, and tool search by the headline's fusion.
fn costs_per_task(
    prepared: &Prepared<'_>,
    counter: &TokenCounter,
    report: &[&Query],
    tiered: &[Seen],
    chosen: Option<(RouterSetting, &Fitted)>,
    search_groups: usize,
) -> Vec<TaskCost> {
    let mut shown: Vec<(String, Vec<Seen>)> = Vec::new();
    if let Some((setting, model)) = chosen {
        for tools_per_group in COSTED_TOOLS_PER_GROUP {
            let setting = RouterSetting {
                tools_per_group,
                ..setting
            };
            let (seen, _) = prepared.route(setting, model, report);
            let label = match tools_per_group {
                0 => "whole groups".to_owned(),
                1 => "1 tool".to_owned(),
                n => format!("{n} tools"),
            };
            shown.push((format!("tool_router({label})"), seen));
        }
    }
    let mut routed: Routed<'_> = vec![("tiered_router".to_owned(), tiered)];
    routed.extend(
        shown
            .iter()
            .map(|(name, seen)| (name.clone(), seen.as_slice())),
    );
    let found =
        crate::find::find_ranked(prepared, &prepared.taxonomy, search_groups, counter, report);
    let fusion = chosen.map_or(Fusion::Lexical, |(setting, _)| setting.fusion);
    task_costs(prepared, counter, report, &routed, &found, fusion)
}

#[cfg(test)]
#[path = "evaluate_tests.rs"]
mod tests;
