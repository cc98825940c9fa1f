//! What a routing decision says: the [`Tier`] of a turn, what it may see
//! ([`Visible`]), the groups routed and how sure the router is
//! ([`Decision`]), and the groups that arrive with only some of their tools
//! ([`PartialGroup`]). Plain values, in a module of their own so that what
//! reads a decision (the token budget, the self-test, the meta-tools'
//! answers) need not reach the [`Router`](crate::routing::Router) that
//! makes it.

use std::fmt;

use crate::name::{GroupId, ToolName};
use crate::routing::id_finders::IdFinder;

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
    /// Calibrated chance that the routed groups (with the learned ones) are
    /// enough (0 to 1): the fitted confidence as the router's
    /// [`OnlineCalibration`](crate::routing::OnlineCalibration) restates it,
    /// else its [`SelfTest`](crate::routing::SelfTest) (the same without
    /// either).
    pub confidence: f64,
    /// The chance as the calibration fitted offline states it, before what the
    /// router found of its catalog
    /// ([`Router::self_tested`](crate::routing::Router::self_tested)) and what
    /// the deployment learned of it: what an outcome is recorded against
    /// ([`Router::record_outcome`](crate::routing::Router::record_outcome)).
    pub fitted_confidence: f64,
    /// The tier that confidence falls in.
    pub tier: Tier,
    /// The groups routed, most probable first.
    pub routed: Vec<GroupId>,
    /// The recovery groups learned from earlier turns' misses
    /// ([`Router::with_learned_recovery`](crate::routing::Router::with_learned_recovery))
    /// that are not among `routed`: shown beside them at the high and medium
    /// tiers. With `routed`, the groups a restricted turn relies on, what an
    /// outcome is labelled against
    /// ([`Router::record_outcome`](crate::routing::Router::record_outcome)).
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
    /// Tools shown because a routed or learned group's shown tool requires an
    /// id they find
    /// ([`Router::with_id_finders`](crate::routing::Router::with_id_finders)),
    /// within the token budget: each is among `partial`'s tools at the high and
    /// medium tiers, and its group among `visible`, counted in the confidence.
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
