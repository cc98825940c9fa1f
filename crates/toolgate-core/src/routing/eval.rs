//! Reproducible routing evaluation on the normalized dataset layout
//! (`tools.jsonl`, `groups.jsonl`, `queries.jsonl`): several visibility
//! policies side by side, on the same queries, with the same token counter.
//!
//! The router's confidence model is fit on the tuning part of the queries and
//! every figure is measured on the other part: the `dev` split where the
//! dataset has one, else a stable 30% of the queries (by conversation, so
//! turns of one conversation stay together).

use std::collections::{HashMap, HashSet};
use std::path::Path;
use std::time::Instant;

use serde::{Deserialize, Serialize};

use crate::catalog::Catalog;
use crate::import::import_jsonl;
use crate::name::GroupId;
use crate::prompt::tool_groups_section;
use crate::routing::bm25::Bm25;
use crate::routing::router::{
    Confidence, Labelled, Router, Tier, Visible, fit_per_group, fit_temperature, query_terms,
};
use crate::routing::taxonomy::ConfidenceKind;
use crate::routing::taxonomy::RoutingConfig;
use crate::routing::text::terms;
use crate::tokens::TokenCounter;

/// A dataset: its catalog and its labelled queries.
#[derive(Debug)]
pub struct Dataset {
    /// The directory name.
    pub name: String,
    /// Every tool and group.
    pub catalog: Catalog,
    /// The queries, in file order.
    pub queries: Vec<Query>,
    /// How the queries were split.
    pub split_rule: String,
    /// Catalog lines that could not be imported, with the reason.
    pub skipped: Vec<String>,
}

/// One labelled user turn.
#[derive(Clone, Debug)]
pub struct Query {
    /// Its id.
    pub id: String,
    /// The user's text.
    pub text: String,
    /// Earlier turns of the same conversation, oldest first.
    pub context: Vec<String>,
    /// Tools it needs.
    pub gold_tools: Vec<String>,
    /// Groups it needs.
    pub gold_groups: Vec<GroupId>,
    /// In the tuning part (else the reported part).
    pub tune: bool,
    /// Position in [`Dataset::queries`].
    pub index: usize,
}

/// Embeddings for the semantic variant of the router: one vector per
/// catalog group (in catalog order) and one per query (in dataset order).
#[derive(Clone, Debug)]
pub struct SemanticInputs {
    /// Group vectors.
    pub groups: Vec<Vec<f32>>,
    /// Query vectors.
    pub queries: Vec<Vec<f32>>,
    /// Semantic share of the blended score.
    pub weight: f64,
    /// What produced them (shown in the policy name).
    pub model: String,
}

#[derive(Deserialize)]
struct RawQuery {
    id: serde_json::Value,
    query: String,
    #[serde(default)]
    tools: Vec<String>,
    #[serde(default)]
    groups: Vec<String>,
    #[serde(default)]
    split: Option<String>,
    #[serde(default)]
    conversation_id: Option<String>,
    #[serde(default)]
    turn: Option<usize>,
}

/// Why a dataset could not be evaluated.
#[derive(Debug, thiserror::Error)]
#[error("{path}: {reason}")]
pub struct EvalError {
    /// The file.
    pub path: String,
    /// What was wrong.
    pub reason: String,
}

impl Dataset {
    /// Loads `dir/tools.jsonl` (with `groups.jsonl`) and `dir/queries.jsonl`.
    pub fn load(dir: &Path) -> Result<Self, EvalError> {
        let error = |path: &Path, reason: String| EvalError {
            path: path.display().to_string(),
            reason,
        };
        let mut catalog = Catalog::new();
        let tools = dir.join("tools.jsonl");
        let report =
            import_jsonl(&mut catalog, &tools).map_err(|e| error(&tools, e.to_string()))?;
        let path = dir.join("queries.jsonl");
        let text = std::fs::read_to_string(&path).map_err(|e| error(&path, e.to_string()))?;
        let mut raw = Vec::new();
        for (number, line) in text
            .lines()
            .enumerate()
            .filter(|(_, l)| !l.trim().is_empty())
        {
            let query: RawQuery = serde_json::from_str(line)
                .map_err(|e| error(&path, format!("line {}: {e}", number + 1)))?;
            raw.push(query);
        }
        let has_dev = raw.iter().any(|q| q.split.as_deref() == Some("dev"));
        let split_rule = if has_dev {
            "tuned on the `dev` split, reported on the others".to_owned()
        } else {
            "tuned on 30% of the conversations (stable hash of the id), reported on the other 70%"
                .to_owned()
        };
        let mut turns: HashMap<String, Vec<(usize, String)>> = HashMap::new();
        for query in &raw {
            if let (Some(conversation), Some(turn)) = (&query.conversation_id, query.turn) {
                turns
                    .entry(conversation.clone())
                    .or_default()
                    .push((turn, query.query.clone()));
            }
        }
        let mut queries = Vec::new();
        for query in raw {
            let id = match &query.id {
                serde_json::Value::String(s) => s.clone(),
                other => other.to_string(),
            };
            let context = match (&query.conversation_id, query.turn) {
                (Some(conversation), Some(turn)) => {
                    let mut earlier: Vec<&(usize, String)> = turns[conversation]
                        .iter()
                        .filter(|(t, _)| *t < turn)
                        .collect();
                    earlier.sort_by_key(|(t, _)| *t);
                    earlier.into_iter().map(|(_, text)| text.clone()).collect()
                }
                _ => Vec::new(),
            };
            let tune = if has_dev {
                query.split.as_deref() == Some("dev")
            } else {
                stable_hash(query.conversation_id.as_deref().unwrap_or(&id)) % 10 < 3
            };
            let gold_groups = query
                .groups
                .iter()
                .filter_map(|g| GroupId::new(g.as_str()).ok())
                .filter(|g| catalog.group(g.as_str()).is_some())
                .collect();
            queries.push(Query {
                index: queries.len(),
                id,
                text: query.query,
                context,
                gold_tools: query.tools,
                gold_groups,
                tune,
            });
        }
        let name = dir.file_name().map_or_else(
            || dir.display().to_string(),
            |n| n.to_string_lossy().into_owned(),
        );
        Ok(Self {
            name,
            catalog,
            queries,
            split_rule,
            skipped: report.errors.iter().map(ToString::to_string).collect(),
        })
    }
}

/// FNV-1a: stable across runs and platforms.
fn stable_hash(text: &str) -> u64 {
    text.bytes().fold(0xcbf2_9ce4_8422_2325, |hash, byte| {
        (hash ^ u64::from(byte)).wrapping_mul(0x0100_0000_01b3)
    })
}

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
    /// One entry per policy.
    pub policies: Vec<PolicyReport>,
    /// The router's calibration on the reported queries.
    pub calibration: Vec<Band>,
    /// BM25 over tools at several k.
    pub bm25_tools_curve: Vec<CurvePoint>,
    /// BM25 over groups at several k.
    pub bm25_groups_curve: Vec<CurvePoint>,
}

/// k values of the top-k curves.
const TOOL_KS: [usize; 11] = [1, 3, 5, 10, 20, 30, 50, 100, 200, 300, 500];
const GROUP_KS: [usize; 4] = [1, 2, 3, 5];

/// What one query lets the model see under a policy.
struct Seen {
    groups: HashSet<GroupId>,
    tools: HashSet<String>,
    tokens: usize,
    micros: f64,
    /// The whole catalog was shown.
    all: bool,
}

/// Evaluates every policy on `dataset`. `progress(done, total)` is called as
/// queries are processed.
pub fn evaluate(
    dataset: &Dataset,
    counter: &TokenCounter,
    config: &RoutingConfig,
    semantic: Option<&SemanticInputs>,
    progress: &mut dyn FnMut(usize, usize),
) -> Result<Evaluation, crate::routing::taxonomy::RoutingError> {
    let catalog = &dataset.catalog;
    let taxonomy = config.validate(catalog)?;
    let tune: Vec<&Query> = dataset.queries.iter().filter(|q| q.tune).collect();
    let report: Vec<&Query> = dataset
        .queries
        .iter()
        .filter(|q| !q.tune && !q.gold_groups.is_empty())
        .collect();
    let costs = Costs::new(catalog, counter);
    let tuned: Vec<&Query> = tune
        .iter()
        .copied()
        .filter(|q| !q.gold_groups.is_empty())
        .collect();

    let lexical = |router: &Router, query: &Query| router.scores(&query.text, &context(query));
    let router = tune_router(catalog, &taxonomy, config, &costs, &tuned, &lexical);
    let confidence_model = describe(router.confidence());

    let tool_index = ToolIndex::new(catalog);
    let total = report.len() * 2;
    let mut done = 0;
    let (router_seen, decisions) =
        run_router(&router, catalog, &costs, &report, &lexical, &mut |_, _| {
            done += 1;
            progress(done, total);
        });

    let mut tools_seen: Vec<Vec<Seen>> = TOOL_KS.iter().map(|_| Vec::new()).collect();
    let mut groups_seen: Vec<Vec<Seen>> = GROUP_KS.iter().map(|_| Vec::new()).collect();
    for query in &report {
        let started = Instant::now();
        let ranked_tools = tool_index.rank(&query.text, &context(query));
        let tool_micros = started.elapsed().as_secs_f64() * 1e6;
        for (slot, k) in TOOL_KS.iter().enumerate() {
            let names: Vec<&str> = ranked_tools
                .iter()
                .take(*k)
                .map(|i| tool_index.names[*i].as_str())
                .collect();
            let mut seen = costs.tools_seen(catalog, &names);
            seen.micros = tool_micros;
            tools_seen[slot].push(seen);
        }
        let started = Instant::now();
        let scores = router.scores(&query.text, &context(query));
        let group_micros = started.elapsed().as_secs_f64() * 1e6;
        let mut order: Vec<usize> = (0..scores.len()).collect();
        order.sort_by(|a, b| scores[*b].total_cmp(&scores[*a]));
        for (slot, k) in GROUP_KS.iter().enumerate() {
            let groups: Vec<GroupId> = order
                .iter()
                .take(*k)
                .filter(|i| scores[**i] > 0.0)
                .map(|i| router.groups()[*i].clone())
                .collect();
            let mut seen = costs.groups_seen(catalog, &groups, false);
            seen.micros = group_micros;
            groups_seen[slot].push(seen);
        }
        done += 1;
        progress(done, total);
    }

    let all = costs.all_tools as f64;
    let summarize = |policy: String, seen: &[Seen]| summary(policy, &report, seen, all);
    let all_seen: Vec<Seen> = report
        .iter()
        .map(|_| Seen {
            groups: catalog.groups().map(|g| g.id.clone()).collect(),
            tools: catalog
                .tools()
                .map(|t| t.definition.name.to_string())
                .collect(),
            tokens: costs.all_tools,
            micros: 0.0,
            all: true,
        })
        .collect();
    let core_seen: Vec<Seen> = report
        .iter()
        .map(|_| Seen {
            groups: HashSet::new(),
            tools: HashSet::new(),
            tokens: costs.core_and_listing,
            micros: 0.0,
            all: false,
        })
        .collect();

    let router_report = router_figures(
        summarize("tiered_router".to_owned(), &router_seen),
        &decisions,
        &router_seen,
        &report,
        all,
    );
    let high: Vec<usize> = (0..decisions.len())
        .filter(|i| decisions[*i].tier == Tier::High)
        .collect();

    // The tool-search baseline at the router's token budget: the smallest k
    // that spends at least as much.
    let tools_curve: Vec<CurvePoint> = TOOL_KS
        .iter()
        .zip(&tools_seen)
        .map(|(k, seen)| curve_point(*k, &summarize(String::new(), seen)))
        .collect();
    let groups_curve: Vec<CurvePoint> = GROUP_KS
        .iter()
        .zip(&groups_seen)
        .map(|(k, seen)| curve_point(*k, &summarize(String::new(), seen)))
        .collect();
    let equal = tools_curve
        .iter()
        .position(|p| p.token_fraction >= router_report.token_fraction)
        .unwrap_or(TOOL_KS.len() - 1);
    // The same decisions with every routed group sent as one polymorphic
    // tool: the recall is the router's, the tokens are fewer.
    let polymorphic_seen: Vec<Seen> = router_seen.iter().map(|s| costs.polymorphic(s)).collect();
    let mut polymorphic_report =
        summarize("tiered_router(polymorphic)".to_owned(), &polymorphic_seen);
    polymorphic_report.tiers = router_report.tiers;
    polymorphic_report.escalation_rate = router_report.escalation_rate;
    polymorphic_report.high_tier = router_report.high_tier.map(|figures| TierFigures {
        token_fraction: mean(
            high.iter()
                .map(|i| polymorphic_seen[*i].tokens as f64 / all),
        ),
        ..figures
    });
    let equal_polymorphic = tools_curve
        .iter()
        .position(|p| p.token_fraction >= polymorphic_report.token_fraction)
        .unwrap_or(TOOL_KS.len() - 1);
    let mut policies = vec![
        summarize("all_tools".to_owned(), &all_seen),
        summarize("core_listing".to_owned(), &core_seen),
        router_report,
        polymorphic_report,
    ];
    if let Some(semantic) = semantic {
        let blended = |router: &Router, query: &Query| {
            let cosine = crate::routing::semantic::cosine_scores(
                &semantic.queries[query.index],
                &semantic.groups,
            );
            crate::routing::semantic::blend(
                &router.scores(&query.text, &context(query)),
                &cosine,
                semantic.weight,
            )
        };
        let router = tune_router(catalog, &taxonomy, config, &costs, &tuned, &blended);
        let (seen, decisions) =
            run_router(&router, catalog, &costs, &report, &blended, &mut |_, _| {});
        let figures = router_figures(
            summarize(format!("tiered_router+{}", semantic.model), &seen),
            &decisions,
            &seen,
            &report,
            all,
        );
        policies.push(figures);
    }
    if taxonomy.confidence == ConfidenceKind::PerGroup && config.per_group.is_none() {
        // The one-softmax model, tuned the same way, for comparison.
        let mut softmax = taxonomy;
        softmax.confidence = ConfidenceKind::Softmax;
        softmax.max_groups = config
            .max_groups
            .unwrap_or_else(|| ConfidenceKind::Softmax.default_max_groups());
        let router = tune_router(catalog, &softmax, config, &costs, &tuned, &lexical);
        let (seen, decisions) =
            run_router(&router, catalog, &costs, &report, &lexical, &mut |_, _| {});
        policies.push(router_figures(
            summarize("tiered_router(softmax)".to_owned(), &seen),
            &decisions,
            &seen,
            &report,
            all,
        ));
    }
    policies.extend([summarize(
        format!("bm25_tools@{}", TOOL_KS[equal]),
        &tools_seen[equal],
    )]);
    if equal_polymorphic != equal {
        policies.push(summarize(
            format!("bm25_tools@{}", TOOL_KS[equal_polymorphic]),
            &tools_seen[equal_polymorphic],
        ));
    }
    for (slot, k) in GROUP_KS.iter().enumerate().take(3) {
        policies.push(summarize(format!("bm25_groups@{k}"), &groups_seen[slot]));
    }

    let calibration = bands(&decisions, &report);
    Ok(Evaluation {
        dataset: dataset.name.clone(),
        tools: catalog
            .tools()
            .filter(|t| *t.origin != crate::origin::Origin::MetaTool)
            .count(),
        groups: catalog.groups().count(),
        all_tools_tokens: costs.all_tools,
        tune_queries: tune.len(),
        max_groups: router.taxonomy().max_groups,
        report_queries: report.len(),
        split_rule: dataset.split_rule.clone(),
        confidence_model,
        policies,
        calibration,
        bm25_tools_curve: tools_curve,
        bm25_groups_curve: groups_curve,
    })
}

/// A router's policy figures with its tier mix, escalation rate and
/// high-tier figures.
fn router_figures(
    mut figures: PolicyReport,
    decisions: &[crate::routing::router::Decision],
    seen: &[Seen],
    queries: &[&Query],
    all_tokens: f64,
) -> PolicyReport {
    let share = |tier| {
        decisions.iter().filter(|d| d.tier == tier).count() as f64 / decisions.len().max(1) as f64
    };
    figures.tiers = Some(TierMix {
        high: share(Tier::High),
        medium: share(Tier::Medium),
        low: share(Tier::Low),
    });
    let covered = |i: usize| {
        queries[i]
            .gold_groups
            .iter()
            .all(|g| seen[i].groups.contains(g))
    };
    let restricted: Vec<usize> = (0..decisions.len())
        .filter(|i| decisions[*i].tier != Tier::Low)
        .collect();
    figures.escalation_rate = Some(
        restricted.iter().filter(|i| !covered(**i)).count() as f64 / restricted.len().max(1) as f64,
    );
    let high: Vec<usize> = (0..decisions.len())
        .filter(|i| decisions[*i].tier == Tier::High)
        .collect();
    figures.high_tier = Some(TierFigures {
        queries: high.len(),
        group_recall: mean(
            high.iter()
                .map(|i| recall(&queries[*i].gold_groups, |g| seen[*i].groups.contains(g))),
        ),
        token_fraction: mean(high.iter().map(|i| seen[*i].tokens as f64 / all_tokens)),
    });
    figures
}

/// A confidence model as the report names it.
fn describe(confidence: Confidence) -> String {
    match confidence {
        Confidence::PerGroup(model) => format!(
            "per-group (weight {:.2}, bias {:.2})",
            model.weight, model.bias
        ),
        Confidence::Softmax { temperature } => format!("softmax (temperature {temperature})"),
    }
}

/// Group caps tried when tuning.
const MAX_GROUPS_TUNED: usize = 5;

/// How a policy scores a query's groups.
type ScoresOf<'a> = dyn Fn(&Router, &Query) -> Vec<f64> + 'a;

/// Tunes what the configuration leaves open, on the tuning part only: the
/// temperature (calibration), and the group cap by recall minus token share.
fn tune_router(
    catalog: &Catalog,
    taxonomy: &crate::routing::taxonomy::Taxonomy,
    config: &RoutingConfig,
    costs: &Costs,
    tuned: &[&Query],
    scores_of: &ScoresOf<'_>,
) -> Router {
    if taxonomy.confidence == ConfidenceKind::PerGroup {
        // The cap is a ceiling here (the thresholds decide how many groups a
        // turn gets); only the model is fitted.
        let router = Router::lexical(catalog, taxonomy.clone());
        let model = match config.per_group {
            Some(model) => model,
            None => fit_per_group(&labelled(&router, tuned, scores_of)),
        };
        return router.with_confidence(Confidence::PerGroup(model));
    }
    let caps: Vec<usize> = match config.max_groups {
        Some(cap) => vec![cap],
        None => (1..=MAX_GROUPS_TUNED).collect(),
    };
    let mut best: Option<(f64, Router)> = None;
    for cap in caps {
        let mut taxonomy = taxonomy.clone();
        taxonomy.max_groups = cap;
        let router = Router::lexical(catalog, taxonomy);
        let temperature = match config.temperature {
            Some(temperature) => temperature,
            None => fit_temperature(&router, &labelled(&router, tuned, scores_of)),
        };
        let router = router.with_temperature(temperature);
        let (seen, _) = run_router(&router, catalog, costs, tuned, scores_of, &mut |_, _| {});
        let figures = summary(String::new(), tuned, &seen, costs.all_tools as f64);
        let objective = figures.group_recall - figures.token_fraction;
        if best.as_ref().is_none_or(|(b, _)| objective > *b) {
            best = Some((objective, router));
        }
    }
    match best {
        Some((_, router)) => router,
        None => Router::lexical(catalog, taxonomy.clone()),
    }
}

/// Scores and gold groups of labelled queries, for fitting.
fn labelled(router: &Router, queries: &[&Query], scores_of: &ScoresOf<'_>) -> Vec<Labelled> {
    queries
        .iter()
        .map(|q| Labelled {
            scores: scores_of(router, q),
            gold: q
                .gold_groups
                .iter()
                .filter_map(|g| router.groups().iter().position(|r| r == g))
                .collect(),
        })
        .collect()
}

/// What the router shows for each query, and its decisions.
fn run_router(
    router: &Router,
    catalog: &Catalog,
    costs: &Costs,
    queries: &[&Query],
    scores_of: &ScoresOf<'_>,
    progress: &mut dyn FnMut(usize, usize),
) -> (Vec<Seen>, Vec<crate::routing::router::Decision>) {
    let mut seen_all = Vec::new();
    let mut decisions = Vec::new();
    for (index, query) in queries.iter().enumerate() {
        let started = Instant::now();
        let decision = router.decide(&scores_of(router, query));
        let micros = started.elapsed().as_secs_f64() * 1e6;
        let groups: Vec<GroupId> = match &decision.visible {
            Visible::Groups(groups) => groups.clone(),
            Visible::Catalog => catalog.groups().map(|g| g.id.clone()).collect(),
        };
        let mut seen = costs.groups_seen(catalog, &groups, decision.tier == Tier::Low);
        seen.micros = micros;
        seen_all.push(seen);
        decisions.push(decision);
        progress(index + 1, queries.len());
    }
    (seen_all, decisions)
}

fn context(query: &Query) -> Vec<&str> {
    query.context.iter().map(String::as_str).collect()
}

fn curve_point(k: usize, report: &PolicyReport) -> CurvePoint {
    CurvePoint {
        k,
        group_recall: report.group_recall,
        tool_recall: report.tool_recall,
        token_fraction: report.token_fraction,
    }
}

fn summary(policy: String, queries: &[&Query], seen: &[Seen], all_tokens: f64) -> PolicyReport {
    let mut micros: Vec<f64> = seen.iter().map(|s| s.micros).collect();
    micros.sort_by(f64::total_cmp);
    let percentile = |p: f64| {
        micros
            .get(((micros.len() as f64 - 1.0) * p).round() as usize)
            .copied()
            .unwrap_or(0.0)
    };
    let mean_tokens = mean(seen.iter().map(|s| s.tokens as f64));
    PolicyReport {
        policy,
        group_recall: mean(
            queries
                .iter()
                .zip(seen)
                .map(|(q, s)| recall(&q.gold_groups, |g| s.groups.contains(g))),
        ),
        tool_recall: mean(
            queries
                .iter()
                .zip(seen)
                .filter(|(q, _)| !q.gold_tools.is_empty())
                .map(|(q, s)| recall(&q.gold_tools, |t| s.tools.contains(t))),
        ),
        mean_visible_tokens: mean_tokens,
        token_fraction: mean_tokens / all_tokens.max(1.0),
        p50_decision_us: percentile(0.5),
        p95_decision_us: percentile(0.95),
        tiers: None,
        escalation_rate: None,
        high_tier: None,
    }
}

fn recall<T>(gold: &[T], visible: impl Fn(&T) -> bool) -> f64 {
    if gold.is_empty() {
        return 1.0;
    }
    gold.iter().filter(|g| visible(g)).count() as f64 / gold.len() as f64
}

fn mean(values: impl Iterator<Item = f64>) -> f64 {
    let (sum, count) = values.fold((0.0, 0usize), |(s, c), v| (s + v, c + 1));
    if count == 0 { 0.0 } else { sum / count as f64 }
}

fn bands(decisions: &[crate::routing::router::Decision], queries: &[&Query]) -> Vec<Band> {
    let edges = [0.0, 0.5, 0.6, 0.7, 0.8, 0.9, 0.95, 1.0];
    edges
        .windows(2)
        .map(|edge| {
            let (from, to) = (edge[0], edge[1]);
            let inside: Vec<usize> = (0..decisions.len())
                .filter(|i| {
                    let c = decisions[*i].confidence;
                    c >= from && (c < to || (to >= 1.0 && c <= 1.0))
                })
                .collect();
            Band {
                from,
                to,
                queries: inside.len(),
                mean_confidence: mean(inside.iter().map(|i| decisions[*i].confidence)),
                observed: mean(inside.iter().map(|i| {
                    let covered = queries[*i]
                        .gold_groups
                        .iter()
                        .all(|g| decisions[*i].routed.contains(g));
                    if covered { 1.0 } else { 0.0 }
                })),
            }
        })
        .collect()
}

/// Token costs, counted once per tool.
struct Costs {
    per_tool: HashMap<String, usize>,
    per_group: HashMap<GroupId, usize>,
    /// Each group's tokens as one polymorphic tool (as `[groups."*"]`
    /// exposes it: groups of one tool, or that cannot be one tool, as tools).
    per_group_polymorphic: HashMap<GroupId, usize>,
    all_tools: usize,
    all_polymorphic: usize,
    core_and_listing: usize,
}

impl Costs {
    fn new(catalog: &Catalog, counter: &TokenCounter) -> Self {
        let per_tool: HashMap<String, usize> = catalog
            .tools()
            .map(|t| (t.definition.name.to_string(), counter.tool(t.definition)))
            .collect();
        let per_group: HashMap<GroupId, usize> = catalog
            .groups()
            .map(|g| {
                let tokens = catalog
                    .group_tools(g.id.as_str())
                    .map(|t| per_tool[t.name.as_str()])
                    .sum();
                (g.id.clone(), tokens)
            })
            .collect();
        let all_tools = catalog
            .tools()
            .filter(|t| *t.origin != crate::origin::Origin::MetaTool)
            .map(|t| per_tool[t.definition.name.as_str()])
            .sum();
        let core_and_listing = counter.tools(catalog.core_tools())
            + tool_groups_section(catalog).map_or(0, |s| counter.count(&s));
        let per_group_polymorphic: HashMap<GroupId, usize> = catalog
            .groups()
            .map(|g| {
                let tokens =
                    polymorphic_tokens(catalog, counter, g).unwrap_or_else(|| per_group[&g.id]);
                (g.id.clone(), tokens)
            })
            .collect();
        let all_polymorphic = per_group_polymorphic.values().sum::<usize>()
            + catalog
                .tools()
                .filter(|t| t.group.is_none() && *t.origin != crate::origin::Origin::MetaTool)
                .map(|t| per_tool[t.definition.name.as_str()])
                .sum::<usize>();
        Self {
            per_tool,
            per_group,
            per_group_polymorphic,
            all_tools,
            all_polymorphic,
            core_and_listing,
        }
    }

    /// What `seen` costs when every group is sent as one polymorphic tool.
    fn polymorphic(&self, seen: &Seen) -> Seen {
        let tokens = if seen.all {
            self.all_polymorphic
        } else {
            self.core_and_listing
                + seen
                    .groups
                    .iter()
                    .map(|g| self.per_group_polymorphic[g])
                    .sum::<usize>()
        };
        Seen {
            groups: seen.groups.clone(),
            tools: seen.tools.clone(),
            tokens,
            micros: seen.micros,
            all: seen.all,
        }
    }

    /// Core tools, the listing and `groups`; or every tool when `all`.
    fn groups_seen(&self, catalog: &Catalog, groups: &[GroupId], all: bool) -> Seen {
        if all {
            return Seen {
                groups: catalog.groups().map(|g| g.id.clone()).collect(),
                tools: self.per_tool.keys().cloned().collect(),
                tokens: self.all_tools,
                micros: 0.0,
                all: true,
            };
        }
        let tools = groups
            .iter()
            .flat_map(|g| catalog.group_tools(g.as_str()).map(|t| t.name.to_string()))
            .collect();
        Seen {
            groups: groups.iter().cloned().collect(),
            tools,
            tokens: self.core_and_listing + groups.iter().map(|g| self.per_group[g]).sum::<usize>(),
            micros: 0.0,
            all: false,
        }
    }

    /// The named tools alone (how hosted tool search works: no listing).
    fn tools_seen(&self, catalog: &Catalog, names: &[&str]) -> Seen {
        Seen {
            groups: names
                .iter()
                .filter_map(|n| catalog.group_of(n).cloned())
                .collect(),
            tools: names.iter().map(|n| (*n).to_owned()).collect(),
            tokens: names.iter().map(|n| self.per_tool[*n]).sum(),
            micros: 0.0,
            all: false,
        }
    }
}

/// A group's tokens as one polymorphic tool named after it (its id made a
/// valid tool name); `None` for a group of one tool or one that cannot be a
/// polymorphic tool.
fn polymorphic_tokens(
    catalog: &Catalog,
    counter: &TokenCounter,
    group: &crate::group::ToolGroup,
) -> Option<usize> {
    let members: Vec<&crate::tool::ToolDefinition> =
        catalog.group_tools(group.id.as_str()).collect();
    if members.len() < 2 {
        return None;
    }
    let name: String = group
        .id
        .as_str()
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '/' | '-') {
                c
            } else {
                '_'
            }
        })
        .take(crate::name::MAX_TOOL_NAME_LEN)
        .collect();
    let name = crate::name::ToolName::new(name).ok()?;
    let (tool, _) = crate::polymorphic::PolymorphicTool::consolidate(
        name,
        group.description.clone(),
        &members,
        group.id.as_str(),
        &crate::polymorphic::ActionPolicy::default(),
    )
    .ok()?;
    Some(counter.tool(tool.definition()))
}

/// BM25 over every grouped tool's name and description.
struct ToolIndex {
    names: Vec<String>,
    index: Bm25,
}

impl ToolIndex {
    fn new(catalog: &Catalog) -> Self {
        let mut names = Vec::new();
        let mut documents = Vec::new();
        for tool in catalog.tools().filter(|t| t.group.is_some()) {
            names.push(tool.definition.name.to_string());
            let mut text: Vec<(String, f64)> = terms(tool.definition.name.as_str())
                .into_iter()
                .map(|t| (t, 2.0))
                .collect();
            text.extend(
                terms(&tool.definition.description)
                    .into_iter()
                    .map(|t| (t, 1.0)),
            );
            documents.push(text);
        }
        Self {
            names,
            index: Bm25::new(documents),
        }
    }

    /// Tool indexes, best first.
    fn rank(&self, query: &str, context: &[&str]) -> Vec<usize> {
        let scores = self.index.scores(&query_terms(query, context));
        let mut order: Vec<usize> = (0..scores.len()).filter(|i| scores[*i] > 0.0).collect();
        order.sort_by(|a, b| scores[*b].total_cmp(&scores[*a]));
        order
    }
}
