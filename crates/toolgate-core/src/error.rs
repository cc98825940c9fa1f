//! Errors of the routing core.
//!
//! Operator-facing errors (a bad manifest, a name collision) live here as
//! `thiserror` enums. What the *model* sees when it calls a meta-tool wrongly is
//! not an error of this crate: those are values ([`crate::LoadGroupError`],
//! [`crate::NotAvailable`]) whose `Display` is the exact contract text.

use std::path::PathBuf;

use crate::name::{GroupId, NameError, ToolName};
use crate::origin::Origin;

/// An input schema that is not a JSON Schema for an object.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SchemaError {
    /// The schema is not a JSON object.
    #[error("input schema must be a JSON object, not {found}")]
    NotAnObject {
        /// The JSON type found instead.
        found: &'static str,
    },
    /// `type` is present and is not `"object"`.
    #[error("input schema must have \"type\": \"object\", not {found}")]
    NotObjectType {
        /// The `type` value found.
        found: String,
    },
    /// `properties` is present and is not an object.
    #[error("input schema `properties` must be an object")]
    PropertiesNotObject,
    /// `required` is present and is not an array of strings.
    #[error("input schema `required` must be an array of strings")]
    RequiredNotStrings,
}

/// Registering a tool or group in the [`crate::Catalog`] failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum CatalogError {
    /// The tool name is taken.
    #[error("tool `{name}` from {new} is already registered by {existing}")]
    DuplicateTool {
        /// The contested name.
        name: ToolName,
        /// Who registered it first.
        existing: Origin,
        /// Who tried again.
        new: Origin,
    },
    /// The same tool name twice in one registration batch.
    #[error("tool `{name}` appears twice in {origin}")]
    DuplicateToolInBatch {
        /// The repeated name.
        name: ToolName,
        /// The batch's origin.
        origin: Origin,
    },
    /// The group id is taken.
    #[error("tool group `{id}` from {new} is already registered by {existing}")]
    DuplicateGroup {
        /// The contested id.
        id: GroupId,
        /// Who registered it first.
        existing: Origin,
        /// Who tried again.
        new: Origin,
    },
    /// A tool names a group nobody registered.
    #[error("tool `{tool}` names the unknown tool group `{group}`")]
    UnknownGroup {
        /// The tool.
        tool: ToolName,
        /// The group it asked for.
        group: GroupId,
    },
    /// No tool by that name.
    #[error("no tool named `{0}`")]
    UnknownTool(String),
    /// No group by that id.
    #[error("no tool group named `{0}`")]
    UnknownGroupId(String),
    /// An alias names a tool that exists.
    #[error("alias `{alias}` is the name of a tool registered by {existing}")]
    AliasShadowsTool {
        /// The alias.
        alias: String,
        /// Who registered the tool.
        existing: Origin,
    },
    /// An alias's fixed arguments set the action, which would override the
    /// one it names (and the one a policy checked).
    #[error("alias `{0}` sets `action` in its fixed arguments; name the action as the alias's own")]
    AliasArgumentsSetAction(String),
}

/// A manifest file that was skipped, with the reason.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{path}: {reason}", path = path.display())]
pub struct ManifestError {
    /// The file (or directory) at fault.
    pub path: PathBuf,
    /// What was wrong with it.
    pub reason: ManifestErrorReason,
}

/// Why a manifest file was skipped.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum ManifestErrorReason {
    /// The directory or file could not be read (a symbolic link loop, no
    /// permission, ...).
    #[error("cannot read: {0}")]
    Io(String),
    /// A symbolic link whose target does not exist.
    #[error("cannot read: a symbolic link to nothing (its target does not exist)")]
    BrokenLink,
    /// Neither a regular file nor a directory: not opened.
    #[error("not a regular file (a named pipe, socket or device); not opened")]
    NotAFile,
    /// Not valid JSON.
    #[error("invalid JSON: {0}")]
    Json(String),
    /// Neither an object (a core tool) nor an array (a group).
    #[error("a manifest must hold one tool object or an array of tools, not {0}")]
    Shape(&'static str),
    /// One entry is wrong.
    #[error("entry {index}: {problem}")]
    Entry {
        /// Zero-based position in the array (0 for a single-tool file).
        index: usize,
        /// What is wrong with it.
        problem: String,
    },
    /// The file name cannot be a group id.
    #[error("file name cannot be a group id: {0}")]
    GroupName(NameError),
    /// Registering its tools or group collided with what was already loaded.
    #[error(transparent)]
    Catalog(Box<CatalogError>),
    /// The JavaScript file beside it does not load (it does not compile, or
    /// its top-level code throws): why.
    #[error("{0}")]
    Script(String),
}

/// A line of a `tools.jsonl` / `groups.jsonl` import that was skipped, or a
/// file that could not be read (line 0).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{}{}: {reason}", path.display(), line_suffix(*line))]
pub struct ImportError {
    /// The file.
    pub path: PathBuf,
    /// One-based line number (0 when the whole file failed).
    pub line: usize,
    /// What was wrong.
    pub reason: String,
}

fn line_suffix(line: usize) -> String {
    if line == 0 {
        String::new()
    } else {
        format!(":{line}")
    }
}

/// The tokenizer could not be built.
#[derive(Debug, thiserror::Error)]
#[error("cannot build the {encoding} tokenizer: {message}")]
pub struct TokenizerError {
    /// The encoding asked for.
    pub encoding: &'static str,
    /// What tiktoken said.
    pub message: String,
}
