//! [`Router`]: a user turn in, a [`Decision`] out: the groups that turn
//! needs, a calibrated confidence that they are enough, and the tier that
//! decides how much of the catalog the model sees.
//!
//! Scoring and deciding are separate: a [`GroupScorer`] gives each group a
//! raw score; the router turns scores into each group's chance of being
//! needed ([`Confidence`]), routes the most probable groups by the routing
//! rules (`cover.rs`) within the token budget (`budget.rs`), and states the
//! chance that they hold every group the turn needs, calibrated on labelled
//! turns (`fit.rs`, by `toolgate eval`) and restated for its own catalog
//! ([`SelfTest`], [`OnlineCalibration`]). This file builds a router and
//! answers what it holds; `router/decide.rs` takes a decision's steps.

use std::sync::{Arc, Mutex, PoisonError};

use crate::catalog::Catalog;
use crate::name::GroupId;
use crate::routing::budget::ToolCosts;
use crate::routing::calibration::{DEFAULT_PER_GROUP, Isotonic, PerGroup};
use crate::routing::config::{ConfidenceKind, Taxonomy};
use crate::routing::cover::DEFAULT_TEMPERATURE;
use crate::routing::decision::Decision;
use crate::routing::id_finders::IdFinders;
use crate::routing::lexical::LexicalScorer;
use crate::routing::online::{OnlineCalibration, Recalibration};
use crate::routing::recovery::LearnedRecovery;
use crate::routing::scorer::{Evidence, GroupScorer, ToolScore};
use crate::routing::self_test::{ProbeNeeds, SelfTest};
use crate::tokens::TokenCounter;

mod decide;

/// Turns scores into decisions under a [`Taxonomy`].
#[derive(Debug)]
pub struct Router {
    scorer: Box<dyn GroupScorer>,
    taxonomy: Taxonomy,
    confidence: Confidence,
    calibration: Option<Isotonic>,
    /// What routing its catalog's own tools found ([`Self::self_tested`]).
    self_test: Option<SelfTest>,
    /// What the router learns from the outcomes of the turns it routed.
    online: Option<Mutex<OnlineCalibration>>,
    /// The groups it learns turns need without naming them.
    learned: Option<Mutex<LearnedRecovery>>,
    /// What the catalog's tools cost, for `[routing] max_token_share`.
    costs: Option<Arc<ToolCosts>>,
    /// The tools that find the ids other tools require, shown beside them.
    id_finders: Option<Arc<IdFinders>>,
}

/// How scores become the confidence that the routed groups are enough.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Confidence {
    /// Each group's own chance of being needed, from its score relative to
    /// the best group's ([`PerGroup`]). Groups are routed, most probable
    /// first, until the chance that no needed group is left out reaches the
    /// high threshold; that chance is the confidence. A turn that needs
    /// three groups can be confident in all three. The default.
    PerGroup(PerGroup),
    /// One softmax over the groups at a temperature: groups are routed until
    /// their probability mass reaches
    /// [`COVERAGE_TARGET`](crate::routing::COVERAGE_TARGET), and the mass is
    /// the confidence. Suits catalogs where a turn needs one group.
    Softmax {
        /// The temperature.
        temperature: f64,
    },
}

impl Router {
    /// A router over `scorer`'s groups, with the taxonomy's confidence model
    /// (its parameters, else [`DEFAULT_PER_GROUP`] or
    /// [`DEFAULT_TEMPERATURE`]).
    pub fn new(scorer: Box<dyn GroupScorer>, taxonomy: Taxonomy) -> Self {
        let confidence = match taxonomy.confidence {
            ConfidenceKind::PerGroup => {
                Confidence::PerGroup(taxonomy.per_group.unwrap_or(DEFAULT_PER_GROUP))
            }
            ConfidenceKind::Softmax => Confidence::Softmax {
                temperature: taxonomy.temperature.unwrap_or(DEFAULT_TEMPERATURE),
            },
        };
        Self {
            scorer,
            taxonomy,
            confidence,
            calibration: None,
            self_test: None,
            online: None,
            learned: None,
            costs: None,
            id_finders: None,
        }
    }

    /// The built-in router: lexical scores over `catalog`, its id finders
    /// shown when the taxonomy says so.
    pub fn lexical(catalog: &Catalog, taxonomy: Taxonomy) -> Self {
        let id_finders = taxonomy.id_finders == Some(true);
        let router = Self::new(Box::new(LexicalScorer::new(catalog, &taxonomy)), taxonomy);
        if id_finders {
            router.with_id_finders(Arc::new(IdFinders::new(catalog)))
        } else {
            router
        }
    }

    /// Uses the softmax model at `temperature` (after
    /// [`fit_temperature`](crate::routing::fit_temperature)).
    pub fn with_temperature(self, temperature: f64) -> Self {
        self.with_confidence(Confidence::Softmax { temperature })
    }

    /// Replaces the confidence model (after [`fit_per_group`](crate::routing::fit_per_group)).
    pub fn with_confidence(mut self, confidence: Confidence) -> Self {
        self.confidence = confidence;
        self
    }

    /// Maps the confidence model's estimate through `calibration` (fitted by
    /// [`calibration_samples`](crate::routing::calibration_samples) on labelled
    /// turns) before the tiers apply to it.
    pub fn with_calibration(mut self, calibration: Isotonic) -> Self {
        self.calibration = Some(calibration);
        self
    }

    /// Runs the [`SelfTest`] over `catalog` (the one the scorer indexed):
    /// decisions are then stated through its recalibration, and an online
    /// calibration starts from it instead of "no change". Nothing changes
    /// when the scorer gives no probes (one without evidence per tool).
    /// The probes need the id finders this router shows, read from
    /// `catalog` when it shows none.
    pub fn self_tested(self, catalog: &Catalog) -> Self {
        let probes = match &self.id_finders {
            Some(finders) => self.scorer.probes(catalog, finders),
            None => self.scorer.probes(catalog, &IdFinders::new(catalog)),
        };
        match SelfTest::run(&self, &probes) {
            Some(test) => self.with_self_test(test),
            None => self,
        }
    }

    /// States decisions through `test`'s recalibration (one run on
    /// evidence scored elsewhere); an online calibration starts from it.
    pub fn with_self_test(mut self, test: SelfTest) -> Self {
        self.self_test = Some(test);
        if let Some(online) = &mut self.online {
            online
                .get_mut()
                .unwrap_or_else(PoisonError::into_inner)
                .set_prior(test.recalibration);
        }
        self
    }

    /// Counts what each decision shows against `costs`, so that
    /// `[routing] max_token_share` bounds it; without costs no budget
    /// applies.
    pub fn with_costs(mut self, costs: Arc<ToolCosts>) -> Self {
        self.costs = Some(costs);
        self
    }

    /// Counts `catalog`'s schemas (with the shared `o200k_base` counter)
    /// for the token budget when the taxonomy sets one
    /// (`max_token_share`); unchanged without one, or without the
    /// tokenizer.
    pub fn counted(self, catalog: &Catalog) -> Self {
        if self.taxonomy.max_token_share.is_none() {
            return self;
        }
        match TokenCounter::shared() {
            Some(counter) => self.with_costs(Arc::new(ToolCosts::measure(catalog, counter))),
            None => self,
        }
    }

    /// Shows, beside each shown tool that requires an `X_id`, the tool of
    /// another group that finds X ([`IdFinders`], `[routing] id_finders`),
    /// while the token budget allows: the budget counts a routed group's
    /// finders with it, before the groups below it, and the finder's group
    /// then counts as held in the confidence.
    pub fn with_id_finders(mut self, finders: Arc<IdFinders>) -> Self {
        self.id_finders = Some(finders);
        self
    }

    /// The id finders it shows, if it does.
    pub fn id_finders(&self) -> Option<&IdFinders> {
        self.id_finders.as_deref()
    }

    /// What the catalog's tools cost, when the router counts them for a
    /// token budget.
    pub fn costs(&self) -> Option<&ToolCosts> {
        self.costs.as_deref()
    }

    /// What the self-test found; `None` without one.
    pub fn self_test(&self) -> Option<SelfTest> {
        self.self_test
    }

    /// Restates each decision's confidence through `online`, which learns
    /// from the outcomes recorded with [`Self::record_outcome`]: the tiers
    /// then follow what this deployment's turns show, not only what the
    /// catalogs the calibration was fitted on showed. After a self-test,
    /// `online` starts from its recalibration.
    pub fn with_online_calibration(mut self, online: OnlineCalibration) -> Self {
        let online = match self.self_test {
            Some(test) => online.with_prior(test.recalibration),
            None => online,
        };
        self.online = Some(Mutex::new(online));
        self
    }

    /// Records whether a routed turn's groups ([`Decision::routed`] and
    /// [`Decision::learned`]) held every tool it used, against the
    /// decision's [`Decision::fitted_confidence`]; later
    /// decisions are stated through the refitted recalibration. Nothing
    /// happens without an online calibration.
    pub fn record_outcome(&self, fitted_confidence: f64, held: bool) {
        if let Some(online) = &self.online {
            online
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .record(fitted_confidence, held);
        }
    }

    /// Shows the groups `learned` learns from the misses recorded with
    /// [`Self::record_misses`] on every restricted turn (high and medium
    /// tiers), after the routed and the configured recovery groups.
    pub fn with_learned_recovery(mut self, learned: LearnedRecovery) -> Self {
        self.learned = Some(Mutex::new(learned));
        self
    }

    /// Records the groups a labelled turn needed that its decision did not
    /// route ([`Decision::routed`]; empty when they held). Nothing happens
    /// without a learned recovery.
    pub fn record_misses(&self, missed: &[GroupId]) {
        if let Some(learned) = &self.learned {
            learned
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .record(missed);
        }
    }

    /// The recovery groups learned so far and the turns they were learned
    /// from; `None` without a learned recovery.
    pub fn learned_recovery(&self) -> Option<(Vec<GroupId>, usize)> {
        self.learned.as_ref().map(|learned| {
            let learned = learned.lock().unwrap_or_else(PoisonError::into_inner);
            (learned.groups(), learned.turns())
        })
    }

    /// The online calibration's recalibration and the outcomes it was
    /// fitted on; `None` without one.
    pub fn online_calibration(&self) -> Option<(Recalibration, usize)> {
        self.online.as_ref().map(|online| {
            let online = online.lock().unwrap_or_else(PoisonError::into_inner);
            (online.recalibration(), online.outcomes())
        })
    }

    /// Whether its scorer scores turns semantically too.
    pub fn is_semantic(&self) -> bool {
        self.scorer.is_semantic()
    }

    /// The calibration in use.
    pub fn calibration(&self) -> Option<&Isotonic> {
        self.calibration.as_ref()
    }

    fn calibrate(&self, raw: f64) -> f64 {
        self.calibration.as_ref().map_or(raw, |c| c.apply(raw))
    }

    /// The confidence model in use.
    pub fn confidence(&self) -> Confidence {
        self.confidence
    }

    /// The taxonomy.
    pub fn taxonomy(&self) -> &Taxonomy {
        &self.taxonomy
    }

    /// The raw scores of a turn, in [`Self::groups`] order.
    pub fn scores(&self, query: &str, context: &[&str]) -> Vec<f64> {
        self.scorer.scores(query, context)
    }

    /// The groups, in score order.
    pub fn groups(&self) -> &[GroupId] {
        self.scorer.groups()
    }

    /// The tools with evidence for a turn, best first (ties in catalog
    /// order).
    pub fn tool_scores(&self, query: &str, context: &[&str]) -> Vec<ToolScore> {
        let mut scores = self.scorer.tool_scores(query, context);
        scores.sort_by(|a, b| b.score.total_cmp(&a.score));
        scores
    }

    /// Routes a turn.
    pub fn route(&self, query: &str, context: &[&str]) -> Decision {
        match self.taxonomy.route_tools {
            Some(count) => {
                let (decision, evidence) = self.route_every_tool(query, context);
                decide::showing_best_tools(decision, &evidence.tools, count)
            }
            None => self.route_explained(query, context).0,
        }
    }

    /// Routes a turn, and returns the evidence too (its tools best first,
    /// ties in catalog order): one pass over the turn for both.
    pub fn route_explained(&self, query: &str, context: &[&str]) -> (Decision, Evidence) {
        let mut evidence = self.scorer.evidence(query, context);
        evidence.sort_best_first();
        (self.decide_with_tools(&evidence), evidence)
    }

    /// [`Self::route_explained`], the evidence holding every tool that has
    /// any, best first (ties in catalog order), not only the best of each
    /// group: what a search ranking tools across groups reads.
    pub fn route_every_tool(&self, query: &str, context: &[&str]) -> (Decision, Evidence) {
        let mut evidence = self.scorer.evidence_of_every_tool(query, context);
        evidence.sort_best_first();
        (self.decide_with_tools(&evidence), evidence)
    }

    /// Routes a turn whose group scores are given (in [`Self::groups`]
    /// order; say, blended with semantic ones elsewhere): [`Self::decide`],
    /// with the partly loaded groups (`[routing] tools_per_group`) chosen by
    /// the turn's tool scores.
    pub fn route_scored(&self, scores: &[f64], query: &str, context: &[&str]) -> Decision {
        if let Some(count) = self.taxonomy.route_tools {
            let mut evidence = self.scorer.evidence_of_every_tool(query, context);
            evidence.sort_best_first();
            evidence.groups = scores.to_vec();
            let decision = self.decide_with_tools(&evidence);
            return decide::showing_best_tools(decision, &evidence.tools, count);
        }
        self.decide_with_tools(&Evidence {
            groups: scores.to_vec(),
            tools: self.tool_scores(query, context),
        })
    }

    /// The decision for a turn's evidence (tools best first), with the
    /// tools partly loaded groups arrive with.
    pub fn decide_with_tools(&self, evidence: &Evidence) -> Decision {
        let per_group = self.taxonomy.tools_per_group.filter(|count| *count > 0);
        self.decide_within(&evidence.groups, per_group, &evidence.tools)
    }

    /// The decision for raw scores (in [`Self::groups`] order), its groups
    /// arriving whole.
    pub fn decide(&self, scores: &[f64]) -> Decision {
        self.decide_within(scores, None, &[])
    }
}

impl SelfTest {
    /// Routes each probe (its evidence, tools best first, and what it
    /// needs) through `router` and fits the recalibration to the outcomes,
    /// drawn towards "no change" as [`OnlineCalibration`] draws it; `None`
    /// without probes. It sits with the router, whose decisions it takes;
    /// the probes and their statistics are `self_test.rs`'s.
    pub fn run(router: &Router, probes: &[(Evidence, ProbeNeeds)]) -> Option<Self> {
        let outcomes = probes
            .iter()
            .map(|(evidence, needs)| {
                let decision = router.decide_with_tools(evidence);
                (decision.fitted_confidence, needs.held_by(&decision))
            })
            .collect();
        Self::from_outcomes(outcomes)
    }
}

#[cfg(test)]
#[path = "router_tests.rs"]
mod tests;
