//! The routing core of toolgate: the [`Catalog`] of tools and groups, JSON
//! [manifests](load_manifest_dirs) and [catalog imports](import_jsonl), the
//! per-conversation [`ActiveToolSet`], the `load_tool_group` meta-tool, the
//! [history restore](restore_active_set), the [system-prompt
//! section](tool_groups_section), [polymorphic tools](PolymorphicTool) and
//! [token counting](TokenCounter).
//!
//! This crate has no async runtime and no network: stores, providers and
//! transports build on it, never the other way round.
#![deny(missing_docs)]
#![deny(clippy::print_stdout, clippy::print_stderr)]

mod action;
mod active_set;
mod answers;
mod catalog;
mod contract;
mod delivery;
mod error;
mod group;
mod groups_found;
mod history;
mod host_event;
mod import;
mod listing_form;
mod load_budget;
mod loaded_schemas;
mod manifest;
mod meta_tool;
mod meta_tools;
mod name;
mod origin;
mod policy;
mod polymorphic;
mod prompt;
mod restore;
pub mod routing;
mod timeout;
mod tokens;
mod tool;

pub use action::{ACTION_PARAMETER, Action, ActionPolicy};
pub use active_set::{ActiveToolSet, GroupSelection};
pub use answers::{
    ActionNotAvailable, CallTimedOut, CallToolError, FindGroupsError, GroupLoaded,
    GroupPartlyLoaded, GroupUnloaded, LoadGroupError, MetaError, NotAvailable, ToolsLoaded,
    UnloadGroupError,
};
pub use catalog::{
    Alias, Catalog, CatalogTool, GroupListing, GroupVisibility, OwnTools, ToolState,
};
pub use contract::groups_found::FoundAnswer;
pub use contract::{
    CALL_CANCELLED, CALL_FAILED_IN_AGENT, CALL_TOOL_TOOL_NAME, COMPACTION_PROMPT,
    COMPACTION_SUMMARY_HEADING, FIND_TOOL_GROUPS_TOOL_NAME, FailedInAgent, GROUP_NAME_PARAMETER,
    LOAD_TOOL_GROUP_TOOL_NAME, LoadAnswer, MissingParameter, SECTION_SEPARATOR,
    TOOL_GROUPS_HEADING, TOOL_GROUPS_INSTRUCTION, TOOLS_PARAMETER, UNLOAD_TOOL_GROUP_TOOL_NAME,
};
pub use contract::{
    FailedInGateway, GATEWAY_INSTRUCTIONS, GATEWAY_INSTRUCTIONS_WHOLE, GatewayShuttingDown,
    NameTooLong, NotInGroup, SessionUnreadable,
};
pub use delivery::{
    DEFAULT_CONTEXT_WINDOW, DEFAULT_DEFER_SHARE, Deferral, Delivery, Mode, thousands,
};
pub use error::{
    CatalogError, ImportError, ManifestError, ManifestErrorReason, SchemaError, TokenizerError,
};
pub use group::{ToolGroup, generated_group_description};
pub use groups_found::{FoundGroup, FoundLoad, FoundTools, GroupsFound};
pub use history::{Message, MessageKind, ToolStatus};
pub use host_event::{GROUP_USED_EVENT, HostEvent, SkipReason};
pub use import::{ImportRename, ImportReport, import_jsonl};
pub use listing_form::{
    GROUP_DESCRIPTION_MAX_CHARS, GroupSearch, ListingForm, ListingWeight, MAX_LINES_SHARE,
    MIN_SHRUNK_CHARS, largest_groups, listing_description,
};
pub use load_budget::{
    BudgetPlan, GroupUse, Incoming, LoadBudget, Oversized, Unload, UnloadedForBudget,
};
pub use loaded_schemas::LoadedSchemas;
pub use manifest::{
    Manifest, ManifestFile, ManifestReport, ManifestTool, load_manifest_dirs, parse_manifest,
    register_manifest, scan_manifest_dir,
};
pub use meta_tool::{
    MetaCall, MetaTool, group_name_argument, load_tool_group_definition,
    unload_tool_group_definition,
};
pub use meta_tools::{MetaAnswer, MetaTools, not_in_group};
pub use name::{
    GroupId, MAX_GROUP_ID_LEN, MAX_TOOL_NAME_LEN, NameError, ToolName, closest_name, fnv1a,
    is_tool_name_char, sanitize_group_id, sanitize_tool_name, title_case,
};
pub use origin::Origin;
pub use policy::{ActionTarget, PolicyTarget, ToolKind, ToolPolicy};
pub use polymorphic::{
    ActionCall, ActionError, PolymorphicError, PolymorphicTool, action_names, typed_result,
};
pub use prompt::{system_prompt, tool_groups_section, tool_groups_section_as};
pub use restore::{Restored, SessionTools, SkippedEvent, restore_active_set};
pub use timeout::{MAX_TIMEOUT_SECONDS, timeout_from_seconds};
pub use tokens::{CatalogCost, Encoding, GroupCost, TokenCounter};
pub use tool::{ToolAnnotations, ToolDefinition};
