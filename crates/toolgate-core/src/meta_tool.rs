//! The meta-tools `load_tool_group` and `unload_tool_group`: their definitions,
//! argument parsing and the exact texts the model reads back.
//!
//! Outcomes are values, not errors of this crate: a failed load is a normal tool
//! result the model learns from. Each outcome's `Display` is the contract text,
//! and [`LoadGroupError::kind`] is the stable machine-readable code.

use std::fmt;

use serde_json::{Value, json};

use crate::group::ToolGroup;
use crate::name::{GroupId, ToolName};
use crate::tool::ToolDefinition;

/// Name of the meta-tool that loads a group.
pub const LOAD_TOOL_GROUP_TOOL_NAME: &str = "load_tool_group";
/// Name of the meta-tool that unloads a group.
pub const UNLOAD_TOOL_GROUP_TOOL_NAME: &str = "unload_tool_group";
/// The one argument both meta-tools take.
pub const GROUP_NAME_PARAMETER: &str = "group_name";

/// The `load_tool_group` definition sent to models.
pub fn load_tool_group_definition() -> ToolDefinition {
    group_meta_tool(
        LOAD_TOOL_GROUP_TOOL_NAME,
        "Load all tools in a tool group to make them available for use. You MUST load a tool \
         group before you can use any tools in it. After loading, the tools will be available \
         for the rest of this conversation.",
        "The name of the tool group to load",
    )
}

/// The `unload_tool_group` definition, for hosts that let the model shed groups.
pub fn unload_tool_group_definition() -> ToolDefinition {
    group_meta_tool(
        UNLOAD_TOOL_GROUP_TOOL_NAME,
        "Unload a previously loaded tool group so its tools are no longer offered. Load it \
         again with load_tool_group when needed.",
        "The name of the tool group to unload",
    )
}

fn group_meta_tool(name: &str, description: &str, parameter: &str) -> ToolDefinition {
    ToolDefinition {
        name: ToolName::new_unchecked(name),
        description: description.to_owned(),
        input_schema: json!({
            "type": "object",
            "properties": {
                GROUP_NAME_PARAMETER: {"type": "string", "description": parameter}
            },
            "required": [GROUP_NAME_PARAMETER]
        })
        .as_object()
        .cloned()
        .unwrap_or_default(),
        annotations: None,
        timeout: None,
    }
}

/// The `group_name` argument, or [`LoadGroupError::MissingParameter`] when it is
/// absent, blank or not a string.
pub fn group_name_argument(arguments: &Value) -> Result<&str, LoadGroupError> {
    match arguments.get(GROUP_NAME_PARAMETER) {
        Some(Value::String(name)) if !name.trim().is_empty() => Ok(name.trim()),
        _ => Err(LoadGroupError::MissingParameter),
    }
}

/// A successful load (also returned for an already-loaded group).
#[derive(Clone, Debug, PartialEq)]
pub struct GroupLoaded<'c> {
    /// The group's metadata.
    pub group: &'c ToolGroup,
    /// Its enabled tools, in catalog order.
    pub tools: Vec<&'c ToolDefinition>,
    /// `false` when the group was already loaded and nothing changed.
    pub newly_loaded: bool,
}

impl fmt::Display for GroupLoaded<'_> {
    /// `Loaded {n} tools from group '{display_name}':` then `- {name}: {description}`
    /// per tool, each description on one line.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "Loaded {} tools from group '{}':",
            self.tools.len(),
            self.group.display_name
        )?;
        for tool in &self.tools {
            write!(f, "\n- {}: {}", tool.name, tool.one_line_description())?;
        }
        Ok(())
    }
}

/// Why `load_tool_group` failed; `Display` is the text the model reads.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum LoadGroupError {
    /// `group_name` is missing, blank or not a string.
    MissingParameter,
    /// No group by that name.
    NotFound {
        /// What the model asked for.
        requested: String,
        /// The groups it could have asked for.
        available: Vec<GroupId>,
        /// The closest available name, if one is close.
        suggestion: Option<GroupId>,
    },
    /// The group exists but none of its tools is enabled.
    EmptyGroup {
        /// The group.
        group: GroupId,
    },
}

impl LoadGroupError {
    /// The stable error code: `missing_parameter`, `not_found` or `empty_group`.
    pub fn kind(&self) -> &'static str {
        match self {
            Self::MissingParameter => "missing_parameter",
            Self::NotFound { .. } => "not_found",
            Self::EmptyGroup { .. } => "empty_group",
        }
    }
}

impl fmt::Display for LoadGroupError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::MissingParameter => {
                write!(f, "Required parameter '{GROUP_NAME_PARAMETER}' is missing.")
            }
            Self::NotFound {
                requested,
                available,
                suggestion,
            } => {
                let names: Vec<&str> = available.iter().map(GroupId::as_str).collect();
                write!(
                    f,
                    "Tool group '{requested}' not found. Available groups: {}",
                    names.join(", ")
                )?;
                if let Some(suggestion) = suggestion {
                    write!(f, ". Did you mean '{suggestion}'?")?;
                }
                Ok(())
            }
            Self::EmptyGroup { group } => write!(f, "Tool group '{group}' has no available tools."),
        }
    }
}

impl std::error::Error for LoadGroupError {}

/// A successful unload.
#[derive(Clone, Debug, PartialEq)]
pub struct GroupUnloaded<'c> {
    /// The group's metadata.
    pub group: &'c ToolGroup,
}

impl fmt::Display for GroupUnloaded<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Unloaded tool group '{}'.", self.group.display_name)
    }
}

/// Why `unload_tool_group` failed; `Display` is the text the model reads.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum UnloadGroupError {
    /// `group_name` is missing, blank or not a string.
    MissingParameter,
    /// The group is not loaded in this conversation (or does not exist).
    NotLoaded {
        /// What the model asked for.
        requested: String,
        /// The groups that are loaded.
        loaded: Vec<GroupId>,
    },
}

impl UnloadGroupError {
    /// The stable error code: `missing_parameter` or `not_loaded`.
    pub fn kind(&self) -> &'static str {
        match self {
            Self::MissingParameter => "missing_parameter",
            Self::NotLoaded { .. } => "not_loaded",
        }
    }
}

impl fmt::Display for UnloadGroupError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::MissingParameter => {
                write!(f, "Required parameter '{GROUP_NAME_PARAMETER}' is missing.")
            }
            Self::NotLoaded { requested, loaded } => {
                let names: Vec<&str> = loaded.iter().map(GroupId::as_str).collect();
                let loaded = if names.is_empty() {
                    "none".to_owned()
                } else {
                    names.join(", ")
                };
                write!(
                    f,
                    "Tool group '{requested}' is not loaded. Loaded groups: {loaded}"
                )
            }
        }
    }
}

impl std::error::Error for UnloadGroupError {}

/// The available group closest to `requested`, if one is close enough to be a
/// likely typo or a partial name (`gmail` -> `google_gmail`).
pub(crate) fn closest_group<'a>(
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
