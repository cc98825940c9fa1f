//! [`ToolPolicy`]: which groups, tools and actions one caller may use, and
//! [`ToolPolicy::permits`], the one decision every listing and every call
//! is judged by. A caller sees the catalog through its policy
//! ([`Catalog::restricted`]): what it may not use is absent, so every
//! question about it is answered as for a tool or group that does not exist.
//!
//! [`Catalog::restricted`]: crate::Catalog::restricted

use std::collections::{BTreeMap, BTreeSet};

use crate::action::ActionPolicy;
use crate::name::GroupId;
use crate::origin::Origin;

/// Allow and deny lists at group, tool and action level.
///
/// Every tool is judged, meta-tools and core tools included:
/// - a meta-tool (`load_tool_group`, `call_tool`, ...) is how a client
///   reaches its groups: it passes unless `deny_tools` names it;
/// - a core tool (no group) passes unless `deny_tools` names it; when
///   `allow_tools` is set it must name it, and when only `allow_groups` is
///   set (no `allow_tools`), no core tool passes: "only these groups" leaves
///   out what belongs to none;
/// - a grouped tool passes when its group passes both group lists, the tool
///   passes both tool lists, and (for an action of a polymorphic tool) the
///   action passes the tool's action lists.
///
/// A polymorphic tool's action is also judged under the name of the tool it
/// runs (its former name, an alias now): `deny_tools = ["web_fetch"]` denies
/// the `fetch` action of `web`, and `allow_tools = ["web_search"]` allows
/// `web`'s `search` action alone.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct ToolPolicy {
    /// When set, only these groups.
    pub allow_groups: Option<BTreeSet<String>>,
    /// Never these groups.
    pub deny_groups: BTreeSet<String>,
    /// When set, only these tools (of the groups allowed).
    pub allow_tools: Option<BTreeSet<String>>,
    /// Never these tools.
    pub deny_tools: BTreeSet<String>,
    /// Per polymorphic tool, the actions allowed and denied.
    pub actions: BTreeMap<String, ActionPolicy>,
}

/// Where a tool sits, as a policy judges it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ToolKind<'a> {
    /// A meta-tool: how a client reaches its groups.
    Meta,
    /// A core tool: in no group.
    Core,
    /// A tool of this group.
    Grouped(&'a str),
}

impl<'a> ToolKind<'a> {
    /// Where a tool from `origin` in `group` (`None`: no group) sits.
    pub fn of(origin: &Origin, group: Option<&'a GroupId>) -> Self {
        match (origin, group) {
            (Origin::MetaTool, _) => Self::Meta,
            (_, None) => Self::Core,
            (_, Some(group)) => Self::Grouped(group.as_str()),
        }
    }
}

/// One action of a polymorphic tool, as a call resolves it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ActionTarget<'a> {
    /// The action, e.g. `fetch`.
    pub name: &'a str,
    /// The tool the action runs, by its own name (`web_fetch`), when it
    /// has one apart from the polymorphic tool's.
    pub member: Option<&'a str>,
}

/// A tool (for a listing) or a call (as it will run: after aliases, fixed
/// arguments and the action are resolved), as [`ToolPolicy::permits`]
/// judges it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PolicyTarget<'a> {
    /// Where the tool sits.
    pub kind: ToolKind<'a>,
    /// The tool, by the name the catalog lists it under.
    pub tool: &'a str,
    /// The action called, for a polymorphic tool.
    pub action: Option<ActionTarget<'a>>,
}

impl<'a> PolicyTarget<'a> {
    /// The tool `tool` of `kind`, with no action.
    pub fn tool(kind: ToolKind<'a>, tool: &'a str) -> Self {
        Self {
            kind,
            tool,
            action: None,
        }
    }

    /// This target, calling `action` (run by the tool `member`).
    pub fn with_action(mut self, action: &'a str, member: Option<&'a str>) -> Self {
        self.action = Some(ActionTarget {
            name: action,
            member,
        });
        self
    }

    /// The names the target goes by: the tool's, then its action's tool's.
    fn names(&self) -> impl Iterator<Item = &'a str> + Clone {
        std::iter::once(self.tool).chain(self.action.and_then(|action| action.member))
    }
}

impl ToolPolicy {
    /// Whether the policy lets everything through.
    pub fn is_unrestricted(&self) -> bool {
        self == &Self::default()
    }

    /// Whether `group` may be used.
    pub fn allows_group(&self, group: &str) -> bool {
        self.allow_groups
            .as_ref()
            .is_none_or(|allowed| allowed.contains(group))
            && !self.deny_groups.contains(group)
    }

    /// Whether `target` may be listed or called: the one decision of the
    /// policy (the rules are on [`ToolPolicy`]).
    pub fn permits(&self, target: &PolicyTarget<'_>) -> bool {
        let names = target.names();
        if names.clone().any(|name| self.deny_tools.contains(name)) {
            return false;
        }
        let listed = |allowed: &BTreeSet<String>| names.clone().any(|name| allowed.contains(name));
        match target.kind {
            ToolKind::Meta => return true,
            ToolKind::Core => {
                if self.allow_tools.is_none() && self.allow_groups.is_some() {
                    return false;
                }
            }
            ToolKind::Grouped(group) => {
                if !self.allows_group(group) {
                    return false;
                }
            }
        }
        if self
            .allow_tools
            .as_ref()
            .is_some_and(|allowed| !listed(allowed))
        {
            return false;
        }
        target
            .action
            .is_none_or(|action| self.allows_action(target.tool, action.name))
    }

    /// The action lists of the polymorphic tool `name`, when it has any.
    pub fn actions_of(&self, name: &str) -> Option<&ActionPolicy> {
        self.actions.get(name)
    }

    /// Whether `action` of the tool `name` passes its action lists (the
    /// tool lists are [`Self::permits`]' business).
    pub fn allows_action(&self, name: &str, action: &str) -> bool {
        self.actions_of(name)
            .is_none_or(|policy| policy.allows(action))
    }

    /// Every group name the policy mentions, with the rule that names it.
    pub fn group_names(&self) -> impl Iterator<Item = (&'static str, &str)> {
        let allowed = self.allow_groups.iter().flatten();
        allowed.map(|name| ("allow_groups", name.as_str())).chain(
            self.deny_groups
                .iter()
                .map(|name| ("deny_groups", name.as_str())),
        )
    }

    /// Every tool name the policy mentions, with the rule that names it.
    pub fn tool_names(&self) -> impl Iterator<Item = (&'static str, &str)> {
        let allowed = self.allow_tools.iter().flatten();
        allowed
            .map(|name| ("allow_tools", name.as_str()))
            .chain(
                self.deny_tools
                    .iter()
                    .map(|name| ("deny_tools", name.as_str())),
            )
            .chain(
                self.actions
                    .keys()
                    .map(|name| ("allow_actions/deny_actions", name.as_str())),
            )
    }
}

#[cfg(test)]
#[path = "policy_tests.rs"]
mod tests;
