//! The answers the model reads back from a meta-tool or from a call it may
//! not make, as values: loads and unloads, their refusals, "not available",
//! timeouts. `find_tool_groups`' ranking, made from a routing decision, is
//! [`GroupsFound`](crate::GroupsFound), in `groups_found.rs`.
//!
//! These are results, not errors of this crate: a failed load is a normal tool
//! result the model learns from. Each type's `Display` (written in
//! `contract.rs`, with every other text the model reads) is the exact
//! contract text, and `kind()` is the stable machine-readable code.

use crate::group::ToolGroup;
use crate::name::{GroupId, ToolName};
use crate::tool::ToolDefinition;

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

/// A partial load: some of a group's tools, the rest left for
/// `load_tool_group`.
#[derive(Clone, Debug, PartialEq)]
pub struct GroupPartlyLoaded<'c> {
    /// The group's metadata.
    pub group: &'c ToolGroup,
    /// Its tools now loaded (by this load and earlier ones), in load order.
    pub tools: Vec<&'c ToolDefinition>,
    /// How many enabled tools the group has, loaded or not.
    pub group_tools: usize,
    /// `false` when every tool asked for was loaded already and nothing
    /// changed.
    pub newly_loaded: bool,
    /// The tools this load added (none when nothing changed), in order: the
    /// change recorded ([`Self::event`]).
    pub added: Vec<ToolName>,
}

/// What [`crate::ActiveToolSet::load_tools`] did: the group is partly
/// loaded, or (the selection covered it, or the group was loaded whole
/// already) whole.
#[derive(Clone, Debug, PartialEq)]
pub enum ToolsLoaded<'c> {
    /// The group is loaded whole.
    Whole(GroupLoaded<'c>),
    /// Only some of its tools are loaded.
    Partial(GroupPartlyLoaded<'c>),
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
    /// The group's tools could not be made known: its source (an MCP server)
    /// failed to start or to list them. The text names the source and the
    /// cause.
    Unavailable {
        /// What the source said, for the model.
        reason: String,
    },
    /// `tools` is given but is not a list of names.
    InvalidTools,
    /// The load would add more tokens of tool schemas than one load may for
    /// the model asking (a share of its context window): nothing is loaded,
    /// and the text names the group's tools, for a load of the ones needed.
    TooLarge {
        /// The group.
        group: GroupId,
        /// The tokens the group would hold after the load.
        tokens: usize,
        /// The most one load may bring.
        limit: usize,
        /// The group's tools, in catalog order.
        tools: Vec<ToolName>,
    },
}

impl LoadGroupError {
    /// The stable error code: `missing_parameter`, `not_found`,
    /// `empty_group`, `unavailable`, `invalid_parameter` or `too_large`.
    pub fn kind(&self) -> &'static str {
        match self {
            Self::MissingParameter => "missing_parameter",
            Self::NotFound { .. } => "not_found",
            Self::EmptyGroup { .. } => "empty_group",
            Self::Unavailable { .. } => "unavailable",
            Self::InvalidTools => "invalid_parameter",
            Self::TooLarge { .. } => "too_large",
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
    /// The caller has no conversation (a stateless MCP request), so nothing
    /// is loaded.
    NoSession {
        /// What the model asked for.
        requested: String,
    },
}

impl UnloadGroupError {
    /// The stable error code: `missing_parameter`, `not_loaded` or
    /// `no_session`.
    pub fn kind(&self) -> &'static str {
        match self {
            Self::MissingParameter => "missing_parameter",
            Self::NotLoaded { .. } => "not_loaded",
            Self::NoSession { .. } => "no_session",
        }
    }
}

impl std::error::Error for UnloadGroupError {}

/// A call to a tool outside the active set. `Display` is the text the model
/// reads: it names the group to load when there is one, and never says
/// "forbidden".
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NotAvailable {
    /// The tool the model called.
    pub tool: String,
    /// The unloaded group it belongs to, when it exists and is enabled.
    pub group: Option<GroupId>,
}

impl std::error::Error for NotAvailable {}

/// A call of an action of a polymorphic tool that this caller may not use.
/// `Display` is the text the model reads as the call's result.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ActionNotAvailable {
    /// The polymorphic tool called.
    pub tool: String,
    /// The action the call named.
    pub action: String,
}

impl std::error::Error for ActionNotAvailable {}

/// A tool call that did not finish within its deadline and was cancelled.
/// `Display` is the text the model reads as the call's result.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CallTimedOut {
    /// The tool that was called.
    pub tool: String,
    /// The deadline it missed.
    pub limit: std::time::Duration,
}

impl std::error::Error for CallTimedOut {}

/// Why a `call_tool` call was refused before the tool ran.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum CallToolError {
    /// `name` is missing, blank or not a string.
    MissingName,
    /// `name` is a meta-tool, which is called directly.
    MetaTool {
        /// The meta-tool named.
        name: String,
    },
    /// `arguments` is present and not an object.
    ArgumentsNotObject,
}

impl CallToolError {
    /// The stable error code: `missing_parameter`, `meta_tool` or
    /// `invalid_arguments`.
    pub fn kind(&self) -> &'static str {
        match self {
            Self::MissingName => "missing_parameter",
            Self::MetaTool { .. } => "meta_tool",
            Self::ArgumentsNotObject => "invalid_arguments",
        }
    }
}

impl std::error::Error for CallToolError {}

/// Why a `find_tool_groups` call was refused.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum FindGroupsError {
    /// `query` is missing, blank or not a string.
    MissingQuery,
}

impl FindGroupsError {
    /// The stable error code: `missing_parameter`.
    pub fn kind(&self) -> &'static str {
        match self {
            Self::MissingQuery => "missing_parameter",
        }
    }
}

impl std::error::Error for FindGroupsError {}

/// A meta-tool call that could not be answered as asked: an error result
/// whose `Display` the model reads.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum MetaError {
    /// `load_tool_group` failed.
    Load(LoadGroupError),
    /// `unload_tool_group` failed.
    Unload(UnloadGroupError),
    /// `call_tool` was refused.
    CallTool(CallToolError),
    /// `find_tool_groups` was refused.
    FindGroups(FindGroupsError),
}

impl MetaError {
    /// The stable error code of the failure.
    pub fn kind(&self) -> &'static str {
        match self {
            Self::Load(error) => error.kind(),
            Self::Unload(error) => error.kind(),
            Self::CallTool(error) => error.kind(),
            Self::FindGroups(error) => error.kind(),
        }
    }
}

impl std::error::Error for MetaError {}

impl From<LoadGroupError> for MetaError {
    fn from(error: LoadGroupError) -> Self {
        Self::Load(error)
    }
}

impl From<UnloadGroupError> for MetaError {
    fn from(error: UnloadGroupError) -> Self {
        Self::Unload(error)
    }
}
