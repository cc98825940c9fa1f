//! The "Available Tool Groups" system-prompt section.
//!
//! The section lists one line per available group, in catalog order, and never
//! depends on what a conversation has loaded: it is the same bytes on every turn,
//! so it sits in the cacheable prefix of the prompt.
//!
//! A description is put on one line (white space runs become one space) and cut
//! at [`GROUP_DESCRIPTION_MAX_CHARS`] characters on a word boundary, with `…`.
//! 200 characters (about 40 tokens) keeps a 100-group listing near 4k tokens while
//! leaving room for every description we have seen in real servers, whose
//! toolset descriptions run 30-120 characters.

use crate::catalog::Catalog;
use crate::contract::{SECTION_SEPARATOR, TOOL_GROUPS_HEADING, TOOL_GROUPS_INSTRUCTION};
use crate::tool::one_line;

/// Longest group description in the listing, in characters, ellipsis included.
pub const GROUP_DESCRIPTION_MAX_CHARS: usize = 200;

/// The section alone, or `None` when no group has an available tool.
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
///      Use `load_tool_group` to load tools from a group before using them.\n\n\
///      - pdf: Extract text from PDF files"
/// );
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn tool_groups_section(catalog: &Catalog) -> Option<String> {
    let mut groups = catalog.available_groups().peekable();
    groups.peek()?;
    let mut section = format!("{TOOL_GROUPS_HEADING}\n\n{TOOL_GROUPS_INSTRUCTION}\n");
    for group in groups {
        section.push_str(&format!(
            "\n- {}: {}",
            group.id,
            listing_description(&group.description)
        ));
    }
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

/// A group description as the listing shows it: one line, at most
/// [`GROUP_DESCRIPTION_MAX_CHARS`] characters.
pub fn listing_description(description: &str) -> String {
    let line = one_line(description);
    if line.chars().count() <= GROUP_DESCRIPTION_MAX_CHARS {
        return line;
    }
    // Room for the ellipsis; then back up to the last word boundary.
    let limit = GROUP_DESCRIPTION_MAX_CHARS - 1;
    let cut = line
        .char_indices()
        .nth(limit)
        .map_or(line.len(), |(at, _)| at);
    let head = &line[..cut];
    let head = match head.rfind(' ') {
        // The cut already falls between two words.
        _ if line[cut..].starts_with(' ') => head,
        Some(space) if space > 0 => &head[..space],
        // A single giant word has no boundary: cut inside it rather than drop it.
        _ => head,
    };
    format!("{}…", head.trim_end_matches([',', ';', ':', '.', '-', ' ']))
}

#[cfg(test)]
#[path = "prompt_tests.rs"]
mod tests;
