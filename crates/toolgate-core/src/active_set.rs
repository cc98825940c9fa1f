//! [`ActiveToolSet`]: what one conversation can see and call.
//!
//! An active set is only the ordered list of loads: which group, and whether
//! the whole group or a selection of its tools (a router's partial load);
//! the definitions come from the [`Catalog`] when asked. The order is
//! append-only (core first, then tools in the order they were first loaded)
//! so the tool list a provider receives is a stable prefix from turn to turn
//! and its prompt cache keeps hitting: a whole load of a partly loaded group
//! appends the group's other tools after everything already there, and never
//! moves a tool the model has seen.
//!
//! Every change is a [`HostEvent`] applied by [`ActiveToolSet::apply`]: a
//! live load decides what changes (against the catalog its caller sees) and
//! applies the event, which its host records; [`crate::restore_active_set`]
//! applies the recorded events the same way, deciding nothing again, so a
//! restarted process sees exactly what the model saw.

use crate::answers::{
    GroupLoaded, GroupPartlyLoaded, GroupUnloaded, LoadGroupError, NotAvailable, ToolsLoaded,
    UnloadGroupError,
};
use crate::catalog::{Catalog, GroupVisibility};
use crate::group::ToolGroup;
use crate::host_event::HostEvent;
use crate::name::{GroupId, ToolName, closest_name};
use crate::tool::ToolDefinition;

/// Core tools plus the loaded groups of one conversation.
///
/// ```
/// use serde_json::json;
/// use toolgate_core::{ActiveToolSet, Catalog, GroupId, Origin, ToolDefinition, ToolGroup, ToolName};
///
/// let mut catalog = Catalog::new();
/// let pdf = GroupId::new("pdf")?;
/// let tool = ToolDefinition::new(ToolName::new("pdf_info")?, "Page count", json!({}))?;
/// let group = ToolGroup::new(pdf, "PDF Tools", "PDFs");
/// catalog.register_group_with_tools(group, Origin::Builtin, vec![(tool, Origin::Builtin)])?;
///
/// let mut active = ActiveToolSet::new();
/// assert!(active.check_available(&catalog, "pdf_info").is_err());
/// let loaded = active.load(&catalog, "pdf")?;
/// assert_eq!(loaded.tools.len(), 1);
/// assert!(active.check_available(&catalog, "pdf_info").is_ok());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ActiveToolSet {
    /// The loaded groups, each once, in first-load order: the groups of
    /// `loads`.
    loaded: Vec<GroupId>,
    /// Every load that added tools, in order: what [`Self::definitions`]
    /// walks. A group is loaded whole at most once and never selected from
    /// after that, and its selections never name a tool twice.
    loads: Vec<Load>,
}

/// One load that added tools to an active set.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Load {
    /// The group's enabled tools that no earlier load selected, in catalog
    /// order (so tools the group gains later show up too).
    Whole(GroupId),
    /// These tools of the group, in the order they were given.
    Tools(GroupId, Vec<ToolName>),
}

impl Load {
    /// The group loaded.
    pub(crate) fn group(&self) -> &GroupId {
        match self {
            Self::Whole(group) | Self::Tools(group, _) => group,
        }
    }
}

/// How much of a loaded group an active set holds.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum GroupSelection<'a> {
    /// Every enabled tool of the group.
    Whole,
    /// Only these tools (a partial load), in load order. Names the catalog no
    /// longer places in the group are left out of every view.
    Tools(Vec<&'a ToolName>),
}

impl ActiveToolSet {
    /// Core tools only: a new conversation.
    pub fn new() -> Self {
        Self::default()
    }

    /// The loaded groups, whole or partly, in first-load order.
    pub fn loaded_groups(&self) -> &[GroupId] {
        &self.loaded
    }

    /// Whether `group` is loaded, whole or partly.
    pub fn is_loaded(&self, group: &str) -> bool {
        self.loaded.iter().any(|id| id.as_str() == group)
    }

    /// How much of `group` is loaded; `None` when it is not loaded.
    pub fn selection(&self, group: &str) -> Option<GroupSelection<'_>> {
        if !self.is_loaded(group) {
            return None;
        }
        if self.is_whole(group) {
            return Some(GroupSelection::Whole);
        }
        Some(GroupSelection::Tools(self.selected(group)))
    }

    /// The loads in order, for a compaction snapshot.
    pub(crate) fn loads(&self) -> &[Load] {
        &self.loads
    }

    /// Loads a group: the `load_tool_group` outcome. Idempotent: loading a loaded
    /// group succeeds with the same text and changes nothing. A partly loaded
    /// group gets its other tools, appended after every tool already loaded.
    /// [`GroupLoaded::event`] is the change to record.
    pub fn load<'c>(
        &mut self,
        catalog: &'c Catalog,
        group_name: &str,
    ) -> Result<GroupLoaded<'c>, LoadGroupError> {
        let (group, tools) = loadable(catalog, group_name)?;
        let newly_loaded = self.apply(&HostEvent::Loaded(group.id.clone()));
        Ok(GroupLoaded {
            group,
            tools,
            newly_loaded,
        })
    }

    /// Loads some of a group's tools (a router's partial load), in the order
    /// given, after every tool already loaded.
    ///
    /// Names that are not enabled tools of the group are ignored: a router
    /// built before the catalog changed must not fail a turn. What is left
    /// decides the outcome:
    /// - nothing (no name is a tool of the group), or every tool of the group
    ///   once those already loaded are counted: the group is loaded whole,
    ///   exactly as [`Self::load`] would;
    /// - otherwise the tools not loaded yet join the set, and the answer
    ///   lists every loaded tool of the group; tools already loaded are not
    ///   added twice. A group already loaded whole stays whole.
    ///
    /// The errors are [`Self::load`]'s: an unknown group, or one with no
    /// enabled tool.
    ///
    /// ```
    /// use serde_json::json;
    /// use toolgate_core::{ActiveToolSet, Catalog, GroupId, Origin, ToolDefinition, ToolGroup, ToolName};
    ///
    /// let mut catalog = Catalog::new();
    /// let tools = ["pdf_info", "pdf_merge", "pdf_split"]
    ///     .map(|name| (ToolDefinition::new(ToolName::new(name).unwrap(), name, json!({})).unwrap(), Origin::Builtin));
    /// let group = ToolGroup::new(GroupId::new("pdf")?, "PDF Tools", "PDFs");
    /// catalog.register_group_with_tools(group, Origin::Builtin, tools.into())?;
    ///
    /// let mut active = ActiveToolSet::new();
    /// let loaded = active.load_tools(&catalog, "pdf", &[ToolName::new("pdf_merge")?])?;
    /// assert_eq!(
    ///     loaded.to_string(),
    ///     "Loaded 1 of 3 tools from group 'PDF Tools' (load_tool_group 'pdf' loads the other 2):\n\
    ///      - pdf_merge: pdf_merge"
    /// );
    /// assert!(active.check_available(&catalog, "pdf_info").is_err());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn load_tools<'c, S: AsRef<str>>(
        &mut self,
        catalog: &'c Catalog,
        group_name: &str,
        tools: &[S],
    ) -> Result<ToolsLoaded<'c>, LoadGroupError> {
        let (group, group_tools) = loadable(catalog, group_name)?;
        let event = self.tools_event(catalog, &group.id, tools);
        let newly_loaded = self.apply(&event);
        Ok(match event {
            HostEvent::ToolsLoaded(_, added) => ToolsLoaded::Partial(GroupPartlyLoaded {
                group,
                tools: self
                    .selected(group.id.as_str())
                    .into_iter()
                    .filter_map(|name| member(catalog, &group.id, name))
                    .collect(),
                group_tools: group_tools.len(),
                newly_loaded,
                added,
            }),
            HostEvent::Loaded(_)
            | HostEvent::Unloaded(_)
            | HostEvent::ToolsUnloaded(..)
            | HostEvent::Used(..) => ToolsLoaded::Whole(GroupLoaded {
                group,
                tools: group_tools,
                newly_loaded,
            }),
        })
    }

    /// Unloads a loaded group (whole or partly): the `unload_tool_group`
    /// outcome.
    pub fn unload<'c>(
        &mut self,
        catalog: &'c Catalog,
        group_name: &str,
    ) -> Result<GroupUnloaded<'c>, UnloadGroupError> {
        let position = self.loaded.iter().position(|id| id.as_str() == group_name);
        match (position, catalog.group(group_name)) {
            (Some(_), Some(group)) => {
                self.apply(&HostEvent::Unloaded(group.id.clone()));
                Ok(GroupUnloaded { group })
            }
            _ => Err(UnloadGroupError::NotLoaded {
                requested: group_name.to_owned(),
                loaded: self.loaded.clone(),
            }),
        }
    }

    /// Applies a recorded change, deciding nothing: a whole load appends
    /// the group (unless it is loaded whole already), a partial load appends
    /// exactly the tools it names that are not loaded yet (never the whole
    /// group, whatever the catalog holds), an unload takes every load of the
    /// group out, an unload of tools takes those of the group's partial
    /// loads (and the group once none is left; a group loaded whole keeps
    /// them). [`HostEvent::Used`] changes nothing here. Returns whether the
    /// set changed. Live loads and a restore both come through here.
    pub fn apply(&mut self, event: &HostEvent) -> bool {
        match event {
            HostEvent::Loaded(group) => {
                if self.is_whole(group.as_str()) {
                    return false;
                }
                self.push(Load::Whole(group.clone()));
                true
            }
            HostEvent::ToolsLoaded(group, tools) => {
                if self.is_whole(group.as_str()) {
                    return false;
                }
                let already = self.selected(group.as_str());
                let mut new: Vec<ToolName> = Vec::new();
                for tool in tools {
                    if !already.contains(&tool) && !new.contains(tool) {
                        new.push(tool.clone());
                    }
                }
                if new.is_empty() {
                    return false;
                }
                self.push(Load::Tools(group.clone(), new));
                true
            }
            HostEvent::Unloaded(group) => {
                let Some(position) = self.loaded.iter().position(|id| id == group) else {
                    return false;
                };
                self.loaded.remove(position);
                self.loads.retain(|load| load.group() != group);
                true
            }
            HostEvent::ToolsUnloaded(group, tools) => {
                let before = self.loads.len();
                let mut changed = false;
                for load in &mut self.loads {
                    if let Load::Tools(id, selected) = load
                        && id == group
                    {
                        let kept = selected.len();
                        selected.retain(|tool| !tools.contains(tool));
                        changed |= selected.len() != kept;
                    }
                }
                self.loads.retain(
                    |load| !matches!(load, Load::Tools(_, selected) if selected.is_empty()),
                );
                if !self.loads.iter().any(|load| load.group() == group) {
                    self.loaded.retain(|id| id != group);
                }
                changed || self.loads.len() != before
            }
            HostEvent::Used(..) => false,
        }
    }

    /// The definitions to send: core tools, then the tools of the groups
    /// that are always visible, then the loaded tools in the order they were
    /// first loaded (a whole group's in catalog order).
    pub fn definitions<'c>(&self, catalog: &'c Catalog) -> Vec<&'c ToolDefinition> {
        let mut definitions: Vec<&ToolDefinition> = catalog.core_tools().collect();
        let always: Vec<&GroupId> = catalog.always_visible_groups().collect();
        for group in &always {
            definitions.extend(catalog.group_tools(group.as_str()));
        }
        for load in self
            .loads
            .iter()
            .filter(|load| !always.contains(&load.group()))
        {
            match load {
                Load::Whole(group) => {
                    let selected = self.selected(group.as_str());
                    definitions.extend(
                        catalog
                            .group_tools(group.as_str())
                            .filter(|tool| !selected.contains(&&tool.name)),
                    );
                }
                Load::Tools(group, tools) => {
                    definitions
                        .extend(tools.iter().filter_map(|name| member(catalog, group, name)));
                }
            }
        }
        definitions
    }

    /// The definition of `tool` if this conversation may call it; otherwise the
    /// self-correcting "not available" answer. An alias is checked as the tool
    /// it leads to, whose definition is returned. A tool of a partly loaded
    /// group that is not loaded itself is not available, with the hint to
    /// load its group.
    pub fn check_available<'c>(
        &self,
        catalog: &'c Catalog,
        tool: &str,
    ) -> Result<&'c ToolDefinition, NotAvailable> {
        let not_available = |group: Option<GroupId>| NotAvailable {
            tool: tool.to_owned(),
            group,
        };
        let Some(entry) = catalog.resolve(tool) else {
            return Err(not_available(None));
        };
        match entry.group {
            None => Ok(entry.definition),
            Some(group) if self.holds(group, &entry.definition.name) => Ok(entry.definition),
            Some(group)
                if catalog.group_visibility(group.as_str()) == Some(GroupVisibility::Always) =>
            {
                Ok(entry.definition)
            }
            Some(group) => Err(not_available(Some(group.clone()))),
        }
    }

    /// Whether `group` is loaded whole.
    fn is_whole(&self, group: &str) -> bool {
        self.loads
            .iter()
            .any(|load| matches!(load, Load::Whole(id) if id.as_str() == group))
    }

    /// The tools partial loads of `group` selected, in load order.
    fn selected(&self, group: &str) -> Vec<&ToolName> {
        self.loads
            .iter()
            .filter_map(|load| match load {
                Load::Tools(id, tools) if id.as_str() == group => Some(tools),
                Load::Tools(..) | Load::Whole(_) => None,
            })
            .flatten()
            .collect()
    }

    /// Whether `tool` of `group` is loaded (its group whole, or the tool by
    /// name).
    pub fn holds(&self, group: &GroupId, tool: &ToolName) -> bool {
        self.loads.iter().any(|load| match load {
            Load::Whole(id) => id == group,
            Load::Tools(id, tools) => id == group && tools.contains(tool),
        })
    }

    /// Appends a load, and its group to the loaded groups if it is new.
    fn push(&mut self, load: Load) {
        if !self.loaded.contains(load.group()) {
            self.loaded.push(load.group().clone());
        }
        self.loads.push(load);
    }

    /// The change a load of the tools of `group` named in `tools` makes, by
    /// the rules of [`Self::load_tools`]: a whole load when no name is a tool
    /// of the group in `catalog` or the names cover it with those loaded
    /// already, else a partial load of the named tools not loaded yet.
    fn tools_event<S: AsRef<str>>(
        &self,
        catalog: &Catalog,
        group: &GroupId,
        tools: &[S],
    ) -> HostEvent {
        if self.is_whole(group.as_str()) {
            return HostEvent::Loaded(group.clone());
        }
        let members: Vec<&ToolName> = catalog
            .group_tools(group.as_str())
            .map(|tool| &tool.name)
            .collect();
        let mut named: Vec<&ToolName> = Vec::new();
        for name in tools {
            if let Some(tool) = members.iter().find(|tool| tool.as_str() == name.as_ref())
                && !named.contains(tool)
            {
                named.push(tool);
            }
        }
        let already = self.selected(group.as_str());
        let covered = members
            .iter()
            .all(|tool| already.contains(tool) || named.contains(tool));
        if named.is_empty() || covered {
            return HostEvent::Loaded(group.clone());
        }
        let new = named
            .into_iter()
            .filter(|tool| !already.contains(tool))
            .cloned()
            .collect();
        HostEvent::ToolsLoaded(group.clone(), new)
    }
}

/// The group `group_name` and its enabled tools, if it can be loaded: the
/// `not_found` and `empty_group` answers otherwise.
fn loadable<'c>(
    catalog: &'c Catalog,
    group_name: &str,
) -> Result<(&'c ToolGroup, Vec<&'c ToolDefinition>), LoadGroupError> {
    let Some(group) = catalog.group(group_name) else {
        let available: Vec<GroupId> = catalog.available_groups().map(|g| g.id.clone()).collect();
        let suggestion = closest_group(group_name, &available).cloned();
        return Err(LoadGroupError::NotFound {
            requested: group_name.to_owned(),
            available,
            suggestion,
        });
    };
    let tools: Vec<&ToolDefinition> = catalog.group_tools(group_name).collect();
    if tools.is_empty() {
        return Err(LoadGroupError::EmptyGroup {
            group: group.id.clone(),
        });
    }
    Ok((group, tools))
}

/// The definition of `name` if it is an enabled tool of `group`.
fn member<'c>(
    catalog: &'c Catalog,
    group: &GroupId,
    name: &ToolName,
) -> Option<&'c ToolDefinition> {
    catalog
        .tool(name.as_str())
        .filter(|tool| tool.group == Some(group))
        .map(|tool| tool.definition)
}

/// The available group closest to `requested`, if one is close enough to be a
/// likely typo or a partial name (`gmail` -> `google_gmail`).
fn closest_group<'a>(
    requested: &str,
    candidates: impl IntoIterator<Item = &'a GroupId>,
) -> Option<&'a GroupId> {
    let candidates: Vec<&GroupId> = candidates.into_iter().collect();
    let closest = closest_name(requested, candidates.iter().map(|group| group.as_str()))?;
    candidates
        .into_iter()
        .find(|group| group.as_str() == closest)
}

#[cfg(test)]
#[path = "active_set_tests.rs"]
mod tests;
