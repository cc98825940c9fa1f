//! The names listed tools are exposed under, when their own will not do.
//!
//! MCP tool names are 1-64 characters of `A-Za-z0-9_./-`, but servers ship
//! names such as `PDF&URLTool`. Such a tool is exposed, not skipped: its own
//! name when valid and free, else `group__tool` when that is, else its name
//! with every other character replaced by `_`, else that name cut short
//! with `_` and 8 hex digits of a stable hash (32-bit FNV-1a of the group id
//! and the original name, the same on every run and build). Calls to the
//! exposed name reach the source under the original one. The rule is
//! toolgate-core's [`ToolName::candidates`], which a catalog import follows
//! too; this file decides which names are free.

use std::collections::HashMap;
use std::fmt;

use toolgate_core::{Catalog, GroupId, MAX_TOOL_NAME_LEN, NameError, ToolName};
// The tests pin the rule's parts under the names they had here.
#[cfg(test)]
use toolgate_core::{fnv1a, sanitize_tool_name as sanitize};

/// The characters of an original name a rename line shows.
const SHOWN_CHARS: usize = 80;

/// Why a listed tool is exposed under a name other than its own.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RenameReason {
    /// Its name is taken by a tool of another group.
    NameTaken,
    /// Its name breaks MCP's rule for tool names.
    InvalidName(NameError),
}

/// A listed tool exposed under a name other than the one its source gave
/// it. `Display` is a line for the operator.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RenamedTool {
    /// Its group: the source's configured name.
    pub group: GroupId,
    /// The name its source gave it, which calls still use upstream.
    pub original: String,
    /// The name clients and models see.
    pub exposed: ToolName,
    /// Why it was renamed.
    pub reason: RenameReason,
}

impl fmt::Display for RenamedTool {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // A server may send a name of any length: show its start only.
        let shown: String = self.original.chars().take(SHOWN_CHARS).collect();
        let cut = if shown.len() < self.original.len() {
            "…"
        } else {
            ""
        };
        write!(
            f,
            "tool {shown:?}{cut} of '{}' is exposed as '{}': ",
            self.group, self.exposed
        )?;
        match &self.reason {
            RenameReason::NameTaken => f.write_str("its name is taken by another group's tool"),
            RenameReason::InvalidName(NameError::ToolNameLength { length, .. }) => write!(
                f,
                "its name is {length} characters long; MCP allows 1-{MAX_TOOL_NAME_LEN}"
            ),
            RenameReason::InvalidName(NameError::ToolNameCharacter { character, .. }) => write!(
                f,
                "its name has the character {character:?}, outside MCP's A-Za-z0-9_./-"
            ),
            RenameReason::InvalidName(other) => other.fmt(f),
        }
    }
}

impl RenamedTool {
    /// The rename of `original` in `group` to `exposed`, or `None` when the
    /// name is its own.
    pub(crate) fn of(group: &GroupId, original: &str, exposed: &ToolName) -> Option<Self> {
        if exposed.as_str() == original {
            return None;
        }
        let reason = match ToolName::new(original) {
            Ok(_) => RenameReason::NameTaken,
            Err(error) => RenameReason::InvalidName(error),
        };
        Some(Self {
            group: group.clone(),
            original: original.to_owned(),
            exposed: exposed.clone(),
            reason,
        })
    }
}

/// The name `original`, a tool of `group`, is exposed under: the first
/// free one of [`ToolName::candidates`] (its own name, `group__original`,
/// the sanitized name and the hashed ones); `None` if none is free. A name
/// is free when no tool of another group has it (but one of the
/// `yielding` groups, whose tool gives it up) and `taken` (exposed ->
/// original, this group's names so far) gives it to no other tool: one
/// lookup, so naming a listing of n tools costs n lookups, not n passes
/// over the names given.
pub(crate) fn exposed_name(
    catalog: &Catalog,
    group: &str,
    original: &str,
    taken: &HashMap<ToolName, String>,
    yielding: &[GroupId],
) -> Option<ToolName> {
    let free = |name: &ToolName| {
        let in_catalog = catalog.tool_state(name.as_str()).is_none()
            || catalog
                .group_of(name.as_str())
                .is_some_and(|g| g.as_str() == group || yielding.contains(g));
        in_catalog && taken.get(name).is_none_or(|other| other == original)
    };
    ToolName::candidates(Some(group), original).find(|name| free(name))
}

#[cfg(test)]
#[path = "naming_tests.rs"]
mod tests;
