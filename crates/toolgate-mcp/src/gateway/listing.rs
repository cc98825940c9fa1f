//! `tools/list` for a request, and what the listed schemas cost: the
//! definitions as MCP lists them, an upstream's tools exactly as it listed
//! them.

use std::sync::Arc;

use rmcp::model::Tool;
use toolgate_core::{
    ActiveToolSet, Catalog, GroupId, LOAD_TOOL_GROUP_TOOL_NAME, LoadedSchemas, ToolDefinition,
    ToolKind, tool_groups_section,
};
use toolgate_store::ConversationStore;
use toolgate_tools::Authority;

use super::Gateway;
use crate::metrics::TokenCosts;
use crate::scope::RequestScope;
use crate::upstream::UpstreamHealth;

impl<S: ConversationStore + 'static> Gateway<S> {
    /// `tools/list`: core tools, always-listed upstream tools, then the
    /// session's loaded groups in load order (none when loaded schemas go
    /// in the conversation). Loaded groups whose upstream is not running yet
    /// (a restored session) are started first; one that fails is left out
    /// of the list rather than failing it.
    pub async fn list_tools(&self, scope: &RequestScope) -> Vec<Tool> {
        if self.sends_whole() {
            return self.list_whole(scope);
        }
        let active = match scope.held(&self.sessions).await {
            Some(session) => session.tools.lock().await.active.clone(),
            None => ActiveToolSet::new(),
        };
        self.toolbox.prepare_visible(&active).await;
        let listed = match self.loaded_schemas {
            LoadedSchemas::ToolList => active,
            LoadedSchemas::Conversation => ActiveToolSet::new(),
        };
        let (tools, revision) = self.with_view(scope, |catalog| {
            let mut tools = self.to_mcp(listed.definitions(catalog), scope.authority());
            // MCP has no system prompt, and many clients drop the server's
            // instructions: the group list rides in load_tool_group's
            // description, where every model sees it.
            if let (Some(load), Some(section)) = (
                tools
                    .iter_mut()
                    .find(|t| t.name == LOAD_TOOL_GROUP_TOOL_NAME),
                tool_groups_section(catalog),
            ) {
                let description = load.description.as_deref().unwrap_or_default();
                load.description = Some(format!("{description}\n\n{section}").into());
            }
            (tools, catalog.revision())
        });
        if !self
            .metrics
            .listed(revision, tools.iter().map(|tool| tool.name.as_ref()))
        {
            self.count_costs();
        }
        tools
    }

    /// `tools/list` of a gateway that sends every tool: every tool the
    /// caller may use but the meta-tools, with no group listing.
    fn list_whole(&self, scope: &RequestScope) -> Vec<Tool> {
        let (tools, revision) = self.with_view(scope, |catalog| {
            let definitions = catalog
                .tools()
                .filter(|tool| tool.kind() != ToolKind::Meta)
                .map(|tool| tool.definition)
                .collect();
            (
                self.to_mcp(definitions, scope.authority()),
                catalog.revision(),
            )
        });
        if !self
            .metrics
            .listed(revision, tools.iter().map(|tool| tool.name.as_ref()))
        {
            self.count_costs();
        }
        tools
    }

    /// What each tool's schema costs, for the catalog as it is now; `None`
    /// while that is being counted (counting starts if it had not).
    pub(crate) fn tool_costs(&self) -> Option<Arc<TokenCosts>> {
        let revision = self.with_catalog(Catalog::revision);
        let costs = self.metrics.costs_at(revision);
        if costs.is_none() {
            self.count_costs();
        }
        costs
    }

    /// Counts the current catalog's token costs, on a blocking thread.
    fn count_costs(&self) {
        let toolbox = Arc::clone(&self.toolbox);
        self.metrics.count_costs(move |counter| {
            toolbox.with_catalog(|catalog| TokenCosts::of(catalog, counter))
        });
    }

    /// Each upstream's name and health.
    pub fn upstream_health(&self) -> Vec<(GroupId, UpstreamHealth)> {
        self.upstreams()
            .iter()
            .map(|upstream| (upstream.name().clone(), upstream.health()))
            .collect()
    }

    /// Definitions as MCP lists them: an upstream's tools exactly as it
    /// listed them (but for the exposed name), the others from the catalog.
    pub(super) fn to_mcp(
        &self,
        definitions: Vec<&ToolDefinition>,
        authority: &Authority,
    ) -> Vec<Tool> {
        let listings = self
            .toolbox
            .listings(definitions.iter().map(|d| d.name.as_str()), authority);
        self.listed_tools.tools(&definitions, listings)
    }
}
