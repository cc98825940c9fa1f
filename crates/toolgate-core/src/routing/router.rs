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
//! ([`SelfTest`], [`OnlineCalibration`]).

use std::borrow::Cow;
use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

use crate::catalog::Catalog;
use crate::name::{GroupId, ToolName};
use crate::routing::budget::ToolCosts;
use crate::routing::calibration::{DEFAULT_PER_GROUP, Isotonic, PerGroup};
use crate::routing::config::{ConfidenceKind, Intent, Taxonomy, UnknownIntent};
use crate::routing::cover::{
    DEFAULT_TEMPERATURE, affordable_first, probabilities, route_by_cover, route_by_mass,
    route_prefix,
};
use crate::routing::decision::{Decision, PartialGroup, Tier, Visible};
use crate::routing::id_finders::{IdFinder, IdFinders};
use crate::routing::lexical::LexicalScorer;
use crate::routing::online::{OnlineCalibration, Recalibration};
use crate::routing::recovery::LearnedRecovery;
use crate::routing::scorer::{Evidence, GroupScorer, ToolScore};
use crate::routing::self_test::{ProbeNeeds, SelfTest};
use crate::tokens::TokenCounter;

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
        self.route_explained(query, context).0
    }

    /// Routes a turn, and returns the evidence too (its tools best first,
    /// ties in catalog order): one pass over the turn for both.
    pub fn route_explained(&self, query: &str, context: &[&str]) -> (Decision, Evidence) {
        let mut evidence = self.scorer.evidence(query, context);
        evidence.sort_best_first();
        (self.decide_with_tools(&evidence), evidence)
    }

    /// Routes a turn whose group scores are given (in [`Self::groups`]
    /// order; say, blended with semantic ones elsewhere): [`Self::decide`],
    /// with the partly loaded groups (`[routing] tools_per_group`) chosen by
    /// the turn's tool scores.
    pub fn route_scored(&self, scores: &[f64], query: &str, context: &[&str]) -> Decision {
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

    /// [`Self::decide`], the routed groups within the token budget when
    /// there is one: each at the cost of its `per_group` best `tools`
    /// (what it then arrives with), or whole.
    fn decide_within(
        &self,
        scores: &[f64],
        per_group: Option<usize>,
        tools: &[ToolScore],
    ) -> Decision {
        let groups = self.groups();
        let probabilities = match self.confidence {
            Confidence::PerGroup(model) => model.probabilities(scores),
            Confidence::Softmax { temperature } => probabilities(scores, temperature),
        };
        let mut ranked: Vec<(GroupId, f64)> = groups.iter().cloned().zip(probabilities).collect();
        ranked.sort_by(|a, b| b.1.total_cmp(&a.1));
        let thresholds = self.taxonomy.thresholds;
        if scores.iter().all(|s| *s <= 0.0) {
            let (tier, visible) = match self.taxonomy.unknown_intent {
                UnknownIntent::Catalog => (Tier::Low, Visible::Catalog),
                UnknownIntent::Recovery => (
                    Tier::Medium,
                    Visible::Groups(self.taxonomy.recovery_groups.clone()),
                ),
            };
            return Decision {
                intent: None,
                confidence: 0.0,
                fitted_confidence: 0.0,
                tier,
                routed: Vec::new(),
                learned: Vec::new(),
                visible,
                ranked,
                partial: Vec::new(),
                passed_over: Vec::new(),
                finders: Vec::new(),
            };
        }
        let recalibration = self
            .online_calibration()
            .map(|(recalibration, _)| recalibration)
            .or(self.self_test.map(|test| test.recalibration))
            .unwrap_or(Recalibration::IDENTITY);
        let calibrate = |raw: f64| recalibration.apply(self.calibrate(raw));
        // Learned groups this router does not route over (outcomes kept
        // for another catalog, say) are left out. They are shown beside
        // the routed ones, so the token budget counts them first.
        let learned: Vec<GroupId> = self
            .learned_recovery()
            .map(|(learned, _)| learned)
            .unwrap_or_default()
            .into_iter()
            .filter(|group| groups.contains(group))
            .collect();
        // The places in `ranked` of the groups the budget affords, when
        // there is one.
        let affordable = match (&self.costs, self.taxonomy.max_token_share) {
            (Some(costs), Some(share)) => Some(costs.affordable(
                &ranked,
                share,
                per_group,
                tools,
                &learned,
                self.id_finders.as_deref(),
            )),
            _ => None,
        };
        let every: Vec<usize> = (0..ranked.len()).collect();
        let (routed, raw) = self.route_rule(
            &ranked,
            affordable.as_deref().unwrap_or(&every),
            scores,
            &calibrate,
        );
        // What the same rule routes without the budget, less what it
        // routed within it.
        let passed_over = match affordable {
            // Nothing passed over: the same rule would route the same.
            Some(places) if places.len() < ranked.len() => {
                let (unbudgeted, _) = self.route_rule(&ranked, &every, scores, &calibrate);
                unbudgeted
                    .into_iter()
                    .filter(|group| !routed.contains(group))
                    .collect()
            }
            _ => Vec::new(),
        };
        let learned: Vec<GroupId> = learned
            .into_iter()
            .filter(|group| !routed.contains(group))
            .collect();
        let relied: Vec<GroupId> = routed.iter().chain(&learned).cloned().collect();
        let shown = match per_group {
            Some(count) => partial_groups(&relied, tools, count),
            None => Vec::new(),
        };
        let finders = self.finders(&relied, &shown);
        // A finder's group is held too: its chance of being needed leaves
        // the chance that a needed group is outside.
        let mut raw = raw;
        let mut counted: Vec<&GroupId> = Vec::new();
        for finder in &finders {
            if !relied.contains(&finder.group) && !counted.contains(&&finder.group) {
                counted.push(&finder.group);
                if let Some((_, p)) = ranked.iter().find(|(g, _)| *g == finder.group) {
                    raw = (raw / (1.0 - p).max(1e-12)).min(1.0);
                }
            }
        }
        let fitted_confidence = self.calibrate(raw);
        let confidence = recalibration.apply(fitted_confidence);
        let tier = if confidence >= thresholds.high {
            Tier::High
        } else if confidence >= thresholds.medium {
            Tier::Medium
        } else {
            Tier::Low
        };
        let (visible, partial) = match tier {
            Tier::High | Tier::Medium => {
                let recovery = match tier {
                    Tier::Medium => self.taxonomy.recovery_groups.as_slice(),
                    _ => &[],
                };
                let mut groups = routed.clone();
                for group in recovery.iter().chain(&learned) {
                    if !groups.contains(group) {
                        groups.push(group.clone());
                    }
                }
                let mut partial = match per_group {
                    Some(count) => partial_groups(&groups, tools, count),
                    None => Vec::new(),
                };
                with_finders(&mut groups, &mut partial, &finders);
                (Visible::Groups(groups), partial)
            }
            Tier::Low => (Visible::Catalog, Vec::new()),
        };
        Decision {
            intent: self.intent(&routed),
            confidence,
            fitted_confidence,
            tier,
            routed,
            learned,
            visible,
            ranked,
            partial,
            passed_over,
            finders,
        }
    }

    /// The finders the `shown` tools of the `relied` groups (routed, then
    /// learned) need, a group not among `shown` shown whole, in that order,
    /// each tool once: those the token budget still affords, when there is
    /// one. None without [`Self::with_id_finders`].
    fn finders(&self, relied: &[GroupId], shown: &[PartialGroup]) -> Vec<IdFinder> {
        let Some(id_finders) = &self.id_finders else {
            return Vec::new();
        };
        let tools_of = |group: &GroupId| {
            shown
                .iter()
                .find(|p| p.group == *group)
                .map(|p| p.tools.as_slice())
        };
        let mut left = match (&self.costs, self.taxonomy.max_token_share) {
            (Some(costs), Some(share)) => {
                Some(costs.budget(share) - costs.shown(relied, shown) as f64)
            }
            _ => None,
        };
        let mut out: Vec<IdFinder> = Vec::new();
        for group in relied {
            for finder in id_finders.needed_by(group, tools_of(group)) {
                let already = relied.contains(&finder.group)
                    && tools_of(&finder.group).is_none_or(|tools| tools.contains(&finder.tool));
                if already || out.iter().any(|f| f.tool == finder.tool) {
                    continue;
                }
                if let (Some(left), Some(costs)) = (&mut left, &self.costs) {
                    let cost = costs.tool(finder.tool.as_str()) as f64;
                    if cost > *left {
                        continue;
                    }
                    *left -= cost;
                }
                out.push(finder.clone());
            }
        }
        out
    }

    /// The groups the routing rule routes among the `affordable` ones
    /// (their places in `ranked`, ascending), with their raw cover. They
    /// lead the order the rules route a prefix of, the others after them,
    /// so the groups left out still count as left out in the cover.
    fn route_rule(
        &self,
        ranked: &[(GroupId, f64)],
        affordable: &[usize],
        scores: &[f64],
        calibrate: &dyn Fn(f64) -> f64,
    ) -> (Vec<GroupId>, f64) {
        let max_groups = self.taxonomy.max_groups.min(affordable.len());
        let order = if affordable.len() == ranked.len() {
            Cow::Borrowed(ranked)
        } else {
            Cow::Owned(affordable_first(ranked, affordable))
        };
        match (self.confidence, self.taxonomy.route_above) {
            (Confidence::PerGroup(_), Some(share)) => {
                // Probabilities rise with scores: the groups scoring at
                // least `share` of the best are the first `above` of
                // `ranked`.
                let top = scores.iter().copied().fold(0.0_f64, f64::max);
                let above = scores.iter().filter(|s| **s >= share * top).count();
                let count = affordable
                    .iter()
                    .take(max_groups)
                    .filter(|place| **place < above)
                    .count();
                route_prefix(&order, count)
            }
            (Confidence::PerGroup(_), None) => {
                route_by_cover(&order, max_groups, self.taxonomy.thresholds, calibrate)
            }
            (Confidence::Softmax { .. }, _) => route_by_mass(&order, max_groups),
        }
    }

    /// The configured intent sharing the most groups with `routed` (ties go
    /// to the earlier intent), else the top group's name.
    fn intent(&self, routed: &[GroupId]) -> Option<String> {
        let best = self
            .taxonomy
            .intents
            .iter()
            .map(|intent| {
                let shared = intent.groups.iter().filter(|g| routed.contains(g)).count();
                (shared, intent)
            })
            .filter(|(shared, _)| *shared > 0)
            .fold(None::<(usize, &Intent)>, |best, candidate| match best {
                Some(b) if b.0 >= candidate.0 => Some(b),
                _ => Some(candidate),
            });
        match best {
            Some((_, intent)) => Some(intent.name.clone()),
            None => routed.first().map(|g| g.to_string()),
        }
    }
}

/// `finders` shown among the visible `groups` and the `partial` ones: a
/// finder's group added to both when it is not visible, its tool added to
/// the group's when the group arrives partly loaded; a group visible whole
/// already shows it.
fn with_finders(groups: &mut Vec<GroupId>, partial: &mut Vec<PartialGroup>, finders: &[IdFinder]) {
    for finder in finders {
        if !groups.contains(&finder.group) {
            groups.push(finder.group.clone());
            partial.push(PartialGroup {
                group: finder.group.clone(),
                tools: Vec::new(),
            });
        }
        if let Some(group) = partial.iter_mut().find(|p| p.group == finder.group)
            && !group.tools.contains(&finder.tool)
        {
            group.tools.push(finder.tool.clone());
        }
    }
}

/// Each of `groups` that has scored tools, with its `count` best (`scores`
/// best first); a group without any arrives whole, so it is left out.
fn partial_groups(groups: &[GroupId], scores: &[ToolScore], count: usize) -> Vec<PartialGroup> {
    // One pass over the scored tools, however many groups.
    let mut best: HashMap<&GroupId, Vec<ToolName>> =
        groups.iter().map(|group| (group, Vec::new())).collect();
    for scored in scores {
        if let Some(tools) = best.get_mut(&scored.group)
            && tools.len() < count
        {
            tools.push(scored.tool.clone());
        }
    }
    groups
        .iter()
        .filter_map(|group| {
            let tools = best.remove(group)?;
            (!tools.is_empty()).then(|| PartialGroup {
                group: group.clone(),
                tools,
            })
        })
        .collect()
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
