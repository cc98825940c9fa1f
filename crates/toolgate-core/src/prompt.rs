//! The "Available Tool Groups" system-prompt section.
//!
//! The section lists one line per available group, in catalog order (on a
//! catalog of many small groups, a shorter [`ListingForm`]), and never
//! depends on what a conversation has loaded: it is the same bytes on every turn,
//! so it sits in the cacheable prefix of the prompt.
//!
//! A description is put on one line (white space runs become one space) and cut
//! at [`GROUP_DESCRIPTION_MAX_CHARS`](crate::GROUP_DESCRIPTION_MAX_CHARS) characters on a word boundary, with `…`.
//! 200 characters (about 40 tokens) keeps a 100-group listing near 4k tokens while
//! leaving room for every description we have seen in real servers, whose
//! toolset descriptions run 30-120 characters.

use crate::catalog::Catalog;
use crate::contract::{
    SECTION_SEPARATOR, TOOL_GROUPS_HEADING, TOOL_GROUPS_INSTRUCTION, TOOL_GROUPS_SEARCH_INSTRUCTION,
};
use crate::group::ToolGroup;
use crate::listing_form::{ListingForm, largest_groups, listing_description};

/// The section alone, or `None` when no group has an available tool: in the
/// [`ListingForm`] that fits the catalog ([`ListingForm::of`]): one line per
/// group; on a catalog of many small groups the names alone, or, where the
/// catalog holds `find_tool_groups`, a count and the search instruction.
///
/// ```
/// use serde_json::json;
/// use toolgate_core::{tool_groups_section, Catalog, GroupId, Origin, ToolDefinition, ToolGroup, ToolName};
///
/// let mut catalog = Catalog::new();
/// let tool = ToolDefinition::new(ToolName::new("pdf_info")?, "Info", json!({}))?;
/// let group = ToolGroup::new(GroupId::new("pdf")?, "PDF Tools", "Extract text from PDF files");
/// catalog.register_group_with_tools(group, Origin::Builtin, vec![(tool, Origin::Builtin)])?;
/// assert_eq!(
///     tool_groups_section(&catalog).unwrap(),
///     "## Available Tool Groups\n\n\
///      Use `load_tool_group` to load tools from a group before using them: the tools you name, or the whole group.\n\n\
///      - pdf: Extract text from PDF files"
/// );
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn tool_groups_section(catalog: &Catalog) -> Option<String> {
    tool_groups_section_as(catalog, ListingForm::of(catalog))
}

/// The section in `form`, or `None` when no group has an available tool.
///
/// - [`ListingForm::Lines`]: `- id: description`, one line per group;
/// - [`ListingForm::Names`]: the ids on one line, comma-separated;
/// - [`ListingForm::Search`]: how many groups and tools there are, the
///   search instruction, and the largest groups' ids.
pub fn tool_groups_section_as(catalog: &Catalog, form: ListingForm) -> Option<String> {
    let groups: Vec<&ToolGroup> = catalog.available_groups().collect();
    if groups.is_empty() {
        return None;
    }
    let section = match form {
        ListingForm::Lines => {
            let mut section = format!("{TOOL_GROUPS_HEADING}\n\n{TOOL_GROUPS_INSTRUCTION}\n");
            for group in groups {
                section.push_str(&format!(
                    "\n- {}: {}",
                    group.id,
                    listing_description(&group.description)
                ));
            }
            section
        }
        ListingForm::Names => {
            let names: Vec<&str> = groups.iter().map(|group| group.id.as_str()).collect();
            format!(
                "{TOOL_GROUPS_HEADING}\n\n{TOOL_GROUPS_INSTRUCTION}\n\nGroups: {}",
                names.join(", ")
            )
        }
        ListingForm::Search => {
            let tools: usize = groups
                .iter()
                .map(|group| catalog.group_tools(group.id.as_str()).count())
                .sum();
            let named: Vec<&str> = largest_groups(catalog)
                .into_iter()
                .map(|(group, _)| group.id.as_str())
                .collect();
            let more = if groups.len() > named.len() {
                ", …"
            } else {
                ""
            };
            format!(
                "{TOOL_GROUPS_HEADING}\n\n{} groups hold {tools} tools, too many to list here. \
                 {TOOL_GROUPS_SEARCH_INSTRUCTION}\n\nThe largest: {}{more}",
                groups.len(),
                named.join(", ")
            )
        }
    };
    Some(section)
}

/// The system prompt: `base` (which may already hold a skills section), then the
/// tool-group section after [`SECTION_SEPARATOR`]; the section alone when `base`
/// is blank; `base` unchanged when there are no groups.
pub fn system_prompt(base: &str, catalog: &Catalog) -> String {
    match tool_groups_section(catalog) {
        None => base.to_owned(),
        Some(section) if base.trim().is_empty() => section,
        Some(section) => format!("{base}{SECTION_SEPARATOR}{section}"),
    }
}

#[cfg(test)]
#[path = "prompt_tests.rs"]
mod tests;
