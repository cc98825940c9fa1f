//! The tiered router as an evaluated policy: tuned on the tuning part of the
//! queries, then run on a list of queries to record what each one saw.
//!
//! How the router scores a query is a parameter ([`ScoresOf`]), so the
//! lexical router and the one blended with embeddings are tuned and run by
//! the same code and differ only in their scores.

use std::time::Instant;

use toolgate_core::routing::{
    Confidence, ConfidenceKind, Decision, Labelled, Router, RoutingConfig, Taxonomy, Tier, Visible,
    fit_per_group, fit_temperature,
};
use toolgate_core::{Catalog, GroupId};

use crate::costs::{Costs, Seen};
use crate::dataset::Query;
use crate::figures::summary;

/// Group caps tried when tuning.
const MAX_GROUPS_TUNED: usize = 5;

/// How a policy scores a query's groups.
pub(crate) type ScoresOf<'a> = dyn Fn(&Router, &Query) -> Vec<f64> + 'a;

/// Tunes what the configuration leaves open, on the tuning part only: the
/// temperature (calibration), and the group cap by recall minus token share.
pub(crate) fn tune_router(
    catalog: &Catalog,
    taxonomy: &Taxonomy,
    config: &RoutingConfig,
    costs: &Costs,
    tuned: &[&Query],
    scores_of: &ScoresOf<'_>,
) -> Router {
    if taxonomy.confidence == ConfidenceKind::PerGroup {
        // The cap is a ceiling here (the thresholds decide how many groups a
        // turn gets); only the model is fitted.
        let router = Router::lexical(catalog, taxonomy.clone());
        let model = match config.per_group {
            Some(model) => model,
            None => fit_per_group(&labelled(&router, tuned, scores_of)),
        };
        return router.with_confidence(Confidence::PerGroup(model));
    }
    let caps: Vec<usize> = match config.max_groups {
        Some(cap) => vec![cap],
        None => (1..=MAX_GROUPS_TUNED).collect(),
    };
    let mut best: Option<(f64, Router)> = None;
    for cap in caps {
        let mut taxonomy = taxonomy.clone();
        taxonomy.max_groups = cap;
        let router = Router::lexical(catalog, taxonomy);
        let temperature = match config.temperature {
            Some(temperature) => temperature,
            None => fit_temperature(&router, &labelled(&router, tuned, scores_of)),
        };
        let router = router.with_temperature(temperature);
        let (seen, _) = run_router(&router, catalog, costs, tuned, scores_of, &mut |_, _| {});
        let figures = summary(String::new(), tuned, &seen, costs.all_tools as f64);
        let objective = figures.group_recall - figures.token_fraction;
        if best.as_ref().is_none_or(|(b, _)| objective > *b) {
            best = Some((objective, router));
        }
    }
    match best {
        Some((_, router)) => router,
        None => Router::lexical(catalog, taxonomy.clone()),
    }
}

/// Scores and gold groups of labelled queries, for fitting.
pub(crate) fn labelled(
    router: &Router,
    queries: &[&Query],
    scores_of: &ScoresOf<'_>,
) -> Vec<Labelled> {
    queries
        .iter()
        .map(|q| Labelled {
            scores: scores_of(router, q),
            gold: q
                .gold_groups
                .iter()
                .filter_map(|g| router.groups().iter().position(|r| r == g))
                .collect(),
        })
        .collect()
}

/// What the router shows for each query, and its decisions.
pub(crate) fn run_router(
    router: &Router,
    catalog: &Catalog,
    costs: &Costs,
    queries: &[&Query],
    scores_of: &ScoresOf<'_>,
    progress: &mut dyn FnMut(usize, usize),
) -> (Vec<Seen>, Vec<Decision>) {
    let mut seen_all = Vec::new();
    let mut decisions = Vec::new();
    for (index, query) in queries.iter().enumerate() {
        let started = Instant::now();
        let decision = router.decide(&scores_of(router, query));
        let micros = started.elapsed().as_secs_f64() * 1e6;
        let groups: Vec<GroupId> = match &decision.visible {
            Visible::Groups(groups) => groups.clone(),
            Visible::Catalog => catalog.groups().map(|g| g.id.clone()).collect(),
        };
        let mut seen = costs.groups_seen(catalog, &groups, decision.tier == Tier::Low);
        seen.micros = micros;
        seen_all.push(seen);
        decisions.push(decision);
        progress(index + 1, queries.len());
    }
    (seen_all, decisions)
}

/// A confidence model as the report names it.
pub(crate) fn describe(confidence: Confidence) -> String {
    match confidence {
        Confidence::PerGroup(model) => format!(
            "per-group (weight {:.2}, rank {:.2}, bias {:.2})",
            model.weight, model.rank, model.bias
        ),
        Confidence::Softmax { temperature } => format!("softmax (temperature {temperature})"),
    }
}
