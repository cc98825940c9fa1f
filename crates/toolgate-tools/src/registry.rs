//! [`ToolRegistry`]: from a catalog tool's name to what runs it.
//!
//! The catalog says what a tool is; the registry says where its calls go:
//! a source (under the source's own name for it), nothing (a tool a
//! manifest or catalog file defines but nothing implements), or the member
//! tools behind a polymorphic tool's actions.

use std::collections::HashMap;
use std::sync::Arc;

use serde_json::{Map, Value};
use toolgate_core::{PolymorphicTool, ToolDefinition, ToolName};

/// A source of the toolbox, by its position.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) struct SourceId(pub(crate) usize);

/// Where the calls of one catalog tool go.
#[derive(Clone, Debug)]
pub(crate) enum Route {
    /// A source's tool, under the name the source gave it, with the
    /// source's own description of it when it gave one.
    Source {
        source: SourceId,
        tool: String,
        listing: Option<Arc<Map<String, Value>>>,
    },
    /// Defined by a manifest or catalog file, with nothing to run it.
    Unbound,
    /// A group's tools behind one polymorphic tool.
    Polymorphic(Arc<Consolidated>),
}

impl Route {
    /// Whether the tool (or, for a polymorphic tool, any of its members)
    /// runs on `source`.
    fn runs_on(&self, source: SourceId) -> bool {
        match self {
            Self::Source { source: own, .. } => *own == source,
            Self::Polymorphic(consolidated) => consolidated
                .members
                .iter()
                .any(|member| member.route.runs_on(source)),
            Self::Unbound => false,
        }
    }

    /// The source's descriptions of the tools behind this route.
    pub(crate) fn listings(&self) -> Vec<Arc<Map<String, Value>>> {
        match self {
            Self::Source {
                listing: Some(listing),
                ..
            } => vec![Arc::clone(listing)],
            Self::Source { listing: None, .. } | Self::Unbound => Vec::new(),
            Self::Polymorphic(consolidated) => consolidated
                .members
                .iter()
                .flat_map(|member| member.route.listings())
                .collect(),
        }
    }
}

/// A group consolidated into one polymorphic tool: the tool, and for each of
/// its actions the member tool that runs it.
#[derive(Debug)]
pub(crate) struct Consolidated {
    pub(crate) tool: PolymorphicTool,
    pub(crate) members: Vec<Member>,
}

/// The tool behind one action.
#[derive(Debug)]
pub(crate) struct Member {
    pub(crate) definition: ToolDefinition,
    pub(crate) route: Route,
}

/// Tool name to route, for every catalog tool that has one.
#[derive(Debug, Default)]
pub(crate) struct ToolRegistry {
    routes: HashMap<ToolName, Route>,
}

impl ToolRegistry {
    pub(crate) fn get(&self, name: &str) -> Option<&Route> {
        self.routes.get(name)
    }

    pub(crate) fn insert(&mut self, name: ToolName, route: Route) {
        self.routes.insert(name, route);
    }

    pub(crate) fn remove(&mut self, name: &str) -> Option<Route> {
        self.routes.remove(name)
    }

    /// Forgets every route that runs on `source`, polymorphic tools with a
    /// member there included: the source is about to be listed again.
    pub(crate) fn forget_source(&mut self, source: SourceId) {
        self.routes.retain(|_, route| !route.runs_on(source));
    }

    /// Every polymorphic tool, by name.
    pub(crate) fn polymorphic(&self) -> impl Iterator<Item = (&str, &Arc<Consolidated>)> {
        self.routes.iter().filter_map(|(name, route)| match route {
            Route::Polymorphic(consolidated) => Some((name.as_str(), consolidated)),
            Route::Source { .. } | Route::Unbound => None,
        })
    }

    /// The source's own description of `name`, when it gave one.
    pub(crate) fn listing(&self, name: &str) -> Option<Arc<Map<String, Value>>> {
        match self.routes.get(name)? {
            Route::Source { listing, .. } => listing.clone(),
            Route::Unbound | Route::Polymorphic(_) => None,
        }
    }
}
