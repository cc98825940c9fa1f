//! What a turn's calls show of its routing decision: whether the routed
//! groups held every group the model used. A turn that used a tool of a
//! group it was not routed to, or asked `load_tool_group` for one, needed
//! more than the router gave it; a turn whose grouped calls all fell inside
//! the routed groups was covered. A turn that used no grouped tool says
//! nothing either way. The router's online calibration learns from these
//! ([`toolgate_core::routing::Router::record_outcome`]).

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
    /// A group outside `routed` was used or asked for.
    missed: bool,
}

impl RouteOutcome {
    pub(crate) fn new(decision: &Decision) -> Self {
        Self {
            fitted_confidence: decision.fitted_confidence,
            routed: decision.routed.clone(),
            used: false,
            missed: false,
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
            if !self.routed.contains(&group) {
                self.missed = true;
            }
        }
    }

    /// The fitted confidence and whether the routed groups held, once a
    /// grouped tool was used or a group outside them asked for.
    pub(crate) fn label(&self) -> Option<(f64, bool)> {
        (self.used || self.missed).then_some((self.fitted_confidence, !self.missed))
    }
}

/// The group of a catalog tool (or of the tool an alias names).
fn group_of(catalog: &Catalog, name: &str) -> Option<GroupId> {
    catalog.resolve(name)?.group.cloned()
}

#[cfg(test)]
#[path = "outcome_tests.rs"]
mod tests;
