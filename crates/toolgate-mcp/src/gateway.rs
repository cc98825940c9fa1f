//! [`Gateway`]: the tool runtime, the upstreams and the sessions, with the
//! operations an MCP server exposes: list the session's tools, answer the
//! meta-tools, call tools. Transport-free: the rmcp handler (`handler.rs`)
//! translates requests into these calls.
//!
//! What the tools do is the [`Toolbox`]'s business and what the meta-tools
//! answer is [`toolgate_core::MetaTools`]'; the gateway keeps the session
//! (its active set, rebuilt from history), records its loads, tells the
//! client when its list changed, and converts at the MCP edge.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use opentelemetry::context::FutureExt as _;
use rmcp::model::{CallToolResult, ContentBlock, JsonObject, Tool};
use rmcp::{Peer, RoleServer};
use serde_json::{Value, json};
use tokio::sync::broadcast;
use tokio_util::sync::CancellationToken;
use toolgate_core::routing::RoutingConfig;
use toolgate_core::{
    ACTION_PARAMETER, ActiveToolSet, Catalog, GROUP_NAME_PARAMETER, GroupId, GroupLoaded,
    GroupVisibility, LOAD_TOOL_GROUP_TOOL_NAME, Message, MetaAnswer, MetaCall, MetaTool,
    ToolDefinition, ToolPolicy, ToolStatus, UNLOAD_TOOL_GROUP_TOOL_NAME, tool_groups_section,
};
use toolgate_store::{ConversationId, ConversationStore};
use toolgate_tools::{
    CallContext, CallerChannel, CatalogChange, ListedSource, StartReport, ToolCallError, Toolbox,
    ToolboxError, ToolboxOptions,
};

use crate::audit::{AuditLog, AuditedCall};
use crate::clients::{Caller, ClientName, Clients, current_caller, current_owner};
use crate::config::UpstreamConfig;
use crate::convert::{ListedTools, result_from_output};
use crate::drain::CallsInFlight;
use crate::metrics::{CORE, Metrics, Outcome, TokenCosts, UNKNOWN};
use crate::oauth::OAuth;
use crate::rate_limit::{RATE_LIMITED_CODE, RateLimited, RateLimits};
use crate::relay::Downstream;
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
    /// Each restricted client's view of the catalog, at the revision it
    /// was made for.
    views: std::sync::Mutex<HashMap<ClientName, Arc<Catalog>>>,
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

impl<'a> SessionRef<'a> {
    fn id(&self) -> Option<&'a ConversationId> {
        match self {
            Self::Stateful(id) => Some(id),
            Self::Stateless => None,
        }
    }
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
        });
        tokio::spawn(watch_changes(Arc::downgrade(&gateway), changes));
        if let Some(elsewhere) = elsewhere {
            tokio::spawn(watch_elsewhere(Arc::downgrade(&gateway), elsewhere));
        }
        Ok((gateway, report))
    }

    /// Runs `f` on the catalog as `caller` sees it: restricted by its
    /// policy, when it has one.
    pub fn with_view_of<T>(&self, caller: &Caller, f: impl FnOnce(&Catalog) -> T) -> T {
        match self.view(caller) {
            Some(view) => f(&view),
            None => self.with_catalog(f),
        }
    }

    /// [`with_view_of`](Self::with_view_of) the caller of this request.
    pub(crate) fn with_view<T>(&self, f: impl FnOnce(&Catalog) -> T) -> T {
        self.with_view_of(&current_caller(), f)
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
        self.policy(caller).is_none()
    }

    /// The policy of `caller`, when it is restricted.
    fn policy(&self, caller: &Caller) -> Option<Arc<ToolPolicy>> {
        let client = caller.as_ref()?;
        self.access()
            .policies
            .get(client)
            .filter(|policy| !policy.is_unrestricted())
            .cloned()
    }

    /// `caller`'s view of the catalog, made again when the catalog changed;
    /// `None` when it sees the whole catalog.
    fn view(&self, caller: &Caller) -> Option<Arc<Catalog>> {
        let policy = self.policy(caller)?;
        let client = caller.as_ref()?;
        let revision = self.with_catalog(Catalog::revision);
        let cached = self
            .views
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .get(client)
            .filter(|view| view.revision() == revision)
            .cloned();
        if let Some(view) = cached {
            return Some(view);
        }
        let view = Arc::new(self.toolbox.restricted_catalog(&policy));
        self.views
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .insert(client.clone(), Arc::clone(&view));
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
    /// session's loaded groups in load order. Loaded groups whose upstream is
    /// not running yet (a restored session) are started first; one that
    /// fails is left out of the list rather than failing it.
    pub async fn list_tools(&self, session: SessionRef<'_>) -> Vec<Tool> {
        let active = match session {
            SessionRef::Stateful(id) => self.sessions.active_set(id).await,
            SessionRef::Stateless => ActiveToolSet::new(),
        };
        self.toolbox.prepare_visible(&active).await;
        let (tools, revision) = self.with_view(|catalog| {
            let mut tools = self.to_mcp(active.definitions(catalog));
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

    /// `tools/call`. Every failure the model can act on is an error result,
    /// never a protocol error; a call beyond the caller's rate limits is
    /// refused with when to retry. `downstream.peer` receives
    /// `list_changed` after a load or an unload that changed the list.
    pub async fn call_tool(
        &self,
        session: SessionRef<'_>,
        name: &str,
        arguments: Option<JsonObject>,
        cancel: &CancellationToken,
        downstream: Downstream,
    ) -> Result<CallToolResult, RateLimited> {
        let Some(_running) = self.calls.start() else {
            return Ok(error_result(
                "The gateway is shutting down and takes no new calls; retry once it is back."
                    .to_owned(),
            ));
        };
        if name.len() > MAX_TOOL_NAME {
            return Ok(error_result(format!(
                "No tool has a name that long ({} bytes); tool names have at most {MAX_TOOL_NAME}.",
                name.len()
            )));
        }
        let arguments = Value::Object(arguments.unwrap_or_default());
        let began = Instant::now();
        if let Err(limited) = self.access().rate_limits.admit_call(&current_caller()) {
            let (group, tool) = self.labels(name);
            self.finished(
                &session,
                &group,
                &tool,
                Outcome::Limited,
                began,
                Some(&arguments),
            )
            .await;
            return Err(limited);
        }
        let result = match self.toolbox.meta_tools().parse(name, &arguments) {
            None => {
                let call = self.call_checked(session, name, arguments, cancel, downstream);
                return self.traced(name, call).await;
            }
            Some(Err(error)) => error_result(error.to_string()),
            Some(Ok(call)) => {
                let answer = self.answer_meta(session.clone(), call, cancel, downstream);
                self.traced(name, answer).await?
            }
        };
        // A meta-tool: its name is one of the core tools'.
        self.finished(
            &session,
            CORE,
            name,
            outcome_of(&result),
            began,
            Some(&arguments),
        )
        .await;
        Ok(result)
    }

    /// A meta-tool call: a load's upstream is started first; loads and
    /// unloads of a session are recorded in its history and announced with
    /// `list_changed`.
    async fn answer_meta(
        &self,
        session: SessionRef<'_>,
        call: MetaCall,
        cancel: &CancellationToken,
        downstream: Downstream,
    ) -> Result<CallToolResult, RateLimited> {
        // What the caller may not see is not started for it either.
        let visible = self.with_view(|catalog| match &call {
            MetaCall::Load { group } => catalog.group(group).is_some(),
            MetaCall::CallTool { tool, .. } => catalog.resolve(tool).is_some(),
            MetaCall::Unload { .. } | MetaCall::FindGroups { .. } => true,
        });
        if visible && let Err(error) = self.toolbox.prepare_meta(&call).await {
            return Ok(error_result(error.to_string()));
        }
        let meta = self.toolbox.meta_tools();
        let reply = match session {
            SessionRef::Stateful(id) => {
                let session = self.sessions.get(id).await;
                let mut active = session.active.lock().await;
                let reply = self.with_view(|catalog| {
                    self.render(meta.answer(&call, Some(&mut active), catalog))
                });
                if let Some(event) = reply.history_event() {
                    self.sessions.record(id, event).await;
                }
                reply
            }
            SessionRef::Stateless => {
                self.with_view(|catalog| self.render(meta.answer(&call, None, catalog)))
            }
        };
        match reply {
            Reply::Result { result, changed } => {
                if let Some(Change::Loaded(group)) = &changed {
                    self.metrics.group_loaded(group.as_str());
                }
                if changed.is_some() && session.id().is_some() {
                    notify_list_changed(downstream.peer.as_ref()).await;
                }
                Ok(result)
            }
            Reply::Call { tool, arguments } => {
                let call = self.call_checked(session, &tool, arguments, cancel, downstream);
                self.traced(&tool, call).await
            }
        }
    }

    /// A meta-tool's answer as the MCP client receives it.
    fn render(&self, answer: Result<MetaAnswer<'_>, toolgate_core::MetaError>) -> Reply {
        match answer {
            Ok(MetaAnswer::Loaded(loaded)) => {
                let mut result =
                    CallToolResult::success(vec![ContentBlock::text(loaded.to_string())]);
                result.structured_content = Some(self.loaded_schemas(&loaded));
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
                result: error_result(error.to_string()),
                changed: None,
            },
        }
    }

    /// A call to a catalog tool: availability (for a session), then the
    /// tool, through the toolbox.
    async fn call_checked(
        &self,
        session: SessionRef<'_>,
        name: &str,
        arguments: Value,
        cancel: &CancellationToken,
        downstream: Downstream,
    ) -> Result<CallToolResult, RateLimited> {
        let began = Instant::now();
        let (group, tool) = self.labels(name);
        let audited = self.audit.is_some().then(|| arguments.clone());
        if let Err(limited) = self
            .access()
            .rate_limits
            .admit_tool(&current_caller(), &tool)
        {
            self.finished(
                &session,
                &group,
                &tool,
                Outcome::Limited,
                began,
                audited.as_ref(),
            )
            .await;
            return Err(limited);
        }
        let (result, outcome) = self
            .run_checked(session.clone(), name, arguments, cancel, downstream)
            .await;
        let outcome = if tool == UNKNOWN {
            Outcome::Unavailable
        } else {
            outcome
        };
        self.finished(&session, &group, &tool, outcome, began, audited.as_ref())
            .await;
        Ok(result)
    }

    /// The group and tool a call of `name` is counted and audited under:
    /// the catalog's names only (`core` for a core tool, `(unknown)` for a
    /// name no tool holds).
    fn labels(&self, name: &str) -> (String, String) {
        self.with_catalog(|catalog| match catalog.resolve(name) {
            Some(found) => (
                found.group.map_or(CORE, GroupId::as_str).to_owned(),
                found.definition.name.as_str().to_owned(),
            ),
            None => (String::new(), UNKNOWN.to_owned()),
        })
    }

    /// `call` of tool `name`, in a span of its own while spans are on.
    async fn traced(
        &self,
        name: &str,
        call: impl Future<Output = Result<CallToolResult, RateLimited>>,
    ) -> Result<CallToolResult, RateLimited> {
        if !telemetry::enabled() {
            return call.await;
        }
        let (group, origin) = self.with_catalog(|catalog| match catalog.resolve(name) {
            Some(found) => (
                found.group.map(|group| group.as_str().to_owned()),
                Some(found.origin.clone()),
            ),
            None => (None, None),
        });
        let Some(span) = telemetry::tool_span(name, group.as_deref(), origin.as_ref()) else {
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

    /// A catalog tool's call: availability for the session, then the tool.
    async fn run_checked(
        &self,
        session: SessionRef<'_>,
        name: &str,
        arguments: Value,
        cancel: &CancellationToken,
        downstream: Downstream,
    ) -> (CallToolResult, Outcome) {
        if let SessionRef::Stateful(id) = session {
            let session = self.sessions.get(id).await;
            if let Some(reason) = session.unreadable() {
                let text = format!(
                    "Tool '{name}' cannot be called right now: this session's loaded groups could not be read from the store ({reason}). Try again in a moment."
                );
                return (error_result(text), Outcome::Error);
            }
            let active = session.active.lock().await.clone();
            let available = self.with_view(|catalog| {
                active
                    .check_available(catalog, name)
                    .map(|_| ())
                    .map_err(|not_available| not_available.to_string())
            });
            if let Err(text) = available {
                return (error_result(text), Outcome::Unavailable);
            }
        }
        if let Some(text) = self.refusal(name, &arguments) {
            return (error_result(text), Outcome::Unavailable);
        }
        let context = CallContext {
            conversation: session.id().cloned(),
            cancel: cancel.clone(),
            caller: CallerChannel::new(downstream),
            ..CallContext::default()
        };
        let result = match self.toolbox.call(name, arguments, &context).await {
            Ok(output) | Err(ToolCallError::RespondToModel(output)) => result_from_output(output),
            Err(ToolCallError::Fatal(reason)) => {
                tracing::error!(tool = name, %reason, "tool call failed");
                error_result(format!("Tool '{name}' failed inside the gateway."))
            }
        };
        let outcome = outcome_of(&result);
        (result, outcome)
    }

    /// Why this request's caller may not make the call, when its policy
    /// says so: a tool it does not see, or an action of a polymorphic tool
    /// it may not use (the arguments are checked against the whole tool's
    /// schema, so the action is checked here).
    fn refusal(&self, name: &str, arguments: &Value) -> Option<String> {
        let caller = current_caller();
        let policy = self.policy(&caller)?;
        self.with_view_of(&caller, |catalog| {
            let Some(tool) = catalog.resolve(name) else {
                return Some(format!("Tool '{name}' is not available for this agent."));
            };
            let tool = tool.definition.name.as_str();
            let action = catalog
                .alias(name)
                .and_then(|alias| alias.action.clone())
                .or_else(|| {
                    arguments
                        .get(ACTION_PARAMETER)
                        .and_then(Value::as_str)
                        .map(str::to_owned)
                })?;
            (!policy.allows_action(tool, &action)).then(|| {
                format!(
                    "Action '{}' of tool '{tool}' is not available for this agent.",
                    crate::http::bounded(&action, MAX_TOOL_NAME)
                )
            })
        })
    }

    /// Counts a finished call and writes its audit line.
    async fn finished(
        &self,
        session: &SessionRef<'_>,
        group: &str,
        tool: &str,
        outcome: Outcome,
        began: Instant,
        arguments: Option<&Value>,
    ) {
        let took = began.elapsed();
        self.metrics.tool_call(group, tool, outcome, took);
        if let (Some(audit), Some(arguments)) = (&self.audit, arguments) {
            audit
                .record(AuditedCall {
                    owner: &current_owner(),
                    session: session.id().map(ConversationId::as_str),
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
    fn to_mcp(&self, definitions: Vec<&ToolDefinition>) -> Vec<Tool> {
        let listings = self
            .toolbox
            .listings(definitions.iter().map(|d| d.name.as_str()));
        self.listed_tools.tools(&definitions, listings)
    }

    /// The structured content of a load: the group and its tools as
    /// `tools/list` gives them, for clients that never refresh their list.
    fn loaded_schemas(&self, loaded: &GroupLoaded<'_>) -> Value {
        let tools: Vec<Value> = self
            .to_mcp(loaded.tools.clone())
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

fn error_result(text: impl Into<String>) -> CallToolResult {
    CallToolResult::error(vec![ContentBlock::text(text.into())])
}
