//! [`Router`]: a user turn in, a [`Decision`] out: the groups that turn
//! needs, a calibrated confidence that they are enough, and the tier that
//! decides how much of the catalog the model sees.
//!
//! Scoring and deciding are separate: a [`GroupScorer`] gives each group a
//! raw score; the router turns scores into probabilities (a softmax over
//! scores scaled by the best one), routes the most probable groups until
//! their probability mass reaches the coverage target, and calls that mass
//! the confidence. The temperature is fit on labelled queries
//! ([`fit_temperature`]) so that confidence is the observed chance that the
//! routed groups hold every group the turn needs, on any catalog.

use std::borrow::Cow;
use std::collections::HashMap;
use std::fmt;
use std::sync::{Arc, Mutex, PoisonError};

use crate::catalog::Catalog;
use crate::name::{GroupId, ToolName};
use crate::routing::bm25::Bm25;
use crate::routing::budget::ToolCosts;
use crate::routing::calibration::{DEFAULT_PER_GROUP, Isotonic, PerGroup, ranks, sigmoid};
use crate::routing::fusion::group_scores;
use crate::routing::id_finders::{IdFinder, IdFinders};
use crate::routing::online::{OnlineCalibration, Recalibration};
use crate::routing::recovery::LearnedRecovery;
use crate::routing::self_test::{ProbeNeeds, SelfTest};
use crate::routing::config::{ConfidenceKind, Taxonomy, UnknownIntent};
use crate::routing::text::{terms, tool_terms};
use crate::tokens::TokenCounter;

/// Softmax temperature when none is configured or fit.
pub const DEFAULT_TEMPERATURE: f64 = 0.12;

/// Probability mass the routed groups should reach.
pub const COVERAGE_TARGET: f64 = 0.9;

/// Weight of earlier turns' words against the current turn's.
const CONTEXT_WEIGHT: f64 = 0.4;

/// How much of the catalog a decision shows.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Tier {
    /// Only the routed groups.
    High,
    /// The routed groups plus the recovery groups.
    Medium,
    /// The whole catalog.
    Low,
}

impl Tier {
    /// `high`, `medium`, `low`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::High => "high",
            Self::Medium => "medium",
            Self::Low => "low",
        }
    }
}

impl fmt::Display for Tier {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What a turn may see.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Visible {
    /// These groups (with the core tools).
    Groups(Vec<GroupId>),
    /// Every group.
    Catalog,
}

/// A routing decision.
#[derive(Clone, Debug, PartialEq)]
pub struct Decision {
    /// The configured intent that best explains the routed groups, else the
    /// top group's name; `None` when nothing matched.
    pub intent: Option<String>,
    /// Calibrated chance that the routed groups (with the learned ones)
    /// are enough (0 to 1): the fitted confidence as the router's
    /// [`OnlineCalibration`] restates it, else its [`SelfTest`] (the same
    /// without either).
    pub confidence: f64,
    /// The chance as the calibration fitted offline states it, before what
    /// the router found of its catalog ([`Router::self_tested`]) and what
    /// the deployment learned of it: what an outcome is recorded against
    /// ([`Router::record_outcome`]).
    pub fitted_confidence: f64,
    /// The tier that confidence falls in.
    pub tier: Tier,
    /// The groups routed, most probable first.
    pub routed: Vec<GroupId>,
    /// The recovery groups learned from earlier turns' misses
    /// ([`Router::with_learned_recovery`]) that are not among `routed`:
    /// shown beside them at the high and medium tiers. With `routed`, the
    /// groups a restricted turn relies on, what an outcome is labelled
    /// against ([`Router::record_outcome`]).
    pub learned: Vec<GroupId>,
    /// What the turn sees at this tier.
    pub visible: Visible,
    /// Every group with its probability, most probable first.
    pub ranked: Vec<(GroupId, f64)>,
    /// Visible groups that arrive partly loaded, with the tools they arrive
    /// with, best first (`[routing] tools_per_group`); the other visible
    /// groups arrive whole. Empty at the low tier.
    pub partial: Vec<PartialGroup>,
    /// Groups the routing rule would have routed without the token budget
    /// (`[routing] max_token_share`) that it left out, their tools not
    /// fitting, most probable first; empty without a budget.
    pub passed_over: Vec<GroupId>,
    /// Tools shown because a routed or learned group's shown tool requires
    /// an id they find ([`Router::with_id_finders`]), within the token
    /// budget: each is among `partial`'s tools at the high and medium
    /// tiers, and its group among `visible`, counted in the confidence.
    pub finders: Vec<IdFinder>,
}

impl Decision {
    /// Whether a restricted turn relies on `group`: it is routed, learned
    /// or an id finder's. A turn whose needed groups all are held.
    pub fn relies_on(&self, group: &GroupId) -> bool {
        self.routed.contains(group)
            || self.learned.contains(group)
            || self.finders.iter().any(|finder| finder.group == *group)
    }
}

/// A group that arrives with only some of its tools.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PartialGroup {
    /// The group.
    pub group: GroupId,
    /// Its tools to load, best first.
    pub tools: Vec<ToolName>,
}

/// Gives every group of a router a raw relevance score for a turn.
pub trait GroupScorer: Send + Sync + fmt::Debug {
    /// Scores in the order of `groups()`; higher is more relevant, 0 is no
    /// evidence at all. `context` holds earlier user turns, newest last.
    fn scores(&self, query: &str, context: &[&str]) -> Vec<f64>;

    /// The groups scored, in score order.
    fn groups(&self) -> &[GroupId];

    /// The grouped tools with any evidence for the turn, with their scores
    /// (in no particular order). A scorer that has no evidence per tool
    /// returns none.
    fn tool_scores(&self, _query: &str, _context: &[&str]) -> Vec<ToolScore> {
        Vec::new()
    }

    /// Whether it scores turns semantically too (an embedding model gave
    /// it the tools' vectors).
    fn is_semantic(&self) -> bool {
        false
    }

    /// The turns a [`SelfTest`] routes, each with what it needs, the
    /// `finders` of `catalog`'s ids among it (`catalog` is the one the
    /// scorer indexed); none from a scorer that has no evidence per tool.
    fn probes(&self, _catalog: &Catalog, _finders: &IdFinders) -> Vec<(Evidence, ProbeNeeds)> {
        Vec::new()
    }

    /// Both at once: group scores and tool scores from one pass over the
    /// turn (a scorer that embeds the turn embeds it once).
    fn evidence(&self, query: &str, context: &[&str]) -> Evidence {
        Evidence {
            groups: self.scores(query, context),
            tools: self.tool_scores(query, context),
        }
    }
}

/// What a scorer found for a turn.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Evidence {
    /// Raw group scores, in [`GroupScorer::groups`] order.
    pub groups: Vec<f64>,
    /// The tools with evidence (in no particular order).
    pub tools: Vec<ToolScore>,
}

impl Evidence {
    /// Its tools best first (ties in the order given), as a decision's
    /// partly loaded groups take them.
    pub fn sort_best_first(&mut self) {
        self.tools.sort_by(|a, b| b.score.total_cmp(&a.score));
    }
}

/// A tool's relevance to a turn.
#[derive(Clone, Debug, PartialEq)]
pub struct ToolScore {
    /// The tool.
    pub tool: ToolName,
    /// Its group.
    pub group: GroupId,
    /// Its raw score; higher is more relevant.
    pub score: f64,
}

/// Lexical evidence per group, from two BM25 indexes: one over each tool
/// (its name, description and parameters: [`tool_terms`]), one over each group (its name, display
/// name and description, and the example utterances of the intents that
/// need it). A group scores its best tool plus its own document: one
/// well-matching tool says more than many loosely matching ones, and a large
/// group does not win by size.
#[derive(Clone, Debug)]
pub struct LexicalScorer {
    groups: Vec<GroupId>,
    group_index: Bm25,
    tool_index: Bm25,
    /// Group (index into `groups`) of each tool document.
    tool_group: Vec<usize>,
    /// Name of each tool document.
    tool_names: Vec<ToolName>,
}

/// Tools of one group a scorer names with their scores, at most.
pub const NAMED_PER_GROUP: usize = 10;

/// Weight of a group's own document against its best tool.
const GROUP_DOCUMENT_WEIGHT: f64 = 0.5;

impl LexicalScorer {
    /// Indexes `catalog`'s groups and grouped tools.
    pub fn new(catalog: &Catalog, taxonomy: &Taxonomy) -> Self {
        let mut groups = Vec::new();
        let mut group_documents = Vec::new();
        let mut tool_documents = Vec::new();
        let mut tool_group = Vec::new();
        let mut tool_names = Vec::new();
        let weighted =
            |words: &str, weight: f64| terms(words).into_iter().map(move |t| (t, weight));
        for group in catalog.groups() {
            let mut text: Vec<(String, f64)> = Vec::new();
            text.extend(weighted(group.id.as_str(), 2.0));
            text.extend(weighted(&group.display_name, 1.0));
            text.extend(weighted(&group.description, 1.0));
            for intent in &taxonomy.intents {
                if intent.groups.contains(&group.id) {
                    text.extend(weighted(&intent.name, 2.0));
                    for example in &intent.examples {
                        text.extend(weighted(example, 1.0));
                    }
                }
            }
            for tool in catalog.group_tools(group.id.as_str()) {
                tool_documents.push(tool_terms(tool));
                tool_group.push(groups.len());
                tool_names.push(tool.name.clone());
            }
            groups.push(group.id.clone());
            group_documents.push(text);
        }
        Self {
            groups,
            group_index: Bm25::new(group_documents),
            tool_index: Bm25::new(tool_documents),
            tool_group,
            tool_names,
        }
    }
}

/// A turn's terms weighted 1, and earlier turns' terms weighted less the
/// older they are.
pub fn query_terms(query: &str, context: &[&str]) -> Vec<(String, f64)> {
    let mut weighted: Vec<(String, f64)> = terms(query).into_iter().map(|t| (t, 1.0)).collect();
    for (age, earlier) in context.iter().rev().enumerate() {
        let weight = CONTEXT_WEIGHT / (age as f64 + 1.0);
        weighted.extend(terms(earlier).into_iter().map(|t| (t, weight)));
    }
    weighted
}

impl LexicalScorer {
    /// BM25 of every tool document for weighted query terms, in tool order.
    pub(crate) fn tool_bm25(&self, terms: &[(String, f64)]) -> Vec<f64> {
        self.tool_index.scores(terms)
    }

    /// BM25 of every group document for weighted query terms, in group
    /// order.
    pub(crate) fn group_bm25(&self, terms: &[(String, f64)]) -> Vec<f64> {
        self.group_index.scores(terms)
    }

    /// The group (an index into `groups()`) of each tool, in tool order.
    pub(crate) fn tool_groups(&self) -> &[usize] {
        &self.tool_group
    }

    /// The tools scored, in tool order: each group's tools in catalog
    /// order, groups in catalog order.
    pub fn tool_names(&self) -> &[ToolName] {
        &self.tool_names
    }

    /// Each tool with its score, for the tools with evidence: at most the
    /// [`NAMED_PER_GROUP`] best of each group, which is all a decision or
    /// a search answer shows of one group (and naming every tool of a large
    /// catalog on every turn costs more than scoring it).
    pub(crate) fn named(&self, scores: &[f64]) -> Vec<ToolScore> {
        let mut named = Vec::new();
        let mut start = 0;
        while start < scores.len() {
            let group = self.tool_group[start];
            let end = self.tool_group[start..]
                .iter()
                .position(|g| *g != group)
                .map_or(scores.len(), |offset| start + offset);
            let mut best: Vec<usize> = (start..end).filter(|t| scores[*t] > 0.0).collect();
            if best.len() > NAMED_PER_GROUP {
                best.select_nth_unstable_by(NAMED_PER_GROUP, |a, b| {
                    scores[*b].total_cmp(&scores[*a]).then(a.cmp(b))
                });
                best.truncate(NAMED_PER_GROUP);
                best.sort_unstable();
            }
            named.extend(best.into_iter().map(|tool| ToolScore {
                tool: self.tool_names[tool].clone(),
                group: self.groups[group].clone(),
                score: scores[tool],
            }));
            start = end;
        }
        named
    }
}

impl GroupScorer for LexicalScorer {
    fn scores(&self, query: &str, context: &[&str]) -> Vec<f64> {
        let terms = query_terms(query, context);
        let mut scores: Vec<f64> = self
            .group_index
            .scores(&terms)
            .into_iter()
            .map(|s| s * GROUP_DOCUMENT_WEIGHT)
            .collect();
        let best = group_scores(
            &self.tool_index.scores(&terms),
            &self.tool_group,
            self.groups.len(),
        );
        for (score, tool) in scores.iter_mut().zip(best) {
            *score += tool;
        }
        scores
    }

    fn groups(&self) -> &[GroupId] {
        &self.groups
    }

    fn tool_scores(&self, query: &str, context: &[&str]) -> Vec<ToolScore> {
        self.named(&self.tool_index.scores(&query_terms(query, context)))
    }
}

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
    /// their probability mass reaches [`COVERAGE_TARGET`], and the mass is
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

    /// Uses the softmax model at `temperature` (after [`fit_temperature`]).
    pub fn with_temperature(self, temperature: f64) -> Self {
        self.with_confidence(Confidence::Softmax { temperature })
    }

    /// Replaces the confidence model (after [`fit_per_group`]).
    pub fn with_confidence(mut self, confidence: Confidence) -> Self {
        self.confidence = confidence;
        self
    }

    /// Maps the confidence model's estimate through `calibration` (fitted
    /// by [`calibration_samples`] on labelled turns) before the tiers
    /// apply to it.
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
            .fold(
                None::<(usize, &crate::routing::config::Intent)>,
                |best, candidate| match best {
                    Some(b) if b.0 >= candidate.0 => Some(b),
                    _ => Some(candidate),
                },
            );
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

/// Softmax of scores scaled by the best one, at `temperature`.
pub fn probabilities(scores: &[f64], temperature: f64) -> Vec<f64> {
    let top = scores.iter().copied().fold(0.0_f64, f64::max);
    if top <= 0.0 || scores.is_empty() {
        return vec![1.0 / scores.len().max(1) as f64; scores.len()];
    }
    let exps: Vec<f64> = scores
        .iter()
        .map(|s| ((s / top - 1.0) / temperature).exp())
        .collect();
    let sum: f64 = exps.iter().sum();
    exps.into_iter().map(|e| e / sum).collect()
}

/// The most probable groups until their mass reaches [`COVERAGE_TARGET`]
/// (at most `max_groups`), and that mass.
fn route_by_mass(ranked: &[(GroupId, f64)], max_groups: usize) -> (Vec<GroupId>, f64) {
    let mut routed = Vec::new();
    let mut mass = 0.0;
    for (group, probability) in ranked.iter().take(max_groups) {
        routed.push(group.clone());
        mass += probability;
        if mass >= COVERAGE_TARGET {
            break;
        }
    }
    (routed, mass.min(1.0))
}

/// Per-group chances, most probable first: the fewest groups whose cover
/// (the chance that no needed group is outside them, through `calibrate`)
/// reaches the high threshold; else the fewest reaching the medium one; else
/// all `max_groups`. Returns them and their raw cover.
fn route_by_cover(
    ranked: &[(GroupId, f64)],
    max_groups: usize,
    thresholds: crate::routing::config::Thresholds,
    calibrate: &dyn Fn(f64) -> f64,
) -> (Vec<GroupId>, f64) {
    let mut medium = None;
    let mut last = 0.0;
    let count = ranked.len().min(max_groups);
    let probabilities: Vec<f64> = ranked.iter().map(|(_, p)| *p).collect();
    for (index, cover) in covers(&probabilities, max_groups).into_iter().enumerate() {
        last = cover;
        let calibrated = calibrate(cover);
        if calibrated >= thresholds.high {
            return (names(&ranked[..=index]), cover);
        }
        if medium.is_none() && calibrated >= thresholds.medium {
            medium = Some((index + 1, cover));
        }
    }
    match medium {
        Some((routed, cover)) => (names(&ranked[..routed]), cover),
        None => (names(&ranked[..count]), last),
    }
}

/// `ranked` with the groups at `places` (ascending) first, the others
/// after them, each part in its order.
pub(crate) fn affordable_first(ranked: &[(GroupId, f64)], places: &[usize]) -> Vec<(GroupId, f64)> {
    let mut order = Vec::with_capacity(ranked.len());
    let mut passed_over = Vec::new();
    let mut next = places.iter().peekable();
    for (place, entry) in ranked.iter().enumerate() {
        if next.next_if(|p| **p == place).is_some() {
            order.push(entry.clone());
        } else {
            passed_over.push(entry.clone());
        }
    }
    order.extend(passed_over);
    order
}

/// The first `count` groups of `ranked` (most probable first), at least
/// one, with their raw cover (every later group's chance counted as left
/// out).
pub(crate) fn route_prefix(ranked: &[(GroupId, f64)], count: usize) -> (Vec<GroupId>, f64) {
    let count = count.max(1).min(ranked.len());
    let probabilities: Vec<f64> = ranked.iter().map(|(_, p)| *p).collect();
    let cover = covers(&probabilities, count).last().copied().unwrap_or(0.0);
    (names(&ranked[..count]), cover)
}

/// The raw cover of each prefix of the groups' chances, most probable first
/// (the best group, the best two, ...), at most `max_groups` long.
fn covers(probabilities: &[f64], max_groups: usize) -> Vec<f64> {
    // ln P(no needed group among the groups not routed yet).
    let mut outside: f64 = probabilities
        .iter()
        .map(|p| (1.0 - p).max(1e-12).ln())
        .sum();
    probabilities
        .iter()
        .take(max_groups)
        .map(|probability| {
            outside -= (1.0 - probability).max(1e-12).ln();
            outside.exp().min(1.0)
        })
        .collect()
}

/// Samples for fitting the calibration of `model` ([`Isotonic::fit`]): for
/// every labelled turn and every prefix of its groups by probability (up to
/// `max_groups`), the prefix's raw cover and whether it holds every gold
/// group. Each set of turns weighs the same.
pub fn calibration_samples(
    model: PerGroup,
    sets: &[&[Labelled]],
    max_groups: usize,
) -> Vec<(f64, f64, f64)> {
    let mut samples = Vec::new();
    for examples in sets {
        let mut set = Vec::new();
        for example in *examples {
            if example.gold.is_empty() || example.scores.iter().all(|s| *s <= 0.0) {
                continue;
            }
            let mut ranked: Vec<(usize, f64)> = model
                .probabilities(&example.scores)
                .into_iter()
                .enumerate()
                .collect();
            ranked.sort_by(|a, b| b.1.total_cmp(&a.1));
            let probabilities: Vec<f64> = ranked.iter().map(|(_, p)| *p).collect();
            for (length, cover) in covers(&probabilities, max_groups).into_iter().enumerate() {
                let held = example
                    .gold
                    .iter()
                    .all(|g| ranked[..=length].iter().any(|(i, _)| i == g));
                set.push((cover, if held { 1.0 } else { 0.0 }));
            }
        }
        let weight = 1.0 / set.len().max(1) as f64;
        samples.extend(set.into_iter().map(|(x, y)| (x, y, weight)));
    }
    samples
}

fn names(ranked: &[(GroupId, f64)]) -> Vec<GroupId> {
    ranked.iter().map(|(group, _)| group.clone()).collect()
}

/// The per-group model fitted on `examples` (logistic regression of "this
/// group is gold" on its relative score and its rank, by Newton's method on
/// the log loss).
pub fn fit_per_group(examples: &[Labelled]) -> PerGroup {
    fit_per_group_pooled(&[examples])
}

/// The per-group model fitted on several sets of examples (one per
/// catalog) that weigh the same however many groups and turns each has: a
/// catalog of 150 groups would otherwise outweigh one of 8 by far.
pub fn fit_per_group_pooled(sets: &[&[Labelled]]) -> PerGroup {
    let mut samples: Vec<Sample> = Vec::new();
    for examples in sets {
        let count: usize = examples.iter().map(|e| e.scores.len()).sum();
        let weight = 1.0 / count.max(1) as f64;
        samples.extend(group_samples(examples, weight));
    }
    fit_logistic(&samples)
}

/// One group of one labelled turn, as the per-group model sees it.
struct Sample {
    relative: f64,
    log_rank: f64,
    gold: f64,
    weight: f64,
}

/// A sample for every group with evidence (a score above 0) of every
/// example: its score over the best one, the log of its place, and whether
/// it is gold.
fn group_samples(examples: &[Labelled], weight: f64) -> Vec<Sample> {
    let mut samples = Vec::new();
    for example in examples {
        let top = example.scores.iter().copied().fold(0.0_f64, f64::max);
        let ranks = ranks(&example.scores);
        for (index, (score, rank)) in example.scores.iter().zip(ranks).enumerate() {
            // The model leaves groups without evidence at 0; they teach it nothing.
            if *score <= 0.0 {
                continue;
            }
            samples.push(Sample {
                relative: score / top,
                log_rank: (rank as f64).ln(),
                gold: if example.gold.contains(&index) {
                    1.0
                } else {
                    0.0
                },
                weight,
            });
        }
    }
    samples
}

/// Weighted logistic regression of gold on the relative score and the log
/// rank, by Newton's method (a small ridge keeps it defined when every
/// catalog is small and ranks barely vary). A positive rank slope would
/// let a lower-scored group outrank a better one, so it is held at 0.
fn fit_logistic(samples: &[Sample]) -> PerGroup {
    let total: f64 = samples.iter().map(|s| s.weight).sum();
    if samples.is_empty() || total <= 0.0 {
        return DEFAULT_PER_GROUP;
    }
    let mut beta = newton(samples, total, true);
    if beta[1] > 0.0 {
        beta = newton(samples, total, false);
    }
    if beta.iter().any(|b| !b.is_finite()) {
        return DEFAULT_PER_GROUP;
    }
    PerGroup {
        weight: beta[0],
        rank: beta[1],
        bias: beta[2],
    }
}

/// `[weight, rank, bias]` of the weighted logistic regression on `samples`
/// (`total` their weight), the rank held at 0 unless `with_rank`.
fn newton(samples: &[Sample], total: f64, with_rank: bool) -> [f64; 3] {
    const STEPS: usize = 50;
    const RIDGE: f64 = 1e-4;
    let mut beta = [0.0_f64; 3];
    for _ in 0..STEPS {
        let mut gradient = [0.0_f64; 3];
        let mut hessian = [[0.0_f64; 3]; 3];
        for sample in samples {
            let log_rank = if with_rank { sample.log_rank } else { 0.0 };
            let x = [sample.relative, log_rank, 1.0];
            let p = sigmoid((0..3).map(|i| beta[i] * x[i]).sum());
            let w = sample.weight / total;
            for i in 0..3 {
                gradient[i] += w * (p - sample.gold) * x[i];
                for j in 0..3 {
                    hessian[i][j] += w * p * (1.0 - p) * x[i] * x[j];
                }
            }
        }
        for (i, row) in hessian.iter_mut().enumerate() {
            row[i] += RIDGE;
            gradient[i] += RIDGE * beta[i];
        }
        let Some(step) = solve3(hessian, gradient) else {
            break;
        };
        for i in 0..3 {
            beta[i] -= step[i];
        }
        if step.iter().all(|s| s.abs() < 1e-9) {
            break;
        }
    }
    beta
}

/// `x` with `a x = b`, by Gaussian elimination with partial pivoting;
/// `None` when `a` is singular.
fn solve3(mut a: [[f64; 3]; 3], mut b: [f64; 3]) -> Option<[f64; 3]> {
    for column in 0..3 {
        let pivot =
            (column..3).max_by(|i, j| a[*i][column].abs().total_cmp(&a[*j][column].abs()))?;
        if a[pivot][column].abs() < 1e-15 {
            return None;
        }
        a.swap(column, pivot);
        b.swap(column, pivot);
        let pivot_row = a[column];
        for row in column + 1..3 {
            let factor = a[row][column] / pivot_row[column];
            for (value, above) in a[row].iter_mut().zip(pivot_row).skip(column) {
                *value -= factor * above;
            }
            b[row] -= factor * b[column];
        }
    }
    let mut x = [0.0; 3];
    for row in (0..3).rev() {
        let rest: f64 = (row + 1..3).map(|k| a[row][k] * x[k]).sum();
        x[row] = (b[row] - rest) / a[row][row];
    }
    Some(x)
}

/// One labelled turn for fitting and checking calibration: its raw scores
/// and the indexes (in router group order) of the groups it needs.
#[derive(Clone, Debug)]
pub struct Labelled {
    /// Raw scores.
    pub scores: Vec<f64>,
    /// Indexes of the gold groups.
    pub gold: Vec<usize>,
}

/// The temperature (from a grid) whose confidence best predicts, on
/// `examples`, whether the routed groups hold every gold group (lowest Brier
/// score).
pub fn fit_temperature(router: &Router, examples: &[Labelled]) -> f64 {
    let grid = [
        0.02, 0.03, 0.04, 0.05, 0.06, 0.08, 0.1, 0.12, 0.15, 0.2, 0.25, 0.3, 0.4, 0.5, 0.7, 1.0,
    ];
    let groups = router.groups();
    grid.into_iter()
        .map(|temperature| {
            let mut brier = 0.0;
            for example in examples {
                let probabilities = probabilities(&example.scores, temperature);
                let mut ranked: Vec<(usize, f64)> = probabilities.into_iter().enumerate().collect();
                ranked.sort_by(|a, b| b.1.total_cmp(&a.1));
                let named: Vec<(GroupId, f64)> = ranked
                    .iter()
                    .map(|(i, p)| (groups[*i].clone(), *p))
                    .collect();
                let (routed, confidence) = route_by_mass(&named, router.taxonomy.max_groups);
                let covered = example.gold.iter().all(|g| routed.contains(&groups[*g]));
                let truth = if covered { 1.0 } else { 0.0 };
                brier += (confidence - truth).powi(2);
            }
            (temperature, brier)
        })
        .min_by(|a, b| a.1.total_cmp(&b.1))
        .map_or(DEFAULT_TEMPERATURE, |(temperature, _)| temperature)
}
