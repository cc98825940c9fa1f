//! Listing the listed sources (MCP servers) into the catalog: on first load
//! of their group, at start-up for eager ones, and again when one announces
//! that its tools changed.
//!
//! Names are decided here and kept for the process's life: a source's tool
//! keeps its own name when valid and free, else gets one as `naming.rs`
//! says (`group__tool`, then a sanitized or hashed name); a name once given
//! never changes, and before a source is first listed every source
//! configured before it is listed too, so a contested name goes to the
//! earlier one whatever order groups are loaded in. Each rename is queued
//! for the operator (the start report, else the log).

use std::collections::HashMap;
use std::sync::{Arc, PoisonError};

use serde_json::{Map, Value};
use toolgate_core::{Catalog, GroupId, Origin, ToolDefinition, ToolName};

use crate::catalog_state::{CatalogChange, CatalogState};
use crate::consolidate::consolidate;
use crate::error::SourceError;
use crate::naming::{RenamedTool, exposed_name};
use crate::registry::{Route, SourceId};
use crate::source::{ListedSource, SourceListing, SourceTool};

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
    /// tools. `earlier` are the sources configured before it.
    pub(crate) async fn ensure_listed(
        &self,
        state: &CatalogState,
        earlier: &[Arc<ListedSlot>],
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
        if listing_state.generation.is_none() {
            list_never_listed(state, earlier).await;
        }
        let listing = self.source.list().await?;
        listing_state.stale = false;
        listing_state.generation = Some(listing.generation);
        Ok(self.apply_listing(state, &listing, &mut listing_state.exposed))
    }

    /// Puts the source's listing into the catalog and the registry.
    fn apply_listing(
        &self,
        state: &CatalogState,
        listing: &SourceListing,
        names: &mut HashMap<String, ToolName>,
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
        let given = assign_names(state, &catalog, &spec.id, &listing.tools, names);
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
    pub(crate) async fn refresh(&self, state: &CatalogState, earlier: &[Arc<ListedSlot>]) {
        self.listing.lock().await.stale = true;
        let listed = self.ensure_listed(state, earlier).await;
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

/// Before a source's first listing, lists every source configured before it
/// (`earlier`) that was never listed. Sources started only for this are
/// stopped again (their names are kept).
async fn list_never_listed(state: &CatalogState, earlier: &[Arc<ListedSlot>]) {
    for slot in earlier {
        let mut listing_state = slot.listing.lock().await;
        if listing_state.generation.is_some() {
            continue;
        }
        let was_running = slot.source.running_generation().await.is_some();
        match slot.source.list().await {
            Ok(listing) => {
                listing_state.generation = Some(listing.generation);
                slot.apply_listing(state, &listing, &mut listing_state.exposed);
            }
            Err(error) => {
                tracing::warn!(%error, "listing an earlier source for its tool names");
            }
        }
        if !was_running {
            slot.source.stop().await;
        }
    }
}

/// The name each of `tools` is exposed under, in listing order (`None`,
/// logged, for one that cannot be exposed): the name given before, else a
/// new one, given in an order the listing's order does not change (valid
/// names first, then by name), so the same tools get the same names on
/// every run. New renames are queued on `state` for the operator.
fn assign_names(
    state: &CatalogState,
    catalog: &Catalog,
    group: &GroupId,
    tools: &[SourceTool],
    names: &mut HashMap<String, ToolName>,
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
        if names.contains_key(&tool.name) {
            continue;
        }
        match exposed_name(catalog, group.as_str(), &tool.name, &taken) {
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
