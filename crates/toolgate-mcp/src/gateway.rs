//! [`Gateway`]: the catalog, the upstreams, the built-in tools and the
//! sessions, with the operations an MCP server exposes: list the session's
//! tools, load and unload groups, call tools. Transport-free: the rmcp handler
//! ([`crate::handler`]) translates requests into these calls.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, PoisonError, RwLock};
use std::time::{Duration, SystemTime};

use rmcp::model::{CallToolResult, ContentBlock, JsonObject, Tool};
use rmcp::{Peer, RoleServer};
use serde_json::{Value, json};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;
use toolgate_agent::{BuiltinConfig, BuiltinError, BuiltinTools, ToolExecutor, ToolOutput};
use toolgate_core::{
    ActiveToolSet, Catalog, CatalogError, GROUP_NAME_PARAMETER, GroupId, ImportError,
    LOAD_TOOL_GROUP_TOOL_NAME, ManifestError, Message, Origin, ToolDefinition, ToolGroup, ToolName,
    ToolStatus, UNLOAD_TOOL_GROUP_TOOL_NAME, group_name_argument, import_jsonl, load_manifest_dirs,
    tool_groups_section, unload_tool_group_definition,
};
use toolgate_store::{ConversationId, ConversationStore};

use crate::config::{Exposure, Startup, UpstreamConfig};
use crate::convert::{definition_from_upstream, tool_to_mcp};
use crate::relay::{Downstream, RelayEvent};
use crate::session::Sessions;
use crate::upstream::{Upstream, UpstreamError, UpstreamEvent, UpstreamListing};
use crate::validate::Validators;

mod passthrough;

/// Name of the meta-tool that calls any tool of a loaded group by name.
pub const CALL_TOOL_TOOL_NAME: &str = "call_tool";

/// What the gateway serves.
#[derive(Clone, Debug)]
pub struct GatewayOptions {
    /// Upstream MCP servers, in priority order (earlier keeps a contested name).
    pub upstreams: Vec<UpstreamConfig>,
    /// Directories of JSON tool manifests.
    pub manifest_dirs: Vec<PathBuf>,
    /// `tools.jsonl` catalogs (with a `groups.jsonl` beside each). Like
    /// manifest tools, their tools are listed and loaded but have nothing to
    /// run them: for inspecting and measuring a large catalog.
    pub jsonl_catalogs: Vec<PathBuf>,
    /// The built-in `time` and `files` groups; `None` leaves them out.
    pub builtins: Option<BuiltinConfig>,
    /// Sessions unused this long are forgotten, history included.
    pub session_idle_timeout: Duration,
}

/// Why the gateway could not start.
#[derive(Debug, thiserror::Error)]
pub enum GatewayError {
    /// The built-in tools could not be set up.
    #[error(transparent)]
    Builtin(#[from] BuiltinError),
    /// Two sources claim one group or tool name.
    #[error(transparent)]
    Catalog(#[from] CatalogError),
}

/// What start-up found, for the operator.
#[derive(Debug, Default)]
pub struct StartReport {
    /// Built-in groups registered.
    pub builtin_groups: Vec<GroupId>,
    /// Manifest files loaded.
    pub manifest_files: usize,
    /// Manifest files skipped, with their reasons.
    pub manifest_errors: Vec<ManifestError>,
    /// Tools imported from `tools.jsonl` catalogs.
    pub imported_tools: usize,
    /// Catalog files or lines skipped, with their reasons.
    pub import_errors: Vec<ImportError>,
    /// Upstreams and their state after start-up: `Ok(tool count)` for those
    /// listed (eager), `Err` for eager ones that failed; lazy ones are absent.
    pub upstreams: Vec<(GroupId, Result<usize, UpstreamError>)>,
    /// Built-in groups left out because a configured upstream has their name.
    pub shadowed_builtins: Vec<GroupId>,
}

/// How a catalog tool is executed.
#[derive(Clone, Debug)]
enum Route {
    /// A built-in tool.
    Builtin,
    /// An upstream's tool, under the name the upstream gave it, with its
    /// listing as the upstream sent it (output schema, title, icons and
    /// `_meta` kept) under the exposed name.
    Upstream {
        upstream: usize,
        tool: String,
        listed: Arc<Tool>,
    },
    /// A manifest tool: a definition with nothing behind it in the gateway.
    Unbound,
}

/// One upstream and what the gateway knows of its tools.
#[derive(Debug)]
struct UpstreamSlot {
    upstream: Upstream,
    /// Serializes listings, so concurrent loads start the server once.
    listing: tokio::sync::Mutex<ListingState>,
}

#[derive(Debug, Default)]
struct ListingState {
    /// The connection generation the catalog reflects, if listed.
    generation: Option<u64>,
    /// The server announced a change since.
    stale: bool,
    /// Upstream name -> exposed name, kept for the process's life so a name,
    /// once given, never changes.
    exposed: HashMap<String, ToolName>,
}

/// What listing an upstream did to the catalog.
#[derive(Clone, Copy, Debug)]
struct Listed {
    /// Tools it exposes.
    tools: usize,
    /// Whether they differ from what was listed before.
    changed: bool,
}

/// The gateway. Share it in an [`Arc`]; every method takes `&self`.
#[derive(Debug)]
pub struct Gateway<S> {
    catalog: RwLock<Catalog>,
    routes: RwLock<HashMap<ToolName, Route>>,
    upstreams: Vec<UpstreamSlot>,
    builtins: Option<BuiltinTools>,
    sessions: Sessions<S>,
    validators: Validators,
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
    /// Builds the catalog (meta-tools, built-ins, manifests, upstream groups)
    /// and starts eager upstreams. Upstream failures are reported, not fatal.
    pub async fn start(
        options: GatewayOptions,
        store: S,
    ) -> Result<(Arc<Self>, StartReport), GatewayError> {
        let mut catalog = Catalog::new();
        let mut routes = HashMap::new();
        let mut report = StartReport::default();
        for definition in [unload_tool_group_definition(), call_tool_definition()] {
            catalog.register_tool(definition, None, Origin::MetaTool)?;
        }

        let (events, event_receiver) = mpsc::unbounded_channel();
        let upstream_names: Vec<&str> = options.upstreams.iter().map(|u| u.name.as_str()).collect();
        let builtins = match &options.builtins {
            Some(config) => {
                let builtins = BuiltinTools::new(config)?;
                let registered =
                    builtins.register(&mut catalog, |id| upstream_names.contains(&id))?;
                for id in BuiltinTools::group_ids() {
                    if upstream_names.contains(&id) {
                        report.shadowed_builtins.push(
                            GroupId::new(id)
                                .unwrap_or_else(|_| unreachable!("built-in group ids are valid")),
                        );
                    }
                }
                for group in &registered {
                    for tool in catalog.group_tools(group.as_str()) {
                        routes.insert(tool.name.clone(), Route::Builtin);
                    }
                }
                report.builtin_groups = registered;
                Some(builtins)
            }
            None => None,
        };

        let manifests = load_manifest_dirs(&mut catalog, &options.manifest_dirs);
        report.manifest_files = manifests.loaded.len();
        report.manifest_errors = manifests.errors;
        for path in &options.jsonl_catalogs {
            match import_jsonl(&mut catalog, path) {
                Ok(imported) => {
                    report.imported_tools += imported.tools;
                    report.import_errors.extend(imported.errors);
                }
                Err(error) => report.import_errors.push(error),
            }
        }
        for tool in catalog.tools() {
            if matches!(tool.origin, Origin::Manifest { .. } | Origin::Import { .. }) {
                routes.insert(tool.definition.name.clone(), Route::Unbound);
            }
        }

        let mut upstreams = Vec::new();
        for config in &options.upstreams {
            let description = config
                .description
                .clone()
                .unwrap_or_else(|| default_description(config.name.as_str(), None));
            let group = ToolGroup::new(
                config.name.clone(),
                toolgate_core::title_case(config.name.as_str()),
                description,
            );
            let origin = Origin::Upstream {
                server: config.name.to_string(),
            };
            catalog.register_deferred_group(group, origin)?;
            upstreams.push(UpstreamSlot {
                upstream: Upstream::new(config.clone(), events.clone()),
                listing: tokio::sync::Mutex::new(ListingState::default()),
            });
        }

        let gateway = Arc::new(Self {
            catalog: RwLock::new(catalog),
            routes: RwLock::new(routes),
            upstreams,
            builtins,
            sessions: Sessions::new(store, options.session_idle_timeout),
            validators: Validators::default(),
        });
        for (index, slot) in gateway.upstreams.iter().enumerate() {
            if slot.upstream.config().startup == Startup::Eager {
                let listed = gateway
                    .ensure_listed(index)
                    .await
                    .map(|listed| listed.tools);
                report
                    .upstreams
                    .push((slot.upstream.name().clone(), listed));
            }
        }
        tokio::spawn(watch_upstreams(Arc::downgrade(&gateway), event_receiver));
        Ok((gateway, report))
    }

    /// The session store's sessions.
    pub fn sessions(&self) -> &Sessions<S> {
        &self.sessions
    }

    /// Runs `f` on the catalog.
    pub fn with_catalog<T>(&self, f: impl FnOnce(&Catalog) -> T) -> T {
        f(&self.catalog.read().unwrap_or_else(PoisonError::into_inner))
    }

    /// Stops every upstream.
    pub async fn shutdown(&self) {
        for slot in &self.upstreams {
            slot.upstream.shutdown().await;
        }
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
            if let Some(index) = self.upstream_index(group.as_str())
                && let Err(error) = self.ensure_listed(index).await
            {
                tracing::warn!(%error, "listing a restored group");
            }
        }
        for index in self.core_upstreams() {
            let _ = self.ensure_listed(index).await;
        }
        self.with_catalog(|catalog| {
            let mut definitions: Vec<&ToolDefinition> = catalog.core_tools().collect();
            for index in self.core_upstreams() {
                definitions
                    .extend(catalog.group_tools(self.upstreams[index].upstream.name().as_str()));
            }
            for group in active.loaded_groups() {
                if !self.is_core_group(group.as_str()) {
                    definitions.extend(catalog.group_tools(group.as_str()));
                }
            }
            let mut tools = self.to_mcp(definitions);
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

    /// Definitions as MCP lists them: an upstream's tools exactly as it
    /// listed them (but for the exposed name), the others from the catalog.
    fn to_mcp(&self, definitions: Vec<&ToolDefinition>) -> Vec<Tool> {
        let routes = self.routes.read().unwrap_or_else(PoisonError::into_inner);
        definitions
            .into_iter()
            .map(|definition| match routes.get(&definition.name) {
                Some(Route::Upstream { listed, .. }) => listed.as_ref().clone(),
                Some(Route::Builtin | Route::Unbound) | None => tool_to_mcp(definition),
            })
            .collect()
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
        if let Some(index) = self.upstream_index(&group)
            && let Err(error) = self.ensure_listed(index).await
        {
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
            LOAD_TOOL_GROUP_TOOL_NAME | UNLOAD_TOOL_GROUP_TOOL_NAME | CALL_TOOL_TOOL_NAME
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
        let checked = self.with_catalog(|catalog| {
            let definition = match &active {
                Some(active) => match active.check_available(catalog, name) {
                    Ok(definition) => definition,
                    Err(not_available) => match catalog.tool(name) {
                        Some(tool)
                            if tool.group.is_some_and(|g| self.is_core_group(g.as_str())) =>
                        {
                            tool.definition
                        }
                        _ => return Err(not_available.to_string()),
                    },
                },
                None => match catalog.tool(name) {
                    Some(tool) => tool.definition,
                    None => return Err(format!("Tool '{name}' is not available for this agent.")),
                },
            };
            self.validators
                .check(name, &definition.input_schema, &arguments)
        });
        if let Err(text) = checked {
            return error_result(text);
        }
        let route = self
            .routes
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .get(name)
            .cloned();
        match route {
            Some(Route::Builtin) => match &self.builtins {
                Some(builtins) => output_result(builtins.call(name, arguments).await),
                None => error_result(format!("Tool '{name}' is not available for this agent.")),
            },
            Some(Route::Upstream { upstream, tool, .. }) => {
                let Value::Object(arguments) = arguments else {
                    return error_result("Tool arguments must be an object.");
                };
                let (relay, events) = mpsc::channel(32);
                let call = self.upstreams[upstream]
                    .upstream
                    .call(&tool, arguments, cancel, relay);
                match relayed(call, events, downstream).await {
                    Ok(result) => result,
                    Err(error) => error_result(error.to_string()),
                }
            }
            Some(Route::Unbound) => error_result(format!(
                "Tool '{name}' is defined by a manifest or catalog file but has no implementation in this gateway."
            )),
            None => error_result(format!("Tool '{name}' is not available for this agent.")),
        }
    }

    /// The load result: the contract text, the loaded tools as `tools/list`
    /// gives them (structured content), and whether the set changed.
    fn loaded_payload(&self, loaded: &toolgate_core::GroupLoaded<'_>) -> (String, Value, bool) {
        let tools: Vec<Value> = self
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

    /// Starts the upstream if needed and makes the catalog reflect its current
    /// tools. Returns how many tools it exposes.
    async fn ensure_listed(&self, index: usize) -> Result<Listed, UpstreamError> {
        let slot = &self.upstreams[index];
        let mut state = slot.listing.lock().await;
        let running = slot.upstream.running_generation().await;
        if !state.stale && running.is_some() && running == state.generation {
            let tools = self.with_catalog(|c| c.group_tools(slot.upstream.name().as_str()).count());
            return Ok(Listed {
                tools,
                changed: false,
            });
        }
        if state.generation.is_none() {
            self.list_earlier_upstreams(index).await;
        }
        let listing = slot.upstream.list().await?;
        state.stale = false;
        state.generation = Some(listing.generation);
        Ok(self.apply_listing(index, &listing, &mut state.exposed))
    }

    /// Before an upstream's first listing, lists every upstream configured
    /// before it that was never listed, so a contested name goes to the
    /// earlier one whatever order groups are loaded in: names depend on the
    /// configuration, not on which session loaded what first. Upstreams
    /// started only for this are stopped again (their names are kept).
    async fn list_earlier_upstreams(&self, index: usize) {
        for earlier in 0..index {
            let slot = &self.upstreams[earlier];
            let mut state = slot.listing.lock().await;
            if state.generation.is_some() {
                continue;
            }
            let was_running = slot.upstream.running_generation().await.is_some();
            match slot.upstream.list().await {
                Ok(listing) => {
                    state.generation = Some(listing.generation);
                    self.apply_listing(earlier, &listing, &mut state.exposed);
                }
                Err(error) => {
                    tracing::warn!(%error, "listing an earlier upstream for its tool names");
                }
            }
            if !was_running {
                slot.upstream.stop().await;
            }
        }
    }

    /// Puts an upstream's listing into the catalog and the routes.
    fn apply_listing(
        &self,
        index: usize,
        listing: &UpstreamListing,
        exposed: &mut HashMap<String, ToolName>,
    ) -> Listed {
        let slot = &self.upstreams[index];
        let config = slot.upstream.config();
        let server = config.name.as_str();
        let origin = Origin::Upstream {
            server: server.to_owned(),
        };
        let mut catalog = self.catalog.write().unwrap_or_else(PoisonError::into_inner);
        let mut tools = Vec::new();
        let mut routes = Vec::new();
        for tool in &listing.tools {
            let name = match exposed.get(tool.name.as_ref()) {
                Some(name) => name.clone(),
                None => match exposed_name(&catalog, server, &tool.name) {
                    Some(name) => name,
                    None => {
                        tracing::warn!(upstream = server, tool = %tool.name, "tool name cannot be exposed; skipped");
                        continue;
                    }
                },
            };
            match definition_from_upstream(name.clone(), tool) {
                Ok(definition) => {
                    exposed.insert(tool.name.to_string(), name.clone());
                    let mut listed = tool.clone();
                    listed.name = name.as_str().to_owned().into();
                    routes.push((name, tool.name.to_string(), Arc::new(listed)));
                    tools.push((definition, origin.clone()));
                }
                Err(error) => {
                    tracing::warn!(upstream = server, tool = %tool.name, %error, "tool skipped");
                }
            }
        }
        let count = tools.len();
        let before: Vec<Arc<Tool>> = {
            let table = self.routes.read().unwrap_or_else(PoisonError::into_inner);
            catalog
                .group_tools(server)
                .filter_map(|definition| match table.get(&definition.name) {
                    Some(Route::Upstream { listed, .. }) => Some(Arc::clone(listed)),
                    Some(Route::Builtin | Route::Unbound) | None => None,
                })
                .collect()
        };
        let changed = before.len() != routes.len()
            || before
                .iter()
                .zip(&routes)
                .any(|(old, (_, _, new))| old != new);
        if changed {
            self.validators.forget_all();
        }
        if let Err(error) = catalog.replace_group_tools(server, tools) {
            tracing::warn!(upstream = server, %error, "listing not applied");
            return Listed {
                tools: 0,
                changed: false,
            };
        }
        if config.description.is_none() {
            let description = default_description(
                server,
                listing
                    .instructions
                    .as_deref()
                    .or(listing.server_name.as_deref()),
            );
            let _ = catalog.set_group_description(server, description);
        }
        drop(catalog);
        let mut table = self.routes.write().unwrap_or_else(PoisonError::into_inner);
        table.retain(
            |_, route| !matches!(route, Route::Upstream { upstream, .. } if *upstream == index),
        );
        for (name, tool, listed) in routes {
            table.insert(
                name,
                Route::Upstream {
                    upstream: index,
                    tool,
                    listed,
                },
            );
        }
        Listed {
            tools: count,
            changed,
        }
    }

    /// An upstream said its tools changed: relist it now, and tell the
    /// sessions that have it loaded.
    async fn refresh_upstream(&self, group: &GroupId) {
        let Some(index) = self.upstream_index(group.as_str()) else {
            return;
        };
        self.upstreams[index].listing.lock().await.stale = true;
        match self.ensure_listed(index).await {
            // Servers announce changes that change nothing (some at every
            // start); only a real change reaches the sessions.
            Ok(Listed { changed: true, .. }) => {
                self.sessions
                    .notify_group_changed(group, self.is_core_group(group.as_str()))
                    .await
            }
            Ok(Listed { changed: false, .. }) => {}
            Err(error) => tracing::warn!(%error, "relisting after list_changed"),
        }
    }

    fn upstream_index(&self, group: &str) -> Option<usize> {
        self.upstreams
            .iter()
            .position(|slot| slot.upstream.name().as_str() == group)
    }

    fn core_upstreams(&self) -> impl Iterator<Item = usize> + '_ {
        self.upstreams
            .iter()
            .enumerate()
            .filter(|(_, slot)| slot.upstream.config().exposure == Exposure::Core)
            .map(|(index, _)| index)
    }

    fn is_core_group(&self, group: &str) -> bool {
        self.upstream_index(group)
            .is_some_and(|index| self.upstreams[index].upstream.config().exposure == Exposure::Core)
    }
}

/// Drives an upstream call, passing on what the upstream sends meanwhile.
/// Runs in the downstream request's task, so rmcp keeps it on that request.
async fn relayed<T>(
    call: impl std::future::Future<Output = T>,
    mut events: mpsc::Receiver<RelayEvent>,
    downstream: Downstream<'_>,
) -> T {
    tokio::pin!(call);
    let result = loop {
        tokio::select! {
            biased;
            Some(event) = events.recv() => downstream.relay(event).await,
            result = &mut call => break result,
        }
    };
    // Messages sent just before the result still go first.
    while let Ok(event) = events.try_recv() {
        downstream.relay(event).await;
    }
    result
}

async fn watch_upstreams<S: ConversationStore + 'static>(
    gateway: std::sync::Weak<Gateway<S>>,
    mut events: mpsc::UnboundedReceiver<UpstreamEvent>,
) {
    while let Some(event) = events.recv().await {
        let Some(gateway) = gateway.upgrade() else {
            return;
        };
        match event {
            UpstreamEvent::ToolsChanged(group) => gateway.refresh_upstream(&group).await,
        }
    }
}

/// The upstream's own name when free, else `server__tool`; `None` when neither
/// is a valid MCP tool name or both are taken.
fn exposed_name(catalog: &Catalog, server: &str, tool: &str) -> Option<ToolName> {
    let free = |name: &ToolName| {
        catalog.tool_state(name.as_str()).is_none()
            || catalog
                .group_of(name.as_str())
                .is_some_and(|g| g.as_str() == server)
    };
    if let Ok(plain) = ToolName::new(tool)
        && free(&plain)
    {
        return Some(plain);
    }
    ToolName::new(format!("{server}__{tool}")).ok().filter(free)
}

fn default_description(server: &str, said: Option<&str>) -> String {
    match said.map(str::trim).filter(|s| !s.is_empty()) {
        Some(text) => text.to_owned(),
        None => format!("Tools of the MCP server '{server}'"),
    }
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

fn error_result(text: impl Into<String>) -> CallToolResult {
    CallToolResult::error(vec![ContentBlock::text(text.into())])
}

fn output_result(output: ToolOutput) -> CallToolResult {
    let mut result = if output.is_error {
        CallToolResult::error(vec![ContentBlock::text(output.text)])
    } else {
        CallToolResult::success(vec![ContentBlock::text(output.text)])
    };
    result.structured_content = output.structured;
    result
}
