//! The outcomes of routed turns, per catalog.

use super::rows::postgres_error;
use super::{PostgresStore, ROUTING_OUTCOME_LOCK};
use crate::agent::StoreFuture;
use crate::conversation::{now_millis, to_millis};
use crate::routing_outcome::{
    KEPT_ROUTING_OUTCOMES, RoutingOutcome, RoutingOutcomeStore, sql_count,
};

impl RoutingOutcomeStore for PostgresStore {
    /// One transaction: the catalog's lock, then the insert and the prune
    /// in one statement (prepared once per connection), so a turn's outcome
    /// costs few round trips.
    fn record_routing_outcome<'a>(
        &'a self,
        catalog: &'a str,
        outcome: RoutingOutcome,
    ) -> StoreFuture<'a, ()> {
        Box::pin(async move {
            let outcome = outcome.checked()?;
            let mut client = self.client().await?;
            let transaction = client.transaction().await.map_err(postgres_error)?;
            let lock = transaction
                .prepare_cached("SELECT pg_advisory_xact_lock($1, hashtext($2))")
                .await
                .map_err(postgres_error)?;
            transaction
                .execute(&lock, &[&ROUTING_OUTCOME_LOCK, &catalog])
                .await
                .map_err(postgres_error)?;
            // The DELETE runs on the statement's snapshot, taken once the
            // lock is held: it sees every outcome committed before, but not
            // the one its own WITH inserts. So it keeps the newest
            // KEPT_ROUTING_OUTCOMES - 1 of those, and the new one makes the
            // count.
            let record = transaction
                .prepare_cached(
                    "WITH recorded AS (
                         INSERT INTO routing_outcomes
                             (catalog, fitted_confidence, held, recorded_ms, missed)
                         VALUES ($1, $2, $3, $4, $6))
                     DELETE FROM routing_outcomes WHERE catalog = $1 AND id <= (
                         SELECT id FROM routing_outcomes WHERE catalog = $1
                         ORDER BY id DESC LIMIT 1 OFFSET $5)",
                )
                .await
                .map_err(postgres_error)?;
            transaction
                .execute(
                    &record,
                    &[
                        &catalog,
                        &outcome.fitted_confidence,
                        &outcome.held,
                        &to_millis(now_millis()),
                        &sql_count(KEPT_ROUTING_OUTCOMES - 1),
                        &outcome.missed_json(),
                    ],
                )
                .await
                .map_err(postgres_error)?;
            transaction.commit().await.map_err(postgres_error)
        })
    }

    fn routing_outcomes<'a>(
        &'a self,
        catalog: &'a str,
        limit: usize,
    ) -> StoreFuture<'a, Vec<RoutingOutcome>> {
        Box::pin(async move {
            let client = self.client().await?;
            let rows = client
                .query(
                    "SELECT fitted_confidence, held, missed FROM (
                         SELECT id, fitted_confidence, held, missed FROM routing_outcomes
                         WHERE catalog = $1 ORDER BY id DESC LIMIT $2) AS newest
                     ORDER BY id",
                    &[&catalog, &sql_count(limit)],
                )
                .await
                .map_err(postgres_error)?;
            let get = |error: tokio_postgres::Error| postgres_error(error);
            rows.iter()
                .map(|row| {
                    let missed: String = row.try_get(2).map_err(get)?;
                    RoutingOutcome::decoded(
                        catalog,
                        row.try_get(0).map_err(get)?,
                        row.try_get(1).map_err(get)?,
                        &missed,
                    )
                })
                .collect()
        })
    }
}
