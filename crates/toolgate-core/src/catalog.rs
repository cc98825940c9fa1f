//! [`Catalog`]: every tool and group known to the process.
//!
//! The catalog owns definitions; active sets only hold group ids and borrow
//! definitions from it at query time. That keeps an active set a few bytes per
//! conversation and makes a tool disabled at run time vanish from every view at
//! once, with no cache to invalidate.
//!
//! Order is registration order everywhere (tools, groups, members), so that the
//! tool list and the prompt section are byte-identical from one turn to the next.
//!
//! A caller's view of the catalog under its policy is built in `catalog/restricted.rs`,
//! aliases (old names that keep working) are defined in `catalog/alias.rs`.

use std::collections::{BTreeMap, HashMap, HashSet};

use crate::action::ACTION_PARAMETER;
use crate::error::CatalogError;
use crate::group::ToolGroup;
use crate::meta_tool::load_tool_group_definition;
use crate::name::{GroupId, ToolName};
use crate::origin::Origin;
use crate::tool::ToolDefinition;

mod alias;
mod restricted;

pub use alias::Alias;

/// Whether a tool is offered at all.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ToolState {
    /// Visible wherever its group is.
    Enabled,
    /// Gone from every query until enabled again.
    Disabled,
}

#[derive(Debug)]
struct ToolEntry {
    definition: ToolDefinition,
    group: Option<GroupId>,
    origin: Origin,
    state: ToolState,
    /// The definition's [weight](ToolDefinition::weight), counted once.
    weight: usize,
}

/// Whether a group's tools are known yet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GroupListing {
    /// Its tools are registered; it is offered when one of them is enabled.
    Listed,
    /// Its tools come later (an MCP server not started yet); it is offered
    /// meanwhile, and whoever loads it lists the tools first.
    Deferred,
}

/// Whether a group's tools wait for `load_tool_group`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum GroupVisibility {
    /// Its tools join a conversation's active set when it is loaded: the
    /// default.
    #[default]
    OnLoad,
    /// Its tools are always visible, like core tools (an MCP server the
    /// operator exposes as core). It is still listed and loadable.
    Always,
}

#[derive(Debug)]
struct GroupEntry {
    group: ToolGroup,
    origin: Origin,
    listing: GroupListing,
    visibility: GroupVisibility,
    members: Vec<usize>,
}

/// One catalog tool as queries return it.
#[derive(Clone, Copy, Debug)]
pub struct CatalogTool<'c> {
    /// The definition sent to models and clients.
    pub definition: &'c ToolDefinition,
    /// Its group; `None` for a core tool.
    pub group: Option<&'c GroupId>,
    /// Where it came from.
    pub origin: &'c Origin,
}

/// Every tool and group known to the process.
///
/// A new catalog already holds the `load_tool_group` meta-tool: it is always core
/// and never grouped.
///
/// ```
/// use serde_json::json;
/// use toolgate_core::{Catalog, GroupId, Origin, ToolDefinition, ToolGroup, ToolName};
///
/// let mut catalog = Catalog::new();
/// let pdf = GroupId::new("pdf")?;
/// let group = ToolGroup::new(pdf.clone(), "PDF Tools", "Read PDF files");
/// catalog.register_group(group, Origin::Builtin)?;
/// let info = ToolDefinition::new(ToolName::new("pdf_info")?, "Page count", json!({}))?;
/// catalog.register_tool(info, Some(&pdf), Origin::Builtin)?;
///
/// let core: Vec<_> = catalog.core_tools().map(|t| t.name.as_str()).collect();
/// assert_eq!(core, ["load_tool_group"]);
/// assert_eq!(catalog.group_tools("pdf").count(), 1);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug)]
pub struct Catalog {
    tools: Vec<ToolEntry>,
    tool_index: HashMap<ToolName, usize>,
    groups: Vec<GroupEntry>,
    group_index: HashMap<GroupId, usize>,
    aliases: BTreeMap<String, Alias>,
    /// Bumped by every change, so what is derived from the catalog (a
    /// router's indexes) knows when to rebuild.
    revision: u64,
    /// 0 for the catalog itself; for a [restricted](Catalog::restricted)
    /// view, a hash of its policy, so what is derived from a view is never
    /// taken for what is derived from another.
    scope: u64,
}

/// One caller's own tools, shown in a group of its view of the catalog in
/// place of the tools listed there ([`Catalog::restricted_with`]).
#[derive(Clone, Debug, PartialEq)]
pub struct OwnTools {
    /// The group they are shown in.
    pub group: GroupId,
    /// The tools, with where they come from.
    pub tools: Vec<(ToolDefinition, Origin)>,
    /// Mixed into the view's scope: what is cached per view (a meta-tool's
    /// index) is then per these tools.
    pub scope: u64,
}

impl Default for Catalog {
    fn default() -> Self {
        Self::new()
    }
}

impl Catalog {
    /// A number that changes whenever the catalog does.
    pub fn revision(&self) -> u64 {
        self.revision
    }

    /// What tells this catalog's contents apart from another's at the same
    /// revision: 0 for the catalog itself, the policy's for a view.
    pub fn scope(&self) -> u64 {
        self.scope
    }

    /// A catalog holding only the `load_tool_group` meta-tool.
    pub fn new() -> Self {
        let mut catalog = Self {
            tools: Vec::new(),
            tool_index: HashMap::new(),
            groups: Vec::new(),
            group_index: HashMap::new(),
            aliases: BTreeMap::new(),
            revision: 0,
            scope: 0,
        };
        catalog.insert_tool(load_tool_group_definition(), None, Origin::MetaTool);
        catalog
    }

    /// Registers a group with no tools yet.
    pub fn register_group(&mut self, group: ToolGroup, origin: Origin) -> Result<(), CatalogError> {
        self.revision = self.revision.wrapping_add(1);
        self.check_group_free(&group.id, &origin)?;
        self.insert_group(group, origin, GroupListing::Listed);
        Ok(())
    }

    /// Registers a group whose tools are listed later with
    /// [`replace_group_tools`](Self::replace_group_tools). Until then it is
    /// offered like a group with tools, so a model can ask for it.
    pub fn register_deferred_group(
        &mut self,
        group: ToolGroup,
        origin: Origin,
    ) -> Result<(), CatalogError> {
        self.revision = self.revision.wrapping_add(1);
        self.check_group_free(&group.id, &origin)?;
        self.insert_group(group, origin, GroupListing::Deferred);
        Ok(())
    }

    /// Sets a group's tools, replacing whatever it held: the first listing of a
    /// deferred group, or a new listing after its source changed. All or
    /// nothing: a name taken outside the group leaves the group as it was.
    /// Afterwards the group is [`GroupListing::Listed`].
    pub fn replace_group_tools(
        &mut self,
        id: &str,
        tools: Vec<(ToolDefinition, Origin)>,
    ) -> Result<(), CatalogError> {
        self.revision = self.revision.wrapping_add(1);
        let group_index = *self
            .group_index
            .get(id)
            .ok_or_else(|| CatalogError::UnknownGroupId(id.to_owned()))?;
        let entry = &self.groups[group_index];
        let mut seen = HashSet::new();
        for (tool, origin) in &tools {
            if let Some(&index) = self.tool_index.get(&tool.name)
                && !entry.members.contains(&index)
            {
                return Err(CatalogError::DuplicateTool {
                    name: tool.name.clone(),
                    existing: self.tools[index].origin.clone(),
                    new: origin.clone(),
                });
            }
            if !seen.insert(&tool.name) {
                return Err(CatalogError::DuplicateToolInBatch {
                    name: tool.name.clone(),
                    origin: origin.clone(),
                });
            }
        }
        // Retire the old members: out of the index and the group, disabled so
        // no query sees them again. Their slots stay, keeping indexes valid.
        for index in std::mem::take(&mut self.groups[group_index].members) {
            let retired = &mut self.tools[index];
            retired.state = ToolState::Disabled;
            self.tool_index.remove(&retired.definition.name);
        }
        let group = self.groups[group_index].group.id.clone();
        for (tool, origin) in tools {
            self.insert_tool(tool, Some(group.clone()), origin);
        }
        self.groups[group_index].listing = GroupListing::Listed;
        Ok(())
    }

    /// Removes a group for good (its MCP server left the configuration):
    /// its tools are retired as [`replace_group_tools`](Self::replace_group_tools)
    /// retires them, and its id is free again. Other groups keep their
    /// order.
    pub fn remove_group(&mut self, id: &str) -> Result<(), CatalogError> {
        self.revision = self.revision.wrapping_add(1);
        let position = self
            .group_index
            .remove(id)
            .ok_or_else(|| CatalogError::UnknownGroupId(id.to_owned()))?;
        let entry = self.groups.remove(position);
        for index in entry.members {
            let retired = &mut self.tools[index];
            retired.state = ToolState::Disabled;
            self.tool_index.remove(&retired.definition.name);
        }
        for later in self.group_index.values_mut() {
            if *later > position {
                *later -= 1;
            }
        }
        Ok(())
    }

    /// Takes a listed group's tools away and makes it deferred again, as
    /// if never listed (its new source could not be listed): it stays on
    /// offer, and a load lists it.
    pub fn defer_group(&mut self, id: &str) -> Result<(), CatalogError> {
        self.replace_group_tools(id, Vec::new())?;
        if let Some(&index) = self.group_index.get(id) {
            self.groups[index].listing = GroupListing::Deferred;
        }
        Ok(())
    }

    /// Replaces a group's description (a server's own words, once known).
    pub fn set_group_description(
        &mut self,
        id: &str,
        description: impl Into<String>,
    ) -> Result<(), CatalogError> {
        self.revision = self.revision.wrapping_add(1);
        let index = *self
            .group_index
            .get(id)
            .ok_or_else(|| CatalogError::UnknownGroupId(id.to_owned()))?;
        self.groups[index].group.description = description.into();
        Ok(())
    }

    /// Replaces a group's display name and description with `group`'s (a
    /// manifest edited since it was loaded); its tools stay.
    pub fn update_group(&mut self, group: ToolGroup) -> Result<(), CatalogError> {
        self.revision = self.revision.wrapping_add(1);
        let index = *self
            .group_index
            .get(&group.id)
            .ok_or_else(|| CatalogError::UnknownGroupId(group.id.to_string()))?;
        self.groups[index].group = group;
        Ok(())
    }

    /// Makes a group's tools always visible, or visible once loaded again.
    pub fn set_group_visibility(
        &mut self,
        id: &str,
        visibility: GroupVisibility,
    ) -> Result<(), CatalogError> {
        self.revision = self.revision.wrapping_add(1);
        let index = *self
            .group_index
            .get(id)
            .ok_or_else(|| CatalogError::UnknownGroupId(id.to_owned()))?;
        self.groups[index].visibility = visibility;
        Ok(())
    }

    /// A group's visibility; `None` for an unknown group.
    pub fn group_visibility(&self, id: &str) -> Option<GroupVisibility> {
        self.group_index
            .get(id)
            .map(|&index| self.groups[index].visibility)
    }

    /// The groups whose tools are always visible, in registration order.
    pub fn always_visible_groups(&self) -> impl Iterator<Item = &GroupId> {
        self.groups
            .iter()
            .filter(|entry| entry.visibility == GroupVisibility::Always)
            .map(|entry| &entry.group.id)
    }

    /// Whether a group's tools are known yet; `None` for an unknown group.
    pub fn group_listing(&self, id: &str) -> Option<GroupListing> {
        self.group_index
            .get(id)
            .map(|&index| self.groups[index].listing)
    }

    /// Registers one tool, core when `group` is `None`. The group must exist.
    pub fn register_tool(
        &mut self,
        definition: ToolDefinition,
        group: Option<&GroupId>,
        origin: Origin,
    ) -> Result<(), CatalogError> {
        self.revision = self.revision.wrapping_add(1);
        self.check_tool_free(&definition.name, &origin)?;
        if let Some(group) = group.filter(|group| !self.group_index.contains_key(*group)) {
            return Err(CatalogError::UnknownGroup {
                tool: definition.name,
                group: group.clone(),
            });
        }
        self.insert_tool(definition, group.cloned(), origin);
        Ok(())
    }

    /// Registers a group and its tools together: either all of them land or none
    /// does, so a colliding manifest leaves no half-registered group behind.
    /// Each tool carries its own origin (a manifest entry names its function).
    pub fn register_group_with_tools(
        &mut self,
        group: ToolGroup,
        origin: Origin,
        tools: Vec<(ToolDefinition, Origin)>,
    ) -> Result<(), CatalogError> {
        self.revision = self.revision.wrapping_add(1);
        self.check_group_free(&group.id, &origin)?;
        self.check_batch_free(tools.iter().map(|(tool, _)| tool), &origin)?;
        let id = group.id.clone();
        self.insert_group(group, origin, GroupListing::Listed);
        for (tool, tool_origin) in tools {
            self.insert_tool(tool, Some(id.clone()), tool_origin);
        }
        Ok(())
    }

    /// Replaces core tool `old` with `definition` in the same place (a
    /// manifest of one tool edited since it was loaded). The new name, when
    /// it differs, must be free; otherwise nothing changes.
    pub fn replace_core_tool(
        &mut self,
        old: &str,
        definition: ToolDefinition,
        origin: Origin,
    ) -> Result<(), CatalogError> {
        self.revision = self.revision.wrapping_add(1);
        let index = *self
            .tool_index
            .get(old)
            .filter(|&&index| self.tools[index].group.is_none())
            .ok_or_else(|| CatalogError::UnknownTool(old.to_owned()))?;
        if definition.name.as_str() != old {
            self.check_tool_free(&definition.name, &origin)?;
        }
        self.tool_index.remove(old);
        self.tool_index.insert(definition.name.clone(), index);
        let entry = &mut self.tools[index];
        entry.weight = definition.weight();
        entry.definition = definition;
        entry.origin = origin;
        Ok(())
    }

    /// Removes a tool for good (its manifest is gone): out of every query
    /// and of its group, its name free again.
    pub fn remove_tool(&mut self, name: &str) -> Result<(), CatalogError> {
        self.revision = self.revision.wrapping_add(1);
        let index = self
            .tool_index
            .remove(name)
            .ok_or_else(|| CatalogError::UnknownTool(name.to_owned()))?;
        // The slot stays, disabled, keeping other indexes valid.
        let entry = &mut self.tools[index];
        entry.state = ToolState::Disabled;
        if let Some(group_index) = entry.group.as_ref().and_then(|id| self.group_index.get(id)) {
            self.groups[*group_index]
                .members
                .retain(|&member| member != index);
        }
        Ok(())
    }

    /// Enables or disables a tool at run time.
    pub fn set_tool_state(&mut self, name: &str, state: ToolState) -> Result<(), CatalogError> {
        self.revision = self.revision.wrapping_add(1);
        let index = *self
            .tool_index
            .get(name)
            .ok_or_else(|| CatalogError::UnknownTool(name.to_owned()))?;
        self.tools[index].state = state;
        Ok(())
    }

    /// The enabled core tools (no group), in registration order.
    pub fn core_tools(&self) -> impl Iterator<Item = &ToolDefinition> {
        self.tools
            .iter()
            .filter(|entry| entry.group.is_none() && entry.state == ToolState::Enabled)
            .map(|entry| &entry.definition)
    }

    /// The enabled tools of one group, in registration order; empty for an
    /// unknown group.
    pub fn group_tools(&self, id: &str) -> impl Iterator<Item = &ToolDefinition> {
        let members = self
            .group_index
            .get(id)
            .map(|&index| self.groups[index].members.as_slice())
            .unwrap_or_default();
        members
            .iter()
            .map(|&index| &self.tools[index])
            .filter(|entry| entry.state == ToolState::Enabled)
            .map(|entry| &entry.definition)
    }

    /// The [weight](ToolDefinition::weight) of one group's enabled tools:
    /// what the listing's form is chosen against.
    pub(crate) fn group_weight(&self, id: &str) -> usize {
        self.group_index.get(id).map_or(0, |&index| {
            self.groups[index]
                .members
                .iter()
                .map(|&member| &self.tools[member])
                .filter(|entry| entry.state == ToolState::Enabled)
                .map(|entry| entry.weight)
                .sum()
        })
    }

    /// Every registered group, in registration order, tools or not.
    pub fn groups(&self) -> impl Iterator<Item = &ToolGroup> {
        self.groups.iter().map(|entry| &entry.group)
    }

    /// The groups worth offering: those with at least one enabled tool, and
    /// deferred groups whose tools are not listed yet. The prompt section and
    /// `load_tool_group`'s "Available groups" list these.
    pub fn available_groups(&self) -> impl Iterator<Item = &ToolGroup> {
        self.groups
            .iter()
            .filter(|entry| {
                entry.listing == GroupListing::Deferred
                    || entry
                        .members
                        .iter()
                        .any(|&index| self.tools[index].state == ToolState::Enabled)
            })
            .map(|entry| &entry.group)
    }

    /// One group's metadata.
    pub fn group(&self, id: &str) -> Option<&ToolGroup> {
        self.group_index
            .get(id)
            .map(|&index| &self.groups[index].group)
    }

    /// One enabled tool, with its group and origin.
    pub fn tool(&self, name: &str) -> Option<CatalogTool<'_>> {
        self.tool_index
            .get(name)
            .map(|&index| &self.tools[index])
            .filter(|entry| entry.state == ToolState::Enabled)
            .map(ToolEntry::view)
    }

    /// Makes `old` a name for `alias`'s tool, replacing any alias it was.
    /// A name a registered tool holds cannot be an alias: the tool wins.
    /// Fixed arguments may not set `action`: the action is the alias's own,
    /// so the call as it runs is the call it names.
    pub fn register_alias(&mut self, old: &str, alias: Alias) -> Result<(), CatalogError> {
        if alias.arguments.contains_key(ACTION_PARAMETER) {
            return Err(CatalogError::AliasArgumentsSetAction(old.to_owned()));
        }
        self.revision = self.revision.wrapping_add(1);
        if let Some(&index) = self.tool_index.get(old) {
            return Err(CatalogError::AliasShadowsTool {
                alias: old.to_owned(),
                existing: self.tools[index].origin.clone(),
            });
        }
        self.aliases.insert(old.to_owned(), alias);
        Ok(())
    }

    /// The alias `name` is, if it is one and no tool holds it.
    pub fn alias(&self, name: &str) -> Option<&Alias> {
        if self.tool_index.contains_key(name) {
            return None;
        }
        self.aliases.get(name)
    }

    /// Every alias, by old name.
    pub fn aliases(&self) -> impl Iterator<Item = (&str, &Alias)> {
        self.aliases
            .iter()
            .filter(|(name, _)| !self.tool_index.contains_key(name.as_str()))
            .map(|(name, alias)| (name.as_str(), alias))
    }

    /// The enabled tool `name` stands for: the tool itself, or the tool an
    /// alias by that name leads to.
    pub fn resolve(&self, name: &str) -> Option<CatalogTool<'_>> {
        self.tool(name)
            .or_else(|| self.tool(self.alias(name)?.tool.as_str()))
    }

    /// Every enabled tool, in registration order.
    pub fn tools(&self) -> impl Iterator<Item = CatalogTool<'_>> {
        self.tools
            .iter()
            .filter(|entry| entry.state == ToolState::Enabled)
            .map(ToolEntry::view)
    }

    /// The tool-to-group map: every group with its enabled tools' names, in
    /// registration order. Every tool with a group counts, whatever its origin.
    pub fn tool_groups(&self) -> Vec<(&GroupId, Vec<&ToolName>)> {
        self.groups
            .iter()
            .map(|entry| {
                let names = entry
                    .members
                    .iter()
                    .map(|&index| &self.tools[index])
                    .filter(|tool| tool.state == ToolState::Enabled)
                    .map(|tool| &tool.definition.name)
                    .collect();
                (&entry.group.id, names)
            })
            .collect()
    }

    /// The state of any registered tool, enabled or not.
    pub fn tool_state(&self, name: &str) -> Option<ToolState> {
        self.tool_index
            .get(name)
            .map(|&index| self.tools[index].state)
    }

    /// The group of a tool, whether or not it is enabled.
    pub fn group_of(&self, name: &str) -> Option<&GroupId> {
        self.tool_index
            .get(name)
            .and_then(|&index| self.tools[index].group.as_ref())
    }

    fn check_tool_free(&self, name: &ToolName, origin: &Origin) -> Result<(), CatalogError> {
        match self.tool_index.get(name) {
            Some(&index) => Err(CatalogError::DuplicateTool {
                name: name.clone(),
                existing: self.tools[index].origin.clone(),
                new: origin.clone(),
            }),
            None => Ok(()),
        }
    }

    fn check_group_free(&self, id: &GroupId, origin: &Origin) -> Result<(), CatalogError> {
        match self.group_index.get(id) {
            Some(&index) => Err(CatalogError::DuplicateGroup {
                id: id.clone(),
                existing: self.groups[index].origin.clone(),
                new: origin.clone(),
            }),
            None => Ok(()),
        }
    }

    fn check_batch_free<'t>(
        &self,
        tools: impl IntoIterator<Item = &'t ToolDefinition>,
        origin: &Origin,
    ) -> Result<(), CatalogError> {
        let mut seen = HashSet::new();
        for tool in tools {
            self.check_tool_free(&tool.name, origin)?;
            if !seen.insert(&tool.name) {
                return Err(CatalogError::DuplicateToolInBatch {
                    name: tool.name.clone(),
                    origin: origin.clone(),
                });
            }
        }
        Ok(())
    }

    fn insert_group(&mut self, group: ToolGroup, origin: Origin, listing: GroupListing) {
        self.revision = self.revision.wrapping_add(1);
        self.group_index.insert(group.id.clone(), self.groups.len());
        self.groups.push(GroupEntry {
            group,
            origin,
            listing,
            visibility: GroupVisibility::OnLoad,
            members: Vec::new(),
        });
    }

    fn insert_tool(&mut self, definition: ToolDefinition, group: Option<GroupId>, origin: Origin) {
        self.revision = self.revision.wrapping_add(1);
        let index = self.tools.len();
        if let Some(group_index) = group.as_ref().and_then(|id| self.group_index.get(id)) {
            self.groups[*group_index].members.push(index);
        }
        self.tool_index.insert(definition.name.clone(), index);
        self.tools.push(ToolEntry {
            weight: definition.weight(),
            definition,
            group,
            origin,
            state: ToolState::Enabled,
        });
    }
}

impl ToolEntry {
    fn view(&self) -> CatalogTool<'_> {
        CatalogTool {
            definition: &self.definition,
            group: self.group.as_ref(),
            origin: &self.origin,
        }
    }
}

#[cfg(test)]
#[path = "catalog_tests.rs"]
mod tests;
