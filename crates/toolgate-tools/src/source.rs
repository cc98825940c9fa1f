//! [`ToolSource`]: where calls of some tools go (the built-in tools, one MCP
//! server, one JavaScript file), and [`ListedSource`]: a source that is one
//! group whose tools are known only once it runs (an MCP server).
//!
//! A source knows nothing of catalogs, names or policies: it offers tools
//! under its own names and runs them. The [`crate::Toolbox`] decides the
//! names the model sees (qualified on collision, sanitized when MCP refuses
//! them, each rename reported), checks
//! arguments, dispatches polymorphic tools and aliases, and relists a
//! listed source when it announces a change.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use serde_json::{Map, Value};
use toolgate_core::{GroupId, GroupVisibility, ToolAnnotations, ToolDefinition, ToolGroup};
use toolgate_store::ToolOwner;

use crate::context::CallContext;
use crate::error::{SourceError, ToolCallError};
use crate::output::ToolOutput;

/// One call as a source receives it.
#[derive(Clone, Debug, PartialEq)]
pub struct SourceCall {
    /// The tool, by the name its source gave it.
    pub tool: String,
    /// Its arguments, checked against the tool's input schema.
    pub arguments: Value,
}

/// What a source offers from the start, without running anything.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct SourceOffer {
    /// Core tools: always visible.
    pub core_tools: Vec<ToolDefinition>,
    /// Groups and their tools, in the order to list them.
    pub groups: Vec<(ToolGroup, Vec<ToolDefinition>)>,
}

/// How long the toolbox lets one call of a source run before it cancels
/// the call and answers the model that it timed out.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum CallDeadline {
    /// The toolbox's own, [`ToolboxOptions::call_timeout`](crate::ToolboxOptions::call_timeout).
    #[default]
    Toolbox,
    /// This long: the source has time limits of its own (an MCP server's
    /// start-up and call timeouts) and declares the longest a call can take
    /// with them, so the toolbox never cuts short a call its source would
    /// still finish or answer itself.
    Own(Duration),
}

/// Where calls of some tools go.
#[async_trait]
pub trait ToolSource: Send + Sync + fmt::Debug {
    /// The tools known from the start. A [`ListedSource`] offers nothing
    /// here: its tools come from [`ListedSource::list`].
    fn offer(&self) -> SourceOffer {
        SourceOffer::default()
    }

    /// How long one of its calls may run. When the deadline passes, the
    /// toolbox cancels the call's [`CallContext::cancel`], gives the source
    /// a moment to stop, and answers the model that the call timed out.
    fn deadline(&self) -> CallDeadline {
        CallDeadline::Toolbox
    }

    /// Runs `call`. Failures the tool reports are `Ok` outputs with
    /// `is_error`; a failure on the way (a server that is down) is
    /// [`ToolCallError::RespondToModel`].
    async fn call(
        &self,
        call: SourceCall,
        context: &CallContext,
    ) -> Result<ToolOutput, ToolCallError>;
}

/// When a listed source starts.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Startup {
    /// On the first load of its group (or call of one of its tools).
    #[default]
    Lazy,
    /// When the toolbox starts, so its tools are listed before anyone asks.
    Eager,
}

/// Who keeps a tool name the tools of two listed sources both have.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum NamePriority {
    /// The source earlier in the priority order: before a source is first
    /// listed, every source before it is, so a name once given never moves
    /// (an MCP server).
    #[default]
    InOrder,
    /// Every other source: this one is listed without listing the others
    /// first, and when another source's tool is listed later under a name
    /// one of its tools holds, its tool is renamed (the JavaScript tools
    /// agents write, which never take a configured server's tool's name).
    Yields,
}

/// The group a listed source provides.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ListedGroup {
    /// The group's id: the source's configured name.
    pub id: GroupId,
    /// The group description; `None` takes what the source says of itself
    /// once it runs, else a sentence naming it.
    pub description: Option<String>,
    /// When it starts.
    pub startup: Startup,
    /// Whether its tools wait for a load.
    pub visibility: GroupVisibility,
}

/// One tool as a listed source names and describes it.
#[derive(Clone, Debug, PartialEq)]
pub struct SourceTool {
    /// The source's own name for it.
    pub name: String,
    /// What it does.
    pub description: String,
    /// Its input schema.
    pub input_schema: Value,
    /// Its behaviour hints.
    pub annotations: Option<ToolAnnotations>,
    /// The tool exactly as the source described it (for an MCP server, its
    /// `tools/list` entry: output schema, title, icons and `_meta` kept), for
    /// front ends that pass it on. The toolbox sets its `name` to the name
    /// the tool is exposed under.
    pub listing: Map<String, Value>,
}

/// What a listed source said when it was listed.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct SourceListing {
    /// Its tools, as it names them.
    pub tools: Vec<SourceTool>,
    /// What it says of itself (an MCP server's instructions or name): the
    /// group's description when none is configured.
    pub about: Option<String>,
    /// Increases at every (re)start, so a listing can be known to be stale.
    pub generation: u64,
}

/// Why [`ListedSource::changed`] returned.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SourceChange {
    /// The source says its tools changed: list it again.
    ToolsChanged,
    /// The source was shut down: it will say nothing more.
    Closed,
}

/// A source that is one group whose tools are known once it runs.
#[async_trait]
pub trait ListedSource: ToolSource {
    /// The group it provides.
    fn group(&self) -> &ListedGroup;

    /// Who keeps a name its tools and another source's both have: the
    /// earlier source in the priority order, by default.
    fn name_priority(&self) -> NamePriority {
        NamePriority::InOrder
    }

    /// Starts the source if needed and lists its tools.
    async fn list(&self) -> Result<SourceListing, SourceError>;

    /// The generation of the running connection, if one runs.
    async fn running_generation(&self) -> Option<u64>;

    /// Stops a running source; the next use starts it again.
    async fn stop(&self);

    /// Stops the source for good.
    async fn shutdown(&self);

    /// Stops the source for good because the configuration no longer has
    /// it (removed, or replaced by a changed one): a source may let the
    /// calls under way finish first, refusing new ones. By default the same
    /// as [`Self::shutdown`].
    async fn retire(&self) {
        self.shutdown().await;
    }

    /// Waits until the source announces that its tools changed, or is shut
    /// down.
    async fn changed(&self) -> SourceChange;

    /// Before a request uses the catalog: makes its listing of this source
    /// current when the tools may have changed without a word from the
    /// source (JavaScript tools another process wrote to a shared store).
    /// One cheap check; when they moved, the source announces a change and
    /// returns once the toolbox has relisted it. Nothing by default: a
    /// source that announces its changes is always current.
    async fn catch_up(&self) {}
}

/// One owner's tools of an [`OwnedTools`] group, as last read.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct OwnedSet {
    /// Changes each time the owner's tools are read again.
    pub revision: u64,
    /// The tools, under their own names.
    pub tools: Vec<ToolDefinition>,
}

/// A group whose tools depend on who calls: each caller's own (the
/// JavaScript tools each client of a gateway writes). The catalog lists the
/// group with the tools of callers that name no owner (the operator); the
/// toolbox shows every caller whose [`Authority`](crate::Authority) names an
/// owner that owner's tools instead, in its view and its calls, and the
/// source runs a call with the caller's own tool.
#[async_trait]
pub trait OwnedTools: ToolSource {
    /// The group the tools are shown in.
    fn group_id(&self) -> &GroupId;

    /// Reads `owner`'s tools, unless they are known and current (where
    /// other processes may change them, checked against where they are
    /// kept). Returns whether tools already shown changed, so the sessions
    /// that show them should list again.
    async fn prepare(&self, owner: &ToolOwner) -> bool;

    /// `owner`'s tools as last read; `None` before [`Self::prepare`].
    fn tools_of(&self, owner: &ToolOwner) -> Option<Arc<OwnedSet>>;
}
