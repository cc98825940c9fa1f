//! `find_tool_groups`' answer text ([`GroupsFound`]), apart from the other
//! texts of `contract.rs` because it reads a routing decision's tier.

use std::fmt;

use super::{CALL_TOOL_TOOL_NAME, ToolCount, schema_lines};
use crate::groups_found::GroupsFound;
use crate::loaded_schemas::LoadedSchemas;
use crate::routing::SearchRanks;

impl fmt::Display for GroupsFound<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        ranking(
            self,
            f,
            "load the tools you need with load_tool_group (its group_name and tools)",
            Shown::Described,
        )
    }
}

/// How much of each listed tool the ranking shows.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Shown {
    /// Its name and one-line description, and each group's description:
    /// the model chooses what to load from them.
    Described,
    /// Its name alone, and a group's description only where the search
    /// ranks groups: the tools are loaded, their schemas (descriptions
    /// included) in the tool list or after the ranking.
    Loaded,
}

/// The ranking: its heading, ending with `what_next`, then each group with
/// its listed tools, shown as `shown` says.
fn ranking(
    found: &GroupsFound<'_>,
    f: &mut fmt::Formatter<'_>,
    what_next: &str,
    shown: Shown,
) -> fmt::Result {
    if found.intent.is_none() {
        f.write_str(
            "No group matches this request: search again in other words, or see \
             load_tool_group's list.",
        )?;
    } else {
        let heading = match found.ranks {
            SearchRanks::Groups => "Groups for this request, most likely first",
            SearchRanks::Tools => "The best tools for this request, under their groups",
        };
        write!(
            f,
            "{heading} ({} confidence {:.2}); {what_next}:",
            found.tier, found.confidence
        )?;
    }
    let described = shown == Shown::Described;
    let group_described = described || found.ranks == SearchRanks::Groups;
    for group in &found.groups {
        write!(
            f,
            "\n- {} ({:.2}, {})",
            group.group.id,
            group.probability,
            ToolCount(group.tool_count),
        )?;
        if group_described {
            write!(f, ": {}", group.group.description)?;
        }
        for tool in &group.tools {
            write!(f, "\n  - {}", tool.name)?;
            if described {
                write!(f, ": {}", tool.one_line_description())?;
            }
        }
        for finder in &group.finders {
            write!(f, "\n  - {}", finder.tool.name)?;
            if described {
                write!(f, ": {}", finder.tool.one_line_description())?;
            }
            write!(f, " (finds the id {} requires)", finder.needed_by)?;
        }
    }
    if !found.already_loaded.is_empty() {
        f.write_str("\nAlso matching, loaded already: ")?;
        for (i, tool) in found.already_loaded.iter().enumerate() {
            if i > 0 {
                f.write_str(", ")?;
            }
            f.write_str(tool.as_str())?;
        }
        f.write_str(".")?;
    }
    if found.more {
        f.write_str(
            "\nNot among them? Call find_tool_groups again, in other words or the same: \
             it lists the next best tools.",
        )?;
    }
    Ok(())
}

/// What the model reads for a `find_tool_groups` answer, by where the host
/// puts the schemas of the tools it loaded: the ranking ([`GroupsFound`]'s
/// text); when the search loaded the tools it lists, its heading ends
/// `the tools listed are loaded:` instead, the tools are named without
/// their descriptions (their schemas carry them), and so are the groups
/// where the search ranks tools; a paragraph follows. With [`LoadedSchemas::ToolList`] they
/// are in the tool list; with [`LoadedSchemas::Conversation`] the paragraph
/// carries their schemas, one line of JSON per tool (`{"name",
/// "description", "input_schema"}`), as a load's answer does.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct FoundAnswer<'a, 'c> {
    found: &'a GroupsFound<'c>,
    schemas: LoadedSchemas,
}

impl<'c> GroupsFound<'c> {
    /// The answer the model reads when the host puts loaded schemas where
    /// `schemas` says.
    pub fn answer(&self, schemas: LoadedSchemas) -> FoundAnswer<'_, 'c> {
        FoundAnswer {
            found: self,
            schemas,
        }
    }
}

impl fmt::Display for FoundAnswer<'_, '_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let tools: Vec<_> = self
            .found
            .loaded
            .iter()
            .flat_map(|load| load.tools.iter())
            .collect();
        if tools.is_empty() {
            return self.found.fmt(f);
        }
        ranking(self.found, f, "the tools listed are loaded", Shown::Loaded)?;
        match self.schemas {
            LoadedSchemas::ToolList => write!(
                f,
                "\n\nThe {} listed under the groups are loaded: call them by name. \
                 load_tool_group loads other tools of a group by name, or the rest of it.",
                ToolCount(tools.len())
            ),
            LoadedSchemas::Conversation => {
                write!(
                    f,
                    "\n\nThe {} listed under the groups are loaded, but not added to your tool \
                     list: call one with {CALL_TOOL_TOOL_NAME}, as {{\"name\": \"<tool name>\", \
                     \"arguments\": {{<its arguments>}}}}. load_tool_group loads other tools of a \
                     group by name, or the rest of it. Their schemas, one JSON object per tool:",
                    ToolCount(tools.len())
                )?;
                schema_lines(f, tools.into_iter().copied())
            }
        }
    }
}
