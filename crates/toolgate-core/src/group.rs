//! [`ToolGroup`]: a named set of tools the model can load on demand.

use serde::{Deserialize, Serialize};

use crate::name::GroupId;

/// Group metadata: the id the model passes to `load_tool_group`, a display name
/// for humans and the one-line description shown in the system prompt.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolGroup {
    /// Stable id, e.g. `google_gmail`.
    pub id: GroupId,
    /// Human-readable name, e.g. `Google Gmail`.
    pub display_name: String,
    /// What the group's tools do, on one line.
    pub description: String,
}

impl ToolGroup {
    /// A group with every field given.
    pub fn new(
        id: GroupId,
        display_name: impl Into<String>,
        description: impl Into<String>,
    ) -> Self {
        Self {
            id,
            display_name: display_name.into(),
            description: description.into(),
        }
    }
}

/// Most tool names a generated description lists before "and N more".
const GENERATED_DESCRIPTION_NAMES: usize = 8;

/// The description of a group that has none: its tool names.
///
/// ```
/// use toolgate_core::generated_group_description;
/// assert_eq!(generated_group_description(["a", "b"]), "Tools: a, b");
/// ```
pub fn generated_group_description<'a>(tool_names: impl IntoIterator<Item = &'a str>) -> String {
    let names: Vec<&str> = tool_names.into_iter().collect();
    if names.is_empty() {
        return "No tools".to_owned();
    }
    let shown = names.len().min(GENERATED_DESCRIPTION_NAMES);
    let mut description = format!("Tools: {}", names[..shown].join(", "));
    if names.len() > shown {
        description.push_str(&format!(" and {} more", names.len() - shown));
    }
    description
}
