//! [`ActiveToolSet`]: what one conversation can see and call.
//!
//! An active set is only the ordered list of loaded group ids; the tools come
//! from the [`Catalog`] when asked. The order is append-only (core first, then
//! groups in first-load order) so the tool list a provider receives is a stable
//! prefix from turn to turn and its prompt cache keeps hitting. The same value
//! is rebuilt from history by [`crate::restore_active_set`], so a restarted
//! process sees exactly what the model saw.

use crate::catalog::{Catalog, GroupVisibility};
use crate::name::GroupId;
use crate::outcome::{GroupLoaded, GroupUnloaded, LoadGroupError, NotAvailable, UnloadGroupError};
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
    loaded: Vec<GroupId>,
}

impl ActiveToolSet {
    /// Core tools only: a new conversation.
    pub fn new() -> Self {
        Self::default()
    }

    /// The loaded groups, in first-load order.
    pub fn loaded_groups(&self) -> &[GroupId] {
        &self.loaded
    }

    /// Whether `group` is loaded.
    pub fn is_loaded(&self, group: &str) -> bool {
        self.loaded.iter().any(|id| id.as_str() == group)
    }

    /// Loads a group: the `load_tool_group` outcome. Idempotent: loading a loaded
    /// group succeeds with the same text and changes nothing.
    pub fn load<'c>(
        &mut self,
        catalog: &'c Catalog,
        group_name: &str,
    ) -> Result<GroupLoaded<'c>, LoadGroupError> {
        let Some(group) = catalog.group(group_name) else {
            let available: Vec<GroupId> =
                catalog.available_groups().map(|g| g.id.clone()).collect();
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
        let newly_loaded = !self.is_loaded(group_name);
        if newly_loaded {
            self.loaded.push(group.id.clone());
        }
        Ok(GroupLoaded {
            group,
            tools,
            newly_loaded,
        })
    }

    /// Unloads a loaded group: the `unload_tool_group` outcome.
    pub fn unload<'c>(
        &mut self,
        catalog: &'c Catalog,
        group_name: &str,
    ) -> Result<GroupUnloaded<'c>, UnloadGroupError> {
        let position = self.loaded.iter().position(|id| id.as_str() == group_name);
        match (position, catalog.group(group_name)) {
            (Some(position), Some(group)) => {
                self.loaded.remove(position);
                Ok(GroupUnloaded { group })
            }
            _ => Err(UnloadGroupError::NotLoaded {
                requested: group_name.to_owned(),
                loaded: self.loaded.clone(),
            }),
        }
    }

    /// Replaces the loaded groups wholesale (a compaction snapshot), keeping
    /// only groups the catalog knows, each once, in the given order.
    pub(crate) fn reset_to(
        &mut self,
        catalog: &Catalog,
        groups: impl IntoIterator<Item = GroupId>,
    ) {
        self.loaded.clear();
        for group in groups {
            if catalog.group(group.as_str()).is_some() && !self.loaded.contains(&group) {
                self.loaded.push(group);
            }
        }
    }

    /// Marks a group loaded without the availability checks: replaying a load
    /// that history says succeeded.
    pub(crate) fn replay_load(&mut self, group: GroupId) {
        if !self.loaded.contains(&group) {
            self.loaded.push(group);
        }
    }

    /// The definitions to send: core tools, then the tools of the groups
    /// that are always visible, then each loaded group's enabled tools in
    /// load order.
    pub fn definitions<'c>(&self, catalog: &'c Catalog) -> Vec<&'c ToolDefinition> {
        let mut definitions: Vec<&ToolDefinition> = catalog.core_tools().collect();
        let always: Vec<&GroupId> = catalog.always_visible_groups().collect();
        for group in &always {
            definitions.extend(catalog.group_tools(group.as_str()));
        }
        for group in self.loaded.iter().filter(|group| !always.contains(group)) {
            definitions.extend(catalog.group_tools(group.as_str()));
        }
        definitions
    }

    /// The definition of `tool` if this conversation may call it; otherwise the
    /// self-correcting "not available" answer. An alias is checked as the tool
    /// it leads to, whose definition is returned.
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
            Some(group) if self.loaded.contains(group) => Ok(entry.definition),
            Some(group)
                if catalog.group_visibility(group.as_str()) == Some(GroupVisibility::Always) =>
            {
                Ok(entry.definition)
            }
            Some(group) => Err(not_available(Some(group.clone()))),
        }
    }
}

/// The available group closest to `requested`, if one is close enough to be a
/// likely typo or a partial name (`gmail` -> `google_gmail`).
fn closest_group<'a>(
    requested: &str,
    candidates: impl IntoIterator<Item = &'a GroupId>,
) -> Option<&'a GroupId> {
    const CLOSE_ENOUGH: f64 = 0.85;
    /// A shorter fragment matches too much to be a useful hint.
    const MIN_FRAGMENT: usize = 3;
    let wanted = requested.to_lowercase();
    let mut best: Option<(f64, &GroupId)> = None;
    for candidate in candidates {
        let name = candidate.as_str().to_lowercase();
        let contains =
            wanted.len() >= MIN_FRAGMENT && (name.contains(&wanted) || wanted.contains(&name));
        let similarity = if contains {
            0.9
        } else {
            strsim::jaro_winkler(&wanted, &name)
        };
        // Strictly greater: on a tie the earlier group (catalog order) wins.
        if similarity >= CLOSE_ENOUGH && best.is_none_or(|(score, _)| similarity > score) {
            best = Some((similarity, candidate));
        }
    }
    best.map(|(_, candidate)| candidate)
}

#[cfg(test)]
#[path = "active_set_tests.rs"]
mod tests;
