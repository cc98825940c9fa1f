//! What an evaluation reports: [`Evaluation`] and its parts, plain data
//! that the rest of the crate fills in ([`crate::figures`] computes them)
//! and renders.

use serde::Serialize;
use toolgate_core::routing::SelfTest;
use toolgate_core::routing::{Fusion, Isotonic, PerGroup};

use crate::episode::Placement;

/// The policy name of the tool router as `toolgate chat --route` runs it,
/// learning from its turns: the reported queries in order, each query's
/// outcome recorded after its own decision, into the online calibration
/// (`toolgate_core::routing::OnlineCalibration`, so its tiers follow) and
/// the learned recovery groups (`toolgate_core::routing::LearnedRecovery`).
pub const LEARNED_ROUTER: &str = "tool_router(learning online)";

/// The policy name of the tool router chosen as `tool_router` is, among
/// the settings that show no id finders: the same run's baseline for them.
pub(crate) const WITHOUT_ID_FINDERS: &str = "tool_router(no id finders)";

/// The same among the settings that show them.
pub(crate) const WITH_ID_FINDERS: &str = "tool_router(id finders)";

/// The policy name of the gateway's search without the tools that find a
/// listed tool's required id: the same run's baseline for them.
pub(crate) const FIND_WITHOUT_ID_FINDERS: &str = "find_tool_groups(no id finders)";

/// One policy's figures on the reported queries.
#[derive(Clone, Debug, Serialize)]
pub struct PolicyReport {
    /// `all_tools`, `core_listing`, `tiered_router`, `bm25_tools@k`, `bm25_groups@k`.
    pub policy: String,
    /// Mean share of each query's gold groups that are visible.
    pub group_recall: f64,
    /// Mean share of each query's gold tools that are visible.
    pub tool_recall: f64,
    /// Mean visible tool-schema tokens (core tools and listing included).
    pub mean_visible_tokens: f64,
    /// `mean_visible_tokens` over the all-tools tokens.
    pub token_fraction: f64,
    /// Median decision time, microseconds.
    pub p50_decision_us: f64,
    /// 95th percentile decision time, microseconds.
    pub p95_decision_us: f64,
    /// Router only: share of queries per tier.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tiers: Option<TierMix>,
    /// Router only: share of restricted (high or medium) decisions that miss
    /// a gold group, which no-progress escalation would widen to the catalog.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub escalation_rate: Option<f64>,
    /// Router only: group recall and token fraction of the high-tier decisions.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub high_tier: Option<TierFigures>,
}

/// Share of decisions per tier.
#[derive(Clone, Copy, Debug, Default, Serialize)]
pub struct TierMix {
    /// High.
    pub high: f64,
    /// Medium.
    pub medium: f64,
    /// Low.
    pub low: f64,
}

/// Figures for one tier's decisions.
#[derive(Clone, Copy, Debug, Serialize)]
pub struct TierFigures {
    /// Decisions in the tier.
    pub queries: usize,
    /// Their mean group recall.
    pub group_recall: f64,
    /// Their mean token fraction.
    pub token_fraction: f64,
}

/// Calibration on the reported queries: in each confidence band, how often
/// the routed groups held every gold group.
#[derive(Clone, Copy, Debug, Serialize)]
pub struct Band {
    /// Lower bound (inclusive).
    pub from: f64,
    /// Upper bound (exclusive, but 1.0 is in the last band).
    pub to: f64,
    /// Decisions in the band.
    pub queries: usize,
    /// Their mean confidence.
    pub mean_confidence: f64,
    /// Share whose routed groups held every gold group.
    pub observed: f64,
}

/// One point of a top-k curve.
#[derive(Clone, Copy, Debug, Serialize)]
pub struct CurvePoint {
    /// k.
    pub k: usize,
    /// Group recall.
    pub group_recall: f64,
    /// Tool recall.
    pub tool_recall: f64,
    /// Token fraction.
    pub token_fraction: f64,
}

/// The whole evaluation of one dataset.
#[derive(Clone, Debug, Serialize)]
pub struct Evaluation {
    /// Dataset name.
    pub dataset: String,
    /// Tools in the catalog.
    pub tools: usize,
    /// Groups in the catalog.
    pub groups: usize,
    /// Tokens of every tool schema.
    pub all_tools_tokens: usize,
    /// Tokens of the core tools and the group listing, sent on every call
    /// by every policy that lists the groups.
    pub listing_tokens: usize,
    /// The group listing's tokens in each form (`lines`, `names`,
    /// `search`), the section alone.
    pub listing_forms: Vec<(&'static str, usize)>,
    /// The form `chat` lists the groups in (no `find_tool_groups`), and the
    /// one `serve` does (with it), by the rule of toolgate-core's
    /// `ListingForm::fitting`.
    pub listing_form: (&'static str, &'static str),
    /// Queries used to fit the temperature.
    pub tune_queries: usize,
    /// Queries the figures are measured on.
    pub report_queries: usize,
    /// Which is which.
    pub split_rule: String,
    /// The router's confidence model and its parameters (fitted unless
    /// configured), e.g. `per-group (weight 11.3, bias -8.9)`.
    pub confidence_model: String,
    /// The group cap (tuned unless configured).
    pub max_groups: usize,
    /// The datasets the router's parameters were fitted on, when not this
    /// one's tuning part (leave one dataset out).
    pub tuned_on: Vec<String>,
    /// One entry per policy.
    pub policies: Vec<PolicyReport>,
    /// The router's calibration on the reported queries.
    pub calibration: Vec<Band>,
    /// BM25 over tools at several k.
    pub bm25_tools_curve: Vec<CurvePoint>,
    /// BM25 over groups at several k.
    pub bm25_groups_curve: Vec<CurvePoint>,
    /// Tool search (the k best tools) by each fusion method, at several k.
    pub search_curves: Vec<SearchCurve>,
    /// The headline tool router's calibration as stated: the offline fit
    /// restated by its self-test on this catalog, as the shipped router
    /// states it before learning from any turn.
    pub tool_router_calibration: Vec<(String, Vec<Band>)>,
    /// The same decisions stated by the offline fit alone, before the
    /// self-test.
    pub tool_router_calibration_fitted: Vec<Band>,
    /// What the headline tool router's self-test found of this catalog.
    pub tool_router_self_test: Option<SelfTest>,
    /// The headline tool router's calibration as `toolgate chat --route`
    /// states it, learning from its turns ([`LEARNED_ROUTER`]): the reported
    /// queries in order, each stated before its own outcome is recorded
    /// into the online calibration and the learned recovery groups.
    pub tool_router_calibration_online: Vec<Band>,
    /// The settings of the `tool_router` row, chosen where it is not
    /// reported.
    pub tool_router_setting: String,
    /// What that setting was chosen among: the best of each
    /// `tools_per_group` tried.
    pub tool_router_considered: Vec<Considered>,
    /// Share of the `tool_router` row's decisions that routed as many
    /// groups as its `max_groups`: the cap, not `route_above`, ended them
    /// (a share worth raising the cap for).
    pub tool_router_at_cap: f64,
    /// Groups the `find_tool_groups` row lists at most, chosen where it is
    /// not reported (`[routing] search_groups`).
    pub search_groups: usize,
    /// The g best groups by each fusion method, each with its m best
    /// tools, at several g (one curve per method and m).
    pub group_curves: Vec<SearchCurve>,
    /// What a task costs under each policy, agent and placement (the
    /// headline: billed tokens and round trips).
    pub task_costs: Vec<TaskCost>,
    /// The model's context window assumed, in tokens: a task one of whose
    /// prompts passes it is not done, and a row with such tasks does not
    /// fit.
    pub context_window: usize,
    /// Each job's default as chosen for this catalog (`choose_defaults`):
    /// its `auto` policy, the share of the context window under which it
    /// sends every tool, and what it defers to above it.
    pub defaults: Vec<JobDefault>,
    /// What each fusion method's router was fitted to for these figures:
    /// on this dataset's tuning part, or on the others when it is left out.
    #[serde(skip)]
    pub fitted: Vec<FittedFusion>,
}

/// What one fusion method's router fits to: the settings `[routing]` can
/// carry (and, fitted on the public catalogs, the defaults a build ships).
#[derive(Clone, Debug)]
pub struct FittedFusion {
    /// The fusion method.
    pub fusion: Fusion,
    /// Its per-group model.
    pub model: PerGroup,
    /// Its calibration.
    pub calibration: Isotonic,
    /// The `route_above` chosen.
    pub route_above: f64,
    /// The `tools_per_group` chosen.
    pub tools_per_group: usize,
    /// The `max_groups` chosen.
    pub max_groups: usize,
    /// The `max_token_share` it was measured with, if any.
    pub max_token_share: Option<f64>,
    /// The `id_finders` chosen.
    pub id_finders: bool,
    /// The `search_groups` chosen for the gateway's search (one choice for
    /// every fusion method).
    pub search_groups: usize,
    /// The lowest group recall of that choice on one of the datasets it
    /// was chosen on, its mean recall and its mean token share (in sample:
    /// what the choice was made on).
    pub worst_recall: f64,
    /// See `worst_recall`.
    pub recall: f64,
    /// See `worst_recall`.
    pub token_fraction: f64,
    /// Its token share on the dataset where that is highest.
    pub most_tokens: f64,
    /// What a `chat` task cost with it, on average over the datasets it was
    /// chosen on, where it kept the recall floor and was chosen by that
    /// cost: the bill with Anthropic's cache as a share of all-tools', and
    /// the extra round trips (the listing agent, schemas in the
    /// conversation).
    pub task_cost: Option<(f64, f64)>,
    /// The best setting of each `tools_per_group` tried, the chosen one
    /// among them: what the choice was between.
    pub considered: Vec<Considered>,
}

/// The best of the settings with one `tools_per_group` that a fusion
/// method tried, over the datasets the choice was made on, and where it
/// fell short of what a setting must keep to be chosen by cost.
#[derive(Clone, Debug, Serialize)]
pub struct Considered {
    /// Tools each routed group arrives with (0: the whole group).
    pub tools_per_group: usize,
    /// Its `route_above`.
    pub route_above: f64,
    /// Its `id_finders`.
    pub id_finders: bool,
    /// Its lowest group recall on one of the datasets.
    pub worst_recall: f64,
    /// Its mean share of all-tools tokens on the first call.
    pub token_fraction: f64,
    /// Its share on the dataset where that is highest.
    pub most_tokens: f64,
    /// The datasets it fell short on.
    pub short: Vec<Shortfall>,
    /// What a `chat` task cost with it (as [`FittedFusion::task_cost`]),
    /// where it kept the floor and was costed.
    pub task_cost: Option<(f64, f64)>,
    /// It is the setting chosen.
    pub chosen: bool,
}

/// `tools_per_group` as the routers' names say it: `whole groups` for 0,
/// `1 tool`, `3 tools`.
pub(crate) fn tools_per_group_label(tools_per_group: usize) -> String {
    match tools_per_group {
        0 => "whole groups".to_owned(),
        1 => "1 tool".to_owned(),
        n => format!("{n} tools"),
    }
}

impl Considered {
    /// Its tools per group as the settings' names say it.
    pub fn tools(&self) -> String {
        tools_per_group_label(self.tools_per_group)
    }

    /// Where it fell short, `-` when nowhere.
    pub fn shortfalls(&self) -> String {
        if self.short.is_empty() {
            return "-".to_owned();
        }
        let each: Vec<String> = self.short.iter().map(ToString::to_string).collect();
        each.join("; ")
    }

    /// Its `chat` task's cost, `-` when it was not costed.
    pub fn cost(&self) -> String {
        self.task_cost.map_or("-".to_owned(), |(cached, trips)| {
            format!(
                "{:.1}% of all-tools' bill with Anthropic's cache, {trips:.2} extra round trips",
                cached * 100.0
            )
        })
    }
}

impl std::fmt::Display for Shortfall {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: ", self.dataset)?;
        if self.recall < self.floor {
            // As many decimals as tell the two apart.
            let digits = (3..6)
                .find(|d| format!("{:.*}", d, self.recall) != format!("{:.*}", d, self.floor))
                .unwrap_or(6);
            write!(
                f,
                "recall {:.*} < {:.*}",
                digits, self.recall, digits, self.floor
            )?;
        }
        if self.over_budget {
            let sep = if self.recall < self.floor { ", " } else { "" };
            write!(f, "{sep}{:.1}% of the tokens", self.token_fraction * 100.0)?;
        }
        Ok(())
    }
}

/// A dataset where a setting fell short: recall under that dataset's
/// floor, or first-call tokens over the budget on one dataset.
#[derive(Clone, Debug, Serialize)]
pub struct Shortfall {
    /// The dataset.
    pub dataset: String,
    /// The setting's group recall there.
    pub recall: f64,
    /// The recall it had to keep there.
    pub floor: f64,
    /// Its share of all-tools tokens there.
    pub token_fraction: f64,
    /// That share is over what a setting may spend on one dataset.
    pub over_budget: bool,
}

/// Tool search by one method at several k.
#[derive(Clone, Debug, Serialize)]
pub struct SearchCurve {
    /// `bm25`, `embedding`, `rrf(k=60)`...
    pub method: String,
    /// One point per k.
    pub points: Vec<CurvePoint>,
}

impl SearchCurve {
    /// Group recall at `token_fraction`, interpolated between the two points
    /// around it (the last point's beyond the curve, 0 before the first).
    pub fn recall_at(&self, token_fraction: f64) -> f64 {
        let mut previous: Option<&CurvePoint> = None;
        for point in &self.points {
            if point.token_fraction >= token_fraction {
                return match previous {
                    None => point.group_recall * token_fraction / point.token_fraction.max(1e-12),
                    Some(p) => {
                        let span = point.token_fraction - p.token_fraction;
                        let t = if span > 0.0 {
                            (token_fraction - p.token_fraction) / span
                        } else {
                            1.0
                        };
                        p.group_recall + t * (point.group_recall - p.group_recall)
                    }
                };
            }
            previous = Some(point);
        }
        previous.map_or(0.0, |p| p.group_recall)
    }
}

/// Which job a policy serves.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Job {
    /// Sending everything: the baseline every cost is a share of.
    Baseline,
    /// `toolgate chat`: a router reads the request before the model's
    /// first call.
    Chat,
    /// `toolgate serve`: no request reaches the gateway before the model
    /// calls; it chooses from the listing or asks the gateway's search.
    Serve,
    /// A peer's design, measured beside toolgate's.
    Peer,
}

impl Job {
    /// How the report names it.
    pub fn label(self) -> &'static str {
        match self {
            Self::Baseline => "baseline",
            Self::Chat => "chat",
            Self::Serve => "serve",
            Self::Peer => "peer",
        }
    }
}

/// One policy's cost per task, played by one agent with one placement.
#[derive(Clone, Debug, Serialize)]
pub struct TaskCost {
    /// The policy.
    pub policy: String,
    /// The job it serves.
    pub job: Job,
    /// Where loaded schemas go (none for all-tools).
    pub placement: Option<Placement>,
    /// `oracle` or `listing` (none for all-tools).
    pub agent: Option<&'static str>,
    /// Tasks played.
    pub tasks: usize,
    /// Mean share of a task's gold tools visible on the first call.
    pub first_call_tool_recall: f64,
    /// Mean billed input tokens per task, uncached.
    pub uncached: f64,
    /// The same under each cache of [`CACHES`] (input-token equivalents).
    pub cached: Vec<f64>,
    /// `uncached` as a share of all-tools'.
    pub uncached_share: f64,
    /// Each of `cached` as a share of all-tools' under the same cache.
    pub cached_share: Vec<f64>,
    /// The bill under the first cache of [`CACHES`] with light traffic (no
    /// other task warmed the shared prefix), as a share of all-tools' alike.
    pub light_traffic_share: f64,
    /// Mean extra round trips per task.
    pub extra_round_trips: f64,
    /// Share of tasks done with no extra round trip.
    pub no_extra_round_trip: f64,
    /// Share of tasks where every gold tool became visible, each prompt
    /// within the context window.
    pub done: f64,
    /// Every task's prompts fit in the context window
    /// ([`Evaluation::context_window`]).
    pub fits: bool,
    /// Share of tasks one of whose prompts passes the context window: they
    /// are not done.
    pub over_window: f64,
    /// Tokens of the largest prompt any task sends.
    pub largest_prompt: usize,
    /// This row is its job's default on this catalog, as chosen on the
    /// catalogs it is not reported on (an `auto` row).
    #[serde(rename = "default")]
    pub default: bool,
    /// For an `auto` row: what it sends on this catalog, `all_tools` or
    /// the job's deferred policy.
    pub sends: Option<String>,
    /// What the row varies that no host setting chooses (a listing form
    /// the hosts do not choose for the catalog, `names listing`; the query
    /// a model sends, `keyword query`): a comparison, never chosen as a
    /// job's policy.
    pub variant: Option<String>,
}

/// One job's default as chosen for one catalog.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct JobDefault {
    /// The job.
    pub job: Job,
    /// The policy it defers to above the threshold.
    pub deferred: String,
    /// Where that policy's loaded schemas go.
    pub placement: Option<Placement>,
    /// The share of the context window below which every tool is sent.
    pub threshold_share: f64,
    /// That share in tokens.
    pub threshold_tokens: usize,
    /// This catalog's schemas are under the threshold: every tool is sent.
    pub sends_all_tools: bool,
    /// The catalogs the choice was made on.
    pub chosen_on: Vec<String>,
}
