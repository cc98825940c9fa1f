//! [`OnlineCalibration`]: what a deployment learns of its own catalog from
//! the turns it routes. The calibration fitted offline maps the router's
//! cover to a chance on the catalogs it was fitted on; on a catalog it never
//! saw, that chance can be off by 10 points or more (a catalog whose turns
//! need three groups of one API is stated 0.97 and holds 0.82). Each routed
//! turn's outcome (did the routed groups hold every tool the model used?)
//! is a label the deployment sees anyway; a logistic recalibration of the
//! fitted confidence, drawn towards where the router started (its
//! [`SelfTest`](crate::routing::SelfTest)'s restatement, else "no change")
//! by a prior worth `strength` turns, learns the catalog's own offset from
//! them.
//!
//! A confidence is always stated before its own outcome is recorded, so
//! what [`OnlineCalibration::apply`] says of a turn never saw that turn.

use std::collections::VecDeque;

use crate::name::GroupId;
use crate::routing::calibration::sigmoid;

/// How many turns the prior ("the confidence the router started from is
/// right") weighs, as an L2 pull of the slope and the intercept towards its
/// (1 and 0 without a self-test). Chosen, before the self-test, by nested
/// leave-one-catalog-out validation over 1, 3, 10 and 30: 10 won on four
/// of the five folds, 3 on the fifth (BENCHMARKS.md).
pub const DEFAULT_STRENGTH: f64 = 10.0;

/// Outcomes kept, newest last; older ones are dropped so that a catalog
/// that changes is followed, and a refit stays cheap.
pub const KEPT_OUTCOMES: usize = 2_000;

/// Confidences are clamped this far inside 0 and 1 before their logit.
const EDGE: f64 = 1e-4;

/// The recalibration `sigmoid(slope * logit(c) + intercept)` of a fitted
/// confidence `c`; slope 1 and intercept 0 leave it as it is.
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize)]
pub struct Recalibration {
    /// Slope on the fitted confidence's logit.
    pub slope: f64,
    /// Intercept.
    pub intercept: f64,
}

impl Recalibration {
    /// The map that changes nothing.
    pub const IDENTITY: Self = Self {
        slope: 1.0,
        intercept: 0.0,
    };

    /// The recalibrated value of a fitted confidence.
    pub fn apply(&self, confidence: f64) -> f64 {
        if *self == Self::IDENTITY {
            return confidence;
        }
        sigmoid(self.slope * logit(confidence) + self.intercept)
    }
}

/// Outcomes of routed turns and the recalibration fitted to them.
#[derive(Clone, Debug)]
pub struct OnlineCalibration {
    strength: f64,
    /// What the prior holds the recalibration to before any outcome.
    prior: Recalibration,
    /// Outcomes kept ([`KEPT_OUTCOMES`]).
    kept: usize,
    /// `(fitted confidence, held)`, oldest first.
    outcomes: VecDeque<(f64, bool)>,
    fitted: Recalibration,
}

impl Default for OnlineCalibration {
    fn default() -> Self {
        Self::new(DEFAULT_STRENGTH)
    }
}

impl OnlineCalibration {
    /// No outcomes yet, a prior worth `strength` turns (at least a
    /// thousandth of one).
    pub fn new(strength: f64) -> Self {
        Self {
            strength: if strength.is_finite() {
                strength.max(1e-3)
            } else {
                DEFAULT_STRENGTH
            },
            prior: Recalibration::IDENTITY,
            kept: KEPT_OUTCOMES,
            outcomes: VecDeque::new(),
            fitted: Recalibration::IDENTITY,
        }
    }

    /// The prior holds the recalibration to `prior` instead of "no change"
    /// (what the router's self-test found of its catalog,
    /// [`crate::routing::SelfTest`]); refits on the outcomes recorded.
    pub fn with_prior(mut self, prior: Recalibration) -> Self {
        self.set_prior(prior);
        self
    }

    /// [`Self::with_prior`] in place.
    pub fn set_prior(&mut self, prior: Recalibration) {
        self.prior = prior;
        self.fitted = prior;
        if !self.outcomes.is_empty() {
            self.fitted = self.fit();
        }
    }

    /// With `outcomes` (fitted confidence, held; oldest first) recorded,
    /// fitted once: what an earlier run learned ([`catalog_key`] names
    /// whose).
    pub fn with_outcomes(mut self, outcomes: impl IntoIterator<Item = (f64, bool)>) -> Self {
        for (confidence, held) in outcomes {
            self.keep(confidence, held);
        }
        self.fitted = self.fit();
        self
    }

    /// The recalibrated value of a fitted confidence.
    pub fn apply(&self, confidence: f64) -> f64 {
        self.fitted.apply(confidence)
    }

    /// The recalibration in use.
    pub fn recalibration(&self) -> Recalibration {
        self.fitted
    }

    /// Outcomes recorded (at most [`KEPT_OUTCOMES`]).
    pub fn outcomes(&self) -> usize {
        self.outcomes.len()
    }

    /// Records a routed turn: the confidence fitted offline (before this
    /// recalibration: [`crate::routing::Decision::fitted_confidence`]) and
    /// whether the routed groups held what the turn needed; refits.
    pub fn record(&mut self, fitted_confidence: f64, held: bool) {
        if self.keep(fitted_confidence, held) {
            self.fitted = self.fit();
        }
    }

    /// Keeps an outcome (the oldest goes when [`KEPT_OUTCOMES`] are kept);
    /// a confidence that is not a number is not kept. Whether it was.
    fn keep(&mut self, fitted_confidence: f64, held: bool) -> bool {
        if !fitted_confidence.is_finite() {
            return false;
        }
        if self.outcomes.len() >= self.kept {
            self.outcomes.pop_front();
        }
        self.outcomes.push_back((fitted_confidence, held));
        true
    }

    /// The maximum a posteriori slope and intercept (Newton's method on the
    /// log loss plus the prior's pull), or the last fit if a step fails.
    fn fit(&self) -> Recalibration {
        const STEPS: usize = 30;
        let prior = [self.prior.slope, self.prior.intercept];
        let mut beta = [self.fitted.slope, self.fitted.intercept];
        for _ in 0..STEPS {
            let mut gradient = [0.0; 2];
            let mut hessian = [[0.0; 2]; 2];
            for (confidence, held) in &self.outcomes {
                let x = [logit(*confidence), 1.0];
                let p = sigmoid(beta[0] * x[0] + beta[1]);
                let y = if *held { 1.0 } else { 0.0 };
                for i in 0..2 {
                    gradient[i] += (p - y) * x[i];
                    for j in 0..2 {
                        hessian[i][j] += p * (1.0 - p) * x[i] * x[j];
                    }
                }
            }
            for i in 0..2 {
                gradient[i] += self.strength * (beta[i] - prior[i]);
                hessian[i][i] += self.strength;
            }
            let determinant = hessian[0][0] * hessian[1][1] - hessian[0][1] * hessian[1][0];
            if determinant.abs() < 1e-12 || !determinant.is_finite() {
                return self.fitted;
            }
            let mut step = [
                (hessian[1][1] * gradient[0] - hessian[0][1] * gradient[1]) / determinant,
                (hessian[0][0] * gradient[1] - hessian[1][0] * gradient[0]) / determinant,
            ];
            // Halve the step until the loss falls: where the logistic is
            // flat (confidences near 1) a full step overshoots.
            let before = self.loss(beta);
            let mut next = [beta[0] - step[0], beta[1] - step[1]];
            for _ in 0..40 {
                if self.loss(next) <= before {
                    break;
                }
                step = [step[0] / 2.0, step[1] / 2.0];
                next = [beta[0] - step[0], beta[1] - step[1]];
            }
            beta = next;
            if step.iter().all(|s| s.abs() < 1e-10) {
                break;
            }
        }
        if !beta.iter().all(|b| b.is_finite()) {
            return self.fitted;
        }
        if beta[0] < 0.0 {
            // A higher fitted confidence must not be stated lower: where
            // the outcomes would have it so (they fail more often the more
            // confident it was), the slope stays at 0 and the intercept
            // alone says how often turns hold.
            return Recalibration {
                slope: 0.0,
                intercept: self.fit_intercept(beta[1]),
            };
        }
        Recalibration {
            slope: beta[0],
            intercept: beta[1],
        }
    }

    /// The maximum a posteriori intercept with the slope at 0, from
    /// `start` (Newton's method; `start` if a step fails).
    fn fit_intercept(&self, start: f64) -> f64 {
        let mut intercept = start;
        for _ in 0..60 {
            let p = sigmoid(intercept);
            let held = self.outcomes.iter().filter(|(_, held)| *held).count() as f64;
            let count = self.outcomes.len() as f64;
            let gradient = count * p - held + self.strength * (intercept - self.prior.intercept);
            let hessian = count * p * (1.0 - p) + self.strength;
            let step = gradient / hessian;
            if !step.is_finite() {
                return start;
            }
            intercept -= step;
            if step.abs() < 1e-10 {
                break;
            }
        }
        intercept
    }
}

impl OnlineCalibration {
    /// The log loss of the outcomes under `[slope, intercept]`, plus the
    /// prior's pull.
    fn loss(&self, beta: [f64; 2]) -> f64 {
        let data: f64 = self
            .outcomes
            .iter()
            .map(|(confidence, held)| {
                let z = beta[0] * logit(*confidence) + beta[1];
                // -ln sigmoid(z) for a success, -ln sigmoid(-z) for a failure.
                let signed = if *held { -z } else { z };
                signed.max(0.0) + (-signed.abs()).exp().ln_1p()
            })
            .sum();
        data + self.strength / 2.0
            * ((beta[0] - self.prior.slope).powi(2) + (beta[1] - self.prior.intercept).powi(2))
    }
}

/// A key for the catalog a router routes over, from its groups (in any
/// order): outcomes learned on one catalog are kept under its key, so a
/// catalog whose groups change starts learning afresh. FNV-1a, 64 bits,
/// stable across builds and platforms.
pub fn catalog_key(groups: &[GroupId]) -> String {
    let mut names: Vec<&str> = groups.iter().map(GroupId::as_str).collect();
    names.sort_unstable();
    names.dedup();
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for name in names {
        for byte in name.bytes().chain(std::iter::once(b'\n')) {
            hash ^= u64::from(byte);
            hash = hash.wrapping_mul(0x0000_0100_0000_01b3);
        }
    }
    format!("groups-{hash:016x}")
}

/// The logit of a confidence clamped inside 0 and 1.
fn logit(confidence: f64) -> f64 {
    let c = confidence.clamp(EDGE, 1.0 - EDGE);
    (c / (1.0 - c)).ln()
}

#[cfg(test)]
#[path = "online_tests.rs"]
mod tests;
