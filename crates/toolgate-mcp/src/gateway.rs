//! [`Gateway`]: the catalog, the upstreams, the built-in tools and the
//! sessions, with the operations an MCP server exposes: list the session's
//! tools, load and unload groups, call tools. Transport-free: the rmcp handler
//! ([`crate::handler`]) translates requests into these calls.

use std::sync::Arc;
use std::time::{Duration, SystemTime};

use rmcp::model::{CallToolResult, ContentBlock, JsonObject, Tool};
use rmcp::{Peer, RoleServer};
use serde_json::{Value, json};
use tokio::sync::broadcast;
use tokio_util::sync::CancellationToken;
use toolgate_agent::CallContext;
use toolgate_core::routing::{Router, RoutingConfig, Taxonomy};
use toolgate_core::{
    ActiveToolSet, Catalog, GROUP_NAME_PARAMETER, GroupId, LOAD_TOOL_GROUP_TOOL_NAME, Message,
    ToolDefinition, ToolName, ToolStatus, UNLOAD_TOOL_GROUP_TOOL_NAME, group_name_argument,
    tool_groups_section, unload_tool_group_definition,
};
use toolgate_store::{ConversationId, ConversationStore};

use crate::relay::Downstream;
use crate::session::Sessions;
use crate::toolbox::{StartReport, Toolbox, ToolboxError, ToolboxOptions, error_result};

mod passthrough;

/// Name of the meta-tool that calls any tool of a loaded group by name.
pub const CALL_TOOL_TOOL_NAME: &str = "call_tool";

/// Name of the meta-tool that ranks the groups for a request (the router).
pub const FIND_TOOL_GROUPS_TOOL_NAME: &str = "find_tool_groups";

/// Groups `find_tool_groups` lists at most.
const FOUND_GROUPS: usize = 5;

/// What the gateway serves.
#[derive(Clone, Debug)]
pub struct GatewayOptions {
    /// The tools.
    pub tools: ToolboxOptions,
    /// Sessions unused this long are forgotten, history included.
    pub session_idle_timeout: Duration,
    /// With routing settings, the `find_tool_groups` meta-tool ranks the
    /// groups for a request with the router.
    pub routing: Option<RoutingConfig>,
}

/// The gateway. Share it in an [`Arc`]; every method takes `&self`.
#[derive(Debug)]
pub struct Gateway<S> {
    toolbox: Arc<Toolbox>,
    sessions: Sessions<S>,
    taxonomy: Option<Taxonomy>,
}

/// One request's view of its session.
#[derive(Clone, Debug)]
pub enum SessionRef<'a> {
    /// A session: its loaded groups persist in the store.
    Stateful(&'a ConversationId),
    /// No session (MCP 2026-07-28 stateless requests): nothing persists, so
    /// `load_tool_group` answers with schemas only and every catalog tool may
    /// be called, by `call_tool` or by name.
    Stateless,
}

impl<S: ConversationStore + 'static> Gateway<S> {
    /// Builds the toolbox (meta-tools, built-ins, manifests, upstream groups)
    /// and starts eager upstreams. Upstream failures are reported, not fatal.
    pub async fn start(
        options: GatewayOptions,
        store: S,
    ) -> Result<(Arc<Self>, StartReport), ToolboxError> {
        let mut meta_tools = vec![unload_tool_group_definition(), call_tool_definition()];
        if options.routing.is_some() {
            meta_tools.push(find_tool_groups_definition());
        }
        let (toolbox, report) = Toolbox::start(options.tools, meta_tools).await?;
        let taxonomy = match &options.routing {
            Some(config) => Some(toolbox.with_catalog(|catalog| config.validate(catalog))?),
            None => None,
        };
        let changes = toolbox.subscribe_changes();
        let gateway = Arc::new(Self {
            toolbox,
            sessions: Sessions::new(store, options.session_idle_timeout),
            taxonomy,
        });
        tokio::spawn(watch_changes(Arc::downgrade(&gateway), changes));
        Ok((gateway, report))
    }

    /// The tools the gateway serves, shared with any agent loop in the process.
    pub fn toolbox(&self) -> &Arc<Toolbox> {
        &self.toolbox
    }

    /// The session store's sessions.
    pub fn sessions(&self) -> &Sessions<S> {
        &self.sessions
    }

    /// Runs `f` on the catalog.
    pub fn with_catalog<T>(&self, f: impl FnOnce(&Catalog) -> T) -> T {
        self.toolbox.with_catalog(f)
    }

    /// Stops every upstream.
    pub async fn shutdown(&self) {
        self.toolbox.shutdown().await;
    }

    /// `tools/list`: core tools, always-listed upstream tools, then the
    /// session's loaded groups in load order. Loaded groups whose upstream is
    /// not running yet (a restored session) are started first; one that
    /// fails is left out of the list rather than failing it.
    pub async fn list_tools(&self, session: SessionRef<'_>) -> Vec<Tool> {
        let active = match session {
            SessionRef::Stateful(id) => self.sessions.active_set(id, self).await,
            SessionRef::Stateless => ActiveToolSet::new(),
        };
        for group in active.loaded_groups() {
            if let Err(error) = self.toolbox.prepare(group.as_str()).await {
                tracing::warn!(%error, "listing a restored group");
            }
        }
        self.toolbox.prepare_core_upstreams().await;
        self.with_catalog(|catalog| {
            let mut definitions: Vec<&ToolDefinition> = catalog.core_tools().collect();
            for group in self.toolbox.core_groups() {
                definitions.extend(catalog.group_tools(group.as_str()));
            }
            for group in active.loaded_groups() {
                if !self.toolbox.core_groups().any(|core| core == group) {
                    definitions.extend(catalog.group_tools(group.as_str()));
                }
            }
            let mut tools = self.toolbox.to_mcp(definitions);
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
            tools
        })
    }

    /// `tools/call`. Every failure the model can act on is an error result,
    /// never a protocol error. `peer` receives `list_changed` after a load or
    /// an unload that changed the list.
    pub async fn call_tool(
        &self,
        session: SessionRef<'_>,
        name: &str,
        arguments: Option<JsonObject>,
        cancel: &CancellationToken,
        downstream: Downstream<'_>,
    ) -> CallToolResult {
        let arguments = Value::Object(arguments.unwrap_or_default());
        // list_changed means something only to a session.
        let session_peer = match session {
            SessionRef::Stateful(_) => downstream.peer,
            SessionRef::Stateless => None,
        };
        match name {
            LOAD_TOOL_GROUP_TOOL_NAME => self.load_group(session, &arguments, session_peer).await,
            UNLOAD_TOOL_GROUP_TOOL_NAME => {
                self.unload_group(session, &arguments, session_peer).await
            }
            CALL_TOOL_TOOL_NAME => {
                self.call_by_name(session, &arguments, cancel, downstream)
                    .await
            }
            FIND_TOOL_GROUPS_TOOL_NAME if self.taxonomy.is_some() => self.find_groups(&arguments),
            _ => {
                self.call_checked(session, name, arguments, cancel, downstream)
                    .await
            }
        }
    }

    async fn load_group(
        &self,
        session: SessionRef<'_>,
        arguments: &Value,
        peer: Option<&Peer<RoleServer>>,
    ) -> CallToolResult {
        let group = match group_name_argument(arguments) {
            Ok(group) => group.to_owned(),
            Err(error) => return error_result(error.to_string()),
        };
        if let Err(error) = self.toolbox.prepare(&group).await {
            return error_result(error.to_string());
        }
        let outcome = match session {
            SessionRef::Stateful(id) => {
                let session = self.sessions.get(id, self).await;
                let mut active = session.active.lock().await;
                let outcome = self.with_catalog(|catalog| {
                    active
                        .load(catalog, &group)
                        .map(|loaded| self.loaded_payload(&loaded))
                });
                if let Ok((_, _, true)) = &outcome {
                    self.sessions
                        .record(id, load_event(LOAD_TOOL_GROUP_TOOL_NAME, &group))
                        .await;
                }
                drop(active);
                outcome
            }
            SessionRef::Stateless => self.with_catalog(|catalog| {
                ActiveToolSet::new()
                    .load(catalog, &group)
                    .map(|loaded| self.loaded_payload(&loaded))
            }),
        };
        match outcome {
            Ok((text, structured, newly_loaded)) => {
                if newly_loaded {
                    notify_list_changed(peer).await;
                }
                let mut result = CallToolResult::success(vec![ContentBlock::text(text)]);
                result.structured_content = Some(structured);
                result
            }
            Err(error) => error_result(error.to_string()),
        }
    }

    async fn unload_group(
        &self,
        session: SessionRef<'_>,
        arguments: &Value,
        peer: Option<&Peer<RoleServer>>,
    ) -> CallToolResult {
        let group = match group_name_argument(arguments) {
            Ok(group) => group.to_owned(),
            Err(error) => return error_result(error.to_string()),
        };
        let SessionRef::Stateful(id) = session else {
            return error_result(format!(
                "Tool group '{group}' is not loaded: requests without a session load nothing."
            ));
        };
        let session = self.sessions.get(id, self).await;
        let mut active = session.active.lock().await;
        let outcome = self.with_catalog(|catalog| {
            active
                .unload(catalog, &group)
                .map(|unloaded| unloaded.to_string())
        });
        match outcome {
            Ok(text) => {
                self.sessions
                    .record(id, load_event(UNLOAD_TOOL_GROUP_TOOL_NAME, &group))
                    .await;
                drop(active);
                notify_list_changed(peer).await;
                CallToolResult::success(vec![ContentBlock::text(text)])
            }
            Err(error) => error_result(error.to_string()),
        }
    }

    /// `find_tool_groups`: the router's ranking of the groups for a request.
    fn find_groups(&self, arguments: &Value) -> CallToolResult {
        let Some(query) = arguments
            .get("query")
            .and_then(Value::as_str)
            .filter(|q| !q.trim().is_empty())
        else {
            return error_result("Required parameter 'query' is missing.");
        };
        let Some(taxonomy) = &self.taxonomy else {
            return error_result(format!(
                "Tool '{FIND_TOOL_GROUPS_TOOL_NAME}' is not available for this agent."
            ));
        };
        self.with_catalog(|catalog| {
            let decision = Router::lexical(catalog, taxonomy.clone()).route(query, &[]);
            let found: Vec<(&GroupId, f64, &str)> = decision
                .ranked
                .iter()
                .filter(|(_, probability)| *probability >= 0.01)
                .take(FOUND_GROUPS)
                .filter_map(|(id, probability)| {
                    let group = catalog.group(id.as_str())?;
                    Some((id, *probability, group.description.as_str()))
                })
                .collect();
            let mut text = if decision.intent.is_none() {
                "No group matches this request; any group may help: see load_tool_group's list.".to_owned()
            } else {
                format!(
                    "Groups for this request, most likely first ({} confidence {:.2}); load one with load_tool_group:",
                    decision.tier, decision.confidence
                )
            };
            for (id, probability, description) in &found {
                text.push_str(&format!("\n- {id} ({probability:.2}): {description}"));
            }
            let structured = json!({
                "intent": decision.intent,
                "confidence": decision.confidence,
                "tier": decision.tier.as_str(),
                "routed": decision.routed,
                "groups": found
                    .iter()
                    .map(|(id, probability, description)| json!({"group": id, "probability": probability, "description": description}))
                    .collect::<Vec<_>>(),
            });
            let mut result = CallToolResult::success(vec![ContentBlock::text(text)]);
            result.structured_content = Some(structured);
            result
        })
    }

    async fn call_by_name(
        &self,
        session: SessionRef<'_>,
        arguments: &Value,
        cancel: &CancellationToken,
        downstream: Downstream<'_>,
    ) -> CallToolResult {
        let Some(name) = arguments
            .get("name")
            .and_then(Value::as_str)
            .filter(|n| !n.trim().is_empty())
        else {
            return error_result("Required parameter 'name' is missing.");
        };
        if matches!(
            name,
            LOAD_TOOL_GROUP_TOOL_NAME
                | UNLOAD_TOOL_GROUP_TOOL_NAME
                | CALL_TOOL_TOOL_NAME
                | FIND_TOOL_GROUPS_TOOL_NAME
        ) {
            return error_result(format!("'{name}' is a meta-tool: call it directly."));
        }
        let tool_arguments = match arguments.get("arguments") {
            None | Some(Value::Null) => Value::Object(JsonObject::new()),
            Some(object @ Value::Object(_)) => object.clone(),
            Some(_) => return error_result("Parameter 'arguments' must be an object."),
        };
        self.call_checked(session, name, tool_arguments, cancel, downstream)
            .await
    }

    /// A call to a catalog tool: availability, then arguments, then the tool.
    async fn call_checked(
        &self,
        session: SessionRef<'_>,
        name: &str,
        arguments: Value,
        cancel: &CancellationToken,
        downstream: Downstream<'_>,
    ) -> CallToolResult {
        let active = match session {
            SessionRef::Stateful(id) => Some(self.sessions.active_set(id, self).await),
            SessionRef::Stateless => None,
        };
        if let Some(active) = &active {
            let available =
                self.with_catalog(|catalog| match active.check_available(catalog, name) {
                    Ok(_) => Ok(()),
                    Err(_) if self.is_core_group_tool(catalog, name) => Ok(()),
                    Err(not_available) => Err(not_available.to_string()),
                });
            if let Err(text) = available {
                return error_result(text);
            }
        }
        let context = CallContext {
            conversation: match session {
                SessionRef::Stateful(id) => Some(id.clone()),
                SessionRef::Stateless => None,
            },
            ..CallContext::default()
        };
        self.toolbox
            .call(name, arguments, cancel, downstream, &context)
            .await
    }

    /// Whether `name` belongs to an always-listed upstream.
    fn is_core_group_tool(&self, catalog: &Catalog, name: &str) -> bool {
        catalog
            .group_of(name)
            .is_some_and(|group| self.toolbox.core_groups().any(|core| core == group))
    }

    /// The load result: the contract text, the loaded tools as `tools/list`
    /// gives them (structured content), and whether the set changed.
    fn loaded_payload(&self, loaded: &toolgate_core::GroupLoaded<'_>) -> (String, Value, bool) {
        let tools: Vec<Value> = self
            .toolbox
            .to_mcp(loaded.tools.clone())
            .iter()
            .map(|tool| serde_json::to_value(tool).unwrap_or(Value::Null))
            .collect();
        let structured = json!({
            "group": loaded.group.id,
            "display_name": loaded.group.display_name,
            "tools": tools,
        });
        (loaded.to_string(), structured, loaded.newly_loaded)
    }
}

/// Tells the sessions that loaded a group when its tools change.
async fn watch_changes<S: ConversationStore + 'static>(
    gateway: std::sync::Weak<Gateway<S>>,
    mut changes: broadcast::Receiver<GroupId>,
) {
    loop {
        let group = match changes.recv().await {
            Ok(group) => group,
            Err(broadcast::error::RecvError::Lagged(_)) => continue,
            Err(broadcast::error::RecvError::Closed) => return,
        };
        let Some(gateway) = gateway.upgrade() else {
            return;
        };
        let core = gateway.toolbox.core_groups().any(|core| *core == group);
        gateway.sessions.notify_group_changed(&group, core).await;
    }
}

fn find_tool_groups_definition() -> ToolDefinition {
    let schema = json!({
        "type": "object",
        "properties": {
            "query": {"type": "string", "description": "What the user wants done, in their words"}
        },
        "required": ["query"]
    });
    ToolDefinition::new(
        ToolName::new(FIND_TOOL_GROUPS_TOOL_NAME).unwrap_or_else(|_| unreachable!("valid name")),
        "Rank the tool groups for a request, with the router's confidence. Use it when no group \
         in load_tool_group's list obviously fits; then load the best one.",
        schema,
    )
    .unwrap_or_else(|_| unreachable!("object schema"))
}

fn call_tool_definition() -> ToolDefinition {
    let schema = json!({
        "type": "object",
        "properties": {
            "name": {"type": "string", "description": "The tool's name, as load_tool_group listed it"},
            "arguments": {"type": "object", "description": "The tool's arguments"}
        },
        "required": ["name"]
    });
    ToolDefinition::new(
        ToolName::new(CALL_TOOL_TOOL_NAME).unwrap_or_else(|_| unreachable!("valid name")),
        "Call a tool of a loaded group by name. For clients that do not refresh their tool list \
         after load_tool_group: the load result lists each tool's full schema.",
        schema,
    )
    .unwrap_or_else(|_| unreachable!("object schema"))
}

fn load_event(tool: &str, group: &str) -> Message {
    let call_id = format!(
        "mcp-{}",
        SystemTime::now()
            .duration_since(SystemTime::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or_default()
    );
    Message::tool_call(
        call_id,
        tool,
        json!({ GROUP_NAME_PARAMETER: group }).to_string(),
        ToolStatus::Success,
    )
}

async fn notify_list_changed(peer: Option<&Peer<RoleServer>>) {
    if let Some(peer) = peer
        && let Err(error) = peer.notify_tool_list_changed().await
    {
        tracing::debug!(%error, "list_changed not delivered");
    }
}
