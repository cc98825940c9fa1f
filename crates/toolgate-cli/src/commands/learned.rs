//! What `toolgate chat --route` learned of a catalog: the outcomes of its
//! routed turns, kept in the store under the catalog's key, and the online
//! calibration they make. Chat reads and extends them; `route` reads them.

use toolgate_core::Catalog;
use toolgate_core::routing::{KEPT_OUTCOMES, OnlineCalibration, catalog_key};
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

/// The online calibration `outcomes` (oldest first) make.
pub(crate) fn calibration(outcomes: &[RoutingOutcome]) -> OnlineCalibration {
    OnlineCalibration::default()
        .with_outcomes(outcomes.iter().map(|o| (o.fitted_confidence, o.held)))
}
