//! A catalog as one caller sees it ([`Catalog::restricted`]): what its
//! policy lets it use, and in a group of its own, its own tools
//! ([`Catalog::restricted_with`]).

use std::collections::{BTreeMap, HashMap, HashSet};
use std::hash::{Hash, Hasher};

use super::{
    Alias, Catalog, CatalogTool, GroupEntry, GroupListing, OwnTools, ToolEntry, ToolState,
};
use crate::name::{GroupId, ToolName};
use crate::policy::{PolicyTarget, ToolKind, ToolPolicy};
use crate::tool::ToolDefinition;

impl Catalog {
    /// The catalog as a caller under `policy` sees it: the groups it may
    /// not use are gone, as if never registered (a group left with no tool
    /// goes too, unless its tools are not listed yet), each tool is what
    /// `view` makes of it (its definition, narrowed to the allowed actions
    /// for a polymorphic tool; `None`: the caller may not use it, and it is
    /// gone), and so are the aliases of what is gone. Order and revision are
    /// the catalog's. [`Catalog::permitted`] is the `view` of a catalog
    /// without polymorphic tools.
    pub fn restricted(
        &self,
        policy: &ToolPolicy,
        view: impl Fn(CatalogTool<'_>) -> Option<ToolDefinition>,
    ) -> Catalog {
        self.restricted_with(policy, view, None)
    }

    /// [`Catalog::restricted`], with `own`'s group holding the caller's own
    /// tools in place of the ones listed there (each client's JavaScript
    /// tools, say). That group stays in the view while the policy allows it,
    /// with no tool if the caller has none, as the place to write them. A
    /// tool of `own` whose name the view holds elsewhere is left out.
    pub fn restricted_with(
        &self,
        policy: &ToolPolicy,
        view: impl Fn(CatalogTool<'_>) -> Option<ToolDefinition>,
        own: Option<OwnTools>,
    ) -> Catalog {
        let own_group = own.as_ref().map(|own| own.group.clone());
        let own_scope = own.as_ref().map_or(0, |own| own.scope);
        let (mut tools, kept) = self.viewed_tools(&view, own_group.as_ref());
        let own_members = own.map_or_else(Vec::new, |own| add_own_tools(&mut tools, own));
        let groups = self.allowed_groups(policy, &kept, own_group.as_ref(), own_members);
        let tool_index = reachable_tools(&tools, &groups);
        let aliases = self.permitted_aliases(policy, &tools, &tool_index);
        // Tools of a group gone stay in `tools` (indices hold) but disabled,
        // so no query returns them.
        for entry in &mut tools {
            if !tool_index.contains_key(&entry.definition.name) {
                entry.state = ToolState::Disabled;
            }
        }
        let group_index = groups
            .iter()
            .enumerate()
            .map(|(index, entry)| (entry.group.id.clone(), index))
            .collect();
        Catalog {
            tools,
            tool_index,
            groups,
            group_index,
            aliases,
            revision: self.revision,
            scope: view_scope(policy, own_scope),
        }
    }

    /// The `view` of [`Catalog::restricted`] for tools that are not
    /// polymorphic: each tool as it is, when `policy` permits it.
    pub fn permitted(policy: &ToolPolicy, tool: CatalogTool<'_>) -> Option<ToolDefinition> {
        let target = PolicyTarget::tool(tool.kind(), tool.definition.name.as_str());
        policy.permits(&target).then(|| tool.definition.clone())
    }

    /// Each tool as `view` makes it, in catalog order, and for each of the
    /// catalog's tools its place among them (`None`: gone). The tools listed
    /// in the caller's own group are gone: its own tools take their place.
    fn viewed_tools(
        &self,
        view: &impl Fn(CatalogTool<'_>) -> Option<ToolDefinition>,
        own_group: Option<&GroupId>,
    ) -> (Vec<ToolEntry>, Vec<Option<usize>>) {
        let mut kept = Vec::with_capacity(self.tools.len());
        let mut tools = Vec::new();
        for (index, entry) in self.tools.iter().enumerate() {
            let listed_in_own = own_group.is_some() && entry.group.as_ref() == own_group;
            // A retired tool (a group's earlier listing, a member of a group
            // now one polymorphic tool) is in no view: its name may be an
            // alias now, or another tool's.
            let retired = self.tool_index.get(&entry.definition.name) != Some(&index);
            let definition = if listed_in_own || retired {
                None
            } else {
                view(entry.view())
            };
            kept.push(definition.map(|definition| {
                tools.push(ToolEntry {
                    // A narrowed definition weighs about what it narrows.
                    weight: entry.weight,
                    definition,
                    group: entry.group.clone(),
                    origin: entry.origin.clone(),
                    state: entry.state,
                });
                tools.len() - 1
            }));
        }
        (tools, kept)
    }

    /// The groups `policy` allows, each with its members' places in the
    /// view's tools (`kept`); the caller's own group with `own_members`. A
    /// listed group left with no tool is gone, unless it is the caller's own.
    fn allowed_groups(
        &self,
        policy: &ToolPolicy,
        kept: &[Option<usize>],
        own_group: Option<&GroupId>,
        mut own_members: Vec<usize>,
    ) -> Vec<GroupEntry> {
        let mut groups = Vec::new();
        for entry in &self.groups {
            if !policy.allows_group(entry.group.id.as_str()) {
                continue;
            }
            let is_own = own_group == Some(&entry.group.id);
            let members: Vec<usize> = if is_own {
                std::mem::take(&mut own_members)
            } else {
                entry
                    .members
                    .iter()
                    .filter_map(|&index| kept[index])
                    .collect()
            };
            if members.is_empty() && entry.listing == GroupListing::Listed && !is_own {
                continue;
            }
            groups.push(GroupEntry {
                group: entry.group.clone(),
                origin: entry.origin.clone(),
                listing: entry.listing,
                visibility: entry.visibility,
                members,
            });
        }
        groups
    }

    /// The aliases whose tool the view holds, and for an alias naming an
    /// action, whose action `policy` permits.
    fn permitted_aliases(
        &self,
        policy: &ToolPolicy,
        tools: &[ToolEntry],
        tool_index: &HashMap<ToolName, usize>,
    ) -> BTreeMap<String, Alias> {
        self.aliases
            .iter()
            .filter(|(old, alias)| {
                let Some(&index) = tool_index.get(&alias.tool) else {
                    return false;
                };
                alias.action.as_deref().is_none_or(|action| {
                    let kind = tools[index].view().kind();
                    let target = PolicyTarget::tool(kind, alias.tool.as_str())
                        .with_action(action, Some(old.as_str()));
                    policy.permits(&target)
                })
            })
            .map(|(old, alias)| (old.clone(), alias.clone()))
            .collect()
    }
}

impl<'c> CatalogTool<'c> {
    /// Where the tool sits, as a policy judges it: a meta-tool, a core tool
    /// or a tool of its group.
    pub fn kind(&self) -> ToolKind<'c> {
        ToolKind::of(self.origin, self.group)
    }
}

/// Adds `own`'s tools to `tools` in its group, but for a name `tools`
/// holds already, and gives their places.
fn add_own_tools(tools: &mut Vec<ToolEntry>, own: OwnTools) -> Vec<usize> {
    let taken: HashSet<ToolName> = tools
        .iter()
        .map(|entry| entry.definition.name.clone())
        .collect();
    let mut members = Vec::new();
    for (definition, origin) in own.tools {
        if taken.contains(&definition.name) {
            continue;
        }
        tools.push(ToolEntry {
            weight: definition.weight(),
            definition,
            group: Some(own.group.clone()),
            origin,
            state: ToolState::Enabled,
        });
        members.push(tools.len() - 1);
    }
    members
}

/// The index of the tools a query may reach: the core tools and the tools
/// of the groups kept. A member whose group is gone goes with it.
fn reachable_tools(tools: &[ToolEntry], groups: &[GroupEntry]) -> HashMap<ToolName, usize> {
    let group_ids: HashSet<&GroupId> = groups.iter().map(|entry| &entry.group.id).collect();
    tools
        .iter()
        .enumerate()
        .filter(|(_, entry)| entry.group.as_ref().is_none_or(|id| group_ids.contains(id)))
        .map(|(index, entry)| (entry.definition.name.clone(), index))
        .collect()
}

/// A view's scope: a hash of its policy and its owner's tools, never 0 (the
/// catalog's own).
fn view_scope(policy: &ToolPolicy, own_scope: u64) -> u64 {
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    (policy, own_scope).hash(&mut hasher);
    hasher.finish() | 1
}

#[cfg(test)]
#[path = "restricted_tests.rs"]
mod tests;
