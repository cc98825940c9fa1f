//! Tools first, then groups: the policies built on each tool's own score.
//!
//! Each query's raw evidence (BM25 of every tool and group document, and
//! the cosine of every tool when there are vectors) is computed once
//! ([`Prepared`]); the fusion methods, the tool-search baselines and the
//! router that loads the best tools of the groups it routes are then all
//! combinations of the same numbers, so they differ only in how they use
//! them.

use std::collections::HashMap;
use std::time::Instant;

use toolgate_core::routing::{
    Confidence, CosineFloor, DEFAULT_MAX_TOKEN_SHARE, Decision, Evidence, Fusion, GroupScorer,
    HybridScorer, IdFinders, Isotonic, Labelled, LearnedRecovery, OnlineCalibration, PerGroup,
    ProbeNeeds, RawEvidence, Router, RoutingConfig, SelfTest, Taxonomy, Tier, Visible,
    calibration_samples, fit_per_group_pooled, ranking,
};
use toolgate_core::{Catalog, GroupId, TokenCounter, ToolName};

use crate::costs::{Costs, Seen};
use crate::dataset::{Dataset, Query};
use crate::error::Result;
use crate::figures::held;
pub(crate) use crate::precomputed::Vectors;
use crate::report::FittedFusion;
use crate::task_cost::{RouterCost, RouterCosting};

/// Tools each routed group arrives with, tried (0: the whole group).
pub(crate) const TOOLS_PER_GROUP: [usize; 4] = [0, 1, 2, 3];

/// Most groups one turn routes: the per-group router's default
/// (`ConfidenceKind::default_max_groups`), what its confidence is fitted up
/// to. It was chosen among 20 and 50 here until every fold chose 50; 100,
/// tried beside 50 as well, raised no catalog's recall left out (on the
/// catalog of real MCP servers, where 50 bound a fifth of the turns, the
/// extra groups held no missed gold group) and changed the fusion chosen
/// for RestBench for the worse. The token budget
/// ([`DEFAULT_MAX_TOKEN_SHARE`], the same for every setting) bounds what a
/// turn costs.
pub(crate) const MAX_GROUPS: usize = 50;

/// Fusion methods measured.
pub(crate) fn fusions(semantic: bool) -> Vec<Fusion> {
    if semantic {
        vec![
            Fusion::Lexical,
            Fusion::Semantic,
            Fusion::Rrf { k: 60.0 },
            Fusion::Blend {
                weight: 0.5,
                floor: CosineFloor::Lowest,
            },
            Fusion::Blend {
                weight: 0.5,
                floor: CosineFloor::Median,
            },
        ]
    } else {
        vec![Fusion::Lexical]
    }
}

/// A dataset ready for the tool-first policies.
pub(crate) struct Prepared<'d> {
    pub(crate) dataset: &'d Dataset,
    pub(crate) taxonomy: Taxonomy,
    scorer: HybridScorer,
    /// Raw evidence per query (by [`Query::index`]); `None` for queries
    /// with no gold group, which no policy is measured on.
    raw: Vec<Option<RawEvidence>>,
    /// Microseconds the raw evidence took, per query (BM25 and cosines;
    /// the query's embedding, looked up, is not included).
    raw_micros: Vec<f64>,
    /// The self-test's probes, raw, with what each needs.
    probes: Vec<(RawEvidence, ProbeNeeds)>,
    /// Whether tool vectors were given.
    pub(crate) semantic: bool,
    /// Token costs of the catalog.
    pub(crate) costs: Costs,
    /// The catalog's id finders, for the settings that show them.
    id_finders: std::sync::Arc<IdFinders>,
    /// The vectors given, by text, for code that embeds as the gateway does.
    pub(crate) embeddings: Option<std::sync::Arc<crate::precomputed::Precomputed>>,
}

impl<'d> Prepared<'d> {
    /// `vectors`: one per tool in [`toolgate_core::routing::tool_texts`]
    /// order and one per query in dataset order.
    pub(crate) fn new(
        dataset: &'d Dataset,
        config: &RoutingConfig,
        vectors: Option<Vectors<'_>>,
        counter: &TokenCounter,
    ) -> Result<Self> {
        let taxonomy = config.validate(&dataset.catalog)?;
        let embeddings = vectors.map(|vectors| {
            std::sync::Arc::new(crate::precomputed::Precomputed::new(dataset, vectors))
        });
        // The vectors looked up as the router would embed: the turn's
        // cosines come with its raw evidence, and the self-test's probes
        // score by the tools' own.
        let scorer = HybridScorer::new(
            &dataset.catalog,
            &taxonomy,
            embeddings
                .clone()
                .map(|e| e as std::sync::Arc<dyn toolgate_core::routing::Embeddings>),
            Fusion::Lexical,
        );
        let mut raw = Vec::with_capacity(dataset.queries.len());
        let mut raw_micros = Vec::with_capacity(dataset.queries.len());
        for query in &dataset.queries {
            if query.gold_groups.is_empty() {
                raw.push(None);
                raw_micros.push(0.0);
                continue;
            }
            let started = Instant::now();
            let evidence = scorer.raw(&query.text, &query.earlier_turns());
            raw_micros.push(started.elapsed().as_secs_f64() * 1e6);
            raw.push(Some(evidence));
        }
        let id_finders = std::sync::Arc::new(IdFinders::new(&dataset.catalog));
        let probes = scorer.raw_probes(&dataset.catalog, &id_finders);
        Ok(Self {
            dataset,
            taxonomy,
            scorer,
            raw,
            raw_micros,
            probes,
            semantic: vectors.is_some(),
            costs: Costs::new(&dataset.catalog, counter),
            id_finders,
            embeddings,
        })
    }

    fn catalog(&self) -> &Catalog {
        &self.dataset.catalog
    }

    /// Labelled group scores under `fusion`, for fitting.
    pub(crate) fn labelled(&self, fusion: Fusion, queries: &[&Query]) -> Vec<Labelled> {
        let groups = self.scorer.groups();
        queries
            .iter()
            .filter_map(|q| {
                let raw = self.raw[q.index].as_ref()?;
                Some(Labelled {
                    scores: self.scorer.combine_with(fusion, raw).groups,
                    gold: q
                        .gold_groups
                        .iter()
                        .filter_map(|g| groups.iter().position(|r| r == g))
                        .collect(),
                })
            })
            .collect()
    }

    /// Every query with a gold group.
    pub(crate) fn labelled_all(&self, fusion: Fusion) -> Vec<Labelled> {
        let queries: Vec<&Query> = self
            .dataset
            .queries
            .iter()
            .filter(|q| !q.gold_groups.is_empty())
            .collect();
        self.labelled(fusion, &queries)
    }

    /// The `k` best tools by `fusion`, for each k of `ks`: one list per k.
    pub(crate) fn tool_search(
        &self,
        costs: &Costs,
        fusion: Fusion,
        ks: &[usize],
        queries: &[&Query],
    ) -> Vec<Vec<Seen>> {
        let names = self.scorer.tool_names();
        let mut per_k: Vec<Vec<Seen>> = ks.iter().map(|_| Vec::new()).collect();
        for query in queries {
            let Some(raw) = self.raw[query.index].as_ref() else {
                continue;
            };
            let started = Instant::now();
            let fused = fusion.fuse(&raw.lexical, raw.semantic.as_deref());
            let order = ranking(&fused);
            let micros = self.raw_micros[query.index] + started.elapsed().as_secs_f64() * 1e6;
            for (slot, k) in ks.iter().enumerate() {
                let shown: Vec<&str> = order.iter().take(*k).map(|i| names[*i].as_str()).collect();
                let mut seen = costs.tools_seen(self.catalog(), &shown);
                seen.micros = micros;
                per_k[slot].push(seen);
            }
        }
        per_k
    }

    /// Every tool by `fusion`, best first, for `query` (none for a query
    /// with no gold group).
    pub(crate) fn tool_ranking(&self, fusion: Fusion, query: &Query) -> Vec<&str> {
        let Some(raw) = self.raw[query.index].as_ref() else {
            return Vec::new();
        };
        let names = self.scorer.tool_names();
        ranking(&fusion.fuse(&raw.lexical, raw.semantic.as_deref()))
            .into_iter()
            .map(|i| names[i].as_str())
            .collect()
    }

    /// The `g` best groups by `fusion` (their best tools' scores), each
    /// with its `m` best tools, for each g of `gs`: one list per g.
    pub(crate) fn group_search(
        &self,
        costs: &Costs,
        fusion: Fusion,
        gs: &[usize],
        m: usize,
        queries: &[&Query],
    ) -> Vec<Vec<Seen>> {
        let groups = self.scorer.groups();
        let mut per_g: Vec<Vec<Seen>> = gs.iter().map(|_| Vec::new()).collect();
        for query in queries {
            let Some(raw) = self.raw[query.index].as_ref() else {
                continue;
            };
            let mut evidence = self.scorer.combine_with(fusion, raw);
            evidence.sort_best_first();
            let order = ranking(&evidence.groups);
            for (slot, g) in gs.iter().enumerate() {
                let shown: Vec<(GroupId, Vec<&str>)> = order
                    .iter()
                    .take(*g)
                    .map(|index| {
                        let group = &groups[*index];
                        let names: Vec<&str> = evidence
                            .tools
                            .iter()
                            .filter(|t| t.group == *group)
                            .take(m)
                            .map(|t| t.tool.as_str())
                            .collect();
                        (group.clone(), names)
                    })
                    .collect();
                per_g[slot].push(costs.partial_seen(&shown));
            }
        }
        per_g
    }

    /// The router with `setting` and `fitted`: what each query saw, and
    /// the decisions.
    pub(crate) fn route(
        &self,
        setting: RouterSetting,
        fitted: &Fitted,
        queries: &[&Query],
    ) -> (Vec<Seen>, Vec<Decision>) {
        self.route_many(&[setting], fitted, queries)
            .pop()
            .unwrap_or_default()
    }

    /// [`Self::route`] for several settings of one fusion method, each
    /// query's evidence combined once for all of them.
    pub(crate) fn route_many(
        &self,
        settings: &[RouterSetting],
        fitted: &Fitted,
        queries: &[&Query],
    ) -> Vec<(Vec<Seen>, Vec<Decision>)> {
        self.route_learning(settings, fitted, queries, false)
    }

    /// [`Self::route`] as a deployment learning from its turns would route
    /// `queries` in order: each query's outcome (whether the groups its
    /// decision relied on held its gold groups, and the gold groups outside
    /// the routed ones) is recorded after its own decision into an
    /// [`OnlineCalibration`] and a [`LearnedRecovery`], as `toolgate chat
    /// --route` records a turn's.
    pub(crate) fn route_learned(
        &self,
        setting: RouterSetting,
        fitted: &Fitted,
        queries: &[&Query],
    ) -> (Vec<Seen>, Vec<Decision>) {
        self.route_learning(&[setting], fitted, queries, true)
            .pop()
            .unwrap_or_default()
    }

    fn route_learning(
        &self,
        settings: &[RouterSetting],
        fitted: &Fitted,
        queries: &[&Query],
        learn: bool,
    ) -> Vec<(Vec<Seen>, Vec<Decision>)> {
        let Some(fusion) = settings.first().map(|s| s.fusion) else {
            return Vec::new();
        };
        debug_assert!(settings.iter().all(|s| s.fusion == fusion));
        let routers: Vec<Router> = settings
            .iter()
            .map(|setting| self.router(*setting, fitted, learn))
            .collect();
        let mut out: Vec<(Vec<Seen>, Vec<Decision>)> =
            settings.iter().map(|_| (Vec::new(), Vec::new())).collect();
        for query in queries {
            let Some(raw) = self.raw[query.index].as_ref() else {
                continue;
            };
            let started = Instant::now();
            let mut evidence = self.scorer.combine_with(fusion, raw);
            evidence.sort_best_first();
            let combined = started.elapsed().as_secs_f64() * 1e6;
            for (router, (seen_all, decisions)) in routers.iter().zip(&mut out) {
                let started = Instant::now();
                let decision = router.decide_with_tools(&evidence);
                let micros =
                    self.raw_micros[query.index] + combined + started.elapsed().as_secs_f64() * 1e6;
                let mut seen = self.seen(&self.costs, &decision);
                seen.micros = micros;
                seen_all.push(seen);
                // A turn that needs no group says nothing, as in a deployment.
                if learn && !query.gold_groups.is_empty() {
                    let missed: Vec<GroupId> = query
                        .gold_groups
                        .iter()
                        .filter(|group| !decision.routed.contains(group))
                        .cloned()
                        .collect();
                    router.record_misses(&missed);
                    router.record_outcome(decision.fitted_confidence, held(&decision, query));
                }
                decisions.push(decision);
            }
        }
        out
    }

    /// What the self-test of the router with `setting` and `fitted` finds.
    pub(crate) fn self_test(&self, setting: RouterSetting, fitted: &Fitted) -> Option<SelfTest> {
        self.router(setting, fitted, false).self_test()
    }

    /// The router with `setting` and `fitted` (self-tested when fitted on
    /// other catalogs, as the shipped one is), learning from its turns
    /// when `learn`: it decides on evidence combined here.
    fn router(&self, setting: RouterSetting, fitted: &Fitted, learn: bool) -> Router {
        let mut taxonomy = self.taxonomy.clone();
        taxonomy.tools_per_group = Some(setting.tools_per_group);
        taxonomy.route_above = Some(setting.route_above);
        taxonomy.max_groups = setting.max_groups;
        taxonomy.max_token_share = setting.max_token_share;
        let groups = GroupsOnly(self.scorer.groups().to_vec());
        let mut router = Router::new(Box::new(groups), taxonomy)
            .with_confidence(Confidence::PerGroup(fitted.model))
            .with_costs(std::sync::Arc::clone(&self.costs.tools));
        if let Some(calibration) = &fitted.calibration {
            router = router.with_calibration(calibration.clone());
        }
        if setting.id_finders {
            router = router.with_id_finders(std::sync::Arc::clone(&self.id_finders));
        }
        let probes: Vec<(Evidence, ProbeNeeds)> = self
            .probes
            .iter()
            .filter(|_| fitted.self_test)
            .map(|(raw, needs)| {
                let mut evidence = self.scorer.combine_with(setting.fusion, raw);
                evidence.sort_best_first();
                (evidence, needs.clone())
            })
            .collect();
        if let Some(test) = SelfTest::run(&router, &probes) {
            router = router.with_self_test(test);
        }
        if learn {
            router = router
                .with_online_calibration(OnlineCalibration::default())
                .with_learned_recovery(LearnedRecovery::new());
        }
        router
    }

    /// What a decision shows: the whole catalog at the low tier; else each
    /// partly loaded group's tools and every other visible group whole.
    fn seen(&self, costs: &Costs, decision: &Decision) -> Seen {
        let catalog = self.catalog();
        let groups = match &decision.visible {
            Visible::Catalog => return costs.groups_seen(catalog, &[], true),
            Visible::Groups(groups) => groups,
        };
        let partial: HashMap<&GroupId, &[ToolName]> = decision
            .partial
            .iter()
            .map(|p| (&p.group, p.tools.as_slice()))
            .collect();
        let shown: Vec<(GroupId, Vec<&str>)> = groups
            .iter()
            .map(|group| {
                let names = match partial.get(group) {
                    Some(tools) => tools.iter().map(ToolName::as_str).collect(),
                    None => catalog
                        .group_tools(group.as_str())
                        .map(|t| t.name.as_str())
                        .collect(),
                };
                (group.clone(), names)
            })
            .collect();
        debug_assert!(decision.tier != Tier::Low);
        costs.partial_seen(&shown)
    }
}

/// The groups of a catalog as a scorer that never scores: a router built
/// on it only decides on evidence combined elsewhere
/// ([`Router::decide_with_tools`]), without indexing the catalog again.
#[derive(Debug)]
struct GroupsOnly(Vec<GroupId>);

impl GroupScorer for GroupsOnly {
    fn scores(&self, _query: &str, _context: &[&str]) -> Vec<f64> {
        vec![0.0; self.0.len()]
    }

    fn groups(&self) -> &[GroupId] {
        &self.0
    }
}

/// A fitted confidence: the per-group model and the calibration of its
/// cover.
#[derive(Clone, Debug)]
pub(crate) struct Fitted {
    pub(crate) model: PerGroup,
    pub(crate) calibration: Option<Isotonic>,
    /// Whether the router restates it by its self-test on the catalog, as
    /// the shipped router restates the defaults fitted on other catalogs;
    /// a fit on the catalog's own turns is taken as it is.
    pub(crate) self_test: bool,
}

/// The per-group model and its calibration for `fusion`, fitted on
/// labelled turns (one set per catalog, each weighing the same).
pub(crate) fn fit_labelled(sets: &[&[Labelled]], max_groups: usize) -> Fitted {
    let model = fit_per_group_pooled(sets);
    let calibration = Isotonic::fit(&calibration_samples(model, sets, max_groups));
    Fitted {
        model,
        calibration: Some(calibration),
        self_test: false,
    }
}

/// [`fit_labelled`] on every labelled query of `sets`, other catalogs
/// than the one routed: self-tested, as the shipped defaults are.
pub(crate) fn fit(sets: &[&Prepared<'_>], fusion: Fusion, max_groups: usize) -> Fitted {
    let labelled: Vec<Vec<Labelled>> = sets.iter().map(|p| p.labelled_all(fusion)).collect();
    let slices: Vec<&[Labelled]> = labelled.iter().map(Vec::as_slice).collect();
    Fitted {
        self_test: true,
        ..fit_labelled(&slices, max_groups)
    }
}

/// What the tool-first router's settings are chosen among.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct RouterSetting {
    pub(crate) fusion: Fusion,
    /// `[routing] route_above`.
    pub(crate) route_above: f64,
    /// `[routing] tools_per_group`.
    pub(crate) tools_per_group: usize,
    /// `[routing] max_groups`.
    pub(crate) max_groups: usize,
    /// `[routing] max_token_share`.
    pub(crate) max_token_share: Option<f64>,
    /// `[routing] id_finders`.
    pub(crate) id_finders: bool,
}

impl RouterSetting {
    /// The policy name: `tool_router[rrf(k=60), above 0.5, 1 tool, 50
    /// groups, within 15%, id finders]` (`whole groups` for 0 tools; the
    /// last two parts only with a token budget, with id finders).
    pub(crate) fn name(&self) -> String {
        format!(
            "tool_router[{}, above {}, {}, {} groups{}{}]",
            self.fusion.label(),
            self.route_above,
            match self.tools_per_group {
                0 => "whole groups".to_owned(),
                1 => "1 tool".to_owned(),
                n => format!("{n} tools"),
            },
            self.max_groups,
            match self.max_token_share {
                Some(share) => format!(", within {}%", share * 100.0),
                None => String::new(),
            },
            if self.id_finders { ", id finders" } else { "" }
        )
    }
}

/// A dataset a setting is chosen on, with the model fitted for each
/// fusion method (never on the dataset the choice is reported on).
pub(crate) struct ChoiceSet<'a> {
    pub(crate) prepared: &'a Prepared<'a>,
    pub(crate) fitted: &'a [(Fusion, Fitted)],
    /// Only its tuning part (a dataset chosen on for itself).
    pub(crate) tune_only: bool,
    /// Its tasks, to cost what a setting shows them.
    costing: RouterCosting<'a>,
}

impl<'a> ChoiceSet<'a> {
    pub(crate) fn new(
        prepared: &'a Prepared<'a>,
        fitted: &'a [(Fusion, Fitted)],
        tune_only: bool,
        counter: &'a TokenCounter,
    ) -> Self {
        let queries = choice_queries(prepared, tune_only);
        Self {
            prepared,
            fitted,
            tune_only,
            costing: RouterCosting::new(prepared, counter, &queries),
        }
    }

    fn fitted(&self, fusion: Fusion) -> Option<&Fitted> {
        fitted_for(self.fitted, fusion)
    }

    /// The queries a choice is measured on: every labelled one (its
    /// tuning part when `tune_only`).
    pub(crate) fn queries(&self) -> Vec<&'a Query> {
        choice_queries(self.prepared, self.tune_only)
    }

    /// Group recall and share of all-tools tokens of what `seen` shows
    /// `queries`.
    pub(crate) fn figures(&self, queries: &[&Query], seen: &[Seen]) -> (f64, f64) {
        let all_tools = self.prepared.costs.all_tools as f64;
        let figures = crate::figures::summary(String::new(), queries, seen, all_tools);
        (figures.group_recall, figures.token_fraction)
    }
}

/// The labelled queries of `prepared` (its tuning part when `tune_only`).
fn choice_queries<'a>(prepared: &Prepared<'a>, tune_only: bool) -> Vec<&'a Query> {
    prepared
        .dataset
        .queries
        .iter()
        .filter(|q| !q.gold_groups.is_empty() && (!tune_only || q.tune))
        .collect()
}

/// The model fitted for `fusion` among `fitted`.
pub(crate) fn fitted_for(fitted: &[(Fusion, Fitted)], fusion: Fusion) -> Option<&Fitted> {
    fitted.iter().find(|(f, _)| *f == fusion).map(|(_, f)| f)
}

/// What a fusion method's router is fitted to: `fitted` (its model and
/// calibration) with the setting chosen for it and that setting's figures,
/// and the `search_groups` chosen for the gateway's search.
pub(crate) fn fitted_fusion(
    fitted: &Fitted,
    setting: RouterSetting,
    measured: Measured,
    search_groups: usize,
) -> FittedFusion {
    FittedFusion {
        fusion: setting.fusion,
        model: fitted.model,
        calibration: fitted
            .calibration
            .clone()
            .unwrap_or(Isotonic { knots: Vec::new() }),
        route_above: setting.route_above,
        tools_per_group: setting.tools_per_group,
        max_groups: setting.max_groups,
        max_token_share: setting.max_token_share,
        id_finders: setting.id_finders,
        search_groups,
        worst_recall: measured.worst_recall,
        recall: measured.mean_recall,
        token_fraction: measured.token_fraction,
        most_tokens: measured.most_tokens,
        task_cost: measured
            .cost
            .map(|cost| (cost.cached_share, cost.extra_round_trips)),
    }
}

/// `route_above` values tried.
pub(crate) const ROUTE_ABOVE: [f64; 8] = [0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8];

/// Mean token share, over the datasets a setting is chosen on, that a
/// chosen setting may spend: the goal is at most 15% on a catalog never
/// seen, so the choice keeps a margin.
pub(crate) const CHOICE_BUDGET: f64 = 0.10;

/// Token share a chosen setting may spend on any one dataset it is chosen
/// on: the goal itself, which holds per catalog. Without it a setting that
/// spends 1-2% on large catalogs could spend 15-25% on small ones and
/// still keep within [`CHOICE_BUDGET`] on average.
pub(crate) const CHOICE_BUDGET_EACH: f64 = 0.15;

/// The settings of `fusion` tried: each without id finders and with them.
pub(crate) fn settings(fusion: Fusion) -> Vec<RouterSetting> {
    let mut out = Vec::new();
    for id_finders in [false, true] {
        for route_above in ROUTE_ABOVE {
            for tools_per_group in TOOLS_PER_GROUP {
                out.push(RouterSetting {
                    fusion,
                    route_above,
                    tools_per_group,
                    max_groups: MAX_GROUPS,
                    max_token_share: Some(DEFAULT_MAX_TOKEN_SHARE),
                    id_finders,
                });
            }
        }
    }
    out
}

/// Group recall a setting must keep on each dataset it is chosen on to be
/// chosen by what a task costs: the floor each catalog left out is held
/// to. On a dataset where no setting within the token budget reaches it,
/// the floor is the best recall any reaches there, less
/// [`RECALL_SLACK`].
pub(crate) const RECALL_FLOOR: f64 = 0.95;

/// How far below the floor a setting's recall may fall on a dataset: the
/// same two or three queries in a hundred that separate a setting's figures
/// between folds.
pub(crate) const RECALL_SLACK: f64 = 0.01;

/// Mean group recall and token share over `sets` of each of `settings`
/// (all of one fusion method), each set with its own fitted model,
/// measured on its labelled queries (its tuning part when `tune_only`);
/// and, for the settings within the token budget that keep the recall
/// floor on every dataset ([`RECALL_FLOOR`]), what a `chat` task costs with what they show
/// ([`RouterCost`], the mean over `sets`).
pub(crate) fn measure_on(settings: &[RouterSetting], sets: &[ChoiceSet<'_>]) -> Vec<Measured> {
    let Some(fusion) = settings.first().map(|s| s.fusion) else {
        return Vec::new();
    };
    let per_set = |settings: &[RouterSetting],
                   each: &mut dyn FnMut(usize, &ChoiceSet<'_>, &[Seen])| {
        for set in sets {
            let Some(fitted) = set.fitted(fusion) else {
                continue;
            };
            let queries = set.queries();
            for (index, (seen, _)) in set
                .prepared
                .route_many(settings, fitted, &queries)
                .into_iter()
                .enumerate()
            {
                each(index, set, &seen);
            }
        }
    };
    let mut figures = vec![Vec::new(); settings.len()];
    per_set(settings, &mut |index, set, seen| {
        figures[index].push(set.figures(&set.queries(), seen));
    });
    let mut measured: Vec<Measured> = figures
        .iter()
        .map(|figures| Measured::over(figures, sets.len()))
        .collect();
    // Only the settings that keep the floor are costed: the rest are never
    // chosen by cost.
    let floors = recall_floors(&figures, &measured);
    let keeping: Vec<usize> = (0..settings.len())
        .filter(|i| measured[*i].within_budget() && keeps(&figures[*i], &floors))
        .collect();
    let kept: Vec<RouterSetting> = keeping.iter().map(|i| settings[*i]).collect();
    let mut costs = vec![Vec::new(); kept.len()];
    per_set(&kept, &mut |index, set, seen| {
        costs[index].push(set.costing.cost(seen));
    });
    for (i, costs) in keeping.into_iter().zip(costs) {
        measured[i].cost = RouterCost::mean(&costs);
    }
    measured
}

/// Each dataset's recall floor, from every setting's `(recall, token
/// share)` on each ([`measure_on`]): [`RECALL_FLOOR`], or where no setting
/// within the token budget reaches it, the best recall one reaches there
/// less [`RECALL_SLACK`].
fn recall_floors(figures: &[Vec<(f64, f64)>], measured: &[Measured]) -> Vec<f64> {
    let sets = figures.iter().map(Vec::len).max().unwrap_or(0);
    (0..sets)
        .map(|set| {
            let best = figures
                .iter()
                .zip(measured)
                .filter(|(_, m)| m.within_budget())
                .filter_map(|(f, _)| f.get(set).map(|f| f.0))
                .fold(f64::NEG_INFINITY, f64::max);
            if best >= RECALL_FLOOR {
                RECALL_FLOOR
            } else {
                best - RECALL_SLACK
            }
        })
        .collect()
}

/// Whether a setting's recall on each dataset (`figures`) keeps that
/// dataset's floor.
fn keeps(figures: &[(f64, f64)], floors: &[f64]) -> bool {
    figures.len() == floors.len() && figures.iter().zip(floors).all(|(f, floor)| f.0 >= *floor)
}

/// A setting's figures over the datasets it is chosen on.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Measured {
    /// Group recall on the dataset where it is lowest.
    pub(crate) worst_recall: f64,
    /// Mean group recall.
    pub(crate) mean_recall: f64,
    /// Mean share of all-tools tokens.
    pub(crate) token_fraction: f64,
    /// Share of all-tools tokens on the dataset where it is highest.
    pub(crate) most_tokens: f64,
    /// What a `chat` task costs with it, where it keeps the recall floor.
    pub(crate) cost: Option<RouterCost>,
}

impl Measured {
    /// The figures of one setting over `sets` datasets: its group recall
    /// and token share on each that was measured.
    pub(crate) fn over(figures: &[(f64, f64)], sets: usize) -> Self {
        let n = sets.max(1) as f64;
        let worst = figures.iter().map(|f| f.0).fold(f64::INFINITY, f64::min);
        Self {
            worst_recall: if worst.is_finite() { worst } else { 0.0 },
            mean_recall: figures.iter().map(|f| f.0).sum::<f64>() / n,
            token_fraction: figures.iter().map(|f| f.1).sum::<f64>() / n,
            most_tokens: figures.iter().map(|f| f.1).fold(0.0, f64::max),
            cost: None,
        }
    }

    /// Within [`CHOICE_BUDGET`] on average and [`CHOICE_BUDGET_EACH`] on
    /// every dataset.
    fn within_budget(&self) -> bool {
        self.token_fraction <= CHOICE_BUDGET && self.most_tokens <= CHOICE_BUDGET_EACH
    }

    /// Better by recall alone: within the budget, a higher worst-dataset
    /// recall (a router that holds on catalogs it was not tuned on), then a
    /// higher mean, then fewer tokens; outside it, fewer tokens on the
    /// costliest dataset.
    pub(crate) fn better_than(&self, other: &Self) -> bool {
        let key = |m: &Self| (m.within_budget(), m.worst_recall, m.mean_recall);
        let (a, b) = (key(self), key(other));
        if a.0 != b.0 {
            return a.0;
        }
        if !a.0 {
            return self.most_tokens < other.most_tokens;
        }
        match a.1.total_cmp(&b.1).then(a.2.total_cmp(&b.2)) {
            std::cmp::Ordering::Equal => self.token_fraction < other.token_fraction,
            ordering => ordering.is_gt(),
        }
    }
}

/// The best setting among `candidates` on `sets` (see [`best`]), with its
/// figures there.
pub(crate) fn choose(
    candidates: &[RouterSetting],
    sets: &[ChoiceSet<'_>],
) -> Option<(RouterSetting, Measured)> {
    best(candidates.iter().copied().zip(measure_on(candidates, sets)))
}

/// The best of measured settings: among those costed (they keep the recall
/// floor, [`measure_on`]), what a `chat` task costs decides, as it decides
/// each job's policy in the cost summary: the cheapest with Anthropic's
/// cache among those within
/// [`GOAL_ROUND_TRIPS`](crate::cost_markdown::GOAL_ROUND_TRIPS) extra round trips on
/// average, else the one with the fewest round trips (a tie goes to the
/// higher worst-dataset recall). Where none was costed, recall decides
/// ([`Measured::better_than`]).
pub(crate) fn best<S>(measured: impl IntoIterator<Item = (S, Measured)>) -> Option<(S, Measured)> {
    let measured: Vec<(S, Measured)> = measured.into_iter().collect();
    let costed = measured.iter().any(|(_, m)| m.cost.is_some());
    let by_recall = |best: Option<(S, Measured)>, candidate: (S, Measured)| match best {
        Some(b) if !candidate.1.better_than(&b.1) => Some(b),
        _ => Some(candidate),
    };
    if !costed {
        return measured.into_iter().fold(None, by_recall);
    }
    let cheaper = |a: &Measured, b: &Measured| -> bool {
        let (Some(x), Some(y)) = (a.cost, b.cost) else {
            return a.cost.is_some();
        };
        let (x_within, y_within) = (x.within_round_trips(), y.within_round_trips());
        if x_within != y_within {
            return x_within;
        }
        let order = if x_within {
            x.cached_share.total_cmp(&y.cached_share)
        } else {
            x.extra_round_trips
                .total_cmp(&y.extra_round_trips)
                .then(x.cached_share.total_cmp(&y.cached_share))
        };
        match order {
            std::cmp::Ordering::Equal => a.better_than(b),
            ordering => ordering.is_lt(),
        }
    };
    measured
        .into_iter()
        .fold(None, |best, candidate| match best {
            Some(b) if !cheaper(&candidate.1, &b.1) => Some(b),
            _ => Some(candidate),
        })
}

#[cfg(test)]
#[path = "tool_first_tests.rs"]
mod tests;
