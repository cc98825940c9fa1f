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
//!
//! This file holds the [`Gateway`], what it is built from and how it
//! starts; its operations sit in the files under `gateway/`, one concern
//! each: who is calling and what they see (`access.rs`), `tools/list`
//! (`listing.rs`), `tools/call` (`call.rs`), the meta-tools' answers
//! (`meta.rs`), everything MCP offers besides tools (`passthrough.rs`) and
//! upstreams changed while serving (`upstreams.rs`, reported as an
//! [`UpstreamChanges`] of `upstream_changes.rs`).

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::broadcast;
use toolgate_core::routing::RoutingConfig;
use toolgate_core::{
    Catalog, Deferral, Delivery, GroupVisibility, LoadBudget, LoadedSchemas, MetaTool, ToolPolicy,
};
use toolgate_store::{ConversationId, ConversationStore};
use toolgate_tools::{
    CatalogChange, ListedSource, StartReport, Toolbox, ToolboxError, ToolboxOptions,
};

use crate::audit::AuditLog;
use crate::clients::{ClientName, Clients};
use crate::config::UpstreamConfig;
use crate::convert::ListedTools;
use crate::drain::CallsInFlight;
use crate::metrics::Metrics;
use crate::oauth::OAuth;
use crate::rate_limit::RateLimits;
use crate::session::Sessions;
use crate::upstream::{Upstream, restart_counts};

mod access;
mod call;
mod delivery;
mod listing;
mod meta;
mod passthrough;
mod upstream_changes;
mod upstreams;

pub use upstream_changes::UpstreamChanges;

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
    /// The most tokens of schemas a session's loaded groups may hold: past
    /// it, a load unloads the groups the session called least recently
    /// (each unload recorded in its history), and its answer says which.
    pub load_budget: LoadBudget,
    /// When the gateway defers its tools or sends every one of them.
    pub deferral: Deferral,
    /// The context window `deferral`'s share is of.
    pub context_window: usize,
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
    /// Where a session's loads put their schemas.
    loaded_schemas: LoadedSchemas,
    /// The bound on a session's loaded schemas.
    load_budget: LoadBudget,
    /// When the gateway defers its tools.
    deferral: Deferral,
    /// The context window `deferral`'s share is of.
    context_window: usize,
    /// How it delivers them now ([`Self::delivery`]).
    delivery: std::sync::RwLock<Delivery>,
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
        // JavaScript tools agents write) come before the upstreams; its
        // tools give up any name an upstream's tool has all the same.
        tools.listed.extend(
            upstreams
                .iter()
                .map(|upstream| Arc::clone(upstream) as Arc<dyn ListedSource>),
        );
        let (toolbox, report) = Toolbox::start(tools).await?;
        if options.deferral != Deferral::Always {
            // Whether to send every tool depends on all of them.
            toolbox.list_every_source().await;
        }
        let changes = toolbox.subscribe_changes();
        let elsewhere = store.changes();
        let metrics = Arc::new(Metrics::new());
        metrics.upstream_restarts().set(restart_counts(&upstreams));
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
            loaded_schemas: options.loaded_schemas,
            load_budget: options.load_budget,
            deferral: options.deferral,
            context_window: options.context_window,
            delivery: std::sync::RwLock::new(options.deferral.decide(0, 0, 0, None)),
        });
        let decided = gateway.with_catalog(|catalog| gateway.decide(catalog));
        *gateway
            .delivery
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = decided;
        tokio::spawn(watch_changes(Arc::downgrade(&gateway), changes));
        if let Some(elsewhere) = elsewhere {
            tokio::spawn(watch_elsewhere(Arc::downgrade(&gateway), elsewhere));
        }
        Ok((gateway, report))
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
        gateway.redecide().await;
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
