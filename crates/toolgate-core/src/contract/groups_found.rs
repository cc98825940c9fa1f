//! `find_tool_groups`' answer text ([`GroupsFound`]), apart from the other
//! texts of `contract.rs` because it reads a routing decision's tier.

use std::fmt;

use super::ToolCount;
use crate::groups_found::GroupsFound;

impl fmt::Display for GroupsFound<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.intent.is_none() {
            f.write_str(
                "No group matches this request; any group may help: see load_tool_group's list.",
            )?;
        } else {
            write!(
                f,
                "Groups for this request, most likely first ({} confidence {:.2}); load one with load_tool_group:",
                self.tier, self.confidence
            )?;
        }
        for found in &self.groups {
            write!(
                f,
                "\n- {} ({:.2}, {}): {}",
                found.group.id,
                found.probability,
                ToolCount(found.tool_count),
                found.group.description
            )?;
            for tool in &found.tools {
                write!(f, "\n  - {}: {}", tool.name, tool.one_line_description())?;
            }
            for finder in &found.finders {
                write!(
                    f,
                    "\n  - {}: {} (finds the id {} requires)",
                    finder.tool.name,
                    finder.tool.one_line_description(),
                    finder.needed_by
                )?;
            }
        }
        Ok(())
    }
}
