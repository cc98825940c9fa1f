//! Fitting the router's confidence model on labelled turns: the per-group
//! model ([`fit_per_group`], logistic regression by Newton's method), the
//! softmax temperature ([`fit_temperature`]) and the samples its isotonic
//! calibration is fitted on ([`calibration_samples`]). `toolgate eval` fits
//! them; a running router only reads what was fitted.

use crate::name::GroupId;
use crate::routing::calibration::{DEFAULT_PER_GROUP, PerGroup, ranks, sigmoid};
use crate::routing::cover::{DEFAULT_TEMPERATURE, covers, probabilities, route_by_mass};
use crate::routing::router::Router;

/// Samples for fitting the calibration of `model`
/// ([`Isotonic::fit`](crate::routing::Isotonic::fit)): for every labelled turn
/// and every prefix of its groups by probability (up to `max_groups`), the
/// prefix's raw cover and whether it holds every gold group. Each set of turns
/// weighs the same.
pub fn calibration_samples(
    model: PerGroup,
    sets: &[&[Labelled]],
    max_groups: usize,
) -> Vec<(f64, f64, f64)> {
    let mut samples = Vec::new();
    for examples in sets {
        let mut set = Vec::new();
        for example in *examples {
            if example.gold.is_empty() || example.scores.iter().all(|s| *s <= 0.0) {
                continue;
            }
            let mut ranked: Vec<(usize, f64)> = model
                .probabilities(&example.scores)
                .into_iter()
                .enumerate()
                .collect();
            ranked.sort_by(|a, b| b.1.total_cmp(&a.1));
            let probabilities: Vec<f64> = ranked.iter().map(|(_, p)| *p).collect();
            for (length, cover) in covers(&probabilities, max_groups).into_iter().enumerate() {
                let held = example
                    .gold
                    .iter()
                    .all(|g| ranked[..=length].iter().any(|(i, _)| i == g));
                set.push((cover, if held { 1.0 } else { 0.0 }));
            }
        }
        let weight = 1.0 / set.len().max(1) as f64;
        samples.extend(set.into_iter().map(|(x, y)| (x, y, weight)));
    }
    samples
}

/// The per-group model fitted on `examples` (logistic regression of "this
/// group is gold" on its relative score and its rank, by Newton's method on
/// the log loss).
pub fn fit_per_group(examples: &[Labelled]) -> PerGroup {
    fit_per_group_pooled(&[examples])
}

/// The per-group model fitted on several sets of examples (one per
/// catalog) that weigh the same however many groups and turns each has: a
/// catalog of 150 groups would otherwise outweigh one of 8 by far.
pub fn fit_per_group_pooled(sets: &[&[Labelled]]) -> PerGroup {
    let mut samples: Vec<Sample> = Vec::new();
    for examples in sets {
        let count: usize = examples.iter().map(|e| e.scores.len()).sum();
        let weight = 1.0 / count.max(1) as f64;
        samples.extend(group_samples(examples, weight));
    }
    fit_logistic(&samples)
}

/// One group of one labelled turn, as the per-group model sees it.
struct Sample {
    relative: f64,
    log_rank: f64,
    gold: f64,
    weight: f64,
}

/// A sample for every group with evidence (a score above 0) of every
/// example: its score over the best one, the log of its place, and whether
/// it is gold.
fn group_samples(examples: &[Labelled], weight: f64) -> Vec<Sample> {
    let mut samples = Vec::new();
    for example in examples {
        let top = example.scores.iter().copied().fold(0.0_f64, f64::max);
        let ranks = ranks(&example.scores);
        for (index, (score, rank)) in example.scores.iter().zip(ranks).enumerate() {
            // The model leaves groups without evidence at 0; they teach it nothing.
            if *score <= 0.0 {
                continue;
            }
            samples.push(Sample {
                relative: score / top,
                log_rank: (rank as f64).ln(),
                gold: if example.gold.contains(&index) {
                    1.0
                } else {
                    0.0
                },
                weight,
            });
        }
    }
    samples
}

/// Weighted logistic regression of gold on the relative score and the log
/// rank, by Newton's method (a small ridge keeps it defined when every
/// catalog is small and ranks barely vary). A positive rank slope would
/// let a lower-scored group outrank a better one, so it is held at 0.
fn fit_logistic(samples: &[Sample]) -> PerGroup {
    let total: f64 = samples.iter().map(|s| s.weight).sum();
    if samples.is_empty() || total <= 0.0 {
        return DEFAULT_PER_GROUP;
    }
    let mut beta = newton(samples, total, true);
    if beta[1] > 0.0 {
        beta = newton(samples, total, false);
    }
    if beta.iter().any(|b| !b.is_finite()) {
        return DEFAULT_PER_GROUP;
    }
    PerGroup {
        weight: beta[0],
        rank: beta[1],
        bias: beta[2],
    }
}

/// `[weight, rank, bias]` of the weighted logistic regression on `samples`
/// (`total` their weight), the rank held at 0 unless `with_rank`.
fn newton(samples: &[Sample], total: f64, with_rank: bool) -> [f64; 3] {
    const STEPS: usize = 50;
    const RIDGE: f64 = 1e-4;
    let mut beta = [0.0_f64; 3];
    for _ in 0..STEPS {
        let mut gradient = [0.0_f64; 3];
        let mut hessian = [[0.0_f64; 3]; 3];
        for sample in samples {
            let log_rank = if with_rank { sample.log_rank } else { 0.0 };
            let x = [sample.relative, log_rank, 1.0];
            let p = sigmoid((0..3).map(|i| beta[i] * x[i]).sum());
            let w = sample.weight / total;
            for i in 0..3 {
                gradient[i] += w * (p - sample.gold) * x[i];
                for j in 0..3 {
                    hessian[i][j] += w * p * (1.0 - p) * x[i] * x[j];
                }
            }
        }
        for (i, row) in hessian.iter_mut().enumerate() {
            row[i] += RIDGE;
            gradient[i] += RIDGE * beta[i];
        }
        let Some(step) = solve3(hessian, gradient) else {
            break;
        };
        for i in 0..3 {
            beta[i] -= step[i];
        }
        if step.iter().all(|s| s.abs() < 1e-9) {
            break;
        }
    }
    beta
}

/// `x` with `a x = b`, by Gaussian elimination with partial pivoting;
/// `None` when `a` is singular.
fn solve3(mut a: [[f64; 3]; 3], mut b: [f64; 3]) -> Option<[f64; 3]> {
    for column in 0..3 {
        let pivot =
            (column..3).max_by(|i, j| a[*i][column].abs().total_cmp(&a[*j][column].abs()))?;
        if a[pivot][column].abs() < 1e-15 {
            return None;
        }
        a.swap(column, pivot);
        b.swap(column, pivot);
        let pivot_row = a[column];
        for row in column + 1..3 {
            let factor = a[row][column] / pivot_row[column];
            for (value, above) in a[row].iter_mut().zip(pivot_row).skip(column) {
                *value -= factor * above;
            }
            b[row] -= factor * b[column];
        }
    }
    let mut x = [0.0; 3];
    for row in (0..3).rev() {
        let rest: f64 = (row + 1..3).map(|k| a[row][k] * x[k]).sum();
        x[row] = (b[row] - rest) / a[row][row];
    }
    Some(x)
}

/// One labelled turn for fitting and checking calibration: its raw scores
/// and the indexes (in router group order) of the groups it needs.
#[derive(Clone, Debug)]
pub struct Labelled {
    /// Raw scores.
    pub scores: Vec<f64>,
    /// Indexes of the gold groups.
    pub gold: Vec<usize>,
}

/// The temperature (from a grid) whose confidence best predicts, on
/// `examples`, whether the routed groups hold every gold group (lowest Brier
/// score).
pub fn fit_temperature(router: &Router, examples: &[Labelled]) -> f64 {
    let grid = [
        0.02, 0.03, 0.04, 0.05, 0.06, 0.08, 0.1, 0.12, 0.15, 0.2, 0.25, 0.3, 0.4, 0.5, 0.7, 1.0,
    ];
    let groups = router.groups();
    grid.into_iter()
        .map(|temperature| {
            let mut brier = 0.0;
            for example in examples {
                let probabilities = probabilities(&example.scores, temperature);
                let mut ranked: Vec<(usize, f64)> = probabilities.into_iter().enumerate().collect();
                ranked.sort_by(|a, b| b.1.total_cmp(&a.1));
                let named: Vec<(GroupId, f64)> = ranked
                    .iter()
                    .map(|(i, p)| (groups[*i].clone(), *p))
                    .collect();
                let (routed, confidence) = route_by_mass(&named, router.taxonomy().max_groups);
                let covered = example.gold.iter().all(|g| routed.contains(&groups[*g]));
                let truth = if covered { 1.0 } else { 0.0 };
                brier += (confidence - truth).powi(2);
            }
            (temperature, brier)
        })
        .min_by(|a, b| a.1.total_cmp(&b.1))
        .map_or(DEFAULT_TEMPERATURE, |(temperature, _)| temperature)
}

#[cfg(test)]
#[path = "fit_tests.rs"]
mod tests;
