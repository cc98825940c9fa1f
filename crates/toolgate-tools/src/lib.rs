//! The tool runtime of toolgate, shared by the agent loop (`toolgate chat`)
//! and the MCP gateway (`toolgate serve`): the [`ToolSource`] trait that the
//! built-in tools, upstream MCP servers and JavaScript tools (a manifest
//! with a `.js` file beside it) implement; the [`Toolbox`] that holds the catalog and routes each call to
//! its source, checks its arguments, and resolves polymorphic tools and
//! aliases; one output type, [`ToolOutput`], that each front end converts at
//! its edge; the built-in groups (`time`, `files`, `web`,
//! `prompt_manager`); and the JavaScript tools agents write
//! ([`UserJsTools`]: `js_tool_management` and `user_tools`) and `js_eval`
//! ([`JsEvalTool`]).
//!
//! No protocol types cross this crate: an MCP server is a [`ListedSource`]
//! implemented in toolgate-mcp.
#![deny(missing_docs)]
#![deny(clippy::print_stdout, clippy::print_stderr)]

mod authority;
mod builtin;
mod catalog_state;
mod consolidate;
mod context;
mod deadline;
mod embeddings;
mod error;
mod javascript;
mod listing;
mod manifests;
mod naming;
mod output;
mod progress;
mod registry;
mod settings;
mod source;
mod toolbox;
mod validate;

pub use authority::{Authority, CallerLimits};
pub use builtin::{
    BuiltinConfig, BuiltinTools, CHECK_EVERY_STEPS, ConversionCancelled, FilesAccess, FilesRoot,
    MAX_SEARCH_RESULTS, MAX_STEPS_PER_BYTE, PROMPT_TYPES, PageText, WebConfig, html_to_text,
    html_to_text_until,
};
pub use catalog_state::CatalogChange;
pub use consolidate::ALL_GROUPS;
pub use context::{Backchannel, CallContext};
pub use deadline::DEFAULT_CALL_TIMEOUT;
pub use embeddings::{LocalEmbeddings, vector_cache_dir};
pub use error::{ConsolidationError, SourceError, ToolCallError, ToolboxError};
pub use javascript::eval::JsEvalTool;
pub use javascript::management::{JS_TOOL_MANAGEMENT_GROUP, UserJsTools};
pub use javascript::user_tools::USER_TOOLS_GROUP;
pub use javascript::{DEFAULT_TOOL_OWNER, JavaScriptConfig, JsEval, JsSlots, ToolOwnership};
pub use manifests::ReloadReport;
pub use naming::{RenameReason, RenamedTool};
pub use output::{Content, ToolOutput};
pub use progress::{Progress, Step};
pub use settings::{
    GroupExposure, GroupSettings, InvalidSetting, RawAlias, RawGroupSettings,
    RawJavaScriptSettings, RawToolsSettings, RawWebSettings, ToolSettings,
};
pub use source::{
    CallDeadline, ListedGroup, ListedSource, NamePriority, OwnedSet, OwnedTools, SourceCall,
    SourceChange, SourceListing, SourceOffer, SourceTool, Startup, ToolSource,
};
pub use toolbox::call::{AdmittedCall, Reach, Refusal, RefusedCall, ResolvedCall, ViewKey};
pub use toolbox::meta::{LoadedTools, MetaAnswered, MetaHost, MetaOutcome, load_limit};
pub use toolbox::reconfigure::Joined;
pub use toolbox::{DEFAULT_SEARCH_ABOVE_GROUPS, StartReport, Toolbox, ToolboxOptions};
