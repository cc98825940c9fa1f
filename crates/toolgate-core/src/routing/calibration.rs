//! [`PerGroup`]: the logistic model that turns a group's score, relative
//! to the best group's, into its chance of being needed. It is its own
//! module because both the configuration ([`crate::routing::RoutingConfig`]
//! carries fitted parameters) and the [`crate::routing::Router`] use it.

/// A logistic model of "this group is needed" on `score / best score` and
/// on the group's rank among the catalog's groups (the natural log of its
/// place, 0 for the best). The rank term is what lets one model serve a
/// catalog of 8 groups and one of 150: in a large catalog many groups score
/// half the best one and few of them are needed.
#[derive(Clone, Copy, Debug, PartialEq, serde::Deserialize, serde::Serialize)]
#[serde(deny_unknown_fields)]
pub struct PerGroup {
    /// Slope on the relative score.
    pub weight: f64,
    /// Intercept.
    pub bias: f64,
    /// Slope on `ln(rank)`, at most 0 so that chances fall with the score;
    /// 0 when the configuration leaves it out.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub rank: f64,
}

fn is_zero(value: &f64) -> bool {
    *value == 0.0
}

/// The mean of the fits on the tuning parts of toolbench_stable (10.94,
/// -10.19), seal_tools (10.34, -8.42) and bfcl_multi_turn (7.87, -6.39),
/// rounded; `toolgate eval` fits a catalog's own.
pub const DEFAULT_PER_GROUP: PerGroup = PerGroup {
    weight: 9.7,
    bias: -8.3,
    rank: 0.0,
};

impl PerGroup {
    /// The chance that a group with `relative` score (its score over the
    /// best one, 0 to 1) in place `rank` (1 for the best group) is needed.
    pub fn probability(&self, relative: f64, rank: usize) -> f64 {
        let logit = self.weight * relative + self.rank * (rank.max(1) as f64).ln() + self.bias;
        sigmoid(logit)
    }

    /// Every group's chance, in score order. A group without any evidence
    /// (a score of 0: no word or meaning in common with the request) gets
    /// 0, however few groups the catalog has.
    pub fn probabilities(&self, scores: &[f64]) -> Vec<f64> {
        let top = scores.iter().copied().fold(0.0_f64, f64::max);
        let ranks = ranks(scores);
        scores
            .iter()
            .zip(ranks)
            .map(|(score, rank)| {
                if *score > 0.0 {
                    self.probability(score / top, rank)
                } else {
                    0.0
                }
            })
            .collect()
    }
}

/// The logistic function: a logit's probability.
pub(crate) fn sigmoid(logit: f64) -> f64 {
    1.0 / (1.0 + (-logit).exp())
}

/// Each score's place when sorted best first (1 for the best; equal scores
/// share the better place), in `scores` order.
pub(crate) fn ranks(scores: &[f64]) -> Vec<usize> {
    let mut order: Vec<usize> = (0..scores.len()).collect();
    order.sort_by(|a, b| scores[*b].total_cmp(&scores[*a]));
    let mut ranks = vec![1; scores.len()];
    for (place, index) in order.iter().enumerate() {
        ranks[*index] = match place.checked_sub(1).map(|before| order[before]) {
            Some(before) if scores[before] == scores[*index] => ranks[before],
            _ => place + 1,
        };
    }
    ranks
}

/// A monotone map from a raw confidence to the observed rate, fitted by
/// isotonic regression (pool adjacent violators) on labelled outcomes:
/// what turns the router's cover estimate into a probability that holds on
/// data it was not fitted on.
#[derive(Clone, Debug, PartialEq, serde::Deserialize, serde::Serialize)]
#[serde(deny_unknown_fields)]
pub struct Isotonic {
    /// `(raw, calibrated)` knots, raw ascending, calibrated non-decreasing;
    /// between knots the map is linear, beyond them flat.
    pub knots: Vec<(f64, f64)>,
}

impl Isotonic {
    /// Fits `(raw, outcome, weight)` samples (outcome 1 for a success, 0
    /// for a failure). Each pooled block becomes one knot at its weighted
    /// mean raw value. No samples: the identity.
    pub fn fit(samples: &[(f64, f64, f64)]) -> Self {
        let mut sorted: Vec<(f64, f64, f64)> = samples
            .iter()
            .copied()
            .filter(|(x, y, w)| x.is_finite() && y.is_finite() && *w > 0.0)
            .collect();
        if sorted.is_empty() {
            return Self {
                knots: vec![(0.0, 0.0), (1.0, 1.0)],
            };
        }
        sorted.sort_by(|a, b| a.0.total_cmp(&b.0));
        // Equal raw values pooled first, so no two knots share one.
        let mut ties: Vec<(f64, f64, f64)> = Vec::new();
        for (x, y, w) in sorted {
            match ties.last_mut() {
                Some(last) if last.0 == x => {
                    last.1 += w * y;
                    last.2 += w;
                }
                _ => ties.push((x, w * y, w)),
            }
        }
        // Blocks of (sum of w*x, sum of w*y, sum of w).
        let mut blocks: Vec<(f64, f64, f64)> = Vec::new();
        for (x, wy, w) in ties {
            blocks.push((w * x, wy, w));
            // Pool the last two blocks while they are out of order.
            while let [.., before, last] = blocks.as_mut_slice() {
                if before.1 / before.2 <= last.1 / last.2 {
                    break;
                }
                before.0 += last.0;
                before.1 += last.1;
                before.2 += last.2;
                blocks.pop();
            }
        }
        Self {
            knots: blocks
                .into_iter()
                .map(|(wx, wy, w)| (wx / w, wy / w))
                .collect(),
        }
    }

    /// Checks that the knots are a monotone map into 0..1: at least one,
    /// finite, raw strictly ascending, calibrated non-decreasing. The
    /// error says which knot is wrong.
    pub fn check(&self) -> Result<(), String> {
        if self.knots.is_empty() {
            return Err("knots must not be empty".to_owned());
        }
        for (index, (raw, calibrated)) in self.knots.iter().enumerate() {
            if !raw.is_finite() || !(0.0..=1.0).contains(calibrated) {
                return Err(format!(
                    "knot {} ({raw}, {calibrated}): values must be finite and the calibrated one between 0 and 1",
                    index + 1
                ));
            }
            if index > 0 {
                let (previous_raw, previous_calibrated) = self.knots[index - 1];
                if *raw <= previous_raw || *calibrated < previous_calibrated {
                    return Err(format!(
                        "knot {} ({raw}, {calibrated}) must come after ({previous_raw}, {previous_calibrated}) in both values",
                        index + 1
                    ));
                }
            }
        }
        Ok(())
    }

    /// At most `count` (2 or more) of the knots, evenly spread, the first
    /// and the last kept: a map as short as a configuration file wants it,
    /// still monotone.
    pub fn thinned(&self, count: usize) -> Self {
        let count = count.max(2);
        if self.knots.len() <= count {
            return self.clone();
        }
        let last = self.knots.len() - 1;
        let mut knots: Vec<(f64, f64)> = (0..count)
            .map(|i| self.knots[i * last / (count - 1)])
            .collect();
        knots.dedup();
        Self { knots }
    }

    /// The calibrated value of `raw`.
    pub fn apply(&self, raw: f64) -> f64 {
        let Some(first) = self.knots.first() else {
            return raw;
        };
        if raw <= first.0 {
            return first.1;
        }
        for pair in self.knots.windows(2) {
            let ((x0, y0), (x1, y1)) = (pair[0], pair[1]);
            if raw <= x1 {
                let span = x1 - x0;
                return if span > 0.0 {
                    y0 + (raw - x0) / span * (y1 - y0)
                } else {
                    y1
                };
            }
        }
        self.knots.last().map_or(raw, |k| k.1)
    }
}

#[cfg(test)]
#[path = "calibration_tests.rs"]
mod tests;
