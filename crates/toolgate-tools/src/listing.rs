//! Listing the listed sources (MCP servers) into the catalog: on first load
//! of their group, at start-up for eager ones, and again when one announces
//! that its tools changed.
//!
//! Names are decided here and kept for the process's life: a source's tool
//! keeps its own name when valid and free, else gets one as `naming.rs`
//! says (`group__tool`, then a sanitized or hashed name); a name once given
//! never changes, and before a source is first listed every source
//! configured before it is listed too, so a contested name goes to the
//! earlier one whatever order groups are loaded in. A source that yields
//! ([`NamePriority::Yields`]: the JavaScript tools agents write) is the
//! exception: it is listed without the others, and gives up a name when
//! another source's tool is listed under it later (its tool is renamed
//! then), so it can never take a configured server's tool's name. Each
//! rename is queued for the operator (the start report, else the log).

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, PoisonError};

use serde_json::{Map, Value};
use toolgate_core::{Catalog, GroupId, Origin, ToolDefinition, ToolName};

use crate::catalog_state::{CatalogChange, CatalogState};
use crate::consolidate::consolidate;
use crate::error::SourceError;
use crate::naming::{RenamedTool, exposed_name};
use crate::registry::{Route, SourceId};
use crate::source::{ListedSource, NamePriority, SourceListing, SourceTool};

/// One listed source and what the toolbox knows of its tools.
#[derive(Debug)]
pub(crate) struct ListedSlot {
    pub(crate) source: Arc<dyn ListedSource>,
    id: SourceId,
    /// Serializes listings, so concurrent loads start the source once.
    listing: tokio::sync::Mutex<ListingState>,
}

impl ListedSlot {
    pub(crate) fn new(source: Arc<dyn ListedSource>, id: SourceId) -> Self {
        Self::inheriting(source, id, Retired::default())
    }

    /// A slot for `source`, which takes the place of a retired one: its
    /// tools keep the names the retired source's had.
    pub(crate) fn inheriting(
        source: Arc<dyn ListedSource>,
        id: SourceId,
        retired: Retired,
    ) -> Self {
        Self {
            source,
            id,
            listing: tokio::sync::Mutex::new(ListingState {
                exposed: retired.names,
                ..ListingState::default()
            }),
        }
    }

    /// Where the catalog's routes of its tools lead.
    pub(crate) fn id(&self) -> SourceId {
        self.id
    }

    /// The sources before this one in `listed` (the priority order).
    fn earlier<'a>(&self, listed: &'a [Arc<ListedSlot>]) -> &'a [Arc<ListedSlot>] {
        let index = listed
            .iter()
            .position(|slot| std::ptr::eq(slot.as_ref(), self))
            .unwrap_or(listed.len());
        &listed[..index]
    }

    /// The groups of the sources of `listed` whose tools give up a name
    /// this source's tools are given: those that yield, unless this one
    /// yields too.
    fn yielding_to(&self, listed: &[Arc<ListedSlot>]) -> Vec<GroupId> {
        if self.source.name_priority() == NamePriority::Yields {
            return Vec::new();
        }
        listed
            .iter()
            .filter(|slot| {
                !std::ptr::eq(slot.as_ref(), self)
                    && slot.source.name_priority() == NamePriority::Yields
            })
            .map(|slot| slot.source.group().id.clone())
            .collect()
    }

    /// Shuts the source down for good (letting it finish the calls under
    /// way, if it does: [`ListedSource::retire`]), once any listing under
    /// way is done, and hands over what a successor keeps.
    pub(crate) async fn retire(&self) -> Retired {
        self.source.retire().await;
        let mut listing_state = self.listing.lock().await;
        Retired {
            was_listed: listing_state.generation.take().is_some(),
            names: std::mem::take(&mut listing_state.exposed),
        }
    }
}

/// What a retired listed source leaves to the one taking its place.
#[derive(Debug, Default)]
pub(crate) struct Retired {
    /// Its tools were in the catalog.
    pub(crate) was_listed: bool,
    /// The names its tools were exposed under, by their own name.
    names: HashMap<String, ToolName>,
}

#[derive(Debug, Default)]
struct ListingState {
    /// The generation the catalog reflects, if listed.
    generation: Option<u64>,
    /// The source announced a change since.
    stale: bool,
    /// Listing it for its tools' names, before a later source, failed:
    /// later sources do not try again (its own first load does), so a
    /// failing source is started, and reported, once.
    names_failed: bool,
    /// Source name -> exposed name, kept for the process's life so a name,
    /// once given, never changes.
    exposed: HashMap<String, ToolName>,
}

/// What listing a source did to the catalog.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Listed {
    /// Tools it exposes.
    pub(crate) tools: usize,
    /// Whether they differ from what was listed before.
    pub(crate) changed: bool,
}

/// A tool as the catalog will hold it, with its route.
struct Exposed {
    definition: ToolDefinition,
    source_name: String,
    listing: Arc<Map<String, Value>>,
}

impl ListedSlot {
    /// Starts the source if needed and makes the catalog reflect its current
    /// tools. `listed` are the listed sources in priority order.
    pub(crate) async fn ensure_listed(
        &self,
        state: &CatalogState,
        listed: &[Arc<ListedSlot>],
    ) -> Result<Listed, SourceError> {
        let mut listing_state = self.listing.lock().await;
        let running = self.source.running_generation().await;
        if !listing_state.stale && running.is_some() && running == listing_state.generation {
            let group = self.source.group().id.as_str();
            let tools = state.catalog().group_tools(group).count();
            return Ok(Listed {
                tools,
                changed: false,
            });
        }
        // A yielding source takes no name from the others: it need not wait
        // for them. A failure is logged; its names are learned later.
        if listing_state.generation.is_none()
            && self.source.name_priority() == NamePriority::InOrder
        {
            let earlier = self.earlier(listed);
            let _ = list_never_listed(state, earlier, listed, FailedBefore::Skip).await;
        }
        let listing = self.source.list().await?;
        listing_state.stale = false;
        listing_state.generation = Some(listing.generation);
        let yielding = self.yielding_to(listed);
        Ok(self.apply_listing(state, &listing, &mut listing_state.exposed, &yielding))
    }

    /// Puts the source's listing into the catalog and the registry; the
    /// tools of `yielding` groups holding names its tools are given are
    /// renamed.
    fn apply_listing(
        &self,
        state: &CatalogState,
        listing: &SourceListing,
        names: &mut HashMap<String, ToolName>,
        yielding: &[GroupId],
    ) -> Listed {
        let spec = self.source.group();
        let group = spec.id.as_str();
        let origin = Origin::Upstream {
            server: group.to_owned(),
        };
        let mut catalog = state
            .catalog
            .write()
            .unwrap_or_else(PoisonError::into_inner);
        let given = assign_names(state, &catalog, &spec.id, &listing.tools, names, yielding);
        let exposed: Vec<Exposed> = listing
            .tools
            .iter()
            .zip(given)
            .filter_map(|(tool, name)| expose(group, tool, name?))
            .collect();
        let count = exposed.len();
        let before: Vec<Arc<Map<String, Value>>> = {
            let registry = state
                .registry
                .read()
                .unwrap_or_else(PoisonError::into_inner);
            catalog
                .group_tools(group)
                .filter_map(|definition| registry.get(definition.name.as_str()))
                .flat_map(Route::listings)
                .collect()
        };
        let changed = before.len() != exposed.len()
            || before
                .iter()
                .zip(&exposed)
                .any(|(old, new)| **old != *new.listing);
        if changed {
            state.validators.forget_all();
        }
        let names_given: Vec<ToolName> = exposed
            .iter()
            .map(|tool| tool.definition.name.clone())
            .collect();
        let gave_way = give_way(state, &mut catalog, &names_given, yielding);
        if !gave_way.is_empty() {
            state.validators.forget_all();
        }
        for group in gave_way {
            let _ = state.changes.send(CatalogChange::Group(group));
        }
        let tools = exposed
            .iter()
            .map(|tool| (tool.definition.clone(), origin.clone()))
            .collect();
        if let Err(error) = catalog.replace_group_tools(group, tools) {
            tracing::warn!(source = group, %error, "listing not applied");
            return Listed {
                tools: 0,
                changed: false,
            };
        }
        if spec.description.is_none() {
            let description = default_description(group, listing.about.as_deref());
            let _ = catalog.set_group_description(group, description);
        }
        let mut registry = state
            .registry
            .write()
            .unwrap_or_else(PoisonError::into_inner);
        registry.forget_source(self.id);
        for tool in exposed {
            registry.insert(
                tool.definition.name,
                Route::Source {
                    source: self.id,
                    tool: tool.source_name,
                    listing: Some(tool.listing),
                },
            );
        }
        let polymorphic = state
            .polymorphic
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .get(group)
            .cloned();
        if let Some((policy, scope)) = polymorphic
            && let Err(reason) = consolidate(&mut catalog, &mut registry, &spec.id, &policy, scope)
        {
            tracing::warn!(source = group, %reason, "group not consolidated; its tools are offered one by one");
        }
        Listed {
            tools: count,
            changed,
        }
    }

    /// The source said its tools changed: relist it now, and announce the
    /// group if something really changed.
    pub(crate) async fn refresh(&self, state: &CatalogState, listed: &[Arc<ListedSlot>]) {
        self.listing.lock().await.stale = true;
        let listed = self.ensure_listed(state, listed).await;
        state.log_renamed();
        match listed {
            // Servers announce changes that change nothing (some at every
            // start); only a real change is passed on.
            Ok(Listed { changed: true, .. }) => {
                let _ = state
                    .changes
                    .send(CatalogChange::Group(self.source.group().id.clone()));
            }
            Ok(Listed { changed: false, .. }) => {}
            Err(error) => tracing::warn!(%error, "relisting after a change"),
        }
    }
}

/// A listed source that could not be listed to learn its tools' names.
#[derive(Debug)]
pub(crate) struct NotListed {
    /// Its group.
    pub(crate) group: GroupId,
    /// Why.
    pub(crate) error: SourceError,
}

/// What [`list_never_listed`] does with a source that failed to be listed
/// for its names before.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum FailedBefore {
    /// Leaves it: before a later source's first listing, a failing source
    /// is started, and reported, once.
    Skip,
    /// Tries it again: a name it may hold is about to be given away.
    TryAgain,
}

/// Lists every source of `sources` (of all the `listed`) that was never
/// listed, so their tools' names are known: before a source's first
/// listing, those configured before it. Sources started only for this are
/// stopped again (their names are kept). A failure is remembered (the
/// source warns of it itself) and the others are listed still; the first
/// is returned.
pub(crate) async fn list_never_listed(
    state: &CatalogState,
    sources: &[Arc<ListedSlot>],
    listed: &[Arc<ListedSlot>],
    failed_before: FailedBefore,
) -> Result<(), NotListed> {
    let mut failed = None;
    for slot in sources {
        let mut listing_state = slot.listing.lock().await;
        if listing_state.generation.is_some() {
            continue;
        }
        if listing_state.names_failed && failed_before == FailedBefore::Skip {
            continue;
        }
        let was_running = slot.source.running_generation().await.is_some();
        match slot.source.list().await {
            Ok(listing) => {
                listing_state.generation = Some(listing.generation);
                let yielding = slot.yielding_to(listed);
                slot.apply_listing(state, &listing, &mut listing_state.exposed, &yielding);
            }
            // A source warns of its own failure (an upstream does, once
            // per failure): the toolbox does not repeat it.
            Err(error) => {
                listing_state.names_failed = true;
                tracing::debug!(%error, "listing a source for its tool names");
                failed.get_or_insert(NotListed {
                    group: slot.source.group().id.clone(),
                    error,
                });
            }
        }
        if !was_running {
            slot.source.stop().await;
        }
    }
    failed.map_or(Ok(()), Err)
}

/// The name each of `tools` is exposed under, in listing order (`None`,
/// logged, for one that cannot be exposed): the name given before while no
/// other group's tool holds it (one of a source this one yields to may
/// have taken it since), else a new one, given in an order the listing's
/// order does not change (valid names first, then by name), so the same
/// tools get the same names on every run. A name a tool of a `yielding`
/// group holds is free. New renames are queued on `state` for the
/// operator.
fn assign_names(
    state: &CatalogState,
    catalog: &Catalog,
    group: &GroupId,
    tools: &[SourceTool],
    names: &mut HashMap<String, ToolName>,
    yielding: &[GroupId],
) -> Vec<Option<ToolName>> {
    let mut order: Vec<&SourceTool> = tools.iter().collect();
    order.sort_by_key(|tool| {
        (
            ToolName::new(tool.name.as_str()).is_err(),
            tool.name.as_str(),
        )
    });
    // Exposed name -> original, so whether a name is given is one lookup.
    let mut taken: HashMap<ToolName, String> = names
        .iter()
        .map(|(original, exposed)| (exposed.clone(), original.clone()))
        .collect();
    for tool in order {
        if let Some(given) = names.get(&tool.name) {
            let held_elsewhere = catalog.tool_state(given.as_str()).is_some()
                && catalog
                    .group_of(given.as_str())
                    .is_none_or(|holder| holder != group && !yielding.contains(holder));
            if !held_elsewhere {
                continue;
            }
            taken.remove(given);
            names.remove(&tool.name);
        }
        match exposed_name(catalog, group.as_str(), &tool.name, &taken, yielding) {
            Some(name) => {
                if let Some(renamed) = RenamedTool::of(group, &tool.name, &name) {
                    state.queue_renamed(renamed);
                }
                taken.insert(name.clone(), tool.name.clone());
                names.insert(tool.name.clone(), name);
            }
            None => {
                tracing::warn!(source = %group, tool = %tool.name, "no free name to expose the tool under; skipped");
            }
        }
    }
    tools
        .iter()
        .map(|tool| names.get(&tool.name).cloned())
        .collect()
}

/// Renames the tools of `yielding` groups that hold one of the names
/// `given` to another group's tools, so those names go to the other group:
/// a yielding source's tool is the one renamed, whichever was listed first.
/// Each rename is queued on `state` for the operator; the yielding source's
/// next listing finds the name taken and keeps the new one. Returns the
/// groups whose tools were renamed.
fn give_way(
    state: &CatalogState,
    catalog: &mut Catalog,
    given: &[ToolName],
    yielding: &[GroupId],
) -> Vec<GroupId> {
    let mut renamed_groups = Vec::new();
    for group in yielding {
        let id = group.as_str();
        let held: HashSet<&ToolName> = given
            .iter()
            .filter(|name| catalog.group_of(name.as_str()) == Some(group))
            .collect();
        if held.is_empty() {
            continue;
        }
        let current: Vec<ToolDefinition> = catalog.group_tools(id).cloned().collect();
        let mut registry = state
            .registry
            .write()
            .unwrap_or_else(PoisonError::into_inner);
        let mut chosen: HashSet<ToolName> = HashSet::new();
        let mut tools = Vec::new();
        for mut definition in current {
            if held.contains(&definition.name) {
                let route = registry.remove(definition.name.as_str());
                let original = match &route {
                    Some(Route::Source { tool, .. }) => tool.clone(),
                    Some(Route::Unbound | Route::Polymorphic(_)) | None => {
                        definition.name.to_string()
                    }
                };
                let free = |name: &ToolName| {
                    catalog.tool_state(name.as_str()).is_none()
                        && !given.contains(name)
                        && !chosen.contains(name)
                };
                let Some(name) = ToolName::candidates(Some(id), &original).find(|name| free(name))
                else {
                    tracing::warn!(source = id, tool = %original, "no free name to expose the tool under; skipped");
                    continue;
                };
                if let Some(renamed) = RenamedTool::of(group, &original, &name) {
                    state.queue_renamed(renamed);
                }
                if let Some(route) = route {
                    registry.insert(name.clone(), renamed_route(route, &name));
                }
                chosen.insert(name.clone());
                definition.name = name;
            }
            let origin = Origin::Upstream {
                server: id.to_owned(),
            };
            tools.push((definition, origin));
        }
        match catalog.replace_group_tools(id, tools) {
            Ok(()) => renamed_groups.push(group.clone()),
            Err(error) => {
                tracing::warn!(source = id, %error, "tools giving up their names not renamed")
            }
        }
    }
    renamed_groups
}

/// `route` for a tool exposed as `name` from now on: the source's
/// description of it names it so.
fn renamed_route(route: Route, name: &ToolName) -> Route {
    match route {
        Route::Source {
            source,
            tool,
            listing: Some(listing),
        } => {
            let mut listing = (*listing).clone();
            listing.insert("name".to_owned(), Value::String(name.to_string()));
            Route::Source {
                source,
                tool,
                listing: Some(Arc::new(listing)),
            }
        }
        other @ (Route::Source { listing: None, .. } | Route::Unbound | Route::Polymorphic(_)) => {
            other
        }
    }
}

/// A listed tool under the name it is exposed by, or `None` (logged) when
/// its definition is refused.
fn expose(group: &str, tool: &SourceTool, name: ToolName) -> Option<Exposed> {
    let mut definition =
        match ToolDefinition::new(name.clone(), &tool.description, tool.input_schema.clone()) {
            Ok(definition) => definition,
            Err(error) => {
                tracing::warn!(source = group, tool = %tool.name, %error, "tool skipped");
                return None;
            }
        };
    definition.annotations = tool.annotations.clone();
    let mut listing = tool.listing.clone();
    listing.insert("name".to_owned(), Value::String(name.to_string()));
    Some(Exposed {
        definition,
        source_name: tool.name.clone(),
        listing: Arc::new(listing),
    })
}

/// A listed group's description: what the source says of itself, else a
/// sentence naming it.
pub(crate) fn default_description(group: &str, said: Option<&str>) -> String {
    match said.map(str::trim).filter(|s| !s.is_empty()) {
        Some(text) => text.to_owned(),
        None => format!("Tools of the MCP server '{group}'"),
    }
}
