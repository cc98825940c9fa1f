//! Routing (seed 004): from a user turn to the groups it needs, before the
//! model is called. A [`Router`] scores the catalog's groups (BM25 by
//! default, [`LexicalScorer`]), turns the scores into a calibrated
//! confidence, and picks a [`Tier`]: high shows only the routed groups,
//! medium adds the recovery groups, low shows the whole catalog.

mod bm25;
mod budget;
mod calibration;
mod fusion;
mod hybrid;
mod id_finders;
mod online;
mod recovery;
mod router;
mod self_test;
pub mod semantic;
mod config;
mod text;

pub use bm25::Bm25;
pub use budget::{DEFAULT_MAX_TOKEN_SHARE, ToolCosts};
pub use calibration::{DEFAULT_PER_GROUP, Isotonic, PerGroup};
pub use fusion::{CosineFloor, Fusion, group_scores, ranking};
pub use hybrid::{
    Combined, DEFAULT_FUSION, Embeddings, FittedDefaults, GROUP_DOCUMENT_SHARE, HYBRID_DEFAULTS,
    HybridScorer, LEXICAL_DEFAULTS, RawEvidence, combine, tool_text, tool_texts,
};
pub use id_finders::{IdFinder, IdFinders};
pub use online::{
    DEFAULT_STRENGTH as ONLINE_STRENGTH, KEPT_OUTCOMES, OnlineCalibration, Recalibration,
    catalog_key, prequential,
};
pub use recovery::{LearnedRecovery, MAX_LEARNED, MIN_MISSES};
pub use router::{
    COVERAGE_TARGET, Confidence, DEFAULT_TEMPERATURE, Decision, Evidence, GroupScorer, Labelled,
    LexicalScorer, NAMED_PER_GROUP, PartialGroup, Router, Tier, ToolScore, Visible,
    calibration_samples, fit_per_group, fit_per_group_pooled, fit_temperature, probabilities,
    query_terms,
};
pub use self_test::{MAX_PROBES, ProbeNeeds, SelfTest, leave_out, probe_tools};
pub use config::{
    ConfidenceKind, DEFAULT_SEARCH_GROUPS, DEFAULT_SEARCH_TOOLS, Intent, IntentConfig, NoProgress,
    RoutingConfig, RoutingError, Taxonomy, Thresholds, UnknownIntent,
};
pub use text::{terms, tool_terms};

#[cfg(test)]
#[path = "routing/router_tests.rs"]
mod tests;
