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
    Confidence, CosineFloor, Decision, Evidence, Fusion, GroupScorer, HybridScorer, IdFinders,
    Isotonic, Labelled, LearnedRecovery, OnlineCalibration, PerGroup, ProbeNeeds, RawEvidence,
    Router, RoutingConfig, SelfTest, Taxonomy, Tier, Visible, calibration_samples,
    fit_per_group_pooled, ranking,
};
use toolgate_core::{Catalog, GroupId, TokenCounter, ToolName};

use crate::costs::{Costs, Seen};
use crate::dataset::{Dataset, Query};
use crate::error::Result;
use crate::figures::held;
pub(crate) use crate::precomputed::Vectors;

/// Most groups one turn routes: the per-group router's default
/// (`ConfidenceKind::default_max_groups`), what its confidence is fitted up
/// to. It was chosen among 20 and 50 here until every fold chose 50; 100,
/// tried beside 50 as well, raised no catalog's recall left out (on the
/// catalog of real MCP servers, where 50 bound a fifth of the turns, the
/// extra groups held no missed gold group) and changed the fusion chosen
/// for RestBench for the worse. The token budget
/// ([`DEFAULT_MAX_TOKEN_SHARE`](toolgate_core::routing::DEFAULT_MAX_TOKEN_SHARE), the same for every setting) bounds what a
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

/// What a tool search ranks a query by: the request alone, as the model
/// asks the gateway's search, or with the turns before it, as a router
/// reads them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Reads {
    Request,
    EarlierTurns,
}

/// A dataset ready for the tool-first policies.
pub(crate) struct Prepared<'d> {
    pub(crate) dataset: &'d Dataset,
    pub(crate) taxonomy: Taxonomy,
    scorer: HybridScorer,
    /// Raw evidence per query (by [`Query::index`]); `None` for queries
    /// with no gold group, which no policy is measured on.
    raw: Vec<Option<RawEvidence>>,
    /// The same of the request alone, for the queries with earlier turns
    /// (the others' is their `raw`): what a search asked with the request
    /// reads.
    alone: Vec<Option<RawEvidence>>,
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
        let mut alone = Vec::with_capacity(dataset.queries.len());
        for query in &dataset.queries {
            if query.gold_groups.is_empty() {
                raw.push(None);
                alone.push(None);
                raw_micros.push(0.0);
                continue;
            }
            let started = Instant::now();
            let evidence = scorer.raw(&query.text, &query.earlier_turns());
            raw_micros.push(started.elapsed().as_secs_f64() * 1e6);
            raw.push(Some(evidence));
            alone.push((!query.context.is_empty()).then(|| scorer.raw(&query.text, &[])));
        }
        let id_finders = std::sync::Arc::new(IdFinders::new(&dataset.catalog));
        let probes = scorer.raw_probes(&dataset.catalog, &id_finders);
        Ok(Self {
            dataset,
            taxonomy,
            scorer,
            raw,
            alone,
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

    /// Every tool by `fusion`, best first, for `query` read as `reads`
    /// says (none for a query with no gold group).
    pub(crate) fn tool_ranking(&self, fusion: Fusion, query: &Query, reads: Reads) -> Vec<&str> {
        let raw = match reads {
            Reads::Request => self.alone[query.index]
                .as_ref()
                .or(self.raw[query.index].as_ref()),
            Reads::EarlierTurns => self.raw[query.index].as_ref(),
        };
        let Some(raw) = raw else {
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
            crate::report::tools_per_group_label(self.tools_per_group),
            self.max_groups,
            match self.max_token_share {
                Some(share) => format!(", within {}%", share * 100.0),
                None => String::new(),
            },
            if self.id_finders { ", id finders" } else { "" }
        )
    }
}

#[cfg(test)]
#[path = "tool_first_tests.rs"]
mod tests;
