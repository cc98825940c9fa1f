//! [`ToolPolicy`]: which groups, tools and actions one caller may use. A
//! caller sees the catalog through its policy ([`Catalog::restricted`]):
//! what it may not use is absent, so every question about it is answered
//! as for a tool or group that does not exist.
//!
//! [`Catalog::restricted`]: crate::Catalog::restricted

use std::collections::{BTreeMap, BTreeSet};

use crate::action::ActionPolicy;
use crate::name::GroupId;

/// Allow and deny lists at group, tool and action level. A tool must pass
/// every list given: its group's, its own, and (for a polymorphic tool) an
/// action its action lists allow. Core tools are always allowed.
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

    /// Whether the tool `name` of `group` (`None`: a core tool) may be used.
    pub fn allows_tool(&self, group: Option<&GroupId>, name: &str) -> bool {
        let Some(group) = group else {
            return true;
        };
        self.allows_group(group.as_str())
            && self
                .allow_tools
                .as_ref()
                .is_none_or(|allowed| allowed.contains(name))
            && !self.deny_tools.contains(name)
    }

    /// The action lists of the polymorphic tool `name`, when it has any.
    pub fn actions_of(&self, name: &str) -> Option<&ActionPolicy> {
        self.actions.get(name)
    }

    /// Whether `action` of the tool `name` may be called.
    pub fn allows_action(&self, name: &str, action: &str) -> bool {
        self.actions_of(name)
            .is_none_or(|policy| policy.allows(action))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn set(names: &[&str]) -> BTreeSet<String> {
        names.iter().map(|name| (*name).to_owned()).collect()
    }

    #[test]
    fn a_tool_passes_every_list_given() {
        let time = GroupId::new("time").unwrap();
        let files = GroupId::new("files").unwrap();
        let policy = ToolPolicy {
            allow_groups: Some(set(&["time", "files"])),
            deny_tools: set(&["files_write"]),
            ..ToolPolicy::default()
        };
        assert!(policy.allows_tool(Some(&time), "time_now"));
        assert!(policy.allows_tool(Some(&files), "files_read"));
        assert!(!policy.allows_tool(Some(&files), "files_write"));
        assert!(!policy.allows_tool(Some(&GroupId::new("web").unwrap()), "web"));
        assert!(policy.allows_tool(None, "load_tool_group"));
        assert!(!policy.is_unrestricted());
        assert!(ToolPolicy::default().is_unrestricted());

        let only = ToolPolicy {
            allow_tools: Some(set(&["time_now"])),
            deny_groups: set(&["files"]),
            ..ToolPolicy::default()
        };
        assert!(only.allows_tool(Some(&time), "time_now"));
        assert!(!only.allows_tool(Some(&time), "time_convert"));
        assert!(!only.allows_group("files"));
    }

    #[test]
    fn actions_are_checked_per_tool() {
        let policy = ToolPolicy {
            actions: BTreeMap::from([(
                "web".to_owned(),
                ActionPolicy {
                    allow: None,
                    deny: vec!["fetch".to_owned()],
                },
            )]),
            ..ToolPolicy::default()
        };
        assert!(policy.allows_action("web", "search"));
        assert!(!policy.allows_action("web", "fetch"));
        assert!(policy.allows_action("github", "fetch"));
    }
}
