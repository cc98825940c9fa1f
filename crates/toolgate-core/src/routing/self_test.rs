//! [`SelfTest`]: what a router finds of its own catalog before its first
//! turn. The calibration fitted offline states the chance that the routed
//! groups hold a turn's needs as it was on the catalogs it was fitted on; on
//! a catalog whose groups are easier (or harder) to tell apart it is off by
//! 10 points or more. Every tool's description is a turn the catalog
//! itself supplies, and its own group is the answer: each probe is scored
//! with its tool left out (so its siblings and its group's own document
//! must carry it), routed like any turn, and whether the routed groups hold
//! its group is an outcome. A recalibration fitted to those outcomes
//! ([`OnlineCalibration`]) restates the confidence for this catalog, and is
//! the prior a router that learns from its turns starts from.
//!
//! Probes ask for one group each, by the catalog's own words, and for the
//! groups the catalog says that one needs besides: a probe from a tool that
//! requires an id ([`IdFinders`]) holds only when the group of the tool that
//! finds it is relied on too, as a real turn asking for that tool needs it.
//! Turns that need a group nothing in the catalog ties to the one they name
//! (a file server to save what a search found, say) are beyond them, and
//! only outcomes of real turns teach those.
//!
//! This module holds the probes and what their outcomes come to; the
//! router routes them ([`SelfTest::run`] sits beside the
//! [`Router`](crate::routing::Router), whose decisions it takes), and a
//! scorer gives their evidence ([`GroupScorer::probes`]).
//!
//! [`GroupScorer::probes`]: crate::routing::GroupScorer::probes

use serde::Serialize;

use crate::catalog::Catalog;
use crate::name::{GroupId, ToolName};
use crate::routing::decision::Decision;
use crate::routing::id_finders::IdFinders;
use crate::routing::online::{OnlineCalibration, Recalibration};

/// Most probes a self-test routes: enough to fit a slope and an intercept,
/// few enough to cost well under a second at start-up on 4,000 tools.
pub const MAX_PROBES: usize = 200;

/// What a probe needs of a decision to hold.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ProbeNeeds {
    /// Its tool's group: routed.
    pub group: GroupId,
    /// The groups of the tools that find the ids its tool requires: relied
    /// on ([`Decision::relies_on`]: routed, or shown for their finder).
    pub finders: Vec<GroupId>,
}

impl ProbeNeeds {
    /// Whether `decision` holds all of it.
    pub fn held_by(&self, decision: &Decision) -> bool {
        decision.routed.contains(&self.group)
            && self.finders.iter().all(|group| decision.relies_on(group))
    }
}

/// The tools a self-test turns into probes, as `(index in tool_names, its
/// description, what it needs)`: tools with a description whose group has
/// another tool (a probe's own tool is left out), spread evenly over
/// `tool_names`, at most [`MAX_PROBES`]; each needs its group, and the
/// groups of the `finders` of the ids it requires.
pub fn probe_tools(
    catalog: &Catalog,
    tool_names: &[ToolName],
    finders: &IdFinders,
) -> Vec<(usize, String, ProbeNeeds)> {
    let eligible: Vec<(usize, &ToolName, GroupId, String)> = tool_names
        .iter()
        .enumerate()
        .filter_map(|(index, name)| {
            let tool = catalog.tool(name.as_str())?;
            let group = tool.group?;
            let description = tool.definition.description.trim();
            let siblings = catalog.group_tools(group.as_str()).count();
            (!description.is_empty() && siblings >= 2)
                .then(|| (index, name, group.clone(), description.to_owned()))
        })
        .collect();
    let step = eligible.len().div_ceil(MAX_PROBES).max(1);
    eligible
        .into_iter()
        .step_by(step)
        .map(|(index, name, group, description)| {
            let mut finder_groups: Vec<GroupId> = Vec::new();
            for finder in finders.needed_by(&group, Some(std::slice::from_ref(name))) {
                if !finder_groups.contains(&finder.group) {
                    finder_groups.push(finder.group.clone());
                }
            }
            let needs = ProbeNeeds {
                group,
                finders: finder_groups,
            };
            (index, description, needs)
        })
        .collect()
}

/// What routing the catalog's own tools as turns found.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct SelfTest {
    /// Probes routed.
    pub probes: usize,
    /// Those whose decisions held what they need ([`ProbeNeeds`]).
    pub held: usize,
    /// Their mean confidence, as fitted offline.
    pub mean_fitted: f64,
    /// The fitted confidence's recalibration for this catalog.
    pub recalibration: Recalibration,
}

impl SelfTest {
    /// What the probes' `outcomes` (each decision's fitted confidence and
    /// whether it held what its probe needs) found: the recalibration fitted
    /// to them, drawn towards "no change" as [`OnlineCalibration`] draws it;
    /// `None` without outcomes. [`SelfTest::run`] routes the probes for
    /// them.
    pub(crate) fn from_outcomes(outcomes: Vec<(f64, bool)>) -> Option<Self> {
        if outcomes.is_empty() {
            return None;
        }
        let probes = outcomes.len();
        let held = outcomes.iter().filter(|(_, held)| *held).count();
        let mean_fitted = outcomes.iter().map(|(c, _)| c).sum::<f64>() / probes as f64;
        let recalibration = OnlineCalibration::default()
            .with_outcomes(outcomes)
            .recalibration();
        Some(Self {
            probes,
            held,
            mean_fitted,
            recalibration,
        })
    }

    /// Share of probes held.
    pub fn held_share(&self) -> f64 {
        self.held as f64 / self.probes.max(1) as f64
    }
}

#[cfg(test)]
#[path = "self_test_tests.rs"]
mod tests;
