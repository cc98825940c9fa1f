//! [`Authority`]: who a call acts for and what it may do, decided once where
//! the call came in (a gateway request's client, the user of `toolgate
//! chat`) and carried in its [`CallContext`](crate::CallContext) to
//! everything that acts for it: the toolbox judges the call against it, and
//! a script's host functions (`files`, `fetch`) act with it, never with the
//! gateway's own reach.
//!
//! A context made without one ([`Authority::default`]) may do nothing: a
//! code path that forgets to say who is calling is refused, not allowed.

use std::fmt;
use std::sync::Arc;

use toolgate_core::{PolicyTarget, ToolKind, ToolPolicy};
use toolgate_store::ToolOwner;

/// What the caller may use.
#[derive(Clone, Debug, Default)]
enum Grant {
    /// Nothing: no caller was said.
    #[default]
    Nothing,
    /// Everything: the operator's own use (`toolgate chat`, a gateway on
    /// stdio, the shared token of `--token-file`).
    Everything,
    /// What the client's policy permits.
    Policy(Arc<ToolPolicy>),
}

/// The rate limits of one caller, for what acts on its behalf beyond the
/// call the front end counted itself (a script's host functions).
pub trait CallerLimits: Send + Sync + fmt::Debug {
    /// Counts one use of `tool` against the caller's limits; `Err` is the
    /// text the script reads.
    fn admit(&self, tool: &str) -> Result<(), String>;
}

/// Who a call acts for: what it may use, the limits it counts against, and
/// whose JavaScript tools it writes and runs.
#[derive(Clone, Debug, Default)]
pub struct Authority {
    grant: Grant,
    limits: Option<Arc<dyn CallerLimits>>,
    tool_owner: Option<ToolOwner>,
}

impl Authority {
    /// A caller that may use everything: the operator.
    pub fn everything() -> Self {
        Self {
            grant: Grant::Everything,
            ..Self::default()
        }
    }

    /// A caller that may use what `policy` permits.
    pub fn policy(policy: Arc<ToolPolicy>) -> Self {
        Self {
            grant: Grant::Policy(policy),
            ..Self::default()
        }
    }

    /// A caller that may use nothing (as a context made without one).
    pub fn nothing() -> Self {
        Self::default()
    }

    /// This authority, counting what acts for it against `limits`.
    pub fn with_limits(mut self, limits: Arc<dyn CallerLimits>) -> Self {
        self.limits = Some(limits);
        self
    }

    /// This authority, writing and running the JavaScript tools of `owner`.
    pub fn with_tool_owner(mut self, owner: ToolOwner) -> Self {
        self.tool_owner = Some(owner);
        self
    }

    /// Whose JavaScript tools the caller writes and runs, when the front end
    /// said (else the tools' configured owner).
    pub fn tool_owner(&self) -> Option<&ToolOwner> {
        self.tool_owner.as_ref()
    }

    /// Whether `other` sees what this authority sees: the same grant (the
    /// same policy, not an equal one: a reload makes a new one) and the
    /// same tool owner. A view of the catalog made for one serves the other.
    pub(crate) fn sees_as(&self, other: &Self) -> bool {
        let grant = match (&self.grant, &other.grant) {
            (Grant::Nothing, Grant::Nothing) | (Grant::Everything, Grant::Everything) => true,
            (Grant::Policy(one), Grant::Policy(two)) => Arc::ptr_eq(one, two),
            (Grant::Nothing | Grant::Everything | Grant::Policy(_), _) => false,
        };
        grant && self.tool_owner == other.tool_owner
    }

    /// Whether the caller sees less than the whole catalog: a policy that
    /// restricts something, or nothing at all.
    pub fn narrows(&self) -> bool {
        match &self.grant {
            Grant::Nothing => true,
            Grant::Everything => false,
            Grant::Policy(policy) => !policy.is_unrestricted(),
        }
    }

    /// The policy whose group lists a view of the catalog applies; `None`
    /// when the caller sees the whole catalog. A caller that may use
    /// nothing gets lists no group passes.
    pub(crate) fn group_lists(&self) -> Option<Arc<ToolPolicy>> {
        match &self.grant {
            Grant::Nothing => Some(Arc::new(ToolPolicy {
                allow_groups: Some(Default::default()),
                ..ToolPolicy::default()
            })),
            Grant::Everything => None,
            Grant::Policy(policy) => (!policy.is_unrestricted()).then(|| Arc::clone(policy)),
        }
    }

    /// Whether the caller may list or call `target`.
    pub fn permits(&self, target: &PolicyTarget<'_>) -> bool {
        match &self.grant {
            Grant::Nothing => false,
            Grant::Everything => true,
            Grant::Policy(policy) => policy.permits(target),
        }
    }

    /// Whether the caller may do what the built-in tool `tool` of `group`
    /// does (as its `action` when the group is one polymorphic tool), and
    /// counts it against its limits: how a script's host function is
    /// judged, whichever way the group is exposed. `Err` is the text the
    /// script reads.
    pub fn reach(&self, group: &str, tool: &str, action: &str) -> Result<(), String> {
        let target =
            PolicyTarget::tool(ToolKind::Grouped(group), group).with_action(action, Some(tool));
        if !self.permits(&target) {
            return Err(format!("{tool} is not available to this caller"));
        }
        match &self.limits {
            Some(limits) => limits.admit(tool),
            None => Ok(()),
        }
    }
}

#[cfg(test)]
#[path = "authority_tests.rs"]
mod tests;
