//! Routing: from a user turn to the groups it needs, before the
//! model is called. A [`Router`] scores the catalog's groups (BM25 by
//! default, [`LexicalScorer`]), turns the scores into a calibrated
//! confidence, and picks a [`Tier`]: high shows only the routed groups,
//! medium adds the recovery groups, low shows the whole catalog.
//!
//! Where things are, from the bottom up (each file imports only files
//! listed before it):
//! - words and indexes: `text.rs`, `bm25.rs`; the confidence model's pieces:
//!   `calibration.rs` ([`PerGroup`], [`Isotonic`]), `fusion.rs`,
//!   `online.rs`, `recovery.rs`;
//! - what the catalog says: `id_finders.rs`, `semantic.rs`;
//! - the values a decision is made of: `decision.rs` ([`Decision`],
//!   [`Tier`]), `self_test.rs` (its probes and their statistics),
//!   `scorer.rs` ([`GroupScorer`], [`Evidence`]);
//! - `[routing]` and its checked form: `config.rs` ([`RoutingConfig`],
//!   [`Taxonomy`]);
//! - the routing rules: `cover.rs`; the token budget: `budget.rs`;
//! - the scorers and the router: `lexical.rs`, `router.rs` (a decision's
//!   steps in `router/decide.rs`), `hybrid.rs` ([`Router::hybrid`], the
//!   router toolgate runs);
//! - what only `toolgate eval` uses, fitting the confidence model: `fit.rs`.

mod bm25;
mod budget;
mod calibration;
mod config;
mod cover;
mod decision;
mod fit;
mod fusion;
mod hybrid;
mod id_finders;
mod lexical;
mod online;
mod recovery;
mod router;
mod scorer;
mod self_test;
pub mod semantic;
mod text;

pub use bm25::Bm25;
pub use budget::{DEFAULT_MAX_TOKEN_SHARE, ToolCosts};
pub use calibration::{DEFAULT_PER_GROUP, Isotonic, PerGroup};
pub use config::{
    ConfidenceKind, DEFAULT_ROUTE_TOOLS, DEFAULT_SEARCH_GROUPS, DEFAULT_SEARCH_RESULTS,
    DEFAULT_SEARCH_TOOLS, Intent, IntentConfig, MAX_SEARCH_RESULTS, NoProgress, RoutingConfig,
    RoutingError, SearchRanks, Taxonomy, Thresholds, UnknownIntent,
};
pub use cover::{COVERAGE_TARGET, DEFAULT_TEMPERATURE, probabilities};
pub use decision::{Decision, PartialGroup, Tier, Visible};
pub use fit::{
    Labelled, calibration_samples, fit_per_group, fit_per_group_pooled, fit_temperature,
};
pub use fusion::{CosineFloor, Fusion, group_scores, ranking};
pub use hybrid::{
    Combined, DEFAULT_FUSION, Embeddings, FittedDefaults, GROUP_DOCUMENT_SHARE, HYBRID_DEFAULTS,
    HybridScorer, LEXICAL_DEFAULTS, RawEvidence, combine, leave_out, tool_text, tool_texts,
};
pub use id_finders::{IdFinder, IdFinders};
pub use lexical::{LexicalScorer, query_terms};
pub use online::{
    DEFAULT_STRENGTH as ONLINE_STRENGTH, KEPT_OUTCOMES, OnlineCalibration, Recalibration,
    catalog_key,
};
pub use recovery::{LearnedRecovery, MAX_LEARNED, MIN_MISSES};
pub use router::{Confidence, Router};
pub use scorer::{Evidence, GroupScorer, NAMED_PER_GROUP, ToolScore};
pub use self_test::{MAX_PROBES, ProbeNeeds, SelfTest, probe_tools};
pub use text::{terms, tool_terms};

#[cfg(test)]
mod test_catalogs;
