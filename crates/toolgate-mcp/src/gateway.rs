//! [`Gateway`]: the tool runtime, the upstreams and the sessions, with the
//! operations an MCP server exposes: list the session's tools, answer the
//! meta-tools, call tools. Transport-free: the rmcp handler (`handler.rs`)
//! translates requests into these calls.
//!
//! What the tools do is the [`Toolbox`]'s business and what the meta-tools
//! answer is [`toolgate_core::MetaTools`]'; the gateway keeps the session
//! (its active set, rebuilt from history), records its loads, tells the
//! client when its list changed, and converts at the MCP edge.
//!
//! With [`LoadedSchemas::Conversation`] a session's `tools/list` never
//! shows its loads (so it never changes on one, and no `list_changed` is
//! sent): the load's answer carries the schemas, and the loaded tools are
//! called by name or through `call_tool`, checked as in either mode.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use opentelemetry::context::FutureExt as _;
use rmcp::model::{CallToolResult, ContentBlock, JsonObject, Tool};
use rmcp::{Peer, RoleServer};
use serde_json::{Value, json};
use tokio::sync::broadcast;
use toolgate_core::routing::RoutingConfig;
use toolgate_core::{
    ActiveToolSet, Catalog, FailedInGateway, GROUP_NAME_PARAMETER, GatewayShuttingDown, GroupId,
    GroupLoaded, GroupVisibility, LOAD_TOOL_GROUP_TOOL_NAME, LoadedSchemas, Message, MetaAnswer,
    MetaCall, MetaTool, NameTooLong, NotAvailable, PolicyTarget, SessionUnreadable, ToolDefinition,
    ToolKind, ToolPolicy, ToolStatus, UNLOAD_TOOL_GROUP_TOOL_NAME, tool_groups_section,
};
use toolgate_store::{ConversationId, ConversationStore, ToolOwner};
use toolgate_tools::{
    Authority, CatalogChange, ListedSource, ResolvedCall, StartReport, ToolCallError, Toolbox,
    ToolboxError, ToolboxOptions, ViewKey,
};

use crate::audit::{AuditLog, AuditedCall};
use crate::clients::{Caller, ClientName, Clients, Owner};
use crate::config::UpstreamConfig;
use crate::convert::{ListedTools, result_from_output};
use crate::drain::CallsInFlight;
use crate::metrics::{CORE, Metrics, Outcome, TokenCosts, UNKNOWN};
use crate::oauth::OAuth;
use crate::rate_limit::{RATE_LIMITED_CODE, RateLimited, RateLimits};
use crate::scope::{RequestScope, ScopedLimits};
use crate::session::{Sessions, notify_tool_list_changed};
use crate::telemetry;
use crate::upstream::{Upstream, UpstreamHealth};

mod passthrough;
mod upstreams;

pub use upstreams::UpstreamChanges;

/// The longest tool name looked up (and echoed in an answer); MCP allows 64.
const MAX_TOOL_NAME: usize = 128;

/// What the gateway serves.
#[derive(Clone, Debug)]
pub struct GatewayOptions {
    /// The tools besides the upstreams: built-ins, manifests, catalogs,
    /// group settings and aliases.
    pub tools: ToolboxOptions,
    /// The upstream MCP servers, in priority order.
    pub upstreams: Vec<UpstreamConfig>,
    /// Sessions unused this long are forgotten, history included.
    pub session_idle_timeout: Duration,
    /// With routing settings, the `find_tool_groups` meta-tool is always
    /// offered and ranks the groups for a request with them. Without, the
    /// one offered above `tools.search_above_groups` answers with
    /// `tools.routing` (the defaults when that is unset).
    pub routing: Option<RoutingConfig>,
    /// Where each tool call is recorded, when anywhere.
    pub audit: Option<AuditLog>,
    /// Tool calls allowed per caller and per caller and tool.
    pub rate_limits: Arc<RateLimits>,
    /// What each named client may use; a client without one may use
    /// everything.
    pub policies: Arc<HashMap<ClientName, ToolPolicy>>,
    /// Where a session's loads put their schemas: its `tools/list`, or
    /// only the load's answer.
    pub loaded_schemas: LoadedSchemas,
}

/// The gateway. Share it in an [`Arc`]; every method takes `&self`.
#[derive(Debug)]
pub struct Gateway<S> {
    toolbox: Arc<Toolbox>,
    /// The upstream MCP servers, in priority order; a new configuration
    /// changes them ([`update_upstreams`](Self::update_upstreams)).
    upstreams: std::sync::RwLock<Vec<Arc<Upstream>>>,
    /// Serializes configuration changes of the upstreams.
    reconfiguring: tokio::sync::Mutex<()>,
    sessions: Sessions<S>,
    /// Upstream tools as `tools/list` gives them, read once per listing.
    listed_tools: ListedTools,
    calls: CallsInFlight,
    metrics: Arc<Metrics>,
    audit: Option<AuditLog>,
    /// Who may come in, what each may use, and how often: replaced whole
    /// by [`update_access`](Self::update_access).
    access: std::sync::RwLock<Arc<Access>>,
    /// Each client's view of the catalog (restricted, or showing its own
    /// tools), with the key it was made for ([`Toolbox::view_key`]).
    views: std::sync::Mutex<HashMap<ClientName, (ViewKey, Arc<Catalog>)>>,
    /// Where a session's loads put their schemas.
    loaded_schemas: LoadedSchemas,
}

/// The named clients, their policies and the rate limits, as configured.
#[derive(Debug, Default)]
pub struct Access {
    /// The named clients and their tokens.
    pub clients: Clients,
    /// What each restricted client may use.
    pub policies: HashMap<ClientName, Arc<ToolPolicy>>,
    /// Tool calls allowed per caller and per caller and tool.
    pub rate_limits: Arc<RateLimits>,
    /// Bearer JWTs from an OAuth issuer, mapped to clients, when the HTTP
    /// listener accepts them.
    pub oauth: Option<Arc<OAuth>>,
}

impl<S: ConversationStore + 'static> Gateway<S> {
    /// Builds the toolbox (meta-tools, built-ins, manifests, one group per
    /// upstream) and starts eager upstreams. Upstream failures are reported,
    /// not fatal.
    pub async fn start(
        options: GatewayOptions,
        store: S,
    ) -> Result<(Arc<Self>, StartReport), ToolboxError> {
        let upstreams: Vec<Arc<Upstream>> = options
            .upstreams
            .into_iter()
            .map(|config| Arc::new(Upstream::new(config)))
            .collect();
        let mut tools = options.tools;
        tools.meta_tools = vec![MetaTool::UnloadToolGroup, MetaTool::CallTool];
        if let Some(routing) = options.routing {
            tools.meta_tools.push(MetaTool::FindToolGroups);
            tools.routing = Some(routing);
        }
        // Listed sources given with the tools (the `user_tools` group of
        // JavaScript tools agents write) come before the upstreams.
        tools.listed.extend(
            upstreams
                .iter()
                .map(|upstream| Arc::clone(upstream) as Arc<dyn ListedSource>),
        );
        let (toolbox, report) = Toolbox::start(tools).await?;
        let changes = toolbox.subscribe_changes();
        let elsewhere = store.changes();
        let metrics = Arc::new(Metrics::new());
        metrics
            .upstream_restarts()
            .set(upstreams::restart_counts(&upstreams));
        let gateway = Arc::new(Self {
            sessions: Sessions::new(store, Arc::clone(&toolbox), options.session_idle_timeout),
            toolbox,
            upstreams: std::sync::RwLock::new(upstreams),
            reconfiguring: tokio::sync::Mutex::new(()),
            listed_tools: ListedTools::default(),
            calls: CallsInFlight::default(),
            metrics,
            audit: options.audit,
            access: std::sync::RwLock::new(Arc::new(Access {
                clients: Clients::default(),
                policies: options
                    .policies
                    .iter()
                    .map(|(client, policy)| (client.clone(), Arc::new(policy.clone())))
                    .collect(),
                rate_limits: options.rate_limits,
                oauth: None,
            })),
            views: std::sync::Mutex::default(),
            loaded_schemas: options.loaded_schemas,
        });
        tokio::spawn(watch_changes(Arc::downgrade(&gateway), changes));
        if let Some(elsewhere) = elsewhere {
            tokio::spawn(watch_elsewhere(Arc::downgrade(&gateway), elsewhere));
        }
        Ok((gateway, report))
    }

    /// The scope of a request of `owner` in `session` (`None`: a stateless
    /// request): what its client may use (its policy; everything for the
    /// operator and for a client without one), counted against its rate
    /// limits, and the client's own JavaScript tools. Decided once, where
    /// the request comes in.
    pub(crate) async fn scope(
        &self,
        session: Option<ConversationId>,
        owner: Owner,
    ) -> RequestScope {
        let authority = self.authority_of(&owner.client);
        self.toolbox.prepare_caller(&authority).await;
        RequestScope::new(session, owner, authority)
    }

    /// The scope of a request of the operator (a stdio connection, the
    /// shared token) in `session`, for front ends of this library that
    /// serve one.
    pub async fn operator_scope(&self, session: Option<ConversationId>) -> RequestScope {
        self.scope(session, Owner::default()).await
    }

    /// What `caller` may use, as now: its policy (everything for the
    /// operator and for a client without one), counted against its limits;
    /// a named client's JavaScript tools are its own.
    fn authority_of(&self, caller: &Caller) -> Authority {
        let access = self.access();
        let authority = match caller
            .as_ref()
            .and_then(|client| access.policies.get(client))
        {
            Some(policy) => Authority::policy(Arc::clone(policy)),
            None => Authority::everything(),
        };
        let authority = authority.with_limits(Arc::new(ScopedLimits {
            limits: Arc::clone(&access.rate_limits),
            caller: caller.clone(),
        }));
        match caller {
            Some(client) => authority.with_tool_owner(client_tool_owner(client)),
            None => authority,
        }
    }

    /// Runs `f` on the catalog as `caller` sees it: restricted by its
    /// policy, when it has one.
    pub fn with_view_of<T>(&self, caller: &Caller, f: impl FnOnce(&Catalog) -> T) -> T {
        let authority = self.authority_of(caller);
        self.with_view_as(caller, &authority, f)
    }

    /// Runs `f` on the catalog as the request of `scope` sees it.
    pub(crate) fn with_view<T>(&self, scope: &RequestScope, f: impl FnOnce(&Catalog) -> T) -> T {
        self.with_view_as(scope.caller(), scope.authority(), f)
    }

    fn with_view_as<T>(
        &self,
        caller: &Caller,
        authority: &Authority,
        f: impl FnOnce(&Catalog) -> T,
    ) -> T {
        match self.view(caller, authority) {
            Some(view) => f(&view),
            None => self.with_catalog(f),
        }
    }

    /// Who may come in, what each may use, and how often, as now.
    pub fn access(&self) -> Arc<Access> {
        Arc::clone(
            &self
                .access
                .read()
                .unwrap_or_else(std::sync::PoisonError::into_inner),
        )
    }

    /// Replaces the clients, their policies and the rate limits at once.
    /// Sessions stay; every one is told to list its tools again, as what it
    /// may see may have changed. Rate limits start full again.
    pub async fn update_access(&self, access: Access) {
        *self
            .access
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = Arc::new(access);
        self.views
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clear();
        self.sessions.notify_group_changed(None, true).await;
    }

    /// Sets who signs in (the named clients and the OAuth issuer's
    /// tokens), keeping the policies and rate limits.
    pub fn set_sign_in(&self, clients: Clients, oauth: Option<Arc<OAuth>>) {
        let mut access = self
            .access
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        *access = Arc::new(Access {
            clients,
            policies: access.policies.clone(),
            rate_limits: Arc::clone(&access.rate_limits),
            oauth,
        });
    }

    /// Whether `caller` sees the whole catalog (no policy narrows it).
    pub(crate) fn sees_everything(&self, caller: &Caller) -> bool {
        !self.authority_of(caller).narrows()
    }

    /// The view of the catalog of `caller`, allowed what `authority`
    /// allows (and showing its own tools), made again when the catalog or
    /// its own tools changed; `None` when it sees the whole catalog.
    fn view(&self, caller: &Caller, authority: &Authority) -> Option<Arc<Catalog>> {
        let key = self.toolbox.view_key(authority)?;
        let Some(client) = caller.as_ref() else {
            return self.toolbox.catalog_for(authority).map(Arc::new);
        };
        let cached = self
            .views
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .get(client)
            .filter(|(made_for, _)| *made_for == key)
            .map(|(_, view)| Arc::clone(view));
        if let Some(view) = cached {
            return Some(view);
        }
        let view = Arc::new(self.toolbox.catalog_for(authority)?);
        self.views
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .insert(client.clone(), (key, Arc::clone(&view)));
        Some(view)
    }

    /// What the gateway counts (`/metrics`).
    pub fn metrics(&self) -> &Metrics {
        &self.metrics
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

    /// Refuses new tool calls and waits up to `grace` for the running ones
    /// to finish. Returns how many were still running at the end.
    pub async fn drain(&self, grace: Duration) -> usize {
        self.calls.drain(grace).await
    }

    /// Stops every upstream.
    pub async fn shutdown(&self) {
        self.toolbox.shutdown().await;
    }

    /// `tools/list`: core tools, always-listed upstream tools, then the
    /// session's loaded groups in load order (none when loaded schemas go
    /// in the conversation). Loaded groups whose upstream is not running yet
    /// (a restored session) are started first; one that fails is left out
    /// of the list rather than failing it.
    pub async fn list_tools(&self, scope: &RequestScope) -> Vec<Tool> {
        let active = match scope.session() {
            Some(id) => self.sessions.active_set(id).await,
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

    /// `tools/call` in `scope`. Every failure the model can act on is an
    /// error result, never a protocol error; a call beyond the caller's
    /// rate limits is refused with when to retry. The scope's client
    /// receives `list_changed` after a load or an unload that changed its
    /// list. The name is resolved once (alias, route); what the caller may
    /// not use is not available, as a tool that does not exist.
    pub async fn call_tool(
        &self,
        scope: &RequestScope,
        name: &str,
        arguments: Option<JsonObject>,
    ) -> Result<CallToolResult, RateLimited> {
        let Some(_running) = self.calls.start() else {
            return Ok(error_result(GatewayShuttingDown));
        };
        if name.len() > MAX_TOOL_NAME {
            return Ok(error_result(NameTooLong {
                length: name.len(),
                max: MAX_TOOL_NAME,
            }));
        }
        if let (LoadedSchemas::Conversation, Some(id)) = (self.loaded_schemas, scope.session()) {
            // Its client never lists the loaded tools, so a restored
            // session's calls start their upstreams before the name is
            // resolved.
            let active = self.sessions.active_set(id).await;
            self.toolbox.prepare_visible(&active).await;
        }
        let arguments = Value::Object(arguments.unwrap_or_default());
        let began = Instant::now();
        let audited = self.audit.is_some().then(|| arguments.clone());
        let meta = self.toolbox.meta_tools().parse(name, &arguments);
        let call = self.toolbox.resolve(name, arguments, scope.authority());
        let labels = labels(&call);
        if let Err(limited) = self.access().rate_limits.admit_call(scope.caller()) {
            let outcome = Outcome::Limited;
            self.finished(scope, &labels, outcome, began, audited.as_ref())
                .await;
            return Err(limited);
        }
        let result = match meta {
            None => {
                let checked = self.call_checked(scope, call, audited);
                return self.traced(&labels, checked).await;
            }
            Some(_) if !self.permits_meta(scope, name) => error_result(NotAvailable {
                tool: name.to_owned(),
                group: None,
            }),
            Some(Err(error)) => error_result(error),
            Some(Ok(meta)) => {
                let answer = self.answer_meta(scope, meta);
                self.traced(&labels, answer).await?
            }
        };
        self.finished(scope, &labels, outcome_of(&result), began, audited.as_ref())
            .await;
        Ok(result)
    }

    /// Whether the scope's caller may call the meta-tool `name`.
    fn permits_meta(&self, scope: &RequestScope, name: &str) -> bool {
        scope
            .authority()
            .permits(&PolicyTarget::tool(ToolKind::Meta, name))
    }

    /// A meta-tool call: a load's upstream is started first; loads and
    /// unloads of a session are recorded in its history and, when they
    /// change its `tools/list`, announced with `list_changed`.
    async fn answer_meta(
        &self,
        scope: &RequestScope,
        call: MetaCall,
    ) -> Result<CallToolResult, RateLimited> {
        // What the caller may not see is not started for it either.
        let visible = self.with_view(scope, |catalog| match &call {
            MetaCall::Load { group } => catalog.group(group).is_some(),
            MetaCall::CallTool { tool, .. } => catalog.resolve(tool).is_some(),
            MetaCall::Unload { .. } | MetaCall::FindGroups { .. } => true,
        });
        if visible && let Err(error) = self.toolbox.prepare_meta(&call).await {
            return Ok(error_result(error));
        }
        let meta = self.toolbox.meta_tools();
        let reply = match scope.session() {
            Some(id) => {
                let session = self.sessions.get(id).await;
                let mut active = session.active.lock().await;
                let reply = self.with_view(scope, |catalog| {
                    self.render(
                        meta.answer(&call, Some(&mut active), catalog),
                        catalog,
                        scope.authority(),
                    )
                });
                if let Some(event) = reply.history_event() {
                    self.sessions.record(id, event).await;
                }
                reply
            }
            None => self.with_view(scope, |catalog| {
                let answer = meta.answer(&call, None, catalog);
                self.render(answer, catalog, scope.authority())
            }),
        };
        match reply {
            Reply::Result { result, changed } => {
                if let Some(Change::Loaded(group)) = &changed {
                    self.metrics.group_loaded(group.as_str());
                }
                let listed = match self.loaded_schemas {
                    LoadedSchemas::ToolList => true,
                    LoadedSchemas::Conversation => false,
                };
                if listed && changed.is_some() && scope.session().is_some() {
                    notify_list_changed(scope.peer()).await;
                }
                Ok(result)
            }
            Reply::Call { tool, arguments } => {
                let audited = self.audit.is_some().then(|| arguments.clone());
                let call = self.toolbox.resolve(&tool, arguments, scope.authority());
                let labels = labels(&call);
                let checked = self.call_checked(scope, call, audited);
                self.traced(&labels, checked).await
            }
        }
    }

    /// A meta-tool's answer as the MCP client receives it.
    fn render(
        &self,
        answer: Result<MetaAnswer<'_>, toolgate_core::MetaError>,
        catalog: &Catalog,
        authority: &Authority,
    ) -> Reply {
        match answer {
            Ok(MetaAnswer::Loaded(loaded)) => {
                // An always-listed group's tools are in the list either way.
                let schemas = match catalog.group_visibility(loaded.group.id.as_str()) {
                    Some(GroupVisibility::Always) => LoadedSchemas::ToolList,
                    Some(GroupVisibility::OnLoad) | None => self.loaded_schemas,
                };
                let text = loaded.answer(schemas).to_string();
                let mut result = CallToolResult::success(vec![ContentBlock::text(text)]);
                result.structured_content = Some(self.loaded_schemas(&loaded, authority));
                let changed = loaded
                    .newly_loaded
                    .then(|| Change::Loaded(loaded.group.id.clone()));
                Reply::Result { result, changed }
            }
            Ok(MetaAnswer::Unloaded(unloaded)) => Reply::Result {
                result: CallToolResult::success(vec![ContentBlock::text(unloaded.to_string())]),
                changed: Some(Change::Unloaded(unloaded.group.id.clone())),
            },
            Ok(MetaAnswer::Found(found)) => {
                let mut result =
                    CallToolResult::success(vec![ContentBlock::text(found.to_string())]);
                result.structured_content = Some(found.to_json());
                Reply::Result {
                    result,
                    changed: None,
                }
            }
            Ok(MetaAnswer::Call { tool, arguments }) => Reply::Call { tool, arguments },
            Err(error) => Reply::Result {
                result: error_result(error),
                changed: None,
            },
        }
    }

    /// A call to a catalog tool: the caller's per-tool limit, availability
    /// (for a session), then the tool, through the toolbox.
    async fn call_checked(
        &self,
        scope: &RequestScope,
        call: ResolvedCall,
        audited: Option<Value>,
    ) -> Result<CallToolResult, RateLimited> {
        let began = Instant::now();
        let labels = labels(&call);
        if let Err(limited) = self
            .access()
            .rate_limits
            .admit_tool(scope.caller(), &labels.tool)
        {
            self.finished(scope, &labels, Outcome::Limited, began, audited.as_ref())
                .await;
            return Err(limited);
        }
        let (result, outcome) = self.run_checked(scope, call).await;
        let outcome = if labels.tool == UNKNOWN {
            Outcome::Unavailable
        } else {
            outcome
        };
        self.finished(scope, &labels, outcome, began, audited.as_ref())
            .await;
        Ok(result)
    }

    /// `call`, in a span of its own while spans are on.
    async fn traced(
        &self,
        labels: &Labels,
        call: impl Future<Output = Result<CallToolResult, RateLimited>>,
    ) -> Result<CallToolResult, RateLimited> {
        if !telemetry::enabled() {
            return call.await;
        }
        let group =
            (labels.group != CORE && !labels.group.is_empty()).then_some(labels.group.as_str());
        let Some(span) = telemetry::tool_span(&labels.requested, group, labels.origin.as_ref())
        else {
            return call.await;
        };
        let result = call.with_context(span.context()).await;
        span.end(match &result {
            Ok(result) if result.is_error == Some(true) => Some("tool_error".into()),
            Ok(_) => None,
            Err(_) => Some(RATE_LIMITED_CODE.to_string().into()),
        });
        result
    }

    /// A catalog tool's call: availability for the session, then the tool,
    /// which the toolbox runs if the scope's authority permits it as it
    /// will run (after the alias and the action).
    async fn run_checked(
        &self,
        scope: &RequestScope,
        call: ResolvedCall,
    ) -> (CallToolResult, Outcome) {
        let name = call.requested().to_owned();
        if let Some(id) = scope.session() {
            let session = self.sessions.get(id).await;
            if let Some(reason) = session.unreadable() {
                let unreadable = SessionUnreadable {
                    tool: &name,
                    reason,
                };
                return (error_result(unreadable), Outcome::Error);
            }
            let active = session.active.lock().await.clone();
            let available = self.with_view(scope, |catalog| {
                active.check_available(catalog, &name).map(|_| ())
            });
            if let Err(not_available) = available {
                return (error_result(not_available), Outcome::Unavailable);
            }
        }
        let context = scope.call_context();
        let result = match self.toolbox.run(call, &context).await {
            Ok(output) | Err(ToolCallError::RespondToModel(output)) => result_from_output(output),
            Err(ToolCallError::Fatal(reason)) => {
                tracing::error!(tool = %name, %reason, "tool call failed");
                error_result(FailedInGateway(&name))
            }
        };
        let outcome = outcome_of(&result);
        (result, outcome)
    }

    /// Counts a finished call and writes its audit line.
    async fn finished(
        &self,
        scope: &RequestScope,
        labels: &Labels,
        outcome: Outcome,
        began: Instant,
        arguments: Option<&Value>,
    ) {
        let took = began.elapsed();
        let (group, tool) = (labels.group.as_str(), labels.tool.as_str());
        self.metrics.tool_call(group, tool, outcome, took);
        if let (Some(audit), Some(arguments)) = (&self.audit, arguments) {
            audit
                .record(AuditedCall {
                    owner: scope.owner(),
                    session: scope.session().map(ConversationId::as_str),
                    group,
                    tool,
                    outcome,
                    took,
                    arguments,
                })
                .await;
        }
    }

    /// Definitions as MCP lists them: an upstream's tools exactly as it
    /// listed them (but for the exposed name), the others from the catalog.
    fn to_mcp(&self, definitions: Vec<&ToolDefinition>, authority: &Authority) -> Vec<Tool> {
        let listings = self
            .toolbox
            .listings(definitions.iter().map(|d| d.name.as_str()), authority);
        self.listed_tools.tools(&definitions, listings)
    }

    /// The structured content of a load: the group and its tools as
    /// `tools/list` gives them, for clients that never refresh their list.
    fn loaded_schemas(&self, loaded: &GroupLoaded<'_>, authority: &Authority) -> Value {
        let tools: Vec<Value> = self
            .to_mcp(loaded.tools.clone(), authority)
            .iter()
            .map(|tool| serde_json::to_value(tool).unwrap_or(Value::Null))
            .collect();
        json!({
            "group": loaded.group.id,
            "display_name": loaded.group.display_name,
            "tools": tools,
        })
    }
}

/// Whose JavaScript tools a named client writes and runs: its own, apart
/// from any agent's of `toolgate chat` sharing the store.
fn client_tool_owner(client: &ClientName) -> ToolOwner {
    ToolOwner::new(format!("client:{client}"))
}

/// What a call is counted, audited and traced under: the catalog's names
/// only (`core` for a core tool, `(unknown)` for a name no tool holds).
struct Labels {
    requested: String,
    group: String,
    tool: String,
    origin: Option<toolgate_core::Origin>,
}

fn labels(call: &ResolvedCall) -> Labels {
    let (group, tool) = match call.tool() {
        Some(tool) => (
            call.group().map_or(CORE, GroupId::as_str).to_owned(),
            tool.to_owned(),
        ),
        None => (String::new(), UNKNOWN.to_owned()),
    };
    Labels {
        requested: call.requested().to_owned(),
        group,
        tool,
        origin: call.origin().cloned(),
    }
}

/// How a call's result counts.
fn outcome_of(result: &CallToolResult) -> Outcome {
    if result.is_error == Some(true) {
        Outcome::Error
    } else {
        Outcome::Ok
    }
}

/// A meta-tool's answer, rendered: a result (and what it changed in the
/// session), or the tool `call_tool` names, to run as a direct call.
enum Reply {
    Result {
        result: CallToolResult,
        changed: Option<Change>,
    },
    Call {
        tool: String,
        arguments: Value,
    },
}

/// A change to a session's active set, to record in its history.
enum Change {
    Loaded(GroupId),
    Unloaded(GroupId),
}

impl Reply {
    /// The history event that replays this answer's change.
    fn history_event(&self) -> Option<Message> {
        match self {
            Self::Result {
                changed: Some(Change::Loaded(group)),
                ..
            } => Some(group_event(LOAD_TOOL_GROUP_TOOL_NAME, group)),
            Self::Result {
                changed: Some(Change::Unloaded(group)),
                ..
            } => Some(group_event(UNLOAD_TOOL_GROUP_TOOL_NAME, group)),
            Self::Result { changed: None, .. } | Self::Call { .. } => None,
        }
    }
}

/// Tells the sessions that loaded a group when its tools change, and every
/// session when core tools (or the groups on offer) change.
async fn watch_changes<S: ConversationStore + 'static>(
    gateway: std::sync::Weak<Gateway<S>>,
    mut changes: broadcast::Receiver<CatalogChange>,
) {
    loop {
        let change = match changes.recv().await {
            Ok(change) => change,
            Err(broadcast::error::RecvError::Lagged(_)) => continue,
            Err(broadcast::error::RecvError::Closed) => return,
        };
        let Some(gateway) = gateway.upgrade() else {
            return;
        };
        let group = match &change {
            CatalogChange::Group(group) => Some(group),
            CatalogChange::CoreTools => None,
        };
        let everyone = group.is_none_or(|group| {
            gateway.with_catalog(|catalog| {
                catalog.group_visibility(group.as_str()) == Some(GroupVisibility::Always)
            })
        });
        if !everyone && gateway.loaded_schemas == LoadedSchemas::Conversation {
            // No session lists a loaded group's tools.
            continue;
        }
        gateway.sessions.notify_group_changed(group, everyone).await;
    }
}

/// Rebuilds the sessions other gateways on the same store changed, and
/// tells their clients when their tools changed.
async fn watch_elsewhere<S: ConversationStore + 'static>(
    gateway: std::sync::Weak<Gateway<S>>,
    mut changes: broadcast::Receiver<ConversationId>,
) {
    loop {
        let conversation = match changes.recv().await {
            Ok(conversation) => conversation,
            Err(broadcast::error::RecvError::Lagged(missed)) => {
                tracing::warn!(missed, "changes announced by other gateways were missed");
                continue;
            }
            Err(broadcast::error::RecvError::Closed) => return,
        };
        let Some(gateway) = gateway.upgrade() else {
            return;
        };
        gateway.sessions.changed_elsewhere(&conversation).await;
    }
}

/// A load or unload the gateway recorded for a session, as the model's own
/// call would be: its restore replays it.
fn group_event(tool: &str, group: &GroupId) -> Message {
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
    if let Some(peer) = peer {
        notify_tool_list_changed(peer).await;
    }
}

/// A tool's error result whose text is `text`, a value of the contract.
fn error_result(text: impl std::fmt::Display) -> CallToolResult {
    CallToolResult::error(vec![ContentBlock::text(text.to_string())])
}
