//! [`Toolbox`]: the catalog and everything that runs its tools, shared by
//! the agent loop and the MCP gateway so a tool runs the same way whoever
//! asked for it.
//!
//! A call goes: alias -> route -> (polymorphic action resolved and checked)
//! -> arguments checked against the input schema of the tool that runs ->
//! the source. Availability (is the tool in the caller's active set?) is the
//! caller's business: it differs between a turn, an escalated turn and a
//! stateless request.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, PoisonError, RwLock, RwLockReadGuard, Weak};
use std::time::Duration;

use serde_json::{Map, Value};
use tokio::sync::broadcast;
use toolgate_core::routing::{Embeddings, RoutingConfig};
use toolgate_core::{
    ActiveToolSet, Alias, Catalog, FoundTools, GroupId, GroupVisibility, ImportError,
    ManifestError, MetaTool, MetaTools, Origin, ToolGroup, ToolName, ToolState,
};

use crate::authority::Authority;
use crate::builtin::BuiltinConfig;
use crate::catalog_state::{CatalogChange, CatalogState};
use crate::deadline::DEFAULT_CALL_TIMEOUT;
use crate::error::{SourceError, ToolboxError};
use crate::javascript::JavaScriptConfig;
use crate::listing::{
    FailedBefore, Listed, ListedSlot, NotListed, default_description, list_never_listed,
};
use crate::manifests::{ManifestTools, ReloadReport};
use crate::naming::RenamedTool;
use crate::registry::{Route, SourceId, ToolRegistry};
use crate::settings::GroupSettings;
use crate::source::{
    ListedGroup, ListedSource, NamePriority, OwnedTools, SourceChange, ToolSource,
};

pub(crate) mod call;
pub(crate) mod meta;
pub(crate) mod reconfigure;
mod start;
mod view;

/// The tools to offer.
#[derive(Clone, Debug)]
pub struct ToolboxOptions {
    /// Meta-tools offered besides `load_tool_group`, which every catalog
    /// has.
    pub meta_tools: Vec<MetaTool>,
    /// The router's settings, with which `find_tool_groups` answers (when
    /// offered). Every group they name must exist.
    pub routing: Option<RoutingConfig>,
    /// The built-in groups (`time`, `files`, `web`, and `prompt_manager`
    /// with an agent store); `None` leaves them out.
    pub builtins: Option<BuiltinConfig>,
    /// Where JavaScript tools' `files` and `fetch` reach (the files root,
    /// write access, the `[web]` settings), whether or not the built-in
    /// groups are offered; `None` takes `builtins`' (and without either:
    /// no files, the default `[web]` settings).
    pub script_reach: Option<BuiltinConfig>,
    /// Other sources whose tools are known from the start.
    pub sources: Vec<Arc<dyn ToolSource>>,
    /// Sources listed when they run (MCP servers), each one group, in
    /// priority order (earlier keeps a contested name). A built-in group of
    /// the same name gives way.
    pub listed: Vec<Arc<dyn ListedSource>>,
    /// A group whose tools are each caller's own (the JavaScript tools each
    /// client of a gateway writes): the catalog lists the group of one of
    /// the listed sources, and a caller whose authority names an owner sees
    /// and calls that owner's tools in it instead.
    pub owned: Option<Arc<dyn OwnedTools>>,
    /// Directories of JSON tool manifests. A manifest's tools run in
    /// JavaScript when a `.js` file of the same name sits beside it.
    /// [`Toolbox::reload_manifests`] reads them again.
    pub manifest_dirs: Vec<PathBuf>,
    /// The limits of one call of a JavaScript tool.
    pub javascript: JavaScriptConfig,
    /// `tools.jsonl` catalogs (with a `groups.jsonl` beside each). Like
    /// manifest tools, their tools are listed and loaded but have nothing to
    /// run them: for inspecting and measuring a large catalog.
    pub jsonl_catalogs: Vec<PathBuf>,
    /// Per-group settings, by group id (`*` for every group without its
    /// own): a group exposed as one polymorphic tool, and its action policy.
    pub groups: BTreeMap<String, GroupSettings>,
    /// Old tool names and what they call now.
    pub aliases: Vec<(String, Alias)>,
    /// How long a call may run before it is cancelled and answered as timed
    /// out, for sources without a deadline of their own (the built-ins;
    /// an MCP server has its own timeouts): [`DEFAULT_CALL_TIMEOUT`] unless
    /// set.
    pub call_timeout: Duration,
    /// Offer `find_tool_groups` (groups and their best tools for a request)
    /// when the catalog has more groups than this, even when `meta_tools`
    /// leaves it out; `None` never adds it.
    pub search_above_groups: Option<usize>,
    /// The embedding model `find_tool_groups` scores with beside BM25
    /// ([`crate::LocalEmbeddings`]); without it the search is lexical.
    pub embeddings: Option<Arc<dyn Embeddings>>,
    /// What `find_tool_groups` does with the tools it lists: names them
    /// (the default), or loads them for the caller's session as well.
    pub found_tools: FoundTools,
}

impl Default for ToolboxOptions {
    fn default() -> Self {
        Self {
            meta_tools: Vec::new(),
            routing: None,
            builtins: None,
            script_reach: None,
            sources: Vec::new(),
            listed: Vec::new(),
            owned: None,
            manifest_dirs: Vec::new(),
            javascript: JavaScriptConfig::default(),
            jsonl_catalogs: Vec::new(),
            groups: BTreeMap::new(),
            aliases: Vec::new(),
            call_timeout: DEFAULT_CALL_TIMEOUT,
            search_above_groups: None,
            embeddings: None,
            found_tools: FoundTools::default(),
        }
    }
}

/// The groups above which `serve` and `chat` offer `find_tool_groups`
/// ([`ToolboxOptions::search_above_groups`]; `serve --search-above-groups`).
pub const DEFAULT_SEARCH_ABOVE_GROUPS: usize = 12;

/// What start-up found, for the operator.
#[derive(Debug, Default)]
pub struct StartReport {
    /// Built-in groups registered.
    pub builtin_groups: Vec<GroupId>,
    /// Manifest files loaded.
    pub manifest_files: usize,
    /// Manifest files skipped, and JavaScript files beside a manifest that
    /// could not be read, with their reasons.
    pub manifest_errors: Vec<ManifestError>,
    /// Tools imported from `tools.jsonl` catalogs.
    pub imported_tools: usize,
    /// Catalog files or lines skipped, with their reasons.
    pub import_errors: Vec<ImportError>,
    /// Listed sources started at start-up: `Ok(tool count)` for those
    /// listed, `Err` for those that failed; lazy ones are absent.
    pub listed: Vec<(GroupId, Result<usize, SourceError>)>,
    /// Built-in groups left out because a listed source has their name.
    pub shadowed_builtins: Vec<GroupId>,
    /// Built-in groups left out by their configuration, each with why
    /// ([`BuiltinConfig::withheld`]).
    pub withheld_builtins: Vec<(GroupId, String)>,
    /// `find_tool_groups` was added because the catalog has more groups
    /// than this ([`ToolboxOptions::search_above_groups`]).
    pub search_added: Option<usize>,
    /// Tools of the sources listed at start-up exposed under another name
    /// than their own (taken, or not a valid MCP tool name). Those of
    /// sources listed later are logged as warnings.
    pub renamed: Vec<RenamedTool>,
}

/// The catalog and what runs its tools. Share it in an [`Arc`]; every method
/// takes `&self`.
#[derive(Debug)]
pub struct Toolbox {
    state: CatalogState,
    /// Every source, by [`SourceId`]. Sources added at run time are
    /// appended; an id is never reused.
    sources: RwLock<Vec<Arc<dyn ToolSource>>>,
    /// The listed sources, in priority order. Read it through
    /// [`Self::listed`]: a snapshot, as sources come and go at run time.
    listed: RwLock<Vec<Arc<ListedSlot>>>,
    /// Serializes adding, replacing and removing listed sources.
    reconfiguring: tokio::sync::Mutex<()>,
    /// `[groups]` settings, for the groups of sources added at run time.
    group_settings: BTreeMap<String, GroupSettings>,
    /// The manifests directories and what they loaded.
    manifests: ManifestTools,
    /// Calls per polymorphic tool and action.
    action_calls: Mutex<BTreeMap<(String, String), u64>>,
    meta: MetaTools,
    /// The deadline of calls whose source has none of its own.
    call_timeout: Duration,
    /// The group of each caller's own tools, and the source that runs them.
    owned: Option<(Arc<dyn OwnedTools>, SourceId)>,
    /// The callers' views of the catalog, kept while they serve.
    views: Mutex<Vec<view::KeptView>>,
    /// Built-in groups left out by their configuration, each with why.
    withheld: Vec<(GroupId, String)>,
}

impl Toolbox {
    /// The catalog as it is now. Hold the guard briefly: listing a source
    /// writes to the catalog.
    pub fn catalog(&self) -> RwLockReadGuard<'_, Catalog> {
        self.state.catalog()
    }

    /// Runs `f` on the catalog.
    pub fn with_catalog<T>(&self, f: impl FnOnce(&Catalog) -> T) -> T {
        f(&self.catalog())
    }

    /// The meta-tools offered, and their answers.
    pub fn meta_tools(&self) -> &MetaTools {
        &self.meta
    }

    /// The built-in groups left out by their configuration, each with why
    /// and how to offer it (the `files` group of a root withheld).
    pub fn withheld_groups(&self) -> &[(GroupId, String)] {
        &self.withheld
    }

    /// Tells the sessions `change` concerns that their tools changed (a
    /// caller's own tools, say, which no listing relists).
    pub fn announce(&self, change: CatalogChange) {
        let _ = self.state.changes.send(change);
    }

    /// Changes of the tools on offer, as they happen (a listed source
    /// announced one, a manifest was reloaded): the gateway tells the
    /// sessions they concern.
    pub fn subscribe_changes(&self) -> broadcast::Receiver<CatalogChange> {
        self.state.changes.subscribe()
    }

    /// Reads the manifests directories again: a file that changed replaces
    /// its group's tools and scripts (tools that stay keep their place and
    /// name; new ones are appended), a new file adds its group, a deleted
    /// one takes its group's tools away, and a file that cannot be loaded
    /// keeps its previous version, its reason in the report. What changed
    /// is announced on [`Self::subscribe_changes`]; nothing is when nothing
    /// changed. Reads files: call it off the async workers.
    pub fn reload_manifests(&self) -> ReloadReport {
        self.manifests.reload(&self.state)
    }

    /// Stops every listed source.
    pub async fn shutdown(&self) {
        for slot in self.listed() {
            slot.source.shutdown().await;
        }
    }

    /// Makes `group`'s tools known: starts and lists its source if it is a
    /// listed one. Other groups are always ready.
    pub async fn prepare(&self, group: &str) -> Result<(), SourceError> {
        let listed = self.listed();
        match position_of(&listed, group) {
            Some(index) => self.ensure_listed(&listed, index).await.map(|_| ()),
            None => Ok(()),
        }
    }

    /// Makes the names of every listed source's tools known, so none is
    /// taken from it by a tool written meanwhile: each never listed is
    /// listed (and stopped again unless it ran), as before any source's
    /// first listing. Sources that yield their names are left out. Fails
    /// with the first that cannot be listed.
    pub(crate) async fn reserve_listed_names(&self) -> Result<(), NotListed> {
        let listed = self.listed();
        let reserving: Vec<Arc<ListedSlot>> = listed
            .iter()
            .filter(|slot| slot.source.name_priority() == NamePriority::InOrder)
            .cloned()
            .collect();
        let reserved =
            list_never_listed(&self.state, &reserving, &listed, FailedBefore::TryAgain).await;
        self.state.log_renamed();
        reserved
    }

    /// Makes every listed source's tools known, so the catalog's size is
    /// (what a host measures to decide whether to send every tool): each
    /// never listed is listed, and stopped again unless it ran. One that
    /// cannot be listed is left out, as its own warning says.
    pub async fn list_every_source(&self) {
        let listed = self.listed();
        let _ = list_never_listed(&self.state, &listed, &listed, FailedBefore::Skip).await;
        self.state.log_renamed();
    }

    /// Makes known the tools an active set shows: its loaded groups (a
    /// restored session's source may not run yet) and the always-visible
    /// groups. A group whose source fails is logged and left out.
    pub async fn prepare_visible(&self, active: &ActiveToolSet) {
        for group in active.loaded_groups() {
            if let Err(error) = self.prepare(group.as_str()).await {
                tracing::warn!(%group, %error, "a loaded group's tools are unavailable");
            }
        }
        let listed = self.listed();
        for (index, slot) in listed.iter().enumerate() {
            if slot.source.group().visibility == GroupVisibility::Always {
                let _ = self.ensure_listed(&listed, index).await;
            }
        }
    }

    /// How the source of each tool named described it (an MCP server's
    /// `tools/list` entry, under the exposed name), when it did; in order.
    /// The same `Arc` comes back until the source is listed again. A tool of
    /// the caller's own ([`ToolboxOptions::owned`]) has none: a listed tool
    /// of the same name is another owner's.
    pub fn listings<'a>(
        &self,
        names: impl IntoIterator<Item = &'a str>,
        authority: &Authority,
    ) -> Vec<Option<Arc<Map<String, Value>>>> {
        let own = self.own_tools(authority);
        let is_own = |name: &str| {
            own.as_ref()
                .is_some_and(|(_, set)| set.tools.iter().any(|tool| tool.name.as_str() == name))
        };
        let registry = self
            .state
            .registry
            .read()
            .unwrap_or_else(PoisonError::into_inner);
        names
            .into_iter()
            .map(|name| {
                if is_own(name) {
                    None
                } else {
                    registry.listing(name)
                }
            })
            .collect()
    }

    /// Offers only what `names` enables (an agent's tool list): a group id
    /// keeps its group, a tool name (or an alias of one) keeps that tool;
    /// every other grouped tool is disabled. Core tools stay. Listed sources
    /// not named by their group id should be left out of the options
    /// instead: their tools are not known before they start. Returns the
    /// names that matched nothing.
    pub fn restrict_to(&self, names: &[String]) -> Vec<String> {
        let mut catalog = self
            .state
            .catalog
            .write()
            .unwrap_or_else(PoisonError::into_inner);
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
            let _ = catalog.set_tool_state(name.as_str(), ToolState::Disabled);
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

    /// Starts listed source `index` of `listed` if needed and makes the
    /// catalog reflect its tools; tools it (or a source listed before it)
    /// renamed are logged.
    async fn ensure_listed(
        &self,
        listed: &[Arc<ListedSlot>],
        index: usize,
    ) -> Result<Listed, SourceError> {
        let result = listed[index].ensure_listed(&self.state, listed).await;
        self.state.log_renamed();
        result
    }

    /// `slot` said its tools changed: relist it now, unless it was removed
    /// or replaced meanwhile.
    async fn refresh(&self, slot: &Arc<ListedSlot>) {
        let listed = self.listed();
        if listed.iter().any(|other| Arc::ptr_eq(other, slot)) {
            slot.refresh(&self.state, &listed).await;
        }
    }

    /// The listed sources as they are now, in priority order.
    fn listed(&self) -> Vec<Arc<ListedSlot>> {
        self.listed
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// Source `id`, unless it is gone.
    fn source(&self, id: SourceId) -> Option<Arc<dyn ToolSource>> {
        self.sources
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .get(id.0)
            .cloned()
    }
}

/// Where the source of `group` stands in `listed`.
fn position_of(listed: &[Arc<ListedSlot>], group: &str) -> Option<usize> {
    listed
        .iter()
        .position(|slot| slot.source.group().id.as_str() == group)
}

/// Registers the group of a listed source, deferred until it is listed.
fn register_listed_group(catalog: &mut Catalog, spec: &ListedGroup) -> Result<(), ToolboxError> {
    let description = spec
        .description
        .clone()
        .unwrap_or_else(|| default_description(spec.id.as_str(), None));
    let group = ToolGroup::new(
        spec.id.clone(),
        toolgate_core::title_case(spec.id.as_str()),
        description,
    );
    let origin = Origin::Upstream {
        server: spec.id.to_string(),
    };
    catalog.register_deferred_group(group, origin)?;
    catalog.set_group_visibility(spec.id.as_str(), spec.visibility)?;
    Ok(())
}

/// Registers one group a source offers, each tool routed to the source.
fn register_offered_group(
    catalog: &mut Catalog,
    registry: &mut ToolRegistry,
    source: SourceId,
    group: ToolGroup,
    tools: Vec<toolgate_core::ToolDefinition>,
) -> Result<(), ToolboxError> {
    for tool in &tools {
        registry.insert(tool.name.clone(), source_route(source, &tool.name));
    }
    let tools = tools
        .into_iter()
        .map(|tool| (tool, Origin::Builtin))
        .collect();
    catalog.register_group_with_tools(group, Origin::Builtin, tools)?;
    Ok(())
}

fn source_route(source: SourceId, name: &ToolName) -> Route {
    Route::Source {
        source,
        tool: name.to_string(),
        listing: None,
    }
}

/// Relists a listed source each time it announces a change, until it closes
/// or the toolbox is gone.
async fn watch_changes(toolbox: Weak<Toolbox>, slot: Arc<ListedSlot>) {
    loop {
        match slot.source.changed().await {
            SourceChange::ToolsChanged => {}
            SourceChange::Closed => return,
        }
        let Some(toolbox) = toolbox.upgrade() else {
            return;
        };
        toolbox.refresh(&slot).await;
    }
}
