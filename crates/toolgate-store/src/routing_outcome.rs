//! [`RoutingOutcome`] and [`RoutingOutcomeStore`]: the outcomes of routed
//! turns, stored per catalog beside the conversations, so the router's
//! online calibration (`toolgate_core::routing::OnlineCalibration`) learned
//! in one process seeds the next instead of starting from nothing.

use std::fmt;

use crate::agent::StoreFuture;
use crate::error::{Result, StoreError};

/// One routed turn's outcome: the router's fitted confidence for its
/// decision, whether the routed groups held every group the turn used, and
/// the groups it used that were not routed.
#[derive(Clone, Debug, PartialEq)]
pub struct RoutingOutcome {
    /// The confidence fitted offline, before any online recalibration
    /// (`toolgate_core::routing::Decision::fitted_confidence`); within 0..=1.
    pub fitted_confidence: f64,
    /// Whether the groups the decision relied on (routed, and learned from
    /// earlier misses) held every group the turn used.
    pub held: bool,
    /// The groups the turn used that its decision did not route, by name
    /// (empty when they held): what the router's learned recovery groups
    /// (`toolgate_core::routing::LearnedRecovery`) learn from.
    pub missed: Vec<String>,
}

impl RoutingOutcome {
    /// [`Self::missed`] as stored: a JSON array of names.
    pub(crate) fn missed_json(&self) -> String {
        serde_json::Value::from(self.missed.clone()).to_string()
    }

    /// An outcome read back from `catalog`, its missed groups as stored
    /// ([`Self::missed_json`]).
    pub(crate) fn decoded(
        catalog: &str,
        fitted_confidence: f64,
        held: bool,
        missed: &str,
    ) -> Result<Self> {
        let missed = serde_json::from_str(missed).map_err(|error| StoreError::CorruptOutcome {
            catalog: catalog.to_owned(),
            reason: format!("its missed groups are not a JSON array of names: {error}"),
        })?;
        Ok(Self {
            fitted_confidence,
            held,
            missed,
        })
    }

    /// The outcome, if its confidence can be stored: finite and within
    /// 0..=1 ([`StoreError::InvalidConfidence`] otherwise).
    pub(crate) fn checked(self) -> Result<Self> {
        if self.fitted_confidence.is_finite() && (0.0..=1.0).contains(&self.fitted_confidence) {
            Ok(self)
        } else {
            Err(StoreError::InvalidConfidence(self.fitted_confidence))
        }
    }
}

/// Outcomes kept per catalog; recording one more deletes the oldest beyond
/// it. As many as the router's online calibration keeps
/// (`toolgate_core::routing::KEPT_OUTCOMES`), so a seeded calibration sees
/// what a long-running one would.
pub const KEPT_ROUTING_OUTCOMES: usize = 2_000;

/// Where routing outcomes live, beside the conversations, per catalog: a
/// key the caller chooses (a fingerprint of the groups the router routes
/// over), so a changed catalog starts fresh. Object-safe, so the agent can
/// hold an `Arc<dyn RoutingOutcomeStore>` whatever the backend.
pub trait RoutingOutcomeStore: Send + Sync + fmt::Debug {
    /// Appends `outcome` for `catalog`, keeping that catalog's newest
    /// [`KEPT_ROUTING_OUTCOMES`]. A confidence that is not finite or not
    /// within 0..=1 is refused ([`StoreError::InvalidConfidence`]) and
    /// nothing is stored.
    fn record_routing_outcome<'a>(
        &'a self,
        catalog: &'a str,
        outcome: RoutingOutcome,
    ) -> StoreFuture<'a, ()>;

    /// The newest `limit` outcomes of `catalog`, oldest first (empty for an
    /// unknown catalog).
    fn routing_outcomes<'a>(
        &'a self,
        catalog: &'a str,
        limit: usize,
    ) -> StoreFuture<'a, Vec<RoutingOutcome>>;
}

/// `count` (a limit or an offset) as SQL takes it.
pub(crate) fn sql_count(count: usize) -> i64 {
    i64::try_from(count).unwrap_or(i64::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn as_many_are_kept_as_the_router_keeps() {
        assert_eq!(KEPT_ROUTING_OUTCOMES, toolgate_core::routing::KEPT_OUTCOMES);
    }

    #[test]
    fn only_confidences_within_0_and_1_pass() {
        for confidence in [0.0, 0.5, 1.0] {
            let outcome = RoutingOutcome {
                fitted_confidence: confidence,
                held: true,
                missed: Vec::new(),
            };
            assert_eq!(outcome.clone().checked().unwrap(), outcome);
        }
        for (confidence, shown) in [
            (f64::NAN, "NaN"),
            (f64::INFINITY, "inf"),
            (-0.1, "-0.1"),
            (1.5, "1.5"),
        ] {
            let outcome = RoutingOutcome {
                fitted_confidence: confidence,
                held: false,
                missed: vec!["files".to_owned()],
            };
            assert_eq!(
                outcome.checked().unwrap_err().to_string(),
                format!(
                    "a routing outcome's fitted confidence must be a number within 0 and 1, not {shown}"
                )
            );
        }
    }

    #[test]
    fn missed_groups_are_stored_as_a_json_array_and_a_bad_one_names_its_catalog() {
        let outcome = RoutingOutcome {
            fitted_confidence: 0.5,
            held: false,
            missed: vec!["files".to_owned(), "a \"quoted\" name".to_owned()],
        };
        let stored = outcome.missed_json();
        assert_eq!(stored, r#"["files","a \"quoted\" name"]"#);
        assert_eq!(
            RoutingOutcome::decoded("groups-1", 0.5, false, &stored).unwrap(),
            outcome
        );
        assert_eq!(
            RoutingOutcome::decoded("groups-1", 0.5, false, "not json")
                .unwrap_err()
                .to_string(),
            "a stored routing outcome of catalog `groups-1` is corrupt: its missed groups are not \
             a JSON array of names: expected ident at line 1 column 2"
        );
    }
}
