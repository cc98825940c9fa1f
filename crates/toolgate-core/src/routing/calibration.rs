//! [`PerGroup`]: the logistic model that turns a group's score, relative
//! to the best group's, into its chance of being needed. It is its own
//! module because both the configuration ([`crate::routing::RoutingConfig`]
//! carries fitted parameters) and the [`crate::routing::Router`] use it.

/// A logistic model of "this group is needed" on `score / best score`.
#[derive(Clone, Copy, Debug, PartialEq, serde::Deserialize, serde::Serialize)]
#[serde(deny_unknown_fields)]
pub struct PerGroup {
    /// Slope on the relative score.
    pub weight: f64,
    /// Intercept.
    pub bias: f64,
}

/// The mean of the fits on the tuning parts of toolbench_stable (10.94,
/// -10.19), seal_tools (10.34, -8.42) and bfcl_multi_turn (7.87, -6.39),
/// rounded; `toolgate eval` fits a catalog's own.
pub const DEFAULT_PER_GROUP: PerGroup = PerGroup {
    weight: 9.7,
    bias: -8.3,
};

impl PerGroup {
    /// The chance that a group with `relative` score (its score over the
    /// best one, 0 to 1) is needed.
    pub fn probability(&self, relative: f64) -> f64 {
        1.0 / (1.0 + (-(self.weight * relative + self.bias)).exp())
    }

    /// Every group's chance, in score order.
    pub fn probabilities(&self, scores: &[f64]) -> Vec<f64> {
        let top = scores.iter().copied().fold(0.0_f64, f64::max);
        scores
            .iter()
            .map(|s| self.probability(if top > 0.0 { s / top } else { 0.0 }))
            .collect()
    }
}
