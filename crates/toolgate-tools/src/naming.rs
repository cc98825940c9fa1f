//! The names listed tools are exposed under, when their own will not do.
//!
//! MCP tool names are 1-64 characters of `A-Za-z0-9_./-`, but servers ship
//! names such as `PDF&URLTool`. Such a tool is exposed, not skipped: its own
//! name when valid and free, else `group__tool` when that is, else its name
//! with every other character replaced by `_`, else that name cut short
//! with `_` and 8 hex digits of a stable hash (32-bit FNV-1a of the group id
//! and the original name, the same on every run and build). Calls to the
//! exposed name reach the source under the original one.

use std::collections::HashMap;
use std::fmt;

use toolgate_core::{Catalog, GroupId, MAX_TOOL_NAME_LEN, NameError, ToolName, is_tool_name_char};

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

/// Length of the hash suffix, `_` included.
const SUFFIX_LEN: usize = 9;
/// Hashed names tried before giving up (a collision of 32-bit hashes among
/// one catalog's names is already unlikely).
const HASH_ATTEMPTS: u32 = 16;

/// The name `original`, a tool of `group`, is exposed under: the first
/// free one of its own name, `group__original`, the sanitized name and the
/// hashed one; `None` if none is free. A name is free when no tool of
/// another group has it and `taken` (exposed -> original, this group's
/// names so far) gives it to no other tool: one lookup, so naming a
/// listing of n tools costs n lookups, not n passes over the names given.
pub(crate) fn exposed_name(
    catalog: &Catalog,
    group: &str,
    original: &str,
    taken: &HashMap<ToolName, String>,
) -> Option<ToolName> {
    let free = |name: &ToolName| {
        let in_catalog = catalog.tool_state(name.as_str()).is_none()
            || catalog
                .group_of(name.as_str())
                .is_some_and(|g| g.as_str() == group);
        in_catalog && taken.get(name).is_none_or(|other| other == original)
    };
    let sanitized = sanitize(original);
    let plain = [
        original.to_owned(),
        format!("{group}__{original}"),
        sanitized.clone(),
    ];
    if let Some(name) = plain
        .into_iter()
        .filter_map(|name| ToolName::new(name).ok())
        .find(|name| free(name))
    {
        return Some(name);
    }
    let prefix: String = sanitized
        .chars()
        .take(MAX_TOOL_NAME_LEN - SUFFIX_LEN)
        .collect();
    (0..HASH_ATTEMPTS)
        .filter_map(|attempt| {
            let salt = attempt.to_string();
            let hash = if attempt == 0 {
                fnv1a(&[group, "\0", original])
            } else {
                fnv1a(&[group, "\0", original, "\0", &salt])
            };
            ToolName::new(format!("{prefix}_{hash:08x}")).ok()
        })
        .find(|name| free(name))
}

/// `name` with every character outside MCP's `A-Za-z0-9_./-` replaced by
/// `_`.
pub(crate) fn sanitize(name: &str) -> String {
    name.chars()
        .map(|c| if is_tool_name_char(c) { c } else { '_' })
        .collect()
}

/// 32-bit FNV-1a of the concatenated `parts`: small, and stable across
/// runs, platforms and Rust versions (unlike `DefaultHasher`).
pub(crate) fn fnv1a(parts: &[&str]) -> u32 {
    const OFFSET: u32 = 0x811c_9dc5;
    const PRIME: u32 = 0x0100_0193;
    parts
        .iter()
        .flat_map(|part| part.bytes())
        .fold(OFFSET, |hash, byte| {
            (hash ^ u32::from(byte)).wrapping_mul(PRIME)
        })
}

#[cfg(test)]
#[path = "naming_tests.rs"]
mod tests;
