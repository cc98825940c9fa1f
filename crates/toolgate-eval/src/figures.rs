//! The maths that turns what each query saw into an [`crate::report`]'s
//! figures.
//!
//! Every figure is a mean over the reported queries, each query weighing the
//! same whatever its number of gold groups or tools, so a dataset of long
//! multi-group turns is not dominated by its few largest queries.

use toolgate_core::routing::{Decision, Tier};

use crate::costs::Seen;
use crate::dataset::Query;
use crate::report::{Band, CurvePoint, PolicyReport, TierFigures, TierMix};

/// A policy's figures from what each of `queries` saw under it (`seen`, in
/// the same order); `all_tokens` is the all-tools cost.
pub(crate) fn summary(
    policy: String,
    queries: &[&Query],
    seen: &[Seen],
    all_tokens: f64,
) -> PolicyReport {
    let mut micros: Vec<f64> = seen.iter().map(|s| s.micros).collect();
    micros.sort_by(f64::total_cmp);
    let percentile = |p: f64| {
        micros
            .get(((micros.len() as f64 - 1.0) * p).round() as usize)
            .copied()
            .unwrap_or(0.0)
    };
    let mean_tokens = mean(seen.iter().map(|s| s.tokens as f64));
    PolicyReport {
        policy,
        group_recall: mean(
            queries
                .iter()
                .zip(seen)
                .map(|(q, s)| recall(&q.gold_groups, |g| s.shows_group(g))),
        ),
        tool_recall: mean(
            queries
                .iter()
                .zip(seen)
                .filter(|(q, _)| !q.gold_tools.is_empty())
                .map(|(q, s)| recall(&q.gold_tools, |t| s.shows_tool(t))),
        ),
        mean_visible_tokens: mean_tokens,
        token_fraction: mean_tokens / all_tokens.max(1.0),
        p50_decision_us: percentile(0.5),
        p95_decision_us: percentile(0.95),
        tiers: None,
        escalation_rate: None,
        high_tier: None,
    }
}

/// A router's policy figures with its tier mix, escalation rate and
/// high-tier figures.
pub(crate) fn router_figures(
    mut figures: PolicyReport,
    decisions: &[Decision],
    seen: &[Seen],
    queries: &[&Query],
    all_tokens: f64,
) -> PolicyReport {
    let share = |tier| {
        decisions.iter().filter(|d| d.tier == tier).count() as f64 / decisions.len().max(1) as f64
    };
    figures.tiers = Some(TierMix {
        high: share(Tier::High),
        medium: share(Tier::Medium),
        low: share(Tier::Low),
    });
    let covered = |i: usize| {
        queries[i]
            .gold_groups
            .iter()
            .all(|g| seen[i].shows_group(g))
    };
    let restricted: Vec<usize> = (0..decisions.len())
        .filter(|i| decisions[*i].tier != Tier::Low)
        .collect();
    figures.escalation_rate = Some(
        restricted.iter().filter(|i| !covered(**i)).count() as f64 / restricted.len().max(1) as f64,
    );
    let high = high_tier(decisions);
    figures.high_tier = Some(TierFigures {
        queries: high.len(),
        group_recall: mean(
            high.iter()
                .map(|i| recall(&queries[*i].gold_groups, |g| seen[*i].shows_group(g))),
        ),
        token_fraction: mean(high.iter().map(|i| seen[*i].tokens as f64 / all_tokens)),
    });
    figures
}

/// Positions of the high-tier decisions.
pub(crate) fn high_tier(decisions: &[Decision]) -> Vec<usize> {
    (0..decisions.len())
        .filter(|i| decisions[*i].tier == Tier::High)
        .collect()
}

/// Whether the groups `decision` relies on (routed and learned) hold every
/// gold group of `query`: what its confidence states the chance of.
pub(crate) fn held(decision: &Decision, query: &Query) -> bool {
    query.gold_groups.iter().all(|g| decision.relies_on(g))
}

/// Share of `decisions` that routed `cap` groups or more: the cap, not
/// the share of the best score, ended them.
pub(crate) fn share_at_cap(decisions: &[Decision], cap: usize) -> f64 {
    let at_cap = decisions.iter().filter(|d| d.routed.len() >= cap).count();
    at_cap as f64 / decisions.len().max(1) as f64
}

/// The router's calibration: its decisions grouped by confidence band.
pub(crate) fn bands(decisions: &[Decision], queries: &[&Query]) -> Vec<Band> {
    let edges = [0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0];
    edges
        .windows(2)
        .map(|edge| {
            let (from, to) = (edge[0], edge[1]);
            let inside: Vec<usize> = (0..decisions.len())
                .filter(|i| {
                    let c = decisions[*i].confidence;
                    c >= from && (c < to || (to >= 1.0 && c <= 1.0))
                })
                .collect();
            Band {
                from,
                to,
                queries: inside.len(),
                mean_confidence: mean(inside.iter().map(|i| decisions[*i].confidence)),
                observed: mean(inside.iter().map(|i| {
                    if held(&decisions[*i], queries[*i]) {
                        1.0
                    } else {
                        0.0
                    }
                })),
            }
        })
        .collect()
}

/// A top-k policy's figures as one point of its curve.
pub(crate) fn curve_point(k: usize, report: &PolicyReport) -> CurvePoint {
    CurvePoint {
        k,
        group_recall: report.group_recall,
        tool_recall: report.tool_recall,
        token_fraction: report.token_fraction,
    }
}

/// Share of `gold` that is `visible`; 1 when nothing is needed.
pub(crate) fn recall<T>(gold: &[T], visible: impl Fn(&T) -> bool) -> f64 {
    if gold.is_empty() {
        return 1.0;
    }
    gold.iter().filter(|g| visible(g)).count() as f64 / gold.len() as f64
}

/// The mean of `values`; 0 for none.
pub(crate) fn mean(values: impl Iterator<Item = f64>) -> f64 {
    let (sum, count) = values.fold((0.0, 0usize), |(s, c), v| (s + v, c + 1));
    if count == 0 { 0.0 } else { sum / count as f64 }
}

#[cfg(test)]
#[path = "figures_tests.rs"]
mod tests;
