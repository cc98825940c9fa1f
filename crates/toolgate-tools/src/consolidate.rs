//! Groups offered as one polymorphic tool: which groups ([`polymorphic_groups`])
//! and how a group's tools become the actions of one tool ([`consolidate`]).

use std::collections::BTreeMap;
use std::sync::Arc;

use toolgate_core::{
    ActionPolicy, Alias, Catalog, GroupId, Origin, PolymorphicTool, ToolDefinition, ToolName,
    action_names,
};

use crate::builtin::BuiltinTools;
use crate::error::ConsolidationError;
use crate::registry::{Consolidated, Member, Route, ToolRegistry};
use crate::settings::{GroupExposure, GroupSettings};

/// The `[groups]` key whose settings apply to every group without its own
/// (but for groups of one tool, which one action would not make smaller).
pub const ALL_GROUPS: &str = "*";

/// Why a group is consolidated.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Consolidation {
    /// Named in the configuration (or a built-in default): it must work.
    Named,
    /// Only through `*`: groups of one tool, and groups that cannot be one
    /// tool, stay as they are.
    Every,
}

/// The groups to offer as one polymorphic tool: those configured so (by id,
/// or by `*` for every group without its own settings), and the built-ins
/// that are by default unless configured otherwise.
pub(crate) fn polymorphic_groups(
    settings: &BTreeMap<String, GroupSettings>,
    catalog: &Catalog,
) -> BTreeMap<GroupId, (ActionPolicy, Consolidation)> {
    let mut groups = BTreeMap::new();
    let default_polymorphic = BuiltinTools::polymorphic_group_ids();
    for group in catalog.groups() {
        let id = group.id.as_str();
        let own = settings.get(id);
        let chosen = own.or_else(|| settings.get(ALL_GROUPS));
        let builtin = default_polymorphic.contains(&id)
            && catalog
                .group_tools(id)
                .next()
                .and_then(|t| catalog.tool(t.name.as_str()))
                .is_some_and(|t| *t.origin == Origin::Builtin);
        let polymorphic = match chosen.and_then(|s| s.expose) {
            Some(GroupExposure::Polymorphic) => true,
            Some(GroupExposure::Tools) => false,
            None => builtin,
        };
        if polymorphic {
            let policy = chosen.map(|s| s.policy.clone()).unwrap_or_default();
            let scope = if own.is_some() || builtin {
                Consolidation::Named
            } else {
                Consolidation::Every
            };
            groups.insert(group.id.clone(), (policy, scope));
        }
    }
    groups
}

/// Replaces `group`'s tools with one polymorphic tool named after the group,
/// their routes with its route, and makes each former tool name an alias of
/// its action. A group with no tools (yet) is left alone.
pub(crate) fn consolidate(
    catalog: &mut Catalog,
    registry: &mut ToolRegistry,
    group: &GroupId,
    policy: &ActionPolicy,
    scope: Consolidation,
) -> Result<(), ConsolidationError> {
    let group = group.as_str();
    let members: Vec<ToolDefinition> = catalog.group_tools(group).cloned().collect();
    let Some(first) = members.first() else {
        return Ok(());
    };
    if scope == Consolidation::Every && members.len() < 2 {
        // One action would only add the action enum.
        return Ok(());
    }
    let origin = catalog
        .tool(first.name.as_str())
        .map(|tool| tool.origin.clone())
        .unwrap_or(Origin::Builtin);
    let name = ToolName::new(group).map_err(ConsolidationError::GroupName)?;
    let description = catalog
        .group(group)
        .map(|g| g.description.clone())
        .unwrap_or_default();
    let refs: Vec<&ToolDefinition> = members.iter().collect();
    let actions = action_names(&refs, group);
    let action_refs: Vec<&str> = actions.iter().map(String::as_str).collect();
    let unknown = policy.unknown_actions(&action_refs);
    if !unknown.is_empty() {
        return Err(ConsolidationError::UnknownActions {
            unknown: unknown.into_iter().map(str::to_owned).collect(),
            actions,
        });
    }
    let (tool, targets) =
        PolymorphicTool::consolidate(name.clone(), description, &refs, group, policy)?;
    let actions: Vec<String> = tool.action_names().into_iter().map(str::to_owned).collect();
    let members_of_actions = targets
        .iter()
        .map(|target| Member {
            definition: (*target).clone(),
            route: registry
                .get(target.name.as_str())
                .cloned()
                .unwrap_or(Route::Unbound),
        })
        .collect();
    catalog.replace_group_tools(group, vec![(tool.definition().clone(), origin)])?;
    let consolidated = Consolidated {
        tool,
        members: members_of_actions,
    };
    for member in &members {
        registry.remove(member.name.as_str());
    }
    for (action, target) in actions.iter().zip(&targets) {
        if target.name != name {
            let alias = Alias::new(name.clone()).with_action(action.as_str());
            catalog.register_alias(target.name.as_str(), alias)?;
        }
    }
    registry.insert(name, Route::Polymorphic(Arc::new(consolidated)));
    Ok(())
}
