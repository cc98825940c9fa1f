//! [`ToolHost`]: the tools an agent can see and run, whatever their source.

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::RwLockReadGuard;

use serde_json::Value;
use tokio_util::sync::CancellationToken;
use toolgate_core::Catalog;

use crate::executor::{CallContext, ToolFuture};

/// The future [`ToolHost::prepare_group`] returns: `Err` carries the text the
/// model reads (`MCP server 'github' failed to start: ...`).
pub type PrepareFuture<'a> = Pin<Box<dyn Future<Output = Result<(), String>> + Send + 'a>>;

/// A catalog and what runs its tools: built-in tools, manifests and upstream
/// MCP servers behind one interface, shared by the MCP gateway and the agent
/// loop so both run tools the same way.
pub trait ToolHost: Send + Sync + fmt::Debug {
    /// The catalog as it is now. Hold the guard briefly: listing an upstream
    /// writes to the catalog.
    fn catalog(&self) -> RwLockReadGuard<'_, Catalog>;

    /// Makes `group`'s tools known before it is loaded: starts and lists a
    /// lazily started upstream. Groups whose tools are always known are ready
    /// at once.
    fn prepare_group<'a>(&'a self, group: &'a str) -> PrepareFuture<'a>;

    /// Runs a catalog tool (not a meta-tool) with `arguments`, validated
    /// against its input schema first. `cancel` abandons the call (and tells
    /// an upstream server so). A tool name may be an alias; a polymorphic
    /// tool checks its action first.
    fn call<'a>(
        &'a self,
        tool: &'a str,
        arguments: Value,
        cancel: CancellationToken,
        context: &'a CallContext,
    ) -> ToolFuture<'a>;
}
