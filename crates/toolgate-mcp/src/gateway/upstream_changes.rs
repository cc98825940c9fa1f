//! [`UpstreamChanges`]: what applying a new list of upstreams did, as the
//! reload that asked for it reports it.

use std::fmt;

use toolgate_core::GroupId;
use toolgate_tools::Joined;

/// What applying a new list of upstreams did.
#[derive(Debug, Default)]
pub struct UpstreamChanges {
    /// Upstreams new to the gateway, and how each came in.
    pub added: Vec<(GroupId, Joined)>,
    /// Upstreams whose configuration changed: restarted in place.
    pub changed: Vec<(GroupId, Joined)>,
    /// Upstreams gone from the configuration: stopped, their groups gone.
    pub removed: Vec<GroupId>,
    /// Upstreams that could not be added (their name is another group's),
    /// with why.
    pub refused: Vec<(GroupId, String)>,
}

impl UpstreamChanges {
    /// Whether nothing changed.
    pub fn is_empty(&self) -> bool {
        self.added.is_empty()
            && self.changed.is_empty()
            && self.removed.is_empty()
            && self.refused.is_empty()
    }
}

impl fmt::Display for UpstreamChanges {
    /// One clause per kind of change, `upstreams unchanged` when none.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.is_empty() {
            return f.write_str("upstreams unchanged");
        }
        let mut clauses = Vec::new();
        for (verb, joined) in [("added", &self.added), ("restarted", &self.changed)] {
            if !joined.is_empty() {
                let names: Vec<String> = joined
                    .iter()
                    .map(|(name, joined)| match joined {
                        Joined::Waiting => format!("{name} (starts on first load)"),
                        Joined::Listed(tools) => format!("{name} ({tools} tools)"),
                        Joined::Failed(error) => format!("{name} (failed: {error})"),
                    })
                    .collect();
                clauses.push(format!("upstreams {verb}: {}", names.join(", ")));
            }
        }
        if !self.removed.is_empty() {
            let names: Vec<&str> = self.removed.iter().map(GroupId::as_str).collect();
            clauses.push(format!("upstreams removed: {}", names.join(", ")));
        }
        for (name, reason) in &self.refused {
            clauses.push(format!("upstream {name} not added: {reason}"));
        }
        f.write_str(&clauses.join("; "))
    }
}
