//! The routing configuration (`[routing]` in toolgate.toml): intents and
//! the groups they need, the recovery groups of the medium tier, the tier
//! thresholds, what an unknown intent does, and when no progress escalates.
//! Checked against the catalog at start-up: the groups are the one taxonomy.
//! [`RoutingConfig`] is the section as written; [`RoutingConfig::validate`]
//! turns it into the [`Taxonomy`] a router reads.

use serde::Deserialize;

use crate::catalog::Catalog;
use crate::name::{GroupId, NameError};
use crate::routing::calibration::{Isotonic, PerGroup};
use crate::routing::fusion::Fusion;
use crate::routing::scorer::NAMED_PER_GROUP;
use crate::routing::semantic::EmbeddingsConfig;

/// Groups a `find_tool_groups` answer lists at most, by default. Chosen
/// among 5, 8 and 12 by leave-one-dataset-out evaluation (`toolgate eval
/// --leave-one-out`): each group listed raised the one-call group recall on
/// every catalog for a few lines, so every fold chose the most; 12 is the
/// most offered, since an answer much longer becomes a second listing.
pub const DEFAULT_SEARCH_GROUPS: usize = 12;

/// Best tools a `find_tool_groups` answer lists under each group, by default,
/// when it ranks groups ([`SearchRanks::Groups`]).
pub const DEFAULT_SEARCH_TOOLS: usize = 3;

/// Tools a `find_tool_groups` answer lists, by default, when it ranks tools
/// across groups ([`SearchRanks::Tools`]): as many as the tool search it
/// stands beside returns (`toolgate eval`'s episode cost, 3, 5 and 10 tried:
/// 10 finishes the most tasks at the fewest round trips on every catalog).
pub const DEFAULT_SEARCH_RESULTS: usize = 10;

/// Tools a routed turn arrives with by default: the best 40 across groups,
/// with no cap per group (`toolgate eval`'s episode cost, the routers
/// showing whole groups, 1-3 tools of each and 5, 10, 20 or 40 tools across
/// groups played on the catalogs left out, `find_tool_groups` offered for
/// what they miss: 40 across cost the least within 0.5 extra round trips;
/// 20 took 0.61 on toolbench_stable).
pub const DEFAULT_ROUTE_TOOLS: usize = 40;

/// Most tools one `find_tool_groups` answer may list.
pub const MAX_SEARCH_RESULTS: usize = 50;

/// What a `find_tool_groups` answer ranks.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SearchRanks {
    /// Every tool, across groups and with no cap per group: the best
    /// `search_results` not yet loaded, under their groups. Asked again, it
    /// answers the next ones (those it listed are loaded by then).
    #[default]
    Tools,
    /// The groups the router routes (at most `search_groups`), each with
    /// its best `search_tools` tools.
    Groups,
}

impl SearchRanks {
    /// The setting's value: `tools`, `groups`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Tools => "tools",
            Self::Groups => "groups",
        }
    }
}

/// `[routing]` as written.
#[derive(Clone, Debug, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RoutingConfig {
    /// Named intents, each with the groups it needs (`[[routing.intent]]`).
    #[serde(default, rename = "intent")]
    pub intents: Vec<IntentConfig>,
    /// Groups added at the medium tier, to recover from a near miss.
    #[serde(default)]
    pub recovery_groups: Vec<String>,
    /// Confidence at or above which a tier applies.
    #[serde(default)]
    pub thresholds: Thresholds,
    /// What a query that matches nothing gets.
    #[serde(default)]
    pub unknown_intent: UnknownIntent,
    /// How scores become confidence: `per_group` (the default) or
    /// `softmax`.
    #[serde(default)]
    pub confidence: ConfidenceKind,
    /// The per-group model's parameters (`toolgate eval` fits them; the
    /// defaults suit BM25 scores).
    #[serde(default)]
    pub per_group: Option<PerGroup>,
    /// Most groups routed for one query (default 50 per group, 3 softmax:
    /// [`ConfidenceKind::default_max_groups`]; `toolgate eval` tunes the
    /// softmax cap when unset).
    #[serde(default)]
    pub max_groups: Option<usize>,
    /// Softmax temperature turning scores into confidence (`toolgate eval`
    /// fits it when unset); the default suits BM25 scores.
    #[serde(default)]
    pub temperature: Option<f64>,
    /// When a restricted turn escalates to the whole catalog.
    #[serde(default)]
    pub no_progress: NoProgress,
    /// Route every group scoring at least this share (0 to 1) of the best
    /// group's score, up to `max_groups`, instead of the fewest groups whose
    /// confidence reaches the high threshold (the confidence then only sets
    /// the tier). [`Router::hybrid`](crate::routing::Router::hybrid)
    /// defaults it.
    #[serde(default)]
    pub route_above: Option<f64>,
    /// Tools a routed group arrives with: its best-scoring ones (at most
    /// 10), the rest loaded by `load_tool_group` on request; 0 loads whole
    /// groups. [`Router::hybrid`](crate::routing::Router::hybrid) defaults
    /// it; other routers load whole groups when it is unset.
    #[serde(default)]
    pub tools_per_group: Option<usize>,
    /// Most a routed turn's tool schemas may cost, as a share (0 to 1) of
    /// what sending every tool costs, the core tools and the group listing
    /// counted: the groups are taken best first, and one that no longer
    /// fits is passed over for cheaper ones below it (the best one is
    /// routed whatever it costs; the recovery groups of the medium tier are
    /// not counted; the learned ones are, first).
    /// [`Router::hybrid`](crate::routing::Router::hybrid) defaults it to
    /// [`DEFAULT_MAX_TOKEN_SHARE`](crate::routing::DEFAULT_MAX_TOKEN_SHARE);
    /// other routers have none when it is unset, and count the catalog for
    /// one when it is set ([`Router::counted`](crate::routing::Router::counted)).
    #[serde(default)]
    pub max_token_share: Option<f64>,
    /// Shows, beside each shown tool that requires an `X_id`, the tool of
    /// another group that searches, lists, finds or looks up X, within the
    /// token budget ([`IdFinders`](crate::routing::IdFinders)).
    /// [`Router::hybrid`](crate::routing::Router::hybrid) defaults it;
    /// other routers show none unless it is `true`.
    #[serde(default)]
    pub id_finders: Option<bool>,
    /// Groups a `find_tool_groups` answer lists at most (default
    /// [`DEFAULT_SEARCH_GROUPS`]).
    #[serde(default)]
    pub search_groups: Option<usize>,
    /// Best tools a `find_tool_groups` answer lists under each group, at
    /// most 10 (default [`DEFAULT_SEARCH_TOOLS`]; 0 lists the groups alone).
    #[serde(default)]
    pub search_tools: Option<usize>,
    /// Tools a routed turn arrives with, the best across groups with no cap
    /// per group, in place of the routed groups (up to
    /// [`MAX_SEARCH_RESULTS`]; unset or 0, the library's default, routes
    /// groups, `tools_per_group` of each; `toolgate chat` and `route`
    /// default to [`DEFAULT_ROUTE_TOOLS`]).
    #[serde(default)]
    pub route_tools: Option<usize>,
    /// What a `find_tool_groups` answer ranks (default
    /// [`SearchRanks::Tools`]).
    #[serde(default)]
    pub search: Option<SearchRanks>,
    /// Tools a `find_tool_groups` answer ranking tools lists, 1 to
    /// [`MAX_SEARCH_RESULTS`] (default [`DEFAULT_SEARCH_RESULTS`]).
    #[serde(default)]
    pub search_results: Option<usize>,
    /// How a tool's lexical and semantic scores are fused (default
    /// [`DEFAULT_FUSION`](crate::routing::DEFAULT_FUSION)).
    #[serde(default)]
    pub fusion: Option<Fusion>,
    /// The calibration of the confidence (`toolgate eval --leave-one-out`
    /// prints one fitted on its datasets; the default is fitted on the
    /// public sets).
    #[serde(default)]
    pub calibration: Option<Isotonic>,
    /// Learn the calibration of this deployment's catalog from the outcomes
    /// of the turns it routes (default true): each routed turn whose calls
    /// show whether its groups held restates later confidences
    /// ([`crate::routing::OnlineCalibration`]).
    #[serde(default)]
    pub learn_online: Option<bool>,
    /// Score tools semantically too, with the local embedding model (default
    /// true; without the model's files toolgate says so and routes
    /// lexically).
    #[serde(default)]
    pub semantic: Option<bool>,
    /// The local embedding model's directory (default:
    /// `$TOOLGATE_EMBED_MODEL`, else
    /// `~/.local/share/toolgate/models/all-MiniLM-L6-v2`).
    #[serde(default)]
    pub embed_model: Option<std::path::PathBuf>,
    /// An embeddings endpoint whose scores are blended with the lexical ones.
    #[serde(default)]
    pub embeddings: Option<EmbeddingsConfig>,
}

/// Which confidence model the router uses.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ConfidenceKind {
    /// Each group's own chance of being needed; see
    /// [`Confidence::PerGroup`](crate::routing::Confidence::PerGroup).
    #[default]
    PerGroup,
    /// One softmax over the groups; see
    /// [`Confidence::Softmax`](crate::routing::Confidence::Softmax).
    Softmax,
}

impl ConfidenceKind {
    /// The group cap when none is configured. The per-group router's was
    /// chosen by leave-one-dataset-out evaluation over 20 (every fold chose
    /// it, and `toolgate eval` no longer tries 20): catalogs of many groups
    /// need more than 20 at times, and `route_above` and the token budget
    /// decide below it.
    pub fn default_max_groups(self) -> usize {
        match self {
            Self::PerGroup => 50,
            Self::Softmax => 3,
        }
    }
}

/// One intent.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct IntentConfig {
    /// Its name (`email`, `code_review`).
    pub name: String,
    /// The groups it needs.
    pub groups: Vec<String>,
    /// Example utterances; they add their words to the groups' matching.
    #[serde(default)]
    pub examples: Vec<String>,
}

/// Tier thresholds on calibrated confidence (0 to 1).
#[derive(Clone, Copy, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Thresholds {
    /// At or above: only the routed groups.
    pub high: f64,
    /// At or above (and below `high`): routed plus recovery groups.
    pub medium: f64,
}

impl Default for Thresholds {
    fn default() -> Self {
        Self {
            high: 0.9,
            medium: 0.6,
        }
    }
}

/// What a query that matches no group gets.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum UnknownIntent {
    /// The whole catalog (fail open).
    #[default]
    Catalog,
    /// The recovery groups only.
    Recovery,
}

/// What counts as no progress in a restricted turn.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NoProgress {
    /// Consecutive failed tool calls that escalate (0: never).
    pub failed_calls: usize,
    /// Whether a call to a tool outside the visible set escalates.
    pub outside_call: bool,
}

impl Default for NoProgress {
    fn default() -> Self {
        Self {
            failed_calls: 2,
            outside_call: true,
        }
    }
}

/// A checked configuration: every group it names is in the catalog.
#[derive(Clone, Debug, PartialEq)]
pub struct Taxonomy {
    /// Intents with their groups.
    pub intents: Vec<Intent>,
    /// Recovery groups.
    pub recovery_groups: Vec<GroupId>,
    /// Tier thresholds.
    pub thresholds: Thresholds,
    /// Unknown-intent behaviour.
    pub unknown_intent: UnknownIntent,
    /// Most groups routed for one query.
    pub max_groups: usize,
    /// The confidence model.
    pub confidence: ConfidenceKind,
    /// The per-group model's parameters, if configured.
    pub per_group: Option<PerGroup>,
    /// Softmax temperature, if configured.
    pub temperature: Option<f64>,
    /// Escalation rules.
    pub no_progress: NoProgress,
    /// Tools a routed group arrives with (`None`: whole groups).
    pub tools_per_group: Option<usize>,
    /// The share of the best score a group needs to be routed, if set.
    pub route_above: Option<f64>,
    /// The share of every tool's tokens a routed turn may cost, if set.
    pub max_token_share: Option<f64>,
    /// Whether id finders are shown, if set.
    pub id_finders: Option<bool>,
    /// Groups a `find_tool_groups` answer lists at most.
    pub search_groups: usize,
    /// Best tools it lists under each group, at most.
    pub search_tools: usize,
    /// Tools a routed turn arrives with, the best across groups; `None`:
    /// the routed groups.
    pub route_tools: Option<usize>,
    /// What it ranks.
    pub search: SearchRanks,
    /// Tools it lists when it ranks tools.
    pub search_results: usize,
    /// The fusion method, if configured.
    pub fusion: Option<Fusion>,
    /// The calibration, if configured.
    pub calibration: Option<Isotonic>,
}

/// A checked intent.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Intent {
    /// Its name.
    pub name: String,
    /// Its groups.
    pub groups: Vec<GroupId>,
    /// Its example utterances.
    pub examples: Vec<String>,
}

/// Why a routing configuration does not fit the catalog.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum RoutingError {
    /// A group named where the catalog has none.
    #[error("[routing]: {place} names group '{group}', which is not in the catalog. Known groups: {}", known.join(", "))]
    UnknownGroup {
        /// Where it is named: `intent 'mail'`, `recovery_groups`.
        place: String,
        /// The name.
        group: String,
        /// The catalog's groups.
        known: Vec<String>,
    },
    /// A group name that cannot be a group id.
    #[error("[routing]: {0}")]
    GroupName(NameError),
    /// An intent that names no group.
    #[error("[routing]: intent '{0}' has no groups")]
    EmptyIntent(String),
    /// Thresholds out of order or out of range.
    #[error(
        "[routing]: thresholds must satisfy 0 <= medium <= high <= 1 (medium = {medium}, high = {high})"
    )]
    Thresholds {
        /// The medium threshold.
        medium: f64,
        /// The high threshold.
        high: f64,
    },
    /// A per-group model that is not finite, or whose rank slope is above 0.
    #[error(
        "[routing]: per_group weight, rank and bias must be finite numbers, and rank at most 0"
    )]
    PerGroup,
    /// `max_groups = 0`.
    #[error("[routing]: max_groups must be at least 1")]
    MaxGroups,
    /// A temperature that is not positive.
    #[error("[routing]: temperature must be positive, not {0}")]
    Temperature(f64),
    /// Fusion parameters out of range.
    #[error("[routing.fusion]: {0}")]
    Fusion(String),
    /// Calibration knots that are not a monotone map into 0..1.
    #[error("[routing.calibration]: {0}")]
    Calibration(String),
    /// `route_above` outside (0, 1].
    #[error("[routing]: route_above must be above 0 and at most 1, not {0}")]
    RouteAbove(f64),
    /// `max_token_share` outside (0, 1].
    #[error("[routing]: max_token_share must be above 0 and at most 1, not {0}")]
    MaxTokenShare(f64),
    /// `tools_per_group` above the tools a scorer names per group.
    #[error("[routing]: tools_per_group must be at most 10, not {0} (0 loads whole groups)")]
    ToolsPerGroup(usize),
    /// `search_groups = 0`.
    #[error("[routing]: search_groups must be at least 1")]
    SearchGroups,
    /// `search_tools` above the tools a scorer names per group.
    #[error("[routing]: search_tools must be at most 10, not {0} (0 lists the groups alone)")]
    SearchTools(usize),
    /// `route_tools` above [`MAX_SEARCH_RESULTS`].
    #[error("[routing]: route_tools must be at most 50, not {0} (0 routes groups)")]
    RouteTools(usize),
    /// `search_results` of 0 or above [`MAX_SEARCH_RESULTS`].
    #[error("[routing]: search_results must be 1 to 50, not {0}")]
    SearchResults(usize),
}

impl RoutingConfig {
    /// Checks every named group against `catalog`, and every setting's
    /// range; the first problem found is the error.
    pub fn validate(&self, catalog: &Catalog) -> Result<Taxonomy, RoutingError> {
        let known = KnownGroups(catalog.groups().map(|g| g.id.as_str()).collect());
        let intents = self
            .intents
            .iter()
            .map(|intent| known.intent(intent))
            .collect::<Result<_, _>>()?;
        let recovery_groups = known.all(&self.recovery_groups, "recovery_groups")?;
        let max_groups = self.check_confidence_model()?;
        self.check_fusion_and_calibration()?;
        self.check_shares()?;
        let (search_groups, search_tools) = self.check_tool_counts()?;
        let search_results = self.search_results.unwrap_or(DEFAULT_SEARCH_RESULTS);
        if !(1..=MAX_SEARCH_RESULTS).contains(&search_results) {
            return Err(RoutingError::SearchResults(search_results));
        }
        let route_tools = self.route_tools.unwrap_or(0);
        if route_tools > MAX_SEARCH_RESULTS {
            return Err(RoutingError::RouteTools(route_tools));
        }
        Ok(Taxonomy {
            intents,
            recovery_groups,
            thresholds: self.thresholds,
            unknown_intent: self.unknown_intent,
            max_groups,
            confidence: self.confidence,
            per_group: self.per_group,
            temperature: self.temperature,
            no_progress: self.no_progress,
            tools_per_group: self.tools_per_group,
            route_above: self.route_above,
            max_token_share: self.max_token_share,
            id_finders: self.id_finders,
            search_groups,
            search_tools,
            route_tools: (route_tools > 0).then_some(route_tools),
            search: self.search.unwrap_or_default(),
            search_results,
            fusion: self.fusion,
            calibration: self.calibration.clone(),
        })
    }

    /// Checks the tier thresholds, the per-group model, the group cap and
    /// the temperature; the group cap, defaulted for the confidence model.
    fn check_confidence_model(&self) -> Result<usize, RoutingError> {
        let Thresholds { high, medium } = self.thresholds;
        if !(0.0..=1.0).contains(&medium) || !(0.0..=1.0).contains(&high) || medium > high {
            return Err(RoutingError::Thresholds { medium, high });
        }
        let max_groups = self
            .max_groups
            .unwrap_or_else(|| self.confidence.default_max_groups());
        if let Some(model) = self.per_group
            && !(model.weight.is_finite()
                && model.bias.is_finite()
                && model.rank.is_finite()
                && model.rank <= 0.0)
        {
            return Err(RoutingError::PerGroup);
        }
        if max_groups == 0 {
            return Err(RoutingError::MaxGroups);
        }
        if let Some(t) = self.temperature
            && !(t.is_finite() && t > 0.0)
        {
            return Err(RoutingError::Temperature(t));
        }
        Ok(max_groups)
    }

    /// Checks the fusion's parameters and the calibration's knots.
    fn check_fusion_and_calibration(&self) -> Result<(), RoutingError> {
        match self.fusion {
            Some(Fusion::Rrf { k }) if !(k.is_finite() && k >= 0.0) => {
                return Err(RoutingError::Fusion(format!(
                    "k must be a number of 0 or more, not {k}"
                )));
            }
            Some(Fusion::Blend { weight, .. })
                if !(weight.is_finite() && (0.0..=1.0).contains(&weight)) =>
            {
                return Err(RoutingError::Fusion(format!(
                    "weight must be between 0 and 1, not {weight}"
                )));
            }
            _ => {}
        }
        if let Some(calibration) = &self.calibration {
            calibration.check().map_err(RoutingError::Calibration)?;
        }
        Ok(())
    }

    /// Checks that `route_above` and `max_token_share` are shares: above 0
    /// and at most 1.
    fn check_shares(&self) -> Result<(), RoutingError> {
        if let Some(share) = self.route_above
            && !(share.is_finite() && share > 0.0 && share <= 1.0)
        {
            return Err(RoutingError::RouteAbove(share));
        }
        if let Some(share) = self.max_token_share
            && !(share.is_finite() && share > 0.0 && share <= 1.0)
        {
            return Err(RoutingError::MaxTokenShare(share));
        }
        Ok(())
    }

    /// Checks the counts of tools a routed group arrives with and of groups
    /// and tools a `find_tool_groups` answer lists; those two, defaulted.
    fn check_tool_counts(&self) -> Result<(usize, usize), RoutingError> {
        if let Some(count) = self.tools_per_group
            && count > NAMED_PER_GROUP
        {
            return Err(RoutingError::ToolsPerGroup(count));
        }
        let search_groups = self.search_groups.unwrap_or(DEFAULT_SEARCH_GROUPS);
        if search_groups == 0 {
            return Err(RoutingError::SearchGroups);
        }
        let search_tools = self.search_tools.unwrap_or(DEFAULT_SEARCH_TOOLS);
        if search_tools > NAMED_PER_GROUP {
            return Err(RoutingError::SearchTools(search_tools));
        }
        Ok((search_groups, search_tools))
    }
}

/// The catalog's group ids, which every group `[routing]` names must be.
struct KnownGroups<'a>(Vec<&'a str>);

impl KnownGroups<'_> {
    /// `group`, named at `place`, as the catalog's group id.
    fn check(&self, group: &str, place: &str) -> Result<GroupId, RoutingError> {
        if self.0.contains(&group) {
            GroupId::new(group).map_err(RoutingError::GroupName)
        } else {
            Err(RoutingError::UnknownGroup {
                place: place.to_owned(),
                group: group.to_owned(),
                known: self.0.iter().map(|k| (*k).to_owned()).collect(),
            })
        }
    }

    /// Each of `groups`, named at `place`, in order.
    fn all(&self, groups: &[String], place: &str) -> Result<Vec<GroupId>, RoutingError> {
        groups.iter().map(|g| self.check(g, place)).collect()
    }

    /// `intent` checked: it names groups, each of the catalog.
    fn intent(&self, intent: &IntentConfig) -> Result<Intent, RoutingError> {
        if intent.groups.is_empty() {
            return Err(RoutingError::EmptyIntent(intent.name.clone()));
        }
        Ok(Intent {
            name: intent.name.clone(),
            groups: self.all(&intent.groups, &format!("intent '{}'", intent.name))?,
            examples: intent.examples.clone(),
        })
    }
}

impl Default for Taxonomy {
    fn default() -> Self {
        Self {
            intents: Vec::new(),
            recovery_groups: Vec::new(),
            thresholds: Thresholds::default(),
            unknown_intent: UnknownIntent::default(),
            max_groups: ConfidenceKind::default().default_max_groups(),
            confidence: ConfidenceKind::default(),
            per_group: None,
            temperature: None,
            no_progress: NoProgress::default(),
            tools_per_group: None,
            route_above: None,
            max_token_share: None,
            id_finders: None,
            search_groups: DEFAULT_SEARCH_GROUPS,
            search_tools: DEFAULT_SEARCH_TOOLS,
            route_tools: None,
            search: SearchRanks::default(),
            search_results: DEFAULT_SEARCH_RESULTS,
            fusion: None,
            calibration: None,
        }
    }
}

#[cfg(test)]
#[path = "config_tests.rs"]
mod tests;
