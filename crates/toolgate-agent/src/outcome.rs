//! What a turn's calls show of its routing decision: whether the routed
//! groups held every group the model used. A turn that used a tool of a
//! group it was not routed to, or asked `load_tool_group` for one, needed
//! more than the router gave it; a turn whose grouped calls all fell inside
//! the routed groups was covered. A turn that used no grouped tool says
//! nothing either way. The router's online calibration learns from these
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
    /// The groups the turn used or asked for outside the routed ones; the
    /// routed groups held when there are none.
    pub(crate) missed: Vec<GroupId>,
}

impl RouteLabel {
    /// Whether the routed groups held every group the turn used.
    pub(crate) fn held(&self) -> bool {
        self.missed.is_empty()
    }
}

impl RouteOutcome {
    pub(crate) fn new(decision: &Decision) -> Self {
        Self {
            fitted_confidence: decision.fitted_confidence,
            routed: decision.routed.clone(),
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
                    Ok(MetaCall::Load { group }) => catalog
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
            missed: self.missed.clone(),
        })
    }
}

/// The group of a catalog tool (or of the tool an alias names).
fn group_of(catalog: &Catalog, name: &str) -> Option<GroupId> {
    catalog.resolve(name)?.group.cloned()
}

#[cfg(test)]
#[path = "outcome_tests.rs"]
mod tests;
