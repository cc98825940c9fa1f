//! What a turn's calls show of its routing decision: whether the groups it
//! relied on (routed, learned from earlier misses, and those of the id
//! finders shown beside its tools) held every group the
//! model used, and which groups outside the routed ones it used. A turn
//! that used a tool of a group it was not routed to, or asked
//! `load_tool_group` for one, needed more than the ranking gave it; a turn
//! whose grouped calls all fell inside the groups it relied on was covered.
//! A turn that used no grouped tool says nothing either way. The router's
//! online calibration learns from these
//! ([`toolgate_core::routing::Router::record_outcome`]), and its learned
//! recovery groups from the groups missed
//! ([`toolgate_core::routing::Router::record_misses`]).

use serde_json::Value;
use toolgate_core::routing::Decision;
use toolgate_core::{Catalog, GroupId, MetaCall, MetaTool};

/// A routed turn's decision and what its calls have shown so far.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct RouteOutcome {
    /// The decision's confidence before any online recalibration.
    fitted_confidence: f64,
    routed: Vec<GroupId>,
    /// The groups it relied on beside `routed`: the learned recovery
    /// groups, and the groups of the id finders shown.
    beside: Vec<GroupId>,
    /// A grouped tool was used.
    used: bool,
    /// The groups outside `routed` used or asked for, in first-use order.
    missed: Vec<GroupId>,
}

/// What a routed turn showed of its decision.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct RouteLabel {
    /// The decision's confidence before any online recalibration.
    pub(crate) fitted_confidence: f64,
    /// Whether the groups it relied on (routed, learned and the id
    /// finders') held every group the turn used.
    pub(crate) held: bool,
    /// The groups the turn used or asked for outside the routed ones.
    pub(crate) missed: Vec<GroupId>,
}

impl RouteOutcome {
    pub(crate) fn new(decision: &Decision) -> Self {
        Self {
            fitted_confidence: decision.fitted_confidence,
            routed: decision.routed.clone(),
            beside: decision
                .learned
                .iter()
                .chain(decision.finders.iter().map(|finder| &finder.group))
                .cloned()
                .collect(),
            used: false,
            missed: Vec::new(),
        }
    }

    /// Notes a call the model made: `name` with its `arguments` text.
    pub(crate) fn observe(&mut self, catalog: &Catalog, name: &str, arguments: &str) {
        let group = match MetaTool::from_name(name) {
            Some(meta) => {
                let arguments: Value = serde_json::from_str(arguments).unwrap_or(Value::Null);
                match MetaCall::parse(meta, &arguments) {
                    Ok(MetaCall::Load { group, .. }) => catalog
                        .groups()
                        .find(|g| g.id.as_str() == group)
                        .map(|g| g.id.clone()),
                    Ok(MetaCall::CallTool { tool, .. }) => group_of(catalog, &tool),
                    Ok(MetaCall::Unload { .. } | MetaCall::FindGroups { .. }) | Err(_) => None,
                }
            }
            None => group_of(catalog, name),
        };
        if let Some(group) = group {
            self.used = true;
            if !self.routed.contains(&group) && !self.missed.contains(&group) {
                self.missed.push(group);
            }
        }
    }

    /// What the turn showed, once a grouped tool was used or a group
    /// outside the routed ones asked for.
    pub(crate) fn label(&self) -> Option<RouteLabel> {
        self.used.then(|| RouteLabel {
            fitted_confidence: self.fitted_confidence,
            held: self.missed.iter().all(|group| self.beside.contains(group)),
            missed: self.missed.clone(),
        })
    }
}

/// The group of a catalog tool (or of the tool an alias names).
fn group_of(catalog: &Catalog, name: &str) -> Option<GroupId> {
    catalog.resolve(name)?.group.cloned()
}

#[cfg(test)]
#[path = "route_outcome_tests.rs"]
mod tests;
