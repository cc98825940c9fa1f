//! What `toolgate chat --route` learned of a catalog: the outcomes of its
//! routed turns, kept in the store under the catalog's key, and the online
//! calibration and learned recovery groups they make. Chat reads and
//! extends them; `route` reads them.

use toolgate_core::routing::{
    KEPT_OUTCOMES, LearnedRecovery, OnlineCalibration, Router, catalog_key,
};
use toolgate_core::{Catalog, GroupId};
use toolgate_store::{RoutingOutcome, RoutingOutcomeStore, StoreError};

/// The key `catalog`'s outcomes are kept under: its groups'.
pub(crate) fn key(catalog: &Catalog) -> String {
    let groups: Vec<_> = catalog.groups().map(|g| g.id.clone()).collect();
    catalog_key(&groups)
}

/// The newest outcomes kept under `key`, as many as a calibration keeps.
pub(crate) async fn outcomes(
    store: &dyn RoutingOutcomeStore,
    key: &str,
) -> Result<Vec<RoutingOutcome>, StoreError> {
    store.routing_outcomes(key, KEPT_OUTCOMES).await
}

/// `router` learning from its turns, seeded with `outcomes` (oldest
/// first): the online calibration and the learned recovery groups they
/// make. A missed group whose name is no longer a group name is skipped.
pub(crate) fn learning(router: Router, outcomes: &[RoutingOutcome]) -> Router {
    let calibration = OnlineCalibration::default()
        .with_outcomes(outcomes.iter().map(|o| (o.fitted_confidence, o.held)));
    let missed = outcomes.iter().map(|o| {
        o.missed
            .iter()
            .filter_map(|name| GroupId::new(name.as_str()).ok())
            .collect::<Vec<_>>()
    });
    let recovery = LearnedRecovery::default().with_turns(missed);
    router
        .with_online_calibration(calibration)
        .with_learned_recovery(recovery)
}
