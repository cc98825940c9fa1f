//! The errors of the tool runtime, kept apart by who reads them:
//! [`ToolCallError::RespondToModel`] goes back to the model as the call's
//! result and the turn goes on; [`ToolCallError::Fatal`] is the operator's
//! and never reaches the model. [`ToolboxError`] is why a toolbox could not
//! be built, [`SourceError`] why a source could not list its tools.

use std::fmt;

use toolgate_core::routing::RoutingError;
use toolgate_core::{CatalogError, GroupId, NameError, SchemaError};

use crate::output::ToolOutput;

/// Why a tool call did not give the tool's own result.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum ToolCallError {
    /// Refused before or while the tool ran, in a way the model can act on
    /// (unknown tool, bad arguments, a server that failed): sent back as the
    /// call's error result; the turn continues.
    #[error("{}", .0.model_text())]
    RespondToModel(ToolOutput),
    /// Something is wrong on the operator's side (a source that does not know
    /// a tool the registry routes to it): logged, never shown to the model;
    /// the caller stops the call with a generic failure.
    #[error("fatal: {0}")]
    Fatal(String),
}

impl ToolCallError {
    /// An error result with `text` for the model.
    pub fn respond(text: impl Into<String>) -> Self {
        Self::RespondToModel(ToolOutput::error(text))
    }
}

/// Why a source could not make its tools known (an MCP server that would not
/// start, or failed to list): the text names the source and the cause, for
/// the model that tried to load its group and for the operator.
#[derive(Clone, Debug)]
pub struct SourceError(std::sync::Arc<dyn std::error::Error + Send + Sync>);

impl SourceError {
    /// Wraps the source's own error.
    pub fn new(error: impl std::error::Error + Send + Sync + 'static) -> Self {
        Self(std::sync::Arc::new(error))
    }
}

impl fmt::Display for SourceError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

impl std::error::Error for SourceError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.0.source()
    }
}

/// Why the toolbox could not be built.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ToolboxError {
    /// The files root of the built-in `files` tools is missing or unreadable.
    #[error("files root `{path}`: {source}", path = path.display())]
    FilesRoot {
        /// The configured root.
        path: std::path::PathBuf,
        /// Why it failed.
        source: std::io::Error,
    },
    /// A built-in definition is invalid (a bug in toolgate).
    #[error("built-in tool definition: {0}")]
    Definition(#[from] SchemaError),
    /// A built-in name is invalid (a bug in toolgate).
    #[error("built-in tool name: {0}")]
    Name(#[from] NameError),
    /// Two sources claim one group or tool name.
    #[error(transparent)]
    Catalog(Box<CatalogError>),
    /// The routing configuration names a group the catalog lacks.
    #[error(transparent)]
    Routing(#[from] RoutingError),
    /// A group configured as one polymorphic tool cannot be one.
    #[error("group `{group}` cannot be exposed as one polymorphic tool: {reason}")]
    Polymorphic {
        /// The group.
        group: GroupId,
        /// Why not.
        reason: ConsolidationError,
    },
    /// An alias cannot be registered.
    #[error("alias `{alias}`: {source}")]
    Alias {
        /// The old name.
        alias: String,
        /// Why not.
        source: Box<CatalogError>,
    },
}

impl From<CatalogError> for ToolboxError {
    fn from(error: CatalogError) -> Self {
        Self::Catalog(Box::new(error))
    }
}

/// Why a group cannot become one polymorphic tool.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum ConsolidationError {
    /// The tool would be named after the group, whose id is no tool name.
    #[error("the group id is not a valid tool name ({0})")]
    GroupName(NameError),
    /// The action policy allows or denies actions the group lacks.
    #[error("the action policy names unknown actions: {} (the actions are: {})", unknown.join(", "), actions.join(", "))]
    UnknownActions {
        /// The names that match no action.
        unknown: Vec<String>,
        /// The group's actions.
        actions: Vec<String>,
    },
    /// Its tools cannot be actions of one tool.
    #[error(transparent)]
    Polymorphic(#[from] toolgate_core::PolymorphicError),
    /// The catalog refused the tool or an alias of a former tool.
    #[error(transparent)]
    Catalog(Box<CatalogError>),
}

impl From<CatalogError> for ConsolidationError {
    fn from(error: CatalogError) -> Self {
        Self::Catalog(Box::new(error))
    }
}
