//! [`Toolbox`]: the catalog and everything that runs its tools: built-in
//! tools, manifest tools and the upstream MCP servers. The gateway serves it
//! to MCP clients; the agent loop uses the same toolbox through
//! [`ToolHost`], so a tool runs the same way whoever asked for it.

use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;
use std::sync::{Arc, PoisonError, RwLock, RwLockReadGuard, Weak};

use rmcp::model::{CallToolResult, ContentBlock, Tool};
use serde_json::{Value, json};
use tokio::sync::{broadcast, mpsc};
use tokio_util::sync::CancellationToken;
use toolgate_agent::{
    BuiltinConfig, BuiltinError, BuiltinTools, CallContext, PrepareFuture, ToolExecutor,
    ToolFuture, ToolHost, ToolOutput,
};
use toolgate_core::{
    ActionPolicy, Alias, Catalog, CatalogError, GroupId, ImportError, ManifestError, Origin,
    PolymorphicTool, ToolDefinition, ToolGroup, ToolName, import_jsonl, load_manifest_dirs,
    typed_result,
};

use crate::config::{Exposure, GroupExposure, GroupSettings, Startup, UpstreamConfig};
use crate::convert::{definition_from_upstream, tool_to_mcp};
use crate::relay::{Downstream, RelayEvent};
use crate::upstream::{Upstream, UpstreamError, UpstreamEvent, UpstreamListing};
use crate::validate::Validators;

/// The tools to offer.
#[derive(Clone, Debug, Default)]
pub struct ToolboxOptions {
    /// Upstream MCP servers, in priority order (earlier keeps a contested name).
    pub upstreams: Vec<UpstreamConfig>,
    /// Directories of JSON tool manifests.
    pub manifest_dirs: Vec<PathBuf>,
    /// `tools.jsonl` catalogs (with a `groups.jsonl` beside each). Like
    /// manifest tools, their tools are listed and loaded but have nothing to
    /// run them: for inspecting and measuring a large catalog.
    pub jsonl_catalogs: Vec<PathBuf>,
    /// The built-in groups (`time`, `files`, `web`, and `prompt_manager`
    /// with an agent store); `None` leaves them out.
    pub builtins: Option<BuiltinConfig>,
    /// Per-group settings, by group id: a group exposed as one polymorphic
    /// tool, and its action policy.
    pub groups: BTreeMap<String, GroupSettings>,
    /// Old tool names and what they call now.
    pub aliases: Vec<(String, Alias)>,
}

/// Why the toolbox could not be built.
#[derive(Debug, thiserror::Error)]
pub enum ToolboxError {
    /// The built-in tools could not be set up.
    #[error(transparent)]
    Builtin(#[from] BuiltinError),
    /// Two sources claim one group or tool name.
    #[error(transparent)]
    Catalog(#[from] CatalogError),
    /// The routing configuration names a group the catalog lacks.
    #[error(transparent)]
    Routing(#[from] toolgate_core::routing::RoutingError),
    /// A group configured as one polymorphic tool cannot be one.
    #[error("group `{group}` cannot be exposed as one polymorphic tool: {reason}")]
    Polymorphic {
        /// The group.
        group: String,
        /// Why not.
        reason: String,
    },
    /// An alias cannot be registered.
    #[error("alias `{alias}`: {reason}")]
    Alias {
        /// The old name.
        alias: String,
        /// Why not.
        reason: String,
    },
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
    /// A group's tools behind one polymorphic tool.
    Polymorphic(Arc<Consolidated>),
}

/// A group consolidated into one polymorphic tool: the tool, and for each of
/// its actions the member tool that runs it.
#[derive(Debug)]
struct Consolidated {
    tool: PolymorphicTool,
    members: Vec<Member>,
}

/// The tool behind one action.
#[derive(Debug)]
struct Member {
    definition: ToolDefinition,
    route: Route,
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

/// The catalog and what runs its tools. Share it in an [`Arc`]; every method
/// takes `&self`.
#[derive(Debug)]
pub struct Toolbox {
    catalog: RwLock<Catalog>,
    routes: RwLock<HashMap<ToolName, Route>>,
    upstreams: Vec<UpstreamSlot>,
    builtins: Option<BuiltinTools>,
    validators: Validators,
    /// Groups offered as one polymorphic tool, with their action policies.
    polymorphic: BTreeMap<String, (ActionPolicy, Consolidation)>,
    /// Calls per polymorphic tool and action.
    action_calls: std::sync::Mutex<BTreeMap<(String, String), u64>>,
    /// Groups whose tools really changed after an upstream's `list_changed`.
    changes: broadcast::Sender<GroupId>,
}

impl Toolbox {
    /// Builds the catalog (built-ins, manifests, catalogs, one deferred group
    /// per upstream) and starts eager upstreams. Upstream failures are
    /// reported, not fatal. `meta_tools` are registered first, as core tools.
    pub async fn start(
        options: ToolboxOptions,
        meta_tools: Vec<ToolDefinition>,
    ) -> Result<(Arc<Self>, StartReport), ToolboxError> {
        let mut catalog = Catalog::new();
        let mut routes = HashMap::new();
        let mut report = StartReport::default();
        for definition in meta_tools {
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

        let polymorphic = polymorphic_groups(&options, &catalog);
        for (group, (policy, scope)) in &polymorphic {
            if catalog.group_listing(group) != Some(toolgate_core::GroupListing::Listed) {
                continue;
            }
            if let Err(reason) = consolidate(&mut catalog, &mut routes, group, policy, *scope) {
                if *scope == Consolidation::Named {
                    return Err(ToolboxError::Polymorphic {
                        group: group.clone(),
                        reason,
                    });
                }
                tracing::warn!(%group, %reason, "group left as separate tools");
            }
        }
        for (old, alias) in &options.aliases {
            catalog
                .register_alias(old, alias.clone())
                .map_err(|error| ToolboxError::Alias {
                    alias: old.clone(),
                    reason: error.to_string(),
                })?;
        }

        let toolbox = Arc::new(Self {
            catalog: RwLock::new(catalog),
            routes: RwLock::new(routes),
            upstreams,
            builtins,
            validators: Validators::default(),
            polymorphic,
            action_calls: std::sync::Mutex::new(BTreeMap::new()),
            changes: broadcast::channel(64).0,
        });
        for (index, slot) in toolbox.upstreams.iter().enumerate() {
            if slot.upstream.config().startup == Startup::Eager {
                let listed = toolbox
                    .ensure_listed(index)
                    .await
                    .map(|listed| listed.tools);
                report
                    .upstreams
                    .push((slot.upstream.name().clone(), listed));
            }
        }
        tokio::spawn(watch_upstreams(Arc::downgrade(&toolbox), event_receiver));
        Ok((toolbox, report))
    }

    /// Runs `f` on the catalog.
    pub fn with_catalog<T>(&self, f: impl FnOnce(&Catalog) -> T) -> T {
        f(&self.catalog.read().unwrap_or_else(PoisonError::into_inner))
    }

    /// Groups whose tools changed after an upstream announced it, as they
    /// change: the gateway tells the sessions that loaded them.
    pub fn subscribe_changes(&self) -> broadcast::Receiver<GroupId> {
        self.changes.subscribe()
    }

    /// Stops every upstream.
    pub async fn shutdown(&self) {
        for slot in &self.upstreams {
            slot.upstream.shutdown().await;
        }
    }

    /// Makes `group`'s tools known: starts and lists its upstream if it has
    /// one. Other groups are always ready.
    pub async fn prepare(&self, group: &str) -> Result<(), UpstreamError> {
        match self.upstream_index(group) {
            Some(index) => self.ensure_listed(index).await.map(|_| ()),
            None => Ok(()),
        }
    }

    /// Makes every always-listed upstream's tools known.
    pub(crate) async fn prepare_core_upstreams(&self) {
        for index in self.core_upstreams() {
            let _ = self.ensure_listed(index).await;
        }
    }

    /// The upstreams, in configuration order.
    pub(crate) fn upstreams(&self) -> impl Iterator<Item = &Upstream> + '_ {
        self.upstreams.iter().map(|slot| &slot.upstream)
    }

    /// Names of the always-listed upstreams' groups.
    pub(crate) fn core_groups(&self) -> impl Iterator<Item = &GroupId> + '_ {
        self.core_upstreams()
            .map(|index| self.upstreams[index].upstream.name())
    }

    /// Definitions as MCP lists them: an upstream's tools exactly as it
    /// listed them (but for the exposed name), the others from the catalog.
    pub(crate) fn to_mcp(&self, definitions: Vec<&ToolDefinition>) -> Vec<Tool> {
        let routes = self.routes.read().unwrap_or_else(PoisonError::into_inner);
        definitions
            .into_iter()
            .map(|definition| match routes.get(&definition.name) {
                Some(Route::Upstream { listed, .. }) => listed.as_ref().clone(),
                Some(Route::Builtin | Route::Unbound | Route::Polymorphic(_)) | None => {
                    tool_to_mcp(definition)
                }
            })
            .collect()
    }

    /// Offers only what `names` enables (an agent's tool list): a group id
    /// keeps its group, a tool name (or an alias of one) keeps that tool;
    /// every other grouped tool is disabled. Core tools stay. Upstreams not
    /// named by their group id should be left out of the options instead:
    /// their tools are not known before they start. Returns the names that
    /// matched nothing.
    pub fn restrict_to(&self, names: &[String]) -> Vec<String> {
        let mut catalog = self.catalog.write().unwrap_or_else(PoisonError::into_inner);
        let resolve = |name: &str| -> String {
            catalog
                .alias(name)
                .map_or_else(|| name.to_owned(), |alias| alias.tool.to_string())
        };
        let wanted: Vec<String> = names.iter().map(|name| resolve(name)).collect();
        let unknown = names
            .iter()
            .zip(&wanted)
            .filter(|(_, name)| catalog.group(name).is_none() && catalog.tool_state(name).is_none())
            .map(|(given, _)| given.clone())
            .collect();
        let disabled: Vec<ToolName> = catalog
            .tools()
            .filter_map(|tool| {
                let group = tool.group?;
                let kept = wanted
                    .iter()
                    .any(|name| name == group.as_str() || name == tool.definition.name.as_str());
                (!kept).then(|| tool.definition.name.clone())
            })
            .collect();
        for name in disabled {
            let _ = catalog.set_tool_state(name.as_str(), toolgate_core::ToolState::Disabled);
        }
        unknown
    }

    /// Calls so far of each polymorphic tool's actions: `(tool, action,
    /// calls)`, by tool then action.
    pub fn action_calls(&self) -> Vec<(String, String, u64)> {
        self.action_calls
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .iter()
            .map(|((tool, action), calls)| (tool.clone(), action.clone(), *calls))
            .collect()
    }

    /// Runs catalog tool `name` for `context`'s caller: an alias becomes the
    /// call it stands for; a polymorphic tool resolves its action (a mistake
    /// answers the structured error) and runs the member tool behind it;
    /// arguments are checked against the input schema of the tool that runs;
    /// then the built-in, or the upstream with whatever it sends meanwhile
    /// passed to `downstream`. Availability is the caller's business.
    pub async fn call(
        &self,
        name: &str,
        arguments: Value,
        cancel: &CancellationToken,
        downstream: Downstream<'_>,
        context: &CallContext,
    ) -> CallToolResult {
        let alias = self.with_catalog(|catalog| catalog.alias(name).cloned());
        let (name, arguments) = match alias {
            Some(alias) => (alias.tool.to_string(), alias.arguments(arguments)),
            None => (name.to_owned(), arguments),
        };
        let route = self
            .routes
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .get(name.as_str())
            .cloned();
        if let Some(Route::Polymorphic(consolidated)) = route {
            return self
                .call_action(&consolidated, &arguments, cancel, downstream, context)
                .await;
        }
        let checked = self.with_catalog(|catalog| match catalog.tool(&name) {
            Some(tool) => self
                .validators
                .check(&name, &tool.definition.input_schema, &arguments),
            None => Err(not_available(&name)),
        });
        if let Err(text) = checked {
            return error_result(text);
        }
        self.dispatch(
            route.as_ref(),
            &name,
            arguments,
            cancel,
            downstream,
            context,
        )
        .await
    }

    /// Runs one action of a consolidated group: resolved, counted, checked
    /// against the member's schema, run, and answered with a `type` field.
    async fn call_action(
        &self,
        consolidated: &Consolidated,
        arguments: &Value,
        cancel: &CancellationToken,
        downstream: Downstream<'_>,
        context: &CallContext,
    ) -> CallToolResult {
        let tool = consolidated.tool.name().as_str();
        let call = match consolidated.tool.resolve(arguments) {
            Ok(call) => call,
            Err(error) => return typed_error(error.to_json()),
        };
        let action = call.action.name.clone();
        *self
            .action_calls
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .entry((tool.to_owned(), action.clone()))
            .or_default() += 1;
        let member = &consolidated.members[call.index];
        let member_name = member.definition.name.as_str();
        if let Err(text) = self.validators.check(
            member_name,
            &member.definition.input_schema,
            &call.arguments,
        ) {
            return typed_error(json!({"type": "error", "action": action, "error": text}));
        }
        let result = self
            .dispatch(
                Some(&member.route),
                member_name,
                call.arguments,
                cancel,
                downstream,
                context,
            )
            .await;
        with_type(&action, result)
    }

    /// Runs a catalog tool (not a polymorphic one) by its route.
    async fn dispatch(
        &self,
        route: Option<&Route>,
        name: &str,
        arguments: Value,
        cancel: &CancellationToken,
        downstream: Downstream<'_>,
        context: &CallContext,
    ) -> CallToolResult {
        match route {
            Some(Route::Builtin) => match &self.builtins {
                Some(builtins) => output_result(builtins.call(name, arguments, context).await),
                None => error_result(not_available(name)),
            },
            Some(Route::Upstream { upstream, tool, .. }) => {
                let Value::Object(arguments) = arguments else {
                    return error_result("Tool arguments must be an object.");
                };
                let (relay, events) = mpsc::channel(32);
                let call = self.upstreams[*upstream]
                    .upstream
                    .call(tool, arguments, cancel, relay);
                match relayed(call, events, downstream).await {
                    Ok(result) => result,
                    Err(error) => error_result(error.to_string()),
                }
            }
            Some(Route::Unbound) => error_result(format!(
                "Tool '{name}' is defined by a manifest or catalog file but has no implementation in this gateway."
            )),
            Some(Route::Polymorphic(_)) | None => error_result(not_available(name)),
        }
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
                .filter_map(|definition| table.get(&definition.name))
                .flat_map(upstream_listings)
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
        table.retain(|_, route| {
            !matches!(route, Route::Polymorphic(c) if c.members.iter().any(
                |m| matches!(m.route, Route::Upstream { upstream, .. } if upstream == index)))
        });
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
        drop(table);
        if let Some((policy, scope)) = self.polymorphic.get(server) {
            let mut catalog = self.catalog.write().unwrap_or_else(PoisonError::into_inner);
            let mut table = self.routes.write().unwrap_or_else(PoisonError::into_inner);
            if let Err(reason) = consolidate(&mut catalog, &mut table, server, policy, *scope) {
                tracing::warn!(upstream = server, %reason, "group not consolidated; its tools are offered one by one");
            }
        }
        Listed {
            tools: count,
            changed,
        }
    }

    /// An upstream said its tools changed: relist it now, and announce the
    /// group if something really changed.
    async fn refresh_upstream(&self, group: &GroupId) {
        let Some(index) = self.upstream_index(group.as_str()) else {
            return;
        };
        self.upstreams[index].listing.lock().await.stale = true;
        match self.ensure_listed(index).await {
            // Servers announce changes that change nothing (some at every
            // start); only a real change is passed on.
            Ok(Listed { changed: true, .. }) => {
                let _ = self.changes.send(group.clone());
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
}

impl ToolHost for Toolbox {
    fn catalog(&self) -> RwLockReadGuard<'_, Catalog> {
        self.catalog.read().unwrap_or_else(PoisonError::into_inner)
    }

    fn prepare_group<'a>(&'a self, group: &'a str) -> PrepareFuture<'a> {
        Box::pin(async move { self.prepare(group).await.map_err(|error| error.to_string()) })
    }

    fn call<'a>(
        &'a self,
        tool: &'a str,
        arguments: Value,
        cancel: CancellationToken,
        context: &'a CallContext,
    ) -> ToolFuture<'a> {
        Box::pin(async move {
            tool_output(
                Toolbox::call(self, tool, arguments, &cancel, Downstream::NONE, context).await,
            )
        })
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

async fn watch_upstreams(
    toolbox: Weak<Toolbox>,
    mut events: mpsc::UnboundedReceiver<UpstreamEvent>,
) {
    while let Some(event) = events.recv().await {
        let Some(toolbox) = toolbox.upgrade() else {
            return;
        };
        match event {
            UpstreamEvent::ToolsChanged(group) => toolbox.refresh_upstream(&group).await,
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

/// Why a group is consolidated.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Consolidation {
    /// Named in the configuration (or a built-in default): it must work.
    Named,
    /// Only through `*`: groups of one tool, and groups that cannot be one
    /// tool, stay as they are.
    Every,
}

/// The `[groups]` key whose settings apply to every group without its own
/// (but for groups of one tool, which one action would not make smaller).
pub const ALL_GROUPS: &str = "*";

/// The groups to offer as one polymorphic tool: those configured so (by id,
/// or by `*` for every group without its own settings), and the built-ins
/// that are by default unless configured otherwise.
fn polymorphic_groups(
    options: &ToolboxOptions,
    catalog: &Catalog,
) -> BTreeMap<String, (ActionPolicy, Consolidation)> {
    let mut groups = BTreeMap::new();
    let default_polymorphic = BuiltinTools::polymorphic_group_ids();
    for group in catalog.groups() {
        let id = group.id.as_str();
        let own = options.groups.get(id);
        let settings = own.or_else(|| options.groups.get(ALL_GROUPS));
        let builtin = default_polymorphic.contains(&id)
            && catalog
                .group_tools(id)
                .next()
                .and_then(|t| catalog.tool(t.name.as_str()))
                .is_some_and(|t| *t.origin == Origin::Builtin);
        let polymorphic = match settings.and_then(|s| s.expose) {
            Some(GroupExposure::Polymorphic) => true,
            Some(GroupExposure::Tools) => false,
            None => builtin,
        };
        if polymorphic {
            let policy = settings.map(|s| s.policy.clone()).unwrap_or_default();
            let scope = if own.is_some() || builtin {
                Consolidation::Named
            } else {
                Consolidation::Every
            };
            groups.insert(id.to_owned(), (policy, scope));
        }
    }
    groups
}

/// Replaces `group`'s tools with one polymorphic tool named after the group,
/// their routes with its route, and makes each former tool name an alias of
/// its action. A group with no tools (yet) is left alone.
fn consolidate(
    catalog: &mut Catalog,
    routes: &mut HashMap<ToolName, Route>,
    group: &str,
    policy: &ActionPolicy,
    scope: Consolidation,
) -> Result<(), String> {
    let members: Vec<ToolDefinition> = catalog.group_tools(group).cloned().collect();
    let Some(first) = members.first() else {
        return Ok(());
    };
    if scope == Consolidation::Every && members.len() < 2 {
        // One action would only add the action enum.
        return Ok(());
    }
    let origin = catalog
        .tool(first.name.as_str())
        .map(|tool| tool.origin.clone())
        .unwrap_or(Origin::Builtin);
    let name = ToolName::new(group)
        .map_err(|error| format!("the group id is not a valid tool name ({error})"))?;
    let description = catalog
        .group(group)
        .map(|g| g.description.clone())
        .unwrap_or_default();
    let refs: Vec<&ToolDefinition> = members.iter().collect();
    let all_names = toolgate_core::action_names(&refs, group);
    let all_names: Vec<&str> = all_names.iter().map(String::as_str).collect();
    let unknown = policy.unknown_actions(&all_names);
    if !unknown.is_empty() {
        return Err(format!(
            "the action policy names unknown actions: {} (the actions are: {})",
            unknown.join(", "),
            all_names.join(", ")
        ));
    }
    let (tool, targets) =
        PolymorphicTool::consolidate(name.clone(), description, &refs, group, policy)
            .map_err(|error| error.to_string())?;
    let actions: Vec<String> = tool.action_names().into_iter().map(str::to_owned).collect();
    let members_of_actions = targets
        .iter()
        .map(|target| Member {
            definition: (*target).clone(),
            route: routes.get(&target.name).cloned().unwrap_or(Route::Unbound),
        })
        .collect();
    catalog
        .replace_group_tools(group, vec![(tool.definition().clone(), origin)])
        .map_err(|error| error.to_string())?;
    let consolidated = Consolidated {
        tool,
        members: members_of_actions,
    };
    for member in &members {
        routes.remove(&member.name);
    }
    for (action, target) in actions.iter().zip(&targets) {
        if target.name != name {
            let alias = Alias::new(name.clone()).with_action(action.as_str());
            catalog
                .register_alias(target.name.as_str(), alias)
                .map_err(|error| error.to_string())?;
        }
    }
    routes.insert(name, Route::Polymorphic(Arc::new(consolidated)));
    Ok(())
}

/// What an upstream listed for the tools behind a route.
fn upstream_listings(route: &Route) -> Vec<Arc<Tool>> {
    match route {
        Route::Upstream { listed, .. } => vec![Arc::clone(listed)],
        Route::Polymorphic(consolidated) => consolidated
            .members
            .iter()
            .flat_map(|member| upstream_listings(&member.route))
            .collect(),
        Route::Builtin | Route::Unbound => Vec::new(),
    }
}

/// A structured error result: the JSON as text and as structured content.
fn typed_error(value: Value) -> CallToolResult {
    let mut result = error_result(value.to_string());
    result.structured_content = Some(value);
    result
}

/// A member's result as its polymorphic tool answers it: the text content
/// carries the `type` field (see [`typed_result`]); other content is kept.
fn with_type(action: &str, result: CallToolResult) -> CallToolResult {
    let is_error = result.is_error.unwrap_or(false);
    let text = match &result.structured_content {
        Some(structured)
            if !result
                .content
                .iter()
                .any(|b| matches!(b, ContentBlock::Text(_))) =>
        {
            structured.to_string()
        }
        _ => result
            .content
            .iter()
            .filter_map(|block| match block {
                ContentBlock::Text(text) => Some(text.text.as_str()),
                _ => None,
            })
            .collect::<Vec<_>>()
            .join("\n"),
    };
    let typed = typed_result(action, &text, is_error);
    let mut content = vec![ContentBlock::text(typed.to_string())];
    content.extend(
        result
            .content
            .into_iter()
            .filter(|block| !matches!(block, ContentBlock::Text(_))),
    );
    let mut answer = if is_error {
        CallToolResult::error(content)
    } else {
        CallToolResult::success(content)
    };
    answer.structured_content = Some(typed);
    answer
}

fn not_available(name: &str) -> String {
    format!("Tool '{name}' is not available for this agent.")
}

pub(crate) fn error_result(text: impl Into<String>) -> CallToolResult {
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

/// An MCP result as the agent's model reads it: the text blocks joined, other
/// content named by its kind.
fn tool_output(result: CallToolResult) -> ToolOutput {
    let text = result
        .content
        .iter()
        .map(|block| match block {
            ContentBlock::Text(text) => text.text.clone(),
            ContentBlock::Image(image) => format!("[image: {}]", image.mime_type),
            ContentBlock::Audio(audio) => format!("[audio: {}]", audio.mime_type),
            ContentBlock::ResourceLink(link) => format!("[resource: {}]", link.uri),
            _ => "[embedded resource]".to_owned(),
        })
        .collect::<Vec<_>>()
        .join("\n");
    let text = match (&result.structured_content, text.is_empty()) {
        (Some(structured), true) => structured.to_string(),
        _ => text,
    };
    ToolOutput {
        text,
        structured: result.structured_content,
        is_error: result.is_error.unwrap_or(false),
    }
}
