//! How a [`Router`] decides, step by step: each group's chance of being
//! needed, the groups the routing rule routes within the token budget, the
//! id finders shown beside them, the calibrated confidence and its tier,
//! and what the turn then sees. [`Router::decide_with_tools`] and
//! [`Router::decide`] lead here; the methods follow in the order a decision
//! takes them.

use std::borrow::Cow;
use std::collections::HashMap;

use super::{Confidence, Router};
use crate::name::{GroupId, ToolName};
use crate::routing::config::{Intent, Thresholds, UnknownIntent};
use crate::routing::cover::{
    affordable_first, probabilities, route_by_cover, route_by_mass, route_prefix,
};
use crate::routing::decision::{Decision, PartialGroup, Tier, Visible};
use crate::routing::id_finders::IdFinder;
use crate::routing::online::Recalibration;
use crate::routing::scorer::ToolScore;

impl Router {
    /// [`Self::decide`], the routed groups within the token budget when
    /// there is one: each at the cost of its `per_group` best `tools`
    /// (what it then arrives with), or whole.
    pub(super) fn decide_within(
        &self,
        scores: &[f64],
        per_group: Option<usize>,
        tools: &[ToolScore],
    ) -> Decision {
        let ranked = self.ranked(scores);
        if scores.iter().all(|s| *s <= 0.0) {
            return self.undecided(ranked);
        }
        let recalibration = self.recalibration();
        let calibrate = |raw: f64| recalibration.apply(self.calibrate(raw));
        let learned = self.learned_groups();
        let routed =
            self.route_within_budget(&ranked, scores, per_group, tools, &learned, &calibrate);
        let learned: Vec<GroupId> = learned
            .into_iter()
            .filter(|group| !routed.groups.contains(group))
            .collect();
        let relied: Vec<GroupId> = routed.groups.iter().chain(&learned).cloned().collect();
        let finders = self.finders(&relied, &partial_groups(&relied, tools, per_group));
        let fitted_confidence =
            self.calibrate(cover_with_finders(routed.cover, &finders, &relied, &ranked));
        let confidence = recalibration.apply(fitted_confidence);
        let tier = tier_of(confidence, self.taxonomy.thresholds);
        let (visible, partial) =
            self.shown(tier, &routed.groups, &learned, per_group, tools, &finders);
        Decision {
            intent: self.intent(&routed.groups),
            confidence,
            fitted_confidence,
            tier,
            routed: routed.groups,
            learned,
            visible,
            ranked,
            partial,
            passed_over: routed.passed_over,
            finders,
        }
    }

    /// Every group with its chance of being needed under the confidence
    /// model, most probable first.
    fn ranked(&self, scores: &[f64]) -> Vec<(GroupId, f64)> {
        let probabilities = match self.confidence {
            Confidence::PerGroup(model) => model.probabilities(scores),
            Confidence::Softmax { temperature } => probabilities(scores, temperature),
        };
        let mut ranked: Vec<(GroupId, f64)> =
            self.groups().iter().cloned().zip(probabilities).collect();
        ranked.sort_by(|a, b| b.1.total_cmp(&a.1));
        ranked
    }

    /// The decision for a turn with no evidence for any group: what
    /// `[routing] unknown_intent` shows, nothing routed.
    fn undecided(&self, ranked: Vec<(GroupId, f64)>) -> Decision {
        let (tier, visible) = match self.taxonomy.unknown_intent {
            UnknownIntent::Catalog => (Tier::Low, Visible::Catalog),
            UnknownIntent::Recovery => (
                Tier::Medium,
                Visible::Groups(self.taxonomy.recovery_groups.clone()),
            ),
        };
        Decision {
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
        }
    }

    /// What the fitted confidence is restated through: the online
    /// calibration's recalibration, else the self-test's, else none.
    fn recalibration(&self) -> Recalibration {
        self.online_calibration()
            .map(|(recalibration, _)| recalibration)
            .or(self.self_test.map(|test| test.recalibration))
            .unwrap_or(Recalibration::IDENTITY)
    }

    /// The learned recovery groups among the groups this router routes
    /// over (outcomes kept for another catalog, say, name others). They are
    /// shown beside the routed ones, so the token budget counts them first.
    fn learned_groups(&self) -> Vec<GroupId> {
        let groups = self.groups();
        self.learned_recovery()
            .map(|(learned, _)| learned)
            .unwrap_or_default()
            .into_iter()
            .filter(|group| groups.contains(group))
            .collect()
    }

    /// The groups the routing rule routes among those the token budget
    /// affords (all of them without a budget), the `learned` ones counted
    /// first, and what the same rule would route that the budget left out.
    fn route_within_budget(
        &self,
        ranked: &[(GroupId, f64)],
        scores: &[f64],
        per_group: Option<usize>,
        tools: &[ToolScore],
        learned: &[GroupId],
        calibrate: &dyn Fn(f64) -> f64,
    ) -> Routed {
        // The places in `ranked` of the groups the budget affords, when
        // there is one.
        let affordable = match (&self.costs, self.taxonomy.max_token_share) {
            (Some(costs), Some(share)) => Some(costs.affordable(
                ranked,
                share,
                per_group,
                tools,
                learned,
                self.id_finders.as_deref(),
            )),
            _ => None,
        };
        let every: Vec<usize> = (0..ranked.len()).collect();
        let (groups, cover) = self.route_rule(
            ranked,
            affordable.as_deref().unwrap_or(&every),
            scores,
            calibrate,
        );
        // What the same rule routes without the budget, less what it
        // routed within it.
        let passed_over = match affordable {
            // Nothing passed over: the same rule would route the same.
            Some(places) if places.len() < ranked.len() => {
                let (unbudgeted, _) = self.route_rule(ranked, &every, scores, calibrate);
                unbudgeted
                    .into_iter()
                    .filter(|group| !groups.contains(group))
                    .collect()
            }
            _ => Vec::new(),
        };
        Routed {
            groups,
            cover,
            passed_over,
        }
    }

    /// What a decision at `tier` shows. At the high and medium tiers: the
    /// `routed` groups, the recovery groups (medium only) and the `learned`
    /// ones, each partly loaded with its `per_group` best `tools` when it
    /// has scored ones, and the `finders` beside them. At the low tier: the
    /// whole catalog.
    fn shown(
        &self,
        tier: Tier,
        routed: &[GroupId],
        learned: &[GroupId],
        per_group: Option<usize>,
        tools: &[ToolScore],
        finders: &[IdFinder],
    ) -> (Visible, Vec<PartialGroup>) {
        let recovery: &[GroupId] = match tier {
            Tier::High => &[],
            Tier::Medium => &self.taxonomy.recovery_groups,
            Tier::Low => return (Visible::Catalog, Vec::new()),
        };
        let mut groups = routed.to_vec();
        for group in recovery.iter().chain(learned) {
            if !groups.contains(group) {
                groups.push(group.clone());
            }
        }
        let mut partial = partial_groups(&groups, tools, per_group);
        with_finders(&mut groups, &mut partial, finders);
        (Visible::Groups(groups), partial)
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

/// Each of `groups` that has scored tools, with its `per_group` best
/// (`scores` best first); a group without any arrives whole, so it is left
/// out. None without `per_group`: every group arrives whole.
fn partial_groups(
    groups: &[GroupId],
    scores: &[ToolScore],
    per_group: Option<usize>,
) -> Vec<PartialGroup> {
    let Some(count) = per_group else {
        return Vec::new();
    };
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

/// The groups a decision routes, and what routing them within the token
/// budget left out.
struct Routed {
    /// The groups routed, most probable first.
    groups: Vec<GroupId>,
    /// Their raw cover: the chance, before any calibration, that no needed
    /// group is outside them (or the softmax mass they hold).
    cover: f64,
    /// The groups the same rule routes without the budget that it left out.
    passed_over: Vec<GroupId>,
}

/// `cover` with the groups of `finders` held too: the chance of being
/// needed (in `ranked`) of each one outside `relied` leaves the chance that
/// a needed group is outside.
fn cover_with_finders(
    cover: f64,
    finders: &[IdFinder],
    relied: &[GroupId],
    ranked: &[(GroupId, f64)],
) -> f64 {
    let mut cover = cover;
    let mut counted: Vec<&GroupId> = Vec::new();
    for finder in finders {
        if !relied.contains(&finder.group) && !counted.contains(&&finder.group) {
            counted.push(&finder.group);
            if let Some((_, p)) = ranked.iter().find(|(g, _)| *g == finder.group) {
                cover = (cover / (1.0 - p).max(1e-12)).min(1.0);
            }
        }
    }
    cover
}

/// The tier `confidence` falls in.
fn tier_of(confidence: f64, thresholds: Thresholds) -> Tier {
    if confidence >= thresholds.high {
        Tier::High
    } else if confidence >= thresholds.medium {
        Tier::Medium
    } else {
        Tier::Low
    }
}

/// `decision` showing the `count` best of `tools` (best first) in
/// place of its routed groups, at every tier: their groups, each partly
/// loaded with those of its tools, in the order of each group's best
/// (`[routing] route_tools`), beside the learned recovery groups. Its
/// confidence and tier stay the groups' own. Where no tool has evidence
/// (an embeddings endpoint scored the groups alone), the groups'
/// decision stands.
pub(crate) fn showing_best_tools(
    mut decision: Decision,
    tools: &[ToolScore],
    count: usize,
) -> Decision {
    if tools.is_empty() {
        return decision;
    }
    let mut partial: Vec<PartialGroup> = Vec::new();
    for scored in tools.iter().take(count) {
        match partial.iter_mut().find(|p| p.group == scored.group) {
            Some(group) => group.tools.push(scored.tool.clone()),
            None => partial.push(PartialGroup {
                group: scored.group.clone(),
                tools: vec![scored.tool.clone()],
            }),
        }
    }
    decision.routed = partial.iter().map(|p| p.group.clone()).collect();
    decision
        .learned
        .retain(|group| !decision.routed.contains(group));
    let mut visible = decision.routed.clone();
    visible.extend(decision.learned.iter().cloned());
    decision.visible = Visible::Groups(visible);
    decision.passed_over.clear();
    decision.finders.clear();
    decision.partial = partial;
    decision
}
